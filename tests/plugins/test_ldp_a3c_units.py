"""LDPA3C pieces that need no Ray: config checks, targets, schedule, buffer, FST."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.gradient_aggregator import GradientBuffer
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import exploration_alpha
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_learner import discounted_value_targets
from rllib_privacy.algorithms.ldp_a3c.score_tracker import ScoreTracker
from rllib_privacy.envs import CARTPOLE_GRAVITY_ENV_ID, PAPER_GRAVITY_CHOICES
from rllib_privacy.errors import PrivacyConfigError


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"privacy_mechanism": "gauss"}, "privacy_mechanism"),
        ({"privacy_epsilon": 0.0}, "privacy_epsilon"),
        ({"privacy_epsilon": -1.0}, "privacy_epsilon"),
        ({"privacy_epsilon": float("nan")}, "privacy_epsilon"),
        ({"privacy_mechanism": "none", "privacy_epsilon": 2.0}, "privacy_epsilon"),
        ({"privacy_clip": 0.0}, "privacy_clip"),
        ({"aggregator_max_buffer": 0}, "aggregator_max_buffer"),
        ({"agents_submissions_per_agent": 0}, "agents_submissions_per_agent"),
        ({"aggregator_submissions_per_iteration": 2.5}, "aggregator_submissions_per_iteration"),
        ({"privacy_reduced_dim": 3}, "privacy_reduced_dim"),  # laplace has no projection
        ({"privacy_debias": True}, "privacy_debias"),
        ({"agents_loss_reduction": "median"}, "agents_loss_reduction"),
        ({"agents_action_selection": "softmax"}, "agents_action_selection"),
        ({"aggregator_optimizer": "rmsprop"}, "aggregator_optimizer"),
        ({"agents_exploration_alpha": 1.5}, "agents_exploration_alpha"),
        ({"lr": 0.0}, "lr"),
        ({"gamma": 1.5}, "gamma"),
    ],
)
def test_bad_settings_name_the_key(settings: dict, key: str) -> None:
    config = LDPA3CConfig().update_from_dict(settings)
    with pytest.raises(PrivacyConfigError, match=f"'{key}'"):
        config.validate_ldp_settings()


def test_paper_defaults() -> None:
    config = LDPA3CConfig()
    config.validate_ldp_settings()
    assert (config.lr, config.gamma, config.vf_loss_coeff, config.entropy_coeff) == (
        0.5,
        0.99,
        0.5,
        0.01,
    )
    assert config.effective_clip == 0.01 and config.effective_max_buffer == 1
    # The paper sends the score in the clear: its gradient gets the whole ε.
    prs = LDPA3CConfig().privacy(
        privacy_mechanism="prs", privacy_epsilon=5.0, privacy_score_mechanism="public"
    )
    assert prs.effective_clip == 1.0 and prs.effective_max_buffer == 100
    assert prs.get_gradient_mechanism().reduced_dim_for(112) == 2
    # By default the score is private too and takes its share of ε.
    assert config.privacy_score_mechanism == "one_bit"


def test_multi_round_agents_split_epsilon() -> None:
    config = LDPA3CConfig().privacy(privacy_epsilon=6.0).agents(agents_submissions_per_agent=3)
    # Each of the 3 submissions spends 2.0: 80% on the gradient, 20% on the score.
    assert config.get_gradient_mechanism().epsilon_per_release == pytest.approx(1.6)
    score = config.get_score_mechanism()
    assert score is not None and score.epsilon == pytest.approx(0.4)


def test_infinite_epsilon_is_the_non_private_baseline() -> None:
    for name in ("laplace", "prs", "none"):
        config = LDPA3CConfig().privacy(privacy_mechanism=name, privacy_epsilon=math.inf)
        config.validate_ldp_settings()
        assert config.get_gradient_mechanism().name == "none"
        assert not config.is_private


def test_value_targets_match_the_definition() -> None:
    rng = np.random.default_rng(0)
    rewards, gamma, bootstrap = rng.normal(size=7), 0.9, 2.5
    expected = [
        sum(gamma ** (j - t) * rewards[j] for j in range(t, 7)) + gamma ** (7 - t) * bootstrap
        for t in range(7)
    ]
    got = discounted_value_targets(rewards, bootstrap_value=bootstrap, gamma=gamma)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_exploration_schedule_is_the_papers() -> None:
    for n in (0, 1, 450, 899, 900, 5000):
        assert exploration_alpha(n, initial=0.5, zero_at=900) == pytest.approx(
            max(0.0, 0.5 - n / 1800)
        )
    assert exploration_alpha(0, initial=0.0, zero_at=900) == 0.0


def test_buffer_applies_the_mean_when_full_and_round_trips() -> None:
    buffer = GradientBuffer(max_buffer=3, dim=2)
    assert buffer.add(np.array([1.0, 0.0], np.float32)) is None
    assert buffer.add(np.array([2.0, 3.0], np.float32)) is None
    restored = GradientBuffer(max_buffer=3, dim=2)
    restored.load_state_dict(buffer.state_dict())
    assert len(restored) == 2
    mean = restored.add(np.array([3.0, 6.0], np.float32))
    np.testing.assert_allclose(mean, [2.0, 3.0])
    assert len(restored) == 0
    with pytest.raises(ValueError, match="shape"):
        restored.add(np.zeros(3, np.float32))


def test_first_success_time_is_the_start_of_the_first_good_window() -> None:
    tracker = ScoreTracker(target=195.0)
    scores = [10.0] * 5 + [200.0] * 9 + [100.0] + [200.0] * 10
    for s in scores:
        tracker.add(s, int(s))
    # Windows starting at submissions 6.. contain the 100 until submission 16.
    assert tracker.fst == 16
    clone = ScoreTracker(target=195.0)
    clone.load_state_dict(tracker.state_dict())
    assert clone.state_dict() == tracker.state_dict()


def test_gravity_env_draws_from_the_private_set_and_can_pin() -> None:
    import rllib_privacy.envs as envs

    envs.register_envs()
    env = gym.make(CARTPOLE_GRAVITY_ENV_ID)
    assert env.spec.max_episode_steps == 200
    seen = set()
    for seed in range(40):
        env.reset(seed=seed)
        seen.add(env.unwrapped.gravity)
    assert seen == set(PAPER_GRAVITY_CHOICES)
    env.reset(options={"gravity": 9.9})
    assert env.unwrapped.gravity == 9.9
    with pytest.raises(PrivacyConfigError, match="gravity_choices"):
        gym.make(CARTPOLE_GRAVITY_ENV_ID, gravity_choices=[])
    with pytest.raises(PrivacyConfigError, match="gravity"):
        gym.make(CARTPOLE_GRAVITY_ENV_ID, gravty_choices=[9.8])


def test_update_from_dict_rejects_a_typo_with_a_suggestion() -> None:
    with pytest.raises(PrivacyConfigError, match="'epsilonn'.*did you mean 'privacy_epsilon'"):
        LDPA3CConfig().update_from_dict({"epsilonn": 5.0})
    config = LDPA3CConfig().update_from_dict(
        {"privacy_epsilon": 5.0, "privacy_mechanism": "prs", "lr": 0.1}
    )
    assert (config.privacy_epsilon, config.privacy_mechanism, config.lr) == (5.0, "prs", 0.1)
