"""An experiment file through five stages, each visited once per experiment.

[parse][rllib_privacy.experiments.parse] reads the file and checks each experiment's
shape, [translate][rllib_privacy.experiments.translate] renames old keys and merges the
config's pieces, [resolve][rllib_privacy.experiments.resolve] makes the config concrete
(env, API stack, storage path), [validate][rllib_privacy.experiments.validate] builds
every grid variant with the algorithm's config class, and
[finalize][rllib_privacy.experiments.finalize] freezes the result. The order is the body
of ``_run_stages``; this module runs the stages and puts the file and experiment name in
front of every error.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError
from rllib_privacy.experiments import finalize, parse, resolve, translate, validate
from rllib_privacy.experiments.registry import ensure_package_registered, quiet_rllib
from rllib_privacy.experiments.spec import Experiment, ExperimentFile, Overrides

__all__ = ["load_experiments", "normalize_experiments"]


def load_experiments(
    path: str | os.PathLike[str],
    *,
    overrides: Overrides | None = None,
    has_gpus: bool | None = None,
) -> ExperimentFile:
    """Read, validate and normalize an experiment file.

    Args:
        path: The YAML (``.yaml``/``.yml``) or JSON (``.json``) experiment file.
        overrides: Command-line overrides applied to every experiment.
        has_gpus: Whether the cluster will have GPUs; None (unknown) validates the
            configs both with and without ``gpu_config``.

    Returns:
        The experiments and the notices produced while normalizing them.

    Raises:
        ExperimentFileError: The file or one of its experiments is invalid.

    """
    path = os.fspath(path)
    raw = parse.load_experiment_file(path)
    return normalize_experiments(raw, path=path, overrides=overrides, has_gpus=has_gpus)


def normalize_experiments(
    raw: Mapping[str, Any],
    *,
    path: str,
    overrides: Overrides | None = None,
    has_gpus: bool | None = None,
) -> ExperimentFile:
    """Validate and normalize parsed experiments, one after the other.

    Args:
        raw: Experiment names mapped to experiment mappings, as parsed from the file.
        path: The file name to put at the start of every message.
        overrides: Command-line overrides applied to every experiment.
        has_gpus: Whether the cluster will have GPUs (None: unknown, validate both).

    Returns:
        The validated experiments and the notices.

    Raises:
        ExperimentFileError: An experiment (or an override) is invalid.

    """
    notices: list[str] = []
    with _named(path):
        overrides = translate.translate_overrides(overrides or Overrides(), notices)
        validate.check_overrides(overrides)
    ensure_package_registered()
    experiments = []
    with quiet_rllib():
        for name, spec in raw.items():
            with _named(path, str(name)):
                experiment, experiment_notices = _run_stages(str(name), spec, overrides, has_gpus)
            experiments.append(experiment)
            notices.extend(f"{path}: experiment {str(name)!r}: {n}" for n in experiment_notices)
    return ExperimentFile(path=path, experiments=experiments, notices=notices)


def _run_stages(
    name: str, spec: Any, overrides: Overrides, has_gpus: bool | None
) -> tuple[Experiment, list[str]]:
    """One experiment through parse, translate, resolve, validate and finalize.

    Returns:
        The experiment and its notices.

    """
    draft = parse.parse_experiment(name, spec)
    translate.translate_experiment(draft, overrides)
    resolve.resolve_experiment(draft, overrides)
    validate.validate_experiment(draft, overrides, has_gpus)
    return finalize.finalize_experiment(draft), draft.notices


@contextlib.contextmanager
def _named(path: str, experiment: str | None = None) -> Iterator[None]:
    """Re-raise a PrivacyConfigError as an ExperimentFileError naming file and experiment."""
    try:
        yield
    except ExperimentFileError:
        raise
    except PrivacyConfigError as e:
        raise ExperimentFileError(path, str(e), experiment=experiment) from None
