"""Stage 3, resolve: the translated config made concrete, as Tune will run it.

The algorithm config's ``normalize_config_dict`` hook, the new API stack and torch
forced, the env named by a value made into what RLlib's EnvRunners will make (a name
registered with Tune, a gymnasium id, or a ``module.Class`` path), the env's own
``env_config`` normalizer, and the storage path made absolute.

Ray, RLlib, gymnasium and this package's envs are imported inside the functions that
need them (start-up time of the ``rllib`` command).
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.experiments.registry import registered_envs
from rllib_privacy.experiments.spec import (
    Experiment,
    ExperimentDraft,
    Overrides,
    is_grid_search,
    literal_values,
)

__all__ = [
    "API_STACK_KEYS",
    "DEFAULT_STORAGE_PATH",
    "force_new_api_stack",
    "force_torch",
    "make_env_from_path",
    "normalize_env_config",
    "register_class_path_envs",
    "resolve_env",
    "resolve_env_values",
    "resolve_experiment",
    "storage_path",
]

#: Config keys that switch the API stack; they may only be true.
API_STACK_KEYS = (
    "enable_rl_module_and_learner",
    "enable_env_runner_and_connector_v2",
    "_enable_new_api_stack",
)

#: Where Tune writes results when neither the file nor the command line says.
DEFAULT_STORAGE_PATH = "~/ray_results"


def resolve_experiment(draft: ExperimentDraft, overrides: Overrides) -> None:
    """Make ``draft``'s configs and storage path concrete, in place.

    Args:
        draft: The translated experiment.
        overrides: The command-line overrides (``storage_path`` replaces the file's).

    Raises:
        PrivacyConfigError: A setting that switches off the new API stack or torch, no
            env, an env that cannot be resolved, or a storage path that is no path.

    """
    default = draft.algo_cls.get_default_config()
    draft.config, class_envs = _resolve_config(draft.config, default, "")
    if draft.gpu_config is not None:
        draft.gpu_config, gpu_class_envs = _resolve_config(
            draft.gpu_config, default, "with gpu_config merged: "
        )
        class_envs |= gpu_class_envs
    draft.class_path_envs = tuple(sorted(class_envs))
    draft.storage_path = storage_path(overrides.storage_path or draft.spec.get("storage_path"))


def _resolve_config(
    config: dict[str, Any], default: Any, label: str
) -> tuple[dict[str, Any], set[str]]:
    """The config's hook, the forced API stack and torch, its env and env_config.

    Returns:
        The resolved config (a copy) and the class-path envs in it.

    """
    config = dict(config)
    normalize = getattr(type(default), "normalize_config_dict", None)
    if callable(normalize):
        config = normalize(config)
    force_new_api_stack(config, label)
    force_torch(config, label)
    class_envs = resolve_env_values(config, default.env, label)
    normalize_env_config(config)
    return config, class_envs


def force_new_api_stack(config: dict[str, Any], label: str) -> None:
    """Set the new API stack keys in ``config``; raise if the file switches it off."""
    for key in API_STACK_KEYS:
        for value in literal_values(config.get(key, True)):
            if value is not True:
                raise PrivacyConfigError(
                    f"{label}config key {key!r} is {value!r}, but rllib_privacy runs on "
                    "RLlib's new API stack only; remove the key"
                )
    config.pop("_enable_new_api_stack", None)
    config["enable_rl_module_and_learner"] = True
    config["enable_env_runner_and_connector_v2"] = True


def force_torch(config: dict[str, Any], label: str) -> None:
    """Set ``framework: torch`` in ``config``; raise if the file asks for another one."""
    for key in ("framework", "framework_str"):
        for value in literal_values(config.get(key, "torch")):
            if value != "torch":
                raise PrivacyConfigError(
                    f"{label}config key {key!r} is {value!r}, but rllib_privacy supports "
                    "torch only; remove the key or set it to torch"
                )
    config.pop("framework_str", None)
    config["framework"] = "torch"


def normalize_env_config(config: dict[str, Any]) -> None:
    """Apply the env's own ``env_config`` normalizer (see ``envs.ENV_CONFIG_HOOKS``)."""
    from rllib_privacy.envs import normalize_env_config_for  # Lazy: start-up time.

    env_config = config.get("env_config")
    if isinstance(env_config, Mapping) and not is_grid_search(env_config):
        config["env_config"] = normalize_env_config_for(config.get("env"), env_config)


def storage_path(value: Any) -> str:
    """Return ``storage_path`` as an absolute path (a URI unchanged; None: the default)."""
    if value is None:
        value = DEFAULT_STORAGE_PATH
    if not isinstance(value, str) or not value:
        raise PrivacyConfigError(f"'storage_path' must be a path, got {value!r}")
    if "://" in value:
        return value  # A URI (s3://, gs://, ...) that Tune's storage layer understands.
    return os.path.abspath(os.path.expanduser(value))


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
    import gymnasium as gym
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
    candidates = list(gym.registry) + registered_envs()
    raise PrivacyConfigError(
        f"unknown env {env!r} (not a gymnasium id, a Tune-registered env name or an "
        f"importable 'module.Class' path){did_you_mean(env, candidates)}"
    )


def resolve_env_values(config: dict[str, Any], default_env: Any, label: str) -> set[str]:
    """Resolve ``config["env"]`` in place (each value of a grid search too).

    Args:
        config: The config dict; its ``env`` is replaced by what ``resolve_env``
            returns, and removed when None.
        default_env: The algorithm's default env (used when the config has none).
        label: Prefix for messages (e.g. ``"with gpu_config merged: "``).

    Returns:
        The env values that are ``module.Class`` paths.

    Raises:
        PrivacyConfigError: No env at all, or one that cannot be resolved.

    """
    if config.get("env") is None:
        config.pop("env", None)
        if default_env is not None or "input" in config or "input_" in config:
            return set()  # The algorithm's default env, or offline data only.
        raise PrivacyConfigError(f"{label}no env: set 'env' in the experiment or its config")
    env = config["env"]
    if is_grid_search(env):
        resolved = [resolve_env(e) for e in env["grid_search"]]
        config["env"] = {"grid_search": [e for e, _ in resolved]}
    else:
        resolved = [resolve_env(env)]
        config["env"] = resolved[0][0]
    return {e for e, kind in resolved if kind == "class"}


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
