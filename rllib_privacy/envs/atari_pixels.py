"""Atari games as float observations that RLlib's default torch modules accept.

RLlib 2.60's default encoders do not cast ``uint8`` observations, and its own Atari
wrappers need OpenCV (not a dependency here), so:

* ``rllib_privacy/AtariPixels-v0`` makes ``env_config["game"]`` (an ``ALE/<Game>-v5`` id,
  default Frostbite, one of the paper's BASS games) with ALE's grey-scale screen and its
  default frame skip of 4, halves both sides by 2×2 mean pooling (210×160 → 105×80) and
  stacks the last ``framestack`` frames on the channel axis: float32 (105, 80, k) in [0, 1].
* ``rllib_privacy/AtariRam-v0`` makes the game's 128-byte RAM observation float32,
  rescaled to [−1, 1] as in Tang et al. (2017, appendix A.1), or kept as byte values
  0..255 with ``scale: false`` (for key functions that read RAM bytes).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

from rllib_privacy.envs.cartpole_gravity import check_env_config
from rllib_privacy.errors import PrivacyConfigError

ATARI_PIXELS_ENV_ID = "rllib_privacy/AtariPixels-v0"
ATARI_RAM_ENV_ID = "rllib_privacy/AtariRam-v0"
_KEYS = ("game", "framestack")
_RAM_KEYS = ("game", "scale")


def _check_keys(config: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(config) - set(allowed))
    if unknown:
        raise ValueError(f"env_config keys {unknown} are not known; allowed: {list(allowed)}")


class FloatRam(gym.ObservationWrapper):
    """RAM bytes as float32, rescaled to [−1, 1] (``scale``) or kept as 0..255."""

    def __init__(self, env: gym.Env, scale: bool = True) -> None:
        super().__init__(env)
        self.scale = bool(scale)
        low, high = (-1.0, 1.0) if self.scale else (0.0, 255.0)
        self.observation_space = gym.spaces.Box(low, high, env.observation_space.shape, np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        """The RAM as float32."""
        ram = np.asarray(observation, dtype=np.float32)
        return ram / 127.5 - 1.0 if self.scale else ram


def make_atari_ram(env_config: dict[str, Any] | None = None) -> gym.Env:
    """Env creator for Tune (``env_config``: ``game`` = ALE/Freeway-v5, ``scale`` = true)."""
    import ale_py

    config = dict(env_config or {})
    _check_keys(config, _RAM_KEYS)
    gym.register_envs(ale_py)
    env = gym.make(str(config.get("game", "ALE/Freeway-v5")), obs_type="ram")
    return FloatRam(env, scale=bool(config.get("scale", True)))


class GreyFrameStack(gym.ObservationWrapper):
    """2×2-pooled grey frames, the last ``framestack`` of them stacked channels-last."""

    def __init__(self, env: gym.Env, framestack: int = 4) -> None:
        super().__init__(env)
        assert env.observation_space.shape is not None  # ALE's RGB frames: a Box
        h, w = env.observation_space.shape[:2]
        self.framestack = int(framestack)
        self._frames: deque[np.ndarray] = deque(maxlen=self.framestack)
        self.observation_space = gym.spaces.Box(
            0.0, 1.0, (h // 2, w // 2, self.framestack), dtype=np.float32
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
        return (pooled / 255.0).astype(np.float32)


def make_atari_pixels(env_config: dict[str, Any] | None = None) -> gym.Env:
    """Env creator for Tune (``env_config``: ``game``, ``framestack`` = 4)."""
    import ale_py

    config = dict(env_config or {})
    _check_keys(config, _KEYS)
    gym.register_envs(ale_py)
    env = gym.make(str(config.get("game", "ALE/Frostbite-v5")), obs_type="grayscale")
    return GreyFrameStack(env, framestack=int(config.get("framestack", 4)))


def _check_game(game: Any) -> None:
    import ale_py

    gym.register_envs(ale_py)
    if not (isinstance(game, str) and game in gym.registry):
        raise PrivacyConfigError(
            f"env_config key 'game' must be an ALE id such as 'ALE/Freeway-v5', got {game!r}"
        )


def _check_scale(scale: Any) -> None:
    if not isinstance(scale, bool):
        raise PrivacyConfigError(f"env_config key 'scale' must be true or false, got {scale!r}")


def _check_framestack(framestack: Any) -> None:
    if isinstance(framestack, bool) or not isinstance(framestack, int) or framestack < 1:
        raise PrivacyConfigError(
            f"env_config key 'framestack' must be an integer >= 1, got {framestack!r}"
        )


def validate_atari_ram_env_config(env_config: Any) -> Any:
    """The ``ENV_CONFIG_HOOKS`` check of AtariRam (run before Ray starts)."""
    return check_env_config(
        "AtariRam", env_config, {"game": _check_game, "scale": _check_scale}, extra=()
    )


def validate_atari_pixels_env_config(env_config: Any) -> Any:
    """The ``ENV_CONFIG_HOOKS`` check of AtariPixels (run before Ray starts)."""
    return check_env_config(
        "AtariPixels", env_config, {"game": _check_game, "framestack": _check_framestack}, extra=()
    )
