"""Duchi et al.'s one-bit mechanism for a bounded scalar (LDPA3C's private scores).

Reference: J. C. Duchi, M. I. Jordan and M. J. Wainwright, "Minimax Optimal Procedures for
Locally Private Estimation", JASA 113(521), 2018, §4.2.3 (one-dimensional mean estimation;
minimax optimal for bounded values under pure ε-LDP). See docs/components/ldp-a3c.md#private-scores.

Formula. A value x is clipped to [lo, hi] and mapped to t = (x − lo)/(hi − lo) ∈ [0, 1]. The
released bit is

    y = 1 with probability q + (p − q)·t,      p = e^ε/(1 + e^ε),  q = 1 − p,

which is binary randomized response applied to a randomized rounding of t to {0, 1} (the
same distribution as Duchi et al.'s ±(e^ε+1)/(e^ε−1) output). The aggregator debiases it:

    x̂ = lo + (hi − lo)·(y − q)/(p − q),        E[x̂] = clip(x, lo, hi),

    Var[x̂] = (hi − lo)²·P(1 − P)/(p − q)² ≤ (hi − lo)²/(4·(p − q)²),   P = q + (p − q)·t.

Sensitivity / range assumption: every input lies in the public range [lo, hi] (values outside
are clipped first, so the guarantee holds for any input). For any two inputs x, x' and any
output y, P(y | x)/P(y | x') ≤ p/q = e^ε: pure ε-LDP. Output set: {0, 1}.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from rllib_privacy._validation import check_finite_positive, check_generator
from rllib_privacy.mechanisms.secure_noise import secure_bernoulli

__all__ = ["OneBitMechanism"]


@dataclasses.dataclass(frozen=True)
class OneBitMechanism:
    """ε-LDP release of one bounded scalar as one bit, debiased at the aggregator.

    Args:
        epsilon: ε of one release, a finite number > 0.
        low: Lower end of the public range the value is clipped to.
        high: Upper end of that range (> ``low``).
        secure_mode: Draw the bits from OS entropy (``secure_bernoulli``) instead of the
            generator passed to ``privatize``.

    Raises:
        ValueError: If ``epsilon`` is not a finite number > 0 or the range is empty or
            not finite.

    Example:
        >>> mech = OneBitMechanism(epsilon=1.0, low=0.0, high=200.0)
        >>> bits = mech.privatize(np.full(100_000, 150.0), np.random.default_rng(0))
        >>> round(float(mech.debias(bits).mean()))
        150

    """

    epsilon: float
    low: float
    high: float
    secure_mode: bool = False

    #: Name recorded in the privacy ledger for each release.
    name = "one_bit"

    def __post_init__(self) -> None:
        check_finite_positive("epsilon", self.epsilon)
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise ValueError(
                f"the range [low, high] must be finite with low < high, got "
                f"[{self.low!r}, {self.high!r}]"
            )

    @property
    def p(self) -> float:
        """Probability of keeping the rounded bit: e^ε/(1 + e^ε)."""
        return 1.0 / (1.0 + math.exp(-self.epsilon))

    @property
    def q(self) -> float:
        """Probability of flipping it: 1/(1 + e^ε)."""
        return 1.0 - self.p

    @property
    def output_set(self) -> frozenset[int]:
        """The values a release can take: ``{0, 1}``."""
        return frozenset({0, 1})

    def validate(self, released: Any) -> np.ndarray:
        """Check that every released value is in ``output_set``; return them as int8.

        Args:
            released: A scalar or array of released values (ints or floats 0/1).

        Raises:
            ValueError: If a value is not 0 or 1.

        """
        values = np.asarray(released, dtype=np.float64)
        if not np.all((values == 0.0) | (values == 1.0)):
            bad = values[(values != 0.0) & (values != 1.0)].reshape(-1)[:3]
            raise ValueError(
                f"a {self.name!r} release must be 0 or 1 (its output set), got {bad.tolist()}"
            )
        return values.astype(np.int8)

    def one_probability(self, values: Any) -> np.ndarray:
        """P(y = 1 | x) = q + (p − q)·t for each value (after clipping), float64."""
        x = np.clip(np.asarray(values, dtype=np.float64), self.low, self.high)
        t = (x - self.low) / (self.high - self.low)
        return self.q + (self.p - self.q) * t

    def privatize(self, values: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """Release one bit per value (each is its own ε-LDP release).

        Args:
            values: Scalars, any shape (NaN is refused; ±inf is clipped to the range).
            rng: Generator of the bits (None: a fresh OS-seeded one; unused in ``secure_mode``).

        Returns:
            int8 array of 0/1 of ``values``' shape.

        Raises:
            ValueError: If a value is NaN.

        """
        x = np.asarray(values, dtype=np.float64)
        if np.isnan(x).any():
            raise ValueError("values must not be NaN")
        probabilities = self.one_probability(x)
        if self.secure_mode:
            return secure_bernoulli(probabilities).astype(np.int8)
        rng = check_generator(rng)
        return (rng.random(probabilities.shape) < probabilities).astype(np.int8)

    def debias(self, released: Any) -> np.ndarray:
        """Unbiased estimate lo + (hi − lo)·(y − q)/(p − q) of each clipped value, float64."""
        y = self.validate(released).astype(np.float64)
        return self.low + (self.high - self.low) * (y - self.q) / (self.p - self.q)

    def variance(self, values: Any) -> np.ndarray:
        """Exact variance of ``debias(privatize(x))`` for each value x."""
        probability = self.one_probability(values)
        scale = (self.high - self.low) / (self.p - self.q)
        return scale**2 * probability * (1.0 - probability)

    @property
    def max_std(self) -> float:
        """Bound on the std of one debiased release: (hi − lo)/(2·(p − q))."""
        return (self.high - self.low) / (2.0 * (self.p - self.q))
