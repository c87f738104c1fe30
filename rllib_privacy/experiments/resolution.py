"""What the names in an experiment refer to: algorithms, envs, Tune's registry.

Ray, RLlib, gymnasium and this package's algorithms are imported inside the functions
that need them: ``rllib_privacy.experiments`` is imported by the ``rllib`` command at
start-up, before it knows whether it will run anything (``rllib --help``).
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from rllib_privacy._registration import register_all
from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.experiments.spec import Experiment, is_grid_search

__all__ = [
    "ensure_package_registered",
    "make_env_from_path",
    "register_class_path_envs",
    "registered_algorithms",
    "registered_envs",
    "resolve_algorithm",
    "resolve_env",
    "resolve_env_values",
]

logger = logging.getLogger(__name__)


def ensure_package_registered() -> None:
    """Register ``rllib_privacy``'s algorithms and envs with Tune and gymnasium."""
    try:
        register_all()
    except ImportError as e:  # A plug-in's optional dependency may be missing.
        logger.debug("registering rllib_privacy failed: %s", e)


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
        config: The config dict; its ``env`` is replaced by what :func:`resolve_env`
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


def _registry_names(category: str) -> list[str]:
    """Names registered in Tune's (not yet flushed) registry under ``category``."""
    from ray.tune.registry import _global_registry

    # Tune has no public listing; before ray.init, registrations wait in `_to_flush`,
    # after it they are in the cluster and `_registered` remembers their keys.
    pending = list(getattr(_global_registry, "_to_flush", {}))
    pending += list(getattr(_global_registry, "_registered", ()))
    return sorted({key for (cat, key) in pending if cat == category})
