"""Exact binomial confidence bounds and the ε lower bound they support (no Ray, no torch).

An event E of a mechanism's output space is observed ``count`` times in ``n`` independent
releases. Clopper–Pearson bounds are exact (never below their nominal coverage) for every
true probability, which is what an audit that must not cry wolf needs; the normal
approximation under-covers for rare events, exactly the tail events an audit looks at.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from scipy import stats

from rllib_privacy._validation import check_int_in_range

__all__ = ["check_confidence", "check_delta", "clopper_pearson", "epsilon_lower_bound"]


def check_confidence(confidence: Any) -> float:
    """Return ``confidence`` as a float if it is a number in (0, 1), else raise ValueError."""
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    return float(confidence)


def check_delta(delta: Any) -> float:
    """Return ``delta`` as a float if it is a number in [0, 1), else raise ValueError."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}")
    if not 0.0 <= float(delta) < 1.0:
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}")
    return float(delta)


def _check_counts(count: Any, n: int) -> np.ndarray:
    counts = np.asarray(count)
    if counts.dtype == bool or not np.issubdtype(counts.dtype, np.integer):
        raise ValueError(f"count must be an int or an integer array, got {count!r}")
    if np.any(counts < 0) or np.any(counts > n):
        raise ValueError(f"count must lie in [0, n] = [0, {n}], got {count!r}")
    return counts.astype(np.int64)


def clopper_pearson(count: Any, n: int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper–Pearson interval for a binomial proportion (vectorized).

    ``lower = Beta.ppf(α/2; k, n − k + 1)`` (0 when k = 0) and ``upper = Beta.isf(α/2;
    k + 1, n − k)`` (1 when k = n), α = 1 − confidence, from ``scipy.stats.beta``; this is
    what ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")`` returns,
    for many counts at once. Each end alone is a one-sided bound of confidence 1 − α/2.

    Args:
        count: Number of successes k: an int or an integer array, each in [0, n].
        n: Number of trials, an int >= 1.
        confidence: Two-sided confidence level 1 − α in (0, 1).

    Returns:
        ``(lower, upper)`` float64 arrays with the shape of ``count``.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    n = check_int_in_range("n", n, low=1)
    confidence = check_confidence(confidence)
    counts = _check_counts(count, n)
    tail = (1.0 - confidence) / 2.0
    # Clamp the shape parameters into the valid range so that scipy never sees a zero shape
    # (NaN plus a warning); np.where then puts in the closed-form ends.
    lower = stats.beta.ppf(tail, np.maximum(counts, 1), n - counts + 1)
    upper = stats.beta.isf(tail, counts + 1, np.maximum(n - counts, 1))
    lower = np.where(counts > 0, lower, 0.0)
    upper = np.where(counts < n, upper, 1.0)
    return np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)


def epsilon_lower_bound(
    count_x: Any, count_y: Any, n: int, *, delta: float, confidence: float
) -> np.ndarray:
    """Lower confidence bound on ε from one event: ``ln((p_x_lower − δ) / p_y_upper)``.

    If a mechanism is (ε, δ)-DP, every event E satisfies ``P_x(E) <= e^ε·P_y(E) + δ``, so
    ``ε >= ln((P_x(E) − δ) / P_y(E))``. With ``p_x_lower`` and ``p_y_upper`` the ends of
    two-sided Clopper–Pearson intervals at level ``confidence`` (one-sided level
    ``(1 + confidence)/2`` each), both hold together with probability >= ``confidence``
    (union bound), and then the returned value is <= the true ε. An event that cannot
    support any ε (``p_x_lower <= δ``) gives ``-inf``; callers clamp at 0.

    Args:
        count_x: Occurrences of E among ``n`` releases on input x (int or integer array).
        count_y: Occurrences of E among ``n`` releases on input y (same shape).
        n: Releases per input, an int >= 1.
        delta: δ of the claim, in [0, 1).
        confidence: Joint confidence level in (0, 1).

    Returns:
        The bound(s), float64, possibly ``-inf``.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    delta = check_delta(delta)
    lower_x, _ = clopper_pearson(count_x, n, confidence)
    _, upper_y = clopper_pearson(count_y, n, confidence)
    numerator = lower_x - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        # upper_y > 0 always (the Clopper–Pearson upper end of k = 0 is 1 − (α/2)^(1/n)).
        bound = np.where(
            numerator > 0.0, np.log(np.maximum(numerator, math.ulp(0.0)) / upper_y), -np.inf
        )
    return np.asarray(bound, dtype=np.float64)
