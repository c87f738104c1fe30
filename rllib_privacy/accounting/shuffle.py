"""Privacy amplification by shuffling: ε of n shuffled ε₀-LDP reports (no Ray import).

Setting: each of n users sends **one** report produced by an ε₀-DP local randomizer
(pure ε₀-LDP; in PGC-A3C one privatized gradient, e.g. from PrivUnitG), and a *trusted*
shuffler applies a uniformly random permutation to the n reports before the aggregator
sees them. The shuffled batch is then (ε, δ)-DP with respect to any one user's data (one
user's data replaced), with ε much smaller than ε₀ when n is large. The guarantee is per
batch; a user who contributes to several batches composes them
([shuffled_rounds_epsilon][rllib_privacy.accounting.shuffle.shuffled_rounds_epsilon]).

Bounds, all valid for every ε₀-LDP randomizer (they use nothing but ε₀):

* ``shuffle_epsilon(..., analysis="stronger_clone")`` (the default): Feldman, McMillan &
  Talwar, "Stronger Privacy Amplification by Shuffling for Rényi and Approximate
  Differential Privacy", SODA 2023, evaluated numerically; the same pair as the
  variation-ratio reduction of Wang et al., VLDB 2024, for a generic ε₀-LDP randomizer;
* ``shuffle_epsilon(..., analysis="fmt21")``: Feldman, McMillan & Talwar, "Hiding Among the
  Clones", FOCS 2021 (FMT21), numerical bound (their Appendix E, reference code
  ``apple/ml-shuffling-amplification``);
* ``shuffle_epsilon_closed_form``: FMT21's closed form.

The reductions and their numerics are in ``rllib_privacy.accounting.shuffle_clones``.
``binary_rr_shuffle_epsilon`` is the *exact* ε of n shuffled binary randomized responses:
a lower limit that no bound valid for every ε₀-LDP randomizer can go below.

Figures at ε₀ = 1, n = 2048, δ = 1e-6: FMT21 0.1242, stronger clone 0.1012, binary
randomized response (exact) 0.0850.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import optimize, stats

from rllib_privacy._validation import check_choice, check_finite_positive, check_int_in_range
from rllib_privacy.accounting.shuffle_clones import (
    ANALYSES,
    TAIL_FRACTION,
    DeltaBound,
    batch_privacy_loss,
    clone_probability,
)

__all__ = [
    "ANALYSES",
    "COMPOSITIONS",
    "DEFAULT_ANALYSIS",
    "binary_rr_shuffle_epsilon",
    "local_epsilon_for_central",
    "shuffle_epsilon",
    "shuffle_epsilon_closed_form",
    "shuffled_rounds_epsilon",
]

# The tightest analysis valid for every ε₀-LDP randomizer.
DEFAULT_ANALYSIS = "stronger_clone"
# Composition over the batches an agent appears in (shuffled_rounds_epsilon).
COMPOSITIONS = ("pld", "basic")
# Default binary-search iterations: the bracket [0, min(ε₀, closed form)] shrinks to
# 2^-30 of its width, far below any ε that is worth reporting.
_DEFAULT_ITERATIONS = 30
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


def _bisect_epsilon(
    delta_at: Callable[[float], float], delta: float, upper: float, num_iterations: int
) -> tuple[float, float]:
    """Bisect [0, upper] for the ε where ``delta_at`` (decreasing) meets ``delta``.

    Returns the final bracket ``(low, high)``: ``delta_at(high) <= delta`` unless
    ``high == upper``, and ``delta_at(low) > delta`` unless ``low == 0``.
    """
    low, high = 0.0, upper
    for _ in range(num_iterations):
        middle = 0.5 * (low + high)
        if delta_at(middle) <= delta:
            high = middle
        else:
            low = middle
    return low, high


def _check_analysis(analysis: Any) -> str:
    return check_choice("analysis", analysis, tuple(ANALYSES))


@functools.lru_cache(maxsize=1024)
def _numerical(
    epsilon0: float,
    n: int,
    delta: float,
    num_iterations: int,
    step: int,
    reference_mode: bool = False,
    analysis: str = DEFAULT_ANALYSIS,
) -> float:
    upper = _closed_form(epsilon0, n, delta)
    if n == 1 or epsilon0 >= _NO_CLONES_EPSILON0:
        return upper
    delta_at = DeltaBound(
        epsilon0, n, step, delta, reference_mode, clone_probability(analysis, epsilon0)
    )
    # The batch is (upper, delta)-DP by the theorem, and (high, delta)-DP by the numerics.
    return _bisect_epsilon(delta_at, delta, upper, num_iterations)[1]


def shuffle_epsilon(
    epsilon0: float,
    num_reports: int,
    delta: float,
    *,
    num_iterations: int = _DEFAULT_ITERATIONS,
    step: int = 1,
    analysis: str = DEFAULT_ANALYSIS,
) -> float:
    """Return a numerical upper bound on ε for n shuffled ε₀-LDP reports at a given δ.

    Theorem (a clone reduction, evaluated numerically): let each of the n reports come
    from an ε₀-DP local randomizer (adaptively chosen ones included) and let a trusted
    shuffler permute them uniformly at random. Then for every ε in [0, ε₀) the shuffled
    output is (ε, δ(ε))-DP with respect to each user's one report, where

    ``δ(ε) = max(E_C[D_{e^ε}(P_C || Q_C)], E_C[D_{e^ε}(Q_C || P_C)])``,
    ``C ~ Bin(n-1, p_clone)``, ``P_c = α·Bin(c, ½) + (1-α)·(Bin(c, ½) + 1)``,
    ``Q_c = (1-α)·Bin(c, ½) + α·(Bin(c, ½) + 1)``, ``α = e^ε₀/(e^ε₀ + 1)``

    (``D_{e^ε}`` is the hockey-stick divergence), with the clone probability

    * ``analysis="stronger_clone"`` (default): ``p_clone = 2/(e^ε₀ + 1)``, Feldman,
      McMillan & Talwar, SODA 2023 (arXiv:2208.04591); equal to Wang et al.'s
      variation-ratio bound (VLDB 2024) for a generic ε₀-LDP randomizer;
    * ``analysis="fmt21"``: ``p_clone = e^-ε₀``, Feldman, McMillan & Talwar, FOCS 2021
      (arXiv:2012.12803), §3 and Appendix E.

    Both are valid for every ε₀-DP local randomizer (PrivUnitG, PrivUnit2, Laplace,
    randomized response, ...); the stronger clone is never larger. This function
    computes an upper bound on δ(ε) and binary-searches the smallest ε in
    ``[0, shuffle_epsilon_closed_form(...)]`` whose bound is <= ``delta``, returning the
    upper end of the final bracket, so the result is an upper bound on ε: never above ε₀
    nor FMT21's closed form. At ε₀ = 1, n = 2048, δ = 1e-6 it gives 0.1012 (stronger
    clone) and 0.1242 (FMT21); no bound valid for every ε₀-LDP randomizer can be below
    [binary_rr_shuffle_epsilon][rllib_privacy.accounting.shuffle.binary_rr_shuffle_epsilon]
    (0.0850 there).

    The upper bound on δ(ε): C's support is cut into blocks of ``step`` values; each
    block's mass is charged at the larger divergence of its two ends (a larger clone
    count is a post-processing of a smaller one, so the divergences decrease in c), and
    C's mass outside the blocks, at most ``1e-6 · delta``, is charged in full. With the
    default ``step=1`` every likely clone count is evaluated exactly, so δ(ε) is computed
    up to that tail; larger steps are cheaper and looser (the FMT21 reference code's
    example uses 100). The cost grows like ``√n / step``: milliseconds at n = 2048, about
    0.2 s at n = 10⁵ and 0.5 s at n = 10⁶ with ``step=1`` (CPU time).

    For ε₀ >= 700 there are no clones to speak of and ε₀ is returned.

    Assumptions: the n reports are each ε₀-DP (pure LDP), one report per user in the batch,
    shuffled by a trusted shuffler that the aggregator cannot link back to users; δ > 0.
    ``num_reports == 1`` gives ε₀ (nothing to hide among).

    Differences from the FMT21 reference code (``computeamplification.py``; with its
    block layout, ``step`` and stopping rule this computation reproduces its numbers to
    ~1e-8, see the tests): (1) it stops at the first block after which C's unexamined
    mass is below the running δ and charges that mass in full, which is valid but can
    nearly double δ with small steps; here all likely blocks are summed, so the result is
    smaller (e.g. ε₀ = 4, n = 10⁴, δ = 1e-6: 0.60 here, 0.89 there with step 100); (2) it
    charges the Q-over-P side of a block at its upper end only (a typo; harmless for
    validity, since both sides are equal by symmetry, but it moves that stopping point);
    (3) it visits no block at all when ``n <= step`` and then returns ε ≈ 0, which is
    *not* an upper bound; here C's whole support is covered. The stronger-clone figures
    match Wang et al.'s code (``wangsw/PrivacyAmplification``) to ~1e-6, see the tests.

    Args:
        epsilon0: ε₀ of each report's local randomizer, a finite number > 0.
        num_reports: n, the number of shuffled reports, an int >= 1.
        delta: The target δ, in (0, 1).
        num_iterations: Binary-search iterations, an int >= 1; the result is within
            ``2^-num_iterations · closed form`` above the numerical bound's exact ε.
        step: Width of the blocks of clone counts, an int >= 1.
        analysis: ``"stronger_clone"`` or ``"fmt21"``.

    Returns:
        An upper bound on ε, at most ``min(epsilon0, shuffle_epsilon_closed_form(...))``.

    Raises:
        ValueError: Naming the argument, if one is out of range.

    """
    epsilon0, num_reports, delta = _check_args(epsilon0, num_reports, delta)
    num_iterations = check_int_in_range("num_iterations", num_iterations, low=1)
    step = check_int_in_range("step", step, low=1)
    analysis = _check_analysis(analysis)
    return _numerical(epsilon0, num_reports, delta, num_iterations, step, False, analysis)


def binary_rr_shuffle_epsilon(
    epsilon0: float, num_reports: int, delta: float, *, num_iterations: int = 40
) -> float:
    """Return the exact ε of n shuffled binary randomized responses: the lower limit.

    Binary randomized response reports a bit truthfully with probability
    ``α = e^ε₀/(e^ε₀ + 1)``; it is ε₀-LDP, so no bound that holds for *every* ε₀-LDP
    randomizer (as ``shuffle_epsilon``'s do) can be smaller than the ε of its shuffled
    output. The shuffled batch is the number of ones; with the other n-1 users' bits 0,
    the neighbouring batches are ``K + Bern(α)`` and ``K + Bern(1-α)``,
    ``K ~ Bin(n-1, 1-α)``, whose hockey-stick divergences (both directions) are summed
    exactly over the n + 1 counts; ε is binary-searched in [0, ε₀] to within
    ``2^-num_iterations·ε₀`` (the lower end of the bracket is returned, so the result
    never exceeds the exact ε by more than rounding).

    Args:
        epsilon0: ε₀ of the randomized response, a finite number > 0.
        num_reports: n, the number of shuffled reports, an int >= 1.
        delta: The target δ, in (0, 1).
        num_iterations: Binary-search iterations, an int >= 1.

    Returns:
        The smallest ε (to the search's precision) at which the shuffled binary randomized
        responses are (ε, δ)-DP for these neighbouring batches.

    Raises:
        ValueError: Naming the argument, if one is out of range.

    """
    epsilon0, n, delta = _check_args(epsilon0, num_reports, delta)
    num_iterations = check_int_in_range("num_iterations", num_iterations, low=1)
    q = 1.0 / (1.0 + math.exp(epsilon0))
    k = np.arange(n + 1, dtype=np.float64)
    log_k = stats.binom.logpmf(k, n - 1, q)
    log_k_before = stats.binom.logpmf(k - 1.0, n - 1, q)
    log_one = np.logaddexp(math.log1p(-q) + log_k_before, math.log(q) + log_k)
    log_zero = np.logaddexp(math.log(q) + log_k_before, math.log1p(-q) + log_k)

    def delta_at(epsilon: float) -> float:
        # sum_k (P - e^ε Q)_+ = sum_k P·(1 - e^(ε + log Q - log P))_+, both directions.
        one = np.exp(log_one) * -np.expm1(np.minimum(epsilon + log_zero - log_one, 0.0))
        zero = np.exp(log_zero) * -np.expm1(np.minimum(epsilon + log_one - log_zero, 0.0))
        return max(float(np.sum(one)), float(np.sum(zero)))

    return _bisect_epsilon(delta_at, delta, epsilon0, num_iterations)[0]


# Composition: the PLD's grid step is ε_b/(200·√rounds), ε_b the basic per-batch ε; each
# loss is rounded up by less than a step, so the composed ε (about √rounds·ε_b) is at most
# rounds·step = √rounds·ε_b/200 above the exact PLD's (about half that in practice: well
# under 1 %), and the cost grows like rounds. The clone pair's tails are charged with at
# most TAIL_FRACTION·δ/rounds per batch. Above _PLD_MAX_EPSILON0 the losses' range makes
# the grid too long; basic composition is used.
_PLD_STEPS_PER_EPSILON = 200.0
_PLD_MIN_STEP = 1e-7
_PLD_MAX_EPSILON0 = 20.0


@functools.lru_cache(maxsize=1024)
def _rounds_epsilon(
    epsilon0: float, n: int, delta: float, rounds: int, analysis: str, composition: str
) -> float:
    per_batch = _numerical(epsilon0, n, delta / rounds, _DEFAULT_ITERATIONS, 1, False, analysis)
    basic = rounds * per_batch
    if rounds == 1 or composition == "basic" or epsilon0 > _PLD_MAX_EPSILON0:
        return basic
    loss = batch_privacy_loss(
        epsilon0,
        n,
        clone_probability(analysis, epsilon0),
        TAIL_FRACTION * delta / rounds,
        max(_PLD_MIN_STEP, per_batch / (_PLD_STEPS_PER_EPSILON * math.sqrt(rounds))),
    )
    composed = loss.self_compose(rounds).get_epsilon_for_delta(delta)
    # Both are upper bounds; the PLD's is the smaller but for its grid's rounding.
    return min(basic, float(composed))


def shuffled_rounds_epsilon(
    epsilon0: float,
    num_reports: int,
    delta: float,
    *,
    rounds: int = 1,
    analysis: str = DEFAULT_ANALYSIS,
    composition: str = "pld",
) -> float:
    """Return the central ε, at total δ, of ``rounds`` shuffled batches of ε₀-LDP reports.

    An agent that submits ``rounds`` times appears in up to ``rounds`` batches of
    ``num_reports`` shuffled reports each (at most one of its reports per batch). Each
    batch is, for that agent, a post-processing of the clone pair (P, Q) of ``analysis``
    (see ``rllib_privacy.accounting.shuffle_clones``), for *every* ε: (P, Q) is a
    dominating pair of the batch in the sense of Zhu, Dong & Wang ("Optimal Accounting
    of Differential Privacy via Characteristic Function", AISTATS 2022), and dominating
    pairs compose under adaptive composition (their composition theorem). So

    * ``composition="pld"`` (default): the privacy loss distribution of (P, Q), discretized
      pessimistically (losses rounded up to a grid of step ``ε_b/(200√rounds)``, ε_b the
      per-batch ε of the basic composition below, so within ~0.5 % of the exact PLD's ε;
      the pair's far tails charged as infinite loss with at most ``1e-6·delta/rounds`` per
      batch), is composed ``rounds`` times with Google's ``dp_accounting`` (PLD accounting, Koskela,
      Jälkö & Honkela 2020; Doroshenko et al. 2022) and its ε at ``delta`` is returned,
      or the basic composition below if that is smaller (it can be, by the grid's
      rounding, when ``rounds`` is small). About sqrt(rounds)·ε_batch rather than
      rounds·ε_batch: e.g. ε₀ = 1, n = 2048, δ = 1e-6, 10 rounds: 0.35 (basic: 1.16).
      For ε₀ > 20 basic composition is used (the losses' range would make the grid too
      long; amplification is negligible there anyway).
    * ``composition="basic"``: each batch is ``(ε_b, delta/rounds)``-DP with
      ``ε_b = shuffle_epsilon(ε₀, n, delta/rounds, analysis=analysis)``; basic
      composition gives ``(rounds·ε_b, delta)``.

    ``rounds=1`` is ``shuffle_epsilon(epsilon0, num_reports, delta, analysis=analysis)``.

    Args:
        epsilon0: ε₀ of each report's local randomizer, a finite number > 0.
        num_reports: n, the number of shuffled reports per batch, an int >= 1.
        delta: The total target δ over all rounds, in (0, 1).
        rounds: T, the number of batches the agent appears in, an int >= 1.
        analysis: ``"stronger_clone"`` (default) or ``"fmt21"``.
        composition: ``"pld"`` (default) or ``"basic"``.

    Returns:
        An upper bound on the central ε of the ``rounds`` batches at total δ ``delta``.

    Raises:
        ValueError: Naming the argument, if one is out of range.

    """
    epsilon0, num_reports, delta = _check_args(epsilon0, num_reports, delta)
    rounds = check_int_in_range("rounds", rounds, low=1)
    analysis = _check_analysis(analysis)
    composition = check_choice("composition", composition, COMPOSITIONS)
    return _rounds_epsilon(epsilon0, num_reports, delta, rounds, analysis, composition)


# Search range for local_epsilon_for_central: below _MIN_LOCAL_EPSILON the answer is not
# worth reporting (and the binomials degenerate); above _NO_CLONES_EPSILON0 there is no
# amplification left. The search stops when its bracket is within this relative width.
_MIN_LOCAL_EPSILON = 1e-9
_LOCAL_RELATIVE_TOLERANCE = 1e-7


def local_epsilon_for_central(
    central_epsilon: float,
    num_reports: int,
    delta: float,
    *,
    rounds: int = 1,
    analysis: str = DEFAULT_ANALYSIS,
) -> float:
    """Return the largest ε₀ whose shuffled, composed central ε is <= ``central_epsilon``.

    Inverts [shuffled_rounds_epsilon][rllib_privacy.accounting.shuffle.shuffled_rounds_epsilon]
    (PLD composition over ``rounds``) in ε₀ with Brent's method on log ε₀ (the central ε
    increases with ε₀): the result ε₀ satisfies
    ``shuffled_rounds_epsilon(ε₀, num_reports, delta, rounds=rounds) <= central_epsilon``
    and is within a relative ~1e-6 of the largest such ε₀. It is never below
    ``central_epsilon / rounds`` (shuffling is post-processing: no amplification is the
    worst case) and is capped at 700 (no clones are left above it) unless that floor is
    higher. With the default analysis the bound holds for every ε₀-LDP randomizer.

    Args:
        central_epsilon: The target central ε over all ``rounds``, a finite number > 0.
        num_reports: n, the number of shuffled reports per batch, an int >= 1.
        delta: The total target δ over all rounds, in (0, 1).
        rounds: T, the number of batches each agent appears in, an int >= 1.
        analysis: ``"stronger_clone"`` (default) or ``"fmt21"``.

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
    analysis = _check_analysis(analysis)

    def reaches(epsilon0: float) -> bool:
        central = _rounds_epsilon(epsilon0, num_reports, delta, rounds, analysis, "pld")
        return central <= central_epsilon

    # Shuffling is post-processing, so each batch is ε₀-DP: ε₀ = central_epsilon / rounds
    # always reaches the target, which starts the bracket (and bounds the search).
    floor = central_epsilon / rounds
    if floor < _MIN_LOCAL_EPSILON or not reaches(floor):
        raise ValueError(
            f"central_epsilon={central_epsilon!r} is unreachable with num_reports="
            f"{num_reports}, delta={delta!r}, rounds={rounds}: it needs a local epsilon "
            f"below {_MIN_LOCAL_EPSILON}"
        )
    if floor >= _NO_CLONES_EPSILON0 or reaches(_NO_CLONES_EPSILON0):
        return max(floor, _NO_CLONES_EPSILON0)
    # Bracket by doubling, then Brent's method on log ε₀ (the central ε is smooth in ε₀
    # but for the PLD grid's steps; a handful of evaluations instead of ~25 bisections).
    low = floor
    high = min(2.0 * low, _NO_CLONES_EPSILON0)
    while reaches(high):
        low, high = high, min(2.0 * high, _NO_CLONES_EPSILON0)

    def gap(log_epsilon0: float) -> float:
        central = _rounds_epsilon(
            math.exp(log_epsilon0), num_reports, delta, rounds, analysis, "pld"
        )
        return math.log(central) - math.log(central_epsilon)

    root = optimize.brentq(
        gap, math.log(low), math.log(high), xtol=_LOCAL_RELATIVE_TOLERANCE, rtol=1e-12
    )
    # Brent's answer may sit just above the target (or on a step of the PLD grid): step
    # down until it reaches it; ``low`` always does.
    candidate = math.exp(root - _LOCAL_RELATIVE_TOLERANCE)
    for _ in range(8):
        if candidate <= low or reaches(candidate):
            break
        candidate = math.exp(math.log(candidate) - 8.0 * _LOCAL_RELATIVE_TOLERANCE)
    return max(candidate, low) if reaches(candidate) else low
