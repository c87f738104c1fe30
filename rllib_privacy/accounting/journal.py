"""Write-ahead privacy journal: releases survive a crash between two checkpoints (no Ray).

A ledger that lives only in checkpoints forgets every release made after the last
checkpoint when the driver is killed, so a resumed run could spend the budget twice
(DESIGN §3: a reset is a silent privacy leak). A component therefore appends each
release's ledger event(s) to a :class:`PrivacyJournal` and only then hands the release
out; the journal is the source of truth when a run (re)starts. A crash can then only
over-count (a journaled release that never left), never under-count.

Format: JSON lines, one record per line,
``{"seq": n, "component": ..., "time": unix_seconds, **record}`` with ``seq`` = 0, 1, 2, ...
Each append is flushed and ``os.fsync``-ed before :meth:`PrivacyJournal.append` returns.
One process writes a journal file at a time (the Algorithm that owns it).

Conventions shared by the components that use it: one file per component,
``<journal dir>/<component>.jsonl`` (:func:`journal_file`), with the journal dir
``<Algorithm.logdir>/privacy_journal`` by default (:func:`default_journal_dir`).
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "JOURNAL_DIR_NAME",
    "PrivacyJournal",
    "PrivacyJournalError",
    "default_journal_dir",
    "journal_file",
]

#: Name of the journal folder inside a run's log dir.
JOURNAL_DIR_NAME = "privacy_journal"
#: Keys the journal writes itself; a record must not set them.
RESERVED_KEYS = frozenset({"seq", "component", "time"})


class PrivacyJournalError(RuntimeError):
    """A privacy journal is corrupt, belongs to another component, or cannot take a record."""


def default_journal_dir(logdir: str | os.PathLike[str]) -> pathlib.Path:
    """Return the default journal folder of a run: ``<logdir>/privacy_journal``."""
    return pathlib.Path(logdir) / JOURNAL_DIR_NAME


def journal_file(directory: str | os.PathLike[str], component: str) -> pathlib.Path:
    """Return the conventional journal file of ``component``: ``<directory>/<component>.jsonl``.

    Raises:
        ValueError: If ``component`` is not a non-empty name usable as a file name.

    """
    _check_component(component)
    return pathlib.Path(directory) / f"{component}.jsonl"


def _check_component(component: Any) -> str:
    if (
        not isinstance(component, str)
        or not component
        or component in {".", ".."}
        or any(sep in component for sep in ("/", "\\", "\0"))
    ):
        raise ValueError(
            f"component must be a non-empty name without path separators, got {component!r}"
        )
    return component


def _fsync_dir(directory: pathlib.Path) -> None:
    # A new file's directory entry is durable only once the directory itself is synced.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. platforms that cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class PrivacyJournal:
    """Append-only JSON-lines write-ahead log of privacy releases, fsync'd per append.

    Opening an existing file reads it: a torn LAST line (a crash mid-append: no final
    newline, or not valid JSON) is ignored and truncated away; anything wrong before it
    raises :class:`PrivacyJournalError` naming the file and line, because silently
    dropping a release would under-count the budget.

    Args:
        path: The journal file; parent folders are created.
        component: Who writes it (e.g. ``"ldp_a3c"``); opening a file written by another
            component raises.

    Raises:
        ValueError: If ``component`` is not a non-empty name.
        PrivacyJournalError: If the file is corrupt or belongs to another component.

    Examples:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "ldp_a3c.jsonl"
        >>> journal = PrivacyJournal(path, component="ldp_a3c")
        >>> journal.append({"type": "release", "epsilon": 0.5})
        0
        >>> PrivacyJournal(path, component="ldp_a3c").records()[0]["epsilon"]
        0.5

    """

    def __init__(self, path: str | os.PathLike[str], *, component: str) -> None:
        self._component = _check_component(component)
        self._path = pathlib.Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        existed = self._path.exists()
        # Only the count is kept: PGC-A3C journals ~1e5 submissions per run, and the records
        # are needed again only when a run (re)starts (records() re-reads the file).
        self._count = len(self._read_and_repair()) if existed else 0
        self._file = open(self._path, "ab")  # noqa: SIM115  # held open for cheap appends
        if not existed:
            _fsync_dir(self._path.parent)

    def _read_and_repair(self, *, repair: bool = True) -> list[dict[str, Any]]:
        data = self._path.read_bytes()
        lines = data.split(b"\n")
        # split() leaves the text after the last newline as the final element: b"" when the
        # file ends cleanly, otherwise a torn append.
        complete, tail = lines[:-1], lines[-1]
        records: list[dict[str, Any]] = []
        keep_bytes = len(data) - len(tail)
        for number, raw in enumerate(complete, start=1):
            try:
                record = json.loads(raw)
            except ValueError as error:
                if number == len(complete) and not tail:
                    # The last line is garbage (e.g. zero-filled after a power loss): torn.
                    keep_bytes -= len(raw) + 1
                    break
                raise PrivacyJournalError(
                    f"privacy journal {str(self._path)!r} line {number} is not valid JSON "
                    f"({error}); refusing to guess the spent budget"
                ) from None
            self._check_record(record, number, expected_seq=len(records))
            records.append(record)
        if repair and keep_bytes != len(data):
            with open(self._path, "r+b") as handle:
                handle.truncate(keep_bytes)
                handle.flush()
                os.fsync(handle.fileno())
        return records

    def _check_record(self, record: Any, number: int, *, expected_seq: int) -> None:
        where = f"privacy journal {str(self._path)!r} line {number}"
        if not isinstance(record, dict) or not RESERVED_KEYS <= set(record):
            raise PrivacyJournalError(
                f"{where} is not a journal record (needs keys {sorted(RESERVED_KEYS)})"
            )
        if record["component"] != self._component:
            raise PrivacyJournalError(
                f"{where} was written by component {record['component']!r}, "
                f"not {self._component!r}: use a separate journal file per component"
            )
        if record["seq"] != expected_seq:
            raise PrivacyJournalError(
                f"{where} has seq {record['seq']!r}, expected {expected_seq}: records are "
                "missing or out of order"
            )

    # ------------------------------------------------------------------ queries

    @property
    def path(self) -> pathlib.Path:
        """The journal file."""
        return self._path

    @property
    def component(self) -> str:
        """The component that writes this journal."""
        return self._component

    @property
    def last_seq(self) -> int:
        """The seq of the newest record, -1 when the journal is empty."""
        return self._count - 1

    def __len__(self) -> int:
        return self._count

    def records(self, *, after_seq: int = -1) -> list[dict[str, Any]]:
        """Return the records with ``seq > after_seq``, oldest first, read from the file.

        Raises:
            ValueError: If ``after_seq`` is not an int >= -1.
            PrivacyJournalError: If the file was damaged since it was opened.

        """
        if isinstance(after_seq, bool) or not isinstance(after_seq, int) or after_seq < -1:
            raise ValueError(f"after_seq must be an int >= -1, got {after_seq!r}")
        records = self._read_and_repair(repair=False)
        if len(records) != self._count:
            raise PrivacyJournalError(
                f"privacy journal {str(self._path)!r} holds {len(records)} records, but "
                f"{self._count} were written: was it changed by another process?"
            )
        return records[after_seq + 1 :]

    # ------------------------------------------------------------------ writing

    def append(self, record: Mapping[str, Any]) -> int:
        """Append one record durably (written, flushed, fsync'd) and return its seq.

        Args:
            record: JSON-able mapping with string keys; it must not set ``seq``,
                ``component`` or ``time``. Non-finite floats are rejected (encode them,
                e.g. as ``"inf"``), because JSON cannot represent them.

        Returns:
            The new record's seq (0 for the first record).

        Raises:
            ValueError: If ``record`` is not such a mapping.
            PrivacyJournalError: If the journal was closed.

        """
        return self.extend([record])

    def extend(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Append several records with ONE fsync; return the last seq (as :meth:`append`).

        All records are validated before any is written; an empty iterable writes nothing
        and returns :attr:`last_seq`.
        """
        if self._file.closed:
            raise PrivacyJournalError(f"privacy journal {str(self._path)!r} is closed")
        lines = []
        for offset, record in enumerate(records):
            if not isinstance(record, Mapping) or not all(isinstance(k, str) for k in record):
                raise ValueError(
                    f"record must be a mapping with string keys, got {type(record).__name__}"
                )
            clash = RESERVED_KEYS & set(record)
            if clash:
                raise ValueError(f"record must not set the journal's own keys {sorted(clash)}")
            full = {
                "seq": self._count + offset,
                "component": self._component,
                "time": time.time(),
                **record,
            }
            try:
                text = json.dumps(full, allow_nan=False, separators=(",", ":"))
            except (TypeError, ValueError) as error:
                raise ValueError(f"record must be JSON-able with finite numbers: {error}") from None
            lines.append(text.encode() + b"\n")
        if not lines:
            return self.last_seq
        self._file.write(b"".join(lines))
        self._file.flush()
        os.fsync(self._file.fileno())
        self._count += len(lines)
        return self.last_seq

    def close(self) -> None:
        """Close the file; later appends raise. Reading records still works."""
        self._file.close()

    def __enter__(self) -> PrivacyJournal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()

    def __repr__(self) -> str:
        return (
            f"PrivacyJournal({str(self._path)!r}, component={self._component!r}, "
            f"records={self._count})"
        )
