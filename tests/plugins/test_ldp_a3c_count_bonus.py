"""LDPA3C's per-agent count bonus (``count_exploration``), without starting Ray."""

from __future__ import annotations

import collections
import math
from typing import Any

import numpy as np
import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns

from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import (
    LDPA3CEnvRunner,
    _LocalAgent,
    _Trajectory,
)
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_learner import VALUE_TARGETS
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.exploration import PAPER_PRIMES, CountMinSketch, ExactCounter, SimHash

BETA = 0.5
NUM_BITS = 16


def _config(scope: str = "agent", **training: Any) -> LDPA3CConfig:
    return (
        LDPA3CConfig()
        .env_runners(num_env_runners=0)
        .training(mechanism="none", epsilon=math.inf, **training)
        .count_based_exploration(
            count_exploration={"num_bits": NUM_BITS, "beta": BETA},
            count_exploration_scope=scope,
        )
        .debugging(seed=3)
    )


@pytest.fixture(scope="module")
def agent_runner():
    runner = LDPA3CEnvRunner(config=_config("agent"))
    yield runner
    runner.stop()


@pytest.fixture(scope="module")
def shared_runner():
    runner = LDPA3CEnvRunner(config=_config("env_runner"))
    yield runner
    runner.stop()


def _trajectory(states: np.ndarray) -> _Trajectory:
    return _Trajectory(
        obs=[s.astype(np.float32) for s in states],
        actions=[i % 2 for i in range(len(states))],
        rewards=[1.0] * len(states),
        last_obs=states[-1].astype(np.float32),
        terminated=True,
        done=True,
    )


def _expected_bonus(*episodes: np.ndarray) -> np.ndarray:
    """β/√n of the last episode's states, counting every given episode (independently)."""
    hasher = SimHash(4, NUM_BITS, seed=0)
    counts: collections.Counter = collections.Counter()
    for states in episodes:
        counts.update(tuple(code) for code in hasher.codes(states))
    last = hasher.codes(episodes[-1])
    return np.array([BETA / math.sqrt(counts[tuple(code)]) for code in last])


def _states(seed: int, distinct: int, repeats: int) -> np.ndarray:
    """``distinct`` random CartPole-like states, each visited ``repeats`` times."""
    base = np.random.default_rng(seed).normal(0.0, 1.0, (distinct, 4))
    return np.repeat(base, repeats, axis=0)


@pytest.mark.parametrize(
    ("method_kwargs", "key"),
    [
        ({"count_exploration_scope": "global"}, "count_exploration_scope"),
        ({"count_exploration": {"betaa": 0.1}}, "beta"),
        ({"count_exploration": {"beta": -1.0}}, "count_exploration_config.beta"),
        ({"count_exploration": {"hash": "autoencoder"}}, "autoencoder"),
        ({"count_exploration": {"counter": "bloom"}}, "count_exploration_config.counter"),
    ],
)
def test_bad_count_exploration_settings_name_the_key(method_kwargs: dict, key: str) -> None:
    config = LDPA3CConfig().count_based_exploration(**method_kwargs)
    with pytest.raises(PrivacyConfigError, match=key):
        config.validate_ldp_settings()


def test_count_exploration_is_off_by_default_and_not_a_dict_is_rejected() -> None:
    config = LDPA3CConfig()
    assert config.count_exploration_config is None and config.get_exploration_spec() is None
    assert config.count_exploration_scope == "agent"
    config.update_from_dict({"count_exploration": "simhash"})
    with pytest.raises(PrivacyConfigError, match="'count_exploration_config' must be a dict"):
        config.validate_ldp_settings()


def test_yaml_keys_reach_the_config_and_nested_typos_fail_before_ray(tmp_path) -> None:
    from rllib_privacy.experiments import load_experiments

    good = tmp_path / "good.yaml"
    good.write_text(
        "soak:\n  run: LDPA3C\n  stop: {training_iteration: 1}\n  config:\n"
        "    count_exploration: {num_bits: 8, counter: count_min}\n"
        "    count_exploration_scope: env_runner\n"
    )
    space = load_experiments(good, has_gpus=False).experiments[0].param_space
    config = LDPA3CConfig().update_from_dict(
        {k: v for k, v in space.items() if k.startswith("count")}
    )
    spec = config.get_exploration_spec()
    assert (spec.num_bits, spec.counter) == (8, "count_min")
    assert config.count_exploration_scope == "env_runner"
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("num_bits", "num_bitz"))
    with pytest.raises(Exception, match="num_bitz") as info:
        load_experiments(bad, has_gpus=False)
    assert "ray" not in type(info.value).__module__


def test_bonus_is_beta_over_sqrt_of_the_agents_own_counts(agent_runner) -> None:
    states = _states(seed=0, distinct=5, repeats=3)
    rewards = agent_runner._trained_rewards(_LocalAgent("a"), _trajectory(states))
    np.testing.assert_allclose(rewards, 1.0 + _expected_bonus(states))
    # Three visits of each of (at most) five codes: every bonus is at most β/√3.
    assert np.all(rewards - 1.0 <= BETA / math.sqrt(3) + 1e-12)


def test_agent_scope_isolates_agents_and_keeps_a_multi_round_agents_table(
    agent_runner,
) -> None:
    first, second = _states(seed=1, distinct=4, repeats=2), _states(seed=1, distinct=4, repeats=1)
    agent_runner._trained_rewards(_LocalAgent("a"), _trajectory(first))
    fresh = _LocalAgent("b")
    # Agent b's bonus does not depend on agent a having visited the same states.
    bonus_b = agent_runner._trained_rewards(fresh, _trajectory(second)) - 1.0
    np.testing.assert_allclose(bonus_b, _expected_bonus(second))
    # Agent b's own next submission continues its own table.
    again = agent_runner._trained_rewards(fresh, _trajectory(second)) - 1.0
    np.testing.assert_allclose(again, _expected_bonus(second, second))


def test_env_runner_scope_shares_the_table_across_agents(shared_runner) -> None:
    first, second = _states(seed=2, distinct=4, repeats=2), _states(seed=2, distinct=4, repeats=1)
    shared_runner._trained_rewards(_LocalAgent("a"), _trajectory(first))
    bonus_b = shared_runner._trained_rewards(_LocalAgent("b"), _trajectory(second)) - 1.0
    # The documented leak: b's bonus counts a's visits.
    np.testing.assert_allclose(bonus_b, _expected_bonus(first, second))
    assert not np.allclose(bonus_b, _expected_bonus(second))
    stats = shared_runner.count_exploration_stats()
    assert stats["scope"] == "env_runner" and stats["tables"] == 1
    assert stats["counted_states"] == len(first) + len(second)


def test_gradient_is_computed_on_the_rewards_with_bonus(agent_runner) -> None:
    learner = agent_runner._learner()
    module = learner.module[DEFAULT_MODULE_ID]
    states = _states(seed=4, distinct=3, repeats=4)
    trajectory = _trajectory(states)
    released = agent_runner._submission(learner, module, _LocalAgent("g"), trajectory, 0)
    assert released.score == len(states)  # the public score stays the extrinsic return

    def gradient(rewards: np.ndarray) -> np.ndarray:
        targets = agent_runner._value_targets(
            module, rewards, last_obs=trajectory.last_obs, terminated=True
        )
        batch = {
            Columns.OBS: torch.as_tensor(states, dtype=torch.float32),
            Columns.ACTIONS: torch.as_tensor(trajectory.actions, dtype=torch.int64),
            VALUE_TARGETS: targets,
        }
        return agent_runner._privatized_submission(
            learner,
            module,
            _LocalAgent("ref"),
            {DEFAULT_MODULE_ID: batch},
            score=0.0,
            env_steps=0,
            weights_version=0,
        ).gradient

    with_bonus = gradient(1.0 + _expected_bonus(states))
    np.testing.assert_allclose(released.gradient, with_bonus, rtol=1e-5, atol=1e-7)
    assert not np.allclose(released.gradient, gradient(np.ones(len(states))), atol=1e-6)


def test_runner_counts_its_releases(agent_runner) -> None:
    before = agent_runner.count_exploration_stats()["releases"]
    weights = np.random.default_rng(0).normal(0.0, 0.3, 112).astype(np.float32)
    out = agent_runner.submit_gradients(
        weights=weights, weights_version=1, submissions_so_far=0, num_submissions=3
    )
    stats = agent_runner.count_exploration_stats()
    assert stats["releases"] - before == len(out) == 3
    # One environment: one live per-agent table, holding only the last agent's episode.
    assert stats["tables"] == 1 and stats["counted_states"] == out[-1].env_steps
    assert all(s.score == s.env_steps for s in out)


def test_counter_nbytes_grow_for_exact_and_stay_fixed_for_count_min() -> None:
    rng = np.random.default_rng(0)
    exact, sketch = ExactCounter(), CountMinSketch()
    sizes = []
    for _ in range(3):
        codes = np.where(rng.random((1000, 64)) < 0.5, -1, 1).astype(np.int8)
        exact.increment_and_count(codes)
        sketch.increment_and_count(codes)
        sizes.append((exact.nbytes, sketch.nbytes))
    assert [e for e, _ in sizes] == [16 * exact_n for exact_n in (1000, 2000, 3000)]
    assert len({s for _, s in sizes}) == 1 and sizes[0][1] >= 8 * sum(PAPER_PRIMES)
