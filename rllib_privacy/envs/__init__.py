"""Environments shipped with rllib_privacy, registered with gymnasium on import."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
from rllib_privacy.envs.sparse_mountain_car import SparseMountainCarEnv, make_sparse_mountain_car
from rllib_privacy.envs.time_limit import (
    TIME_LIMIT_AS_TERMINAL_ENV_ID,
    TimeLimitAsTerminal,
    make_time_limit_as_terminal,
    validate_time_limit_env_config,
)

#: gymnasium id of CartPole-v0 dynamics (200-step limit) with private per-agent gravity.
CARTPOLE_GRAVITY_ENV_ID = "rllib_privacy/CartPoleGravity-v0"

#: gymnasium/Tune id of the instance-wise Laplace MDP (Ryu et al.).
INSTANCE_LAPLACE_ENV_ID = "rllib_privacy/InstanceWiseLaplace-v0"

#: Env ids whose ``env_config`` is checked before Ray starts: (validate, normalize), where
#: validate raises PrivacyConfigError and normalize rewrites literal values (e.g. paths).
ENV_CONFIG_HOOKS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    INSTANCE_LAPLACE_ENV_ID: (validate_env_config, absolute_data_path),
}

#: gymnasium id of Acrobot-v1 with private per-environment link masses (PATE's harder task).
ACROBOT_MASS_ENV_ID = "rllib_privacy/AcrobotMass-v0"

#: gymnasium id of MountainCar-v0 with reward 1 at the goal and 0 elsewhere.
SPARSE_MOUNTAIN_CAR_ENV_ID = "rllib_privacy/SparseMountainCar-v0"

# A bad env_config would otherwise only fail inside an EnvRunner, deep in a Ray traceback.
ENV_CONFIG_HOOKS[CARTPOLE_GRAVITY_ENV_ID] = (validate_cartpole_gravity_env_config, lambda c: c)
ENV_CONFIG_HOOKS[ACROBOT_MASS_ENV_ID] = (validate_acrobot_mass_env_config, lambda c: c)
ENV_CONFIG_HOOKS[ATARI_RAM_ENV_ID] = (validate_atari_ram_env_config, lambda c: c)
ENV_CONFIG_HOOKS[ATARI_PIXELS_ENV_ID] = (validate_atari_pixels_env_config, lambda c: c)
ENV_CONFIG_HOOKS[TIME_LIMIT_AS_TERMINAL_ENV_ID] = (validate_time_limit_env_config, lambda c: c)

ENV_IDS: tuple[str, ...] = (
    CARTPOLE_GRAVITY_ENV_ID,
    ACROBOT_MASS_ENV_ID,
    INSTANCE_LAPLACE_ENV_ID,
    SPARSE_MOUNTAIN_CAR_ENV_ID,
)


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


def register_envs() -> None:
    """Registers this package's environments with gymnasium (idempotent)."""
    if CARTPOLE_GRAVITY_ENV_ID not in gym.registry:
        gym.register(
            id=CARTPOLE_GRAVITY_ENV_ID,
            entry_point="rllib_privacy.envs.cartpole_gravity:CartPoleGravityEnv",
            max_episode_steps=200,
            reward_threshold=195.0,
        )
    if ACROBOT_MASS_ENV_ID not in gym.registry:
        gym.register(
            id=ACROBOT_MASS_ENV_ID,
            entry_point="rllib_privacy.envs.acrobot_mass:AcrobotMassEnv",
            max_episode_steps=500,
            reward_threshold=-100.0,
        )
    if INSTANCE_LAPLACE_ENV_ID not in gym.registry:
        gym.register(
            id=INSTANCE_LAPLACE_ENV_ID,
            entry_point="rllib_privacy.envs.instance_laplace:InstanceWiseLaplaceEnv",
        )
    if SPARSE_MOUNTAIN_CAR_ENV_ID not in gym.registry:
        gym.register(
            id=SPARSE_MOUNTAIN_CAR_ENV_ID,
            entry_point="rllib_privacy.envs.sparse_mountain_car:SparseMountainCarEnv",
            max_episode_steps=200,
            reward_threshold=0.9,
        )
    register_ale_ram_envs()


__all__ = [
    "ACROBOT_MASS_ENV_ID",
    "AcrobotMassEnv",
    "make_acrobot_mass",
    "CARTPOLE_GRAVITY_ENV_ID",
    "ENV_CONFIG_HOOKS",
    "ENV_IDS",
    "INSTANCE_LAPLACE_ENV_ID",
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
