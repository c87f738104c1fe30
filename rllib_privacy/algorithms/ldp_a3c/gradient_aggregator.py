"""The central aggregator's buffer (Ono & Takahashi, Alg. 1 and eq. 22)."""

from __future__ import annotations

from typing import Any

import numpy as np


class GradientBuffer:
    """Buffers noisy gradients until ``aggregator_max_buffer`` are in, then yields their mean.

    The aggregator only post-processes privatized gradients, so nothing here
    consumes privacy budget (post-processing invariance).

    Args:
        max_buffer: |B| of the paper: 1 applies every gradient as it arrives
            (the paper's choice for Laplace), 100 is the paper's choice for PRS.
        dim: Length of the flat gradient vectors.

    """

    def __init__(self, max_buffer: int, dim: int) -> None:
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be >= 1, got {max_buffer}")
        self.max_buffer = int(max_buffer)
        self.dim = int(dim)
        self._sum = np.zeros(self.dim, dtype=np.float64)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, gradient: np.ndarray) -> np.ndarray | None:
        """Adds one gradient; returns mean(B) and clears B when B is full."""
        if gradient.shape != (self.dim,):
            raise ValueError(f"gradient must have shape ({self.dim},), got {gradient.shape}")
        self._sum += gradient
        self._count += 1
        if self._count < self.max_buffer:
            return None
        mean = (self._sum / self._count).astype(np.float32)
        self._sum[:] = 0.0
        self._count = 0
        return mean

    def state_dict(self) -> dict[str, Any]:
        """Returns the buffer's contents (the running sum and count)."""
        return {
            "max_buffer": self.max_buffer,
            "dim": self.dim,
            "sum": self._sum.tolist(),
            "count": self._count,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores the contents saved by ``state_dict``."""
        if int(state["dim"]) != self.dim:
            raise ValueError(
                f"checkpointed gradient buffer has dim {state['dim']}, this model has {self.dim}"
            )
        self._sum = np.asarray(state["sum"], dtype=np.float64).reshape(self.dim)
        self._count = int(state["count"])
