"""Noisy-argmax aggregation of teacher votes (PATE's LNMax, and the Gaussian GNMax).

References:
    N. Papernot, M. Abadi, Ú. Erlingsson, I. Goodfellow, K. Talwar, "Semi-supervised
    Knowledge Transfer for Deep Learning from Private Training Data", ICLR 2017, §2 eq. (1)
    (LNMax). N. Papernot, S. Song, I. Mironov, A. Raghunathan, K. Talwar, Ú. Erlingsson,
    "Scalable Private Learning with PATE", ICLR 2018, §4.1 (GNMax). See docs/components/pate.md.

Adjacency: two teacher-training datasets differ in one record, so one teacher may change
its vote: the vote histogram ``n(x)`` changes by at most 1 in at most two classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_privacy._validation import (
    as_float64_array,
    check_bool,
    check_finite_positive,
    check_generator,
)
from rllib_privacy.mechanisms.secure_noise import (
    secure_discrete_gaussian,
    secure_gaussian,
    secure_laplace,
)

__all__ = [
    "UNANSWERED",
    "confident_gnmax",
    "gaussian_noisy_max",
    "noisy_max",
    "plurality",
    "validate_votes",
]

#: Label of a query Confident-GNMax did not answer.
UNANSWERED = -1


def validate_votes(votes: Any, *, name: str = "votes") -> np.ndarray:
    """Return vote histograms as a validated float64 array of shape ``(m,)`` or ``(batch, m)``.

    Args:
        votes: Vote counts per class: numpy array, torch tensor or nested list; 1-D (one
            query) or 2-D (one query per row). Counts must be finite and >= 0 (integral
            counts are the norm, but fractional ones are accepted).
        name: Argument name used in error messages.

    Returns:
        A float64 copy of ``votes``.

    Raises:
        ValueError: If ``votes`` is empty, not 1-D or 2-D, has fewer than two classes, or
            has a NaN, infinite or negative entry.

    """
    array = as_float64_array(name, votes)
    if array.ndim not in (1, 2):
        raise ValueError(
            f"{name} must be 1-D (classes) or 2-D (queries x classes), got shape {array.shape}"
        )
    if array.shape[-1] < 2:
        raise ValueError(f"{name} must have at least 2 classes, got shape {array.shape}")
    if array.ndim == 2 and array.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row, got shape {array.shape}")
    if np.any(array < 0):
        raise ValueError(f"{name} must be vote counts >= 0, got a negative entry")
    return array


def plurality(votes: Any) -> np.ndarray:
    """Return the noiseless plurality label(s) ``argmax_j n_j`` (ties: the lowest index).

    This is NOT private: use it only for non-released diagnostics (e.g. label agreement).

    Args:
        votes: Vote histograms, 1-D or 2-D (see ``validate_votes``).

    Returns:
        An int64 array of shape ``()`` for 1-D input or ``(batch,)`` for 2-D input.

    """
    return np.asarray(np.argmax(validate_votes(votes), axis=-1), dtype=np.int64)


def noisy_max(
    votes: Any,
    *,
    gamma: float,
    rng: np.random.Generator | None = None,
    secure_mode: bool = False,
) -> np.ndarray:
    """PATE's Laplacian noisy max (LNMax): ``argmax_j (n_j + Lap(1/γ))``, batched over rows.

    Formula (Papernot et al. 2017, eq. 1): each class count gets independent Laplace noise
    of scale ``1/γ``; the released label is the argmax of the noisy counts.

    Privacy: changing one teacher's vote moves at most two counts by 1, so the noisy
    argmax is ``(2γ, 0)``-DP per query (report-noisy-max argument, Dwork & Roth 2014).
    Use [pate_moments][rllib_privacy.accounting.pate_moments] to compose many queries.

    Secure mode: the counts get OpenDP's exact Laplace noise on the float domain
    (``secure_laplace``, lattice ``2^-1074``,
    then rounded to floats), not the integer discrete Laplace, even for integral votes:
    the data-independent ``2γ`` bound would hold for both (the whole noisy histogram is
    ``2γ``-DP and the argmax is post-processing), but the data-dependent bound (Lemma 4's
    ``q``) is a tail bound for continuous Laplace noise; the integer discrete Laplace has
    heavier tails (by ≈ 1 + γ/2) and ties of positive probability, which could break it.
    On the ``2^-1074`` lattice the difference is far below float precision; ties after
    rounding to floats have probability ~1e-16 per pair. ``rng`` is ignored.

    Args:
        votes: Vote histograms: shape ``(m,)`` for one query or ``(batch, m)`` for one query
            per row; finite counts >= 0, at least two classes.
        gamma: Inverse noise scale γ, a finite number > 0 (larger γ = less noise, more ε).
        rng: numpy Generator to draw the noise from; None uses a fresh unseeded one.
            Ignored in secure mode.
        secure_mode: Floating-point-safe noise from OpenDP (see above).

    Returns:
        int64 labels, shape ``()`` for 1-D input or ``(batch,)`` for 2-D input.

    Raises:
        ValueError: For bad votes (see ``validate_votes``), a ``gamma`` that is not a
            finite number > 0, an ``rng`` that is not a Generator or None, or a
            ``secure_mode`` that is not a bool.

    """
    gamma = check_finite_positive("gamma", gamma)
    array = validate_votes(votes)
    rng = check_generator(rng)
    if check_bool("secure_mode", secure_mode):
        noisy = secure_laplace(array, 1.0 / gamma)
    else:
        noisy = array + rng.laplace(loc=0.0, scale=1.0 / gamma, size=array.shape)
    return np.asarray(np.argmax(noisy, axis=-1), dtype=np.int64)


def gaussian_noisy_max(
    votes: Any,
    *,
    sigma: float,
    rng: np.random.Generator | None = None,
    secure_mode: bool = False,
) -> np.ndarray:
    """Gaussian noisy max (GNMax): ``argmax_j (n_j + N(0, σ²))``, batched over rows.

    Papernot et al. 2018, §4.1. One changed teacher vote moves the histogram by at most
    √2 in L2 norm; GNMax is ``(λ, λ/σ²)``-RDP for every order λ > 1 (data-independent
    bound of that paper, Prop. 8); ``rllib_privacy.accounting.gnmax_epsilon`` composes
    it and ``rllib_privacy.accounting.gnmax_rdp`` gives the data-dependent bound
    (Theorem 6 with Prop. 7's ``q``, which assumes continuous Gaussian noise).

    Secure mode: integral vote counts get OpenDP's exact discrete Gaussian
    (``secure_discrete_gaussian``): for integer
    sensitivity it has the continuous Gaussian's zCDP, ``Δ₂²/(2σ²)`` (Canonne, Kamath,
    Steinke 2020, Thm. 4), hence the same ``(λ, λ/σ²)``-RDP with ``Δ₂ = √2``, so the
    accountant is unchanged (the argmax of integer noisy counts can tie; ties go to the
    lowest index, post-processing). Fractional votes get OpenDP's float-domain Gaussian.
    ``rng`` is ignored. Prop. 7's tail bound is proven for continuous noise only, so in
    secure mode with integral votes rely on the data-independent bound (or use
    ``confident_gnmax``, whose secure mode draws OpenDP's float-domain Gaussian).

    Args:
        votes: Vote histograms, shape ``(m,)`` or ``(batch, m)`` (see ``noisy_max``).
        sigma: Standard deviation σ of the Gaussian noise, a finite number > 0.
        rng: numpy Generator to draw the noise from; None uses a fresh unseeded one.
            Ignored in secure mode.
        secure_mode: Exact discrete (or float-safe) Gaussian from OpenDP (see above).

    Returns:
        int64 labels, shape ``()`` for 1-D input or ``(batch,)`` for 2-D input.

    Raises:
        ValueError: For bad votes, a ``sigma`` that is not a finite number > 0, or a bad
            ``rng``.

    """
    sigma = check_finite_positive("sigma", sigma)
    array = validate_votes(votes)
    rng = check_generator(rng)
    if not check_bool("secure_mode", secure_mode):
        noisy = array + rng.normal(loc=0.0, scale=sigma, size=array.shape)
    elif np.all(array == np.round(array)) and float(array.max()) < 2**62:
        noisy = secure_discrete_gaussian(array, sigma)
    else:
        noisy = secure_gaussian(array, sigma)
    return np.asarray(np.argmax(noisy, axis=-1), dtype=np.int64)


def confident_gnmax(
    votes: Any,
    *,
    threshold: float,
    sigma_threshold: float,
    sigma: float,
    rng: np.random.Generator | None = None,
    secure_mode: bool = False,
) -> np.ndarray:
    """Confident-GNMax (Papernot et al. 2018, Algorithm 1): answer only confident queries.

    Formula: a query is answered iff ``max_j n_j + N(0, σ₁²) ≥ T``; an answered query gets
    the GNMax label ``argmax_j (n_j + N(0, σ₂²))``, the others ``UNANSWERED`` (−1).

    Privacy: the threshold step is the Gaussian mechanism on ``max_j n_j`` (sensitivity 1),
    ``(λ, λ/(2σ₁²))``-RDP; the labelling step is GNMax, ``(λ, λ/σ₂²)``-RDP, paid only by
    answered queries. Data-dependent bounds and their smooth-sensitivity release:
    ``rllib_privacy.accounting.gnmax`` (``confident_gnmax_rdp``).

    Secure mode: both steps draw OpenDP's float-domain Gaussian
    (``secure_gaussian``, the continuous
    Gaussian's guarantee, so the data-dependent analysis applies); ``rng`` is ignored.

    Args:
        votes: Vote histograms, shape ``(m,)`` or ``(batch, m)`` (see ``noisy_max``).
        threshold: The threshold T (in votes), a finite number.
        sigma_threshold: σ₁ of the threshold step's noise, a finite number > 0.
        sigma: σ₂ of the labelling step's noise, a finite number > 0.
        rng: numpy Generator to draw the noise from; None uses a fresh unseeded one.
        secure_mode: Floating-point-safe noise from OpenDP (see above).

    Returns:
        int64 labels (−1 = not answered), shape ``()`` for 1-D input or ``(batch,)``.

    Raises:
        ValueError: For bad votes, a non-finite ``threshold``, a ``sigma_threshold`` or
            ``sigma`` that is not a finite number > 0, or a bad ``rng``.

    """
    sigma_threshold = check_finite_positive("sigma_threshold", sigma_threshold)
    sigma = check_finite_positive("sigma", sigma)
    if isinstance(threshold, bool) or not np.isfinite(np.asarray(threshold, dtype=np.float64)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    array = validate_votes(votes)
    rows = np.atleast_2d(array)
    rng = check_generator(rng)
    secure = check_bool("secure_mode", secure_mode)
    top = rows.max(axis=-1)
    noisy_top = (
        secure_gaussian(top, sigma_threshold)
        if secure
        else (top + rng.normal(scale=sigma_threshold, size=top.shape))
    )
    answered = noisy_top >= float(threshold)
    labels = np.full(rows.shape[0], UNANSWERED, dtype=np.int64)
    if answered.any():
        chosen = rows[answered]
        noisy = (
            secure_gaussian(chosen, sigma)
            if secure
            else (chosen + rng.normal(scale=sigma, size=chosen.shape))
        )
        labels[answered] = np.argmax(noisy, axis=-1)
    return labels.reshape(array.shape[:-1])
