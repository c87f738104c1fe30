"""Output sets of the gradient mechanisms: is a received vector one the mechanism can emit?

A local agent that lies does not run our mechanism: the aggregator can only check that what
it receives lies in the mechanism's output set (Cheu, Smith & Ullman, "Manipulation Attacks
in Local Differential Privacy", IEEE S&P 2021: once outputs are restricted to that set, a
manipulator's power is what the set allows, no more). Each check returns ``None`` for a
vector the mechanism can emit and a one-line reason otherwise. User guide:
docs/components/ldp-a3c.md ("Untrusted agents").

The sets, for a gradient of ``d`` entries, clip ``C`` and ε of one release:

- PrivUnit2 (Bhowmick et al. 2018): every output has L2 norm exactly ``C/m``
  (``privunit2_scale``). Exact set check.
- PrivUnitG (Asi, Feldman & Talwar 2022): the output ``(C/m)·(α·u + w)`` has a positive
  density on all of ``R^d``, so no exact check exists; ``‖α·u + w‖² = α² + ‖w‖²`` with
  ``‖w‖² ~ χ²_{d-1}`` independent of α, and α a two-piece truncated normal. The check is
  the norm bound ``(C/m)·√(a² + b)`` with ``P(|α| > a) = r/2`` (exact tail of α) and
  ``b = χ²_{d-1}`` upper ``r/2`` quantile: an honest output exceeds it with probability
  at most ``r`` (union bound), whatever the gradient.
- Projected random sign (Ono & Takahashi Alg. 3): the output ``Mᵀũ`` has entries
  ``√3·C·k`` with integers ``|k| ≤ d̂`` (``M`` has entries in ``{0, ±√3}``, ``ũ ∈ {±C}^d̂``);
  with ``debias`` the unit is ``√3·C/(c·d̂)``. Every such vector is reachable (the columns of
  ``M`` are drawn independently), so this is the exact support.
- Laplace (Ono & Takahashi Alg. 2): ``clip(g) + z`` with ``‖clip(g)‖₁ ≤ C/2`` and
  ``z_j ~ Lap(b)``, ``b = C/ε``. ``‖z‖₁ ~ Gamma(d, b)`` exactly, so ``‖x‖₁ ≤ C/2 +
  b·Gamma_d.isf(r/2)``; and ``|x_j| ≤ C/2 + b·ln(2d/r)`` (``P(|z_j| > t) = e^{-t/b}``,
  union bound over d coordinates). Both together fail an honest output with probability
  at most ``r``.

Float tolerance (exact sets only differ from the computed ones by rounding): the sender
computes in float64 and casts to the submission's dtype, which moves each entry by at most
``u·|x_j|`` (``u = 2^-24`` for float32, ``2^-53`` for float64), hence any norm by at most
``u·‖x‖``; the float64 computation of the output and of its norm adds at most ``8·d·2^-53``
relative (sums of d terms, a normalization). Secure mode rounds each entry of a PrivUnit
output to a grid of step ``≤ (C/m)·2^-20``: ``√d`` steps more on the L2 norm.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, special, stats

__all__ = [
    "DEFAULT_FALSE_REJECTION_RATE",
    "check_finite_vector",
    "laplace_bounds",
    "max_inner_product_l1_linf",
    "privunit2_t_second_moment",
    "privunitg_alpha_second_moment",
    "privunitg_norm_bound",
    "relative_tolerance",
]

#: Probability that a check refuses an honest output (union over everything it tests);
#: the exact checks (PrivUnit2, PRS) never refuse one.
DEFAULT_FALSE_REJECTION_RATE = 1e-9
#: Unit roundoff of float64: relative error of one rounding.
_U64 = 2.0**-53


def relative_tolerance(dtype: Any, dim: int) -> float:
    """Relative slack on a norm or entry: one cast to ``dtype`` plus float64 arithmetic.

    Args:
        dtype: The dtype the vector was sent in (a numpy floating dtype).
        dim: Number of entries d.

    Returns:
        ``u(dtype) + 8·d·2^-53`` (``u`` = half the dtype's machine epsilon).

    """
    return float(np.finfo(dtype).eps) / 2.0 + 8.0 * dim * _U64


def check_finite_vector(vector: Any, dim: int | None = None) -> str | None:
    """Shape, dtype and finiteness: what every mechanism's output has.

    Args:
        vector: The received vector.
        dim: The expected number of entries; None skips the shape check (any 1-D).

    Returns:
        None if ``vector`` is a 1-D floating numpy array of ``dim`` finite entries, else
        the reason it is not.

    """
    if not isinstance(vector, np.ndarray):
        return f"not a numpy array (got {type(vector).__name__})"
    if vector.ndim != 1 or (dim is not None and vector.shape != (dim,)):
        expected = "a 1-D vector" if dim is None else f"shape ({dim},)"
        return f"shape {vector.shape}, expected {expected}"
    if vector.dtype not in (np.float32, np.float64):
        return f"dtype {vector.dtype}, expected float32 or float64"
    if not np.all(np.isfinite(vector)):
        return "non-finite entries (NaN or inf)"
    return None


def _alpha_tail(a: float, gamma: float, p: float) -> float:
    """``P(|α| > a)`` for PrivUnitG's α: ``N(0,1)`` given ``α ≥ γ`` w.p. p, ``α < γ`` else."""
    q, one_minus_q = special.ndtr(-gamma), special.ndtr(gamma)
    if a >= gamma:
        # Above: only the cap reaches (a, ∞); below -a: only the lower piece.
        return float(special.ndtr(-a) * (p / q + (1.0 - p) / one_minus_q))
    upper = p + (1.0 - p) * (one_minus_q - special.ndtr(a)) / one_minus_q
    lower = (1.0 - p) * special.ndtr(-a) / one_minus_q
    return float(upper + lower)


def privunitg_alpha_second_moment(epsilon: float, gamma: float) -> float:
    """``E[α²]`` of PrivUnitG's α (``N(0,1)`` given ``α ≥ γ`` w.p. p, given ``α < γ`` else).

    For a standard normal truncated to ``[γ, ∞)``, ``E[α²] = 1 + γφ(γ)/Φ(-γ)``; truncated
    to ``(-∞, γ)``, ``1 - γφ(γ)/Φ(γ)``.

    Args:
        epsilon: ε of one release (through ``p``).
        gamma: The cap threshold γ.

    Returns:
        ``E[α²]``.

    """
    q = float(special.ndtr(-gamma))
    p = q / (q + math.exp(-epsilon) * (1.0 - q))
    density = math.exp(-0.5 * gamma * gamma) / math.sqrt(2.0 * math.pi)
    return p * (1.0 + gamma * density / q) + (1.0 - p) * (1.0 - gamma * density / (1.0 - q))


def privunit2_t_second_moment(epsilon: float, dim: int, gamma: float) -> float:
    """``E[t²]`` of PrivUnit2's ``t = ⟨z, u⟩`` (``(1 + t)/2 ~ Beta(a, a)``, ``a = (d-1)/2``).

    ``t`` follows that law conditioned on ``t ≥ γ`` w.p. p and on ``t < γ`` otherwise; the
    two conditional second moments are integrated with ``scipy.stats.beta.expect``.

    Args:
        epsilon: ε of one release (through ``p``).
        dim: d, an int >= 2.
        gamma: The cap threshold γ in [0, 1).

    Returns:
        ``E[t²]``.

    """
    a = (dim - 1) / 2.0
    law = stats.beta(a, a)
    split = (1.0 + gamma) / 2.0
    q = float(law.sf(split))
    p = q / (q + math.exp(-epsilon) * (1.0 - q))

    def square(b: float) -> float:
        return (2.0 * b - 1.0) ** 2

    cap = float(law.expect(square, lb=split, ub=1.0, conditional=True))
    rest = float(law.expect(square, lb=0.0, ub=split, conditional=True))
    return p * cap + (1.0 - p) * rest


def privunitg_norm_bound(
    *, epsilon: float, dim: int, gamma: float, scale: float, false_rejection_rate: float
) -> float:
    """Norm that an honest PrivUnitG output of clip 1 exceeds w.p. at most the rate.

    ``(1/m)·√(a² + b)`` with ``P(|α| > a) = r/2`` (exact, solved with ``brentq``) and
    ``b = χ²_{d-1}.isf(r/2)`` (``scipy.stats.chi2``); multiply by C.

    Args:
        epsilon: ε of one release (only through ``p``).
        dim: d, an int >= 1.
        gamma: The mechanism's cap threshold γ.
        scale: The mechanism's m (``privunitg_scale``).
        false_rejection_rate: r in (0, 1).

    Returns:
        The bound for C = 1.

    """
    q = float(special.ndtr(-gamma))
    p = q / (q + math.exp(-epsilon) * (1.0 - q))
    half = false_rejection_rate / 2.0
    # P(|α| > a) decreases from 1 at a = 0 to 0: one root in (0, 40).
    a = optimize.brentq(lambda x: _alpha_tail(x, gamma, p) - half, 0.0, 40.0, xtol=1e-12)
    b = float(stats.chi2.isf(half, dim - 1)) if dim > 1 else 0.0
    return math.sqrt(a * a + b) / scale


def laplace_bounds(
    *, epsilon: float, clip: float, dim: int, false_rejection_rate: float
) -> tuple[float, float]:
    """(L1 bound, per-entry bound) of Alg. 2's output, each failed w.p. at most r/2.

    Args:
        epsilon: ε of one release; the noise scale is ``b = clip/epsilon``.
        clip: C (the gradient is L1-clipped to C/2).
        dim: d, an int >= 1.
        false_rejection_rate: r in (0, 1).

    Returns:
        ``(C/2 + b·Gamma(d).isf(r/2), C/2 + b·ln(2d/r))``.

    """
    scale = clip / epsilon
    half = false_rejection_rate / 2.0
    l1 = clip / 2.0 + scale * float(stats.gamma.isf(half, dim))
    linf = clip / 2.0 + scale * math.log(dim / half)
    return l1, linf


def max_inner_product_l1_linf(direction: np.ndarray, l1: float, linf: float) -> np.ndarray:
    """The x maximizing ``⟨x, direction⟩`` subject to ``‖x‖₁ ≤ l1`` and ``‖x‖∞ ≤ linf``.

    The linear program's solution fills the entries of largest ``|direction_j|`` with
    ``linf·sign(direction_j)`` until the L1 budget is spent (the last one partly).

    Args:
        direction: A 1-D float array, not all zero.
        l1: L1 budget, > 0.
        linf: Per-entry bound, > 0.

    Returns:
        A float64 array of ``direction``'s shape.

    """
    out = np.zeros(direction.shape, dtype=np.float64)
    budget = l1
    for j in np.argsort(-np.abs(direction)):
        if budget <= 0.0 or direction[j] == 0.0:
            break
        value = min(linf, budget)
        out[j] = math.copysign(value, direction[j])
        budget -= value
    return out
