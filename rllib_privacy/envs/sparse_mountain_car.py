"""MountainCar-v0 with a sparse reward: 1 on reaching the goal, 0 on every other step.

The sparse-reward adaptation of Houthooft et al. (2016) used by Tang et al. (2017) §3.1:
nothing tells the agent it is getting closer, so an undirected policy almost never
sees a reward. The dynamics and the discrete actions are gymnasium's MountainCar-v0.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.envs.classic_control.mountain_car import MountainCarEnv


class SparseMountainCarEnv(MountainCarEnv):
    """MountainCarEnv whose reward is 1.0 at the goal (termination) and 0.0 otherwise."""

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        """MountainCar's step with the reward replaced by the goal indicator."""
        obs, _, terminated, truncated, info = super().step(action)
        return obs, 1.0 if terminated else 0.0, terminated, truncated, info


def make_sparse_mountain_car(env_config: dict | None = None) -> gym.Env:
    """Env creator for Tune: ``env_config`` keys are ``gym.make`` kwargs.

    E.g. ``max_episode_steps`` (default 200, as MountainCar-v0).
    """
    from rllib_privacy.envs import SPARSE_MOUNTAIN_CAR_ENV_ID, register_envs

    register_envs()
    return gym.make(SPARSE_MOUNTAIN_CAR_ENV_ID, **dict(env_config or {}))
