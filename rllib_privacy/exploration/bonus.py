"""Count-based exploration bonuses r⁺ = β·f(n) (Tang et al. 2017, eq. 1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_privacy._validation import check_finite_positive

__all__ = ["BONUS_KINDS", "count_bonus"]

#: Bonus shapes f(n): β/√n (the paper's), β/n and β/log(n+1).
BONUS_KINDS: tuple[str, ...] = ("inverse_sqrt", "inverse", "inverse_log")


def count_bonus(counts: Any, beta: float, kind: str = "inverse_sqrt") -> np.ndarray:
    """Returns the bonus of states visited ``counts`` times (counts already include the visit).

    Args:
        counts: Visit counts n ≥ 1 (any shape).
        beta: Bonus coefficient β > 0.
        kind: ``inverse_sqrt`` (β/√n, paper eq. 1), ``inverse`` (β/n, as RLlib's
            CountBasedCuriosity example) or ``inverse_log`` (β/log(n+1)).

    Returns:
        float64 bonuses of the same shape, strictly decreasing in n.

    Raises:
        ValueError: If ``beta`` is not > 0, ``kind`` is unknown or a count is < 1.

    """
    beta = check_finite_positive("beta", beta)
    n = np.asarray(counts, dtype=np.float64)
    if n.size and n.min() < 1:
        raise ValueError(f"counts must be >= 1 (count before computing the bonus), got {n.min()}")
    if kind == "inverse_sqrt":
        return beta / np.sqrt(n)
    if kind == "inverse":
        return beta / n
    if kind == "inverse_log":
        return beta / np.log1p(n)
    raise ValueError(f"kind must be one of {list(BONUS_KINDS)}, got {kind!r}")
