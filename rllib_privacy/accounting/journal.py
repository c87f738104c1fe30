"""Write-ahead privacy journal: releases survive a crash between two checkpoints (no Ray).

A ledger that lives only in checkpoints forgets every release made after the last
checkpoint when the driver is killed, so a resumed run could spend the budget twice
(docs/privacy-journal.md: a reset is a silent privacy leak). A component therefore appends each
release's privacy event (``rllib_privacy.accounting.events``) to its journal and only
then hands the release out; the journal is the source of truth when a run (re)starts. A crash
can then only over-count (a journaled release that never left), never under-count.

Format: JSON lines, one record per line,
``{"seq": n, "component": ..., "time": unix_seconds, **record}`` with ``seq`` = 0, 1, 2, ...
Each append is flushed and ``os.fsync``-ed before ``PrivacyJournal.append`` returns.
One process writes a journal file at a time (the Algorithm that owns it).

Conventions shared by the components that use it: one file per component,
``<journal dir>/<component>.jsonl`` (``journal_file``), with the journal dir
``<Algorithm.logdir>/privacy_journal`` by default (``default_journal_dir``).

``ReplayJournal`` is the one replay layer every journaled component uses (kickstart
teacher, PATE labeler, LDPA3C's aggregator): a header carrying the ledger's id, checkpoint
markers, and ``ReplayJournal.after_restore``, which finds a checkpoint's journal by that id
when the checkpoint is restored into another folder, or raises ``JournalNotFoundError``.
It writes every release the same way, ``{"kind": "release", "event": <event dict>, ...}``,
and replays it the same way, into the ledger and then into the component through the
[JournaledComponent][rllib_privacy.accounting.journal.JournaledComponent] protocol: no
component has its own replay loop. Journals written by 0.1.0 (a record kind per component)
are read through one translation table
([journal_records][rllib_privacy.accounting.journal_records]).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import pathlib
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from rllib_privacy.accounting.events import PrivacyEvent, event_from_dict, event_to_dict
from rllib_privacy.accounting.journal_records import (
    HEADER,
    LEGACY_UPDATES,
    RELEASE,
    RESERVED_KEYS,
    SNAPSHOT,
    UPDATE,
    legacy_release,
    record_extras,
    record_kind,
)
from rllib_privacy.accounting.ledger import Ledger

__all__ = [
    "ACCEPT_JOURNAL_LOSS_ENV",
    "JOURNAL_DIR_NAME",
    "RELEASE",
    "SNAPSHOT",
    "UPDATE",
    "JournalNotFoundError",
    "JournaledComponent",
    "PrivacyJournal",
    "PrivacyJournalError",
    "ReplayJournal",
    "default_journal_dir",
    "journal_file",
    "journal_ledger_id",
    "legacy_release",
    "read_records",
    "record_kind",
]

logger = logging.getLogger(__name__)

#: Name of the journal folder inside a run's log dir.
JOURNAL_DIR_NAME = "privacy_journal"

#: Appended to a journal's file name for the file that records its repairs (one JSON line
#: per torn last line dropped when the journal was opened).
REPAIRED_SUFFIX = ".repaired"

#: Fault injection for tests of a full disk: with this variable set to N, every write of a
#: journal that already holds N records fails with ``OSError(ENOSPC)``, in every process
#: that inherits the environment (Ray workers included). Unset in normal use.
FULL_DISK_AFTER_ENV = "RLLIB_PRIVACY_TEST_JOURNAL_FULL_AFTER"


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


def _parse(data: bytes, path: pathlib.Path, component: str) -> tuple[list[dict[str, Any]], int]:
    """The records of a journal file's bytes, and how many bytes hold complete records."""
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
                f"privacy journal {str(path)!r} line {number} is not valid JSON "
                f"({error}); refusing to guess the spent budget"
            ) from None
        _check_record(record, path, component, number, expected_seq=len(records))
        records.append(record)
    return records, keep_bytes


def _check_record(
    record: Any, path: pathlib.Path, component: str, number: int, *, expected_seq: int
) -> None:
    where = f"privacy journal {str(path)!r} line {number}"
    if not isinstance(record, dict) or not RESERVED_KEYS <= set(record):
        raise PrivacyJournalError(
            f"{where} is not a journal record (needs keys {sorted(RESERVED_KEYS)})"
        )
    if record["component"] != component:
        raise PrivacyJournalError(
            f"{where} was written by component {record['component']!r}, "
            f"not {component!r}: use a separate journal file per component"
        )
    if record["seq"] != expected_seq:
        raise PrivacyJournalError(
            f"{where} has seq {record['seq']!r}, expected {expected_seq}: records are "
            "missing or out of order"
        )


def read_records(path: str | os.PathLike[str], *, component: str) -> list[dict[str, Any]]:
    """Read a journal file without opening it for writing (another run may still write it).

    A torn last line is ignored, not repaired.

    Raises:
        OSError: If the file cannot be read.
        PrivacyJournalError: If it is corrupt or belongs to another component.

    """
    path = pathlib.Path(path)
    return _parse(path.read_bytes(), path, _check_component(component))[0]


class PrivacyJournal:
    """Append-only JSON-lines write-ahead log of privacy releases, fsync'd per append.

    Opening an existing file reads it: a torn LAST line (a crash mid-append: no final
    newline, or not valid JSON) is ignored and truncated away; anything wrong before it
    raises ``PrivacyJournalError`` naming the file and line, because silently
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
        records, keep_bytes = _parse(data, self._path, self._component)
        if repair and keep_bytes != len(data):
            with open(self._path, "r+b") as handle:
                handle.truncate(keep_bytes)
                handle.flush()
                os.fsync(handle.fileno())
            self._note_repair(len(data) - keep_bytes, len(records))
        return records

    def _note_repair(self, dropped_bytes: int, kept_records: int) -> None:
        """Say that a torn last line was dropped: a warning, and a line in ``REPAIRED_SUFFIX``.

        The repair happens where the journal is opened (a Ray worker, whose log the
        ``rllib`` command shows only with ``-v``); the file beside the journal lets the
        command name the repair in its summary.
        """
        logger.warning(
            "privacy journal %s ended in a torn line (a crash mid-append): %d bytes dropped, "
            "%d records kept",
            self._path,
            dropped_bytes,
            kept_records,
        )
        note = {"time": time.time(), "dropped_bytes": dropped_bytes, "records": kept_records}
        try:
            with open(f"{self._path}{REPAIRED_SUFFIX}", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(note) + "\n")
        except OSError:  # The warning above still says it; a full disk must not stop here.
            pass

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
        """Append several records with ONE fsync; return the last seq (as ``append``).

        All records are validated before any is written; an empty iterable writes nothing
        and returns ``last_seq``.
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
        full_after = os.environ.get(FULL_DISK_AFTER_ENV)
        if full_after is not None and self._count >= int(full_after):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self._path))
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


# ---------------------------------------------------------------------- replay journal

#: Environment variable naming ledger ids (comma-separated) whose missing journal a restore
#: may do without; the releases made after that checkpoint are then not counted.
ACCEPT_JOURNAL_LOSS_ENV = "RLLIB_PRIVACY_ACCEPT_JOURNAL_LOSS"


class JournalNotFoundError(PrivacyJournalError):
    """A checkpoint's journal is missing, so restoring it could forget spent budget."""


def _header_ledger_id(record: Mapping[str, Any]) -> str | None:
    """The ledger id a first record names, or None if it is not a header."""
    # LDPA3C journals written before the one journal began with {"type": "start", ...}.
    if record_kind(record) not in (HEADER, "start"):
        return None
    ledger_id = record.get("ledger_id", record.get("journal_id"))
    return ledger_id if isinstance(ledger_id, str) and ledger_id else None


def journal_ledger_id(path: str | os.PathLike[str], *, component: str) -> str | None:
    """The ledger id in the header of the journal file ``path``, or None.

    None when the file is missing, unreadable, empty, of another component, or has no
    header: the caller is looking for one journal among several files.
    """
    try:
        with open(path, "rb") as handle:
            first = handle.readline()
        record = json.loads(first)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("component") != component:
        return None
    return _header_ledger_id(record)


def _normalize_marker(marker: Any) -> dict[str, Any] | None:
    """A checkpoint's journal marker in today's form, or None if it names no journal."""
    if not isinstance(marker, Mapping):
        return None
    ledger_id = marker.get("ledger_id", marker.get("journal_id", marker.get("id")))
    seq = marker.get("journal_seq", marker.get("seq"))
    if not isinstance(ledger_id, str) or not ledger_id:
        return None
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise PrivacyJournalError(
            f"the checkpoint's privacy-journal marker has no valid seq: {dict(marker)!r}"
        )
    path = marker.get("journal_path")
    return {"ledger_id": ledger_id, "journal_seq": seq, "journal_path": path}


class JournaledComponent(Protocol):
    """What a component that journals its releases gives ``ReplayJournal`` to replay into.

    The journal replays every release into the ledger itself; the component only keeps
    what it derives from releases (counters, a cache of answers, scores) and its own
    settings in step.
    """

    def journal_snapshot(self) -> dict[str, Any]:
        """The component's totals (its ledger's state included), JSON-safe, for a snapshot."""
        ...

    def load_journal_snapshot(self, state: Mapping[str, Any]) -> None:
        """Reset the totals (the ledger's included) to a ``journal_snapshot()``."""
        ...

    def apply_journal_update(self, fields: Mapping[str, Any]) -> None:
        """Apply an ``"update"`` record's fields (e.g. a k schedule, a stop)."""
        ...

    def count_replayed_release(self, event: PrivacyEvent, extras: Mapping[str, Any]) -> None:
        """Account for a release the journal just replayed into the ledger.

        Args:
            event: The release.
            extras: The record's other fields (what the component journaled with it).

        """
        ...


class ReplayJournal:
    """A component's ``PrivacyJournal``, tied to its ledger, with generic replay and restore.

    Used by every journaled component (kickstart teacher, PATE labeler, LDPA3C's
    aggregator). On top of the journal it adds:

    * a header record carrying the ledger's id (``ledger_id``): a checkpoint's ``marker()``
      (ledger id, last seq, file path) names the journal its state reflects;
    * typed writes: ``append_release(event, **extras)`` (and ``extend_releases`` with one
      fsync), ``append_update(**fields)`` and ``append_snapshot(state)``;
    * ``replay(records, component)``: each release goes into the ledger (beyond the budget
      too: it may have left before a crash) and then to the component's
      ``count_replayed_release``; updates and snapshots go to the component;
    * ``replay_all(component)``, every record after the header, for a component that
      (re)starts without a checkpoint in a folder whose journal already has records (Tune's
      ``--resume`` of a trial that crashed before its first checkpoint);
    * ``after_restore``, which brings a component just restored from a checkpoint up to
      date: the records the checkpoint's journal holds after its marker are replayed,
      whether that journal is this one (same folder) or another one found by the ledger id
      (a restore into a new folder). A checkpoint from another journal is then written here
      as a ``"snapshot"`` record, so that this journal alone reproduces the totals.

    Args:
        path: The journal file (created with its folders if missing).
        component: The component name written in every record.
        ledger: The ledger the journal belongs to, or None (a journal that only stores
            records: nothing to replay into). A new journal's header takes its
            ``ledger_id``; reopening an existing journal gives the ledger the journal's id
            instead.
        legacy_defaults: Mechanism fields for 0.1.0 release records that lack them (see
            ``rllib_privacy.accounting.journal_records.legacy_release``).

    Raises:
        PrivacyJournalError: If the file is corrupt, belongs to another component, or does
            not start with a header record.

    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        component: str,
        ledger: Ledger[Any] | None = None,
        legacy_defaults: Mapping[str, Any] | None = None,
    ) -> None:
        self._journal = PrivacyJournal(path, component=component)
        if self._journal.last_seq < 0:
            ledger_id = uuid.uuid4().hex if ledger is None else ledger.ledger_id
            self._journal.append({"kind": HEADER, "ledger_id": ledger_id})
        header_id = _header_ledger_id(self._journal.records(after_seq=-1)[0])
        if header_id is None:
            raise PrivacyJournalError(
                f"privacy journal {str(self._journal.path)!r} does not start with a header "
                "record: it was not written by this component's journaling"
            )
        self._id = header_id
        self._ledger = ledger
        self._legacy_defaults = dict(legacy_defaults or {})
        if ledger is not None:
            ledger.adopt_ledger_id(header_id)

    @property
    def path(self) -> pathlib.Path:
        """The journal file."""
        return self._journal.path

    @property
    def component(self) -> str:
        """The component that writes the journal."""
        return self._journal.component

    @property
    def ledger_id(self) -> str:
        """The id of the ledger this journal belongs to (from the header)."""
        return self._id

    @property
    def last_seq(self) -> int:
        """Seq of the newest record (0 is the header)."""
        return self._journal.last_seq

    def __len__(self) -> int:
        return len(self._journal)

    # ------------------------------------------------------------------ writing

    def append_release(self, event: PrivacyEvent, **extras: Any) -> int:
        """Durably append a release (fsync'd) and return its seq.

        Args:
            event: The release, as the ledger records it.
            **extras: What the component keeps with it (JSON-able; e.g. cached answers).

        """
        return self.extend_releases([(event, extras)])

    def extend_releases(self, releases: Iterable[tuple[PrivacyEvent, Mapping[str, Any]]]) -> int:
        """Durably append ``(event, extras)`` releases with ONE fsync; return the last seq."""
        return self._journal.extend(
            {"kind": RELEASE, "event": event_to_dict(event), **extras} for event, extras in releases
        )

    def append_update(self, **fields: Any) -> int:
        """Durably append an ``"update"`` of the component's own schedule or flags."""
        return self._journal.append({"kind": UPDATE, "fields": fields})

    def append_snapshot(self, state: Mapping[str, Any], **fields: Any) -> int:
        """Append a ``"snapshot"`` record: replay resets the component to ``state``."""
        return self._journal.append({"kind": SNAPSHOT, "state": dict(state), **fields})

    def marker(self) -> dict[str, Any]:
        """What a checkpoint stores to know which journal, up to which record, it reflects."""
        return {
            "ledger_id": self._id,
            "journal_seq": self._journal.last_seq,
            "journal_path": str(self._journal.path),
        }

    def records(self, *, after_seq: int = -1) -> list[dict[str, Any]]:
        """The records with ``seq > after_seq``, oldest first (the header is seq 0)."""
        return self._journal.records(after_seq=after_seq)

    # ------------------------------------------------------------------ replaying

    def replay(self, records: Iterable[Mapping[str, Any]], component: JournaledComponent) -> int:
        """Apply journal records (oldest first) to the ledger and the component.

        Returns:
            The number of releases replayed (the sum of their events' counts).

        Raises:
            PrivacyJournalError: If a record is of no known kind, or the ledger does not
                record its event (e.g. it was released under other settings, such as
                another noise scale): replaying it would misstate the spent ε.

        """
        replayed = 0
        for record in records:
            kind = record_kind(record)
            if kind == SNAPSHOT:
                # 0.1.0's LDPA3C kept a snapshot's fields at the top of the record.
                state = record["state"] if "state" in record else record_extras(record)
                component.load_journal_snapshot(state)
            elif kind == UPDATE:
                component.apply_journal_update(record["fields"])
            elif kind in LEGACY_UPDATES:
                component.apply_journal_update(LEGACY_UPDATES[kind](record))
            else:
                event = self._event(record)
                replayed += event.count
                component.count_replayed_release(event, record_extras(record))
        return replayed

    def _event(self, record: Mapping[str, Any]) -> PrivacyEvent:
        """The release a record holds, replayed into the ledger."""
        where = f"privacy journal {str(self.path)!r} record {record.get('seq')}"
        if self._ledger is None:
            raise PrivacyJournalError(f"{where}: this journal has no ledger to replay into")
        try:
            if record_kind(record) == RELEASE and "event" in record:
                candidates = [event_from_dict(record["event"])]
            else:
                legacy = legacy_release(record, self._legacy_defaults)
                if legacy is None:
                    raise PrivacyJournalError(
                        f"{where} has an unknown kind {record_kind(record)!r} for "
                        f"{self.component}; was it written by another program?"
                    )
                candidates = legacy
            event = next((e for e in candidates if self._ledger.accepts(e)), candidates[0])
            self._ledger.replay([event])
        except (KeyError, TypeError, ValueError) as error:
            raise PrivacyJournalError(f"{where} cannot be replayed: {error}") from None
        return event

    def replay_all(self, component: JournaledComponent) -> int:
        """Replay every record after the header (a restart without a checkpoint).

        Returns:
            The number of releases replayed.

        """
        return self.replay(self._journal.records(after_seq=0), component)

    def tail_after(self, marker: Any) -> list[dict[str, Any]] | None:
        """Records of THIS journal newer than a checkpoint's ``marker``.

        Returns:
            The records, or None when the marker names another ledger's journal or none.

        Raises:
            PrivacyJournalError: If the marker names this journal at a seq it never
                reached (the file lost records since that checkpoint).

        """
        found = _normalize_marker(marker)
        if found is None or found["ledger_id"] != self._id:
            return None
        seq = found["journal_seq"]
        if seq > self.last_seq:
            raise PrivacyJournalError(
                f"privacy journal {str(self.path)!r} of ledger {self._id} has records up to "
                f"seq {self.last_seq}, but the checkpoint being restored reflects it up to seq "
                f"{seq}: the file lost records since, so the spent budget cannot be trusted"
            )
        return self._journal.records(after_seq=seq)

    def find_journal(self, marker: Any) -> pathlib.Path | None:
        """The journal file of the marker's ledger, or None if it cannot be found.

        Looks at the path the marker recorded, then at every ``*.jsonl`` beside this journal
        (where a user may copy it, e.g. ``<component>.<ledger_id>.jsonl``); a file counts
        only if its header carries the marker's ledger id.
        """
        found = _normalize_marker(marker)
        if found is None:
            return None
        ledger_id = found["ledger_id"]
        candidates = [pathlib.Path(found["journal_path"])] if found["journal_path"] else []
        candidates += sorted(self.path.parent.glob("*.jsonl"))
        for candidate in candidates:
            if candidate.absolute() == self.path.absolute():
                continue
            if journal_ledger_id(candidate, component=self.component) == ledger_id:
                return candidate
        return None

    def after_restore(
        self,
        marker: Any,
        component: JournaledComponent,
        *,
        accept_loss: bool | None = None,
    ) -> None:
        """Bring the journal and a component just restored from a checkpoint in line.

        * Marker of this journal: replay its records newer than the checkpoint.
        * Marker of another ledger's journal: find that journal (``find_journal``),
          replay its records newer than the checkpoint, then append a snapshot of the
          resulting totals here. So a checkpoint restored into a new folder never reports
          fewer releases than were made.
        * The same checkpoint restored here before (a trial restarted from it): this
          journal's records since that restore count too, plus the other journal's newer
          records.
        * No marker (a checkpoint from before journals): append a snapshot.

        Args:
            marker: The restored state's ``marker()`` (None if it had none).
            component: The component just restored (see ``replay``).
            accept_loss: Restore even if the checkpoint's journal is missing (its releases
                after the checkpoint are then not counted). None reads the environment
                variable ``RLLIB_PRIVACY_ACCEPT_JOURNAL_LOSS`` (a comma-separated list of
                ledger ids, or ``*`` for any).

        Raises:
            JournalNotFoundError: If the checkpoint's journal cannot be found (the message
                names the ledger id and the paths looked at) and the loss is not accepted.

        """
        tail = self.tail_after(marker)
        if tail is not None:
            self.replay(tail, component)
            return
        found = _normalize_marker(marker)
        if found is None:
            self.append_snapshot(component.journal_snapshot())
            return
        ledger_id, seq = found["ledger_id"], found["journal_seq"]
        path = self.find_journal(found)
        earlier = self._earlier_restore(ledger_id, seq)
        replayed = 0
        if earlier is not None:
            # This journal went on from the same checkpoint before (a trial restarted that
            # restores it again): what it recorded since then counts too.
            self.replay(self.records(after_seq=earlier["seq"] - 1), component)
            replayed = int(earlier.get("restored_from", {}).get("replayed_records", 0))
            if path is None:
                return
        if path is not None:
            # Only the records the earlier restore had not seen (the other run went on).
            newer = read_records(path, component=self.component)[seq + 1 + replayed :]
            self.replay(newer, component)
            if earlier is None or newer:
                self.append_snapshot(
                    component.journal_snapshot(),
                    restored_from={
                        "ledger_id": ledger_id,
                        "journal_seq": seq,
                        "journal_path": str(path),
                        "replayed_records": replayed + len(newer),
                    },
                )
            return
        looked = [found["journal_path"]] if found["journal_path"] else []
        looked.append(str(self.path.parent / "*.jsonl"))
        if accept_loss is None:
            accepted = os.environ.get(ACCEPT_JOURNAL_LOSS_ENV, "")
            accept_loss = any(part.strip() in ("*", ledger_id) for part in accepted.split(","))
        if not accept_loss:
            raise JournalNotFoundError(
                f"{self.component}: the checkpoint being restored belongs to ledger "
                f"{ledger_id}, whose privacy journal holds the releases made after it (records "
                f"after seq {seq}), but that journal was not found (looked at "
                f"{', '.join(looked)} for a header with ledger_id {ledger_id}). Restoring "
                "without it would under-count the spent budget. Copy that journal file to "
                f"{self.path.parent / f'{self.component}.{ledger_id}.jsonl'}, or set the "
                f"environment variable {ACCEPT_JOURNAL_LOSS_ENV}={ledger_id} to restore "
                "without its releases after the checkpoint"
            )
        logger.warning(
            "%s: restoring a checkpoint of ledger %s WITHOUT its privacy journal (%s set): "
            "releases made after that checkpoint are not counted",
            self.component,
            ledger_id,
            ACCEPT_JOURNAL_LOSS_ENV,
        )
        self.append_snapshot(
            component.journal_snapshot(),
            journal_lost={"ledger_id": ledger_id, "journal_seq": seq, "looked": looked},
        )

    def _earlier_restore(self, ledger_id: str, seq: int) -> dict[str, Any] | None:
        """The last snapshot here that restored the checkpoint (ledger_id, seq), or None."""
        found = None
        for record in self.records(after_seq=0):
            if record_kind(record) != SNAPSHOT:
                continue
            source = record.get("restored_from") or record.get("journal_lost") or {}
            if source.get("ledger_id") == ledger_id and source.get("journal_seq") == seq:
                found = record
        return found

    def close(self) -> None:
        """Close the file (later appends raise)."""
        self._journal.close()

    def __repr__(self) -> str:
        return (
            f"ReplayJournal({str(self.path)!r}, component={self.component!r}, "
            f"ledger_id={self._id!r}, records={len(self)})"
        )
