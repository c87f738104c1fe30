"""Environments shipped with rllib_privacy, registered with gymnasium on import."""

from __future__ import annotations

import gymnasium as gym

from rllib_privacy.envs.atari_ram import ram_env_id, register_ale_ram_envs
from rllib_privacy.envs.cartpole_gravity import PAPER_GRAVITY_CHOICES, CartPoleGravityEnv
from rllib_privacy.envs.sparse_mountain_car import SparseMountainCarEnv, make_sparse_mountain_car

#: gymnasium id of CartPole-v0 dynamics (200-step limit) with private per-agent gravity.
CARTPOLE_GRAVITY_ENV_ID = "rllib_privacy/CartPoleGravity-v0"

#: gymnasium id of MountainCar-v0 with reward 1 at the goal and 0 elsewhere.
SPARSE_MOUNTAIN_CAR_ENV_ID = "rllib_privacy/SparseMountainCar-v0"

ENV_IDS: tuple[str, ...] = (CARTPOLE_GRAVITY_ENV_ID, SPARSE_MOUNTAIN_CAR_ENV_ID)


def make_cartpole_gravity(env_config: dict | None = None) -> gym.Env:
    """Env creator for Tune/RLlib: ``gym.make`` with the ``env_config`` keys as kwargs."""
    register_envs()
    return gym.make(CARTPOLE_GRAVITY_ENV_ID, **dict(env_config or {}))


def register_envs() -> None:
    """Registers this package's environments with gymnasium (idempotent)."""
    if CARTPOLE_GRAVITY_ENV_ID not in gym.registry:
        gym.register(
            id=CARTPOLE_GRAVITY_ENV_ID,
            entry_point="rllib_privacy.envs.cartpole_gravity:CartPoleGravityEnv",
            max_episode_steps=200,
            reward_threshold=195.0,
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
    "CARTPOLE_GRAVITY_ENV_ID",
    "ENV_IDS",
    "PAPER_GRAVITY_CHOICES",
    "SPARSE_MOUNTAIN_CAR_ENV_ID",
    "CartPoleGravityEnv",
    "SparseMountainCarEnv",
    "make_sparse_mountain_car",
    "make_cartpole_gravity",
    "ram_env_id",
    "register_ale_ram_envs",
    "register_envs",
]
