"""Pixel Atari games as small grey frame stacks (for BASS and conv autoencoder hashes).

``rllib_privacy/AtariPixels-v0`` makes ``env_config["game"]`` (an ``ALE/<Game>-v5`` id,
default Frostbite, one of the paper's BASS games) with ALE's grey-scale screen and its
default frame skip of 4, halves both sides by 2×2 mean pooling (210×160 → 105×80) and
stacks the last ``framestack`` frames on the channel axis: ``uint8`` (105, 80, k).
Numpy only: RLlib's own Atari wrappers need OpenCV, which this package does not require.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

ATARI_PIXELS_ENV_ID = "rllib_privacy/AtariPixels-v0"
_KEYS = ("game", "framestack")


class GreyFrameStack(gym.ObservationWrapper):
    """2×2-pooled grey frames, the last ``framestack`` of them stacked channels-last."""

    def __init__(self, env: gym.Env, framestack: int = 4) -> None:
        super().__init__(env)
        h, w = env.observation_space.shape[:2]
        self.framestack = int(framestack)
        self._frames: deque[np.ndarray] = deque(maxlen=self.framestack)
        self.observation_space = gym.spaces.Box(
            0, 255, (h // 2, w // 2, self.framestack), dtype=np.uint8
        )

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict]:
        """Resets and fills the stack with the first frame."""
        obs, info = self.env.reset(**kwargs)
        frame = self._pool(obs)
        for _ in range(self.framestack):
            self._frames.append(frame)
        return np.stack(self._frames, axis=-1), info

    def observation(self, observation: np.ndarray) -> np.ndarray:
        """Pushes the new pooled frame and returns the stack."""
        self._frames.append(self._pool(observation))
        return np.stack(self._frames, axis=-1)

    @staticmethod
    def _pool(frame: np.ndarray) -> np.ndarray:
        h, w = frame.shape[0] // 2 * 2, frame.shape[1] // 2 * 2
        pooled = frame[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
        return pooled.astype(np.uint8)


def make_atari_pixels(env_config: dict[str, Any] | None = None) -> gym.Env:
    """Env creator for Tune (``env_config``: ``game``, ``framestack`` = 4)."""
    import ale_py

    config = dict(env_config or {})
    unknown = sorted(set(config) - set(_KEYS))
    if unknown:
        raise ValueError(f"env_config keys {unknown} are not known; allowed: {list(_KEYS)}")
    gym.register_envs(ale_py)
    env = gym.make(str(config.get("game", "ALE/Frostbite-v5")), obs_type="grayscale")
    return GreyFrameStack(env, framestack=int(config.get("framestack", 4)))
