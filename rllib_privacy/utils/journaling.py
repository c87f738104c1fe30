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

import logging
import os
import pathlib
from typing import Any

from rllib_privacy.accounting.journal import default_journal_dir, journal_file
from rllib_privacy.errors import PrivacyConfigError

logger = logging.getLogger(__name__)

__all__ = [
    "JOURNAL_DIR_KEY",
    "algorithm_journal_path",
    "check_journal_dir",
    "same_node_strategy",
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
