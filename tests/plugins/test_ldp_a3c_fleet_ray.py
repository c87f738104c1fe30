"""LDPA3C's agent fleet end to end on a local Ray instance: metrics, checkpoints, controls."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rllib_privacy.algorithms.ldp_a3c import LDPA3C, GradientSubmission, LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.score_tracker import SOLVED_WINDOW
from rllib_privacy.utils import metrics as keys
from rllib_privacy.utils.progress import progress_line

pytestmark = pytest.mark.ray

PAPER_DIM = 4 * 16 + 16 * 2 + 16 * 1
EPSILON, MAX_BUFFER, PER_ITERATION, SHUFFLE_DELTA = 2.0, 32, 64, 1e-6


class RecordingLDPA3C(LDPA3C):
    """LDPA3C that keeps everything the aggregator receives, as received."""

    received: list[Any]

    def _receive(self, submissions: list[Any]) -> None:
        self.__dict__.setdefault("received", []).extend(submissions)
        super()._receive(submissions)


def _config(*, num_env_runners: int = 1, **training: Any) -> LDPA3CConfig:
    settings: dict[str, Any] = {
        "mechanism": "privunitg",
        "epsilon": EPSILON,
        "max_buffer": MAX_BUFFER,
        "submissions_per_iteration": PER_ITERATION,
        # One request = one fleet round of all 16 agents.
        "submissions_per_request": 16,
        "agents_per_env_runner": 16,
        "eval_episodes": 40,
        "shuffle_delta": SHUFFLE_DELTA,
    }
    settings.update(training)
    return (
        LDPA3CConfig(algo_class=RecordingLDPA3C)
        .env_runners(num_env_runners=num_env_runners)
        .training(**settings)
        # The paper's public score: these tests check clear scores and the 100-window
        # (private scores: tests/plugins/test_ldp_a3c_private_scores.py).
        .privacy(privacy_score_mechanism="public")
        .debugging(seed=0)
    )


def _get(result: dict[str, Any], key: str) -> Any:
    group, name = key.split("/")
    return result[group][name]


def _check_iteration(algo: LDPA3C, result: dict[str, Any], *, min_submissions: int) -> None:
    submissions = _get(result, keys.LDP_SUBMISSIONS)
    assert submissions >= min_submissions
    assert result["submissions"] == submissions
    assert _get(result, keys.PRIVACY_RELEASES) == submissions == algo._ledger.releases
    assert len(algo.received) == submissions  # no duplicates, nothing lost
    assert result["epsilon_per_agent"] == pytest.approx(EPSILON)
    for key in (
        keys.LDP_EVAL_RETURN_MEAN,
        keys.LDP_EVAL_RETURN_MEAN_TRAIN,
        keys.LDP_EVAL_RETURN_MEAN_HELDOUT,
    ):
        assert 1.0 <= _get(result, key) <= 200.0, key
    # 40 episodes: 20 on the training gravities, 20 held out.
    assert _get(result, keys.LDP_EVAL_RETURN_MEAN) == pytest.approx(
        (
            _get(result, keys.LDP_EVAL_RETURN_MEAN_TRAIN)
            + _get(result, keys.LDP_EVAL_RETURN_MEAN_HELDOUT)
        )
        / 2
    )
    # Without a shuffler the central ε is only hypothetical, and named so.
    shuffled = _get(result, keys.PRIVACY_EPSILON_CENTRAL_IF_SHUFFLED)
    assert 0.0 < shuffled < EPSILON
    assert _get(result, keys.PRIVACY_DELTA_CENTRAL_IF_SHUFFLED) == SHUFFLE_DELTA


@pytest.mark.slow
def test_fleet_run_reports_evaluation_shuffling_and_progress(ray_session) -> None:
    algo = _config().build_algo()
    try:
        weights = algo._weights.copy()
        first = algo.train()
        _check_iteration(algo, first, min_submissions=PER_ITERATION)
        result = algo.train()
        _check_iteration(algo, result, min_submissions=2 * PER_ITERATION)
    finally:
        algo.stop()
    assert _get(result, keys.LDP_SOLVED) == 0.0
    assert "solved_at" not in result["ldp"] and "solved_at" not in result
    received = algo.received
    for item in received:
        assert type(item) is GradientSubmission
        assert item.gradient.shape == (PAPER_DIM,) and item.gradient.dtype == np.float32
        assert item.epsilon == EPSILON and item.mechanism == "privunitg"
        assert 1.0 <= item.score <= 200.0 and item.env_steps == item.score
    # T = 1: every release is a fresh agent.
    assert len({item.agent_id for item in received}) == len(received)
    assert len({(item.agent_id, item.agent_sequence) for item in received}) == len(received)
    # Updates happened (|B| = 32) and θ moved.
    assert _get(result, keys.LDP_UPDATES) == _get(result, keys.LDP_SUBMISSIONS) // MAX_BUFFER
    assert not np.allclose(algo._weights, weights)
    # The driver-side progress line (rllib train's Tune callback) of each real result.
    for res in (first, result):
        line = progress_line("LDPA3C_00000", res)
        assert line is not None
        assert line.startswith(
            f"[LDPA3C_00000] iter {res['training_iteration']} | "
            f"submissions {int(res['submissions']):,} | score(100) "
        )
        assert "| eps/agent 2 |" in line and " subm/s | eval " in line
        assert line.endswith(f"eval {_get(res, keys.LDP_EVAL_RETURN_MEAN):.1f}")
    assert [first["training_iteration"], result["training_iteration"]] == [1, 2]


@pytest.mark.slow
def test_fleet_checkpoint_keeps_submissions_ledger_and_solved(ray_session, tmp_path) -> None:
    # Every score is >= 1: the run is "solved" once 100 scores have arrived.
    config = _config(fst_target_score=1.0)
    algo = config.build_algo()
    try:
        algo.train()
        result = algo.train()
        saved = algo.get_state()["ldp_a3c_aggregator"]
        weights = algo._weights.copy()
        algo.save_to_path(str(tmp_path))
    finally:
        algo.stop()
    submissions = saved["scores"]["submissions"]
    assert submissions >= 2 * PER_ITERATION
    assert saved["scores"]["solved_at"] == SOLVED_WINDOW
    assert _get(result, keys.LDP_SOLVED) == 1.0
    assert _get(result, keys.LDP_SOLVED_AT) == SOLVED_WINDOW == result["solved_at"]
    # The line ends with the window that solved and its mean (the criterion's value).
    solved_score = _get(result, keys.LDP_SOLVED_SCORE)
    assert solved_score >= 1.0
    assert progress_line("t", result).endswith(
        f"| solved at {SOLVED_WINDOW}: score({SOLVED_WINDOW}) {solved_score:.1f}"
    )
    restored = config.build_algo()
    try:
        restored.restore_from_path(str(tmp_path))
        state = restored.get_state()["ldp_a3c_aggregator"]
        assert state.pop("journal") != saved.pop("journal")
        assert state == saved
        assert restored._ledger.releases == submissions
        assert restored._scores.solved_at == SOLVED_WINDOW
        np.testing.assert_array_equal(restored._weights, weights)
        after = restored.train()
    finally:
        restored.stop()
    assert after["submissions"] >= submissions + PER_ITERATION
    assert _get(after, keys.PRIVACY_RELEASES) == after["submissions"]
    assert _get(after, keys.LDP_SOLVED_AT) == SOLVED_WINDOW  # never moves
    assert after["epsilon_per_agent"] == pytest.approx(EPSILON)


@pytest.mark.slow
def test_one_agent_per_env_runner_still_works(ray_session) -> None:
    algo = _config(agents_per_env_runner=1).build_algo()
    try:
        weights = algo._weights.copy()
        result = algo.train()
        assert algo.env_runner_group.foreach_env_runner(
            lambda runner: runner._fleet is None, local_env_runner=False
        ) == [True]
    finally:
        algo.stop()
    _check_iteration(algo, result, min_submissions=PER_ITERATION)
    assert all(item.epsilon == EPSILON for item in algo.received)
    assert not np.allclose(algo._weights, weights)


@pytest.mark.parametrize("agents", [16, 1])
def test_zero_signal_control_runs_and_moves_the_weights_by_noise(ray_session, agents) -> None:
    # A local EnvRunner (no actor): the control only needs the aggregator loop.
    config = _config(
        num_env_runners=0,
        agents_per_env_runner=agents,
        zero_signal_control=True,
        submissions_per_iteration=MAX_BUFFER,
        eval_episodes=0,
    )
    algo = config.build_algo()
    try:
        weights = algo._weights.copy()
        result = algo.train()
    finally:
        algo.stop()
    assert _get(result, keys.LDP_SUBMISSIONS) == MAX_BUFFER
    assert _get(result, keys.LDP_UPDATES) == 1
    assert keys.LDP_EVAL_RETURN_MEAN.split("/")[1] not in result["ldp"]
    # PrivUnitG of a zero gradient: a release of norm > 0 (noise only), all finite.
    norms = [np.linalg.norm(item.gradient) for item in algo.received]
    assert all(np.isfinite(n) and n > 0 for n in norms)
    assert np.all(np.isfinite(algo._weights)) and not np.allclose(algo._weights, weights)
