"""Write-ahead journaling for the teacher-side trust domains (kickstart teacher, PATE labeler).

Both the kickstarting teacher (:class:`~rllib_privacy.teachers.DirichletTeacher`) and the PATE
labeler (:class:`~rllib_privacy.pate.labeler.PATELabeler`) answer the student from their own
process and own a ledger. Each appends the ledger event(s) of an answer to a
:class:`~rllib_privacy.accounting.journal.PrivacyJournal` BEFORE the answer is returned, so a
driver killed between two checkpoints can only over-count, never under-count (DESIGN §3).

:func:`check_journal_dir` and :func:`algorithm_journal_path` (the ``privacy_journal_dir`` key and
where a trial's journal lives) are also what PGC-A3C's aggregator (``LDPA3C``) uses.

:class:`ReplayJournal` adds what both need on top of the journal:

* a header record with a random ``journal_id``, so that a checkpoint knows which journal its
  ``journal_seq`` refers to even if the run's folder is moved;
* :meth:`ReplayJournal.marker` (stored in the component's checkpointed state) and
  :meth:`ReplayJournal.tail_after`, the records to replay after restoring that state: the
  journal's newer records if the state came from this journal, else None, and the component
  then appends a ``"snapshot"`` record of the restored totals so that the journal alone
  always reproduces them;
* :meth:`ReplayJournal.records_to_replay`, every record after the header, for a component
  that (re)starts without a checkpoint in a folder whose journal already has records (Tune's
  ``--resume`` of a trial that crashed before its first checkpoint).

Record kinds are the component's own (``"release"``, ``"queries"``, ...) plus ``"snapshot"``
(``{"kind": "snapshot", "state": ...}``: replace the totals by these), which replay must
treat as "reset to this state".

One run writes a journal file at a time: two runs pointed at the same ``privacy_journal_dir``
and trial name would interleave their records (the journal then refuses to open).
"""

from __future__ import annotations

import logging
import os
import pathlib
import uuid
from collections.abc import Callable
from typing import Any

from rllib_privacy.accounting.journal import (
    PrivacyJournal,
    PrivacyJournalError,
    default_journal_dir,
    journal_file,
)
from rllib_privacy.errors import PrivacyConfigError

logger = logging.getLogger(__name__)

__all__ = [
    "JOURNAL_DIR_KEY",
    "SNAPSHOT",
    "ReplayJournal",
    "algorithm_journal_path",
    "check_journal_dir",
    "same_node_strategy",
]

#: The config key naming the journal folder (None: ``<trial folder>/privacy_journal``).
JOURNAL_DIR_KEY = "privacy_journal_dir"
#: Record kind that replaces the component's totals by the state it holds.
SNAPSHOT = "snapshot"
#: ``privacy_journal_dir`` values that would switch the journal off, which is not allowed.
_JOURNAL_OFF_VALUES = ("", "off", "none", "false", "no", "0", "disabled")
_HEADER = "header"


def check_journal_dir(value: Any) -> None:
    """Raise unless ``value`` is a valid ``privacy_journal_dir``: None or an absolute path.

    A private run always journals (losing releases on a crash is the bug the journal fixes),
    so ``false``, ``"off"`` and the like are rejected too.

    Raises:
        PrivacyConfigError: Naming the key and what is allowed.

    """
    if value is None:
        return
    off = isinstance(value, bool) or (
        isinstance(value, str) and value.strip().lower() in _JOURNAL_OFF_VALUES
    )
    if off:
        raise PrivacyConfigError(
            f"config key {JOURNAL_DIR_KEY!r} cannot switch the privacy journal off (got "
            f"{value!r}): without it a crash between two checkpoints forgets spent budget. "
            "Use null for <trial dir>/privacy_journal, or a folder path"
        )
    if not isinstance(value, str | os.PathLike):
        raise PrivacyConfigError(
            f"config key {JOURNAL_DIR_KEY!r} must be null or a folder path, got {value!r}"
        )
    if not pathlib.Path(value).expanduser().is_absolute():
        # Tune runs trials in a per-session working dir, so a relative path would move
        # on --resume and the journal would be lost.
        raise PrivacyConfigError(
            f"config key {JOURNAL_DIR_KEY!r} must be an absolute path (or start with ~), "
            f"got {value!r}"
        )


def same_node_strategy() -> Any:
    """Ray scheduling strategy pinning an actor to this process's node (where the journal is)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(
        node_id=ray.get_runtime_context().get_node_id(), soft=False
    )


def algorithm_journal_path(
    algorithm: Any, journal_dir: str | os.PathLike[str] | None, *, component: str
) -> pathlib.Path:
    """The journal file of ``component`` in a run of ``algorithm``.

    ``<folder>/<component>.jsonl`` with ``folder`` =

    * ``<privacy_journal_dir>/<trial folder name>`` when ``journal_dir`` is set (the trials of
      one Tune experiment share their config, yet each needs its own journal; outside Tune
      ``<privacy_journal_dir>`` itself);
    * else ``<trial folder>/privacy_journal``. Measured on Ray 2.60: under Tune,
      ``Algorithm.logdir`` is the trial's *working* folder
      ``/tmp/ray/session_<id>/artifacts/<time>/<experiment>/working_dirs/<trial>``, which a
      resumed run (a new Ray session) does not get back, whereas the trial folder in the
      storage path (``<storage_path>/<experiment>/<trial>``, beside ``result.json`` and the
      checkpoints) is what ``--resume`` reuses. Outside Tune, or with non-local (cloud)
      storage, ``Algorithm.logdir`` is used (with a warning for cloud storage: set
      ``privacy_journal_dir`` to a durable local folder then).

    Args:
        algorithm: The running Algorithm (Tune gives it ``_storage``).
        journal_dir: The ``privacy_journal_dir`` setting (checked; ``~`` is expanded).
        component: The component writing the journal.

    Raises:
        PrivacyConfigError: For a bad ``journal_dir``.

    """
    check_journal_dir(journal_dir)
    storage = getattr(algorithm, "_storage", None)
    if journal_dir is not None:
        folder = pathlib.Path(os.path.expanduser(os.fspath(journal_dir)))
        if storage is not None:
            folder = folder / storage.trial_dir_name
    elif storage is not None and _is_local(storage):
        folder = default_journal_dir(storage.trial_fs_path)
    else:
        if storage is not None:
            logger.warning(
                "%s: the trial's storage is not a local folder; its privacy journal goes to %s, "
                "which --resume does not reuse. Set privacy_journal_dir to a durable folder.",
                component,
                algorithm.logdir,
            )
        folder = default_journal_dir(algorithm.logdir)
    return journal_file(folder.absolute(), component)


def _is_local(storage: Any) -> bool:
    import pyarrow.fs

    return isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem)


class ReplayJournal:
    """A component's :class:`PrivacyJournal` with a header id and checkpoint bookkeeping.

    Args:
        path: The journal file (created with its folders if missing).
        component: The component name written in every record.

    Raises:
        PrivacyJournalError: If the file is corrupt, belongs to another component, or does
            not start with a header record.

    """

    def __init__(self, path: str | os.PathLike[str], *, component: str) -> None:
        self._journal = PrivacyJournal(path, component=component)
        if self._journal.last_seq < 0:
            self._journal.append({"kind": _HEADER, "journal_id": uuid.uuid4().hex})
        header = self._journal.records(after_seq=-1)[0]
        if header.get("kind") != _HEADER or not isinstance(header.get("journal_id"), str):
            raise PrivacyJournalError(
                f"privacy journal {str(self._journal.path)!r} does not start with a header "
                "record: it was not written by this component's journaling"
            )
        self._id: str = header["journal_id"]

    @property
    def path(self) -> pathlib.Path:
        """The journal file."""
        return self._journal.path

    @property
    def journal_id(self) -> str:
        """Random id written in the header when the file was created."""
        return self._id

    @property
    def last_seq(self) -> int:
        """Seq of the newest record (0 is the header)."""
        return self._journal.last_seq

    def append(self, kind: str, **fields: Any) -> int:
        """Durably append ``{"kind": kind, **fields}`` (fsync'd) and return its seq."""
        return self._journal.append({"kind": kind, **fields})

    def append_snapshot(self, state: dict[str, Any]) -> int:
        """Append a ``"snapshot"`` record: replay resets the component to ``state``."""
        return self.append(SNAPSHOT, state=state)

    def marker(self) -> dict[str, Any]:
        """What a checkpoint stores to know which records it already reflects."""
        return {"journal_id": self._id, "journal_seq": self._journal.last_seq}

    def records_to_replay(self) -> list[dict[str, Any]]:
        """Every record after the header, oldest first (a restart without a checkpoint)."""
        return self._journal.records(after_seq=0)

    def tail_after(self, marker: Any) -> list[dict[str, Any]] | None:
        """Records newer than a checkpoint's :meth:`marker`, or None if it is not this journal's.

        None (a checkpoint of another run, an older package version, or a seq this journal
        never reached) tells the caller to append a snapshot of the restored state instead.
        """
        if not isinstance(marker, dict) or marker.get("journal_id") != self._id:
            return None
        seq = marker.get("journal_seq")
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= self.last_seq:
            return None
        return self._journal.records(after_seq=seq)

    def after_restore(
        self,
        marker: Any,
        *,
        replay: Callable[[list[dict[str, Any]]], None],
        snapshot: Callable[[], dict[str, Any]],
    ) -> None:
        """Bring the journal and a component just restored from a checkpoint in line.

        Args:
            marker: The restored state's :meth:`marker` (None if it had none).
            replay: Applies records to the component (called with the journal's records
                newer than the checkpoint when the checkpoint came from this journal).
            snapshot: Returns the component's restored totals (JSON-safe), appended as a
                ``"snapshot"`` record when the checkpoint came from elsewhere.

        """
        tail = self.tail_after(marker)
        if tail is None:
            self.append_snapshot(snapshot())
        else:
            replay(tail)

    def close(self) -> None:
        """Close the file (later appends raise)."""
        self._journal.close()
