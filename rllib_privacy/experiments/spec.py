"""What a loaded experiment is, and the config-dict helpers every stage shares.

[`ExperimentDraft`][rllib_privacy.experiments.spec.ExperimentDraft] is one experiment on
its way through the stages; [`Experiment`][rllib_privacy.experiments.spec.Experiment] is
what comes out. Imports nothing of the other ``experiments`` modules: each of them may
use these.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm import Algorithm

__all__ = [
    "Experiment",
    "ExperimentDraft",
    "ExperimentFile",
    "Overrides",
    "deep_merge",
    "format_variant",
    "is_grid_search",
    "literal_values",
]


@dataclasses.dataclass(frozen=True)
class Overrides:
    """Command-line settings that replace or extend every experiment's own.

    Attributes:
        stop: Replaces each experiment's ``stop`` mapping when not None.
        config: Deep-merged into each experiment's ``config`` (after ``gpu_config``).
        storage_path: Replaces each experiment's ``storage_path`` when not None.
        num_samples: Replaces each experiment's ``num_samples`` when not None.

    """

    stop: Mapping[str, Any] | None = None
    config: Mapping[str, Any] | None = None
    storage_path: str | None = None
    num_samples: int | None = None


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One validated, normalized experiment, ready for ``tune.Tuner``.

    Attributes:
        name: The experiment name (Tune's ``RunConfig.name`` and results sub-directory).
        run: The Tune-registered algorithm name.
        param_space: The config dict for a cluster without GPUs.
        gpu_param_space: The config dict with ``gpu_config`` merged, or None when the
            experiment has no ``gpu_config``.
        stop: Stop criteria with new API stack keys.
        checkpoint_config: Keyword arguments of ``tune.CheckpointConfig``.
        num_samples: Tune's ``num_samples``.
        storage_path: Absolute path (or URI) under which Tune writes results.
        num_variants: Number of grid-search variants of ``param_space``.
        class_path_envs: Env values that are ``module.Class`` paths; they must be
            registered with Tune before running (see ``register_class_path_envs``).

    """

    name: str
    run: str
    param_space: dict[str, Any]
    gpu_param_space: dict[str, Any] | None
    stop: dict[str, float]
    checkpoint_config: dict[str, Any]
    num_samples: int
    storage_path: str
    num_variants: int
    class_path_envs: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        """The experiment's results directory, ``storage_path/name``."""
        return os.path.join(self.storage_path, self.name)

    def config_for(self, has_gpus: bool) -> dict[str, Any]:
        """Return the param space to run with, given whether the cluster has GPUs."""
        if has_gpus and self.gpu_param_space is not None:
            return self.gpu_param_space
        return self.param_space

    def to_spec(self, has_gpus: bool) -> dict[str, Any]:
        """Return the experiment in the file's shape, as it would run (for printing)."""
        return {
            "run": self.run,
            "stop": dict(self.stop),
            "num_samples": self.num_samples,
            "storage_path": self.storage_path,
            "checkpoint_config": dict(self.checkpoint_config),
            "config": self.config_for(has_gpus),
        }


@dataclasses.dataclass
class ExperimentDraft:
    """One experiment on its way through the stages; each stage fills in its fields.

    Attributes:
        name: The experiment name.
        spec: The experiment as written in the file (parse checked its shape).
        algo_cls: The Algorithm class its ``run`` names (parse).
        notices: One-line notices so far (legacy keys translated, suspicious settings).
        config: The config to run without GPUs: ``config`` with the top-level ``env``
            and the ``--config`` override merged (translate), then normalized (resolve).
        gpu_config: The same with ``gpu_config`` merged before the override, or None
            when the experiment has no ``gpu_config``.
        stop: Stop criteria with new API stack keys (translate).
        checkpoint_config: ``checkpoint_config`` as written, its score attribute
            translated (translate); with defaults filled in and checked (validate).
        storage_path: Absolute path or URI for the results (resolve).
        class_path_envs: Env values that are ``module.Class`` paths (resolve).
        num_variants: Number of grid-search variants of ``config`` (validate).
        num_samples: Tune's ``num_samples`` (validate).

    """

    name: str
    spec: Mapping[str, Any]
    algo_cls: type[Algorithm]
    notices: list[str] = dataclasses.field(default_factory=list)
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    gpu_config: dict[str, Any] | None = None
    stop: dict[str, float] = dataclasses.field(default_factory=dict)
    checkpoint_config: Any = None
    storage_path: str = ""
    class_path_envs: tuple[str, ...] = ()
    num_variants: int = 0
    num_samples: int = 1


@dataclasses.dataclass(frozen=True)
class ExperimentFile:
    """The validated content of an experiment file.

    Attributes:
        path: The file as the user named it.
        experiments: The experiments, in file order.
        notices: One-line notices (legacy keys translated, suspicious settings).

    """

    path: str
    experiments: list[Experiment]
    notices: list[str]


def is_grid_search(value: Any) -> bool:
    """Whether ``value`` is a Tune ``{grid_search: [...]}`` search space."""
    return isinstance(value, Mapping) and len(value) == 1 and "grid_search" in value


def literal_values(value: Any) -> list[Any]:
    """The values a config entry takes: a grid search's list, else ``[value]``."""
    if is_grid_search(value) and isinstance(value["grid_search"], list):
        return list(value["grid_search"])
    return [value]


def format_variant(resolved: Mapping[tuple, Any]) -> str:
    """``"a.b=1, c='x'"`` for a variant's resolved grid values (Tune's path tuples)."""
    return ", ".join(f"{'.'.join(map(str, path))}={value!r}" for path, value in resolved.items())


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated recursively with ``override`` (inputs are not modified).

    Nested mappings are merged key by key; anything else in ``override``, including a
    ``{grid_search: [...]}`` search space, replaces the value in ``base``.
    """
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        old = out.get(key)
        if (
            isinstance(value, Mapping)
            and isinstance(old, Mapping)
            and not is_grid_search(value)
            and not is_grid_search(old)
        ):
            out[key] = deep_merge(old, value)
        else:
            out[key] = copy.deepcopy(value)
    return out
