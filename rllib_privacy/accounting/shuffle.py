"""Privacy amplification by shuffling: ε of n shuffled ε₀-LDP reports (no Ray import).

Feldman, McMillan & Talwar, "Hiding Among the Clones: A Simple and Nearly Optimal Analysis
of Privacy Amplification by Shuffling", FOCS 2021 (arXiv:2012.12803), abbreviated FMT21.

Setting: each of n users sends **one** report produced by an ε₀-DP local randomizer
(pure ε₀-LDP; in PGC-A3C one privatized gradient), and a *trusted* shuffler applies a
uniformly random permutation to the n reports before the aggregator sees them. The
shuffled batch is then (ε, δ)-DP with respect to any one user's data, with ε much smaller
than ε₀ when n is large. The guarantee is per batch and per report: a user who contributes
several reports (or to several batches) must still compose the resulting (ε, δ) guarantees.

Two bounds are provided:

* ``shuffle_epsilon_closed_form``, the closed form of FMT21's main theorem;
* ``shuffle_epsilon``, FMT21's numerical bound (their Appendix E, reference code
  ``apple/ml-shuffling-amplification``), which is much tighter and is never above the
  closed form nor ε₀.

The numerical bound rests on FMT21's reduction ("clones"): for neighbouring datasets the
shuffled output is a post-processing of the pair

* ``P = α·Bin(C, ½) + (1-α)·(Bin(C, ½) + 1)``,
* ``Q = (1-α)·Bin(C, ½) + α·(Bin(C, ½) + 1)``,

with ``α = e^ε₀ / (e^ε₀ + 1)`` and ``C ~ Bin(n - 1, e^-ε₀)`` (the number of other users
whose report is distributed like a "clone" of the differing user's). So the batch is
(ε, δ)-DP with ``δ = max(E_C[D_{e^ε}(P_C || Q_C)], E_C[D_{e^ε}(Q_C || P_C)])``, where
``D_{e^ε}(P || Q) = sup_S P(S) - e^ε Q(S)`` is the hockey-stick divergence; the numerical
bound computes an upper bound on that δ for a given ε and binary-searches the smallest ε
whose δ is at most the target.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any

import numpy as np
from scipy import stats

from rllib_privacy._validation import check_finite_positive, check_int_in_range

__all__ = [
    "local_epsilon_for_central",
    "shuffle_epsilon",
    "shuffle_epsilon_closed_form",
    "shuffled_rounds_epsilon",
]

# Default binary-search iterations: the bracket [0, min(ε₀, closed form)] shrinks to
# 2^-30 of its width, far below any ε that is worth reporting.
_DEFAULT_ITERATIONS = 30
# Mass of C left unexamined is charged as worst case (δ contribution 1 per unit of mass);
# stop examining once that mass is below this fraction of the target δ.
_TAIL_FRACTION = 1e-6
# Above this ε₀ there are no clones (e^-ε₀ < 1e-304) and the analysis gives ε = ε₀ - O(δ);
# ε₀ itself is returned, which also keeps e^ε finite.
_NO_CLONES_EPSILON0 = 700.0
# n must be exact as a float64 for the binomial computations.
_MAX_REPORTS = 2**53


def _check_delta(delta: Any) -> float:
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
    as_float = float(delta)
    if not 0.0 < as_float < 1.0:  # also rejects NaN
        raise ValueError(f"delta must be a number in (0, 1), got {as_float!r}")
    return as_float


def _check_args(epsilon0: Any, num_reports: Any, delta: Any) -> tuple[float, int, float]:
    return (
        check_finite_positive("epsilon0", epsilon0),
        check_int_in_range("num_reports", num_reports, low=1, high=_MAX_REPORTS),
        _check_delta(delta),
    )


def _closed_form(epsilon0: float, n: int, delta: float) -> float:
    # The theorem's regime: ε₀ <= log(n / (16 log(2/δ))).
    if epsilon0 > math.log(n) - math.log(16.0 * math.log(2.0 / delta)):
        return epsilon0
    e0 = math.exp(epsilon0)
    slack = 8.0 * math.sqrt(e0 * math.log(4.0 / delta) / n) + 8.0 * e0 / n
    return min(epsilon0, math.log1p(math.tanh(epsilon0 / 2.0) * slack))


def shuffle_epsilon_closed_form(epsilon0: float, num_reports: int, delta: float) -> float:
    """Return FMT21's closed-form ε for n shuffled ε₀-LDP reports at a given δ.

    Theorem (FMT21 §3, the closed-form amplification bound for pure ε₀-DP local
    randomizers; arXiv:2012.12803): let each of the n reports come from an ε₀-DP local
    randomizer (chosen adaptively is allowed) and let a trusted shuffler permute them
    uniformly at random. For δ in (0, 1) with ``ε₀ <= log(n / (16 log(2/δ)))``, the
    shuffled output is (ε, δ)-DP with

    ``ε <= log(1 + (e^ε₀ - 1)/(e^ε₀ + 1) · (8 √(e^ε₀ log(4/δ)) / √n + 8 e^ε₀ / n))``.

    Outside that regime no amplification is claimed and ε₀ is returned (shuffling is
    post-processing, so the batch is always ε₀-DP for each user's one report).

    Note: the authors' reference code (``closedformanalysis``) uses a slightly *looser*
    variant: the regime condition with ``log(4/δ)`` instead of ``log(2/δ)``, and the factor
    ``(e^ε₀ - 1)/(e^ε₀ + 1/(1 + s))``, ``s`` the bracketed sum, instead of
    ``(e^ε₀ - 1)/(e^ε₀ + 1)``. This function follows the theorem as the paper states it.

    Args:
        epsilon0: ε₀ of each report's local randomizer, a finite number > 0.
        num_reports: n, the number of shuffled reports, an int >= 1.
        delta: The target δ, in (0, 1).

    Returns:
        An upper bound on ε, never above ``epsilon0``.

    Raises:
        ValueError: Naming the argument, if one is out of range.

    """
    return _closed_form(*_check_args(epsilon0, num_reports, delta))


def _blocks(
    n: int, epsilon0: float, step: int, tail: float, reference_layout: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Cut C's likely values into blocks, most likely first; return (lo, hi, mass, rest).

    ``C ~ Bin(n-1, e^-ε₀)``. Blocks alternate above and below ``m = ceil(E[C])``:
    ``[m, m+step-1]``, ``[m-step, m-1]``, ``[m+step, m+2 step-1]``,
    ``[m-2 step, m-step-1]``, ... clipped to the support {0, ..., n-1}. With
    ``reference_layout`` the blocks above m are those of the reference code instead:
    ``[m, m+step]``, ``[m+step+1, m+2 step]``, ... Only blocks that reach into the central
    interval outside which C has mass <= ``tail`` are made; ``rest`` is C's mass outside
    the blocks.
    """
    top = n - 1
    p = math.exp(-epsilon0)
    mid = min(math.ceil(top * p), top)
    lowest = int(max(stats.binom.ppf(tail / 2.0, top, p), 0))
    highest = int(min(stats.binom.isf(tail / 2.0, top, p), top))
    num = max(mid - lowest, highest - mid, 0) // step + 2
    j = np.arange(1, num + 1, dtype=np.int64)
    shift = 1 if reference_layout else 0
    up_lo = mid + (j - 1) * step + shift * (j > 1)
    up_hi = np.minimum(mid + j * step - 1 + shift, top)
    down_lo = np.maximum(mid - j * step, 0)
    down_hi = mid - (j - 1) * step - 1
    lo = np.stack([up_lo, down_lo], axis=1).ravel()
    hi = np.stack([up_hi, down_hi], axis=1).ravel()
    keep = lo <= hi
    lo, hi = lo[keep], hi[keep]
    # Masses under Bin(n-1, p): from the cdf below the mean, from the survival function
    # above it, so that small tail masses keep their relative precision.
    above = lo >= mid
    mass = np.where(
        above,
        stats.binom.sf(lo - 1, top, p) - stats.binom.sf(hi, top, p),
        stats.binom.cdf(hi, top, p) - stats.binom.cdf(lo - 1, top, p),
    )
    rest = float(stats.binom.cdf(lo.min() - 1, top, p) + stats.binom.sf(hi.max(), top, p))
    return lo, hi, np.maximum(mass, 0.0), rest


def _hockey_sticks(c: np.ndarray, epsilon: float, epsilon0: float) -> tuple[np.ndarray, np.ndarray]:
    """Return ``D_{e^ε}(P_c || Q_c)`` and ``D_{e^ε}(Q_c || P_c)`` for each clone count c.

    ``P_c = α·A + (1-α)·(A+1)`` and ``Q_c = (1-α)·A + α·(A+1)`` with ``A ~ Bin(c, ½)``.
    With ``r(x) = Pr[A = x] / Pr[A = x-1] = (c+1-x)/x`` (decreasing in x),
    ``P_c(x)/Q_c(x) = (α r + 1-α) / ((1-α) r + α)`` increases with r, so it is >= e^ε
    exactly when ``r >= ρ`` with ``ρ = (e^ε - e^-ε₀) / (1 - e^(ε-ε₀))``, i.e. when
    ``x <= (c+1)/(1+ρ)``; likewise ``Q_c(x)/P_c(x) >= e^ε`` exactly when
    ``x >= (c+1) ρ/(1+ρ)``. Each divergence is the e^ε-weighted difference of the two
    distributions' masses on that set. Requires 0 <= ε < ε₀.
    """
    exp_eps = math.exp(epsilon)
    alpha = 1.0 / (1.0 + math.exp(-epsilon0))
    rho = (exp_eps - math.exp(-epsilon0)) / -math.expm1(epsilon - epsilon0)
    c_plus_1 = c + 1.0

    # P over Q: the set {x <= t}.
    t = np.floor(c_plus_1 / (1.0 + rho))
    f_t = stats.binom.cdf(t, c, 0.5)
    f_t1 = stats.binom.cdf(t - 1.0, c, 0.5)
    p_set = alpha * f_t + (1.0 - alpha) * f_t1
    q_set = (1.0 - alpha) * f_t + alpha * f_t1
    d_pq = p_set - exp_eps * q_set

    # Q over P: the set {x > s} (the boundary x = s, if integral, contributes 0).
    s = np.floor(c_plus_1 * (rho / (1.0 + rho)))
    g_s = stats.binom.sf(s, c, 0.5)
    g_s1 = stats.binom.sf(s - 1.0, c, 0.5)
    q_set = (1.0 - alpha) * g_s + alpha * g_s1
    p_set = alpha * g_s + (1.0 - alpha) * g_s1
    d_qp = q_set - exp_eps * p_set
    return np.maximum(d_pq, 0.0), np.maximum(d_qp, 0.0)


class _DeltaBound:
    """Upper bound on the shuffled δ at a given ε, for fixed (ε₀, n, step, target δ)."""

    def __init__(
        self, epsilon0: float, n: int, step: int, delta: float, reference_mode: bool
    ) -> None:
        self.epsilon0 = epsilon0
        self.reference_mode = reference_mode
        tail = _TAIL_FRACTION * delta
        lo, hi, mass, rest = _blocks(n, epsilon0, step, tail, reference_mode)
        # remaining[k]: mass of C outside blocks 0, ..., k-1 (suffix sums, accurate when
        # small).
        remaining = np.append(np.cumsum(mass[::-1])[::-1], 0.0) + rest
        # Examine blocks until the rest weighs less than _TAIL_FRACTION · δ; the rest is
        # charged in full.
        small = np.flatnonzero(remaining <= tail)
        cut = int(small[0]) if small.size else mass.size
        self.mass = mass[:cut]
        self.remaining = remaining[: cut + 1]
        ends = np.concatenate([lo[:cut], hi[:cut]])
        self.c_values, inverse = np.unique(ends, return_inverse=True)
        self.lo_index = inverse[:cut]
        self.hi_index = inverse[cut:]

    def __call__(self, epsilon: float) -> float:
        d_pq, d_qp = _hockey_sticks(self.c_values.astype(np.float64), epsilon, self.epsilon0)
        # Within a block the divergences are largest at one of its ends (they decrease
        # with the number of clones; FMT21 App. E), so each block is charged at its worse
        # end.
        add_pq = self.mass * np.maximum(d_pq[self.lo_index], d_pq[self.hi_index])
        add_qp = self.mass * np.maximum(d_qp[self.lo_index], d_qp[self.hi_index])
        if not self.reference_mode:
            return float(max(add_pq.sum(), add_qp.sum()) + self.remaining[-1])
        # reference_mode (the reference code's shortcut, kept only to reproduce its numbers
        # in the tests): stop at the first block at which the unexamined mass is below both
        # running sums and charge that mass in full. Valid, but it can nearly double δ (the
        # mass is charged at 1, not at the divergence of those clone counts, ~δ).
        sum_pq = np.concatenate([[0.0], np.cumsum(add_pq)])
        sum_qp = np.concatenate([[0.0], np.cumsum(add_qp)])
        stop = (self.remaining < sum_pq) & (self.remaining < sum_qp)
        k = int(np.argmax(stop)) if stop.any() else self.remaining.size - 1
        return float(max(sum_pq[k], sum_qp[k]) + self.remaining[k])


@functools.lru_cache(maxsize=1024)
def _numerical(
    epsilon0: float,
    n: int,
    delta: float,
    num_iterations: int,
    step: int,
    reference_mode: bool = False,
) -> float:
    upper = _closed_form(epsilon0, n, delta)
    if n == 1 or epsilon0 >= _NO_CLONES_EPSILON0:
        return upper
    delta_at = _DeltaBound(epsilon0, n, step, delta, reference_mode)
    low, high = 0.0, upper
    # Invariant: the batch is (high, delta)-DP (by the theorem or by the numerical bound).
    for _ in range(num_iterations):
        middle = 0.5 * (low + high)
        if delta_at(middle) <= delta:
            high = middle
        else:
            low = middle
    return high


def shuffle_epsilon(
    epsilon0: float,
    num_reports: int,
    delta: float,
    *,
    num_iterations: int = _DEFAULT_ITERATIONS,
    step: int = 1,
) -> float:
    """Return FMT21's numerical bound on ε for n shuffled ε₀-LDP reports at a given δ.

    Theorem (FMT21 §3, the reduction to the two binomial mixtures below, evaluated
    numerically as in their Appendix E): let each of the n reports come from an ε₀-DP
    local randomizer and let a trusted shuffler permute them uniformly at random. Then
    for every ε in [0, ε₀) the shuffled output is (ε, δ(ε))-DP with respect to each
    user's one report, where

    ``δ(ε) = max(E_C[D_{e^ε}(P_C || Q_C)], E_C[D_{e^ε}(Q_C || P_C)])``,
    ``C ~ Bin(n-1, e^-ε₀)``, ``P_c = α·Bin(c, ½) + (1-α)·(Bin(c, ½) + 1)``,
    ``Q_c = (1-α)·Bin(c, ½) + α·(Bin(c, ½) + 1)``, ``α = e^ε₀/(e^ε₀ + 1)``

    (``D_{e^ε}`` is the hockey-stick divergence). This function computes an upper bound on
    δ(ε) and binary-searches the smallest ε in ``[0, shuffle_epsilon_closed_form(...)]``
    whose bound is <= ``delta``, returning the upper end of the final bracket, so the
    result is an upper bound on ε: never above ε₀ nor the closed form.

    The upper bound on δ(ε): C's support is cut into blocks of ``step`` values; each
    block's mass is charged at the larger divergence of its two ends (the divergences
    decrease in c, FMT21 App. E), and C's mass outside the blocks, at most
    ``1e-6 · delta``, is charged in full. With the default ``step=1`` every likely clone
    count is evaluated exactly, so δ(ε) is computed up to that tail; larger steps are
    cheaper and looser (the reference code's example uses 100). The cost grows like
    ``√n / step``: about 0.2 s for n = 10⁵ with ``step=1``.

    For ε₀ >= 700 there are no clones to speak of and ε₀ is returned.

    Assumptions: the n reports are each ε₀-DP (pure LDP), one report per user in the batch,
    shuffled by a trusted shuffler that the aggregator cannot link back to users; δ > 0.
    ``num_reports == 1`` gives ε₀ (nothing to hide among).

    Differences from the authors' reference code (``computeamplification.py``; with its
    block layout, ``step`` and stopping rule this computation reproduces its numbers to
    ~1e-8, see the tests): (1) it stops at the first block after which C's unexamined
    mass is below the running δ and charges that mass in full, which is valid but can
    nearly double δ with small steps; here all likely blocks are summed, so the result is
    smaller (e.g. ε₀ = 4, n = 10⁴, δ = 1e-6: 0.60 here, 0.89 there with step 100); (2) it
    charges the Q-over-P side of a block at its upper end only (a typo; harmless for
    validity, since both sides are equal by symmetry, but it moves that stopping point);
    (3) it visits no block at all when ``n <= step`` and then returns ε ≈ 0, which is
    *not* an upper bound; here C's whole support is covered.

    Args:
        epsilon0: ε₀ of each report's local randomizer, a finite number > 0.
        num_reports: n, the number of shuffled reports, an int >= 1.
        delta: The target δ, in (0, 1).
        num_iterations: Binary-search iterations, an int >= 1; the result is within
            ``2^-num_iterations · closed form`` above the numerical bound's exact ε.
        step: Width of the blocks of clone counts, an int >= 1.

    Returns:
        An upper bound on ε, at most ``min(epsilon0, shuffle_epsilon_closed_form(...))``.

    Raises:
        ValueError: Naming the argument, if one is out of range.

    """
    epsilon0, num_reports, delta = _check_args(epsilon0, num_reports, delta)
    num_iterations = check_int_in_range("num_iterations", num_iterations, low=1)
    step = check_int_in_range("step", step, low=1)
    return _numerical(epsilon0, num_reports, delta, num_iterations, step)


def shuffled_rounds_epsilon(
    epsilon0: float, num_reports: int, delta: float, *, rounds: int = 1
) -> float:
    """Return the central ε, at total δ, of ``rounds`` shuffled batches of ε₀-LDP reports.

    An agent that submits ``rounds`` times appears in up to ``rounds`` batches, each of
    ``num_reports`` shuffled reports. Each batch is (ε_b, δ/rounds)-DP for that agent with
    ``ε_b = shuffle_epsilon(ε₀, n, δ/rounds)``, and basic composition (valid for adaptively
    chosen mechanisms) makes the ``rounds`` batches ``(rounds·ε_b, δ)``-DP.

    Args:
        epsilon0: ε₀ of each report's local randomizer, a finite number > 0.
        num_reports: n, the number of shuffled reports per batch, an int >= 1.
        delta: The total target δ over all rounds, in (0, 1).
        rounds: T, the number of batches the agent appears in, an int >= 1.

    Returns:
        An upper bound on the central ε of the ``rounds`` batches.

    Raises:
        ValueError: Naming the argument, if one is out of range.

    """
    epsilon0, num_reports, delta = _check_args(epsilon0, num_reports, delta)
    rounds = check_int_in_range("rounds", rounds, low=1)
    return rounds * _numerical(epsilon0, num_reports, delta / rounds, _DEFAULT_ITERATIONS, 1)


# Search range for local_epsilon_for_central: below _MIN_LOCAL_EPSILON the answer is not
# worth reporting (and the binomials degenerate); above _NO_CLONES_EPSILON0 there is no
# amplification left.
_MIN_LOCAL_EPSILON = 1e-9
_LOCAL_SEARCH_ITERATIONS = 40


def local_epsilon_for_central(
    central_epsilon: float, num_reports: int, delta: float, *, rounds: int = 1
) -> float:
    """Return the largest ε₀ whose shuffled, composed central ε is <= ``central_epsilon``.

    Inverts [shuffled_rounds_epsilon][rllib_privacy.accounting.shuffle.shuffled_rounds_epsilon]
    in ε₀ by bisection (the central ε increases with ε₀): the result ε₀ satisfies
    ``shuffled_rounds_epsilon(ε₀, num_reports, delta, rounds=rounds) <= central_epsilon``,
    and is within a relative 2^-40 of the largest such ε₀. It is never below
    ``central_epsilon / rounds`` (shuffling is post-processing: no amplification is the
    worst case) and is capped at 700 (no clones are left above it) unless that floor is
    higher.

    Args:
        central_epsilon: The target central ε over all ``rounds``, a finite number > 0.
        num_reports: n, the number of shuffled reports per batch, an int >= 1.
        delta: The total target δ over all rounds, in (0, 1).
        rounds: T, the number of batches each agent appears in, an int >= 1.

    Returns:
        ε₀ for each report's local randomizer.

    Raises:
        ValueError: Naming the argument, if one is out of range, or naming
            ``central_epsilon`` if it needs ε₀ below 1e-9.

    """
    central_epsilon = check_finite_positive("central_epsilon", central_epsilon)
    num_reports = check_int_in_range("num_reports", num_reports, low=1, high=_MAX_REPORTS)
    delta = _check_delta(delta)
    rounds = check_int_in_range("rounds", rounds, low=1)

    def central(epsilon0: float) -> float:
        return shuffled_rounds_epsilon(epsilon0, num_reports, delta, rounds=rounds)

    # Shuffling is post-processing, so each batch is ε₀-DP: ε₀ = central_epsilon / rounds
    # always reaches the target, which starts the bracket (and bounds the search).
    floor = central_epsilon / rounds
    if floor < _MIN_LOCAL_EPSILON or central(floor) > central_epsilon:
        raise ValueError(
            f"central_epsilon={central_epsilon!r} is unreachable with num_reports="
            f"{num_reports}, delta={delta!r}, rounds={rounds}: it needs a local epsilon "
            f"below {_MIN_LOCAL_EPSILON}"
        )
    if floor >= _NO_CLONES_EPSILON0 or central(_NO_CLONES_EPSILON0) <= central_epsilon:
        return max(floor, _NO_CLONES_EPSILON0)
    # Bisection on log ε₀ (the bracket can span orders of magnitude); invariant:
    # central(exp(low)) <= central_epsilon < central(exp(high)).
    low, high = math.log(floor), math.log(_NO_CLONES_EPSILON0)
    for _ in range(_LOCAL_SEARCH_ITERATIONS):
        middle = 0.5 * (low + high)
        if central(math.exp(middle)) <= central_epsilon:
            low = middle
        else:
            high = middle
    return math.exp(low)
