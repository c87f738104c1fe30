"""PATE 2017's moments accountant for Laplacian noisy max (no Ray import).

Reference: Papernot et al., "Semi-supervised Knowledge Transfer for Deep Learning from
Private Training Data", ICLR 2017, §3 (Theorems 2-3, Lemma 4). Corrected formulas in
docs/components/pate.md. The budgeted ledger of queries that uses it is
[PATELedger][rllib_privacy.accounting.pate_ledger.PATELedger].

For one query answered by ``rllib_privacy.mechanisms.noisy_max`` with inverse noise
scale γ (a ``(2γ, 0)``-DP mechanism), the log-moment of order ``l`` is bounded by

* data-independent (Theorem 2): ``α(l) ≤ 2γ²·l·(l+1)``;
* data-dependent (Theorem 3), with ``q ≥ P[label ≠ j*]`` from Lemma 4,
  ``q = Σ_{j≠j*} (2 + γ·(n_{j*} − n_j)) / (4·exp(γ·(n_{j*} − n_j)))``, valid when
  ``q < (e^{2γ} − 1)/(e^{4γ} − 1)``:
  ``α(l) ≤ ln((1−q)·((1−q)/(1 − e^{2γ}·q))^l + q·e^{2γl})``.

Each query uses the smaller valid bound; bounds add up over queries (composability,
Theorem 1) and ``ε = min_l (α_total(l) + ln(1/δ)) / l``.

The data-dependent ε depends on the teachers' votes, hence on the private data: the paper
(§3) releases it only after adding noise calibrated to its smooth sensitivity, and reports
the un-noised value. This module computes the un-noised value (smooth-sensitivity noise is
not implemented); the data-independent ε may be published as it is.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy.special import logsumexp

from rllib_privacy._validation import check_finite_positive, check_int_in_range
from rllib_privacy.mechanisms.noisy_max import validate_votes

__all__ = [
    "PATEEpsilon",
    "advanced_composition_epsilon",
    "data_dependent_log_moments",
    "data_independent_log_moments",
    "epsilon_from_log_moments",
    "gnmax_epsilon",
    "lemma4_log_q",
    "lemma4_q",
    "pate_epsilon",
    "theorem3_max_q",
]


def check_delta(delta: Any) -> float:
    """δ in (0, 1), as a float; ValueError naming ``delta`` otherwise."""
    delta = check_finite_positive("delta", delta)
    if delta >= 1.0:
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
    return delta


def moment_orders(max_order: Any) -> np.ndarray:
    """The moment orders ``1..max_order`` (float64); ValueError for a bad ``max_order``."""
    max_order = check_int_in_range("max_order", max_order, low=1)
    return np.arange(1, max_order + 1, dtype=np.float64)


def theorem3_max_q(gamma: float) -> float:
    """Return the largest q for which Theorem 3 holds: ``(e^{2γ} − 1)/(e^{4γ} − 1)``.

    Equal to ``1 / (e^{2γ} + 1)`` (written so, it cannot overflow); Theorem 3 needs q
    strictly below it.

    Args:
        gamma: Inverse Laplace noise scale γ, a finite number > 0.

    Returns:
        The threshold, in (0, 1/2).

    Raises:
        ValueError: If ``gamma`` is not a finite number > 0.

    """
    gamma = check_finite_positive("gamma", gamma)
    return float(np.exp(-np.logaddexp(0.0, 2.0 * gamma)))


def lemma4_log_q(votes: Any, *, gamma: float) -> np.ndarray:
    """``ln q`` of Lemma 4, computed in log space (q itself underflows for clear majorities).

    ``ln q = logsumexp_{j≠j*} (ln(2 + γ·gap_j) − ln 4 − γ·gap_j)`` with
    ``gap_j = n_{j*} − n_j >= 0``; ``j*`` is the first plurality class and only its own term
    is left out (another tied class has gap 0, i.e. 1/2). Capped at 0 (q <= 1). For votes
    [22, 2] at γ = 2, ``q ≈ 4.5e-17`` (summing the terms and subtracting the winner's 1/2,
    as a direct formula would, rounds it to 0).

    Args:
        votes: Vote histograms, shape ``(m,)`` or ``(batch, m)``; finite counts >= 0.
        gamma: Inverse Laplace noise scale γ, a finite number > 0.

    Returns:
        float64 array of shape ``()`` or ``(batch,)``, entries in ``(−inf, 0]``.

    Raises:
        ValueError: For bad votes or a bad ``gamma``.

    """
    gamma = check_finite_positive("gamma", gamma)
    array = validate_votes(votes)
    rows = np.atleast_2d(array)
    top = np.argmax(rows, axis=-1)
    gaps = gamma * (rows[np.arange(len(rows)), top][:, None] - rows)
    log_terms = np.log(2.0 + gaps) - math.log(4.0) - gaps
    log_terms[np.arange(len(rows)), top] = -np.inf  # the winner's own term
    log_q = np.minimum(logsumexp(log_terms, axis=-1), 0.0)
    return log_q.reshape(array.shape[:-1])


def lemma4_q(votes: Any, *, gamma: float) -> np.ndarray:
    """Lemma 4's upper bound on the probability that noisy max does not return the plurality.

    ``q = Σ_{j≠j*} (2 + γ·gap_j) / (4·exp(γ·gap_j))`` with ``gap_j = n_{j*} − n_j >= 0``,
    capped at 1 (a probability). Ties give ``gap = 0``, i.e. 1/2 per tied class. Computed as
    ``exp(lemma4_log_q(...))``; the accountant works with ``lemma4_log_q`` itself.

    Args:
        votes: Vote histograms, shape ``(m,)`` or ``(batch, m)``; finite counts >= 0.
        gamma: Inverse Laplace noise scale γ, a finite number > 0.

    Returns:
        float64 array of shape ``()`` or ``(batch,)``.

    Raises:
        ValueError: For bad votes or a bad ``gamma``.

    """
    return np.exp(lemma4_log_q(votes, gamma=gamma))


def _log_expm1(log_x: np.ndarray) -> np.ndarray:
    """``ln(e^x − 1)`` from ``ln x`` (x > 0), accurate for tiny and large x."""
    x = np.exp(log_x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tiny = log_x + x / 2.0  # ln(expm1(x)/x) = x/2 + O(x²)
        large = x + np.log1p(-np.exp(-x))
        middle = np.log(np.expm1(x))
    return np.where(x < 1e-8, tiny, np.where(x > 30.0, large, middle))


def data_independent_log_moments(gamma: float, *, max_order: int = 8) -> np.ndarray:
    """Theorem 2's per-query bound ``α(l) ≤ 2γ²·l·(l+1)`` for ``l = 1..max_order``.

    Args:
        gamma: Inverse Laplace noise scale γ, a finite number > 0.
        max_order: Largest moment order, an int >= 1.

    Returns:
        float64 array of shape ``(max_order,)``.

    Raises:
        ValueError: If an argument is invalid.

    """
    gamma = check_finite_positive("gamma", gamma)
    orders = moment_orders(max_order)
    return 2.0 * gamma**2 * orders * (orders + 1.0)


def data_dependent_log_moments(votes: Any, *, gamma: float, max_order: int = 8) -> np.ndarray:
    """Per-query log-moment bounds: the smaller of Theorem 2 and (where valid) Theorem 3.

    Args:
        votes: Vote histograms, shape ``(m,)`` or ``(batch, m)``; finite counts >= 0.
        gamma: Inverse Laplace noise scale γ, a finite number > 0.
        max_order: Largest moment order, an int >= 1.

    Returns:
        float64 array of shape ``(max_order,)`` or ``(batch, max_order)``; entry ``l-1`` is
        the bound on ``α(l)``. Never above ``data_independent_log_moments``.

    Raises:
        ValueError: For bad votes or a bad ``gamma``/``max_order``.

    """
    log_q = lemma4_log_q(votes, gamma=gamma)
    independent = data_independent_log_moments(gamma, max_order=max_order)
    orders = moment_orders(max_order)
    log_q_col = np.atleast_1d(log_q)[:, None]
    valid = log_q_col < math.log(theorem3_max_q(gamma))
    # Only evaluate Theorem 3 where it holds (elsewhere 1 − e^{2γ}q may be <= 0).
    safe = np.where(valid, log_q_col, -1000.0)
    # α(l) = ln(1 + S), S = (1−q)·(r^l − 1) + q·(e^{2γl} − 1), r = (1−q)/(1 − e^{2γ}q),
    # built from ln q so that a q far below 1e-16 still gives S > 0 (no 1 + tiny rounding).
    # ln r = ln(1 + u), u = (e^{2γ} − 1)·q/(1 − e^{2γ}q).
    log1m_q = np.log1p(-np.exp(safe))
    log_u = math.log(math.expm1(2.0 * gamma)) + safe - np.log1p(-np.exp(2.0 * gamma + safe))
    u = np.exp(log_u)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio_over_u = np.where(u > 0, np.log(np.log1p(u) / u), 0.0)
    log_lr = log_u + log_ratio_over_u  # ln(ln r)
    log_s = np.logaddexp(
        log1m_q + _log_expm1(np.log(orders) + log_lr),
        safe + _log_expm1(np.log(2.0 * gamma * orders)),
    )
    dependent = np.logaddexp(0.0, log_s)
    # Where S underflows the bound is below the smallest float: charge that (still an upper bound).
    dependent = np.maximum(dependent, np.finfo(np.float64).tiny)
    moments = np.where(valid, np.minimum(dependent, independent), independent)
    return moments.reshape(np.shape(log_q) + (orders.size,))


def epsilon_from_log_moments(log_moments: Any, *, delta: float) -> tuple[float, int]:
    """Return ``(ε, best order)`` with ``ε = min_l (α(l) + ln(1/δ)) / l`` (Theorem 1).

    Args:
        log_moments: Composed log-moments for orders ``1..L``, shape ``(L,)``, finite, >= 0.
        delta: δ in (0, 1).

    Returns:
        The smallest ε over orders and the order ``l`` attaining it.

    Raises:
        ValueError: If ``delta`` is not in (0, 1) or ``log_moments`` is not a finite 1-D
            array of values >= 0.

    """
    delta = check_delta(delta)
    moments = np.asarray(log_moments, dtype=np.float64)
    if moments.ndim != 1 or moments.size == 0 or not np.all(np.isfinite(moments)):
        raise ValueError(f"log_moments must be a finite, non-empty 1-D array, got {moments!r}")
    if np.any(moments < 0):
        raise ValueError("log_moments must be >= 0")
    orders = np.arange(1, moments.size + 1, dtype=np.float64)
    candidates = (moments + math.log(1.0 / delta)) / orders
    best = int(np.argmin(candidates))
    return float(candidates[best]), best + 1


def advanced_composition_epsilon(
    num_queries: int, *, gamma: float, delta: float, exact: bool = False
) -> float:
    """The strong-composition bound the paper compares against (§3, "5.80").

    The paper writes ``4Tγ² + 2γ·sqrt(2T·ln(1/δ))`` for T queries of a ``2γ``-DP mechanism:
    the advanced composition theorem (Dwork, Rothblum & Vadhan 2010)
    ``T·ε₀·(e^{ε₀} − 1) + ε₀·sqrt(2T·ln(1/δ))`` with ``ε₀ = 2γ`` and the first-order
    approximation ``e^{ε₀} − 1 ≈ ε₀``. That approximation gives the paper's 5.80 for
    T = 100, γ = 0.05, δ = 1e-5 but is slightly BELOW the theorem's bound (5.85 there);
    ``exact=True`` returns the theorem's bound.

    Args:
        num_queries: T, an int >= 0.
        gamma: Inverse Laplace noise scale γ, a finite number > 0.
        delta: δ in (0, 1).
        exact: Use ``e^{ε₀} − 1`` instead of its first-order approximation.

    Returns:
        ε of the T-fold composition.

    Raises:
        ValueError: If an argument is invalid.

    """
    num_queries = check_int_in_range("num_queries", num_queries, low=0)
    gamma = check_finite_positive("gamma", gamma)
    delta = check_delta(delta)
    eps0 = 2.0 * gamma
    growth = math.expm1(eps0) if exact else eps0
    return num_queries * eps0 * growth + eps0 * math.sqrt(2.0 * num_queries * math.log(1 / delta))


@dataclasses.dataclass(frozen=True)
class PATEEpsilon:
    """ε of a sequence of PATE queries (the result of ``pate_epsilon``).

    Attributes:
        epsilon: The (ε, δ)-DP bound.
        order: The moment order ``l`` (LNMax) or Rényi order λ (GNMax ledgers) at which the
            minimum is attained.
        delta: δ.
        num_queries: Number of composed queries.
        data_dependent: Whether the votes' data-dependent bounds were used.
        log_moments: Composed log-moments for orders ``1..max_order`` (LNMax), or the
            composed RDP curve at the ledger's orders (GNMax, Confident-GNMax).

    """

    epsilon: float
    order: int | float
    delta: float
    num_queries: int
    data_dependent: bool
    log_moments: tuple[float, ...]

    def __float__(self) -> float:
        return self.epsilon


def pate_epsilon(
    votes_or_count: Any,
    *,
    gamma: float,
    delta: float,
    max_order: int = 8,
    data_dependent: bool = True,
) -> PATEEpsilon:
    """ε of answering PATE queries with Laplacian noisy max of inverse scale γ.

    Args:
        votes_or_count: Either the number of queries T (an int >= 0: data-independent bound
            only, since the data-dependent one needs the votes), or the vote histograms of
            the answered queries, shape ``(T, m)`` (or ``(m,)`` for one query).
        gamma: Inverse Laplace noise scale γ, a finite number > 0.
        delta: δ in (0, 1).
        max_order: Largest moment order, an int >= 1 (the paper uses 8).
        data_dependent: With votes, use the smaller of Theorems 2 and 3 per query; False
            uses Theorem 2 only.

    Returns:
        A ``PATEEpsilon`` (``float(result)`` is ε). For T = 100, γ = 0.05, δ = 1e-5,
        the data-independent ε is 5.30 at order 5 (the paper's number).

    Raises:
        ValueError: For invalid arguments or votes.

    """
    independent = data_independent_log_moments(gamma, max_order=max_order)
    if isinstance(votes_or_count, bool):
        raise ValueError("votes_or_count must be an int >= 0 or vote histograms, got a bool")
    if isinstance(votes_or_count, int | np.integer):
        count = check_int_in_range("votes_or_count", votes_or_count, low=0)
        moments, used_votes = count * independent, False
    else:
        votes = np.atleast_2d(validate_votes(votes_or_count, name="votes_or_count"))
        count = votes.shape[0]
        if data_dependent:
            moments = data_dependent_log_moments(votes, gamma=gamma, max_order=max_order).sum(0)
        else:
            moments = count * independent
        used_votes = bool(data_dependent)
    epsilon, order = epsilon_from_log_moments(moments, delta=delta)
    return PATEEpsilon(
        epsilon=epsilon,
        order=order,
        delta=float(delta),
        num_queries=count,
        data_dependent=used_votes,
        log_moments=tuple(float(m) for m in moments),
    )


def gnmax_epsilon(
    num_queries: int, *, sigma: float, delta: float, max_order: int = 8
) -> PATEEpsilon:
    """Data-independent ε of ``num_queries`` GNMax answers (``gaussian_noisy_max``).

    One changed teacher vote moves the histogram by √2 in L2 norm, so each answer is
    ``(λ, λ/σ²)``-RDP (Gaussian mechanism); as log-moments of order ``l = λ − 1``:
    ``α(l) = l·(l+1)/σ²`` per query. Composed and converted like ``pate_epsilon``.
    The data-dependent GNMax analysis (Papernot et al. 2018) is not implemented.

    Args:
        num_queries: Number of answered queries, an int >= 0.
        sigma: Standard deviation σ of the Gaussian noise, a finite number > 0.
        delta: δ in (0, 1).
        max_order: Largest moment order, an int >= 1.

    Returns:
        A ``PATEEpsilon`` (``data_dependent`` False).

    Raises:
        ValueError: If an argument is invalid.

    """
    num_queries = check_int_in_range("num_queries", num_queries, low=0)
    sigma = check_finite_positive("sigma", sigma)
    orders = moment_orders(max_order)
    moments = num_queries * orders * (orders + 1.0) / sigma**2
    epsilon, order = epsilon_from_log_moments(moments, delta=delta)
    return PATEEpsilon(
        epsilon=epsilon,
        order=order,
        delta=float(delta),
        num_queries=num_queries,
        data_dependent=False,
        log_moments=tuple(float(m) for m in moments),
    )
