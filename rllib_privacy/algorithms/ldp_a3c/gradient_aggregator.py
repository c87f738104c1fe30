"""The central aggregator's buffer (Ono & Takahashi, Alg. 1 and eq. 22) and its robust mean.

``aggregator_robust: projection_filter`` replaces the plain mean of a full buffer by the
mean of the reports that survive a one-dimensional outlier filter along the directions an
attack must use (docs/components/ldp-a3c.md#untrusted-agents): the direction of the mean
and the top principal direction. It needs the mechanism's bound σ_b on an honest report's
standard deviation along any direction (``GradientMechanism.output_std_bound``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FILTER_ROUNDS", "FILTER_THRESHOLD", "ROBUST_AGGREGATIONS", "GradientBuffer"]

#: ``aggregator_robust`` values: the plain mean (paper) or the projection filter.
ROBUST_AGGREGATIONS = ("none", "projection_filter")
#: A report is left out when its projection is more than this many σ_b from the median
#: projection. At 4σ_b an honest PrivUnitG report (d = 28, ε = 1, |B| = 2048) is left out
#: about once per 6,000 reports, and the filtered mean's bias stays within 0.1% of the
#: signal (docs/components/ldp-a3c.md#untrusted-agents).
FILTER_THRESHOLD = 4.0
#: Rounds of (mean direction, principal direction) checks; each round that removes
#: nothing ends the filter.
FILTER_ROUNDS = 3
#: Above this many parameters the principal direction comes from power iteration.
_EIGH_MAX_DIM = 1024
_POWER_ITERATIONS = 30


def _principal_direction(centered: np.ndarray) -> np.ndarray:
    """Unit top right-singular vector of ``centered`` (rows = reports minus their mean)."""
    dim = centered.shape[1]
    if dim <= _EIGH_MAX_DIM:
        _, vectors = np.linalg.eigh(centered.T @ centered)
        return vectors[:, -1]
    # A fixed start: the filter is deterministic given the reports.
    vector = np.full(dim, 1.0 / np.sqrt(dim))
    for _ in range(_POWER_ITERATIONS):
        vector = centered.T @ (centered @ vector)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            break
        vector /= norm
    return vector


def projection_filter(
    rows: np.ndarray,
    *,
    std_bound: float,
    threshold: float = FILTER_THRESHOLD,
    rounds: int = FILTER_ROUNDS,
) -> np.ndarray:
    """Which reports the projection filter keeps (a boolean mask over ``rows``).

    Each round projects every kept report on (1) the direction of the kept reports' mean
    and (2) their top principal direction, and leaves out the reports whose projection is
    more than ``threshold·std_bound`` from the median projection of the kept ones.
    Reports pushing together along any direction far beyond an honest report's spread
    stand out on (1) (they move the mean along it) or (2) (they add variance along it).

    Args:
        rows: ``(n, d)`` float array of reports.
        std_bound: σ_b, an upper bound on an honest report's standard deviation along
            any unit direction.
        threshold: Multiple of σ_b beyond which a report is left out.
        rounds: Most rounds.

    Returns:
        The mask of kept reports (at least one: the filter never empties a buffer).

    """
    keep = np.ones(rows.shape[0], dtype=bool)
    limit = threshold * std_bound
    for _ in range(rounds):
        kept = rows[keep]
        mean = kept.mean(axis=0)
        directions = [_principal_direction(kept - mean)]
        norm = float(np.linalg.norm(mean))
        if norm > 0.0:
            directions.insert(0, mean / norm)
        removed = False
        for direction in directions:
            projection = rows @ direction
            median = float(np.median(projection[keep]))
            outside = keep & (np.abs(projection - median) > limit)
            if outside.any() and outside.sum() < keep.sum():
                keep &= ~outside
                removed = True
        if not removed:
            break
    return keep


class GradientBuffer:
    """Buffers noisy gradients until ``aggregator_max_buffer`` are in, then yields their mean.

    The aggregator only post-processes privatized gradients, so nothing here
    consumes privacy budget (post-processing invariance); the robust mean is
    post-processing too.

    Args:
        max_buffer: |B| of the paper: 1 applies every gradient as it arrives
            (the paper's choice for Laplace), 100 is the paper's choice for PRS.
        dim: Length of the flat gradient vectors.
        robust: ``"none"`` (the mean) or ``"projection_filter"`` (``projection_filter``).
        std_bound: σ_b of ``projection_filter``: required (finite, > 0) with it.

    """

    def __init__(
        self, max_buffer: int, dim: int, *, robust: str = "none", std_bound: float = np.inf
    ) -> None:
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be >= 1, got {max_buffer}")
        if robust not in ROBUST_AGGREGATIONS:
            raise ValueError(f"robust must be one of {ROBUST_AGGREGATIONS}, got {robust!r}")
        if robust != "none" and not (0.0 < std_bound < np.inf):
            raise ValueError(
                f"robust={robust!r} needs a finite std_bound > 0 (the mechanism's "
                f"output_std_bound), got {std_bound!r}"
            )
        self.max_buffer = int(max_buffer)
        self.dim = int(dim)
        self.robust = robust
        self.std_bound = float(std_bound)
        #: Reports the robust mean left out so far (valid reports, counted, not applied).
        self.filtered = 0
        self._sum = np.zeros(self.dim, dtype=np.float64)
        # The robust mean needs every report of the buffer, not just their sum.
        self._rows = np.zeros((self.max_buffer if robust != "none" else 0, self.dim))
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, gradient: np.ndarray) -> np.ndarray | None:
        """Adds one gradient; returns mean(B) (or its robust mean) and clears B when B is full."""
        if gradient.shape != (self.dim,):
            raise ValueError(f"gradient must have shape ({self.dim},), got {gradient.shape}")
        if self.robust != "none":
            self._rows[self._count] = gradient
        self._sum += gradient
        self._count += 1
        if self._count < self.max_buffer:
            return None
        if self.robust == "none":
            mean = self._sum / self._count
        else:
            keep = projection_filter(self._rows, std_bound=self.std_bound)
            self.filtered += int(keep.size - np.count_nonzero(keep))
            mean = self._rows[keep].mean(axis=0)
        self._sum[:] = 0.0
        self._count = 0
        return mean.astype(np.float32)

    def state_dict(self) -> dict[str, Any]:
        """Returns the buffer's contents (the running sum and count; the rows if robust)."""
        state: dict[str, Any] = {
            "max_buffer": self.max_buffer,
            "dim": self.dim,
            "sum": self._sum.tolist(),
            "count": self._count,
            "filtered": self.filtered,
        }
        if self.robust != "none":
            state["rows"] = self._rows[: self._count].tolist()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores the contents saved by ``state_dict``."""
        if int(state["dim"]) != self.dim:
            raise ValueError(
                f"checkpointed gradient buffer has dim {state['dim']}, this model has {self.dim}"
            )
        count = int(state["count"])
        if self.robust != "none":
            if count > 0 and "rows" not in state:
                raise ValueError(
                    "checkpointed gradient buffer holds only the sum of its reports: "
                    "aggregator_robust needs them one by one (restore with "
                    "aggregator_robust: none, or from a checkpoint taken with it)"
                )
            rows = np.asarray(state.get("rows", []), dtype=np.float64).reshape(-1, self.dim)
            self._rows[: rows.shape[0]] = rows
        self._sum = np.asarray(state["sum"], dtype=np.float64).reshape(self.dim)
        self._count = count
        self.filtered = int(state.get("filtered", 0))
