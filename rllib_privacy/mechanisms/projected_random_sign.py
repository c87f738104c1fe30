"""Projected Random Sign (PRS) mechanism for gradients (Ono & Takahashi, Alg. 3).

Reference: H. Ono and T. Takahashi, "Locally Private Distributed Reinforcement Learning",
§3.1.3, eq. (5), (23), (24) and Algorithm 3, with the corrections of docs/components/ldp-a3c.md (the
paper's ``ε/k`` in eq. 24 is a typo for ``ε/d̂``).

The pieces are exposed so that each can be checked on its own:
``prs_reduced_dim`` (the default d̂), ``prs_projection_matrix`` (M),
``prs_sign_probability`` and ``randomized_sign`` (the bit flip of eq. 24).
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import numpy as np

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
    "prs_projection_matrix",
    "prs_reduced_dim",
    "prs_sign_probability",
    "projected_random_sign",
    "randomized_sign",
]

GradT = TypeVar("GradT")

_SQRT3 = math.sqrt(3.0)
# Index with a uniform draw from {0, ..., 5}: +√3 w.p. 1/6, -√3 w.p. 1/6, 0 w.p. 4/6.
_ENTRY_TABLE = np.array([_SQRT3, -_SQRT3, 0.0, 0.0, 0.0, 0.0])


def prs_reduced_dim(epsilon: float, dim: int) -> int:
    """Return the paper's default reduced dimension ``d̂ = max(1, min(d, ⌊ε / 2.5⌋))``.

    Examples: ε = 1 → 1, ε = 2 → 1, ε = 5 → 2, ε = 10 → 4 (for d ≥ 4); never more than d.

    Args:
        epsilon: Privacy parameter ε of one release, a finite number > 0.
        dim: Dimension d of the gradient, an int >= 1.

    Returns:
        The reduced dimension d̂, an int in ``[1, dim]``.

    Raises:
        ValueError: If ``epsilon`` is not a finite number > 0 or ``dim`` is not an int >= 1.

    """
    epsilon = check_finite_positive("epsilon", epsilon)
    dim = check_int_in_range("dim", dim, low=1)
    return max(1, min(dim, math.floor(epsilon / 2.5)))


def prs_projection_matrix(
    reduced_dim: int, dim: int, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Draw the random projection ``M ∈ R^{d̂×d}`` of eq. (5).

    Entries are i.i.d.: ``+√3`` w.p. 1/6, ``-√3`` w.p. 1/6 and ``0`` w.p. 2/3, so each has
    mean 0 and variance 1 and ``E[MᵀM] = d̂·I``. Memory is ``8·d̂·d`` bytes.

    Args:
        reduced_dim: Number of rows d̂, an int >= 1.
        dim: Number of columns d, an int >= 1.
        rng: numpy Generator to draw from; None uses a fresh unseeded one.

    Returns:
        A float64 array of shape ``(reduced_dim, dim)``.

    Raises:
        ValueError: If a dimension is not an int >= 1 or ``rng`` is not a Generator or None.

    """
    reduced_dim = check_int_in_range("reduced_dim", reduced_dim, low=1)
    dim = check_int_in_range("dim", dim, low=1)
    rng = check_generator(rng)
    return _ENTRY_TABLE[rng.integers(0, 6, size=(reduced_dim, dim))]


def _check_clipped(u_clipped: Any, clip: float) -> np.ndarray:
    array = np.array(u_clipped, dtype=np.float64, copy=True)
    if not np.all(np.isfinite(array)) or np.any(np.abs(array) > clip):
        raise ValueError(f"u_clipped must contain only values in [-clip, clip] = [{-clip}, {clip}]")
    return array


def prs_sign_probability(
    u_clipped: Any, *, epsilon_per_coordinate: float, clip: float
) -> np.ndarray:
    """Return ``P(ũ_i = +C | ū_i)`` of eq. (24).

    ``p_i = 1/(e^{ε'}+1) + ((ū_i + C)/(2C))·(e^{ε'}-1)/(e^{ε'}+1)`` with ``ε' =
    epsilon_per_coordinate``, computed stably as ``(1 - c)/2 + c·(ū_i + C)/(2C)`` with
    ``c = tanh(ε'/2) = (e^{ε'}-1)/(e^{ε'}+1)``. ``p`` ranges over
    ``[1/(e^{ε'}+1), e^{ε'}/(e^{ε'}+1)]``, so the likelihood ratio of either output under
    any two inputs is at most ``e^{ε'}``, and ``E[ũ_i] = C·(2p_i - 1) = c·ū_i``.

    Args:
        u_clipped: Clipped projected values ū, each in ``[-clip, clip]`` (any shape).
        epsilon_per_coordinate: ε' = ε/d̂ spent on each coordinate, a finite number > 0.
        clip: Clipping size C, a finite number > 0.

    Returns:
        Probabilities of releasing ``+C``, a float64 array with the shape of ``u_clipped``.

    Raises:
        ValueError: If ``epsilon_per_coordinate`` or ``clip`` is not a finite number > 0, or
            ``u_clipped`` has an entry outside ``[-clip, clip]``.

    """
    epsilon_per_coordinate = check_finite_positive("epsilon_per_coordinate", epsilon_per_coordinate)
    clip = check_finite_positive("clip", clip)
    u_bar = _check_clipped(u_clipped, clip)
    c = math.tanh(epsilon_per_coordinate / 2.0)
    return (1.0 - c) / 2.0 + c * (u_bar + clip) / (2.0 * clip)


def randomized_sign(
    u_clipped: Any,
    *,
    epsilon_per_coordinate: float,
    clip: float,
    rng: np.random.Generator | None = None,
    secure_mode: bool = False,
) -> np.ndarray:
    """Apply the bit flip of eq. (24) alone: ``ũ_i = +C`` w.p. ``p_i``, else ``-C``.

    ``p_i`` is ``prs_sign_probability``. Each coordinate is an ``ε'``-LDP release of
    ``ū_i ∈ [-C, C]``; ``E[ũ_i] = ū_i·(e^{ε'}-1)/(e^{ε'}+1)``.

    Secure mode: the output takes only the two values ±C whatever the input, so the float
    side channel of Laplace sampling (the set of reachable outputs depends on the input)
    cannot arise; all that matters is that each bit is Bernoulli(p_i) with unpredictable
    randomness. ``secure_bernoulli`` draws it
    exactly from OS-entropy bits (``rng`` is ignored). ``p_i`` itself is a float: its
    rounding moves the likelihood ratio by a relative ~1e-16, far below any ε in use.

    Args:
        u_clipped: Clipped projected values ū, each in ``[-clip, clip]`` (any shape).
        epsilon_per_coordinate: ε' = ε/d̂ spent on each coordinate, a finite number > 0.
        clip: Clipping size C, a finite number > 0.
        rng: numpy Generator to draw from (one uniform per coordinate); None uses a fresh
            unseeded one. Ignored in secure mode.
        secure_mode: Exact Bernoulli bits from OS entropy (see above).

    Returns:
        A float64 array with the shape of ``u_clipped`` and values in ``{-clip, +clip}``.

    Raises:
        ValueError: As ``prs_sign_probability``, or if ``rng`` is not a Generator or
            None, or ``secure_mode`` is not a bool.

    """
    probability = prs_sign_probability(
        u_clipped, epsilon_per_coordinate=epsilon_per_coordinate, clip=clip
    )
    rng = check_generator(rng)
    clip = float(clip)
    if check_bool("secure_mode", secure_mode):
        return np.where(secure_bernoulli(probability), clip, -clip)
    return np.where(rng.random(size=probability.shape) < probability, clip, -clip)


def projected_random_sign(
    grad: GradT,
    *,
    epsilon: float,
    clip: float,
    reduced_dim: int | None = None,
    rng: np.random.Generator | None = None,
    debias: bool = False,
    secure_mode: bool = False,
) -> GradT:
    """Release a gradient under ε-LDP with Projected Random Sign (Ono & Takahashi, Alg. 3).

    Formula, with ``d = grad.size`` (the gradient is flattened), ``d̂ = reduced_dim``
    (default ``prs_reduced_dim``), ``ε' = ε/d̂`` and ``c = (e^{ε'}-1)/(e^{ε'}+1)``:

    1. draw ``M ∈ R^{d̂×d}`` with entries ``±√3`` w.p. 1/6 each and 0 w.p. 2/3 (fresh on
       every call, from ``rng``, before anything else is drawn);
    2. ``u = M g``; ``ū_i = min(max(u_i, -C), C)`` (eq. 23);
    3. ``ũ_i = +C`` w.p. ``1/(e^{ε'}+1) + ((ū_i + C)/(2C))·c``, else ``-C`` (eq. 24);
    4. output ``Mᵀ ũ`` reshaped to ``grad``'s shape.

    Sensitivity and privacy: every ``ū_i`` lies in ``[-C, C]`` whatever ``g`` is, and the
    bit flip's likelihood ratio for any two such values is at most ``e^{ε'}``; the d̂
    coordinates compose to ``e^{ε}``. ``M`` does not depend on ``g``, and the output is a
    function of ``(M, ũ)`` (post-processing), so the release is ε-LDP.

    Bias: ``E[ũ | M] = c·ū``, so the paper's output (the default, ``debias=False``) has
    ``E[output] = c·d̂·g`` when no coordinate of ``Mg`` is clipped (``E[MᵀM] = d̂·I``) and
    is further shrunk by clipping otherwise. With ``debias=True`` the output is
    ``Mᵀ(ũ/c)/d̂``, so that ``E[output] = g`` exactly whenever ``|(Mg)_i| ≤ C`` for all i
    (guaranteed if ``‖g‖₁ ≤ C/√3``); with clipping it is ``E[Mᵀū]/d̂``, still biased toward
    0. Debiasing is post-processing (same ε) but multiplies the variance by ``1/(c·d̂)²``,
    which is large for small ε'.

    Secure mode: ``M`` comes from a fresh OS-entropy generator (it does not depend on ``g``;
    fresh entropy just keeps it from following a seed) and the bits from
    ``secure_bernoulli``; ``rng`` is ignored.
    The output ``Mᵀũ`` is a deterministic function of ``(M, ũ)`` with ``ũ ∈ {±C}^d̂``, so
    no input-dependent float artifact reaches it. Same ε.

    Args:
        grad: The raw gradient: numpy array or torch tensor, any shape, any float dtype and
            (for torch) any device; at least one entry, all finite.
        epsilon: Privacy parameter ε of this release, a finite number > 0.
        clip: Clipping size C of the projected coordinates, a finite number > 0 (the paper
            uses C = 1).
        reduced_dim: d̂, an int in ``[1, grad.size]``; None uses ``prs_reduced_dim``.
        rng: numpy Generator for M and the bit flips; None uses a fresh unseeded one.
        debias: Rescale so that the output is unbiased when nothing is clipped (see above).
        secure_mode: OS-entropy projection and exact OS-entropy sign bits (see above).

    Returns:
        The released gradient, of the same kind, shape and floating dtype as ``grad`` (same
        device for torch; never attached to an autograd graph).

    Raises:
        ValueError: If ``epsilon`` or ``clip`` is not a finite number > 0, ``reduced_dim``
            is not None or an int in ``[1, grad.size]``, ``debias`` is not a bool, ``grad``
            is empty or contains NaN/inf (nothing is released), or ``rng`` is not a
            Generator or None.

    """
    epsilon = check_finite_positive("epsilon", epsilon)
    clip = check_finite_positive("clip", clip)
    if not isinstance(debias, bool | np.bool_):
        raise ValueError(f"debias must be a bool, got {debias!r}")
    secure_mode = check_bool("secure_mode", secure_mode)
    rng = os_entropy_generator() if secure_mode else check_generator(rng)
    array = as_float64_array("grad", grad)
    flat = array.reshape(-1)
    dim = flat.size
    if reduced_dim is None:
        reduced_dim = prs_reduced_dim(epsilon, dim)
    else:
        reduced_dim = check_int_in_range("reduced_dim", reduced_dim, low=1, high=dim)
    epsilon_per_coordinate = epsilon / reduced_dim

    matrix = prs_projection_matrix(reduced_dim, dim, rng)
    u_clipped = np.clip(matrix @ flat, -clip, clip)
    u_tilde = randomized_sign(
        u_clipped,
        epsilon_per_coordinate=epsilon_per_coordinate,
        clip=clip,
        rng=rng,
        secure_mode=secure_mode,
    )
    if debias:
        u_tilde /= math.tanh(epsilon_per_coordinate / 2.0) * reduced_dim
    output = matrix.T @ u_tilde
    return restore_kind(output.reshape(array.shape), grad)
