"""Environments shipped with rllib_privacy, registered with gymnasium on import.

Ids, ``register_envs`` and the ``env_config`` checks live in
``rllib_privacy.envs.registry`` (which imports no environment module); this package
fills its ``ENV_CONFIG_HOOKS`` with each environment's check.
"""

from __future__ import annotations

import gymnasium as gym

from rllib_privacy.envs.acrobot_mass import AcrobotMassEnv, validate_acrobot_mass_env_config
from rllib_privacy.envs.atari_pixels import (
    ATARI_PIXELS_ENV_ID,
    ATARI_RAM_ENV_ID,
    validate_atari_pixels_env_config,
    validate_atari_ram_env_config,
)
from rllib_privacy.envs.atari_ram import ram_env_id, register_ale_ram_envs
from rllib_privacy.envs.cartpole_gravity import (
    PAPER_GRAVITY_CHOICES,
    CartPoleGravityEnv,
    validate_cartpole_gravity_env_config,
)
from rllib_privacy.envs.instance_laplace import (
    InstanceWiseLaplaceEnv,
    absolute_data_path,
    validate_env_config,
)
from rllib_privacy.envs.registry import (
    ACROBOT_MASS_ENV_ID,
    CARTPOLE_GRAVITY_ENV_ID,
    ENV_CONFIG_HOOKS,
    ENV_IDS,
    INSTANCE_LAPLACE_ENV_ID,
    SPARSE_MOUNTAIN_CAR_ENV_ID,
    check_env_config_for,
    check_gymnasium_env_config,
    normalize_env_config_for,
    register_envs,
)
from rllib_privacy.envs.sparse_mountain_car import SparseMountainCarEnv, make_sparse_mountain_car
from rllib_privacy.envs.time_limit import (
    TIME_LIMIT_AS_TERMINAL_ENV_ID,
    TimeLimitAsTerminal,
    make_time_limit_as_terminal,
    validate_time_limit_env_config,
)

# A bad env_config would otherwise only fail inside an EnvRunner, deep in a Ray traceback.
ENV_CONFIG_HOOKS[INSTANCE_LAPLACE_ENV_ID] = (validate_env_config, absolute_data_path)
ENV_CONFIG_HOOKS[CARTPOLE_GRAVITY_ENV_ID] = (validate_cartpole_gravity_env_config, lambda c: c)
ENV_CONFIG_HOOKS[ACROBOT_MASS_ENV_ID] = (validate_acrobot_mass_env_config, lambda c: c)
ENV_CONFIG_HOOKS[ATARI_RAM_ENV_ID] = (validate_atari_ram_env_config, lambda c: c)
ENV_CONFIG_HOOKS[ATARI_PIXELS_ENV_ID] = (validate_atari_pixels_env_config, lambda c: c)
ENV_CONFIG_HOOKS[TIME_LIMIT_AS_TERMINAL_ENV_ID] = (validate_time_limit_env_config, lambda c: c)


def make_cartpole_gravity(env_config: dict | None = None) -> gym.Env:
    """Env creator for Tune/RLlib: ``gym.make`` with the ``env_config`` keys as kwargs."""
    register_envs()
    return gym.make(CARTPOLE_GRAVITY_ENV_ID, **dict(env_config or {}))


def make_acrobot_mass(env_config: dict | None = None) -> gym.Env:
    """Env creator for Tune/RLlib: ``gym.make`` with the ``env_config`` keys as kwargs."""
    register_envs()
    return gym.make(ACROBOT_MASS_ENV_ID, **dict(env_config or {}))


def make_instance_laplace(env_config: dict | None = None) -> gym.Env:
    """Env creator for Tune/RLlib: ``InstanceWiseLaplaceEnv(env_config)``."""
    return InstanceWiseLaplaceEnv(dict(env_config or {}))


__all__ = [
    "ACROBOT_MASS_ENV_ID",
    "AcrobotMassEnv",
    "make_acrobot_mass",
    "CARTPOLE_GRAVITY_ENV_ID",
    "ENV_CONFIG_HOOKS",
    "ENV_IDS",
    "INSTANCE_LAPLACE_ENV_ID",
    "check_env_config_for",
    "check_gymnasium_env_config",
    "normalize_env_config_for",
    "InstanceWiseLaplaceEnv",
    "PAPER_GRAVITY_CHOICES",
    "SPARSE_MOUNTAIN_CAR_ENV_ID",
    "CartPoleGravityEnv",
    "SparseMountainCarEnv",
    "TIME_LIMIT_AS_TERMINAL_ENV_ID",
    "TimeLimitAsTerminal",
    "make_time_limit_as_terminal",
    "make_sparse_mountain_car",
    "make_cartpole_gravity",
    "make_instance_laplace",
    "ram_env_id",
    "register_ale_ram_envs",
    "register_envs",
]
