"""Rényi-DP accounting of PATE 2018: GNMax, Confident-GNMax and the smooth-sensitivity release.

Reference: Papernot, Song, Mironov, Raghunathan, Talwar & Erlingsson, "Scalable Private
Learning with PATE", ICLR 2018 (arXiv:1802.08908), §4 and Appendices B-C. Formulas and the
tests that pin them: docs/components/pate.md. No Ray import.

Adjacency: one record of one teacher's partition; it changes one teacher's vote, so the vote
histogram moves by at most 1 in two classes (L2 sensitivity √2) and its maximum by at most 1.

GNMax, ``argmax_j (n_j + N(0, σ²))``, one answer:

* data-independent (Prop. 8): ``(λ, λ/σ²)``-RDP at every order λ > 1;
* data-dependent (Theorem 6 with Prop. 7's ``q``, Prop. 10's ``μ₁, μ₂``):
  ``q = min(Σ_{j≠j*} P[N(0, 2σ²) ≥ n_{j*} − n_j], 1 − 1/m)``, ``μ₂ = σ·sqrt(ln 1/q)``,
  ``μ₁ = μ₂ + 1``, ``ε_i = μ_i/σ²``; where ``μ₁ > λ``, ``μ₂ > 1``, ``q`` is below Lemma 9's
  bound and ``ln(1/q) > ε₂``,
  ``ε(λ) ≤ 1/(λ−1) · ln((1−q)·A^{λ−1} + q·B^{λ−1})`` with
  ``A = (1−q)/(1 − (q·e^{ε₂})^{(μ₂−1)/μ₂})``, ``B = e^{ε₁}/q^{1/(μ₁−1)}``; the smaller of this
  and ``λ/σ²`` is used (``gnmax_rdp``). Everything is computed from ``ln q`` (a clear
  majority has ``q`` far below 1e-300).

Confident-GNMax (Algorithm 1): a query is answered only if ``max_j n_j + N(0, σ₁²) ≥ T``, and
then labelled by GNMax with σ₂. The threshold step sees the maximum (sensitivity 1), so it is
the Gaussian mechanism with σ₁ on a sensitivity-1 input: data-independently ``λ/(2σ₁²)``, and
data-dependently Theorem 6 at ``√2·σ₁`` with ``q = min(p, 1 − p)``, ``p`` the probability of
the step's outcome (``threshold_rdp``). Every query pays the threshold step; only answered
queries pay GNMax (``confident_gnmax_rdp``).

The data-dependent bound is a function of the votes, hence of the private data. It is released
with the GNSS mechanism (§C of the paper; Theorem 23 there): at a fixed order λ, the local
sensitivity of the summed bound at every distance d (Algorithms 3-5; Prop. 13) gives the
β-smooth sensitivity ``SS_β = max_d e^{−βd}·LS(d)``; the release
``ε̃(λ) = ε_dd(λ) + SS_β·N(0, σ_s²)`` is itself
``(λ, λ·e^{2β}/σ_s² + (βλ − ½·ln(1 − 2βλ))/(λ − 1))``-RDP (λ < 1/(2β)), and the published
ε is ``ε̃(λ) + that cost + ln(1 − 1/λ) − (ln δ + ln λ)/(λ − 1)`` (the RDP conversion
``dp_accounting`` uses; the paper uses the slightly larger ``ln(1/δ)/(λ − 1)``)
(``release_data_dependent_epsilon``).

Cross-checked against the authors' reference functions (tensorflow/privacy,
``research/pate_2018/core.py`` and ``smooth_sensitivity.py``) on random vote histograms:
``tests/unit/test_gnmax_accounting.py`` with fixtures from ``benchmarks/pate_2018_fixtures.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np
from scipy import optimize, special, stats
from scipy.special import logsumexp

from rllib_privacy._validation import check_finite_positive, required
from rllib_privacy.accounting.dirichlet_renyi import (
    _check_orders,
    _tight_conversion,
    _tight_epsilons,
)
from rllib_privacy.mechanisms.noisy_max import validate_votes

__all__ = [
    "GNMAX_ORDERS",
    "SmoothSensitivityRelease",
    "confident_gnmax_rdp",
    "gnmax_data_independent_rdp",
    "gnmax_local_sensitivities",
    "gnmax_log_q",
    "gnmax_rdp",
    "gnmax_rdp_from_log_q",
    "gnss_rdp",
    "rdp_epsilon_rows",
    "release_data_dependent_epsilon",
    "smooth_sensitivity",
    "threshold_data_independent_rdp",
    "threshold_local_sensitivities",
    "threshold_log_pr_answered",
    "threshold_rdp",
]

#: Rényi orders used by default: dense where (ε, δ) conversions of PATE runs usually land.
GNMAX_ORDERS: tuple[float, ...] = tuple(
    float(a)
    for a in np.concatenate(
        (np.arange(1.25, 2.0, 0.25), np.arange(2.0, 20.0, 0.5), np.arange(20.0, 101.0, 2.0),
         np.geomspace(110.0, 1000.0, 12))
    )
)  # fmt: skip


def _log1mexp(x: np.ndarray) -> np.ndarray:
    """``ln(1 − e^x)`` for ``x <= 0`` (−inf at 0), accurate at both ends."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(x < -math.log(2.0), np.log1p(-np.exp(x)), np.log(-np.expm1(x)))


def gnmax_log_q(votes: Any, *, sigma: float) -> np.ndarray:
    """Prop. 7: ``ln q``, an upper bound on ``ln P[GNMax ≠ argmax]``.

    ``q = Σ_{j≠j*} P[N(0, 2σ²) ≥ n_{j*} − n_j]`` (union bound; ``j*`` the first plurality
    class), capped at ``1 − 1/m``. Computed in log space, so it stays positive for any gap.

    Args:
        votes: Vote histograms, shape ``(m,)`` or ``(batch, m)``; finite counts >= 0.
        sigma: Standard deviation σ of GNMax's noise, a finite number > 0.

    Returns:
        float64 array of shape ``()`` or ``(batch,)``, each entry in ``(−inf, ln(1 − 1/m)]``.

    Raises:
        ValueError: For bad votes or a bad ``sigma``.

    """
    sigma = check_finite_positive("sigma", sigma)
    array = validate_votes(votes)
    rows = np.atleast_2d(array)
    top = np.argmax(rows, axis=-1)
    gaps = rows[np.arange(len(rows)), top][:, None] - rows
    tails = stats.norm.logsf(gaps, scale=math.sqrt(2.0) * sigma)
    tails[np.arange(len(rows)), top] = -np.inf  # exclude the winner's own term
    m = rows.shape[-1]
    log_q = np.minimum(logsumexp(tails, axis=-1), math.log1p(-1.0 / m))
    return log_q.reshape(array.shape[:-1])


def gnmax_data_independent_rdp(sigma: float, orders: Any = GNMAX_ORDERS) -> np.ndarray:
    """Prop. 8: one GNMax answer is ``(λ, λ/σ²)``-RDP (L2 sensitivity √2).

    Args:
        sigma: Standard deviation σ of GNMax's noise, a finite number > 0.
        orders: Rényi orders, finite numbers > 1.

    Returns:
        float64 array, one entry per order.

    Raises:
        ValueError: For a bad ``sigma`` or bad orders.

    """
    sigma = check_finite_positive("sigma", sigma)
    return _check_orders(orders) / sigma**2


def gnmax_rdp_from_log_q(log_q: Any, *, sigma: float, orders: Any = GNMAX_ORDERS) -> np.ndarray:
    """Theorem 6: the data-dependent RDP of a Gaussian noisy max, given ``ln q``.

    The bound of the module docstring where its conditions hold, the data-independent
    ``λ/σ²`` elsewhere; never above ``λ/σ²``. ``ln q = −inf`` (a fixed outcome) gives 0.

    Args:
        log_q: ``ln q``, a number or array of numbers <= 0 (e.g. ``gnmax_log_q``).
        sigma: Standard deviation σ of the noise, a finite number > 0.
        orders: Rényi orders, finite numbers > 1.

    Returns:
        float64 array of shape ``log_q.shape + (len(orders),)``.

    Raises:
        ValueError: For a positive or NaN ``log_q``, a bad ``sigma`` or bad orders.

    """
    sigma = check_finite_positive("sigma", sigma)
    lam = _check_orders(orders)
    log_q = np.asarray(log_q, dtype=np.float64)
    if np.any(np.isnan(log_q)) or np.any(log_q > 0):
        raise ValueError(f"log_q must be numbers <= 0, got {log_q!r}")
    shape = log_q.shape
    lq = log_q.reshape(-1, 1)
    variance = sigma**2
    independent = np.broadcast_to(lam / variance, (lq.shape[0], lam.size)).copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mu2 = sigma * np.sqrt(-lq)
        mu1 = mu2 + 1.0
        eps2 = mu2 / variance
        log_a2 = (mu2 - 1.0) * eps2
        lemma9 = log_a2 - mu2 * (np.log1p(1.0 / (mu1 - 1.0)) + np.log1p(1.0 / (mu2 - 1.0)))
        applies = (mu2 > 1.0) & (lq <= lemma9) & (-lq > eps2) & np.isfinite(lq)
        mask = applies & (mu1 > lam)
        safe = np.where(applies, lq, -1.0)
        safe_mu1, safe_mu2 = np.where(applies, mu1, 3.0), np.where(applies, mu2, 2.0)
        log1q = _log1mexp(safe)
        log_a = (lam - 1.0) * (
            log1q - _log1mexp((safe + safe_mu2 / variance) * (1.0 - 1.0 / safe_mu2))
        )
        log_b = (lam - 1.0) * (safe_mu1 / variance - safe / (safe_mu1 - 1.0))
        dependent = np.logaddexp(log1q + log_a, safe + log_b) / (lam - 1.0)
    result = np.where(mask, np.minimum(independent, dependent), independent)
    result = np.where(np.isneginf(lq), 0.0, result)
    return result.reshape(shape + (lam.size,))


def gnmax_rdp(votes: Any, *, sigma: float, orders: Any = GNMAX_ORDERS) -> np.ndarray:
    """Data-dependent RDP of one GNMax answer on ``votes`` (Theorem 6 with Prop. 7's q).

    Never above the data-independent ``λ/σ²``. The result depends on the private votes:
    publish it only through ``release_data_dependent_epsilon``.

    Args:
        votes: One vote histogram ``(m,)``, or one per row ``(batch, m)``.
        sigma: Standard deviation σ of GNMax's noise, a finite number > 0.
        orders: Rényi orders, finite numbers > 1.

    Returns:
        float64 array ``(len(orders),)`` for one histogram, ``(batch, len(orders))`` for rows.

    Raises:
        ValueError: For bad votes, ``sigma`` or orders.

    Example:
        >>> float(gnmax_rdp([50, 0, 0], sigma=10.0, orders=[20.0])[0]) < 20.0 / 100.0
        True

    """
    return gnmax_rdp_from_log_q(gnmax_log_q(votes, sigma=sigma), sigma=sigma, orders=orders)


def threshold_log_pr_answered(votes: Any, *, threshold: float, sigma: float) -> np.ndarray:
    """``ln P[max_j n_j + N(0, σ₁²) ≥ T]`` (the max rounded to an integer, as the authors do).

    Args:
        votes: Vote histograms, ``(m,)`` or ``(batch, m)``.
        threshold: The threshold T, a finite number.
        sigma: σ₁ of the threshold noise, a finite number > 0.

    Returns:
        float64 array of shape ``()`` or ``(batch,)``.

    Raises:
        ValueError: For bad votes, ``threshold`` or ``sigma``.

    """
    sigma = check_finite_positive("sigma", sigma)
    threshold = _check_threshold(threshold)
    top = np.round(validate_votes(votes).max(axis=-1))
    return np.asarray(stats.norm.logsf(threshold - top, scale=sigma), dtype=np.float64)


def _check_threshold(threshold: Any) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float | np.number):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    if not math.isfinite(float(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    return float(threshold)


def threshold_data_independent_rdp(sigma: float, orders: Any = GNMAX_ORDERS) -> np.ndarray:
    """The threshold step's data-independent RDP, ``λ/(2σ₁²)`` (sensitivity 1).

    Args:
        sigma: σ₁ of the threshold noise, a finite number > 0.
        orders: Rényi orders, finite numbers > 1.

    Returns:
        float64 array, one entry per order.

    Raises:
        ValueError: For a bad ``sigma`` or bad orders.

    """
    sigma = check_finite_positive("sigma", sigma)
    return gnmax_data_independent_rdp(math.sqrt(2.0) * sigma, orders)


def _threshold_rdp_from_log_p(log_p: np.ndarray, sigma: float, orders: Any) -> np.ndarray:
    log_p = np.asarray(log_p, dtype=np.float64)
    log_q = np.minimum(log_p, _log1mexp(np.minimum(log_p, 0.0)))
    return gnmax_rdp_from_log_q(log_q, sigma=math.sqrt(2.0) * sigma, orders=orders)


def threshold_rdp(
    votes: Any, *, threshold: float, sigma: float, orders: Any = GNMAX_ORDERS
) -> np.ndarray:
    """Data-dependent RDP of Confident-GNMax's threshold step on ``votes``.

    Theorem 6 at noise ``√2·σ₁`` with ``q = min(p, 1 − p)``, ``p`` from
    ``threshold_log_pr_answered``; never above ``threshold_data_independent_rdp``.

    Args:
        votes: Vote histograms, ``(m,)`` or ``(batch, m)``.
        threshold: The threshold T.
        sigma: σ₁ of the threshold noise, a finite number > 0.
        orders: Rényi orders, finite numbers > 1.

    Returns:
        float64 array ``(len(orders),)`` or ``(batch, len(orders))``.

    Raises:
        ValueError: For bad arguments.

    """
    log_p = threshold_log_pr_answered(votes, threshold=threshold, sigma=sigma)
    return _threshold_rdp_from_log_p(log_p, sigma, orders)


def confident_gnmax_rdp(
    votes: Any,
    answered: Any,
    *,
    threshold: float,
    sigma_threshold: float,
    sigma: float,
    orders: Any = GNMAX_ORDERS,
    data_dependent: bool = True,
) -> np.ndarray:
    """Summed RDP of Confident-GNMax queries: every query's threshold step, answered ones' GNMax.

    Args:
        votes: Vote histograms ``(N, m)`` (or ``(m,)``) of every query asked.
        answered: Bools ``(N,)``: whether each query passed the threshold (was labelled).
        threshold: The threshold T.
        sigma_threshold: σ₁ of the threshold noise.
        sigma: σ₂ of GNMax's noise.
        orders: Rényi orders, finite numbers > 1.
        data_dependent: Use Theorem 6 (True) or the data-independent bounds only.

    Returns:
        float64 array ``(len(orders),)``: the composed RDP curve.

    Raises:
        ValueError: For bad arguments, or ``answered`` of the wrong length.

    """
    rows = np.atleast_2d(validate_votes(votes))
    answered = np.asarray(answered, dtype=bool).reshape(-1)
    if answered.shape[0] != rows.shape[0]:
        raise ValueError(f"answered must have one entry per query, got {answered.shape[0]}")
    if data_dependent:
        step1 = threshold_rdp(rows, threshold=threshold, sigma=sigma_threshold, orders=orders)
        step2 = gnmax_rdp(rows[answered], sigma=sigma, orders=orders) if answered.any() else 0
        return step1.sum(axis=0) + np.sum(step2, axis=0)
    step1 = threshold_data_independent_rdp(sigma_threshold, orders)
    return rows.shape[0] * step1 + int(answered.sum()) * gnmax_data_independent_rdp(sigma, orders)


def rdp_epsilon_rows(orders: Any, curves: Any, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """ε at δ of many RDP curves at once, and the order attaining each (tight conversion).

    The conversion of ``rllib_privacy.accounting.rdp_to_epsilon`` (``"tight"``, the one
    ``dp_accounting`` uses: ``ε(λ) = rdp(λ) + ln(1 − 1/λ) − (ln δ + ln λ)/(λ − 1)``, 0 where
    ``δ² + e^{−rdp(λ)} − 1 > 0``), vectorized over rows (e.g. every prefix of a query
    sequence, for a budget check).

    Args:
        orders: Rényi orders ``(K,)``, finite numbers > 1.
        curves: RDP values ``(N, K)`` (or ``(K,)``), numbers >= 0.
        delta: δ in (0, 1).

    Returns:
        ``(epsilons, best_orders)``, float64 arrays of shape ``(N,)`` (or ``()``).

    Raises:
        ValueError: For bad orders, curves or δ.

    """
    lam = _check_orders(orders)
    curves = np.asarray(curves, dtype=np.float64)
    if curves.shape[-1:] != lam.shape or np.any(np.isnan(curves)) or np.any(curves < 0):
        raise ValueError(f"curves must be numbers >= 0 with one column per order, got {curves!r}")
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    eps = _tight_epsilons(lam, curves, float(delta))
    best = np.argmin(eps, axis=-1)
    chosen = np.take_along_axis(eps, best[..., None], axis=-1)[..., 0]
    return np.maximum(chosen, 0.0), lam[best]


# ------------------------------------------------------------------ smooth sensitivity


@functools.lru_cache(maxsize=4096)
def _log_q0(sigma: float, order: float) -> float:
    """``ln q₀``: below it Theorem 6 beats the data-independent bound at this order.

    Found by root finding between the natural upper bound
    ``min(−(1 + 1/σ)², −((λ − 0.99)/σ)², −1/σ²)`` and a bracketing lower point.
    """
    independent = order / sigma**2

    def gain(log_q: float) -> float:
        return float(_theorem6_unchecked(log_q, sigma, order) - independent)

    upper = min(-((1.0 + 1.0 / sigma) ** 2), -(((order - 0.99) / sigma) ** 2), -1.0 / sigma**2)
    if gain(upper) < 0:
        return upper
    lower = 2.0 * upper
    while gain(lower) > 0:
        if lower < -1e4:
            raise ValueError(f"no data-dependent gain found for sigma={sigma}, order={order}")
        lower *= 1.5
    return float(optimize.brentq(gain, lower, upper))


def _theorem6_unchecked(log_q: float, sigma: float, order: float) -> float:
    """Theorem 6's expression at one ``ln q`` (caller ensures its conditions hold)."""
    variance = sigma**2
    mu2 = sigma * math.sqrt(-log_q)
    mu1 = mu2 + 1.0
    log1q = math.log1p(-math.exp(log_q))
    log_a = (order - 1.0) * (
        log1q - math.log1p(-math.exp((log_q + mu2 / variance) * (1 - 1 / mu2)))
    )
    log_b = (order - 1.0) * (mu1 / variance - log_q / (mu1 - 1.0))
    return float(np.logaddexp(log1q + log_a, log_q + log_b) / (order - 1.0))


def _rdp_at(log_q: float, sigma: float, order: float) -> float:
    """The data-dependent RDP as a function of ``ln q`` used by the sensitivity analysis."""
    if log_q >= _log_q0(sigma, order):
        return order / sigma**2
    return _theorem6_unchecked(log_q, sigma, order)


def _q_lower(q: float, sigma: float, m: int) -> float:
    """Smallest q of a neighbour (Prop. 13's ``B_l``)."""
    return (m - 1) / 2 * special.erfc(1 / sigma + special.erfcinv(2 * q / (m - 1)))


def _q_upper(q: float, sigma: float, m: int) -> float:
    """Largest q of a neighbour (Prop. 13's ``B_u``), at most 1."""
    return min(1.0, (m - 1) / 2 * special.erfc(-1 / sigma + special.erfcinv(2 * q / (m - 1))))


def _local_sensitivity_at(log_q: float, sigma: float, m: int, order: float) -> float:
    """Algorithm 3: an upper bound on the local sensitivity of the RDP at this ``ln q``."""
    log_q0 = _log_q0(sigma, order)
    log_q1 = math.log(_q_lower(math.exp(log_q0), sigma, m))
    if log_q1 <= log_q <= log_q0:
        log_q = log_q1
    q = math.exp(log_q)
    here = _rdp_at(log_q, sigma, order)
    up = _rdp_at(math.log(_q_upper(q, sigma, m)), sigma, order)
    down = _rdp_at(math.log(_q_lower(q, sigma, m)), sigma, order)
    return max(up - here, here - down)


def gnmax_local_sensitivities(
    votes: Any, *, num_teachers: int, sigma: float, order: float
) -> np.ndarray:
    """Algorithms 4-5: bounds on the local sensitivity of GNMax's RDP at distance d.

    Entry ``d`` (``0 <= d < num_teachers``) bounds the change of ``gnmax_rdp`` at
    ``order`` between any two adjacent histograms within d changed teacher votes of
    ``votes``. Walks from ``votes`` toward the plateau ``[q₁, q₀]`` (where the bound is a
    constant) by moving one vote between the top two classes per step.

    Args:
        votes: One vote histogram ``(m,)``.
        num_teachers: Number of teachers n (the distance runs over ``0..n−1``).
        sigma: σ of GNMax's noise, a finite number > 0.
        order: The Rényi order λ > 1.

    Returns:
        float64 array of shape ``(num_teachers,)``.

    Raises:
        ValueError: For bad arguments.

    """
    sigma = check_finite_positive("sigma", sigma)
    order = float(_check_orders(order)[0])
    row = validate_votes(votes)
    if row.ndim != 1:
        raise ValueError("votes must be one histogram")
    m = row.shape[0]
    log_q0 = _log_q0(sigma, order)
    log_q1 = math.log(_q_lower(math.exp(log_q0), sigma, m))
    log_q = float(gnmax_log_q(row, sigma=sigma))
    plateau = _local_sensitivity_at(log_q1, sigma, m, order)
    result = np.full(int(num_teachers), plateau)
    if log_q1 <= log_q <= log_q0:
        return result
    current = sorted(row.tolist(), reverse=True)
    result[0] = _local_sensitivity_at(log_q, sigma, m, order)
    towards_smaller_q = log_q > log_q0
    d = 0
    while (towards_smaller_q and log_q > log_q0 and current[1] > 0) or (
        not towards_smaller_q and log_q < log_q1
    ):
        d += 1
        if towards_smaller_q:
            current[0] += 1
            current[1] -= 1
            current = [current[0], *sorted(current[1:], reverse=True)]
        else:
            current[0] -= 1
            current[1] += 1
        log_q = float(gnmax_log_q(np.asarray(current), sigma=sigma))
        result[d] = _local_sensitivity_at(log_q, sigma, m, order)
    return result


def threshold_local_sensitivities(
    votes: Any, *, num_teachers: int, threshold: float, sigma: float, order: float
) -> np.ndarray:
    """Bounds on the local sensitivity of the threshold step's RDP at distance d.

    The step's RDP depends only on ``v = round(max_j n_j) ∈ [0, n]``; at distance d the
    maximum lies in ``[v − d, v + d]``, so entry d is the largest one-step change of the
    RDP at ``v ± d``.

    Args:
        votes: One vote histogram ``(m,)``.
        num_teachers: Number of teachers n.
        threshold: The threshold T.
        sigma: σ₁ of the threshold noise.
        order: The Rényi order λ > 1.

    Returns:
        float64 array of shape ``(num_teachers,)``.

    Raises:
        ValueError: For bad arguments.

    """
    n = int(num_teachers)
    values = np.arange(n + 1, dtype=np.float64)
    log_p = stats.norm.logsf(_check_threshold(threshold) - values, scale=sigma)
    curve = _threshold_rdp_from_log_p(log_p, sigma, [order])[:, 0]
    steps = np.abs(np.diff(curve))  # steps[v] = |rdp(v+1) − rdp(v)|
    # Largest one-step change touching v: max(steps[v−1], steps[v]).
    padded = np.concatenate(([-np.inf], steps, [-np.inf]))
    touching = np.maximum(padded[:-1], padded[1:])
    top = int(round(float(validate_votes(votes).max())))
    result = np.zeros(n)
    for d in range(max(top, n - top)):
        candidates = [touching[v] for v in (top + d, top - d) if 0 <= v <= n]
        result[d] = max(candidates)
    return result


def smooth_sensitivity(beta: float, local_sensitivities: Any) -> float:
    """``SS_β = max_d e^{−βd}·LS(d)`` (Nissim, Raskhodnikova & Smith 2007).

    Args:
        beta: Smoothness β > 0.
        local_sensitivities: LS at distances ``d = 0, 1, ...``.

    Returns:
        The β-smooth sensitivity.

    """
    beta = check_finite_positive("beta", beta)
    ls = np.asarray(local_sensitivities, dtype=np.float64).reshape(-1)
    return float(np.max(ls * np.exp(-beta * np.arange(ls.size)))) if ls.size else 0.0


def gnss_rdp(beta: float, sigma: float, order: float) -> float:
    """RDP of the GNSS release ``f + SS_β·N(0, σ²)`` (paper's Theorem 23), ``1 < λ < 1/(2β)``.

    ``λ·e^{2β}/σ² + (βλ − ½·ln(1 − 2βλ))/(λ − 1)``.

    Args:
        beta: Smoothness β > 0.
        sigma: σ of the release noise (in units of SS_β), > 0.
        order: The Rényi order λ.

    Returns:
        The release's RDP at λ.

    Raises:
        ValueError: If λ is not in ``(1, 1/(2β))`` or an argument is not > 0.

    """
    beta = check_finite_positive("beta", beta)
    sigma = check_finite_positive("sigma", sigma)
    if not 1.0 < order < 1.0 / (2.0 * beta):
        raise ValueError(f"order must be in (1, 1/(2*beta)) = (1, {1 / (2 * beta):g}), got {order}")
    return order * math.exp(2 * beta) / sigma**2 + (
        beta * order - 0.5 * math.log1p(-2.0 * order * beta)
    ) / (order - 1.0)


@dataclasses.dataclass(frozen=True)
class SmoothSensitivityRelease:
    """A privately released data-dependent ε (``release_data_dependent_epsilon``).

    Attributes:
        epsilon: The publishable ε: noisy RDP + GNSS cost + the RDP-to-DP conversion term.
        order: The fixed order λ.
        delta: δ.
        beta: Smoothness β.
        sigma: σ_s of the release noise.
        smooth_sensitivity: ``SS_β`` of the summed bound (private: not for publication).
        release_cost: The GNSS release's own RDP at λ (included in ``epsilon``).
        noise_std: ``SS_β·σ_s``, the standard deviation of the noise added (private).

    """

    epsilon: float
    order: float
    delta: float
    beta: float
    sigma: float
    smooth_sensitivity: float
    release_cost: float
    noise_std: float

    def __float__(self) -> float:
        return self.epsilon


def release_data_dependent_epsilon(
    votes: Any,
    *,
    sigma: float,
    order: float,
    delta: float,
    answered: Any = None,
    threshold: float | None = None,
    sigma_threshold: float | None = None,
    beta: float | None = None,
    release_sigma: float = 20.0,
    num_teachers: int | None = None,
    rng: np.random.Generator | None = None,
) -> SmoothSensitivityRelease:
    """Release the data-dependent ε of GNMax (or Confident-GNMax) queries with GNSS noise.

    At the fixed order λ (choose it before seeing the votes, e.g. from the data-independent
    analysis), sums the queries' data-dependent RDP and local sensitivities, takes the
    β-smooth sensitivity and adds ``SS_β·N(0, σ_s²)``. The published
    ``ε = ε̃(λ) + gnss_rdp(β, σ_s, λ) + ln(1 − 1/λ) − (ln δ + ln λ)/(λ − 1)`` covers the
    queries and the release.

    Args:
        votes: Vote histograms ``(N, m)`` of every query asked.
        sigma: σ (σ₂) of GNMax's noise.
        order: The fixed Rényi order λ > 1.
        delta: δ in (0, 1).
        answered: With Confident-GNMax, bools ``(N,)``: which queries passed the threshold.
            None: plain GNMax (every query answered).
        threshold: Confident-GNMax's T (with ``answered``).
        sigma_threshold: Confident-GNMax's σ₁ (with ``answered``).
        beta: Smoothness β; None uses ``0.4/λ`` (must satisfy ``λ < 1/(2β)``).
        release_sigma: σ_s of the release noise.
        num_teachers: n; None uses the largest vote total of a row.
        rng: Generator of the release noise (None: a fresh unseeded one).

    Returns:
        A ``SmoothSensitivityRelease``.

    Raises:
        ValueError: For bad arguments.

    """
    rows = np.atleast_2d(validate_votes(votes))
    order = float(_check_orders(order)[0])
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    beta = 0.4 / order if beta is None else check_finite_positive("beta", beta)
    teachers = int(round(rows.sum(axis=1).max())) if num_teachers is None else int(num_teachers)
    if teachers < 1:
        raise ValueError(f"num_teachers must be >= 1, got {num_teachers!r}")
    confident = answered is not None
    if confident:
        if threshold is None or sigma_threshold is None:
            raise ValueError("answered needs threshold and sigma_threshold")
        flags = np.asarray(answered, dtype=bool).reshape(-1)
        total = confident_gnmax_rdp(
            rows, flags, threshold=threshold, sigma_threshold=sigma_threshold, sigma=sigma,
            orders=[order],
        )[0]  # fmt: skip
    else:
        flags = np.ones(rows.shape[0], dtype=bool)
        total = float(gnmax_rdp(rows, sigma=sigma, orders=[order])[:, 0].sum())
    local = np.zeros(teachers)
    for row, flag in zip(rows, flags, strict=True):
        if confident:
            local += threshold_local_sensitivities(
                row, num_teachers=teachers, threshold=required("threshold", threshold),
                sigma=required("sigma_threshold", sigma_threshold), order=order,
            )  # fmt: skip
        if flag:
            local += gnmax_local_sensitivities(row, num_teachers=teachers, sigma=sigma, order=order)
    ss = smooth_sensitivity(beta, local)
    cost = gnss_rdp(beta, release_sigma, order)
    rng = np.random.default_rng() if rng is None else rng
    noisy = float(total) + ss * release_sigma * float(rng.standard_normal())
    # RDP at one order to (ε, δ): the conversion dp_accounting uses (Canonne, Kamath &
    # Steinke 2020, Prop. 12); never above the standard ln(1/δ)/(λ − 1).
    epsilon = noisy + cost + float(_tight_conversion(order, float(delta)))
    return SmoothSensitivityRelease(
        epsilon=epsilon,
        order=order,
        delta=float(delta),
        beta=beta,
        sigma=float(release_sigma),
        smooth_sensitivity=ss,
        release_cost=cost,
        noise_std=ss * release_sigma,
    )
