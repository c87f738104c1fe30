"""Norm clipping of many gradients at once (one row = one agent's gradient)."""

from __future__ import annotations

import numpy as np

from rllib_privacy._validation import check_finite_positive

__all__ = ["CLIP_NORMS", "clip_rows"]

#: Norms a gradient can be clipped in: ``l1`` (Laplace, Ono & Takahashi eq. 19) and
#: ``l2`` (PrivUnit2 / PrivUnitG).
CLIP_NORMS = ("l1", "l2")


def clip_rows(rows: np.ndarray, *, bound: float, norm: str) -> np.ndarray:
    """Scale every row of ``rows`` to norm at most ``bound``: ``g / max(1, ‖g‖/bound)``.

    A bound of 0 returns zeros (the part gets no share of the clip).

    Args:
        rows: ``(n, d)`` finite array; each row is clipped on its own.
        bound: The norm bound, a finite number >= 0.
        norm: One of ``CLIP_NORMS``.

    Returns:
        A new float64 ``(n, d)`` array.

    Raises:
        ValueError: For a bad ``norm``, ``bound`` or a non-finite entry.

    """
    if norm not in CLIP_NORMS:
        raise ValueError(f"norm must be one of {list(CLIP_NORMS)}, got {norm!r}")
    rows = np.array(rows, dtype=np.float64, ndmin=2)
    if not np.all(np.isfinite(rows)):
        raise ValueError("rows must be finite (a gradient overflowed or is NaN)")
    if bound == 0:
        return np.zeros_like(rows)
    bound = check_finite_positive("bound", bound)
    order = 1 if norm == "l1" else 2
    norms = np.linalg.norm(rows, ord=order, axis=1, keepdims=True)
    return rows / np.maximum(1.0, norms / bound)
