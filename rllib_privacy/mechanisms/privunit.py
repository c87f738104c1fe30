"""Optimal ε-LDP mechanisms for bounded vectors: PrivUnitG and PrivUnit2.

User guide: docs/components/ldp-a3c.md.

References:
    H. Asi, V. Feldman, K. Talwar, "Optimal Algorithms for Mean Estimation under Local
    Differential Privacy", ICML 2022 (PrivUnitG). A. Bhowmick, J. Duchi, J. Freudiger,
    G. Kapoor, R. Rogers, "Protection Against Reconstruction and Its Applications in Private
    Federated Learning", arXiv:1812.00984, 2018 (PrivUnit2).

Both release a gradient ``g ∈ R^d`` with ``‖g‖₂ ≤ C`` (larger ones are L2-clipped to ``C``
first) in three steps:

1. Norm step: ``s = +1`` with probability ``(1 + ‖g‖/C)/2``, else ``-1``;
   ``u = s·g/‖g‖`` (``u`` uniform on the sphere for ``g = 0``), so ``E[u] = g/C``.
2. Privatize the unit vector ``u`` into ``Z`` with ``E[Z] = u`` (the mechanism proper).
3. Output ``C·Z``, so ``E[output] = g``.

Privacy: step 2 is ε-LDP for any two unit vectors (the output density is proportional to a
common base density times ``p/q`` on a cap around ``u`` and ``(1 - p)/(1 - q)`` off it, and
``(p/q)/((1 - p)/(1 - q)) = e^ε`` exactly). Step 1 only picks which unit vector enters step
2, and step 3 is post-processing, so the whole release is pure ε-LDP for any two gradients,
whatever their norms (the "sensitivity" is the whole L2 ball of radius C).

Calibration: ``p = e^ε·q / (1 + (e^ε - 1)·q)`` exactly, computed as
``q / (q + e^{-ε}·(1 - q))`` (no overflow for large ε). Some public implementations use a
looser bound for the cap; at d = 112 that turns a nominal ε = 4 into about 3.57 with 41%
more error (docs/components/ldp-a3c.md); nothing of the kind is done here.

Error (closed form, for a unit input; multiply by ``C²`` for ``‖g‖ = C``):
``privunitg_mse`` and ``privunit2_mse``; at d = 112 the optimal γ give
MSE/C² ≈ 709 (G) and 705 (2) at ε = 1, 48.75 and 48.04 at ε = 4.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from scipy import optimize, special

from rllib_privacy._validation import (
    as_float64_array,
    check_bool,
    check_finite_positive,
    check_generator,
    check_int_in_range,
    restore_kind,
)
from rllib_privacy.mechanisms.secure_noise import os_entropy_generator, secure_bernoulli

__all__ = [
    "privunit2",
    "privunit2_mse",
    "privunit2_optimal_gamma",
    "privunit2_rows",
    "privunit2_scale",
    "privunitg",
    "privunitg_mse",
    "privunitg_optimal_gamma",
    "privunitg_rows",
    "privunitg_scale",
]

GradT = TypeVar("GradT")

#: Largest γ accepted by PrivUnitG: Φ(-30) ≈ 5e-198 is still far from underflow.
PRIVUNITG_MAX_GAMMA = 30.0
# Smallest cap (or complement) probability that can still be sampled by inversion.
_MIN_CAP_PROBABILITY = 1e-290
# Secure mode rounds the release stochastically to multiples of 2^(⌊log2(C/m)⌋ - 20).
_SECURE_GRID_BITS = 20
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


# --------------------------------------------------------------------------------------
# Validation


def _check_gamma_g(gamma: Any) -> float:
    message = (
        f"gamma must be a finite number in [0, {PRIVUNITG_MAX_GAMMA:g}] for PrivUnitG "
        f"(None picks the MSE-optimal one), got {gamma!r}"
    )
    if isinstance(gamma, bool) or not isinstance(gamma, int | float | np.integer | np.floating):
        raise ValueError(message)
    value = float(gamma)
    if not 0.0 <= value <= PRIVUNITG_MAX_GAMMA:  # also rejects NaN
        raise ValueError(message)
    return value


def _check_gamma_2(gamma: Any, dim: int) -> float:
    message = (
        "gamma must be a number in [0, 1) for PrivUnit2 (None picks the MSE-optimal one), "
        f"got {gamma!r}"
    )
    if isinstance(gamma, bool) or not isinstance(gamma, int | float | np.integer | np.floating):
        raise ValueError(message)
    value = float(gamma)
    if not 0.0 <= value < 1.0:
        raise ValueError(message)
    if dim > 1:
        a = (dim - 1) / 2.0
        cap = float(special.betainc(a, a, (1.0 - value) / 2.0))
        if cap < _MIN_CAP_PROBABILITY:
            raise ValueError(
                f"gamma={value!r} is too large for dim={dim}: the cap probability {cap:.3g} "
                "underflows (use a smaller gamma, or None for the optimal one)"
            )
    return value


def _check_dim(dim: Any) -> int:
    return check_int_in_range("dim", dim, low=1)


# --------------------------------------------------------------------------------------
# Closed forms (vectorized over gamma, log space)


def _g_log_terms(epsilon: float, dim: int, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PrivUnitG: ``(log m, log E‖Z‖²)`` for a unit input, elementwise in ``gamma``."""
    log_q = special.log_ndtr(-gamma)  # log Φ(-γ)
    log_1mq = special.log_ndtr(gamma)  # log Φ(γ) = log(1 - q)
    log_d = np.logaddexp(log_q, -epsilon + log_1mq)  # log(q + e^{-ε}(1 - q))
    log_phi = -0.5 * gamma * gamma - _LOG_SQRT_2PI
    log_m = log_phi + math.log(-math.expm1(-epsilon)) - log_d
    p = np.exp(log_q - log_d)
    one_minus_p = np.exp(-epsilon + log_1mq - log_d)
    # E[α²] = p·(1 + γφ/q) + (1 - p)·(1 - γφ/(1 - q)) (truncated normal second moments).
    second = p * (1.0 + gamma * np.exp(log_phi - log_q)) + one_minus_p * (
        1.0 - gamma * np.exp(log_phi - log_1mq)
    )
    return log_m, np.log(second + (dim - 1)) - 2.0 * log_m


def _u2_log_m(epsilon: float, dim: int, gamma: np.ndarray) -> np.ndarray:
    """PrivUnit2: ``log m`` for a unit input (``E‖Z‖² = 1/m²``), elementwise in ``gamma``."""
    if dim == 1:
        # The "sphere" is {±1}: the cap {t >= γ} is {+1}, q = 1/2, E[t·1{t >= γ}] = 1/2.
        log_q = np.full_like(gamma, math.log(0.5))
        log_1mq = log_q
        log_tail_mean = np.full_like(gamma, math.log(0.5))
    else:
        a = (dim - 1) / 2.0
        with np.errstate(divide="ignore"):
            log_q = np.log(special.betainc(a, a, (1.0 - gamma) / 2.0))
        log_1mq = np.log(special.betainc(a, a, (1.0 + gamma) / 2.0))
        # c_d·(1 - γ²)^{(d-1)/2}/(d - 1) = E[t·1{t >= γ}], c_d = Γ(d/2)/(√π·Γ((d-1)/2)).
        log_cd = special.gammaln(dim / 2.0) - 0.5 * math.log(math.pi) - special.gammaln(a)
        log_tail_mean = log_cd + a * np.log1p(-gamma * gamma) - math.log(dim - 1)
    log_d = np.logaddexp(log_q, -epsilon + log_1mq)
    # p/q - (1 - p)/(1 - q) = (1 - e^{-ε})/(q + e^{-ε}(1 - q)).
    return math.log(-math.expm1(-epsilon)) - log_d + log_tail_mean


def _minimize(objective: Callable[[np.ndarray], np.ndarray], grid: np.ndarray) -> float:
    """Grid search, then a bounded Brent refinement between the best point's neighbours."""
    values = objective(grid)
    best = int(np.nanargmin(values))
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    result = optimize.minimize_scalar(
        lambda x: float(objective(np.array([x]))[0]),
        bounds=(float(low), float(high)),
        method="bounded",
        options={"xatol": 1e-10 * max(1.0, float(high))},
    )
    candidate = float(result.x)
    return candidate if float(result.fun) <= float(values[best]) else float(grid[best])


@functools.lru_cache(maxsize=512)
def _optimal_gamma_g(epsilon: float, dim: int) -> float:
    grid = np.linspace(0.0, PRIVUNITG_MAX_GAMMA, 1201)
    return _minimize(lambda g: _g_log_terms(epsilon, dim, g)[1], grid)


@functools.lru_cache(maxsize=512)
def _optimal_gamma_2(epsilon: float, dim: int) -> float:
    if dim == 1:
        return 0.0  # every γ in [0, 1) gives the same mechanism (randomized response)
    grid = np.concatenate([[0.0], np.geomspace(1e-7, 1.0 - 1e-9, 1200)])

    def objective(gamma: np.ndarray) -> np.ndarray:
        value = -2.0 * _u2_log_m(epsilon, dim, gamma)
        # A cap too small to sample is never optimal (its error is astronomical anyway).
        a = (dim - 1) / 2.0
        tiny = special.betainc(a, a, (1.0 - gamma) / 2.0) < _MIN_CAP_PROBABILITY
        return np.where(tiny, np.inf, value)

    return _minimize(objective, grid)


def privunitg_optimal_gamma(epsilon: float, dim: int) -> float:
    """Return the γ that minimizes PrivUnitG's error ``privunitg_mse`` (cached).

    Minimizes ``E‖Z‖² = (E[α²] + d - 1)/m²`` (log space) over ``γ ∈ [0, 30]``: a grid
    search, then ``scipy.optimize.minimize_scalar`` (bounded) around the best grid point.
    Examples (d = 112): ε = 1 → γ ≈ 0.396; ε = 4 → γ ≈ 1.509.

    Args:
        epsilon: ε of one release, a finite number > 0.
        dim: Dimension d, an int >= 1.

    Returns:
        The optimal γ, a float in [0, 30].

    Raises:
        ValueError: If ``epsilon`` is not a finite number > 0 or ``dim`` is not an int >= 1.

    """
    return _optimal_gamma_g(check_finite_positive("epsilon", epsilon), _check_dim(dim))


def privunit2_optimal_gamma(epsilon: float, dim: int) -> float:
    """Return the γ that minimizes PrivUnit2's error ``privunit2_mse`` (cached).

    Maximizes ``log m`` (``E‖Z‖² = 1/m²``) over ``γ ∈ [0, 1)``: a grid search dense near 0
    (the optimum is ``O(√(ε/d))``), then ``scipy.optimize.minimize_scalar`` (bounded)
    around the best grid point. Caps whose probability underflows are excluded. Examples
    (d = 112): ε = 1 → γ ≈ 0.0376; ε = 4 → γ ≈ 0.143. For d = 1 every γ gives the same
    mechanism (randomized response on ±u); 0 is returned.

    Args:
        epsilon: ε of one release, a finite number > 0.
        dim: Dimension d, an int >= 1.

    Returns:
        The optimal γ, a float in [0, 1).

    Raises:
        ValueError: If ``epsilon`` is not a finite number > 0 or ``dim`` is not an int >= 1.

    """
    return _optimal_gamma_2(check_finite_positive("epsilon", epsilon), _check_dim(dim))


def _resolve_g(epsilon: Any, dim: Any, gamma: Any) -> tuple[float, int, float]:
    epsilon = check_finite_positive("epsilon", epsilon)
    dim = _check_dim(dim)
    gamma = _optimal_gamma_g(epsilon, dim) if gamma is None else _check_gamma_g(gamma)
    return epsilon, dim, gamma


def _resolve_2(epsilon: Any, dim: Any, gamma: Any) -> tuple[float, int, float]:
    epsilon = check_finite_positive("epsilon", epsilon)
    dim = _check_dim(dim)
    gamma = _optimal_gamma_2(epsilon, dim) if gamma is None else _check_gamma_2(gamma, dim)
    return epsilon, dim, gamma


def privunitg_scale(epsilon: float, dim: int, gamma: float | None = None) -> float:
    """Return PrivUnitG's debiasing scale ``m = E[α]`` (the output is ``(α·u + w)/m``).

    ``m = φ(γ)·(e^ε - 1)/(1 + (e^ε - 1)·q)`` with ``q = Φ(-γ)``, computed in log space as
    ``φ(γ)·(1 - e^{-ε})/(q + e^{-ε}·(1 - q))``. It does not depend on ``dim`` except
    through the default γ.

    Args:
        epsilon: ε of one release, a finite number > 0.
        dim: Dimension d, an int >= 1.
        gamma: Cap threshold γ in [0, 30]; None uses ``privunitg_optimal_gamma``.

    Returns:
        m, a float > 0.

    Raises:
        ValueError: If an argument is out of range.

    """
    epsilon, dim, gamma = _resolve_g(epsilon, dim, gamma)
    return float(np.exp(_g_log_terms(epsilon, dim, np.array([gamma]))[0][0]))


def privunit2_scale(epsilon: float, dim: int, gamma: float | None = None) -> float:
    """Return PrivUnit2's debiasing scale m (the output ``z/m`` has norm ``1/m``).

    ``m = (p/q - (1 - p)/(1 - q))·c_d·(1 - γ²)^{(d-1)/2}/(d - 1)`` with
    ``c_d = Γ(d/2)/(√π·Γ((d-1)/2))``, ``q = 1 - I_{(1+γ)/2}(a, a)``, ``a = (d - 1)/2``;
    computed in log space (valid for d = 10⁴ and large ε). For d = 1, ``m = tanh(ε/2)``.

    Args:
        epsilon: ε of one release, a finite number > 0.
        dim: Dimension d, an int >= 1.
        gamma: Cap threshold γ in [0, 1); None uses ``privunit2_optimal_gamma``.

    Returns:
        m, a float in (0, 1].

    Raises:
        ValueError: If an argument is out of range, or the cap of ``gamma`` has a
            probability that underflows in float64.

    """
    epsilon, dim, gamma = _resolve_2(epsilon, dim, gamma)
    return float(np.exp(_u2_log_m(epsilon, dim, np.array([gamma]))[0]))


def privunitg_mse(epsilon: float, dim: int, gamma: float | None = None) -> float:
    """Return PrivUnitG's MSE/C² for ``‖g‖ = C``: ``E‖Z - u‖²`` for a unit input u.

    ``E‖Z - u‖² = (E[α²] + d - 1)/m² - 1`` with ``E[α²] = p·(1 + γφ(γ)/q) +
    (1 - p)·(1 - γφ(γ)/(1 - q))`` (docs/components/ldp-a3c.md). Multiply by ``C²`` for the error of
    a release of a gradient with ``‖g‖ = C``; for ``‖g‖ < C`` it is ``C²·(mse + 1) - ‖g‖²``.

    Args:
        epsilon: ε of one release, a finite number > 0.
        dim: Dimension d, an int >= 1.
        gamma: Cap threshold γ in [0, 30]; None uses ``privunitg_optimal_gamma``.

    Returns:
        The MSE divided by C², a float > 0 (≈ 709 at ε = 1, d = 112).

    Raises:
        ValueError: If an argument is out of range.

    """
    epsilon, dim, gamma = _resolve_g(epsilon, dim, gamma)
    return float(np.expm1(_g_log_terms(epsilon, dim, np.array([gamma]))[1][0]))


def privunit2_mse(epsilon: float, dim: int, gamma: float | None = None) -> float:
    """Return PrivUnit2's MSE/C² for ``‖g‖ = C``: ``E‖Z - u‖² = 1/m² - 1``.

    The output lies on the sphere of radius ``1/m`` (``C/m`` after scaling), so the error
    is ``1/m² - 1`` for a unit input and ``C²/m² - ‖g‖²`` for a gradient of norm ``‖g‖``.

    Args:
        epsilon: ε of one release, a finite number > 0.
        dim: Dimension d, an int >= 1.
        gamma: Cap threshold γ in [0, 1); None uses ``privunit2_optimal_gamma``.

    Returns:
        The MSE divided by C², a float >= 0 (≈ 705 at ε = 1, d = 112).

    Raises:
        ValueError: As ``privunit2_scale``.

    """
    epsilon, dim, gamma = _resolve_2(epsilon, dim, gamma)
    # 1/m² >= 1 always (‖Z‖ = 1/m and E[Z] = u); max() only absorbs rounding near m = 1.
    return max(0.0, float(np.expm1(-2.0 * _u2_log_m(epsilon, dim, np.array([gamma]))[0])))


# --------------------------------------------------------------------------------------
# Sampling


def _bernoulli(probability: np.ndarray, rng: np.random.Generator, secure_mode: bool) -> np.ndarray:
    if secure_mode:
        return secure_bernoulli(probability)
    return rng.random(size=probability.shape) < probability


def _as_rows(grads: Any) -> np.ndarray:
    array = as_float64_array("grads", grads)
    if array.ndim != 2:
        raise ValueError(
            f"grads must be a 2-D array of shape (n, d), one release per row, got shape "
            f"{array.shape}"
        )
    return array


def _norm_step(
    rows: np.ndarray, clip: float, rng: np.random.Generator, secure_mode: bool
) -> np.ndarray:
    """Clip rows to L2 norm C and return the randomized unit vectors ``u`` (E[u] = ḡ/C)."""
    largest = np.max(np.abs(rows), axis=1)
    nonzero = largest > 0.0
    # Scale by the largest entry first: no overflow for huge finite entries.
    scaled = rows / np.where(nonzero, largest, 1.0)[:, None]
    scaled_norm = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    direction = scaled / np.where(nonzero, scaled_norm, 1.0)[:, None]
    with np.errstate(over="ignore"):
        norm = largest * scaled_norm
    ratio = np.minimum(norm / clip, 1.0)  # ‖ḡ‖/C after clipping to C
    keep = _bernoulli((1.0 + ratio) / 2.0, rng, secure_mode)
    direction *= np.where(keep, 1.0, -1.0)[:, None]
    if not np.all(nonzero):
        # g = 0: u uniform on the sphere (E[u] = 0 = g/C).
        count = int(np.count_nonzero(~nonzero))
        gaussian = rng.standard_normal((count, rows.shape[1]))
        gaussian /= np.linalg.norm(gaussian, axis=1, keepdims=True)
        direction[~nonzero] = gaussian
    return direction


def _orthogonal_gaussian(units: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``N(0, I_d)`` rows with their component along each row of ``units`` removed."""
    noise = rng.standard_normal(units.shape)
    noise -= np.einsum("ij,ij->i", noise, units)[:, None] * units
    return noise


def _secure_round(values: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Unbiased stochastic rounding to multiples of ``2^(⌊log2 scale⌋ - 20)`` (exact floats)."""
    step = math.ldexp(1.0, math.frexp(scale)[1] - 1 - _SECURE_GRID_BITS)
    units = values / step
    floor = np.floor(units)
    up = rng.random(size=units.shape) < (units - floor)
    return (floor + up) * step


def _release_g(
    rows: np.ndarray,
    epsilon: float,
    clip: float,
    gamma: float | None,
    rng: np.random.Generator,
    secure_mode: bool,
) -> np.ndarray:
    dim = rows.shape[1]
    epsilon, dim, gamma = _resolve_g(epsilon, dim, gamma)
    q = float(special.ndtr(-gamma))
    one_minus_q = float(special.ndtr(gamma))
    p = q / (q + math.exp(-epsilon) * one_minus_q)
    m = math.exp(float(_g_log_terms(epsilon, dim, np.array([gamma]))[0][0]))
    units = _norm_step(rows, clip, rng, secure_mode)
    n = units.shape[0]
    cap = _bernoulli(np.full(n, p), rng, secure_mode)
    uniform = 1.0 - rng.random(n)  # in (0, 1]: ndtri never sees 0
    alpha = np.where(cap, -special.ndtri(uniform * q), special.ndtri(uniform * one_minus_q))
    # α >= γ in the cap, α <= γ outside (guards against last-bit rounding of ndtri).
    alpha = np.where(cap, np.maximum(alpha, gamma), np.minimum(alpha, gamma))
    output = _orthogonal_gaussian(units, rng)
    output += alpha[:, None] * units
    scale = clip / m
    output *= scale
    if secure_mode:
        output = _secure_round(output, scale, rng)
    return output


def _release_2(
    rows: np.ndarray,
    epsilon: float,
    clip: float,
    gamma: float | None,
    rng: np.random.Generator,
    secure_mode: bool,
) -> np.ndarray:
    dim = rows.shape[1]
    epsilon, dim, gamma = _resolve_2(epsilon, dim, gamma)
    m = math.exp(float(_u2_log_m(epsilon, dim, np.array([gamma]))[0]))
    if dim == 1:
        q = one_minus_q = 0.5
    else:
        a = (dim - 1) / 2.0
        q = float(special.betainc(a, a, (1.0 - gamma) / 2.0))  # P(t >= γ), by symmetry
        one_minus_q = float(special.betainc(a, a, (1.0 + gamma) / 2.0))
    p = q / (q + math.exp(-epsilon) * one_minus_q)
    units = _norm_step(rows, clip, rng, secure_mode)
    n = units.shape[0]
    cap = _bernoulli(np.full(n, p), rng, secure_mode)
    if dim == 1:
        output = np.where(cap, 1.0, -1.0)[:, None] * units
    else:
        uniform = 1.0 - rng.random(n)
        # In the cap, (1 - t)/2 ~ Beta(a, a) below (1 - γ)/2; outside, (1 + t)/2 below
        # (1 + γ)/2: one inverse regularized incomplete beta per row.
        b = special.betaincinv(a, a, uniform * np.where(cap, q, one_minus_q))
        t = np.where(cap, 1.0 - 2.0 * b, 2.0 * b - 1.0)
        t = np.where(cap, np.clip(t, gamma, 1.0), np.clip(t, -1.0, gamma))
        output = _orthogonal_gaussian(units, rng)
        output /= np.linalg.norm(output, axis=1, keepdims=True)
        output *= np.sqrt(np.maximum(0.0, 1.0 - t * t))[:, None]
        output += t[:, None] * units
    scale = clip / m
    output *= scale
    if secure_mode:
        output = _secure_round(output, scale, rng)
    return output


def _run(
    release: Callable[..., np.ndarray],
    array: np.ndarray,
    epsilon: Any,
    clip: Any,
    gamma: Any,
    rng: Any,
    secure_mode: Any,
) -> np.ndarray:
    epsilon = check_finite_positive("epsilon", epsilon)
    clip = check_finite_positive("clip", clip)
    secure_mode = check_bool("secure_mode", secure_mode)
    # Secure mode ignores rng entirely (as PRS does): a fresh OS-entropy generator per call.
    rng = os_entropy_generator() if secure_mode else check_generator(rng)
    return release(array, epsilon, clip, gamma, rng, secure_mode)


def privunitg_rows(
    grads: Any,
    *,
    epsilon: float,
    clip: float,
    gamma: float | None = None,
    rng: np.random.Generator | None = None,
    secure_mode: bool = False,
) -> Any:
    """Release every row of ``grads`` with PrivUnitG (Asi, Feldman & Talwar, ICML 2022).

    Each row is an independent ε-LDP release, exactly as ``privunitg`` on that row;
    the work is vectorized over rows. Per row ``g`` (``d`` entries), with
    ``q = Φ(-γ)``, ``p = e^ε·q/(1 + (e^ε - 1)·q)`` and
    ``m = φ(γ)·(e^ε - 1)/(1 + (e^ε - 1)·q)``:

    1. clip to ``‖g‖₂ ≤ C``; ``u = s·g/‖g‖`` with ``s = +1`` w.p. ``(1 + ‖g‖/C)/2`` else
       ``-1`` (u uniform on the sphere if ``g = 0``);
    2. w.p. ``p``: ``α = -Φ⁻¹(U·Φ(-γ))`` (``N(0,1)`` conditioned on ``α >= γ``), else
       ``α = Φ⁻¹(U·Φ(γ))`` (conditioned on ``α < γ``), ``U ~ U(0, 1]``;
    3. ``w ~ N(0, I_d)`` with its component along ``u`` removed;
    4. output ``C·(α·u + w)/m``.

    Privacy: the density of ``α·u + w`` is ``φ_d(x)·(p/q)`` where ``⟨x, u⟩ >= γ`` and
    ``φ_d(x)·(1 - p)/(1 - q)`` elsewhere; the ratio of the two is exactly ``e^ε``, so any
    two unit vectors, hence (with the norm step) any two gradients, are ε-apart: pure
    ε-LDP with the whole L2 ball of radius C as the sensitivity set. Unbiased:
    ``E[α] = m``, so ``E[output] = g`` for ``‖g‖ ≤ C``. Error: ``privunitg_mse``.

    Secure mode (``secure_mode=True``; ``rng`` is then ignored): the two discrete choices
    (the norm step's sign and cap vs. complement) are exact Bernoulli draws from OS bits
    (``secure_bernoulli``); the continuous draws
    come from a numpy generator seeded per call with 128 OS-entropy bits
    (``os_entropy_generator``), and the release is
    rounded stochastically (unbiased, from the same generator) to multiples of
    ``2^(⌊log2(C/m)⌋ - 20)``, about ``2^-20`` of the output's scale (post-processing: same
    ε). That removes the low-order float bits in which an input-dependent artifact of the
    float samplers (the Mironov 2012 kind of leak) would live. It is a mitigation, not a
    proof: the coarse bits still come from float samplers. Secure-mode outputs keep
    ``E = g`` exactly; their per-coordinate error grows by at most ``step²/4``.

    Args:
        grads: The raw gradients, shape ``(n, d)`` (numpy array or torch tensor, float
            dtype), all entries finite, one release per row.
        epsilon: ε of each row's release, a finite number > 0.
        clip: L2 bound C, a finite number > 0.
        gamma: Cap threshold γ in [0, 30]; None uses ``privunitg_optimal_gamma``.
        rng: numpy Generator for the noise; None uses a fresh unseeded one. Ignored in
            secure mode.
        secure_mode: OS-entropy noise and a grid-rounded release (see above).

    Returns:
        The ``(n, d)`` releases, of the same kind and floating dtype as ``grads`` (same
        device for torch tensors).

    Raises:
        ValueError: If ``epsilon``/``clip`` is not a finite number > 0, ``gamma`` is out of
            range, ``grads`` is not 2-D, is empty or has NaN/inf entries, ``rng`` is not a
            Generator or None, or ``secure_mode`` is not a bool.

    """
    array = _as_rows(grads)
    return restore_kind(_run(_release_g, array, epsilon, clip, gamma, rng, secure_mode), grads)


def privunit2_rows(
    grads: Any,
    *,
    epsilon: float,
    clip: float,
    gamma: float | None = None,
    rng: np.random.Generator | None = None,
    secure_mode: bool = False,
) -> Any:
    """Release every row of ``grads`` with PrivUnit2 (Bhowmick et al. 2018, arXiv:1812.00984).

    Each row is an independent ε-LDP release, exactly as ``privunit2`` on that row;
    the work is vectorized over rows. Per row ``g`` (``d`` entries), with
    ``a = (d - 1)/2``, ``q = 1 - I_{(1+γ)/2}(a, a)`` (the probability of the cap
    ``{⟨z, u⟩ >= γ}`` for ``z`` uniform on the sphere, since ``(1 + ⟨z, u⟩)/2 ~ Beta(a, a)``)
    and ``p = e^ε·q/(1 + (e^ε - 1)·q)``:

    1. clip to ``‖g‖₂ ≤ C``; ``u = s·g/‖g‖`` with ``s = +1`` w.p. ``(1 + ‖g‖/C)/2`` else
       ``-1`` (u uniform on the sphere if ``g = 0``);
    2. w.p. ``p`` draw ``t`` from the law of ``⟨z, u⟩`` conditioned on ``t >= γ``, else on
       ``t < γ`` (inverse regularized incomplete beta, ``scipy.special.betaincinv``);
    3. ``z = t·u + √(1 - t²)·w`` with ``w`` a uniform unit vector orthogonal to ``u``;
    4. output ``C·z/m`` with
       ``m = (p/q - (1 - p)/(1 - q))·c_d·(1 - γ²)^{(d-1)/2}/(d - 1)``,
       ``c_d = Γ(d/2)/(√π·Γ((d-1)/2))`` (for d = 1: ``m = tanh(ε/2)``, randomized response).

    Privacy: ``z`` has density ``p/q`` (cap) or ``(1 - p)/(1 - q)`` (elsewhere) relative to
    the uniform law on the sphere; the ratio is exactly ``e^ε``, so the release is pure
    ε-LDP for any two gradients (sensitivity set: the L2 ball of radius C). Unbiased:
    ``E[t] = m``, so ``E[output] = g`` for ``‖g‖ ≤ C``. Every output has norm exactly
    ``C/m`` (up to float rounding; secure mode rounds it further, see below). Error:
    ``privunit2_mse``.

    Secure mode (``secure_mode=True``; ``rng`` is then ignored): the two discrete choices
    (the norm step's sign and cap vs. complement) are exact Bernoulli draws from OS bits
    (``secure_bernoulli``); the continuous draws
    come from a numpy generator seeded per call with 128 OS-entropy bits
    (``os_entropy_generator``), and the release is
    rounded stochastically (unbiased, from the same generator) to multiples of
    ``2^(⌊log2(C/m)⌋ - 20)``, about ``2^-20`` of the output's scale (post-processing: same
    ε). That removes the low-order float bits in which an input-dependent artifact of the
    float samplers (the Mironov 2012 kind of leak) would live. It is a mitigation, not a
    proof: the coarse bits still come from float samplers. Secure-mode outputs keep
    ``E = g`` exactly; their per-coordinate error grows by at most ``step²/4``.

    Args:
        grads: The raw gradients, shape ``(n, d)`` (numpy array or torch tensor, float
            dtype), all entries finite, one release per row.
        epsilon: ε of each row's release, a finite number > 0.
        clip: L2 bound C, a finite number > 0.
        gamma: Cap threshold γ in [0, 1); None uses ``privunit2_optimal_gamma``.
        rng: numpy Generator for the noise; None uses a fresh unseeded one. Ignored in
            secure mode.
        secure_mode: OS-entropy noise and a grid-rounded release (see above).

    Returns:
        The ``(n, d)`` releases, of the same kind and floating dtype as ``grads`` (same
        device for torch tensors).

    Raises:
        ValueError: If ``epsilon``/``clip`` is not a finite number > 0, ``gamma`` is out of
            range (or its cap probability underflows for this d), ``grads`` is not 2-D, is
            empty or has NaN/inf entries, ``rng`` is not a Generator or None, or
            ``secure_mode`` is not a bool.

    """
    array = _as_rows(grads)
    return restore_kind(_run(_release_2, array, epsilon, clip, gamma, rng, secure_mode), grads)


def privunitg(
    grad: GradT,
    *,
    epsilon: float,
    clip: float,
    gamma: float | None = None,
    rng: np.random.Generator | None = None,
    secure_mode: bool = False,
) -> GradT:
    """Release a gradient under pure ε-LDP with PrivUnitG (Asi, Feldman & Talwar, ICML 2022).

    The gradient (any shape) is flattened to ``d`` entries and released as one row of
    ``privunitg_rows`` (formula, privacy argument and secure mode there): L2 clip to
    C, norm step, ``C·(α·u + w)/m``. Sensitivity: any two gradients (the L2 ball of radius
    C). Unbiased for ``‖g‖ ≤ C``; error ``C²·````privunitg_mse`` at ``‖g‖ = C``.

    Args:
        grad: The raw gradient: numpy array or torch tensor, any shape, any float dtype and
            (for torch) any device; at least one entry, all finite.
        epsilon: ε of this release, a finite number > 0.
        clip: L2 bound C, a finite number > 0.
        gamma: Cap threshold γ in [0, 30]; None uses ``privunitg_optimal_gamma``.
        rng: numpy Generator for the noise; None uses a fresh unseeded one. Ignored in
            secure mode.
        secure_mode: OS-entropy noise and a grid-rounded release.

    Returns:
        The released gradient, of the same kind, shape and floating dtype as ``grad`` (same
        device for torch; never attached to an autograd graph).

    Raises:
        ValueError: As ``privunitg_rows`` (``grad`` empty or with NaN/inf entries:
            nothing is released).

    """
    array = as_float64_array("grad", grad)
    output = _run(_release_g, array.reshape(1, -1), epsilon, clip, gamma, rng, secure_mode)
    return restore_kind(output.reshape(array.shape), grad)


def privunit2(
    grad: GradT,
    *,
    epsilon: float,
    clip: float,
    gamma: float | None = None,
    rng: np.random.Generator | None = None,
    secure_mode: bool = False,
) -> GradT:
    """Release a gradient under pure ε-LDP with PrivUnit2 (Bhowmick et al. 2018).

    The gradient (any shape) is flattened to ``d`` entries and released as one row of
    ``privunit2_rows`` (formula, privacy argument and secure mode there): L2 clip to
    C, norm step, a point ``C·z/m`` on the sphere of radius ``C/m``. Sensitivity: any two
    gradients (the L2 ball of radius C). Unbiased for ``‖g‖ ≤ C``; error
    ``C²·````privunit2_mse`` at ``‖g‖ = C`` (slightly below PrivUnitG's).

    Args:
        grad: The raw gradient: numpy array or torch tensor, any shape, any float dtype and
            (for torch) any device; at least one entry, all finite.
        epsilon: ε of this release, a finite number > 0.
        clip: L2 bound C, a finite number > 0.
        gamma: Cap threshold γ in [0, 1); None uses ``privunit2_optimal_gamma``.
        rng: numpy Generator for the noise; None uses a fresh unseeded one. Ignored in
            secure mode.
        secure_mode: OS-entropy noise and a grid-rounded release.

    Returns:
        The released gradient, of the same kind, shape and floating dtype as ``grad`` (same
        device for torch; never attached to an autograd graph).

    Raises:
        ValueError: As ``privunit2_rows`` (``grad`` empty or with NaN/inf entries:
            nothing is released).

    """
    array = as_float64_array("grad", grad)
    output = _run(_release_2, array.reshape(1, -1), epsilon, clip, gamma, rng, secure_mode)
    return restore_kind(output.reshape(array.shape), grad)
