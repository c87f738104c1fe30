"""Where a run's privacy journals live, for every journaled component (needs Ray/Tune).

The kickstarting teacher ([DirichletTeacher][rllib_privacy.teachers.DirichletTeacher]), the
PATE labeler ([PATELabeler][rllib_privacy.pate.labeler.PATELabeler]) and LDPA3C's aggregator
each append the privacy event of a release to their
[ReplayJournal][rllib_privacy.accounting.journal.ReplayJournal] BEFORE the release leaves, so
a driver killed between two checkpoints can only over-count, never under-count
(docs/privacy-journal.md). The journal itself (its records, replay and restore logic) is pure
and lives in [journal][rllib_privacy.accounting.journal]; this module holds the run-level
pieces every component shares: the ``privacy_journal_dir`` key (``check_journal_dir``), where
a trial's journal lives (``algorithm_journal_path``) and pinning an actor to the journal's
node (``same_node_strategy``).

One run writes a journal file at a time: two runs pointed at the same ``privacy_journal_dir``
and trial name would interleave their records (the journal then refuses to open).
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
from typing import Any

from rllib_privacy.accounting.journal import (
    ACCEPT_JOURNAL_LOSS_ENV,
    JournalNotFoundError,
    PrivacyJournalError,
    default_journal_dir,
    journal_file,
    read_records,
)
from rllib_privacy.errors import PrivacyConfigError

logger = logging.getLogger(__name__)

__all__ = [
    "JOURNAL_DIR_KEY",
    "RestartGuard",
    "RestartWithoutJournalError",
    "algorithm_journal_path",
    "check_journal_dir",
    "check_restart",
    "journal_has_releases",
    "same_node_strategy",
    "trial_name",
    "tune_earlier_iterations",
]

#: The config key naming the journal folder (None: ``<trial folder>/privacy_journal``).
JOURNAL_DIR_KEY = "privacy_journal_dir"
#: ``privacy_journal_dir`` values that would switch the journal off, which is not allowed.
_JOURNAL_OFF_VALUES = ("", "off", "none", "false", "no", "0", "disabled")


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


def trial_name(algorithm: Any) -> str:
    """The trial's folder name under Tune (stable across ``--resume``), else its log folder's."""
    storage = getattr(algorithm, "_storage", None)
    name = getattr(storage, "trial_dir_name", None) if storage is not None else None
    return str(name) if name else pathlib.Path(algorithm.logdir).name


def journal_has_releases(path: str | os.PathLike[str], *, component: str) -> bool:
    """Whether a journal file holds records beyond its header (False when it is missing).

    Read without opening the journal for writing; a corrupt file counts as holding records
    (the component's own open then reports it).
    """
    path = pathlib.Path(path)
    if not path.exists():
        return False
    try:
        return len(read_records(path, component=component)) > 1
    except (OSError, PrivacyJournalError):
        return True


def tune_earlier_iterations(algorithm: Any) -> int:
    """Iterations Tune's saved experiment state records for this trial (0 outside Tune).

    ``--resume`` restores a trial from its latest checkpoint; without one it starts the
    trial over, while Tune's experiment state (``experiment_state-*.json`` in the
    experiment folder, which ``--resume`` reads) still holds the trial's last result. A
    trial whose journal is gone can thus tell that it released before.
    """
    storage = getattr(algorithm, "_storage", None)
    if storage is None or not getattr(storage, "trial_dir_name", None) or not _is_local(storage):
        return 0
    states = sorted(
        pathlib.Path(storage.experiment_fs_path).glob("experiment_state-*.json"),
        key=lambda p: p.stat().st_mtime,
    )
    iterations = 0
    for state in states:
        try:
            trials = json.loads(state.read_text())["trial_data"]
            for trial_json, metadata_json in trials:
                trial = json.loads(trial_json)
                if trial.get("relative_logdir") != storage.trial_dir_name:
                    continue
                last = json.loads(metadata_json).get("last_result") or {}
                iterations = max(iterations, int(last.get("training_iteration") or 0))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # Tune writes these files; a half-written one is no evidence
    return iterations


class RestartWithoutJournalError(JournalNotFoundError):
    """A trial starts over without its journal, although it released before."""


def check_restart(
    algorithm: Any,
    *,
    component: str,
    journal: str | os.PathLike[str],
    journal_had_releases: bool,
    owner_ledger: str | None = None,
) -> None:
    """Refuse to start a fresh ledger in a trial that released before without its journal.

    Call it at the first training step of a run that was not restored from a checkpoint
    (``algorithm.iteration == 0``): a restored run is checked by its journal marker instead
    (``ReplayJournal.after_restore``).

    Args:
        algorithm: The running Algorithm.
        component: The journaled component (for the message).
        journal: The trial's journal file of that component.
        journal_had_releases: Whether that journal held releases when the component
            opened it (they were replayed: the ledger continues).
        owner_ledger: The data owner's ledger file when the component spends from one:
            the releases are then counted there, and the trial goes on (with a warning).

    Raises:
        RestartWithoutJournalError: Naming the evidence and what to do, when the journal is empty
            but Tune's experiment state shows earlier iterations of this trial, unless
            ``RLLIB_PRIVACY_ACCEPT_JOURNAL_LOSS`` names the trial (or is ``*``).

    """
    if journal_had_releases:
        return
    earlier = tune_earlier_iterations(algorithm)
    if earlier <= 0:
        return
    name = trial_name(algorithm)
    if owner_ledger is not None:
        logger.warning(
            "%s: trial %s ran %d iterations before (Tune's experiment state) but its privacy "
            "journal %s holds no release: it composes against the data owner's ledger %s, "
            "which holds every release, and stops when that budget is spent",
            component,
            name,
            earlier,
            journal,
            owner_ledger,
        )
        return
    accepted = os.environ.get(ACCEPT_JOURNAL_LOSS_ENV, "")
    if any(part.strip() in ("*", name) for part in accepted.split(",")):
        logger.warning(
            "%s: trial %s starts a fresh ledger although it ran %d iterations before (%s set)",
            component,
            name,
            earlier,
            ACCEPT_JOURNAL_LOSS_ENV,
        )
        return
    raise RestartWithoutJournalError(
        f"{component}: trial {name} ran {earlier} iterations before (Tune's experiment state "
        f"in {getattr(algorithm._storage, 'experiment_fs_path', '?')}) and is starting over "
        f"without a checkpoint, but its privacy journal {str(journal)!r} holds no release: "
        "a fresh ledger would spend the budget a second time. Put the journal file back, "
        "or start a new experiment (a new name or storage path) knowing that the earlier "
        f"releases are not counted, or set {ACCEPT_JOURNAL_LOSS_ENV}={name} to continue "
        "without them"
    )


class RestartGuard:
    """Runs ``check_restart`` once, at the first training step of a run not restored.

    An algorithm builds it in ``setup`` (after its component opened the journal), calls
    ``restored()`` from ``set_state`` and ``check(self)`` at the top of ``training_step``.
    Under Tune a restored trial's iteration is the checkpoint's, so the check runs only for
    a run that starts from iteration 0 without a checkpoint.

    Args:
        component: The journaled component (for messages).
        journal: Its journal file in this trial.
        journal_had_releases: Whether that journal held releases when it was opened.
        owner_ledger: The data owner's ledger file when the component spends from one.

    """

    def __init__(
        self,
        *,
        component: str,
        journal: str | os.PathLike[str],
        journal_had_releases: bool,
        owner_ledger: str | None = None,
    ) -> None:
        self._component = component
        self._journal = journal
        self._had_releases = journal_had_releases
        self._owner_ledger = owner_ledger
        self._done = False

    @classmethod
    def before_open(
        cls,
        journal: str | os.PathLike[str],
        *,
        component: str,
        owner_ledger: str | None = None,
    ) -> RestartGuard:
        """The guard of a journal the component has not opened yet (looked at now)."""
        return cls(
            component=component,
            journal=journal,
            journal_had_releases=journal_has_releases(journal, component=component),
            owner_ledger=owner_ledger,
        )

    def restored(self) -> None:
        """A checkpoint was restored: its journal marker was checked instead."""
        self._done = True

    def check(self, algorithm: Any) -> None:
        """``check_restart`` at the first training step of a fresh (not restored) run.

        Raises:
            RestartWithoutJournalError: See ``check_restart``.

        """
        if self._done:
            return
        self._done = True
        if algorithm.iteration == 0:
            # A trial started over without a checkpoint must not open a fresh ledger if it
            # released before (docs/privacy-journal.md#what-resume-does).
            check_restart(
                algorithm,
                component=self._component,
                journal=self._journal,
                journal_had_releases=self._had_releases,
                owner_ledger=self._owner_ledger,
            )
