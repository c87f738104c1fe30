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

from rllib_privacy.mechanisms._validation import check_int_in_range

__all__ = ["BoxNormalizer", "OneHot", "SimHash", "as_2d_float"]

Preprocessor = Callable[[np.ndarray], np.ndarray]


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
        x = as_2d_float(batch if self.preprocessor is None else self.preprocessor(batch))
        if x.shape[1] != self.input_dim:
            raise ValueError(f"g(s) must have input_dim={self.input_dim} entries, got {x.shape[1]}")
        return x

    def codes(self, batch: Any) -> np.ndarray:
        """Returns the (N, k) int8 codes in {−1, +1}; a zero projection maps to +1."""
        projected = self.features(batch) @ self.projection.T
        # np.sign would give 0 for an exact zero (e.g. the all-zero state): map it to +1.
        return np.where(projected >= 0.0, 1, -1).astype(np.int8)

    def state_dict(self) -> dict[str, Any]:
        """The projection and its seed (the preprocessor is configuration, not state)."""
        return {"seed": self.seed, "projection": self.projection.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores the projection saved by :meth:`state_dict`."""
        projection = np.asarray(state["projection"], dtype=np.float64)
        if projection.shape != self.projection.shape:
            raise ValueError(
                f"projection must have shape {self.projection.shape}, got {projection.shape}"
            )
        self.seed = int(state["seed"])
        self.projection = projection.copy()
