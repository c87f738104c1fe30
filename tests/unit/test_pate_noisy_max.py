"""Noisy-max aggregation (LNMax, GNMax): plurality limit, uniform limit, Lemma 4, ε-DP."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rllib_privacy.accounting import lemma4_q
from rllib_privacy.mechanisms import gaussian_noisy_max, noisy_max, plurality

# Tolerances below are K standard errors of a Bernoulli frequency over N draws.
K = 5.0


def _frequencies(labels: np.ndarray, num_classes: int) -> np.ndarray:
    return np.bincount(labels, minlength=num_classes) / labels.size


def test_shapes_dtype_and_seed_reproducibility() -> None:
    votes = np.array([[5, 1, 0], [0, 2, 9]])
    one = noisy_max(votes[0], gamma=1.0, rng=np.random.default_rng(0))
    batch = noisy_max(votes, gamma=1.0, rng=np.random.default_rng(0))
    assert one.shape == () and batch.shape == (2,) and batch.dtype == np.int64
    again = noisy_max(votes, gamma=1.0, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(batch, again)
    from_torch = noisy_max(torch.tensor(votes), gamma=1.0, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(from_torch, batch)


@pytest.mark.parametrize("aggregate", ["laplace", "gaussian"])
def test_tiny_noise_gives_the_plurality(aggregate: str) -> None:
    rng = np.random.default_rng(1)
    votes = rng.integers(0, 50, size=(2000, 6)).astype(float)
    votes += rng.random(votes.shape) * 0.1  # distinct counts: a unique plurality per row
    if aggregate == "laplace":
        labels = noisy_max(votes, gamma=1e7, rng=rng)
    else:
        labels = gaussian_noisy_max(votes, sigma=1e-7, rng=rng)
    np.testing.assert_array_equal(labels, plurality(votes))


@pytest.mark.parametrize("aggregate", ["laplace", "gaussian"])
def test_huge_noise_gives_uniform_labels(aggregate: str) -> None:
    rng = np.random.default_rng(2)
    num, classes = 20_000, 4
    votes = np.tile([10, 3, 0, 1], (num, 1))
    if aggregate == "laplace":
        labels = noisy_max(votes, gamma=1e-6, rng=rng)
    else:
        labels = gaussian_noisy_max(votes, sigma=1e6, rng=rng)
    p = 1.0 / classes
    tolerance = K * math.sqrt(p * (1 - p) / num)
    np.testing.assert_allclose(_frequencies(labels, classes), p, atol=tolerance)


@pytest.mark.parametrize(
    ("votes", "gamma"),
    [([10, 7, 3], 0.1), ([30, 25, 25, 20], 0.2), ([5, 5], 0.5), ([100, 60, 0], 0.05)],
)
def test_lemma4_bounds_the_label_flip_probability(votes: list[int], gamma: float) -> None:
    num = 40_000
    labels = noisy_max(np.tile(votes, (num, 1)), gamma=gamma, rng=np.random.default_rng(3))
    flipped = float(np.mean(labels != int(np.argmax(votes))))
    q = float(lemma4_q(votes, gamma=gamma))
    standard_error = math.sqrt(max(flipped * (1 - flipped), 1.0 / num) / num)
    assert flipped <= q + K * standard_error, (flipped, q)


def test_lemma4_q_matches_the_formula() -> None:
    gamma = 0.1
    expected = (2 + 0.3) / (4 * math.exp(0.3)) + (2 + 0.7) / (4 * math.exp(0.7))
    assert float(lemma4_q([10, 7, 3], gamma=gamma)) == pytest.approx(expected, rel=1e-12)
    # A tie: the other tied class contributes 1/2; q is capped at 1.
    assert float(lemma4_q([4, 4, 0], gamma=gamma)) == pytest.approx(0.5 + 2.4 / (4 * math.exp(0.4)))
    assert float(lemma4_q([1, 1, 1, 1], gamma=gamma)) == 1.0


@pytest.mark.parametrize("gamma", [0.25, 0.5])
def test_noisy_max_is_2gamma_dp_on_adjacent_histograms(gamma: float) -> None:
    """One teacher moves its vote from class 0 to class 1: P[y|n] ≤ e^{2γ}·P[y|n'] for all y."""
    num, classes = 200_000, 3
    rng = np.random.default_rng(4)
    before = noisy_max(np.tile([3, 2, 1], (num, 1)), gamma=gamma, rng=rng)
    after = noisy_max(np.tile([2, 3, 1], (num, 1)), gamma=gamma, rng=rng)
    p, p_adj = _frequencies(before, classes), _frequencies(after, classes)
    se, se_adj = np.sqrt(p * (1 - p) / num), np.sqrt(p_adj * (1 - p_adj) / num)
    bound = math.exp(2 * gamma)
    assert np.all(p - K * se <= bound * (p_adj + K * se_adj))
    assert np.all(p_adj - K * se_adj <= bound * (p + K * se))
    # The check can fail: the observed worst-case ratio uses a good part of the budget.
    assert np.max(np.log(p / p_adj)) > 0.5 * 2 * gamma


@pytest.mark.parametrize(
    ("votes", "message"),
    [
        ([1.0, float("nan")], "finite"),
        ([1, -1, 3], ">= 0"),
        (np.zeros((2, 2, 2)), "1-D"),
        ([3], "at least 2 classes"),
        (np.zeros((0, 3)), "at least one"),
    ],
)
def test_bad_votes_are_rejected(votes: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        noisy_max(votes, gamma=0.1)
    with pytest.raises(ValueError, match=message):
        gaussian_noisy_max(votes, sigma=1.0)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, True])
def test_bad_noise_parameters_are_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="gamma"):
        noisy_max([1, 2], gamma=bad)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_noisy_max([1, 2], sigma=bad)
    with pytest.raises(ValueError, match="rng"):
        noisy_max([1, 2], gamma=1.0, rng=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("secure", [False, True])
def test_confident_gnmax_answers_with_the_threshold_probability(secure: bool) -> None:
    """P[answered] = P[max + N(0, σ₁²) ≥ T]; answered labels follow GNMax's two-class law."""
    from scipy import stats

    from rllib_privacy.mechanisms import UNANSWERED, confident_gnmax

    n, sigma1, sigma2, threshold = 4000, 10.0, 3.0, 22.0
    votes = np.tile([20, 17], (n, 1))
    labels = confident_gnmax(
        votes, threshold=threshold, sigma_threshold=sigma1, sigma=sigma2,
        rng=np.random.default_rng(7), secure_mode=secure,
    )  # fmt: skip
    answered = labels != UNANSWERED
    p = stats.norm.sf(threshold - 20, scale=sigma1)
    assert abs(answered.mean() - p) <= K * math.sqrt(p * (1 - p) / n)
    # Label 1 iff N(0, 2σ₂²) > 3.
    wrong = stats.norm.sf(3, scale=math.sqrt(2) * sigma2)
    k = int(answered.sum())
    assert abs(np.mean(labels[answered] == 1) - wrong) <= K * math.sqrt(wrong * (1 - wrong) / k)
    assert set(np.unique(labels)) <= {UNANSWERED, 0, 1}


def test_confident_gnmax_shapes_and_errors() -> None:
    from rllib_privacy.mechanisms import confident_gnmax

    one = confident_gnmax([50, 0], threshold=-100.0, sigma_threshold=1.0, sigma=1.0)
    assert one.shape == () and int(one) == 0
    with pytest.raises(ValueError, match="threshold"):
        confident_gnmax([5, 1], threshold=math.inf, sigma_threshold=1.0, sigma=1.0)
    with pytest.raises(ValueError, match="sigma_threshold"):
        confident_gnmax([5, 1], threshold=1.0, sigma_threshold=0.0, sigma=1.0)
