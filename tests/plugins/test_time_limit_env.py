"""rllib_privacy/TimeLimitAsTerminal-v0: a time limit that is part of the task."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import yaml

from rllib_privacy.envs import (
    TIME_LIMIT_AS_TERMINAL_ENV_ID,
    TimeLimitAsTerminal,
    make_time_limit_as_terminal,
)
from rllib_privacy.envs.time_limit import TIME_LIMIT_INFO_KEY, validate_time_limit_env_config
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.experiments import ExperimentFileError, normalize_experiments

FROZENLAKE_8X8 = {"env_id": "FrozenLake-v1", "map_name": "8x8", "is_slippery": False}
LEFT, DOWN, RIGHT = 0, 1, 2


def test_reaching_the_limit_is_terminal_not_truncated() -> None:
    env = make_time_limit_as_terminal({**FROZENLAKE_8X8, "max_episode_steps": 3})
    env.reset(seed=0)
    # Walking into the west wall keeps the agent on the start cell until the limit.
    flags = [env.step(LEFT)[2:] for _ in range(3)]
    assert [(terminated, truncated) for terminated, truncated, _ in flags] == [
        (False, False),
        (False, False),
        (True, False),
    ]
    assert [TIME_LIMIT_INFO_KEY in info for _, _, info in flags] == [False, False, True]


def test_a_real_termination_is_unchanged_and_not_marked() -> None:
    # 4x4 map: start (0, 0), hole at (1, 1): down then right falls in on step 2 of 100.
    env = make_time_limit_as_terminal({"env_id": "FrozenLake-v1", "is_slippery": False})
    env.reset(seed=0)
    assert env.step(DOWN)[2:4] == (False, False)
    _, reward, terminated, truncated, info = env.step(RIGHT)
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert TIME_LIMIT_INFO_KEY not in info


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_observations_and_rewards_equal_the_wrapped_env(seed: int) -> None:
    kwargs = {"map_name": "8x8", "is_slippery": True, "max_episode_steps": 20}
    plain = gym.make("FrozenLake-v1", **kwargs)
    wrapped = make_time_limit_as_terminal({"env_id": "FrozenLake-v1", **kwargs})
    actions = np.random.default_rng(seed).integers(0, 4, size=400)
    assert plain.reset(seed=seed)[0] == wrapped.reset(seed=seed)[0]
    limits = 0
    for action in actions:
        obs_p, rew_p, term_p, trunc_p, _ = plain.step(int(action))
        obs_w, rew_w, term_w, trunc_w, _ = wrapped.step(int(action))
        assert (obs_p, rew_p) == (obs_w, rew_w)
        assert term_w == (term_p or trunc_p) and trunc_w is False
        limits += trunc_p and not term_p
        if term_w:
            assert plain.reset(seed=seed)[0] == wrapped.reset(seed=seed)[0]
    assert limits > 0  # the sequence did hit the limit


def test_spaces_are_the_wrapped_envs() -> None:
    env = make_time_limit_as_terminal({**FROZENLAKE_8X8, "max_episode_steps": 14})
    assert isinstance(env, TimeLimitAsTerminal)
    assert env.observation_space == gym.spaces.Discrete(64)
    assert env.action_space == gym.spaces.Discrete(4)
    assert env.spec is not None and env.spec.max_episode_steps == 14


def test_the_id_s_registered_limit_is_used_when_none_is_given() -> None:
    # FrozenLake-v1 registers 100 steps.
    env = make_time_limit_as_terminal({"env_id": "FrozenLake-v1", "is_slippery": False})
    env.reset(seed=0)
    ends = [env.step(LEFT)[2] for _ in range(100)]
    assert ends == [False] * 99 + [True]


def _experiment(env_config: Any) -> dict[str, Any]:
    return {
        "run": "ExplorationPPO",
        "env": TIME_LIMIT_AS_TERMINAL_ENV_ID,
        "stop": {"training_iteration": 1},
        "config": {"env_config": env_config},
    }


@pytest.mark.parametrize(
    ("env_config", "named", "allowed"),
    [
        ({"env_d": "FrozenLake-v1"}, "env_id", "did you mean 'env_id'"),
        ({"env_id": 3}, "env_id", "must name the gymnasium env"),
        ({"env_id": "FrozenLak-v1"}, "env_id", "not a registered gymnasium id"),
        ({"env_id": TIME_LIMIT_AS_TERMINAL_ENV_ID}, "env_id", "itself"),
        ({"env_id": "FrozenLake-v1", "max_episode_steps": 0}, "max_episode_steps", "positive"),
        ({"env_id": "FrozenLake-v1", "max_episode_steps": True}, "max_episode_steps", "positive"),
        ({"env_id": "FrozenLake-v1", "max_episode_steps": "14"}, "max_episode_steps", "positive"),
        ({"env_id": "FrozenLake-v1", "is_slipery": False}, "is_slipery", "is_slippery"),
        (
            {"env_id": "rllib_privacy/CartPoleGravity-v0", "gravity_choice": [9.8]},
            "gravity_choice",
            "gravity_choices",
        ),
        (
            {"env_id": "rllib_privacy/InstanceWiseLaplace-v0"},
            "max_episode_steps",
            "registers no time limit",
        ),
        (["FrozenLake-v1"], "env_config", "mapping"),
    ],
)
def test_bad_env_config_is_named_before_ray_starts(
    env_config: Any, named: str, allowed: str
) -> None:
    with pytest.raises(ExperimentFileError, match=named) as info:
        normalize_experiments({"exp": _experiment(copy.deepcopy(env_config))}, path="x.yaml")
    assert allowed in str(info.value)
    with pytest.raises(PrivacyConfigError, match=named):
        validate_time_limit_env_config(env_config)


def test_the_creator_checks_its_env_config_too() -> None:
    with pytest.raises(PrivacyConfigError, match="is_slipery"):
        make_time_limit_as_terminal({"env_id": "FrozenLake-v1", "is_slipery": False})


def test_shipped_frozenlake_yaml_uses_the_wrapper_and_validates() -> None:
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "tuned_configs" / "simhash_ppo_frozenlake.yaml"
    experiments = yaml.safe_load(path.read_text())
    (spec,) = experiments.values()
    assert spec["env"] == TIME_LIMIT_AS_TERMINAL_ENV_ID
    assert spec["config"]["env_config"]["env_id"] == "FrozenLake-v1"
    assert spec["config"]["env_config"]["max_episode_steps"] == 14
    normalize_experiments(experiments, path=str(path))


@pytest.mark.ray
def test_env_runner_episodes_at_the_limit_are_terminated(ray_session) -> None:
    from rllib_privacy.algorithms.count_exploration import ExplorationPPOConfig

    config = (
        ExplorationPPOConfig()
        .environment(
            TIME_LIMIT_AS_TERMINAL_ENV_ID,
            env_config={**FROZENLAKE_8X8, "max_episode_steps": 5},
        )
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
        .count_based_exploration(flatten_observations=True, count_exploration={"hash": "simhash"})
    )
    algo = config.build_algo()
    try:
        episodes = algo.env_runner.sample(num_episodes=20, random_actions=True)
    finally:
        algo.stop()
    assert len(episodes) >= 20
    at_limit = [e for e in episodes if len(e) == 5 and not e.get_rewards()[-1]]
    assert at_limit, "random walks of 5 steps on the 8x8 map should often hit the limit"
    for episode in episodes:
        assert episode.is_terminated and not episode.is_truncated
