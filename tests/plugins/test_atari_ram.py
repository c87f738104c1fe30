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


def _run(env: gym.vector.VectorEnv, actions: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    obs, _ = env.reset(seed=11)
    steps = [(obs,)]
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        steps.append((obs, reward, terminated, truncated))
    return steps


def test_vector_entry_point_replays_the_sync_vector_env_exactly() -> None:
    register_ale_ram_envs()
    kwargs = {"num_envs": 3, "frameskip": [2, 5], "max_num_frames_per_episode": 120}
    native = gym.make_vec("ALE/AirRaid-ram-v5", vectorization_mode="vector_entry_point", **kwargs)
    reference = gym.make_vec("ALE/AirRaid-ram-v5", vectorization_mode="sync", **kwargs)
    assert type(native).__name__ == "AtariRamVectorEnv"
    assert native.single_observation_space == reference.single_observation_space
    assert native.single_action_space == reference.single_action_space
    actions = np.random.default_rng(0).integers(0, 6, size=(150, 3))
    ours, theirs = _run(native, actions), _run(reference, actions)
    # 120 frames end every episode within 60 steps: autoresets (NEXT_STEP) are covered.
    assert sum(int(step[3].sum()) for step in ours[1:]) >= 3
    for mine, other in zip(ours, theirs, strict=True):
        for a, b in zip(mine, other, strict=True):
            np.testing.assert_array_equal(a, b)
    native.close()
    reference.close()


def test_vector_env_truncates_at_max_episode_steps_and_resets_on_the_next_step() -> None:
    from rllib_privacy.envs.atari_ram import AtariRamVectorEnv

    env = AtariRamVectorEnv(2, max_episode_steps=4, game="air_raid")
    env.reset(seed=0)
    flags = [env.step(np.zeros(2, dtype=np.int64))[3].tolist() for _ in range(6)]
    assert flags == [[False, False]] * 3 + [[True, True], [False, False], [False, False]]
    with pytest.raises(ValueError, match="num_envs"):
        AtariRamVectorEnv(0, game="air_raid")
    env.close()


@pytest.mark.slow
def test_a_worker_that_imports_an_algorithm_first_has_the_ram_ids() -> None:
    # A Ray worker unpickling KickstartPPO imports rllib_privacy before gymnasium; the
    # 'rllib_privacy:ALE/...' env then found no ALE namespace in that worker.
    import subprocess
    import sys

    code = (
        "import rllib_privacy.algorithms.kickstart_ppo.kickstart_ppo\n"
        "import gymnasium as gym\n"
        "env = gym.make_vec('rllib_privacy:ALE/AirRaid-ram-v5', num_envs=2,"
        " vectorization_mode='vector_entry_point')\n"
        "print(type(env).__name__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "AtariRamVectorEnv"
