"""LDPA3C's private scores: the solved criterion on debiased one-bit scores.

The statistical tests compare an observed firing rate over K independent trials with its
exact binomial value; the tolerance is Z = 5 standard errors of K Bernoulli trials, so a
false failure has probability below 6e-7 per check. Seeds make them deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import test_ldp_a3c_fleet_ray as fleet_ray
from test_ldp_a3c_fleet import _config, _fleet, _module

from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.score_release import score_fields
from rllib_privacy.algorithms.ldp_a3c.score_tracker import (
    ScoreTracker,
    private_solved_window,
    solved_fire_probability,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms import OneBitMechanism
from rllib_privacy.utils.progress import progress_line

Z = 5.0
TARGET = 195.0


def _fires(mechanism: OneBitMechanism, scores: np.ndarray, window: int) -> np.ndarray:
    """One check per row of ``scores`` (trials × window): does its debiased mean reach Θ?"""
    rng = np.random.default_rng(11)
    bits = mechanism.privatize(scores, rng)
    return mechanism.debias(bits).mean(axis=1) >= TARGET


@pytest.mark.parametrize("true_score", [185.0, 190.0, 199.0])
def test_false_fire_rate_of_a_constant_stream_matches_the_derivation(true_score: float) -> None:
    # ε = 1 and n = 1024 keep the test fast and put the rates where they can be measured.
    mechanism = OneBitMechanism(epsilon=1.0, low=0.0, high=200.0)
    window, trials = 1024, 4000
    fired = _fires(mechanism, np.full((trials, window), true_score), window)
    expected = solved_fire_probability(
        mechanism, window=window, true_score=true_score, target=TARGET
    )
    assert abs(fired.mean() - expected) <= Z * math.sqrt(expected * (1 - expected) / trials)
    if true_score <= TARGET - 10:
        # The normal-approximation bound the docs state: Φ(−10·√n / σ_max).
        from scipy import stats

        bound = float(stats.norm.sf(10 * math.sqrt(window) / mechanism.max_std))
        assert expected <= bound


def test_a_varying_stream_below_the_target_fires_no_more_than_a_constant_one() -> None:
    """Scores 200 or 0 with mean 185 (a policy that sometimes fails early)."""
    mechanism = OneBitMechanism(epsilon=1.0, low=0.0, high=200.0)
    window, trials = 1024, 4000
    rng = np.random.default_rng(5)
    scores = np.where(rng.random((trials, window)) < 185 / 200, 200.0, 0.0)
    fired = _fires(mechanism, scores, window)
    constant = solved_fire_probability(mechanism, window=window, true_score=185.0, target=TARGET)
    assert fired.mean() <= constant + Z * math.sqrt(constant * (1 - constant) / trials)


def test_a_random_policy_never_solves() -> None:
    """The zero-signal control scores ~10-30: the criterion never fires for it."""
    quick_start = OneBitMechanism(epsilon=0.2, low=0.0, high=200.0)
    assert (
        solved_fire_probability(quick_start, window=65536, true_score=30.0, target=TARGET) < 1e-300
    )
    # The same through the tracker, at ε = 1 and its default window (fast to stream).
    mechanism = OneBitMechanism(epsilon=1.0, low=0.0, high=200.0)
    window = private_solved_window(mechanism)
    tracker = ScoreTracker(
        TARGET, window=window, check_every=window, fst=False, mechanism=mechanism
    )
    rng = np.random.default_rng(0)
    for bit in mechanism.privatize(np.full(window * 20, 20.0), rng):
        tracker.add_release(float(bit), 0, "one_bit")
    assert tracker.submissions == window * 20 and tracker.solved_at is None


def test_tracker_fires_on_disjoint_windows_and_reports_the_window_mean() -> None:
    mechanism = OneBitMechanism(epsilon=1.0, low=0.0, high=200.0)
    tracker = ScoreTracker(TARGET, window=4, check_every=4, fst=False, mechanism=mechanism)
    low, high = (float(v) for v in mechanism.debias([0, 1]))
    assert (2 * low + 2 * high) / 4 < TARGET <= high
    for bit in (0.0, 0.0, 1.0, 1.0, 1.0, 1.0):
        tracker.add_release(bit, 0, "one_bit")
    # The window of submissions 3-6 is all ones but is not checked: only 4, 8, ... are.
    assert tracker.solved_at is None
    for bit in (1.0, 1.0):
        tracker.add_release(bit, 0, "one_bit")
    assert tracker.solved_at == 8
    assert tracker.solved_score == pytest.approx(high)
    assert tracker.score_mean == pytest.approx(high)
    assert tracker.fst is None  # no FST on private scores
    # The running sum dips below 0 after the two zeros; the count never goes down.
    assert tracker.env_steps == round(2 * low + 6 * high)
    assert tracker.state_dict()["env_steps_counted"] == tracker.env_steps


def test_tracker_refuses_releases_it_cannot_debias() -> None:
    mechanism = OneBitMechanism(epsilon=1.0, low=0.0, high=200.0)
    private = ScoreTracker(TARGET, mechanism=mechanism)
    with pytest.raises(ValueError, match="0 or 1"):
        private.add_release(185.0, 0, "one_bit")
    public = ScoreTracker(TARGET)
    with pytest.raises(ValueError, match="'public'"):
        public.add_release(1.0, 0, "one_bit")


def test_public_tracker_keeps_the_sliding_window_and_fst() -> None:
    tracker = ScoreTracker(TARGET, window=100)
    for _ in range(99):
        tracker.add_release(200.0, 200, "public")
    assert tracker.solved_at is None and tracker.fst == 1
    tracker.add_release(190.0, 190, "public")
    assert tracker.solved_at == 100
    assert tracker.solved_score == pytest.approx((99 * 200 + 190) / 100)
    assert tracker.env_steps == 99 * 200 + 190


def test_state_round_trip_and_an_old_state_without_solved_score() -> None:
    mechanism = OneBitMechanism(epsilon=1.0, low=0.0, high=200.0)
    tracker = ScoreTracker(TARGET, window=4, check_every=4, fst=False, mechanism=mechanism)
    for bit in (1.0,) * 8:
        tracker.add_release(bit, 0, "one_bit")
    restored = ScoreTracker(TARGET, window=4, check_every=4, fst=False, mechanism=mechanism)
    restored.load_state_dict(tracker.state_dict())
    assert restored.state_dict() == tracker.state_dict()
    assert restored.score_mean == pytest.approx(tracker.score_mean)
    old = {
        "submissions": 3,
        "env_steps": 600,
        "fst": None,
        "solved_at": 100,
        "window": [200.0] * 3,
        "recent": [200.0] * 3,
    }
    legacy = ScoreTracker(TARGET)
    legacy.load_state_dict(old)
    assert legacy.solved_at == 100 and legacy.solved_score is None and legacy.env_steps == 600


def test_score_fields_never_carry_the_clear_score_or_length() -> None:
    mechanism = OneBitMechanism(epsilon=0.2, low=0.0, high=200.0)
    fields = score_fields(
        mechanism, np.array([187.0, 23.0]), np.array([187, 23]), np.random.default_rng(0)
    )
    for f in fields:
        assert f["score"] in (0.0, 1.0) and f["env_steps"] == 0
        assert f["score_mechanism"] == "one_bit" and f["score_epsilon"] == 0.2
    public = score_fields(None, np.array([187.0]), np.array([187]), None)
    assert public == [
        {"score": 187.0, "env_steps": 187, "score_mechanism": "public", "score_epsilon": math.inf}
    ]


def test_config_splits_epsilon_between_gradient_and_score() -> None:
    config = LDPA3CConfig().privacy(privacy_mechanism="privunitg", privacy_epsilon=1.0)
    config.validate_ldp_settings()
    gradient, score = config.get_gradient_mechanism(), config.get_score_mechanism()
    assert score is not None
    assert gradient.epsilon_per_release + score.epsilon == pytest.approx(1.0)
    assert score.epsilon == pytest.approx(0.2)
    # Default window: the 1% per-check rate at Θ − 10, in whole iterations.
    assert config.effective_solved_window % config.aggregator_submissions_per_iteration == 0
    assert config.effective_solved_window >= private_solved_window(score)
    public = LDPA3CConfig().privacy(privacy_score_mechanism="public")
    assert public.get_score_mechanism() is None
    assert public.get_gradient_mechanism().epsilon_per_release == 1.0
    assert public.effective_solved_window == 100
    nonprivate = LDPA3CConfig().privacy(privacy_mechanism="none", privacy_epsilon=math.inf)
    assert nonprivate.get_score_mechanism() is None


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"privacy_score_mechanism": "laplace"}, "privacy_score_mechanism"),
        ({"privacy_score_epsilon_share": 1.0}, "privacy_score_epsilon_share"),
        ({"privacy_score_epsilon_share": 0.0}, "privacy_score_epsilon_share"),
        ({"privacy_score_range": [200.0, 0.0]}, "privacy_score_range"),
        ({"privacy_score_range": [0.0]}, "privacy_score_range"),
    ],
)
def test_bad_score_settings_name_the_key(settings: dict, match: str) -> None:
    with pytest.raises(PrivacyConfigError, match=match):
        LDPA3CConfig().privacy(**settings).validate_ldp_settings()


def test_bad_solved_window_names_the_key() -> None:
    with pytest.raises(PrivacyConfigError, match="scoring_solved_window"):
        LDPA3CConfig().scoring(scoring_solved_window=0).validate_ldp_settings()


def test_fleet_sends_only_privatized_scores_and_splits_epsilon() -> None:
    config = _config(mechanism="laplace", epsilon=3.0, agents_per_env_runner=4)
    fleet = _fleet(config, _module(), 4)
    out = fleet.submit(weights_version=0, alpha=lambda made: 0.5, num_submissions=12)
    assert len(out) == 12
    for submission in out:
        assert submission.score in (0.0, 1.0) and submission.env_steps == 0
        assert submission.score_mechanism == "one_bit"
        assert submission.epsilon == pytest.approx(2.4)
        assert submission.score_epsilon == pytest.approx(0.6)
        assert submission.total_epsilon == pytest.approx(3.0)


def test_aggregator_counts_both_releases_and_solves_on_debiased_scores(ray_session) -> None:
    """End to end: bits arrive, the ledger holds two releases each, the solved line agrees."""
    window = fleet_ray.PER_ITERATION
    config = (
        fleet_ray._config(fst_target_score=-1e9)  # every window mean reaches it
        .privacy(privacy_score_mechanism="one_bit", privacy_score_epsilon_share=0.25)
        .scoring(scoring_solved_window=window)
    )
    algo = config.build_algo()
    try:
        result = algo.train()
        ledger = algo._ledger
    finally:
        algo.stop()
    submissions = result["submissions"]
    received = algo.received
    assert len(received) == submissions >= window
    for item in received:
        assert item.score in (0.0, 1.0) and item.env_steps == 0
        assert item.epsilon == pytest.approx(0.75 * fleet_ray.EPSILON)
        assert item.score_epsilon == pytest.approx(0.25 * fleet_ray.EPSILON)
    ldp = result["ldp"]
    # Both releases of every submission are in the ledger and in ε per agent.
    assert ledger.releases == 2 * submissions == result["privacy"]["releases"]
    assert ledger.releases_by_mechanism == {"privunitg": submissions, "one_bit": submissions}
    assert result["epsilon_per_agent"] == pytest.approx(fleet_ray.EPSILON)
    assert ldp["score_private"] == 1.0 and ldp["score_window"] == window
    # Checked at submission `window` only (disjoint windows), with the debiased scores.
    mechanism = config.get_score_mechanism()
    estimates = mechanism.debias([item.score for item in received])
    assert ldp["solved_at"] == window
    assert ldp["solved_score"] == pytest.approx(estimates[:window].mean())
    assert ldp["score_mean"] == pytest.approx(estimates[-window:].mean())
    # Env steps: the debiased scores' running sum, its largest rounded value (never down).
    counted = max(0, *(round(v) for v in np.cumsum(estimates)))
    assert result["timesteps_total"] == counted == result["num_env_steps_sampled_lifetime"]
    assert "fst" not in ldp
    line = progress_line("t", result)
    assert line.endswith(f"| solved at {window}: score({window}) {ldp['solved_score']:.1f}")
