"""The ``ALE/<Game>-ram-v5`` aliases that rllib_privacy registers for ale-py's games."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rllib_privacy.envs import ram_env_id, register_ale_ram_envs


def test_ram_alias_gives_the_128_byte_ram_observation() -> None:
    assert "ALE/AirRaid-ram-v5" in register_ale_ram_envs()
    env = gym.make("ALE/AirRaid-ram-v5")
    obs, _ = env.reset(seed=0)
    assert env.observation_space == gym.spaces.Box(0, 255, (128,), np.uint8)
    assert obs.shape == (128,) and obs.dtype == np.uint8
    assert env.action_space == gym.make("ALE/AirRaid-v5").action_space
    env.close()


def test_ram_env_id_rejects_non_v5_ids() -> None:
    assert ram_env_id("ALE/Pong-v5") == "ALE/Pong-ram-v5"
    with pytest.raises(ValueError, match="ALE/<Game>-v5"):
        ram_env_id("CartPole-v1")
