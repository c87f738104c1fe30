"""The clone reductions behind the shuffling bounds, and their privacy loss (no Ray import).

Both analyses that [shuffle_epsilon][rllib_privacy.accounting.shuffle.shuffle_epsilon]
offers reduce n shuffled ε₀-LDP reports to one pair of distributions on pairs of counts:
for neighbouring datasets that differ in one user's data, the shuffled output is a
post-processing of a sample from

* ``P = (C, X)`` with ``C ~ Bin(n-1, p_clone)`` and, given ``C = c``,
  ``X ~ P_c = α·Bin(c, ½) + (1-α)·(Bin(c, ½) + 1)``,
* ``Q = (C, X)`` with the same C and ``X ~ Q_c = (1-α)·Bin(c, ½) + α·(Bin(c, ½) + 1)``,

``α = e^ε₀ / (e^ε₀ + 1)`` (the differing user's own report; C counts the other users whose
report is distributed as a "clone" of the differing user's, half of them of each of its
two inputs). The analyses differ only in the clone probability:

* ``"fmt21"``: ``p_clone = e^-ε₀``, Feldman, McMillan & Talwar, "Hiding Among the Clones:
  A Simple and Nearly Optimal Analysis of Privacy Amplification by Shuffling", FOCS 2021
  (arXiv:2012.12803), §3;
* ``"stronger_clone"``: ``p_clone = 2 / (e^ε₀ + 1)``, Feldman, McMillan & Talwar, "Stronger
  Privacy Amplification by Shuffling for Rényi and Approximate Differential Privacy",
  SODA 2023 (arXiv:2208.04591): every ε₀-DP randomizer's output on any input y is the
  mixture ``R(y) = R(x₀)/(e^ε₀+1) + R(x₁)/(e^ε₀+1) + (1 - 2/(e^ε₀+1))·LO(y)``. The
  variation-ratio reduction of Wang et al., "Privacy Amplification via Shuffling:
  Unified, Simplified, and Tightened", VLDB 2024, gives the same pair for a generic
  ε₀-LDP randomizer (its parameters ``p = q = e^ε₀``, ``β = (e^ε₀-1)/(e^ε₀+1)``).

Both hold for every ε₀-DP (pure ε₀-LDP) local randomizer, adaptively chosen ones included,
PrivUnitG, PrivUnit2, Laplace and randomized response among them; ``2/(e^ε₀+1) >= e^-ε₀``,
and more clones hide better, so the stronger clone is never looser.

Since the pair is a post-processing dominance for *every* ε (Zhu, Dong & Wang,
"Optimal Accounting of Differential Privacy via Characteristic Function", AISTATS 2022,
call it a dominating pair), its privacy loss distribution composes over batches
([batch_privacy_loss][rllib_privacy.accounting.shuffle_clones.batch_privacy_loss]).
Two facts keep the computations small: ``(P_{c+1}, Q_{c+1})`` is a post-processing of
``(P_c, Q_c)`` (add one fair coin), so a range of clone counts may be charged at its
smallest; and ``x -> c+1-x`` maps ``P_c`` to ``Q_c``, so the pair is symmetric.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import special, stats

__all__ = [
    "ANALYSES",
    "DeltaBound",
    "batch_privacy_loss",
    "clone_count_blocks",
    "clone_probability",
    "hockey_sticks",
]

# Probability that another user's report is a clone, by analysis (see the module docstring).
ANALYSES: dict[str, Callable[[float], float]] = {
    "stronger_clone": lambda epsilon0: 2.0 / (math.exp(epsilon0) + 1.0),
    "fmt21": lambda epsilon0: math.exp(-epsilon0),
}
# Mass of C left unexamined is charged as worst case (δ contribution 1 per unit of mass);
# stop examining once that mass is below this fraction of the target δ.
TAIL_FRACTION = 1e-6
# batch_privacy_loss: at most this many distinct clone counts are evaluated; wider ranges
# are cut into blocks, each charged at its smallest count (which dominates the others).
_MAX_CLONE_COUNTS = 200


def clone_probability(analysis: str, epsilon0: float) -> float:
    """Return the probability that another user's report is a clone, for ``analysis``."""
    return ANALYSES[analysis](epsilon0)


def clone_count_blocks(
    n: int, p_clone: float, step: int, tail: float, reference_layout: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Cut C's likely values into blocks, most likely first; return (lo, hi, mass, rest).

    ``C ~ Bin(n-1, p_clone)``. Blocks alternate above and below ``m = ceil(E[C])``:
    ``[m, m+step-1]``, ``[m-step, m-1]``, ``[m+step, m+2 step-1]``,
    ``[m-2 step, m-step-1]``, ... clipped to the support {0, ..., n-1}. With
    ``reference_layout`` the blocks above m are those of the FMT21 reference code instead:
    ``[m, m+step]``, ``[m+step+1, m+2 step]``, ... Only blocks that reach into the central
    interval outside which C has mass <= ``tail`` are made; ``rest`` is C's mass outside
    the blocks.
    """
    top = n - 1
    mid = min(math.ceil(top * p_clone), top)
    lowest = int(max(stats.binom.ppf(tail / 2.0, top, p_clone), 0))
    highest = int(min(stats.binom.isf(tail / 2.0, top, p_clone), top))
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
        stats.binom.sf(lo - 1, top, p_clone) - stats.binom.sf(hi, top, p_clone),
        stats.binom.cdf(hi, top, p_clone) - stats.binom.cdf(lo - 1, top, p_clone),
    )
    rest = float(
        stats.binom.cdf(lo.min() - 1, top, p_clone) + stats.binom.sf(hi.max(), top, p_clone)
    )
    return lo, hi, np.maximum(mass, 0.0), rest


def hockey_sticks(c: np.ndarray, epsilon: float, epsilon0: float) -> tuple[np.ndarray, np.ndarray]:
    """Return ``D_{e^ε}(P_c || Q_c)`` and ``D_{e^ε}(Q_c || P_c)`` for each clone count c.

    ``P_c = α·A + (1-α)·(A+1)`` and ``Q_c = (1-α)·A + α·(A+1)`` with ``A ~ Bin(c, ½)``;
    ``D_{e^ε}(P || Q) = sup_S P(S) - e^ε Q(S)`` is the hockey-stick divergence.
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


class DeltaBound:
    """Upper bound on the shuffled δ at a given ε, for fixed (ε₀, n, step, target δ)."""

    def __init__(
        self,
        epsilon0: float,
        n: int,
        step: int,
        delta: float,
        reference_mode: bool,
        p_clone: float,
    ) -> None:
        self.epsilon0 = epsilon0
        self.reference_mode = reference_mode
        tail = TAIL_FRACTION * delta
        lo, hi, mass, rest = clone_count_blocks(n, p_clone, step, tail, reference_mode)
        # remaining[k]: mass of C outside blocks 0, ..., k-1 (suffix sums, accurate when
        # small).
        remaining = np.append(np.cumsum(mass[::-1])[::-1], 0.0) + rest
        # Examine blocks until the rest weighs less than TAIL_FRACTION · δ; the rest is
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
        """Return the upper bound on δ at ``epsilon`` (0 <= ε < ε₀)."""
        d_pq, d_qp = hockey_sticks(self.c_values.astype(np.float64), epsilon, self.epsilon0)
        # Within a block the divergences are largest at its smaller end (a larger clone
        # count is a post-processing of a smaller one); both ends are taken, as FMT21's
        # App. E does.
        add_pq = self.mass * np.maximum(d_pq[self.lo_index], d_pq[self.hi_index])
        add_qp = self.mass * np.maximum(d_qp[self.lo_index], d_qp[self.hi_index])
        if not self.reference_mode:
            return float(max(add_pq.sum(), add_qp.sum()) + self.remaining[-1])
        # reference_mode (the FMT21 reference code's shortcut, kept only to reproduce its
        # numbers in the tests): stop at the first block at which the unexamined mass is
        # below both running sums and charge that mass in full. Valid, but it can nearly
        # double δ (the mass is charged at 1, not at the divergence of those counts, ~δ).
        sum_pq = np.concatenate([[0.0], np.cumsum(add_pq)])
        sum_qp = np.concatenate([[0.0], np.cumsum(add_qp)])
        stop = (self.remaining < sum_pq) & (self.remaining < sum_qp)
        k = int(np.argmax(stop)) if stop.any() else self.remaining.size - 1
        return float(max(sum_pq[k], sum_qp[k]) + self.remaining[k])


@functools.lru_cache(maxsize=64)
def batch_privacy_loss(
    epsilon0: float, n: int, p_clone: float, tail: float, value_discretization: float
) -> pld_lib.PrivacyLossDistribution:
    """Privacy loss distribution of one shuffled batch: the clone pair's, pessimistically.

    The privacy loss of the pair is ``L(c, x) = log(P_c(x) / Q_c(x))`` with probability
    ``Pr[C = c]·P_c(x)``. It is discretized pessimistically: every loss is rounded up to
    a multiple of ``value_discretization``; the clone counts below the ``tail / 2``
    quantile of C and, for each counted c, the values of x outside the central interval
    of Bin(c, ½) that leaves ``tail / 4`` on each side, are charged as infinite loss
    (they cost at most ``tail`` of δ in all); C's upper tail is charged at the largest
    counted c, and at most 200 clone counts are evaluated, each block of counts at its
    smallest (a post-processing dominance, see the module docstring).

    Args:
        epsilon0: ε₀ of each report's local randomizer.
        n: The number of shuffled reports.
        p_clone: The analysis's clone probability.
        tail: Total probability charged as infinite loss (at most).
        value_discretization: Grid step of the losses.

    Returns:
        A ``dp_accounting`` PLD (symmetric: the pair is its own mirror image).

    """
    top = n - 1
    lowest = int(max(stats.binom.ppf(tail / 2.0, top, p_clone), 0)) if top else 0
    highest = int(min(stats.binom.isf(tail / 2.0, top, p_clone), top)) if top else 0
    highest = max(highest, lowest)
    step = max(1, math.ceil((highest - lowest + 1) / _MAX_CLONE_COUNTS))
    starts = np.arange(lowest, highest + 1, step, dtype=np.int64)
    ends = np.append(starts[1:] - 1, top)  # the last block takes C's upper tail
    weights = stats.binom.cdf(ends, top, p_clone) - stats.binom.cdf(starts - 1, top, p_clone)
    infinity_mass = float(stats.binom.cdf(lowest - 1, top, p_clone)) if lowest else 0.0
    # x in [c/2 - h, c/2 + 1 + h] for each counted c, h from Hoeffding's inequality
    # (Pr[|Bin(c, ½) - c/2| >= h] <= 2 exp(-2h²/c) = tail/4); whatever mass is outside is
    # measured below and charged as infinite loss, so h only has to be roughly right.
    c_values = starts.astype(np.float64)
    half_width = np.ceil(np.sqrt(c_values * math.log(8.0 / tail) / 2.0))
    x_low = np.maximum(np.floor(c_values / 2.0) - half_width, 0.0)
    x_high = np.minimum(np.ceil(c_values / 2.0) + 1.0 + half_width, c_values + 1.0)
    counts = (x_high - x_low + 1.0).astype(np.int64)
    c = np.repeat(c_values, counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    x = np.repeat(x_low, counts) + offsets
    # log Pr[Bin(c, ½) = x] and = x - 1, -inf outside {0, ..., c}.
    log_norm = special.gammaln(c + 1.0) - c * math.log(2.0)
    with np.errstate(invalid="ignore"):
        log_b = np.where(
            x <= c, log_norm - special.gammaln(x + 1.0) - special.gammaln(c - x + 1.0), -np.inf
        )
        log_b_before = np.where(
            x >= 1.0, log_norm - special.gammaln(x) - special.gammaln(c - x + 2.0), -np.inf
        )
    log_alpha = -math.log1p(math.exp(-epsilon0))
    log_1m_alpha = -epsilon0 + log_alpha
    log_p = np.logaddexp(log_alpha + log_b, log_1m_alpha + log_b_before)
    log_q = np.logaddexp(log_1m_alpha + log_b, log_alpha + log_b_before)
    p_mass = np.exp(log_p)
    # P_c's mass outside the x range, charged as infinite loss (rounding in the sums is
    # ~1e-16 per term, far below any δ this is used at).
    inside = np.add.reduceat(p_mass, np.cumsum(counts) - counts)
    infinity_mass += float(np.sum(weights * np.maximum(1.0 - inside, 0.0)))
    keys = np.ceil((log_p - log_q) / value_discretization).astype(np.int64)
    first = int(keys.min())
    # The losses of the likely (c, x) lie in a narrow band: sum the masses per grid point.
    sums = np.bincount(keys - first, weights=np.repeat(weights, counts) * p_mass)
    (nonzero,) = np.nonzero(sums)
    masses = dict(zip((nonzero + first).tolist(), sums[nonzero].tolist(), strict=True))
    return pld_lib.PrivacyLossDistribution.create_from_rounded_probability(
        masses, min(infinity_mass, 1.0), value_discretization, pessimistic_estimate=True
    )
