"""One ledger per private data owner, shared by every trial, sweep and run (no Ray).

docs/privacy-journal.md#owner-ledgers. A trial's journal protects a trial's budget against a
crash; it cannot stop twenty seeds of one sweep, or a second experiment next week, from each
spending a full budget of the same private data. The budget belongs to the data: the
kickstart teacher's training data, or the PATE ensemble's partitions. ``OwnerLedger`` keeps
that budget in a write-ahead journal bound to the owner's identity (a hash of the owner's
checkpoint files, ``owner_identity``) and stored beside the owner
(``<owner folder>/.privacy_owner/<component>-<identity>.jsonl``), not beside a trial.

Concurrency: the trials of a Tune sweep are separate processes. Every check-then-journal
(``OwnerLedger.spending``) holds an exclusive ``fcntl.flock`` on ``<journal>.lock``: the
holder first reads the records other processes appended since its last look (replaying
them into its copy of the ledger), then decides and appends, then releases the lock. Two
trials can therefore never both spend the last of the budget, and the file never holds two
interleaved appends. ``flock`` is advisory and local: the folder must be on a local (or
lock-honouring) file system, which is where ``privacy_journal_dir`` must be too.

The spent ε is never stored as a number: like every ledger's, it is recomputed from the typed
events (``rllib_privacy.accounting.events``) the journal holds, through the ledger's
accountant.

Journal format (JSON lines, as ``rllib_privacy.accounting.journal``): seq 0 is a header
``{"kind": "header", "ledger_id": <identity>, "owner": {...}, "settings": <empty ledger
state>}``; every later line is ``{"kind": "release", "event": <event dict>, "trial": <who
spent it>}``. A torn last line (a writer killed mid-append) is cut off by the next lock
holder, who is the only one writing at that moment.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import pathlib
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rllib_privacy.accounting.events import PrivacyEvent, event_from_dict, event_to_dict
from rllib_privacy.accounting.journal import PrivacyJournalError, _fsync_dir
from rllib_privacy.accounting.journal_records import HEADER, RELEASE
from rllib_privacy.accounting.ledger import Ledger
from rllib_privacy.errors import PrivacyConfigError

__all__ = [
    "BUDGET_SCOPES",
    "OWNER_DIR_NAME",
    "OwnerLedger",
    "check_budget_scope",
    "owner_identity",
    "owner_journal_path",
    "owner_ledger_args",
]

logger = logging.getLogger(__name__)

#: Where a data owner's ledger is spent from: ``owner`` (one budget for everything that ever
#: queries the owner, the default) or ``trial`` (each trial its own: simulation sweeps whose
#: trials stand for independent deployments).
BUDGET_SCOPES: tuple[str, ...] = ("owner", "trial")
#: Folder of owner ledgers, beside the owner's checkpoint (hidden: checkpoint loaders skip it).
OWNER_DIR_NAME = ".privacy_owner"
#: Hex digits of the identity hash used in file names (64 bits: collisions are not a concern
#: for the few owners one folder holds; the header keeps the full hash).
_NAME_DIGITS = 16
_CHUNK = 1 << 20


def check_budget_scope(key: str, value: Any) -> str:
    """Return ``value`` if it is a budget scope, else raise naming ``key``.

    Raises:
        PrivacyConfigError: Naming the key, the value and the allowed scopes.

    """
    if value not in BUDGET_SCOPES:
        raise PrivacyConfigError(
            f"config key {key!r} must be one of {list(BUDGET_SCOPES)} (owner: every trial and "
            "run that queries the same private data spends one budget; trial: each trial "
            f"has its own, for simulations of independent deployments), got {value!r}"
        )
    return str(value)


def _owned_files(root: pathlib.Path) -> list[pathlib.Path]:
    """The files under ``root`` that make up the owner, skipping hidden entries (ledgers)."""
    if root.is_file():
        return [root]
    files = []
    for folder, dirs, names in os.walk(root):
        # Hidden folders hold bookkeeping (the owner ledgers themselves), not the owner.
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        files += [pathlib.Path(folder) / n for n in sorted(names) if not n.startswith(".")]
    return files


def owner_identity(
    checkpoints: Iterable[str | os.PathLike[str]], *, extra: Mapping[str, Any] | None = None
) -> str:
    """SHA-256 of the owner's checkpoint files' contents (and ``extra``), as 64 hex digits.

    The identity is what the data owner *is*: the same weights give the same identity
    wherever they are copied, and any change of a file (a retrained or fine-tuned teacher)
    gives a new owner with a fresh ledger. Paths enter only relative to each checkpoint,
    so moving a checkpoint keeps its owner.

    Args:
        checkpoints: The owner's checkpoint folders (or files), in their meaningful order
            (e.g. the PATE teachers in ensemble order).
        extra: JSON-able facts that also make the owner (e.g. the PATE partition: how many
            teachers, in which order).

    Raises:
        PrivacyConfigError: If a checkpoint does not exist or holds no file.

    """
    digest = hashlib.sha256()
    for position, checkpoint in enumerate(checkpoints):
        root = pathlib.Path(checkpoint)
        files = _owned_files(root) if root.exists() else []
        if not files:
            raise PrivacyConfigError(
                f"cannot identify the data owner: checkpoint {str(root)!r} holds no file"
            )
        digest.update(f"checkpoint {position}\0".encode())
        for file in files:
            relative = file.name if root.is_file() else file.relative_to(root).as_posix()
            digest.update(f"{relative}\0{file.stat().st_size}\0".encode())
            with open(file, "rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
    digest.update(json.dumps(dict(extra or {}), sort_keys=True).encode())
    return digest.hexdigest()


def owner_journal_path(
    folder: str | os.PathLike[str], *, component: str, identity: str
) -> pathlib.Path:
    """``<folder>/.privacy_owner/<component>-<identity[:16]>.jsonl``: the owner's journal."""
    return pathlib.Path(folder) / OWNER_DIR_NAME / f"{component}-{identity[:_NAME_DIGITS]}.jsonl"


def owner_ledger_args(
    checkpoints: Iterable[str | os.PathLike[str]],
    *,
    folder: str | os.PathLike[str],
    component: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """``owner_path`` and ``owner_identity`` of a component spending from its owner's ledger.

    Args:
        checkpoints: The owner's checkpoint folders (see ``owner_identity``).
        folder: Where ``.privacy_owner/`` goes (beside the owner).
        component: The journaling component.
        extra: Facts that also make the owner (see ``owner_identity``).

    """
    identity = owner_identity(checkpoints, extra=extra)
    path = owner_journal_path(folder, component=component, identity=identity)
    return {"owner_path": str(path), "owner_identity": identity}


def _normalized(state: Mapping[str, Any]) -> Any:
    """A ledger state as JSON reads it back (tuples become lists), for comparisons."""
    return json.loads(json.dumps(dict(state), allow_nan=False))


class OwnerLedger:
    """A data owner's ledger and its write-ahead journal, shared by processes through a lock.

    Args:
        path: The owner's journal file (``owner_journal_path``); folders are created.
        component: Who writes it (e.g. ``"kickstart_teacher"``); a file of another component
            is refused.
        identity: The owner's identity (``owner_identity``); a file of another owner is
            refused.
        ledger: An EMPTY ledger with the owner's settings (mechanism, budget, composition).
            It becomes this object's copy of the owner's ledger. The first process creates
            the journal with these settings; every later one must bring the same settings,
            because an owner has one budget.
        owner: JSON-able description of the owner for the header (e.g. its checkpoints).

    Raises:
        PrivacyConfigError: If the journal belongs to another owner, or was created with
            other ledger settings (the message names both).
        PrivacyJournalError: If the journal is corrupt.

    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        component: str,
        identity: str,
        ledger: Ledger[Any],
        owner: Mapping[str, Any] | None = None,
    ) -> None:
        if ledger.releases:
            raise ValueError("OwnerLedger needs an empty ledger: the journal fills it")
        self._path = pathlib.Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_path = self._path.with_name(self._path.name + ".lock")
        self._component = component
        self._identity = identity
        self._ledger = ledger
        self._settings = _normalized(ledger.state_dict())
        self._offset = 0  # bytes of the file already replayed
        self._next_seq = 0
        self._held = False
        with self._locked():
            self._refresh()
            if self._next_seq == 0:
                self._write(
                    [
                        {
                            "kind": HEADER,
                            "ledger_id": identity,
                            "owner": dict(owner or {}),
                            "settings": self._settings,
                        }
                    ]
                )
        ledger.adopt_ledger_id(identity[:32])

    # ------------------------------------------------------------------ queries

    @property
    def path(self) -> pathlib.Path:
        """The owner's journal file."""
        return self._path

    @property
    def identity(self) -> str:
        """The owner's identity (``owner_identity``)."""
        return self._identity

    @property
    def ledger(self) -> Ledger[Any]:
        """This process's copy of the owner's ledger, as of the last look at the journal."""
        return self._ledger

    def refreshed(self) -> Ledger[Any]:
        """The owner's ledger with every release journaled so far (by any process)."""
        with self._locked():
            self._refresh()
        return self._ledger

    def releases_by(self, trial: str) -> int:
        """How many releases the journal holds from ``trial`` (evidence of an earlier run)."""
        count = 0
        with open(self._path, "rb") as handle:
            for raw in handle:
                with contextlib.suppress(ValueError):
                    record = json.loads(raw)
                    if record.get("kind") == RELEASE and record.get("trial") == trial:
                        count += int(record["event"].get("count", 1))
        return count

    # ------------------------------------------------------------------ spending

    @contextlib.contextmanager
    def spending(self) -> Iterator[Ledger[Any]]:
        """Hold the owner's lock for one check-then-journal; yields the up-to-date ledger.

        Inside the block, decide with the yielded ledger (``can_afford``, ``affordable``) and
        journal what is released with ``append``; nobody else can spend meanwhile.
        """
        with self._locked():
            self._refresh()
            yield self._ledger

    def append(self, events: Iterable[PrivacyEvent], *, trial: str) -> None:
        """Journal releases (one fsync) and record them; only inside ``spending``.

        Write-ahead: the events are durable before the caller lets the release leave.

        Raises:
            PrivacyJournalError: Outside ``spending``.
            BudgetExhaustedError: If an event does not fit (nothing of it is written).

        """
        if not self._held:
            raise PrivacyJournalError("OwnerLedger.append must be called inside spending()")
        events = list(events)
        for event in events:
            if event.count and not self._ledger.can_afford(event):
                # Raises BudgetExhaustedError with the ledger's own message.
                self._ledger.record(event)
        self._write([{"kind": RELEASE, "event": event_to_dict(e), "trial": trial} for e in events])
        self._ledger.replay(events)

    # ------------------------------------------------------------------ internals

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if self._held:  # re-entrant within one process (e.g. refreshed() inside spending())
            yield
            return
        with open(self._lock_path, "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            self._held = True
            try:
                yield
            finally:
                self._held = False
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _refresh(self) -> None:
        """Replay what others appended since the last look (lock held); cut a torn tail."""
        if not self._path.exists():
            return
        with open(self._path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            # The lock holder is the only writer: an unterminated tail is a crashed append.
            with open(self._path, "r+b") as handle:
                handle.truncate(self._offset + end)
                handle.flush()
                os.fsync(handle.fileno())
        for raw in data[:end].split(b"\n")[:-1]:
            self._apply(raw)
        self._offset += end

    def _apply(self, raw: bytes) -> None:
        where = f"owner ledger {str(self._path)!r} record {self._next_seq}"
        try:
            record = json.loads(raw)
        except ValueError as error:
            raise PrivacyJournalError(
                f"{where} is not valid JSON ({error}); refusing to guess the owner's spent budget"
            ) from None
        if not isinstance(record, dict) or record.get("seq") != self._next_seq:
            raise PrivacyJournalError(f"{where}: records are missing or out of order")
        if record.get("component") != self._component:
            raise PrivacyJournalError(
                f"{where} was written by {record.get('component')!r}, not {self._component!r}"
            )
        if self._next_seq == 0:
            self._check_header(record)
        elif record.get("kind") == RELEASE:
            try:
                self._ledger.replay([event_from_dict(record["event"])])
            except (KeyError, TypeError, ValueError) as error:
                raise PrivacyJournalError(f"{where} cannot be replayed: {error}") from None
        self._next_seq += 1

    def _check_header(self, record: Mapping[str, Any]) -> None:
        if record.get("kind") != HEADER or record.get("ledger_id") != self._identity:
            raise PrivacyConfigError(
                f"owner ledger {str(self._path)!r} belongs to owner {record.get('ledger_id')!r}, "
                f"not {self._identity!r}: move that file away (it is another owner's budget)"
            )
        theirs = record.get("settings")
        if theirs != self._settings:
            theirs = theirs if isinstance(theirs, Mapping) else {}
            differ = sorted(
                key
                for key in set(theirs) | set(self._settings)
                if theirs.get(key) != self._settings.get(key)
            )
            created = {key: theirs.get(key) for key in differ}
            asked = {key: self._settings.get(key) for key in differ}
            raise PrivacyConfigError(
                f"the data owner's ledger {str(self._path)!r} was created with the ledger "
                f"settings {created}, but this run asks for {asked}. An owner has ONE budget "
                "and one accounting: use the owner's settings, or set the budget scope to "
                "'trial' for a simulation whose trials stand for independent deployments"
            )

    def _write(self, records: list[dict[str, Any]]) -> None:
        lines = []
        for offset, record in enumerate(records):
            full = {
                "seq": self._next_seq + offset,
                "component": self._component,
                "time": time.time(),
                **record,
            }
            lines.append(json.dumps(full, allow_nan=False, separators=(",", ":")).encode() + b"\n")
        created = not self._path.exists()
        with open(self._path, "ab") as handle:
            data = b"".join(lines)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if created:
            _fsync_dir(self._path.parent)
        self._offset += len(data)
        self._next_seq += len(records)

    def __repr__(self) -> str:
        return (
            f"OwnerLedger({str(self._path)!r}, component={self._component!r}, "
            f"releases={self._ledger.releases})"
        )
