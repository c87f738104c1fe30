"""Turn an experiment file into validated, normalized :class:`Experiment` objects.

The steps, each in its own module: :mod:`~rllib_privacy.experiments.parsing` reads the
file, :mod:`~rllib_privacy.experiments.legacy` and :mod:`~rllib_privacy.experiments.stop`
translate old keys, :mod:`~rllib_privacy.experiments.resolution` finds the algorithm and
the env, :mod:`~rllib_privacy.experiments.validation` checks the rest. This module
strings them together per experiment and puts the file and experiment name in front of
every error.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from rllib_privacy._validation import describe
from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError
from rllib_privacy.experiments import validation
from rllib_privacy.experiments.legacy import translate_config_keys
from rllib_privacy.experiments.parsing import load_experiment_file
from rllib_privacy.experiments.resolution import (
    ensure_package_registered,
    resolve_algorithm,
    resolve_env_values,
)
from rllib_privacy.experiments.spec import Experiment, ExperimentFile, Overrides, deep_merge
from rllib_privacy.experiments.stop import translate_stop

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
    raw = load_experiment_file(path)
    return normalize_experiments(raw, path=path, overrides=overrides, has_gpus=has_gpus)


def normalize_experiments(
    raw: Mapping[str, Any],
    *,
    path: str,
    overrides: Overrides | None = None,
    has_gpus: bool | None = None,
) -> ExperimentFile:
    """Validate and normalize parsed experiments.

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
    overrides = overrides or Overrides()
    notices: list[str] = []
    overrides = _normalize_overrides(overrides, path, notices)
    ensure_package_registered()
    experiments = []
    with validation.quiet_rllib():
        for name, spec in raw.items():
            exp_notices: list[str] = []
            try:
                experiments.append(
                    _normalize_experiment(str(name), spec, overrides, has_gpus, exp_notices)
                )
            except ExperimentFileError:
                raise
            except PrivacyConfigError as e:
                raise ExperimentFileError(path, str(e), experiment=str(name)) from None
            notices.extend(f"{path}: experiment {str(name)!r}: {n}" for n in exp_notices)
    return ExperimentFile(path=path, experiments=experiments, notices=notices)


def _normalize_overrides(overrides: Overrides, path: str, notices: list[str]) -> Overrides:
    stop, config = overrides.stop, overrides.config
    try:
        if stop is not None:
            option_notices: list[str] = []
            stop = translate_stop(stop, option_notices, typo_is_error=False)
            notices.extend(f"--stop: {n}" for n in option_notices)
        if config is not None:
            option_notices = []
            config = translate_config_keys(config, option_notices)
            notices.extend(f"--config: {n}" for n in option_notices)
        if overrides.num_samples is not None:
            validation.check_num_samples(overrides.num_samples)
    except PrivacyConfigError as e:
        raise ExperimentFileError(path, str(e)) from None
    return dataclasses.replace(overrides, stop=stop, config=config)


def _normalize_experiment(
    name: str,
    spec: Any,
    overrides: Overrides,
    has_gpus: bool | None,
    notices: list[str],
) -> Experiment:
    if not isinstance(spec, Mapping):
        raise PrivacyConfigError(
            f"must be a mapping with at least a 'run' key, got {describe(spec)}"
        )
    if "/" in name or name in ("", ".", ".."):
        raise PrivacyConfigError("the name must be usable as a directory name")
    validation.check_experiment_keys(spec)
    if "run" not in spec:
        raise PrivacyConfigError("missing required key 'run' (an algorithm name, e.g. PPO)")
    algo_cls = resolve_algorithm(spec["run"])
    param_spaces = _param_spaces(spec, algo_cls, overrides.config or {}, has_gpus, notices)
    result_keys = getattr(algo_cls, "TOP_LEVEL_RESULT_KEYS", ())
    if overrides.stop is not None:
        # Checked again now that the algorithm's own result keys are known (no notices:
        # the override's were given once for the whole file).
        stop = translate_stop(overrides.stop, [], result_keys)
    else:
        stop = translate_stop(spec.get("stop", {}), notices, result_keys)
    checkpoint_config = validation.checkpoint_config(spec.get("checkpoint_config"), notices)
    if overrides.num_samples is not None:
        num_samples = overrides.num_samples
    else:
        num_samples = validation.check_num_samples(spec.get("num_samples", 1))
    return Experiment(
        name=name,
        run=spec["run"],
        **param_spaces,
        stop=stop,
        checkpoint_config=checkpoint_config,
        num_samples=num_samples,
        storage_path=validation.storage_path(overrides.storage_path or spec.get("storage_path")),
    )


def _param_spaces(
    spec: Mapping[str, Any],
    algo_cls: type,
    override: Mapping[str, Any],
    has_gpus: bool | None,
    notices: list[str],
) -> dict[str, Any]:
    """Build and validate the config without and (if any) with ``gpu_config`` merged.

    Returns:
        The ``param_space``, ``gpu_param_space``, ``num_variants`` and
        ``class_path_envs`` fields of :class:`Experiment`.

    """
    # The algorithm's own renamed keys (docs/configuration.md), also in --config overrides.
    legacy = getattr(type(algo_cls.get_default_config()), "legacy_config_keys", None)
    names = legacy() if callable(legacy) else {}
    renamed = dict(names) if isinstance(names, Mapping) else {}
    config = translate_config_keys(_mapping(spec, "config"), notices, renamed=renamed)
    gpu_config = translate_config_keys(
        _mapping(spec, "gpu_config"), notices, "gpu_config", renamed=renamed
    )
    override = translate_config_keys(override, notices, "--config", renamed=renamed)
    config = _with_top_level_env(config, spec.get("env"))
    has_gpu_config = "gpu_config" in spec
    param_space, num_variants, class_envs = _finalize_config(
        deep_merge(config, override),
        algo_cls,
        validate=has_gpus is not True or not has_gpu_config,
    )
    gpu_param_space = None
    if has_gpu_config:
        gpu_param_space, _, gpu_class_envs = _finalize_config(
            deep_merge(deep_merge(config, gpu_config), override),
            algo_cls,
            validate=has_gpus is not False,
            label="with gpu_config merged: ",
        )
        class_envs |= gpu_class_envs
    return {
        "param_space": param_space,
        "gpu_param_space": gpu_param_space,
        "num_variants": num_variants,
        "class_path_envs": tuple(sorted(class_envs)),
    }


def _mapping(spec: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = spec.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PrivacyConfigError(f"{key!r} must be a mapping, got {describe(value)}")
    return dict(value)


def _with_top_level_env(config: dict[str, Any], env: Any) -> dict[str, Any]:
    if env is None:
        return config
    if "env" in config and config["env"] != env:
        raise PrivacyConfigError(
            f"'env' ({env!r}) and 'config.env' ({config['env']!r}) disagree; set only one"
        )
    return {"env": env, **config}


def _finalize_config(
    config: dict[str, Any], algo_cls: type, *, validate: bool, label: str = ""
) -> tuple[dict[str, Any], int, set[str]]:
    """Force the new API stack and torch, resolve the env, validate all variants.

    Returns:
        The normalized config, its number of grid variants, the class-path envs in it.

    """
    config = dict(config)
    default = algo_cls.get_default_config()
    normalize = getattr(type(default), "normalize_config_dict", None)
    if callable(normalize):
        config = normalize(config)
    validation.force_new_api_stack(config, label)
    validation.force_torch(config, label)
    class_envs = resolve_env_values(config, default.env, label)
    validation.normalize_env_config(config)
    num_variants = validation.count_variants(config, label)
    if validate:
        validation.check_config_keys(config, default, label)
        validation.validate_variants(config, algo_cls, num_variants, label)
    return config, num_variants, class_envs
