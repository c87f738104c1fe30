"""SimHash codes of states and the preprocessors g(s) they are computed from.

Tang et al., "#Exploration: A Study of Count-Based Exploration for Deep RL" (2017), eq. 2:
φ(s) = sgn(A·g(s)) ∈ {−1, 1}^k with A ∈ R^{k×D} drawn i.i.d. from N(0, 1) and g an
optional preprocessor. Similar states (small angle between g(s) and g(s')) share most
bits: each bit differs with probability angle/π, so k sets the granularity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rllib_privacy._validation import check_int_in_range

__all__ = ["BoxNormalizer", "OneHot", "SimHash", "as_2d_float"]

Preprocessor = Callable[[np.ndarray], np.ndarray]

#: Rows per block of the float32 projection in SimHash.codes.
_BLOCK_ROWS = 2048


def as_2d_float(batch: Any) -> np.ndarray:
    """Returns a batch of states (numpy or torch, any trailing shape) as (N, D) float64."""
    if hasattr(batch, "detach"):  # torch.Tensor without importing torch here
        batch = batch.detach().cpu().numpy()
    array = np.asarray(batch, dtype=np.float64)
    if array.ndim == 0:
        raise ValueError("batch must have a leading batch dimension, got a scalar")
    return array.reshape(array.shape[0], -1)


class BoxNormalizer:
    """g(s) = [2(s − low)/(high − low) − 1, 1]: states scaled to [−1, 1] plus a bias input.

    sgn(A·s) only sees the direction of s, so for a low-dimensional state (MountainCar's
    position and velocity) every ray from the origin would share one code whatever its
    length. Centring the box on the origin and appending a constant 1 turns the random
    hyperplanes through the origin into affine ones that cut the box into cells.

    Args:
        low: Lower bounds of the observation box (flattened).
        high: Upper bounds; every entry must be finite and > ``low``.
        append_bias: Whether to append the constant 1 input.

    """

    def __init__(
        self,
        low: Sequence[float] | np.ndarray,
        high: Sequence[float] | np.ndarray,
        *,
        append_bias: bool = True,
    ) -> None:
        self.low = np.asarray(low, dtype=np.float64).reshape(-1)
        self.high = np.asarray(high, dtype=np.float64).reshape(-1)
        if self.low.shape != self.high.shape:
            raise ValueError(
                f"low and high must have the same size, got {self.low.shape} and {self.high.shape}"
            )
        if not (np.all(np.isfinite(self.low)) and np.all(np.isfinite(self.high))):
            raise ValueError(
                "low and high must be finite (use no preprocessor for unbounded observations)"
            )
        if np.any(self.high <= self.low):
            raise ValueError("high must be > low in every coordinate")
        self.append_bias = bool(append_bias)

    @property
    def output_dim(self) -> int:
        """D of g(s)."""
        return self.low.size + int(self.append_bias)

    def __call__(self, batch: Any) -> np.ndarray:
        """g(s) of a batch as (N, D) float64."""
        x = as_2d_float(batch)
        if x.shape[1] != self.low.size:
            raise ValueError(f"states must have {self.low.size} entries, got {x.shape[1]}")
        x = 2.0 * (x - self.low) / (self.high - self.low) - 1.0
        if self.append_bias:
            x = np.concatenate([x, np.ones((x.shape[0], 1))], axis=1)
        return x


class OneHot:
    """g(s) = one-hot(s) for integer states of a Discrete(n) space (FrozenLake's cells).

    Args:
        n: Number of distinct states.

    """

    def __init__(self, n: int) -> None:
        self.n = check_int_in_range("n", n, low=1)

    @property
    def output_dim(self) -> int:
        """D of g(s)."""
        return self.n

    def __call__(self, batch: Any) -> np.ndarray:
        """One-hot rows (N, n) of a batch of integer states."""
        states = as_2d_float(batch)
        if states.shape[1] == self.n:  # already one-hot (e.g. a flattening connector ran)
            return states
        index = states[:, 0].astype(np.int64)
        if states.shape[1] != 1 or np.any(index < 0) or np.any(index >= self.n):
            raise ValueError(f"states must be integers in [0, {self.n}), got {states[:3]}")
        return np.eye(self.n)[index]


class SimHash:
    """φ(s) = sgn(A·g(s)) with a fixed Gaussian projection A (paper eq. 2).

    Args:
        input_dim: D, the size of g(s) (of the flattened state when ``preprocessor`` is
            None).
        num_bits: k, the code length (granularity).
        seed: Seed of the numpy Generator that draws A ~ N(0, 1)^{k×D}.
        preprocessor: Optional g, a callable from a (N, ...) batch to (N, D) floats.

    Example::

        hasher = SimHash(2, 32, seed=0)
        codes = hasher.codes(np.array([[0.1, -0.3], [0.1, -0.29]]))  # (2, 32) int8

    """

    def __init__(
        self, input_dim: int, num_bits: int, *, seed: int, preprocessor: Preprocessor | None = None
    ) -> None:
        self.input_dim = check_int_in_range("input_dim", input_dim, low=1)
        self.num_bits = check_int_in_range("num_bits", num_bits, low=1)
        self.seed = check_int_in_range("seed", seed, low=0)
        self.preprocessor = preprocessor
        self.projection = np.random.default_rng(self.seed).standard_normal(
            (self.num_bits, self.input_dim)
        )

    def features(self, batch: Any) -> np.ndarray:
        """g(s) as (N, D) float64."""
        return self._features(batch, np.float64)

    def _features(self, batch: Any, dtype: type | None) -> np.ndarray:
        """g(s) as (N, D) of ``dtype`` (None: as given if floating, else float64)."""
        if self.preprocessor is not None:
            batch = self.preprocessor(batch)
        if hasattr(batch, "detach"):  # torch.Tensor without importing torch here
            batch = batch.detach().cpu().numpy()
        x = np.asarray(batch)
        if x.ndim == 0:
            raise ValueError("batch must have a leading batch dimension, got a scalar")
        x = x.reshape(x.shape[0], -1)
        if x.shape[1] != self.input_dim:
            raise ValueError(f"g(s) must have input_dim={self.input_dim} entries, got {x.shape[1]}")
        if dtype is None and not np.issubdtype(x.dtype, np.floating):
            dtype = np.float64
        return np.asarray(x, dtype=dtype)

    def codes(self, batch: Any) -> np.ndarray:
        """Returns the (N, k) int8 codes in {−1, +1}; a zero projection maps to +1.

        The projection runs in float32 (about 2-4× faster than float64 at k = 256, and the
        batch need not be copied to float64). The float32 value of A·g(s) can only have
        the wrong sign where |A·g(s)| is within its round-off bound (D + 2)·u·‖A_j‖·‖g(s)‖
        (u = 2⁻²⁴; Higham's γ_D bound for an inner product in any summation order, plus
        the rounding of A and g(s) to float32, and Cauchy-Schwarz); those few entries are
        recomputed in float64, so the codes are those of the float64 projection whatever
        the BLAS. An exact zero still maps to +1.
        """
        x = self._features(batch, None)  # as given: the float64 recompute needs its exact values
        x32 = x.astype(np.float32, copy=False)
        # Per-row bound with the largest ‖A_j‖ (looser, so it recomputes a few more entries,
        # but it needs no N×k bound array).
        bound = (2 * (self.input_dim + 2) * 2.0**-24 * self._row_norms.max()) * np.linalg.norm(
            x32, axis=1
        )
        codes = np.empty((x32.shape[0], self.num_bits), dtype=np.int8)
        # Row blocks keep the float32 block in cache for the sign, |·| and bound passes.
        for lo in range(0, x32.shape[0], _BLOCK_ROWS):
            hi = lo + _BLOCK_ROWS
            projected = x32[lo:hi] @ self._projection32.T
            positive = projected >= 0.0
            near_zero = np.abs(projected, out=projected) <= bound[lo:hi, None]
            # A 2-D np.nonzero is ~15× slower than the flat one on a (2048, 256) block.
            rows, cols = np.divmod(np.flatnonzero(near_zero), self.num_bits)
            if rows.size:
                # Per-entry float64 dot products, hand-written: a handful of entries land
                # here and recomputing whole rows through BLAS would cost more.
                x64 = x[lo:hi][rows].astype(np.float64)
                positive[rows, cols] = np.einsum("ij,ij->i", x64, self.projection[cols]) >= 0.0
            np.subtract(np.left_shift(positive.view(np.int8), 1), 1, out=codes[lo:hi])
        return codes

    @property
    def projection(self) -> np.ndarray:
        """A as (k, D) float64."""
        return self._projection

    @projection.setter
    def projection(self, value: np.ndarray) -> None:
        self._projection = value
        self._projection32 = value.astype(np.float32)
        self._row_norms = np.linalg.norm(self._projection32, axis=1)

    def state_dict(self) -> dict[str, Any]:
        """The projection and its seed (the preprocessor is configuration, not state)."""
        return {"seed": self.seed, "projection": self.projection.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores the projection saved by ``state_dict``."""
        projection = np.asarray(state["projection"], dtype=np.float64)
        if projection.shape != self.projection.shape:
            raise ValueError(
                f"projection must have shape {self.projection.shape}, got {projection.shape}"
            )
        self.seed = int(state["seed"])
        self.projection = projection.copy()
