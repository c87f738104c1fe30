"""Checks ``rllib train`` makes before Ray starts, beyond validating each experiment.

* Teacher paths: a relative ``teacher_checkpoint`` (KickstartPPO) or
  ``pate_teacher_checkpoints`` (PATEPPO; formerly ``teacher_checkpoints``) names a folder
  in the experiment's storage path, where ``rllib train`` wrote the teacher's experiment
  (``--storage-path``, else the experiment's ``storage_path``, else ``~/ray_results``).
  ``./x`` and ``../x`` stay relative to the current folder; absolute and ``~`` paths are
  used as written. See ``docs/cli.md``.
* PATE teachers must exist before a PATEPPO experiment starts.
* A scheduler's ``metric`` must be a result key the experiments report, and its ``mode``
  ``min`` or ``max``.
* ``--resume`` must find something saved.
* Every results folder (``--storage-path`` or ``storage_path``) must be writable.

Every problem is a [`PrivacyConfigError`][rllib_privacy.errors.PrivacyConfigError] naming
the key, the value and what is allowed.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any

from rllib_privacy.errors import PrivacyConfigError

#: Config keys holding teacher paths (KickstartPPO's; PATEPPO's, and its older name).
TEACHER_PATH_KEYS = ("teacher_checkpoint", "pate_teacher_checkpoints", "teacher_checkpoints")

#: PATEPPO's teacher keys: the teachers must exist when the run starts.
PATE_TEACHER_KEYS = ("pate_teacher_checkpoints", "teacher_checkpoints")

#: Where Tune writes results when neither the file nor the command line says.
DEFAULT_STORAGE_PATH = "~/ray_results"

#: Nested result keys every RLlib algorithm on the new API stack reports (besides the
#: top-level ones of ``rllib_privacy.experiments.TOP_LEVEL_RESULT_KEYS``).
COMMON_RESULT_KEYS = (
    "env_runners/episode_return_mean",
    "env_runners/episode_return_max",
    "env_runners/episode_return_min",
    "env_runners/episode_len_mean",
    "env_runners/num_episodes",
    "env_runners/num_env_steps_sampled_lifetime",
    "evaluation/env_runners/episode_return_mean",
    "evaluation/env_runners/episode_len_mean",
)

SCHEDULER_MODES = ("min", "max")


def storage_root(spec: Mapping[str, Any], storage_override: str | None) -> str:
    """The folder an experiment's results go to (a URI is returned unchanged)."""
    value = storage_override or spec.get("storage_path") or DEFAULT_STORAGE_PATH
    if not isinstance(value, str) or "://" in value:
        return str(value)
    return os.path.abspath(os.path.expanduser(value))


def check_storage_paths(raw: Mapping[str, Any], storage_override: str | None) -> None:
    """Every experiment's results folder must be a folder this process can write to.

    Tune would fail later with a long traceback (``--storage-path /proc/x``, or a path
    under a regular file). The folder is created now, as Tune would; URIs are left to Tune.

    Args:
        raw: The parsed experiment file (experiment name -> experiment).
        storage_override: ``--storage-path``, or None.

    Raises:
        PrivacyConfigError: Naming the option or key, the folder and the reason.

    """
    import tempfile

    for name, spec in raw.items():
        if not isinstance(spec, Mapping):
            continue  # Reported by the experiment validation.
        root = storage_root(spec, storage_override)
        if "://" in root:
            continue
        where = (
            f"--storage-path {storage_override}"
            if storage_override
            else f"experiment {str(name)!r}: storage_path {root}"
        )
        try:
            os.makedirs(root, exist_ok=True)
            with tempfile.TemporaryFile(dir=root):
                pass
        except OSError as e:
            reason = e.strerror or type(e).__name__
            if isinstance(e, NotADirectoryError) or os.path.isfile(root):
                reason = f"{_file_above(root)} is a regular file, not a folder"
            raise PrivacyConfigError(
                f"{where}: cannot write results to {root}: {reason}; give a folder you can write to"
            ) from None


def _file_above(path: str) -> str:
    """The first part of ``path`` that is a regular file (``path`` itself if none is)."""
    here = path
    while here and not os.path.isfile(here):
        parent = os.path.dirname(here)
        if parent == here:
            return path
        here = parent
    return here or path


def resolve_teacher_path(value: Any, storage: str) -> Any:
    """Apply the storage-path rule of the module docstring to one teacher path value.

    Non-string values (and grid searches) are handled by `resolve_teacher_paths`;
    anything else is returned unchanged for the config class to reject.
    """
    if not isinstance(value, str) or not value or "://" in storage:
        return value
    if os.path.isabs(value) or value.startswith("~"):
        return value
    if value == "." or value == ".." or value.startswith(("./", "../", ".\\", "..\\")):
        return os.path.abspath(value)
    return os.path.join(storage, value)


def _resolve_value(value: Any, storage: str) -> Any:
    if isinstance(value, Mapping) and isinstance(value.get("grid_search"), list):
        return {**value, "grid_search": [_resolve_value(v, storage) for v in value["grid_search"]]}
    if isinstance(value, list):
        return [resolve_teacher_path(v, storage) for v in value]
    return resolve_teacher_path(value, storage)


def resolve_teacher_paths(
    raw: Mapping[str, Any],
    *,
    storage_override: str | None,
    override_config: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Rewrite relative teacher paths of every experiment to absolute ones.

    Args:
        raw: The parsed experiment file (experiment name -> experiment).
        storage_override: ``--storage-path``, or None.
        override_config: ``--config``, or None. Its teacher paths are resolved against
            ``--storage-path`` when given, else against the storage path all experiments
            share (the default one when they differ).

    Returns:
        Copies of ``raw`` and ``override_config`` with absolute teacher paths.

    """
    out = copy.deepcopy(dict(raw))
    roots = set()
    for spec in out.values():
        if not isinstance(spec, dict):
            continue  # Reported by the experiment validation.
        root = storage_root(spec, storage_override)
        roots.add(root)
        config = spec.get("config")
        if isinstance(config, dict):
            for key in TEACHER_PATH_KEYS:
                if key in config:
                    config[key] = _resolve_value(config[key], root)
    if override_config is None:
        return out, None
    shared = roots.pop() if len(roots) == 1 else storage_root({}, storage_override)
    override = copy.deepcopy(dict(override_config))
    for key in TEACHER_PATH_KEYS:
        if key in override:
            override[key] = _resolve_value(override[key], shared)
    return out, override


def _literal_values(value: Any) -> list[Any]:
    if isinstance(value, Mapping) and isinstance(value.get("grid_search"), list):
        return list(value["grid_search"])
    return [value]


def check_pate_teachers(experiments: Sequence[Any]) -> None:
    """Every PATEPPO-style experiment's ``teacher_checkpoints`` must exist now.

    The config class leaves this to the algorithm's start so that a file can be validated
    before its teachers are trained; ``rllib train`` is about to start it, and a missing
    teacher would otherwise surface inside a Ray worker's traceback.

    Args:
        experiments: Validated experiments (``name`` and ``config_for``).

    Raises:
        PrivacyConfigError: Naming the experiment, the key and what was not found.

    """
    for exp in experiments:
        config = exp.config_for(False)
        for key in PATE_TEACHER_KEYS:
            if config.get(key) is None:
                continue
            from rllib_privacy.pate.ensemble import resolve_teacher_checkpoints

            for value in _literal_values(config[key]):
                try:
                    resolve_teacher_checkpoints(value)
                except PrivacyConfigError as e:
                    raise PrivacyConfigError(f"experiment {exp.name!r}: {e}") from None


def known_result_keys(algorithm_classes: Sequence[type]) -> tuple[str, ...]:
    """Result keys a scheduler or stop criterion may name for these algorithms."""
    from rllib_privacy.experiments import TOP_LEVEL_RESULT_KEYS
    from rllib_privacy.utils import metrics

    ours = [
        value
        for name, value in vars(metrics).items()
        if name.isupper() and isinstance(value, str) and "/" in value
    ]
    extra = [k for cls in algorithm_classes for k in getattr(cls, "TOP_LEVEL_RESULT_KEYS", ())]
    return tuple(dict.fromkeys([*TOP_LEVEL_RESULT_KEYS, *COMMON_RESULT_KEYS, *extra, *ours]))


def check_scheduler_metric(
    kwargs: Mapping[str, Any], algorithm_classes: Sequence[type]
) -> list[str]:
    """Check ``--scheduler-config``'s ``metric`` and ``mode`` before Ray starts.

    A metric Tune cannot find in a trial's first result stops the run with a raw
    traceback. Known keys: RLlib's top-level and common nested result keys, the
    algorithms' own top-level keys, and this package's metric keys. An unknown key close
    to a known one is an error; an unknown nested key that resembles none is allowed with
    a notice (algorithms and callbacks may report keys of their own).

    Args:
        kwargs: The scheduler's keyword arguments.
        algorithm_classes: The Algorithm classes of the experiments it will schedule.

    Returns:
        Notices to print.

    Raises:
        PrivacyConfigError: A misspelled metric or a mode other than min/max.

    """
    from rllib_privacy.experiments import did_you_mean

    notices: list[str] = []
    mode = kwargs.get("mode")
    if mode is not None and mode not in SCHEDULER_MODES:
        raise PrivacyConfigError(
            f"--scheduler-config: 'mode' must be 'min' or 'max', got {mode!r}"
            f"{did_you_mean(str(mode), SCHEDULER_MODES)}"
        )
    metric = kwargs.get("metric")
    if metric is None:
        return notices
    if not isinstance(metric, str) or not metric:
        raise PrivacyConfigError(
            f"--scheduler-config: 'metric' must be a result key, got {metric!r}"
        )
    known = known_result_keys(algorithm_classes)
    if metric in known:
        return notices
    hint = did_you_mean(metric, known)
    if hint or "/" not in metric:
        extra = [k for cls in algorithm_classes for k in getattr(cls, "TOP_LEVEL_RESULT_KEYS", ())]
        shown = ", ".join(dict.fromkeys([*COMMON_RESULT_KEYS, *extra, "training_iteration"]))
        raise PrivacyConfigError(
            f"--scheduler-config: 'metric' {metric!r} is not a result key of these "
            f"experiments{hint}; known keys include: {shown}"
        )
    notices.append(
        f"--scheduler-config: metric {metric!r} is not a result key known before the run; "
        "Tune stops with an error if the first result lacks it"
    )
    return notices


def check_resume(experiments: Sequence[Any], can_restore: Any) -> list[str]:
    """``--resume`` must find a saved experiment state for at least one experiment.

    Args:
        experiments: Validated experiments (``name`` and ``path``).
        can_restore: ``tune.Tuner.can_restore`` (passed in: it imports Ray).

    Returns:
        Notices for experiments with nothing saved that will start fresh (a file's later
        experiments never started when an earlier one was interrupted).

    Raises:
        PrivacyConfigError: Nothing is saved for any experiment; names the folders.

    """
    missing = [exp for exp in experiments if not can_restore(exp.path)]
    if len(missing) == len(experiments):
        folders = ", ".join(str(exp.path) for exp in missing)
        raise PrivacyConfigError(
            f"--resume: nothing saved to resume in {folders} (no experiment state of an "
            "earlier `rllib train` there); run without --resume to start, or give the "
            "--storage-path of the earlier run"
        )
    return [
        f"--resume: nothing saved for experiment {exp.name!r} in {exp.path}; starting it"
        for exp in missing
    ]
