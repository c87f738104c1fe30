"""Black-box empirical privacy audit of one mechanism on one pair of adjacent inputs.

Method (after Ding et al. 2018 and Jagielski et al. 2020):

1. Draw ``num_samples`` releases of the mechanism on ``input_a`` and as many on ``input_b``.
2. Split each sample: the first ``selection_fraction`` of the releases (the *selection
   split*) is used to choose a statistic and one output event; the rest (the *estimation
   split*) only to evaluate that single event. Because the event is a function of the
   selection split alone, and the splits are independent, no multiple-testing correction is
   needed however many candidate events are searched (this replaces a Bonferroni
   correction over all events, which would cost power as the search grows).
3. Reduce every release to a scalar ``s`` with ``statistic`` (see ``audit_mechanism``).
4. Candidate events: if the selection split shows at most ``max_discrete_values`` distinct
   values of ``s`` (labels, signs, ...), every single value and the unions of values ranked
   by their empirical likelihood ratio (for each direction); otherwise intervals
   ``(lo, hi]`` whose ends are taken from a quantile grid of the pooled selection values
   (``num_thresholds`` equally spaced levels plus levels that halve towards both tails),
   namely the one-sided thresholds ``{s > t}`` and ``{s <= t}`` and the histogram bins between
   consecutive grid points.
5. Each (event, direction) is scored on the selection split by the same bound that is
   reported (step 6), Bonferroni-corrected over the candidates, so that rare events are not
   chosen for a ratio that their counts cannot support; the best one is kept. (The
   correction only steers the choice; the reported bound needs none.)
6. On the estimation split: ``supported_epsilon = max(0, ln((p_x_lower − δ)/p_y_upper))``,
   with Clopper–Pearson bounds (``rllib_privacy.audit.clopper_pearson``) and (x, y) =
   (a, b) or (b, a) as chosen.

Guarantee: with probability at least ``confidence`` (over the estimation split, whatever
happened on the selection split), ``supported_epsilon`` is at most the true ε of the
implementation at this δ on this pair of inputs, i.e. the smallest ε with
``P[M(a) ∈ E] <= e^ε·P[M(b) ∈ E] + δ`` (and with a, b swapped) for every event E. So a
result with ``passed == False`` is statistically significant evidence that the mechanism
violates its claim; ``passed == True`` only means that no violation was found (the audit has
power against violations on the events it searches, on these inputs). The bound is only as
strong as the inputs are adjacent and worst-case; it certifies nothing about other inputs.

References:
    Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer, "Detecting Violations of Differential
    Privacy", CCS 2018. M. Jagielski, J. Ullman, A. Oprea, "Auditing Differentially
    Private Machine Learning: How Private is Private SGD?", NeurIPS 2020. M. Nasr, S. Song,
    A. Thakurta, N. Papernot, N. Carlini, "Adversary Instantiation: Lower Bounds for
    Differentially Private Machine Learning", IEEE S&P 2021.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from rllib_privacy._validation import check_generator, check_int_in_range
from rllib_privacy.audit.bounds import (
    check_confidence,
    check_delta,
    clopper_pearson,
    epsilon_lower_bound,
)

__all__ = ["AuditResult", "audit_mechanism"]

#: Default number of equally spaced quantile levels for continuous statistics.
DEFAULT_NUM_THRESHOLDS = 64
#: Default largest number of distinct statistic values treated as a discrete output.
DEFAULT_MAX_DISCRETE_VALUES = 32
# Tail levels of the quantile grid stop once fewer than this many pooled selection values
# lie beyond them: rarer events cannot support a useful bound.
_MIN_TAIL_COUNT = 8
# Pseudo-count added to both counts when ranking discrete values by likelihood ratio, so that
# a value never seen under one input gets a large but finite ratio.
_RANK_PSEUDO_COUNT = 0.5

Mechanism = Callable[[Any, np.random.Generator], Any]
BatchMechanism = Callable[[Any, int, np.random.Generator], Any]
Statistic = Callable[[np.ndarray], Any]


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """The verdict of ``audit_mechanism``.

    Attributes:
        supported_epsilon: A lower confidence bound (level ``confidence``) on the mechanism's
            true ε at ``delta`` for this pair of inputs, clamped at 0.
        epsilon: The claimed ε.
        delta: The claimed δ (used in the bound).
        passed: ``supported_epsilon <= epsilon``: no statistically supported violation.
        event: The chosen output event, e.g. ``"s > 0.00512"`` or ``"s in {0, 2}"``.
        direction: ``"a>b"`` if the event is more likely on ``input_a`` (the bound is
            ``ln((p_a_lower − δ)/p_b_upper)``), ``"b>a"`` for the reverse.
        count_a: Occurrences of the event among the estimation releases on ``input_a``.
        count_b: The same on ``input_b``.
        num_estimation: Releases per input in the estimation split.
        p_lower: Clopper–Pearson lower bound on the event's probability under the input it
            favours.
        p_upper: Clopper–Pearson upper bound under the other input.
        empirical_epsilon: The point estimate ``ln((p̂_x − δ)/p̂_y)`` on the estimation split
            (clamped at 0; ``inf`` if the event never occurred under the other input).
        confidence: Joint confidence level of the two bounds.
        num_samples: Releases drawn per input (both splits).
        num_events: Number of candidate (event, direction) pairs searched on the selection
            split.
        event_kind: ``"discrete"`` (sets of values) or ``"continuous"`` (intervals).

    """

    supported_epsilon: float
    epsilon: float
    delta: float
    passed: bool
    event: str
    direction: str
    count_a: int
    count_b: int
    num_estimation: int
    p_lower: float
    p_upper: float
    empirical_epsilon: float
    confidence: float
    num_samples: int
    num_events: int
    event_kind: str

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        favoured = "input_a" if self.direction == "a>b" else "input_b"
        return (
            f"privacy audit {verdict}: claimed (epsilon={self.epsilon:.4g}, "
            f"delta={self.delta:.3g}); supported epsilon >= {self.supported_epsilon:.4g} "
            f"at {100 * self.confidence:.6g}% confidence (point estimate "
            f"{self.empirical_epsilon:.4g})\n"
            f"  event {self.event} ({self.event_kind}, more likely on {favoured}): "
            f"{self.count_a}/{self.num_estimation} on input_a vs "
            f"{self.count_b}/{self.num_estimation} on input_b; probability bounds "
            f"{self.p_lower:.4g} (lower) / {self.p_upper:.4g} (upper)\n"
            f"  {self.num_samples} releases per input, {self.num_events} candidate events "
            "searched on the selection split"
        )


def _check_epsilon(epsilon: Any) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise ValueError(f"epsilon must be a number >= 0 (math.inf allowed), got {epsilon!r}")
    if math.isnan(float(epsilon)) or float(epsilon) < 0.0:
        raise ValueError(f"epsilon must be a number >= 0 (math.inf allowed), got {epsilon!r}")
    return float(epsilon)


def _check_fraction(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def _check_callable(name: str, value: Any, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not callable(value):
        allowed = "a callable or None" if optional else "a callable"
        raise ValueError(f"{name} must be {allowed}, got {value!r}")


def _as_numpy(value: Any) -> np.ndarray:
    """Convert a release (numpy, torch tensor on any device, scalar) without importing torch."""
    if not isinstance(value, np.ndarray) and hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _check_releases(releases: np.ndarray, name: str) -> np.ndarray:
    if releases.dtype == object or np.iscomplexobj(releases):
        raise ValueError(f"{name} must return real numbers, got dtype {releases.dtype}")
    if np.issubdtype(releases.dtype, np.floating) and np.isnan(releases).any():
        raise ValueError(f"{name} returned a NaN release")
    return releases


def _draw(
    mechanism: Mechanism,
    batch_mechanism: BatchMechanism | None,
    value: Any,
    num_samples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """``num_samples`` releases on ``value``, stacked along a new first axis."""
    if batch_mechanism is not None:
        releases = _as_numpy(batch_mechanism(value, num_samples, rng))
        if releases.ndim == 0 or releases.shape[0] != num_samples:
            raise ValueError(
                f"batch_mechanism must return {num_samples} releases stacked along the first "
                f"axis, got shape {releases.shape}"
            )
        return _check_releases(releases, "batch_mechanism")
    draws = [_as_numpy(mechanism(value, rng)) for _ in range(num_samples)]
    shapes = {draw.shape for draw in draws}
    if len(shapes) > 1:
        raise ValueError(f"mechanism must return releases of one shape, got {sorted(shapes)}")
    return _check_releases(np.stack(draws), "mechanism")


def _flatten(releases: np.ndarray) -> np.ndarray:
    """The default statistic of one-entry releases: the value itself."""
    return releases.reshape(-1)


def _projection(selection_a: np.ndarray, selection_b: np.ndarray) -> np.ndarray:
    """Direction of the difference of the two inputs' mean releases on the selection split."""
    flat_a = selection_a.reshape(selection_a.shape[0], -1).astype(np.float64)
    flat_b = selection_b.reshape(selection_b.shape[0], -1).astype(np.float64)
    direction = flat_a.mean(axis=0) - flat_b.mean(axis=0)
    norm = float(np.linalg.norm(direction))
    if not math.isfinite(norm) or norm == 0.0:
        # No mean difference to follow (e.g. identical inputs): fall back to the sum.
        return np.ones(direction.shape) / math.sqrt(direction.size)
    return direction / norm


def _apply_statistic(
    statistic: Statistic | np.ndarray, releases: np.ndarray, *, user: bool
) -> np.ndarray:
    if isinstance(statistic, np.ndarray):
        # einsum, not BLAS: every row is summed in the same order whatever the batch, so a
        # release gives bit-identical scores in both splits (discrete events match exactly).
        flat = releases.reshape(releases.shape[0], -1).astype(np.float64)
        values = np.einsum("ij,j->i", flat, statistic)
    else:
        values = _check_releases(_as_numpy(statistic(releases)), "statistic")
    if values.shape != (releases.shape[0],):
        what = "statistic" if user else "the default statistic"
        raise ValueError(
            f"{what} must map {releases.shape[0]} stacked releases to {releases.shape[0]} "
            f"scalars, got shape {values.shape}"
        )
    return values


def _quantile_levels(num_thresholds: int, pooled_size: int) -> np.ndarray:
    """Equally spaced levels plus levels halving towards 0 and 1 (down to a few samples)."""
    uniform = np.linspace(0.0, 1.0, num_thresholds + 2)[1:-1]
    tails = []
    level = 1.0 / (num_thresholds + 1) / 2.0
    while level * pooled_size >= _MIN_TAIL_COUNT:
        tails.append(level)
        level /= 2.0
    tails_array = np.asarray(tails, dtype=np.float64)
    return np.unique(np.concatenate([uniform, tails_array, 1.0 - tails_array]))


@dataclasses.dataclass(frozen=True)
class _Candidates:
    """Candidate events, each with its counts on the selection split."""

    kind: str
    counts_a: np.ndarray
    counts_b: np.ndarray
    # Interval ends (continuous) or value sets (discrete), indexed like the counts.
    lows: np.ndarray | None = None
    highs: np.ndarray | None = None
    value_sets: tuple[tuple[Any, ...], ...] = ()

    def _interval(self, index: int) -> tuple[float, float]:
        """Candidate ``index``'s interval ends (kind ``"continuous"`` sets lows and highs)."""
        assert self.lows is not None and self.highs is not None
        return float(self.lows[index]), float(self.highs[index])

    def estimation_counts(
        self, index: int, values_a: np.ndarray, values_b: np.ndarray
    ) -> tuple[int, int]:
        if self.kind == "continuous":
            low, high = self._interval(index)
            return (
                int(np.count_nonzero((values_a > low) & (values_a <= high))),
                int(np.count_nonzero((values_b > low) & (values_b <= high))),
            )
        members = np.asarray(self.value_sets[index])
        return (
            int(np.count_nonzero(np.isin(values_a, members))),
            int(np.count_nonzero(np.isin(values_b, members))),
        )

    def describe(self, index: int) -> str:
        if self.kind == "continuous":
            low, high = self._interval(index)
            if math.isinf(low):
                return f"s <= {high:.6g}"
            if math.isinf(high):
                return f"s > {low:.6g}"
            return f"{low:.6g} < s <= {high:.6g}"
        return "s in {" + ", ".join(f"{float(v):.6g}" for v in self.value_sets[index]) + "}"


def _continuous_candidates(
    values_a: np.ndarray, values_b: np.ndarray, num_thresholds: int
) -> _Candidates:
    pooled = np.concatenate([values_a, values_b]).astype(np.float64)
    levels = _quantile_levels(num_thresholds, pooled.size)
    # inverted_cdf returns sample values, so every threshold is an observed statistic value.
    grid = np.unique(np.quantile(pooled, levels, method="inverted_cdf"))
    ends = np.concatenate([[-np.inf], grid, [np.inf]])
    # Events (ends[low], ends[high]]: {s <= t} and {s > t} for every grid point t, and the
    # histogram bins between consecutive grid points. Arbitrary unions of bins are not
    # searched: more candidates make the selection split's winner more of a fluke.
    inner = np.arange(1, grid.size + 1)
    low_index = np.concatenate([np.zeros(grid.size, dtype=np.int64), inner, inner[:-1]])
    high_index = np.concatenate([inner, np.full(grid.size, ends.size - 1), inner[1:]])
    lows, highs = ends[low_index], ends[high_index]

    def interval_counts(values: np.ndarray) -> np.ndarray:
        at_most = np.searchsorted(np.sort(values.astype(np.float64)), ends, side="right")
        return at_most[high_index] - at_most[low_index]

    return _Candidates(
        kind="continuous",
        counts_a=interval_counts(values_a),
        counts_b=interval_counts(values_b),
        lows=lows,
        highs=highs,
    )


def _discrete_candidates(
    values_a: np.ndarray, values_b: np.ndarray, distinct: np.ndarray
) -> _Candidates:
    count_a = np.array([np.count_nonzero(values_a == v) for v in distinct])
    count_b = np.array([np.count_nonzero(values_b == v) for v in distinct])
    ratio = (count_a + _RANK_PSEUDO_COUNT) / (count_b + _RANK_PSEUDO_COUNT)
    sets: list[tuple[int, ...]] = [(i,) for i in range(distinct.size)]
    # Optimal events of a likelihood-ratio test are upper sets of the ratio: take every
    # prefix of the values ranked by it, for each direction (the whole space excluded).
    for order in (np.argsort(-ratio, kind="stable"), np.argsort(ratio, kind="stable")):
        sets.extend(tuple(sorted(order[:length])) for length in range(2, distinct.size))
    sets = list(dict.fromkeys(sets))
    return _Candidates(
        kind="discrete",
        counts_a=np.array([count_a[list(s)].sum() for s in sets], dtype=np.int64),
        counts_b=np.array([count_b[list(s)].sum() for s in sets], dtype=np.int64),
        value_sets=tuple(tuple(distinct[list(s)]) for s in sets),
    )


def audit_mechanism(
    mechanism: Mechanism,
    input_a: Any,
    input_b: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    num_samples: int,
    rng: np.random.Generator | None,
    statistic: Statistic | None = None,
    confidence: float = 0.95,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    batch_mechanism: BatchMechanism | None = None,
    selection_fraction: float = 0.5,
    max_discrete_values: int = DEFAULT_MAX_DISCRETE_VALUES,
) -> AuditResult:
    """Audit a mechanism's (ε, δ) claim on one pair of adjacent inputs (black box).

    See the module docstring for the method and the guarantee: ``supported_epsilon`` is a
    ``confidence``-level lower confidence bound on the true ε of the implementation at
    ``delta`` for these inputs, and ``passed`` is ``supported_epsilon <= epsilon``. Choose
    inputs that are adjacent under the claim's sensitivity assumption and worst-case (e.g.
    gradients at opposite ends of the clipping ball); an audit on easy inputs has no power.

    Statistic (``statistic=None``): a scalar release (or an array of one entry) is its own
    statistic; integer and boolean releases (labels) are discrete. A vector release is
    projected onto the difference of the two inputs' mean releases, estimated on the
    selection split only (so the estimation split stays untouched; the projection is the
    likelihood-ratio statistic for a location shift in isotropic noise, e.g. Laplace or
    Gaussian noise on a gradient). Pass ``statistic`` when a better test statistic is
    known, e.g. the log-likelihood ratio of the mechanism's output distributions.

    Speed: the per-call path calls ``mechanism(x, rng)`` ``2·num_samples`` times (tens of
    microseconds each for numpy mechanisms). Give ``batch_mechanism(x, n, rng)`` returning
    n releases stacked along the first axis to draw 10⁵–10⁶ releases in seconds; it must
    draw from the same distribution as ``mechanism``.

    Args:
        mechanism: ``mechanism(x, rng) -> release`` (scalar, array or torch tensor; int for
            labels); one call is one release. Used when ``batch_mechanism`` is None (it may
            be None otherwise). A mechanism may ignore ``rng`` and draw from its own source
            (e.g. OS entropy in a secure mode); the audit stays valid, only not reproducible.
        input_a: The first input, passed to the mechanism unchanged.
        input_b: An input adjacent to ``input_a``.
        epsilon: The claimed ε, a number >= 0 (``math.inf`` allowed; it always passes).
        delta: The claimed δ, a number in [0, 1).
        num_samples: Releases drawn per input, an int >= 4 (half of them by default select
            the event, the other half estimate it).
        rng: numpy Generator passed to the mechanism (None: a fresh unseeded one). A seeded
            generator makes the audit deterministic.
        statistic: ``statistic(releases) -> scores``: maps the stacked releases (shape
            ``(n, ...)``) to n real scores; None for the default above.
        confidence: Confidence level of the bound, in (0, 1).
        num_thresholds: Equally spaced quantile levels of the threshold grid for continuous
            statistics, an int in [1, 1000] (tail levels are added).
        batch_mechanism: Optional ``batch_mechanism(x, n, rng) -> releases`` (n stacked
            releases), used instead of ``mechanism`` when given.
        selection_fraction: Fraction of each input's releases in the selection split, in
            (0, 1); both splits must get at least 2 releases.
        max_discrete_values: At most this many distinct statistic values in the selection
            split make the output discrete (events are sets of values); an int >= 0 (0:
            always use intervals).

    Returns:
        An ``AuditResult``.

    Raises:
        ValueError: If an argument is invalid (the message names it), the mechanism returns
            a NaN, complex or ragged release, ``batch_mechanism`` returns the wrong number
            of releases, or ``statistic`` returns the wrong shape or NaN.

    """
    _check_callable("mechanism", mechanism, optional=batch_mechanism is not None)
    _check_callable("batch_mechanism", batch_mechanism, optional=True)
    _check_callable("statistic", statistic, optional=True)
    epsilon = _check_epsilon(epsilon)
    delta = check_delta(delta)
    num_samples = check_int_in_range("num_samples", num_samples, low=4)
    confidence = check_confidence(confidence)
    num_thresholds = check_int_in_range("num_thresholds", num_thresholds, low=1, high=1000)
    selection_fraction = _check_fraction("selection_fraction", selection_fraction)
    max_discrete_values = check_int_in_range("max_discrete_values", max_discrete_values, low=0)
    num_selection = int(round(num_samples * selection_fraction))
    if not 2 <= num_selection <= num_samples - 2:
        raise ValueError(
            f"selection_fraction={selection_fraction!r} with num_samples={num_samples} leaves "
            f"{num_selection} selection and {num_samples - num_selection} estimation releases; "
            "both must be >= 2"
        )
    rng = check_generator(rng)

    releases_a = _draw(mechanism, batch_mechanism, input_a, num_samples, rng)
    releases_b = _draw(mechanism, batch_mechanism, input_b, num_samples, rng)
    if releases_a.shape[1:] != releases_b.shape[1:]:
        raise ValueError(
            "the mechanism must return releases of one shape for input_a and input_b, got "
            f"{releases_a.shape[1:]} and {releases_b.shape[1:]}"
        )

    selection_a, estimation_a = releases_a[:num_selection], releases_a[num_selection:]
    selection_b, estimation_b = releases_b[:num_selection], releases_b[num_selection:]
    if statistic is not None:
        reduce: Statistic | np.ndarray = statistic
    elif releases_a[0].size == 1:
        reduce = _flatten
    else:
        reduce = _projection(selection_a, selection_b)
    user = statistic is not None
    values_a = _apply_statistic(reduce, selection_a, user=user)
    values_b = _apply_statistic(reduce, selection_b, user=user)

    distinct = np.unique(np.concatenate([values_a, values_b]))
    if distinct.size <= max_discrete_values:
        candidates = _discrete_candidates(values_a, values_b, distinct)
    else:
        candidates = _continuous_candidates(values_a, values_b, num_thresholds)

    # Score both directions of every candidate on the selection split with the same bound,
    # Bonferroni-corrected over the candidates: simultaneous bounds stop a rare event whose
    # ratio is high by luck from beating a frequent one (the winner's curse), which would
    # waste the estimation split on an event that cannot support much.
    num_scored = 2 * candidates.counts_a.size
    selection_confidence = 1.0 - (1.0 - confidence) / num_scored
    scores = np.concatenate(
        [
            epsilon_lower_bound(x, y, num_selection, delta=delta, confidence=selection_confidence)
            for x, y in (
                (candidates.counts_a, candidates.counts_b),
                (candidates.counts_b, candidates.counts_a),
            )
        ]
    )
    best = int(np.argmax(scores))
    num_candidates = candidates.counts_a.size
    index, reverse = best % num_candidates, best >= num_candidates

    num_estimation = num_samples - num_selection
    count_a, count_b = candidates.estimation_counts(
        index,
        _apply_statistic(reduce, estimation_a, user=user),
        _apply_statistic(reduce, estimation_b, user=user),
    )
    count_x, count_y = (count_b, count_a) if reverse else (count_a, count_b)
    bound = float(
        epsilon_lower_bound(count_x, count_y, num_estimation, delta=delta, confidence=confidence)
    )
    supported = max(0.0, bound)
    p_lower = float(clopper_pearson(count_x, num_estimation, confidence)[0])
    p_upper = float(clopper_pearson(count_y, num_estimation, confidence)[1])
    p_x, p_y = count_x / num_estimation, count_y / num_estimation
    if p_x <= delta:
        empirical = 0.0
    elif p_y == 0.0:
        empirical = math.inf
    else:
        empirical = max(0.0, math.log((p_x - delta) / p_y))
    return AuditResult(
        supported_epsilon=supported,
        epsilon=epsilon,
        delta=delta,
        passed=supported <= epsilon,
        event=candidates.describe(index),
        direction="b>a" if reverse else "a>b",
        count_a=count_a,
        count_b=count_b,
        num_estimation=num_estimation,
        p_lower=p_lower,
        p_upper=p_upper,
        empirical_epsilon=empirical,
        confidence=confidence,
        num_samples=num_samples,
        num_events=int(scores.size),
        event_kind=candidates.kind,
    )
