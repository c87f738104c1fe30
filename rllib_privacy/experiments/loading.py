"""Load, validate and normalize classic RLlib experiment files (YAML or JSON).

An experiment file maps experiment names to experiments in the shape of RLlib's old
``tuned_examples``::

    cartpole-ppo:
      run: PPO                      # algorithm name registered with Tune
      env: CartPole-v1              # or config.env
      stop: {training_iteration: 10}
      checkpoint_config: {checkpoint_frequency: 5}
      num_samples: 1
      storage_path: ~/ray_results
      config:                       # AlgorithmConfig.update_from_dict() keys
        lr: {grid_search: [0.001, 0.0003]}
      gpu_config:                   # merged into config only when the cluster has GPUs
        num_gpus_per_learner: 0.25

Everything here runs before Ray starts and never calls ``ray.init``: problems surface
as :class:`~rllib_privacy.errors.ExperimentFileError` whose message starts with the file
and the experiment name. Tune's own variant generator expands ``grid_search`` so that
every variant's config is built and validated by the algorithm's own config class.

Algorithm config classes can take part in validation through three optional hooks:

* ``normalize_config_dict(d) -> d`` (a classmethod or staticmethod on the config class):
  called once with the experiment's config dict (before grid variants are expanded) to
  rewrite values that must be fixed before Ray starts, e.g. relative paths made absolute
  because Tune runs every trial in its own working directory.

* ``validate_config_dict(d)`` (a classmethod or staticmethod on the config class): called
  with every resolved variant's config dict; raises
  :class:`~rllib_privacy.errors.PrivacyConfigError` naming the key that is wrong.
* ``config_dict_keys`` (a class attribute mapping a config key whose value is a nested
  dict, e.g. ``"learner_config_dict"``, to the names allowed inside it): nested dicts are
  free-form unless declared here.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import difflib
import functools
import importlib
import inspect
import itertools
import json
import logging
import math
import os
import re
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

import yaml

from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError

logger = logging.getLogger(__name__)

#: Keys an experiment may have.
EXPERIMENT_KEYS = (
    "run",
    "env",
    "stop",
    "config",
    "checkpoint_config",
    "num_samples",
    "storage_path",
    "gpu_config",
)

#: Experiment keys of older Tune/RLlib versions and what to write instead.
LEGACY_EXPERIMENT_KEY_HINTS = {
    "local_dir": "use 'storage_path'",
    "checkpoint_freq": "use 'checkpoint_config: {checkpoint_frequency: N}'",
    "checkpoint_at_end": "use 'checkpoint_config: {checkpoint_at_end: true}'",
    "keep_checkpoints_num": "use 'checkpoint_config: {num_to_keep: N}'",
    "checkpoint_score_attr": "use 'checkpoint_config: {checkpoint_score_attribute: KEY}'",
    "resources_per_trial": (
        "RLlib derives trial resources from config (num_env_runners, num_learners, "
        "num_gpus_per_learner, ...)"
    ),
}

#: Old API stack result keys and their new API stack names (stop criteria, metrics).
LEGACY_METRIC_KEYS = {
    "episode_reward_mean": "env_runners/episode_return_mean",
    "episode_reward_max": "env_runners/episode_return_max",
    "episode_reward_min": "env_runners/episode_return_min",
    "episode_len_mean": "env_runners/episode_len_mean",
    "timesteps_total": "num_env_steps_sampled_lifetime",
    "episodes_total": "env_runners/num_episodes_lifetime",
    "evaluation/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
    "sampler_results/episode_reward_mean": "env_runners/episode_return_mean",
    "env_runners/episode_reward_mean": "env_runners/episode_return_mean",
}

#: Top-level (unnested) numeric result keys of RLlib 2.60 algorithms under Tune.
TOP_LEVEL_RESULT_KEYS = (
    "training_iteration",
    "time_total_s",
    "time_this_iter_s",
    "time_since_restore",
    "iterations_since_restore",
    "num_env_steps_sampled_lifetime",
    "num_training_step_calls_per_iteration",
    "timestamp",
)

#: Old API stack config keys and their new names (translated with a notice).
LEGACY_CONFIG_KEYS = {"num_workers": "num_env_runners"}

#: Public config names whose attribute has no setter; translated silently.
CONFIG_KEY_ALIASES = {"model_config": "_model_config"}

#: Config keys that switch the API stack; they may only be true.
API_STACK_KEYS = (
    "enable_rl_module_and_learner",
    "enable_env_runner_and_connector_v2",
    "_enable_new_api_stack",
)

#: Keys `AlgorithmConfig.update_from_dict` handles specially (see its source and
#: `AlgorithmConfig._translate_special_keys` in ray/rllib/algorithms/algorithm_config.py),
#: in addition to the keys of `to_dict()` and the attributes they are translated to.
UPDATE_FROM_DICT_SPECIAL_KEYS = frozenset(
    {
        "callbacks",
        "callbacks_class",
        "create_env_on_driver",
        "create_env_on_local_worker",
        "custom_eval_function",
        "custom_evaluation_function",
        "framework",
        "framework_str",
        "input",
        "input_",
        "lambda",
        "lambda_",
        "num_cpus_for_driver",
        "num_cpus_for_main_process",
        "num_workers",
        "multiagent",
        "model_config",
        "_enable_new_api_stack",
    }
)

#: Checkpoint settings used where an experiment's checkpoint_config does not say: a final
#: checkpoint, and one every 10 iterations (the latest 5 kept) so that --resume continues
#: trials from their latest checkpoint instead of restarting them.
DEFAULT_CHECKPOINT_CONFIG = {
    "checkpoint_at_end": True,
    "checkpoint_frequency": 10,
    "num_to_keep": 5,
}

#: Grid variants validated per experiment; larger grids validate the first ones only.
MAX_VALIDATED_VARIANTS = 64

#: Where Tune writes results when neither the file nor the command line says.
DEFAULT_STORAGE_PATH = "~/ray_results"

_RLLIB_SUPPRESS_HINT = (
    "\nTo suppress all validation errors, set "
    "`config.experimental(_validate_config=False)` at your own risk."
)


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
            registered with Tune before running (see :func:`register_class_path_envs`).

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


# --------------------------------------------------------------------------------------
# Public entry points.
# --------------------------------------------------------------------------------------


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


def load_experiment_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse an experiment file and check that its top level is a mapping.

    Args:
        path: The file; ``.json`` files are parsed as JSON, all others as YAML.

    Returns:
        The mapping of experiment names to (unvalidated) experiments.

    Raises:
        ExperimentFileError: The file is missing, unreadable, malformed (the message
            gives line and column) or its top level is not a non-empty mapping.

    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ExperimentFileError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ExperimentFileError(path, f"cannot read file: {e}") from None
    try:
        data = _parse_text(path, text)
    except PrivacyConfigError as e:
        raise ExperimentFileError(path, str(e)) from None
    if data is None:
        raise ExperimentFileError(path, "file is empty; expected a mapping of experiments")
    if not isinstance(data, dict) or not data:
        raise ExperimentFileError(
            path,
            "the top level must be a non-empty mapping of experiment names to "
            f"experiments, got {_describe(data)}",
        )
    return data


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
    with quiet_rllib():
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


def translate_metric_key(key: str) -> str:
    """Return the new API stack name of an old API stack result key (else ``key``)."""
    return LEGACY_METRIC_KEYS.get(key, key)


def translate_stop(
    stop: Any,
    notices: list[str],
    extra_result_keys: Collection[str] = (),
    *,
    typo_is_error: bool = True,
) -> dict[str, float]:
    """Validate stop criteria and rename old API stack keys.

    Args:
        stop: The ``stop`` mapping (result key to threshold).
        notices: Receives one line per translated or suspicious key.
        extra_result_keys: Top-level result keys the algorithm adds to RLlib's
            (an Algorithm class may list them in ``TOP_LEVEL_RESULT_KEYS``).
        typo_is_error: Raise for an unknown top-level key close to a known one (Tune
            only logs a warning for a stop key its results lack and runs on forever);
            False when the algorithm, and so its result keys, is not known yet.

    Returns:
        The stop criteria with new API stack keys.

    Raises:
        PrivacyConfigError: ``stop`` is not a mapping, a value is not a number, or two
            keys mean the same metric.

    """
    if not isinstance(stop, Mapping):
        raise PrivacyConfigError(
            f"'stop' must be a mapping of result keys to numbers, got {_describe(stop)}"
        )
    out: dict[str, float] = {}
    for key, value in stop.items():
        key = str(key)
        new_key = translate_metric_key(key)
        if new_key != key:
            notices.append(f"stop key {key!r} is an old API stack key; using {new_key!r}")
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise PrivacyConfigError(f"stop value of {key!r} must be a number, got {value!r}")
        if new_key in out:
            raise PrivacyConfigError(f"stop key {new_key!r} is given twice (as {key!r})")
        known = (*TOP_LEVEL_RESULT_KEYS, *extra_result_keys)
        if "/" not in new_key and new_key not in known:
            if typo_is_error and did_you_mean(new_key, known):
                raise PrivacyConfigError(
                    f"stop key {new_key!r} is not a top-level result key"
                    f"{did_you_mean(new_key, known)}; a trial never stops on a key that "
                    "its results lack"
                )
            notices.append(
                f"stop key {new_key!r} is not a top-level result key of RLlib algorithms"
                f"{did_you_mean(new_key, known)}; a trial never stops on a "
                "key that its results lack"
            )
        out[new_key] = value
    return out


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
            and not _is_grid_search(value)
            and not _is_grid_search(old)
        ):
            out[key] = deep_merge(old, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def ensure_package_registered() -> None:
    """Register ``rllib_privacy``'s algorithms and envs with Tune and gymnasium."""
    try:
        importlib.import_module("rllib_privacy").register()
    except ImportError as e:  # The package's __init__ may be incomplete during development.
        logger.debug("import rllib_privacy failed: %s", e)


def registered_algorithms() -> list[str]:
    """Return the sorted names of all algorithms registered with Tune.

    RLlib's own algorithms are registered first. Must be called before ``ray.init``:
    afterwards Tune keeps its registry in the cluster and only RLlib's names are listed.
    """
    from ray.rllib.algorithms.registry import ALGORITHMS
    from ray.tune.registry import TRAINABLE_CLASS, _has_rllib_trainable

    _has_rllib_trainable("PPO")  # Registers all of RLlib's algorithms with Tune.
    names = set(ALGORITHMS) | set(_registry_names(TRAINABLE_CLASS))
    return sorted(n for n in names if not n.startswith("__"))


def registered_envs() -> list[str]:
    """Return the sorted env names registered with ``tune.register_env`` (before init)."""
    from ray.tune.registry import ENV_CREATOR

    return sorted(_registry_names(ENV_CREATOR))


def resolve_algorithm(name: Any) -> type:
    """Return the RLlib Algorithm class registered with Tune under ``name``.

    Raises:
        PrivacyConfigError: ``name`` is not a registered RLlib Algorithm; the message
            lists the registered names and suggests the closest one.

    """
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.tune.error import TuneError
    from ray.tune.registry import get_trainable_cls

    if not isinstance(name, str) or not name:
        raise PrivacyConfigError(f"'run' must be an algorithm name, got {name!r}")
    try:
        algo_cls = get_trainable_cls(name)
    except TuneError:
        names = registered_algorithms()
        raise PrivacyConfigError(
            f"unknown algorithm {name!r} in 'run'{did_you_mean(name, names)}; "
            f"registered algorithms: {', '.join(names)}"
        ) from None
    if not (isinstance(algo_cls, type) and issubclass(algo_cls, Algorithm)):
        raise PrivacyConfigError(
            f"'run': {name!r} is registered with Tune but is not an RLlib Algorithm"
        )
    return algo_cls


def resolve_env(env: Any) -> tuple[str, str]:
    """Check that an env value can be made by RLlib's EnvRunners.

    Accepted, in this order: a name registered with ``tune.register_env``; a gymnasium id
    (``ALE/...`` ids need ``ale_py``, and ``module:Id`` imports ``module`` first); an
    importable ``module.Class`` or ``module:Class`` path.

    Args:
        env: The ``env`` value of a config.

    Returns:
        ``(env, kind)``: the value to run with and one of ``"tune"``, ``"gymnasium"``,
        ``"class"``. A gymnasium id registered by another package's import gets that
        package as prefix (``ALE/X`` becomes ``ale_py:ALE/X``) so that every EnvRunner
        process imports it before making the env.

    Raises:
        PrivacyConfigError: The env is none of the above.

    """
    from ray.tune.registry import ENV_CREATOR, _global_registry

    if not isinstance(env, str) or not env:
        raise PrivacyConfigError(
            f"'env' must be a gymnasium id, a Tune-registered env name or a "
            f"'module.Class' path, got {env!r}"
        )
    if _global_registry.contains(ENV_CREATOR, env):
        return env, "tune"
    gym_env = _resolve_gymnasium_id(env)
    if gym_env is not None:
        return gym_env, "gymnasium"
    if _import_object(env) is not None:
        return env, "class"
    import gymnasium as gym

    candidates = list(gym.registry) + registered_envs()
    raise PrivacyConfigError(
        f"unknown env {env!r} (not a gymnasium id, a Tune-registered env name or an "
        f"importable 'module.Class' path){did_you_mean(env, candidates)}"
    )


def allowed_config_keys(config: Any) -> frozenset[str]:
    """Return the keys ``config.update_from_dict`` accepts for this config class.

    These are the keys of ``config.to_dict()``, the special keys and attribute names of
    ``AlgorithmConfig.update_from_dict``, the properties with setters, and (for keys
    starting with ``evaluation_``) only the arguments of ``config.evaluation()``, since
    ``update_from_dict`` passes those keys to that method.

    Args:
        config: An AlgorithmConfig instance (e.g. ``PPO.get_default_config()``).

    """
    keys = set(config.to_dict()) | UPDATE_FROM_DICT_SPECIAL_KEYS
    keys |= {
        name
        for name, attr in inspect.getmembers(type(config))
        if isinstance(attr, property) and attr.fset is not None
    }
    evaluation_args = set(inspect.signature(config.evaluation).parameters)
    keys = {k for k in keys if not k.startswith("evaluation_") or k in evaluation_args}
    keys |= {k for k in evaluation_args if k.startswith("evaluation_")}
    return frozenset(keys)


def register_class_path_envs(experiments: Sequence[Experiment]) -> None:
    """Register every ``module.Class`` env of ``experiments`` with ``tune.register_env``.

    RLlib's EnvRunners make string envs with gymnasium unless the name is registered
    with Tune; registering the path makes them call ``Class(env_config)`` instead. Call
    this before ``ray.init`` or ``Tuner.fit``.
    """
    from ray import tune

    for exp in experiments:
        for env_path in exp.class_path_envs:
            tune.register_env(env_path, functools.partial(make_env_from_path, env_path))


def make_env_from_path(env_path: str, env_config: Any) -> Any:
    """Import ``module.Class`` (or ``module:Class``) and call it with ``env_config``."""
    env_cls = _import_object(env_path)
    if env_cls is None:
        raise PrivacyConfigError(f"cannot import env {env_path!r}")
    return env_cls(env_config)


# --------------------------------------------------------------------------------------
# Parsing.
# --------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML SafeLoader that rejects duplicate keys in a mapping."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, str | int | float | bool) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)

# PyYAML follows YAML 1.1, where a float needs a dot: `lr: 1e-5` would reach the config
# as the string "1e-5" and fail deep inside a Ray worker. YAML 1.2 (and JSON) read it as
# a float; so does this loader. (add_implicit_resolver copies the resolvers per class.)
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _parse_text(path: str, text: str) -> Any:
    if path.lower().endswith(".json"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise PrivacyConfigError(
                f"line {e.lineno}, column {e.colno}: invalid JSON: {e.msg}"
            ) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # A SafeLoader subclass.
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = e.problem or e.context or "malformed"
        raise PrivacyConfigError(f"{where}invalid YAML: {problem}") from None
    except yaml.YAMLError as e:
        raise PrivacyConfigError(f"invalid YAML: {e}") from None


def parse_json_mapping(text: str, what: str) -> dict[str, Any]:
    """Parse a command-line JSON object such as ``--stop '{"training_iteration": 5}'``.

    Args:
        text: The JSON text.
        what: The option's name, for messages.

    Raises:
        PrivacyConfigError: The text is not a JSON object.

    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise PrivacyConfigError(f"{what}: invalid JSON at column {e.colno}: {e.msg}") from None
    if not isinstance(value, dict):
        raise PrivacyConfigError(f"{what}: expected a JSON object, got {_describe(value)}")
    return value


# --------------------------------------------------------------------------------------
# Normalization of one experiment.
# --------------------------------------------------------------------------------------


def _normalize_overrides(overrides: Overrides, path: str, notices: list[str]) -> Overrides:
    stop, config = overrides.stop, overrides.config
    try:
        if stop is not None:
            option_notices: list[str] = []
            stop = translate_stop(stop, option_notices, typo_is_error=False)
            notices.extend(f"--stop: {n}" for n in option_notices)
        if config is not None:
            option_notices = []
            config = _translate_config_keys(config, option_notices)
            notices.extend(f"--config: {n}" for n in option_notices)
        if overrides.num_samples is not None:
            _check_num_samples(overrides.num_samples)
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
            f"must be a mapping with at least a 'run' key, got {_describe(spec)}"
        )
    if "/" in name or name in ("", ".", ".."):
        raise PrivacyConfigError("the name must be usable as a directory name")
    _check_experiment_keys(spec)
    if "run" not in spec:
        raise PrivacyConfigError("missing required key 'run' (an algorithm name, e.g. PPO)")
    algo_cls = resolve_algorithm(spec["run"])
    param_spaces = _param_spaces(spec, algo_cls, overrides.config or {}, has_gpus, notices)
    if overrides.stop is not None:
        # Checked again now that the algorithm's own result keys are known (no notices:
        # the override's were given once for the whole file).
        stop = translate_stop(overrides.stop, [], getattr(algo_cls, "TOP_LEVEL_RESULT_KEYS", ()))
    else:
        stop = translate_stop(
            spec.get("stop", {}), notices, getattr(algo_cls, "TOP_LEVEL_RESULT_KEYS", ())
        )
    return Experiment(
        name=name,
        run=spec["run"],
        **param_spaces,
        stop=stop,
        checkpoint_config=_checkpoint_config(spec.get("checkpoint_config"), notices),
        num_samples=_num_samples(spec, overrides),
        storage_path=_storage_path(overrides.storage_path or spec.get("storage_path")),
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
    config = _translate_config_keys(_mapping(spec, "config"), notices)
    gpu_config = _translate_config_keys(_mapping(spec, "gpu_config"), notices, "gpu_config")
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


def _check_experiment_keys(spec: Mapping[str, Any]) -> None:
    for key in spec:
        if key in EXPERIMENT_KEYS:
            continue
        hint = LEGACY_EXPERIMENT_KEY_HINTS.get(key)
        hint = f" ({hint})" if hint else did_you_mean(str(key), EXPERIMENT_KEYS)
        raise PrivacyConfigError(
            f"unknown key {key!r}{hint}; allowed keys: {', '.join(EXPERIMENT_KEYS)}"
        )


def _mapping(spec: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = spec.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PrivacyConfigError(f"{key!r} must be a mapping, got {_describe(value)}")
    return dict(value)


def _translate_config_keys(
    config: Mapping[str, Any], notices: list[str], where: str = "config"
) -> dict[str, Any]:
    """Rename legacy and alias keys (recursing into ``evaluation_config``)."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        new_key = LEGACY_CONFIG_KEYS.get(key, CONFIG_KEY_ALIASES.get(key, key))
        if key in LEGACY_CONFIG_KEYS:
            notices.append(f"{where} key {key!r} is an old API stack key; using {new_key!r}")
        if new_key in out or (new_key != key and new_key in config):
            raise PrivacyConfigError(f"{where} sets {new_key!r} twice (also as {key!r})")
        if new_key == "evaluation_config" and isinstance(value, Mapping):
            value = _translate_config_keys(value, notices, where=f"{where}.evaluation_config")
        out[new_key] = value
    return out


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
    _force_new_api_stack(config, label)
    _force_torch(config, label)
    class_envs = _normalize_env(config, default.env, label)
    _normalize_env_config(config)
    num_variants = _count_variants(config, label)
    if validate:
        _check_config_keys(config, default, label)
        _validate_variants(config, algo_cls, num_variants, label)
    return config, num_variants, class_envs


def _force_new_api_stack(config: dict[str, Any], label: str) -> None:
    for key in API_STACK_KEYS:
        for value in _literal_values(config.get(key, True)):
            if value is not True:
                raise PrivacyConfigError(
                    f"{label}config key {key!r} is {value!r}, but rllib_privacy runs on "
                    "RLlib's new API stack only; remove the key"
                )
    config.pop("_enable_new_api_stack", None)
    config["enable_rl_module_and_learner"] = True
    config["enable_env_runner_and_connector_v2"] = True


def _force_torch(config: dict[str, Any], label: str) -> None:
    for key in ("framework", "framework_str"):
        for value in _literal_values(config.get(key, "torch")):
            if value != "torch":
                raise PrivacyConfigError(
                    f"{label}config key {key!r} is {value!r}, but rllib_privacy supports "
                    "torch only; remove the key or set it to torch"
                )
    config.pop("framework_str", None)
    config["framework"] = "torch"


def _normalize_env(config: dict[str, Any], default_env: Any, label: str) -> set[str]:
    """Resolve ``config["env"]`` (see :func:`resolve_env`); return its class-path envs."""
    if config.get("env") is None:
        config.pop("env", None)
        if default_env is not None or "input" in config or "input_" in config:
            return set()  # The algorithm's default env, or offline data only.
        raise PrivacyConfigError(f"{label}no env: set 'env' in the experiment or its config")
    env = config["env"]
    if _is_grid_search(env):
        resolved = [resolve_env(e) for e in env["grid_search"]]
        config["env"] = {"grid_search": [e for e, _ in resolved]}
    else:
        resolved = [resolve_env(env)]
        config["env"] = resolved[0][0]
    return {e for e, kind in resolved if kind == "class"}


def _normalize_env_config(config: dict[str, Any]) -> None:
    """Apply the env's own ``env_config`` normalizer (see ``envs.ENV_CONFIG_HOOKS``)."""
    from rllib_privacy.envs import ENV_CONFIG_HOOKS

    hooks = ENV_CONFIG_HOOKS.get(config.get("env")) if isinstance(config.get("env"), str) else None
    env_config = config.get("env_config")
    if hooks and isinstance(env_config, Mapping) and not _is_grid_search(env_config):
        config["env_config"] = hooks[1](env_config)


def _validate_env_config(variant: Mapping[str, Any], default_env: Any = None) -> None:
    """Run the env's own ``env_config`` check (see ``envs.ENV_CONFIG_HOOKS``).

    A gymnasium id without a hook gets its ``env_config`` keys checked against the
    arguments of its constructor: RLlib passes them to ``gym.make_vec`` as keywords, so
    a typo would otherwise be a TypeError inside every EnvRunner.
    """
    from rllib_privacy.envs import ENV_CONFIG_HOOKS

    env_config = variant.get("env_config")
    if env_config is not None and not isinstance(env_config, Mapping):
        raise PrivacyConfigError(
            f"config key 'env_config' must be a mapping, got {_describe(env_config)}"
        )
    # An algorithm's default env (LDPA3C's CartPoleGravity) gets the same check.
    env = variant.get("env") or default_env
    hooks = ENV_CONFIG_HOOKS.get(env) if isinstance(env, str) else None
    if hooks:
        hooks[0](env_config or {})
    elif isinstance(env, str) and env_config:
        _check_gymnasium_env_config(env, env_config)


#: Keywords ``gym.make``/``gym.make_vec`` take themselves (not passed to the env).
_GYM_MAKE_KEYWORDS = ("render_mode", "max_episode_steps", "disable_env_checker", "autoreset")


def _check_gymnasium_env_config(env: str, env_config: Mapping[str, Any]) -> None:
    """Unknown ``env_config`` keys of a gymnasium id are an error (see the caller)."""
    import gymnasium as gym
    from ray.tune.registry import ENV_CREATOR, _global_registry

    if _global_registry.contains(ENV_CREATOR, env):
        return  # A Tune env creator takes the whole env_config; it checks it itself.
    try:
        spec = gym.spec(env.rpartition(":")[2])
        creator = spec.entry_point
        if isinstance(creator, str):
            creator = gym.envs.registration.load_env_creator(creator)
        parameters = inspect.signature(creator).parameters.values()
    except (gym.error.Error, ImportError, AttributeError, TypeError, ValueError):
        return  # Not a gymnasium id, or one whose arguments cannot be read.
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    allowed = sorted({p.name for p in parameters if p.name != "self"} | set(_GYM_MAKE_KEYWORDS))
    for key in env_config:
        if key not in allowed and key not in spec.kwargs:
            raise PrivacyConfigError(
                f"env_config key {key!r} is not an argument of {env!r}"
                f"{did_you_mean(str(key), allowed)}; allowed: {', '.join(allowed)}"
            )


def _check_config_keys(config: Mapping[str, Any], default: Any, label: str) -> None:
    allowed = allowed_config_keys(default)
    class_name = type(default).__name__
    _check_keys(config, allowed, class_name, label, where="config")
    evaluation_config = config.get("evaluation_config")
    if isinstance(evaluation_config, Mapping) and not _is_grid_search(evaluation_config):
        _check_keys(evaluation_config, allowed, class_name, label, where="evaluation_config")
    for key, nested_allowed in getattr(type(default), "config_dict_keys", {}).items():
        nested = config.get(key)
        if isinstance(nested, Mapping) and not _is_grid_search(nested):
            _check_keys(nested, frozenset(nested_allowed), class_name, label, where=key)


def _check_keys(
    config: Mapping[str, Any],
    allowed: Collection[str],
    class_name: str,
    label: str,
    where: str,
) -> None:
    for key in config:
        if key not in allowed:
            what = "config key" if where == "config" else f"{where} key"
            raise PrivacyConfigError(
                f"{label}{what} {key!r} is not known to {class_name}"
                f"{did_you_mean(str(key), allowed)}; see {class_name} for allowed keys"
            )


def _count_variants(config: Mapping[str, Any], label: str) -> int:
    from ray.tune.search.variant_generator import parse_spec_vars

    try:
        _, _, grid_vars = parse_spec_vars(copy.deepcopy(dict(config)))
    except (TypeError, ValueError) as e:
        raise PrivacyConfigError(f"{label}invalid search space in config: {e}") from None
    count = 1
    for path, domain in grid_vars:
        if not domain.categories:
            raise PrivacyConfigError(
                f"{label}grid_search at {'.'.join(map(str, path))!r} has no values"
            )
        count *= len(domain.categories)
    return count


def _validate_variants(
    config: Mapping[str, Any], algo_cls: type, num_variants: int, label: str
) -> None:
    from ray.tune.search.variant_generator import generate_variants

    variants = generate_variants(copy.deepcopy(dict(config)))
    for index, (resolved, variant) in enumerate(
        itertools.islice(variants, MAX_VALIDATED_VARIANTS), start=1
    ):
        where = label
        if num_variants > 1:
            where += f"variant {index} of {num_variants} ({_format_variant(resolved)}): "
        _validate_variant(variant, algo_cls, where)
    if num_variants > MAX_VALIDATED_VARIANTS:
        logger.info("validated the first %d of %d variants", MAX_VALIDATED_VARIANTS, num_variants)


def _validate_variant(variant: dict[str, Any], algo_cls: type, where: str) -> None:
    """Run the config class's hook, ``update_from_dict`` and ``validate``."""
    config = algo_cls.get_default_config()
    with _as_config_error(where, config):
        _call_validate_hook(type(config), copy.deepcopy(variant))
        _validate_env_config(variant, config.env)
        _validate_ldp_gradient(variant)
        config.update_from_dict(copy.deepcopy(variant))
        config.validate()
    _validate_evaluation_config(config, variant, where)


def _validate_evaluation_config(config: Any, variant: Mapping[str, Any], where: str) -> None:
    """Validate the config evaluation EnvRunners get (``evaluation_config`` merged in).

    Its values are otherwise only applied inside Ray, when evaluation starts.
    """
    evaluation_config = variant.get("evaluation_config")
    if not isinstance(evaluation_config, Mapping) or not evaluation_config:
        return
    merged = {k: v for k, v in variant.items() if k != "evaluation_config"}
    merged.update(evaluation_config)
    with _as_config_error(f"{where}evaluation_config: ", config):
        _call_validate_hook(type(config), copy.deepcopy(merged))
        _validate_env_config(merged, config.env)
        config.get_evaluation_config_object().validate()


@contextlib.contextmanager
def _as_config_error(where: str, config: Any) -> Iterator[None]:
    """Re-raise what RLlib's validation raises as a PrivacyConfigError prefixed by ``where``."""
    try:
        yield
    except PrivacyConfigError as e:
        raise PrivacyConfigError(f"{where}{e}") from None
    except (
        ValueError,
        TypeError,
        AttributeError,
        KeyError,
        ImportError,
        AssertionError,
        ArithmeticError,  # e.g. an OverflowError from a huge value
    ) as e:
        message = str(e).replace(_RLLIB_SUPPRESS_HINT, "").strip() or type(e).__name__
        raise PrivacyConfigError(
            f"{where}invalid config for {type(config).__name__}: {message}"
        ) from None


def _validate_ldp_gradient(variant: Mapping[str, Any]) -> None:
    """Check ``learner_config_dict.ldp_gradient`` (LDPGradientPrivatizerMixin) before Ray.

    The mixin reads it only when the learner is built, inside a Ray actor.
    """
    from rllib_privacy.mechanisms import GradientMechanism

    learner_config = variant.get("learner_config_dict")
    if not isinstance(learner_config, Mapping) or learner_config.get("ldp_gradient") is None:
        return
    try:
        GradientMechanism.from_dict(learner_config["ldp_gradient"])
    except ValueError as e:
        raise PrivacyConfigError(f"learner_config_dict key 'ldp_gradient': {e}") from None


def _call_validate_hook(config_cls: type, variant: dict[str, Any]) -> None:
    """Call ``config_cls.validate_config_dict(variant)`` if the config class has one."""
    hook = getattr(config_cls, "validate_config_dict", None)
    if not callable(hook):
        return
    if inspect.isfunction(hook) and len(inspect.signature(hook).parameters) == 2:
        hook(config_cls, variant)  # A plain function attribute taking (cls, d).
    else:
        hook(variant)  # A classmethod or staticmethod.


def _checkpoint_config(value: Any, notices: list[str]) -> dict[str, Any]:
    from ray import tune

    if value is not None and not isinstance(value, Mapping):
        raise PrivacyConfigError(f"'checkpoint_config' must be a mapping, got {_describe(value)}")
    allowed = [
        f.name for f in dataclasses.fields(tune.CheckpointConfig) if not f.name.startswith("_")
    ]
    checkpoint_config = {**DEFAULT_CHECKPOINT_CONFIG, **(value or {})}
    for key in checkpoint_config:
        if key not in allowed:
            raise PrivacyConfigError(
                f"unknown checkpoint_config key {key!r}{did_you_mean(str(key), allowed)}; "
                f"allowed keys: {', '.join(allowed)}"
            )
        # Tune's own checks miss some types ('yes' for a flag) and word others badly.
        check = _CHECKPOINT_VALUE_CHECKS.get(key)
        if check is not None and not check[0](checkpoint_config[key]):
            raise PrivacyConfigError(
                f"checkpoint_config key {key!r} must be {check[1]}, got {checkpoint_config[key]!r}"
            )
    attribute = checkpoint_config.get("checkpoint_score_attribute")
    if isinstance(attribute, str) and translate_metric_key(attribute) != attribute:
        checkpoint_config["checkpoint_score_attribute"] = translate_metric_key(attribute)
        notices.append(
            f"checkpoint_score_attribute {attribute!r} is an old API stack key; "
            f"using {translate_metric_key(attribute)!r}"
        )
    try:
        tune.CheckpointConfig(**checkpoint_config)
    except (ValueError, TypeError) as e:
        raise PrivacyConfigError(f"invalid checkpoint_config: {e}") from None
    return checkpoint_config


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: checkpoint_config key -> (is the value allowed, what is allowed).
_CHECKPOINT_VALUE_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "checkpoint_frequency": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "num_to_keep": (lambda v: v is None or (_is_int(v) and v >= 1), "an integer >= 1 or null"),
    "checkpoint_at_end": (lambda v: v is None or isinstance(v, bool), "true or false"),
    "checkpoint_score_attribute": (
        lambda v: v is None or (isinstance(v, str) and bool(v)),
        "a result key or null",
    ),
    "checkpoint_score_order": (lambda v: v in ("max", "min"), "'max' or 'min'"),
}


def _num_samples(spec: Mapping[str, Any], overrides: Overrides) -> int:
    if overrides.num_samples is not None:
        return overrides.num_samples
    return _check_num_samples(spec.get("num_samples", 1))


def _check_num_samples(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PrivacyConfigError(f"'num_samples' must be a positive integer, got {value!r}")
    return value


def _storage_path(value: Any) -> str:
    if value is None:
        value = DEFAULT_STORAGE_PATH
    if not isinstance(value, str) or not value:
        raise PrivacyConfigError(f"'storage_path' must be a path, got {value!r}")
    if "://" in value:
        return value  # A URI (s3://, gs://, ...) that Tune's storage layer understands.
    return os.path.abspath(os.path.expanduser(value))


# --------------------------------------------------------------------------------------
# Small helpers.
# --------------------------------------------------------------------------------------


def _resolve_gymnasium_id(env: str) -> str | None:
    """Return ``env`` as EnvRunners must see it if it is a gymnasium id, else None.

    An id registered by another package's import (``ALE/...`` by ``ale_py``, this
    package's ids by ``rllib_privacy``) gets that package as a ``package:`` prefix, so
    that gymnasium imports it in every EnvRunner process before looking the id up.
    """
    import gymnasium as gym

    module, _, env_id = env.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError:
            return None
    elif env_id.startswith("ALE/"):
        try:
            gym.register_envs(importlib.import_module("ale_py"))
        except ImportError:
            raise PrivacyConfigError(
                f"env {env!r} needs the ale-py package (pip install ale-py)"
            ) from None
    try:
        spec = gym.spec(env_id)
    except gym.error.Error:
        return None
    package = _entry_point_package(spec.entry_point)
    if not module and package not in ("", "gymnasium"):
        return f"{package}:{env_id}"
    return env


def _entry_point_package(entry_point: Any) -> str:
    """Return the top-level package of a gymnasium entry point (string or callable)."""
    if isinstance(entry_point, str):
        return entry_point.partition(":")[0].partition(".")[0]
    return str(getattr(entry_point, "__module__", "") or "").partition(".")[0]


def _import_object(path: str) -> Callable[..., Any] | None:
    """Return the callable named by ``module.Class`` or ``module:Class``, or None."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        return None
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj if callable(obj) else None


def _registry_names(category: str) -> list[str]:
    """Names registered in Tune's (not yet flushed) registry under ``category``."""
    from ray.tune.registry import _global_registry

    # Tune has no public listing; before ray.init, registrations wait in `_to_flush`,
    # after it they are in the cluster and `_registered` remembers their keys.
    pending = list(getattr(_global_registry, "_to_flush", {}))
    pending += list(getattr(_global_registry, "_registered", ()))
    return sorted({key for (cat, key) in pending if cat == category})


def _is_grid_search(value: Any) -> bool:
    return isinstance(value, Mapping) and len(value) == 1 and "grid_search" in value


def _literal_values(value: Any) -> list[Any]:
    if _is_grid_search(value) and isinstance(value["grid_search"], list):
        return list(value["grid_search"])
    return [value]


def _format_variant(resolved: Mapping[tuple, Any]) -> str:
    return ", ".join(f"{'.'.join(map(str, path))}={value!r}" for path, value in resolved.items())


def did_you_mean(word: str, candidates: Collection[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest candidate, or ``""``.

    A candidate that differs only in case wins; otherwise difflib's closest match.
    """
    by_lower = {str(c).lower(): str(c) for c in candidates}
    if word.lower() in by_lower and by_lower[word.lower()] != word:
        return f"; did you mean {by_lower[word.lower()]!r}?"
    matches = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean {by_lower[matches[0]]!r}?" if matches else ""


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


@contextlib.contextmanager
def quiet_rllib() -> Iterator[None]:
    """Silence RLlib's and gymnasium's warnings while configs are only validated."""
    import gymnasium as gym

    rllib_logger = logging.getLogger("ray.rllib")
    level, gym_level = rllib_logger.level, gym.logger.min_level
    rllib_logger.setLevel(logging.ERROR)
    gym.logger.min_level = gym.logger.ERROR  # Imports may reset the warnings filters.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        rllib_logger.setLevel(level)
        gym.logger.min_level = gym_level
