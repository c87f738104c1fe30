"""Instance-wise Laplace mechanism and its utility on shared bins (Ryu et al., Def. 1).

Reference: S. Ryu, H. Joo, J. Jang and H. J. Yang, "Instance-Wise Laplace Mechanism via Deep
Reinforcement Learning" (AAAI 2024 student abstract), eq. (4). See
docs/components/instance-laplace.md and
``rllib_privacy.accounting.pdp`` for the per-instance privacy loss.

Utility (the paper's KL divergence) is measured on shared bins: ``num_bins`` equal bins over
the data range ``[min(D), max(D)]`` whose two outer bins extend to ±∞, i.e. outputs are
clamped to the data range (post-processing, so privacy is unchanged). The original PMF is
the histogram of ``D``; the privatized PMF is the *exact* output distribution of the random
sampling query with per-instance Laplace noise, ``(1/n)·Σ_i P(d_i + Lap(b_i) ∈ bin)``, from
the Laplace CDF (``scipy.stats.laplace``), so the KL is deterministic (no sampling).
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
from scipy.special import rel_entr
from scipy.stats import laplace

from rllib_privacy._validation import (
    as_float64_array,
    check_bool,
    check_generator,
    check_int_in_range,
    restore_kind,
)
from rllib_privacy.mechanisms.secure_noise import secure_laplace

__all__ = [
    "KL_FLOOR",
    "bin_edges",
    "histogram_pmf",
    "instance_laplace",
    "kl_divergence",
    "laplace_bin_masses",
    "privatized_pmf",
]

ValuesT = TypeVar("ValuesT")

#: Floor for the privatized PMF before the KL: a bin with data can only get a mass below
#: this through float underflow (each data point keeps ≥ half its own mass in its bin), so
#: the floor bounds the KL instead of returning inf; the PMF is renormalized afterwards.
KL_FLOOR = 1e-12


def instance_laplace(
    values: ValuesT,
    scales: object,
    *,
    rng: np.random.Generator | None = None,
    secure_mode: bool = False,
) -> ValuesT:
    """Release every instance with its own Laplace noise: ``y_i = d_i + Lap(0, b_i)``.

    Formula: eq. (4) of Ryu et al. with ``f(d_i) = d_i`` (k = 1 per instance). Privacy is
    per instance and depends on the whole scale set; check it with
    ``rllib_privacy.accounting.pdp.instance_privacy_losses``. By default the
    floating-point side channel of the Laplace sampler (Mironov, 2012) is not addressed;
    with ``secure_mode=True`` every group of instances that shares a scale gets OpenDP's
    exact Laplace noise of that scale
    (``secure_laplace``; same distribution, so
    the per-instance losses are unchanged) and ``rng`` is ignored.

    Args:
        values: The instances, numpy array or torch tensor (any shape, all finite).
        scales: Laplace scales ``b_i > 0``, broadcastable to ``values``' shape.
        rng: numpy Generator to draw from; None uses a fresh unseeded one. Ignored in
            secure mode.
        secure_mode: Floating-point-safe noise from OpenDP (see above).

    Returns:
        The noisy values, of the same kind, shape and floating dtype as ``values``.

    Raises:
        ValueError: If ``values`` or ``scales`` is empty or not finite, a scale is not > 0,
            the shapes do not broadcast, ``rng`` is not a Generator or None, or
            ``secure_mode`` is not a bool.

    """
    rng = check_generator(rng)
    secure_mode = check_bool("secure_mode", secure_mode)
    array = as_float64_array("values", values)
    scale_array = as_float64_array("scales", scales)
    if np.any(scale_array <= 0.0):
        raise ValueError(f"scales must all be > 0, got minimum {float(scale_array.min())!r}")
    try:
        scale_array = np.broadcast_to(scale_array, array.shape)
    except ValueError:
        raise ValueError(
            f"scales of shape {scale_array.shape} do not broadcast to values' {array.shape}"
        ) from None
    if secure_mode:
        # One OpenDP call per distinct scale (the ILM's action set has a handful).
        noisy = np.empty_like(array)
        for scale in np.unique(scale_array):
            mask = scale_array == scale
            noisy[mask] = secure_laplace(array[mask], float(scale))
        return restore_kind(noisy, values)
    return restore_kind(array + rng.laplace(0.0, scale_array), values)


def bin_edges(values: object, num_bins: int) -> np.ndarray:
    """``num_bins + 1`` equal-width edges over ``[min(values), max(values)]``.

    Raises:
        ValueError: If ``num_bins`` is not an int >= 2 or all values are equal (no range).

    """
    num_bins = check_int_in_range("num_bins", num_bins, low=2)
    array = as_float64_array("values", values).reshape(-1)
    low, high = float(array.min()), float(array.max())
    if not high > low:
        raise ValueError(f"values must not all be equal (got only {low!r}): Δf would be 0")
    return np.linspace(low, high, num_bins + 1)


def _check_edges(edges: object) -> np.ndarray:
    edges = as_float64_array("edges", edges).reshape(-1)
    if edges.size < 3 or np.any(np.diff(edges) <= 0.0):
        raise ValueError("edges must be strictly increasing with at least 3 entries")
    return edges


def histogram_pmf(values: object, edges: object) -> np.ndarray:
    """PMF of ``values`` on the bins (outer bins extend to ±∞), shape ``(len(edges) - 1,)``."""
    edges = _check_edges(edges)
    array = as_float64_array("values", values).reshape(-1)
    # Interior edges only: searchsorted's right side puts a value equal to an edge in the
    # bin above it (the top value lands in the last bin, as with np.histogram).
    index = np.searchsorted(edges[1:-1], array, side="right")
    return np.bincount(index, minlength=edges.size - 1) / array.size


def laplace_bin_masses(centers: object, scales: object, edges: object) -> np.ndarray:
    """Exact probability of ``c_i + Lap(b_i)`` falling in each bin (outer bins to ±∞).

    Args:
        centers: Laplace centers, 1-D.
        scales: Laplace scales > 0, same shape.
        edges: Bin edges, strictly increasing (see ``bin_edges``).

    Returns:
        Array of shape ``(len(centers), len(edges) - 1)``; each row sums to 1.

    """
    edges = _check_edges(edges)
    centers = as_float64_array("centers", centers).reshape(-1)
    scales = as_float64_array("scales", scales).reshape(-1)
    if scales.shape != centers.shape or np.any(scales <= 0.0):
        raise ValueError("scales must be > 0 and have the shape of centers")
    inner = edges[1:-1]
    z = (inner[None, :] - centers[:, None]) / scales[:, None]
    # Upper-tail bins via the survival function keep small masses far right accurate.
    cdf = laplace.cdf(z)
    sf = laplace.sf(z)
    first = cdf[:, :1]
    middle = np.where(z[:, 1:] <= 0.0, cdf[:, 1:] - cdf[:, :-1], sf[:, :-1] - sf[:, 1:])
    last = sf[:, -1:]
    return np.concatenate([first, middle, last], axis=1)


def privatized_pmf(values: object, scales: object, edges: object) -> np.ndarray:
    """Output PMF of the random sampling query with per-instance Laplace noise.

    ``q_k = (1/n)·Σ_i P(d_i + Lap(b_i) ∈ bin_k)``, computed once per distinct
    (value, scale) pair.
    """
    values = as_float64_array("values", values).reshape(-1)
    scales = np.broadcast_to(as_float64_array("scales", scales).reshape(-1), values.shape)
    pairs, counts = np.unique(np.stack([values, scales], axis=1), axis=0, return_counts=True)
    masses = laplace_bin_masses(pairs[:, 0], pairs[:, 1], edges)
    return counts @ masses / values.size


def kl_divergence(p: object, q: object, *, floor: float = KL_FLOOR) -> float:
    """``KL(p ‖ q) = Σ_k p_k·ln(p_k/q_k)`` (natural log) on shared bins.

    ``q`` is floored at ``floor`` and renormalized (see ``KL_FLOOR``); bins with
    ``p_k = 0`` contribute 0 (``scipy.special.rel_entr``).

    Args:
        p: Reference PMF (non-negative, sums to 1).
        q: Approximating PMF, same shape.
        floor: Smallest mass of ``q`` per bin, > 0.

    Returns:
        The divergence, >= 0, and 0 iff ``p == q`` (up to the floor).

    """
    p = as_float64_array("p", p).reshape(-1)
    q = as_float64_array("q", q).reshape(-1)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    if np.any(p < 0.0) or np.any(q < 0.0):
        raise ValueError("p and q must be non-negative")
    p = p / p.sum()
    q_floored: np.ndarray = np.maximum(q, floor)
    q = q_floored / q_floored.sum()
    return float(max(rel_entr(p, q).sum(), 0.0))
