"""The classic, supervised PATE pipeline (Papernot et al. 2017) on scikit-learn's digits.

Private data is split into disjoint partitions, one teacher per partition; a student is
trained only on public samples labeled by the teachers' noisy max (at most
``max_queries`` labels, and no more than the ε budget allows); the rest of the public
split stays unlabeled. Accuracy and ε (data-dependent and data-independent) are reported.

Ray-free: numpy and scikit-learn only. ``sklearn.datasets.load_digits`` ships with
scikit-learn (1,797 8×8 images, 10 classes), so nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rllib_privacy.accounting import PATELedger
from rllib_privacy.mechanisms import noisy_max, plurality

__all__ = [
    "QUERY_SELECTIONS",
    "SupervisedPATEResult",
    "load_digits_split",
    "partition_indices",
    "run_digits_pate",
    "run_supervised_pate",
    "teacher_votes",
    "train_teachers",
]

#: How public samples are chosen for labeling: in random order, or the student's
#: least-confident first (paper App. B.2; the first half of the queries is random).
QUERY_SELECTIONS = ("random", "least_confident")

ModelFactory = Callable[[], Any]


def _default_model() -> Any:
    """Multinomial logistic regression: fast and strong enough on 8×8 digits."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=500)


def load_digits_split(
    *, seed: int = 0, public_fraction: float = 0.3, test_fraction: float = 0.15
) -> dict[str, np.ndarray]:
    """Split scikit-learn's digits into private, public (student) and test parts.

    Args:
        seed: Seed of the shuffle.
        public_fraction: Share of the samples the student may see (unlabeled).
        test_fraction: Share held out for testing.

    Returns:
        Dict with ``x_private, y_private, x_public, y_public, x_test, y_test``. Pixel values
        are scaled to [0, 1]. ``y_public`` is for evaluating label quality only: the
        student never reads it.

    Raises:
        ValueError: If the fractions are not in (0, 1) or sum to >= 1.

    """
    from sklearn.datasets import load_digits

    if not (0 < public_fraction < 1 and 0 < test_fraction < 1):
        raise ValueError("public_fraction and test_fraction must be in (0, 1)")
    if public_fraction + test_fraction >= 1:
        raise ValueError("public_fraction + test_fraction must be < 1 (private data left)")
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order] / 16.0, y[order]
    n_test = int(round(test_fraction * len(y)))
    n_public = int(round(public_fraction * len(y)))
    return {
        "x_test": x[:n_test],
        "y_test": y[:n_test],
        "x_public": x[n_test : n_test + n_public],
        "y_public": y[n_test : n_test + n_public],
        "x_private": x[n_test + n_public :],
        "y_private": y[n_test + n_public :],
    }


def partition_indices(num_samples: int, num_teachers: int, rng: np.random.Generator) -> list:
    """Disjoint, shuffled partitions of ``range(num_samples)``, one per teacher."""
    if num_teachers < 1 or num_teachers > num_samples:
        raise ValueError(
            f"num_teachers must be in [1, {num_samples}] (one sample each), got {num_teachers}"
        )
    return list(np.array_split(rng.permutation(num_samples), num_teachers))


def train_teachers(
    x: np.ndarray,
    y: np.ndarray,
    *,
    num_teachers: int,
    rng: np.random.Generator,
    make_model: ModelFactory = _default_model,
) -> list[Any]:
    """Train one model per disjoint partition of the private data.

    A partition that misses some classes still gets a model (it can only vote for the
    classes it saw); a one-class partition gets a constant predictor.
    """
    teachers = []
    for part in partition_indices(len(y), num_teachers, rng):
        classes = np.unique(y[part])
        if classes.size == 1:
            teachers.append(_Constant(int(classes[0])))
            continue
        teachers.append(make_model().fit(x[part], y[part]))
    return teachers


class _Constant:
    def __init__(self, label: int) -> None:
        self.label = label

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.full(len(x), self.label)


def teacher_votes(teachers: list[Any], x: np.ndarray, num_classes: int) -> np.ndarray:
    """Vote histograms ``n_j(x)``: how many teachers predict class j, shape (len(x), classes)."""
    predictions = np.stack([np.asarray(t.predict(x), dtype=np.int64) for t in teachers], axis=1)
    votes = np.zeros((len(x), num_classes), dtype=np.int64)
    np.add.at(votes, (np.arange(len(x))[:, None], predictions), 1)
    return votes


@dataclasses.dataclass(frozen=True)
class SupervisedPATEResult:
    """Outcome of one supervised PATE run.

    Attributes:
        num_teachers: Ensemble size.
        gamma: Inverse Laplace noise scale γ.
        num_queries: Labels the student received (answered queries).
        epsilon: Data-dependent ε (un-noised, not itself private).
        epsilon_data_independent: Data-independent ε.
        delta: δ.
        teacher_accuracy: Mean test accuracy of single teachers.
        ensemble_accuracy: Test accuracy of the noiseless plurality (non-private reference).
        label_accuracy: Share of the student's noisy labels that are correct.
        student_accuracy: Test accuracy of the student.

    """

    num_teachers: int
    gamma: float
    num_queries: int
    epsilon: float
    epsilon_data_independent: float
    delta: float
    teacher_accuracy: float
    ensemble_accuracy: float
    label_accuracy: float
    student_accuracy: float


def run_supervised_pate(
    data: dict[str, np.ndarray],
    *,
    num_teachers: int,
    gamma: float,
    delta: float = 1e-5,
    max_queries: int = 300,
    epsilon_budget: float = math.inf,
    selection: str = "random",
    max_order: int = 8,
    seed: int = 0,
    make_model: ModelFactory = _default_model,
    teachers: list[Any] | None = None,
    secure_mode: bool = False,
) -> SupervisedPATEResult:
    """Teachers on disjoint private partitions → noisy-max labels → student; accuracy and ε.

    Args:
        data: Splits as returned by :func:`load_digits_split`.
        num_teachers: Number of teachers n (disjoint partitions of the private data).
        gamma: Inverse Laplace noise scale γ of each query.
        delta: δ of the reported ε.
        max_queries: Most labels the student may ask for (Q).
        epsilon_budget: Stop asking once the next query would take the data-independent
            ε over this (``math.inf``: only ``max_queries`` limits).
        selection: ``"random"`` or ``"least_confident"`` (see :data:`QUERY_SELECTIONS`).
        max_order: Largest moment order of the accountant.
        seed: Seed of partitioning, query order and noise.
        make_model: Factory of an unfitted scikit-learn classifier (teachers and student).
        teachers: Already trained teachers (from :func:`train_teachers` with the same
            ``num_teachers``) to reuse across settings; None trains them here.
        secure_mode: Draw the vote noise with OpenDP's floating-point-safe Laplace sampler
            from OS entropy (see :func:`~rllib_privacy.mechanisms.noisy_max`); the seed then
            drives only partitioning and query order.

    Returns:
        A :class:`SupervisedPATEResult`.

    Raises:
        ValueError: For an unknown ``selection`` or invalid accountant settings.

    """
    if selection not in QUERY_SELECTIONS:
        raise ValueError(f"selection must be one of {list(QUERY_SELECTIONS)}, got {selection!r}")
    rng = np.random.default_rng(seed)
    num_classes = int(max(data["y_private"].max(), data["y_test"].max())) + 1
    if teachers is None:
        teachers = train_teachers(
            data["x_private"], data["y_private"], num_teachers=num_teachers, rng=rng,
            make_model=make_model,
        )  # fmt: skip
    elif len(teachers) != num_teachers:
        raise ValueError(f"teachers has {len(teachers)} models, num_teachers is {num_teachers}")
    ledger = PATELedger(
        gamma=gamma,
        delta=delta,
        max_order=max_order,
        epsilon_budget=epsilon_budget,
        max_queries=max_queries,
    )
    x_public = data["x_public"]
    unlabeled = list(rng.permutation(len(x_public)))
    labeled_idx: list[int] = []
    labels: list[int] = []
    student = None

    def ask(count: int) -> None:
        chosen = [unlabeled.pop(0) for _ in range(min(count, len(unlabeled)))]
        if not chosen:
            return
        votes = teacher_votes(teachers, x_public[chosen], num_classes)
        answered = ledger.affordable(votes)  # stop at the budget: no label beyond it
        ledger.record(votes[:answered])
        labeled_idx.extend(chosen[:answered])
        labels.extend(
            noisy_max(votes[:answered], gamma=gamma, rng=rng, secure_mode=secure_mode).tolist()
        )

    if selection == "random":
        ask(max_queries)
        student = _fit_student(make_model, x_public, labeled_idx, labels)
    else:
        ask(max_queries // 2)
        student = _fit_student(make_model, x_public, labeled_idx, labels)
        if student is not None and unlabeled:
            # Least confident first: lowest top-class probability of the current student.
            confidence = student.predict_proba(x_public[unlabeled]).max(axis=1)
            unlabeled = [unlabeled[i] for i in np.argsort(confidence, kind="stable")]
        ask(max_queries - len(labeled_idx))
        student = _fit_student(make_model, x_public, labeled_idx, labels)

    test_votes = teacher_votes(teachers, data["x_test"], num_classes)
    return SupervisedPATEResult(
        num_teachers=num_teachers,
        gamma=float(gamma),
        num_queries=ledger.num_queries,
        epsilon=ledger.epsilon,
        epsilon_data_independent=ledger.epsilon_data_independent,
        delta=float(delta),
        teacher_accuracy=float(
            np.mean([np.mean(t.predict(data["x_test"]) == data["y_test"]) for t in teachers])
        ),
        ensemble_accuracy=float(np.mean(plurality(test_votes) == data["y_test"])),
        label_accuracy=(
            float(np.mean(np.asarray(labels) == data["y_public"][labeled_idx]))
            if labels
            else math.nan
        ),
        student_accuracy=(
            float(np.mean(student.predict(data["x_test"]) == data["y_test"]))
            if student is not None
            else math.nan
        ),
    )


def _fit_student(
    make_model: ModelFactory, x: np.ndarray, indices: list[int], labels: list[int]
) -> Any:
    """Fit the student on the labeled public samples (None if fewer than two classes)."""
    if len(set(labels)) < 2:
        return None
    return make_model().fit(x[indices], np.asarray(labels))


def run_digits_pate(*, data_seed: int = 0, **kwargs: Any) -> SupervisedPATEResult:
    """:func:`run_supervised_pate` on :func:`load_digits_split` (``data_seed``)."""
    return run_supervised_pate(load_digits_split(seed=data_seed), **kwargs)
