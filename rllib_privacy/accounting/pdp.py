"""Per-instance privacy loss (pDP) of the instance-wise Laplace mechanism (no Ray import).

Reference: S. Ryu, H. Joo, J. Jang and H. J. Yang, "Instance-Wise Laplace Mechanism via Deep
Reinforcement Learning" (AAAI 2024 student abstract), eq. (1) and Definition 1; per-instance
DP after Wang (2019). See docs/components/instance-laplace.md.

Reading of pDP used here (the abstract leaves it under-specified)
-----------------------------------------------------------------

The query is the paper's *random sampling query* (eq. 3): it returns one instance drawn
uniformly from the dataset ``D = {d_1, ..., d_n}``, and the instance-wise Laplace mechanism
adds ``Lap(b_i)`` noise when instance ``i`` was drawn. The output density on ``D`` is the
mixture

    p_D(y) = (1/n) · Σ_i Lap(y; d_i, b_i),      Lap(y; d, b) = exp(-|y - d|/b) / (2b).

Instance ``z`` is removed to form the neighbour ``D∖{z}`` (every other instance keeps its
scale), and its privacy loss is

    loss(z) = sup_y | ln p_D(y) - ln p_{D∖{z}}(y) |,

so that ``loss(z) ≤ ε`` is exactly the paper's ε-pDP inequality (1), both ways, for every
event S. With ``ρ_z(y) = Lap(y; d_z, b_z) / Σ_i Lap(y; d_i, b_i)`` the log-ratio is
``ln((n-1)/n) - ln(1 - ρ_z(y))``, increasing in ρ_z, so

    loss(z) = max( ln((n-1)/n) - ln(1 - sup_y ρ_z),  ln(n/(n-1)) + ln(1 - inf_y ρ_z) ).

Computing the sup and inf exactly (no grid)
-------------------------------------------

Between two consecutive distinct data values ("kinks") every ``|y - d_i|`` is linear, so
``ln ρ_z = ln Lap(y; d_z, b_z) - logsumexp_i(ln Lap(y; d_i, b_i))`` is a linear function minus
a log-sum-exp of linear functions, i.e. *concave* on each segment and on each of the two
tails. Hence:

- the inf of ``ρ_z`` on a segment is at one of its ends; on a tail it is at the end or the
  limit at ±∞, which is 0 unless ``b_z`` is the largest scale (then it is a closed form);
- the sup on a segment is at an end unless the derivative changes sign inside, in which
  case the bracket is halved on the sign of the (decreasing) derivative until the two end
  tangents, which bound a concave function from above, meet within 1e-9 (in ln ρ) of the
  larger end value; that tangent bound is what is reported;
- on a tail, a concave function that still increases at the last kink either increases to
  its limit (when ``b_z`` is the largest scale: the sup is the closed-form limit) or has a
  single maximum further out, bracketed by doubling and then bisected.

The computation therefore needs no grid and never under-reports the loss (up to
floating-point rounding). ``instance_privacy_losses_on_grid`` evaluates the same
definition on a user-given grid; it is the independent check used in the tests.

Cost: instances with the same (value, scale) have the same loss, so everything runs on
the ``G`` distinct (value, scale) groups: ``O(U·G)`` for the ``U`` kinks plus
``O(60·P·G)`` for the ``P`` segments that need bisection, vectorized and chunked.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from rllib_privacy._validation import as_float64_array, check_finite_positive

__all__ = [
    "PDPGroups",
    "instance_privacy_losses",
    "instance_privacy_losses_on_grid",
    "uniform_laplace_loss_bound",
]

# Bisection halvings at most: (hi - lo) shrinks to 2^-60 of a segment.
_BISECTION_STEPS = 60
# A bracket stops once its tangent bound exceeds its best end value by at most this
# (in ln ρ, i.e. a relative error of 1e-9 in ρ): the reported sup is the bound.
_BOUND_GAP = 1e-9
# Doublings of the tail bracket (start: the largest scale); 2^200 covers any finite input.
_MAX_DOUBLINGS = 200
# Elements per (points x groups) block, to bound memory (8 bytes each: ~32 MB).
_CHUNK_ELEMENTS = 4_000_000


class PDPGroups:
    """The distinct (value, scale) pairs of a dataset with per-instance Laplace scales.

    Attributes:
        centers: Distinct values, shape ``(G,)``.
        scales: Their scales, shape ``(G,)``.
        counts: How many instances share each pair, shape ``(G,)``.
        inverse: Group index of every instance, shape ``(n,)``.
        n: Number of instances.

    """

    def __init__(self, values: np.ndarray, scales: np.ndarray) -> None:
        """Groups instances; ``values`` and ``scales`` are validated 1-D float arrays."""
        pairs, inverse, counts = np.unique(
            np.stack([values, scales], axis=1), axis=0, return_inverse=True, return_counts=True
        )
        self.centers = pairs[:, 0]
        self.scales = pairs[:, 1]
        self.counts = counts.astype(np.float64)
        self.log_counts = np.log(self.counts)
        self.inverse = inverse.reshape(-1)
        self.n = int(values.size)

    def log_density_terms(self, y: np.ndarray) -> np.ndarray:
        """``ln(m_h) + ln Lap(y_p; c_h, b_h)`` for points ``y`` (P,), shape ``(P, G)``."""
        return (
            self.log_counts
            - np.log(2.0 * self.scales)
            - np.abs(y[:, None] - self.centers) / self.scales
        )


def _validate(values: object, scales: object) -> tuple[np.ndarray, np.ndarray]:
    values = as_float64_array("values", values)
    scales = as_float64_array("scales", scales)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {values.shape}")
    if scales.shape != values.shape:
        raise ValueError(f"scales must have the shape of values {values.shape}, got {scales.shape}")
    if values.size < 2:
        raise ValueError(f"values must have at least 2 instances for pDP, got {values.size}")
    if np.any(scales <= 0.0):
        raise ValueError(f"scales must all be > 0, got minimum {float(scales.min())!r}")
    return values, scales


def uniform_laplace_loss_bound(epsilon: float, n: int) -> float:
    """Upper bound on every instance's loss under uniform Laplace at ``b = Δf/ε``.

    Proof (mixture reading above): for any two instances ``|d_z - d_i| ≤ Δf``, so by the
    triangle inequality ``Lap(y; d_z, b) / Lap(y; d_i, b) ∈ [e^{-ε}, e^{ε}]`` for all y.
    Summing over the ``n - 1`` other instances, ``r(y) = Lap_z / Σ_{i≠z} Lap_i`` lies in
    ``[e^{-ε}/(n-1), e^{ε}/(n-1)]``, and the log-ratio ``ln((n-1)/n · (1 + r))`` lies in
    ``[ln(1 - (1 - e^{-ε})/n), ln(1 + (e^{ε} - 1)/n)]``. Both ends are within ε in absolute
    value because ``1 + (e^ε - 1)/n ≤ e^ε`` and ``1 - (1 - e^{-ε})/n ≥ e^{-ε}`` for n ≥ 1;
    the sampling query thus amplifies the Laplace guarantee to about ε/n.

    Args:
        epsilon: ε > 0 of the uniform mechanism.
        n: Number of instances, >= 2.

    Returns:
        ``ln(1 + (e^ε - 1)/n)`` (the larger of the two ends), always ≤ ε.

    """
    epsilon = check_finite_positive("epsilon", epsilon)
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    upper = math.log1p(math.expm1(epsilon) / n)
    lower = -math.log1p(math.expm1(-epsilon) / n)  # |ln(1 - (1 - e^{-ε})/n)|
    return float(max(upper, lower))


def instance_privacy_losses(
    values: object, scales: object, *, instances: object | None = None
) -> np.ndarray:
    """Exact per-instance privacy loss of the instance-wise Laplace mechanism.

    Formula: ``loss(z) = sup_y |ln p_D(y) - ln p_{D∖{z}}(y)|`` with the mixture output
    density ``p_D(y) = (1/n)·Σ_i Lap(y; d_i, b_i)`` of the random sampling query (see the
    module docstring for the reading, and for why the sup is exact without a grid).

    Sensitivity assumption: none beyond the data themselves; pDP is a property of this
    dataset and this scale set (the uniform mechanism's ``Δf = max(D) - min(D)`` is only
    needed by ``uniform_laplace_loss_bound``).

    Args:
        values: The instances ``d_i``, 1-D, at least 2, all finite (numpy or torch).
        scales: Their Laplace scales ``b_i > 0``, same shape.
        instances: Optional integer indices of the instances whose loss is wanted (the
            others are skipped, which is much cheaper for a single instance).

    Returns:
        float64 array: each instance's loss, shape ``(n,)``, or ``(len(instances),)`` when
        ``instances`` is given (an upper bound tight to float64 rounding; ``inf`` only if ρ
        reaches 1 in floating point).

    Raises:
        ValueError: If the inputs are not finite 1-D arrays of the same shape, there are
            fewer than 2 instances, or a scale is not > 0.

    """
    values, scales = _validate(values, scales)
    groups = PDPGroups(values, scales)
    wanted = np.ones(groups.centers.size, dtype=bool)
    if instances is not None:
        index = np.asarray(instances).reshape(-1)
        if not np.issubdtype(index.dtype, np.integer) or np.any(
            (index < 0) | (index >= values.size)
        ):
            raise ValueError(f"instances must be integer indices in [0, {values.size})")
        wanted[:] = False
        wanted[groups.inverse[index]] = True
    log_sup, log_inf = _log_rho_extremes(groups, wanted)
    # ρ_g ≤ 1/m_g always (S holds m_g copies of Lap_g); a tangent bound can overshoot it
    # where ρ is close to 1, and log1p would then give NaN, which compares as "within ε".
    log_sup = np.minimum(log_sup, -groups.log_counts)
    losses = _losses_from_rho(log_sup, log_inf, groups.n)
    return losses[groups.inverse if instances is None else groups.inverse[index]]


def instance_privacy_losses_on_grid(values: object, scales: object, grid: object) -> np.ndarray:
    """The same per-instance loss, with the sup/inf taken over ``grid`` points only.

    A lower bound of ``instance_privacy_losses`` (grid points are a subset of R); kept
    as the direct, independent evaluation of the definition for tests and plots.

    Args:
        values: The instances, 1-D, at least 2.
        scales: Their Laplace scales > 0.
        grid: Output points y to evaluate at, 1-D, finite.

    Returns:
        float64 array of shape ``(n,)``.

    """
    values, scales = _validate(values, scales)
    grid = as_float64_array("grid", grid).reshape(-1)
    groups = PDPGroups(values, scales)
    log_sup = np.full(groups.centers.size, -np.inf)
    log_inf = np.full(groups.centers.size, np.inf)
    for part in _chunks(grid.size, groups.centers.size):
        log_terms = groups.log_density_terms(grid[part])
        # One instance's share of the mixture, (P, G).
        log_rho = log_terms - logsumexp(log_terms, axis=1, keepdims=True) - groups.log_counts
        log_sup = np.maximum(log_sup, log_rho.max(axis=0))
        log_inf = np.minimum(log_inf, log_rho.min(axis=0))
    return _losses_from_rho(log_sup, log_inf, groups.n)[groups.inverse]


def _losses_from_rho(log_sup: np.ndarray, log_inf: np.ndarray, n: int) -> np.ndarray:
    log_shrink = math.log((n - 1) / n)
    with np.errstate(divide="ignore"):
        up = log_shrink - np.log1p(-np.exp(log_sup))
        down = -log_shrink + np.log1p(-np.exp(log_inf))
    return np.maximum(up, down)


def _chunks(num_points: int, num_groups: int) -> list[slice]:
    step = max(1, _CHUNK_ELEMENTS // max(1, num_groups))
    return [slice(i, min(i + step, num_points)) for i in range(0, num_points, step)]


def _log_rho_and_slope(
    groups: PDPGroups, y: np.ndarray, target: np.ndarray, *, right: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``ln ρ_target(y)`` and its one-sided derivative in y (right or left), per point."""
    log_rho = np.empty(y.size)
    slope = np.empty(y.size)
    for part in _chunks(y.size, groups.centers.size):
        yp, tp = y[part], target[part]
        log_terms = groups.log_density_terms(yp)
        log_s = logsumexp(log_terms, axis=1)
        weights = np.exp(log_terms - log_s[:, None])
        diff = yp[:, None] - groups.centers
        # d|y - c|/dy from the right is +1 at y = c, from the left -1.
        sign = np.where(diff >= 0.0, 1.0, -1.0) if right else np.where(diff > 0.0, 1.0, -1.0)
        d_log_s = -(weights * sign / groups.scales).sum(axis=1)
        rows = np.arange(yp.size)
        log_rho[part] = log_terms[rows, tp] - groups.log_counts[tp] - log_s
        slope[part] = -sign[rows, tp] / groups.scales[tp] - d_log_s
    return log_rho, slope


def _bisect_max(
    groups: PDPGroups,
    lo: np.ndarray,
    hi: np.ndarray,
    target: np.ndarray,
    known: np.ndarray,
) -> np.ndarray:
    """Upper bound of the max of the concave ``ln ρ_target`` on ``[lo, hi]``.

    Requires a positive slope at ``lo`` and a negative one at ``hi``. Each step halves the
    bracket; a pair stops once the tangent lines at its two ends (an upper bound, by
    concavity) are within ``_BOUND_GAP`` of the larger end value, which is below it, or
    fall below ``known``, a value of the same function already found elsewhere (then the
    bracket cannot raise the sup).
    """
    f_lo, s_lo = _log_rho_and_slope(groups, lo, target, right=True)
    f_hi, s_hi = _log_rho_and_slope(groups, hi, target, right=False)
    bound = _tangent_bound(lo, f_lo, s_lo, hi, f_hi, s_hi)
    pending = np.nonzero((bound - np.maximum(f_lo, f_hi) > _BOUND_GAP) & (bound > known))[0]
    for _ in range(_BISECTION_STEPS):
        if pending.size == 0:
            break
        mid = 0.5 * (lo[pending] + hi[pending])
        f_mid, s_mid = _log_rho_and_slope(groups, mid, target[pending], right=True)
        rising = s_mid > 0.0
        for array, new in ((lo, mid), (f_lo, f_mid), (s_lo, s_mid)):
            array[pending] = np.where(rising, new, array[pending])
        for array, new in ((hi, mid), (f_hi, f_mid), (s_hi, s_mid)):
            array[pending] = np.where(rising, array[pending], new)
        bound[pending] = _tangent_bound(
            lo[pending], f_lo[pending], s_lo[pending], hi[pending], f_hi[pending], s_hi[pending]
        )
        gap = bound[pending] - np.maximum(f_lo[pending], f_hi[pending])
        pending = pending[(gap > _BOUND_GAP) & (bound[pending] > known[pending])]
    return bound


def _tangent_bound(
    lo: np.ndarray,
    f_lo: np.ndarray,
    s_lo: np.ndarray,
    hi: np.ndarray,
    f_hi: np.ndarray,
    s_hi: np.ndarray,
) -> np.ndarray:
    """Max over ``[lo, hi]`` of ``min`` of the two end tangents of a concave function."""
    rising = np.maximum(s_lo, 0.0)
    falling = np.minimum(s_hi, 0.0)
    # The tangents meet where f_lo + rising·(y - lo) = f_hi + falling·(y - hi).
    denom = rising - falling
    with np.errstate(invalid="ignore", divide="ignore"):
        cross = (f_hi - f_lo + rising * lo - falling * hi) / denom
    cross = np.where(denom > 0.0, np.clip(cross, lo, hi), lo)
    return np.maximum(
        np.minimum(f_lo + rising * (cross - lo), f_hi + falling * (cross - hi)),
        np.maximum(f_lo, f_hi),
    )


def _log_rho_extremes(groups: PDPGroups, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``ln sup_y ρ_g`` and ``ln inf_y ρ_g`` for every group g (exact where ``wanted``)."""
    num_groups = groups.centers.size
    kinks = np.unique(groups.centers)
    # Every group at every kink, (U, G): the mixture's share and the one-sided slopes of
    # ln ρ_g = ln Lap_g - ln S, where d(ln S) is shared by all groups.
    log_terms = groups.log_density_terms(kinks)
    log_s = logsumexp(log_terms, axis=1, keepdims=True)
    weights = np.exp(log_terms - log_s)
    log_rho = log_terms - groups.log_counts - log_s
    diff = kinks[:, None] - groups.centers
    sign_right = np.where(diff >= 0.0, 1.0, -1.0)
    sign_left = np.where(diff > 0.0, 1.0, -1.0)
    d_log_s_right = -(weights * sign_right / groups.scales).sum(axis=1, keepdims=True)
    d_log_s_left = -(weights * sign_left / groups.scales).sum(axis=1, keepdims=True)
    slope_right = -sign_right / groups.scales - d_log_s_right
    slope_left = -sign_left / groups.scales - d_log_s_left

    log_sup = log_rho.max(axis=0)
    log_inf = log_rho.min(axis=0)

    # Interior segments with a maximum strictly inside.
    inside = (slope_right[:-1] > 0.0) & (slope_left[1:] < 0.0) & wanted
    seg, grp = np.nonzero(inside)
    if seg.size:
        peak = _bisect_max(groups, kinks[seg], kinks[seg + 1], grp, log_sup[grp])
        np.maximum.at(log_sup, grp, peak)

    # Tails: right tail as is, left tail by mirroring the data (y -> -y).
    largest = groups.scales.max()
    widest = groups.scales == largest
    for mirror in (1.0, -1.0):
        mirrored = groups if mirror > 0 else _mirrored(groups)
        edge = -1 if mirror > 0 else 0
        limit = np.full(num_groups, -np.inf)
        # Only the widest components survive at ±∞ (their ln 2b terms cancel).
        limit[widest] = mirrored.centers[widest] / largest - logsumexp(
            mirrored.log_counts[widest] + mirrored.centers[widest] / largest
        )
        log_inf = np.minimum(log_inf, limit)
        edge_slope = slope_right[edge] if mirror > 0 else -slope_left[edge]
        rising = (edge_slope > 0.0) & wanted
        log_sup = np.where(rising & widest, np.maximum(log_sup, limit), log_sup)
        to_bisect = np.nonzero(rising & ~widest)[0]
        if to_bisect.size:
            start = np.full(to_bisect.size, mirror * kinks[edge])
            log_sup[to_bisect] = np.maximum(
                log_sup[to_bisect],
                _tail_max(mirrored, start, to_bisect, largest, log_sup[to_bisect]),
            )
    return log_sup, log_inf


def _mirrored(groups: PDPGroups) -> PDPGroups:
    mirrored = object.__new__(PDPGroups)
    mirrored.__dict__.update(groups.__dict__)
    mirrored.centers = -groups.centers
    return mirrored


def _tail_max(
    groups: PDPGroups,
    start: np.ndarray,
    target: np.ndarray,
    largest: float,
    known: np.ndarray,
) -> np.ndarray:
    """Max of ``ln ρ`` on ``[start, ∞)`` for targets narrower than the widest component.

    The slope tends to ``1/largest - 1/b_target < 0``, so doubling the step from the last
    kink finds a point with a negative slope; the maximum is bisected in between.
    """
    hi = start.copy()
    step = np.full(start.size, largest)
    pending = np.ones(start.size, dtype=bool)
    for _ in range(_MAX_DOUBLINGS):
        hi = np.where(pending, start + step, hi)
        _, slope = _log_rho_and_slope(groups, hi, target, right=True)
        pending = slope > 0.0
        if not pending.any():
            break
        step = np.where(pending, 2.0 * step, step)
    if pending.any():  # Unreachable for finite inputs; report the loss as unbounded.
        return np.where(pending, 0.0, _bisect_max(groups, start, hi, target, known))
    return _bisect_max(groups, start, hi, target, known)
