"""LDPA3C end to end on a local Ray instance: payload, checkpoints, learning."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

from rllib_privacy.algorithms.ldp_a3c import LDPA3C, GradientSubmission, LDPA3CConfig

pytestmark = pytest.mark.ray

PAPER_DIM = 4 * 16 + 16 * 2 + 16 * 1  # the paper's d = 112


class RecordingLDPA3C(LDPA3C):
    """LDPA3C that keeps everything the aggregator receives, as received."""

    received: list[Any]

    def _receive(self, submissions: list[Any]) -> None:
        self.__dict__.setdefault("received", []).extend(submissions)
        super()._receive(submissions)


def _config(**training: Any) -> LDPA3CConfig:
    return (
        LDPA3CConfig(algo_class=RecordingLDPA3C)
        .env_runners(num_env_runners=2)
        .training(submissions_per_iteration=20, **training)
    )


def test_aggregator_receives_only_noisy_gradients_and_scalars(ray_session) -> None:
    algo = _config(mechanism="laplace", epsilon=1.0).build_algo()
    try:
        result = algo.train()
        received = algo.received
        assert len(received) >= 20
        fields = {"agent_id", "gradient", "epsilon", "mechanism", "score", "env_steps"}
        fields |= {"score_mechanism", "score_epsilon"}
        for item in received:
            assert type(item) is GradientSubmission
            assert set(vars(item)) == fields | {"weights_version", "agent_sequence"}
            assert item.gradient.shape == (PAPER_DIM,) and item.gradient.dtype == np.float32
            assert item.mechanism == "laplace" and item.score_mechanism == "one_bit"
            # ε = 1 per agent for everything it sends: 0.8 gradient, 0.2 score.
            assert item.epsilon + item.score_epsilon == pytest.approx(1.0)
            # The score is one private bit; the episode length is not sent.
            assert item.score in (0.0, 1.0) and item.env_steps == 0
        # Every submission is a fresh agent; the run's LDP guarantee is ε per agent.
        assert len({item.agent_id for item in received}) == len(received)
        assert result["epsilon_per_agent"] == pytest.approx(1.0)
        assert result["privacy"]["releases"] == 2 * len(received)  # gradient and score
        # Laplace noise of scale C/ε = 0.01 dominates a gradient clipped to L1 <= 0.005.
        l1 = np.array([np.abs(item.gradient).sum() for item in received])
        assert l1.mean() > 0.5 * PAPER_DIM * 0.01
        assert list(result)[:3] == ["score_mean", "epsilon_per_agent", "submissions"]
        assert result["timesteps_total"] == result["num_env_steps_sampled_lifetime"]
    finally:
        algo.stop()


@pytest.mark.slow
def test_checkpoint_restores_ledger_buffer_scores_and_weights(ray_session, tmp_path) -> None:
    # Remote EnvRunners: restoring then also syncs their state (RLlib reads the
    # lifetime env-step counter there).
    config = _config(mechanism="prs", epsilon=2.0, max_buffer=7)
    algo = config.build_algo()
    try:
        algo.train()
        algo.train()
        saved_state = algo.get_state()["ldp_a3c_aggregator"]
        saved_submissions = algo._scores.submissions
        weights = algo._weights.copy()
        algo.save_to_path(str(tmp_path))
    finally:
        algo.stop()
    assert saved_submissions >= 40
    restored = config.build_algo()
    try:
        restored.restore_from_path(str(tmp_path))
        state = restored.get_state()["ldp_a3c_aggregator"]
        # Everything but the journal position (the restored run writes its own journal).
        assert state.pop("journal") != saved_state.pop("journal")
        assert state == saved_state
        assert restored._ledger.releases == 2 * saved_submissions  # gradient and score
        assert len(restored._buffer) == saved_submissions % 7
        np.testing.assert_array_equal(restored._weights, weights)
        result = restored.train()
        # The spent budget and the submission count continue; they never reset.
        assert result["submissions"] >= saved_submissions + 20
        assert result["privacy"]["releases"] == 2 * result["submissions"]
        assert result["epsilon_per_agent"] == pytest.approx(2.0)
        # Estimated from the debiased scores: the count never goes down.
        counted = state["scores"]["env_steps_counted"]
        assert result["num_env_steps_sampled_lifetime"] >= counted
    finally:
        restored.stop()


@pytest.mark.slow
def test_non_private_run_improves_its_score(ray_session) -> None:
    config = (
        LDPA3CConfig()
        .env_runners(num_env_runners=0)
        .training(
            mechanism="none",
            epsilon=math.inf,
            lr=0.01,
            aggregator_optimizer="adam",
            loss_reduction="mean",
            action_selection="sample",
            submissions_per_iteration=100,
        )
        .debugging(seed=3)
    )
    torch.manual_seed(3)
    algo = config.build_algo()
    try:
        first = algo.train()["ldp"]["score_mean"]
        for _ in range(6):
            last = algo.train()["ldp"]["score_mean"]
    finally:
        algo.stop()
    # Scores are episode lengths (random policy: ~22); learning must at least double them.
    assert last > 2 * first, (first, last)


@pytest.mark.slow
def test_multi_round_agents_keep_their_gravity_and_split_epsilon(ray_session) -> None:
    config = (
        LDPA3CConfig(algo_class=RecordingLDPA3C)
        .env_runners(num_env_runners=0)
        .training(
            mechanism="laplace",
            epsilon=3.0,
            submissions_per_agent=3,
            submissions_per_iteration=12,
        )
    )
    algo = config.build_algo()
    try:
        result = algo.train()
        agents = [item.agent_id for item in algo.received]
        runner = algo.env_runner
    finally:
        algo.stop()
    assert len(agents) == 12 and len(set(agents)) == 4
    assert all(agents.count(a) == 3 for a in set(agents))
    assert all(item.total_epsilon == pytest.approx(1.0) for item in algo.received)
    # Sequential composition: 3 releases of ε/3 each = ε per agent, never more.
    assert result["epsilon_per_agent"] == pytest.approx(3.0)
    assert runner._agents[0].pinned_options["gravity"] in (9.7, 9.8, 9.9)


@pytest.mark.slow
def test_lr_schedule_follows_env_steps(ray_session) -> None:
    config = (
        LDPA3CConfig()
        .env_runners(num_env_runners=0)
        .training(submissions_per_iteration=30, lr=[[0, 0.05], [100_000, 0.0]])
        # Exact env steps (a private score's are an estimate, noisy over 30 submissions).
        .privacy(privacy_score_mechanism="public")
    )
    algo = config.build_algo()
    try:
        rates, steps = [], []
        for _ in range(2):
            result = algo.train()
            rates.append(result["learners"]["default_policy"]["default_optimizer_learning_rate"])
            steps.append(result["num_env_steps_sampled_lifetime"])
    finally:
        algo.stop()
    # Linear interpolation, read at the env-step count of the iteration's last update.
    assert rates[1] < rates[0] < 0.05
    assert rates[0] >= 0.05 * (1 - steps[0] / 100_000) - 1e-9
