"""MountainCar-v0 with a sparse reward: 1 on reaching the goal, 0 on every other step.

The sparse-reward adaptation of Houthooft et al. (2016) used by Tang et al. (2017) §3.1:
nothing tells the agent it is getting closer, so an undirected policy almost never
sees a reward. The dynamics and the discrete actions are gymnasium's MountainCar-v0.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.mountain_car import MountainCarEnv

from rllib_privacy.envs.registry import SPARSE_MOUNTAIN_CAR_ENV_ID, register_envs


class SparseMountainCarEnv(MountainCarEnv):
    """MountainCarEnv whose reward is 1.0 at the goal (termination) and 0.0 otherwise.

    Args:
        normalize: Scale (position, velocity) affinely from their bounds to [−1, 1]. The
            velocity is at most 0.07, so without scaling a small policy network barely
            sees it, and pushing along the velocity is what climbs the hill.
        **kwargs: Passed to MountainCarEnv (``render_mode``, ``goal_velocity``).

    """

    def __init__(self, *, normalize: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.normalize = bool(normalize)
        self._raw_low, self._raw_high = self.low.copy(), self.high.copy()
        if self.normalize:
            self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)

    def _scale(self, obs: np.ndarray) -> np.ndarray:
        if not self.normalize:
            return obs
        scaled = 2.0 * (obs - self._raw_low) / (self._raw_high - self._raw_low) - 1.0
        return scaled.astype(np.float32)

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict]:
        """MountainCar's reset (scaled when ``normalize``)."""
        obs, info = super().reset(**kwargs)
        return self._scale(obs), info

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        """MountainCar's step with the reward replaced by the goal indicator."""
        obs, _, terminated, truncated, info = super().step(action)
        return self._scale(obs), 1.0 if terminated else 0.0, terminated, truncated, info


def make_sparse_mountain_car(env_config: dict | None = None) -> gym.Env:
    """Env creator for Tune: ``env_config`` keys are ``gym.make`` kwargs.

    E.g. ``max_episode_steps`` (default 200, as MountainCar-v0) and ``normalize``.
    """
    register_envs()
    return gym.make(SPARSE_MOUNTAIN_CAR_ENV_ID, **dict(env_config or {}))
