"""The ``ALE/<Game>-ram-v5`` aliases that rllib_privacy registers for ale-py's games."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rllib_privacy.envs import ram_env_id, register_ale_ram_envs


def test_ram_alias_gives_the_128_ram_bytes_scaled_to_unit_floats() -> None:
    assert "ALE/AirRaid-ram-v5" in register_ale_ram_envs()
    env = gym.make("ALE/AirRaid-ram-v5")
    raw = gym.make("ALE/AirRaid-v5", obs_type="ram")
    obs, _ = env.reset(seed=0)
    raw_obs, _ = raw.reset(seed=0)
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (128,), np.float32)
    assert obs.shape == (128,) and obs.dtype == np.float32
    np.testing.assert_array_equal(np.round(obs * 255).astype(np.uint8), raw_obs)
    assert env.action_space == raw.action_space
    for _ in range(20):
        obs, *_ = env.step(1)
        raw_obs, *_ = raw.step(1)
    np.testing.assert_array_equal(np.round(obs * 255).astype(np.uint8), raw_obs)
    env.close()
    raw.close()


def test_ram_env_id_rejects_non_v5_ids() -> None:
    assert ram_env_id("ALE/Pong-v5") == "ALE/Pong-ram-v5"
    with pytest.raises(ValueError, match="ALE/<Game>-v5"):
        ram_env_id("CartPole-v1")
