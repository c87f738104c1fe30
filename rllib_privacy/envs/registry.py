"""The ids of this package's environments and the checks of their ``env_config``.

The submodules (one per environment) and ``rllib_privacy.envs`` import this module;
it imports none of them, so an environment module can look up another's ``env_config``
check (``TimeLimitAsTerminal`` wraps any id) without an import cycle. ``ENV_CONFIG_HOOKS``
is filled by ``rllib_privacy.envs`` when the package is imported, which happens before any
of its submodules, this one included, runs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from rllib_privacy._validation import did_you_mean
from rllib_privacy.envs.atari_ram import register_ale_ram_envs
from rllib_privacy.errors import PrivacyConfigError

#: gymnasium id of CartPole-v0 dynamics (200-step limit) with private per-agent gravity.
CARTPOLE_GRAVITY_ENV_ID = "rllib_privacy/CartPoleGravity-v0"

#: gymnasium/Tune id of the instance-wise Laplace MDP (Ryu et al.).
INSTANCE_LAPLACE_ENV_ID = "rllib_privacy/InstanceWiseLaplace-v0"

#: gymnasium id of Acrobot-v1 with private per-environment link masses (PATE's harder task).
ACROBOT_MASS_ENV_ID = "rllib_privacy/AcrobotMass-v0"

#: gymnasium id of MountainCar-v0 with reward 1 at the goal and 0 elsewhere.
SPARSE_MOUNTAIN_CAR_ENV_ID = "rllib_privacy/SparseMountainCar-v0"

ENV_IDS: tuple[str, ...] = (
    CARTPOLE_GRAVITY_ENV_ID,
    ACROBOT_MASS_ENV_ID,
    INSTANCE_LAPLACE_ENV_ID,
    SPARSE_MOUNTAIN_CAR_ENV_ID,
)

#: Env ids whose ``env_config`` is checked before Ray starts: (validate, normalize), where
#: validate raises PrivacyConfigError and normalize rewrites literal values (e.g. paths).
ENV_CONFIG_HOOKS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {}

#: Keywords ``gym.make``/``gym.make_vec`` take themselves (not passed to the env).
GYM_MAKE_KEYWORDS = ("render_mode", "max_episode_steps", "disable_env_checker", "autoreset")


#: (id, entry point, ``gym.register`` keywords) of every environment above.
_GYM_REGISTRATIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        CARTPOLE_GRAVITY_ENV_ID,
        "rllib_privacy.envs.cartpole_gravity:CartPoleGravityEnv",
        {"max_episode_steps": 200, "reward_threshold": 195.0},
    ),
    (
        ACROBOT_MASS_ENV_ID,
        "rllib_privacy.envs.acrobot_mass:AcrobotMassEnv",
        {"max_episode_steps": 500, "reward_threshold": -100.0},
    ),
    (INSTANCE_LAPLACE_ENV_ID, "rllib_privacy.envs.instance_laplace:InstanceWiseLaplaceEnv", {}),
    (
        SPARSE_MOUNTAIN_CAR_ENV_ID,
        "rllib_privacy.envs.sparse_mountain_car:SparseMountainCarEnv",
        {"max_episode_steps": 200, "reward_threshold": 0.9},
    ),
)


def register_envs() -> None:
    """Registers this package's environments with gymnasium (idempotent)."""
    for env_id, entry_point, kwargs in _GYM_REGISTRATIONS:
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, **kwargs)
    register_ale_ram_envs()


def check_env_config_for(env: Any, env_config: Mapping[str, Any] | None) -> None:
    """Run the ``env_config`` check of ``env`` (before Ray starts).

    An id of ``ENV_CONFIG_HOOKS`` gets its own check (also of an empty ``env_config``);
    any other gymnasium id gets its ``env_config`` keys checked against the arguments of
    its constructor: RLlib passes them to ``gym.make_vec`` as keywords, so a typo would
    otherwise be a TypeError inside every EnvRunner.

    Args:
        env: The ``env`` of a config (anything but a string is not checked).
        env_config: Its ``env_config`` (None: empty).

    Raises:
        PrivacyConfigError: Naming the ``env_config`` key that is wrong.

    """
    hooks = ENV_CONFIG_HOOKS.get(env) if isinstance(env, str) else None
    if hooks:
        hooks[0](env_config or {})
    elif isinstance(env, str) and env_config:
        check_gymnasium_env_config(env, env_config)


def normalize_env_config_for(env: Any, env_config: Mapping[str, Any]) -> Any:
    """Return ``env_config`` rewritten by the normalizer of ``env`` (unchanged if none)."""
    hooks = ENV_CONFIG_HOOKS.get(env) if isinstance(env, str) else None
    return hooks[1](env_config) if hooks else env_config


def check_gymnasium_env_config(env: str, env_config: Mapping[str, Any]) -> None:
    """Raise for an ``env_config`` key that the gymnasium id ``env`` does not take.

    Ids registered with Tune (their creator takes the whole ``env_config``), ids whose
    constructor takes ``**kwargs`` and ids whose arguments cannot be read pass.

    Raises:
        PrivacyConfigError: Naming the key and the allowed ones.

    """
    # Lazy: the environments import without Ray; only this check consults Tune's registry.
    from ray.tune.registry import ENV_CREATOR, _global_registry

    if _global_registry.contains(ENV_CREATOR, env):
        return  # A Tune env creator takes the whole env_config; it checks it itself.
    try:
        spec = gym.spec(env.rpartition(":")[2])
        creator: Callable[..., Any] | str | None = spec.entry_point
        if isinstance(creator, str):
            creator = gym.envs.registration.load_env_creator(creator)
        if creator is None:
            return  # A spec without an entry point: no arguments to read.
        parameters = inspect.signature(creator).parameters.values()
    except (gym.error.Error, ImportError, AttributeError, TypeError, ValueError):
        return  # Not a gymnasium id, or one whose arguments cannot be read.
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    allowed = sorted({p.name for p in parameters if p.name != "self"} | set(GYM_MAKE_KEYWORDS))
    for key in env_config:
        if key not in allowed and key not in spec.kwargs:
            raise PrivacyConfigError(
                f"env_config key {key!r} is not an argument of {env!r}"
                f"{did_you_mean(str(key), allowed)}; allowed: {', '.join(allowed)}"
            )
