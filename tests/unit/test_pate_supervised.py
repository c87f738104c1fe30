"""Supervised PATE on scikit-learn's digits: disjoint teachers, budgeted noisy labels, student."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.naive_bayes import GaussianNB

from rllib_privacy.accounting import pate_epsilon
from rllib_privacy.pate import load_digits_split, run_supervised_pate
from rllib_privacy.pate.supervised import partition_indices, teacher_votes, train_teachers

# Gaussian naive Bayes trains in milliseconds (the default logistic regression is for
# the benchmark): the pipeline does not depend on the model.
FAST = {"make_model": lambda: GaussianNB(var_smoothing=0.1)}


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    return load_digits_split(seed=0)


def test_partitions_are_disjoint_and_cover_the_private_data() -> None:
    parts = partition_indices(103, 7, np.random.default_rng(0))
    joined = np.concatenate(parts)
    assert len(parts) == 7 and sorted(joined.tolist()) == list(range(103))
    with pytest.raises(ValueError, match="num_teachers"):
        partition_indices(3, 4, np.random.default_rng(0))


def test_votes_count_every_teacher_once(data: dict[str, np.ndarray]) -> None:
    teachers = train_teachers(
        data["x_private"][:300],
        data["y_private"][:300],
        num_teachers=3,
        rng=np.random.default_rng(0),
        **FAST,
    )
    votes = teacher_votes(teachers, data["x_test"][:20], 10)
    assert votes.shape == (20, 10) and np.all(votes.sum(axis=1) == 3)


def test_student_learns_from_few_noisy_labels_and_epsilon_matches_the_accountant(
    data: dict[str, np.ndarray],
) -> None:
    result = run_supervised_pate(data, num_teachers=5, gamma=1.0, max_queries=80, seed=0, **FAST)
    assert result.num_queries == 80
    assert result.ensemble_accuracy > 0.8 and result.label_accuracy > 0.6
    assert result.student_accuracy > 0.6  # chance is 0.1
    assert result.epsilon <= result.epsilon_data_independent
    assert result.epsilon_data_independent == pytest.approx(
        pate_epsilon(80, gamma=1.0, delta=1e-5).epsilon
    )


def test_budget_limits_queries_and_noise_hurts_labels(data: dict[str, np.ndarray]) -> None:
    budget = pate_epsilon(25, gamma=1.0, delta=1e-5).epsilon
    capped = run_supervised_pate(
        data, num_teachers=5, gamma=1.0, max_queries=80, epsilon_budget=budget, seed=1, **FAST
    )
    assert capped.num_queries == 25 and capped.epsilon_data_independent <= budget + 1e-9
    noisy = run_supervised_pate(data, num_teachers=5, gamma=0.01, max_queries=80, seed=1, **FAST)
    assert noisy.label_accuracy < 0.4  # γ = 0.01: Lap(100) noise swamps 5 votes


def test_least_confident_selection_runs_and_bad_selection_is_rejected(
    data: dict[str, np.ndarray],
) -> None:
    result = run_supervised_pate(
        data, num_teachers=5, gamma=1.0, max_queries=60, selection="least_confident", seed=0, **FAST
    )
    assert result.num_queries == 60 and not math.isnan(result.student_accuracy)
    with pytest.raises(ValueError, match="selection"):
        run_supervised_pate(data, num_teachers=5, gamma=1.0, selection="all")


def test_secure_mode_labels_are_accounted_like_the_default(data: dict[str, np.ndarray]) -> None:
    default = run_supervised_pate(data, num_teachers=5, gamma=1.0, max_queries=80, seed=0, **FAST)
    secure = run_supervised_pate(
        data, num_teachers=5, gamma=1.0, max_queries=80, seed=0, secure_mode=True, **FAST
    )
    # Same seed → same teachers, query order and votes, so the same ε; only the noise differs.
    assert secure.num_queries == default.num_queries == 80
    assert secure.epsilon == pytest.approx(default.epsilon)
    assert secure.epsilon_data_independent == pytest.approx(default.epsilon_data_independent)
    assert secure.label_accuracy > 0.6


def test_confident_gnmax_pipeline_answers_confident_queries_and_releases_epsilon(
    data: dict[str, np.ndarray],
) -> None:
    """10 teachers; threshold 8 with little noise: only high-consensus queries get labels."""
    settings = {"aggregator": "confident_gnmax", "threshold": 8.0, "sigma_threshold": 1.0}
    result = run_supervised_pate(
        data, num_teachers=10, sigma=1.0, max_queries=120, seed=0, student="label_spreading",
        release_order=8.0, **settings, **FAST,
    )  # fmt: skip
    assert result.num_queries == 120 and 20 < result.num_answered < 120
    assert result.label_accuracy > 0.85 and result.student_accuracy > 0.6
    assert result.epsilon < result.epsilon_data_independent
    assert math.isfinite(result.epsilon_released) and result.epsilon_released > 0
    gnmax = run_supervised_pate(
        data, num_teachers=10, aggregator="gnmax", sigma=1.0, max_queries=50, seed=0, **FAST
    )
    assert gnmax.num_answered == gnmax.num_queries == 50 and math.isnan(gnmax.epsilon_released)
    with pytest.raises(ValueError, match="student"):
        run_supervised_pate(data, num_teachers=10, gamma=1.0, student="gan", **FAST)
