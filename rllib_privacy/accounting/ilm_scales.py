"""Scale assignments of the instance-wise Laplace mechanism: baselines and pDP repair (no Ray).

Reference: S. Ryu, H. Joo, J. Jang and H. J. Yang, "Instance-Wise Laplace Mechanism via Deep
Reinforcement Learning" (AAAI 2024 student abstract); per-instance DP after Wang (2019). See
docs/components/instance-laplace.md.

Three pure functions over a 1-D dataset ``D``, a target ε and the shared bins of
``rllib_privacy.mechanisms.instance_laplace`` (utility = ``KL(data ‖ output)``):

- ``best_single_scale``: one Laplace scale for every instance, the one of lowest KL
  among the candidates whose every instance satisfies ε-pDP (the analytic baseline);
- ``greedy_scales``: coordinate descent on the KL under the pDP constraints, starting
  from the best single scale; a coordinate is one distinct value (all its copies move
  together) and a move is accepted only if it lowers the KL and every instance's exact
  loss stays ≤ ε, so the result never violates and is never worse than its start;
- ``repair_scales``: the step every released assignment goes through. It only ever
  *widens* scales: the violating instances, geometrically, never beyond the widest scale
  already in the assignment (a new lone widest component would make the tails' loss
  unbounded); when the violators are at that widest scale, their nearest neighbours in
  value are widened to it; and if everyone is at it and some still violate, one common
  scale rising to ``Δf/ε``, which is within ε for every instance
  (``uniform_laplace_loss_bound``), so the repair always
  ends with zero violations. A feasible assignment is returned unchanged.

The losses are the exact ones of ``rllib_privacy.accounting.pdp.instance_privacy_losses``
(mixture reading of pDP); ``geometric_scales`` builds a finer candidate set than the
paper's five actions.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from rllib_privacy._validation import (
    as_float64_array,
    check_finite_positive,
    check_int_in_range,
)
from rllib_privacy.accounting.pdp import (
    instance_privacy_losses,
    instance_privacy_losses_on_grid,
)
from rllib_privacy.mechanisms.instance_laplace import (
    histogram_pmf,
    kl_divergence,
    laplace_bin_masses,
    privatized_pmf,
)

__all__ = [
    "GreedyResult",
    "RepairResult",
    "SingleScaleResult",
    "best_single_scale",
    "feasible_losses",
    "geometric_scales",
    "greedy_scales",
    "pdp_violations",
    "rejection_grid",
    "repair_scales",
]

#: Relative KL decrease a greedy move must bring (guards against float ties and cycles).
_MIN_GAIN = 1e-9


@dataclasses.dataclass(frozen=True)
class SingleScaleResult:
    """The best pDP-feasible single scale of a candidate set.

    Attributes:
        scale: The scale (None when no candidate keeps every instance within ε).
        kl: Its KL divergence (inf when ``scale`` is None).
        index: Its position in the candidate array (None with ``scale``).

    """

    scale: float | None
    kl: float
    index: int | None


@dataclasses.dataclass(frozen=True)
class GreedyResult:
    """Outcome of ``greedy_scales``.

    Attributes:
        scales: Every instance's scale (all within ε-pDP).
        kl: Its KL divergence.
        start_kl: KL of the starting assignment (the best single scale, or uniform Laplace
            at Δf/ε when no candidate single scale is feasible).
        passes: Sweeps over the coordinates.
        moves: Accepted moves.

    """

    scales: np.ndarray
    kl: float
    start_kl: float
    passes: int
    moves: int


@dataclasses.dataclass(frozen=True)
class RepairResult:
    """Outcome of ``repair_scales``.

    Attributes:
        scales: The repaired scales (every one ≥ the input's).
        widened: Mask of the instances whose scale was widened.
        violations_before: Instances over ε before the repair.
        rounds: Exact pDP evaluations after the first.
        recruited: Instances widened to the widest scale to keep violators at it company.
        floor_used: Whether the common rising scale (last stage) was needed.

    """

    scales: np.ndarray
    widened: np.ndarray
    violations_before: int
    rounds: int
    recruited: int
    floor_used: bool

    @property
    def num_widened(self) -> int:
        """How many instances the repair widened."""
        return int(np.count_nonzero(self.widened))


def _check_inputs(values: object, epsilon: float) -> tuple[np.ndarray, float]:
    values = as_float64_array("values", values).reshape(-1)
    if values.size < 2 or not np.ptp(values) > 0.0:
        raise ValueError("values must have at least 2 distinct values (Δf = max - min > 0)")
    return values, check_finite_positive("epsilon", epsilon)


def _check_candidates(candidates: object) -> np.ndarray:
    candidates = as_float64_array("candidates", candidates).reshape(-1)
    if candidates.size == 0 or np.any(candidates <= 0.0):
        raise ValueError("candidates must be a non-empty set of scales > 0")
    return candidates


def geometric_scales(delta_f: float, epsilon: float, num: int, *, low: float = 5e-4) -> np.ndarray:
    """``num`` scales spaced geometrically from ``low·Δf`` to the uniform ``Δf/ε``.

    A finer candidate set than the paper's five actions (whose smallest is ``0.0005·Δf``,
    the default ``low``); both ends are included. Scales above ``Δf/ε`` are left out: they
    only add noise, and a few wide components make the tails' loss large.

    Args:
        delta_f: The data's range Δf > 0.
        epsilon: Target ε > 0.
        num: Number of scales, >= 2.
        low: Smallest scale in units of Δf, > 0 and below ``1/ε``.

    Returns:
        float64 array of shape ``(num,)``, increasing.

    """
    delta_f = check_finite_positive("delta_f", delta_f)
    epsilon = check_finite_positive("epsilon", epsilon)
    num = check_int_in_range("num", num, low=2)
    low = check_finite_positive("low", low)
    if not low < 1.0 / epsilon:
        raise ValueError(f"low must be below 1/ε = {1.0 / epsilon!r}, got {low!r}")
    return np.geomspace(low * delta_f, delta_f / epsilon, num)


def pdp_violations(values: object, scales: object, epsilon: float) -> int:
    """Number of instances whose exact pDP loss exceeds ε."""
    losses = instance_privacy_losses(values, scales)
    return int(np.count_nonzero(losses > epsilon))


def best_single_scale(
    values: object, epsilon: float, candidates: object, edges: object
) -> SingleScaleResult:
    """The candidate scale of lowest KL that keeps every instance within ε-pDP.

    Every candidate is tried as the scale of every instance (exact pDP check, then the KL
    on ``edges``); ties keep the first candidate.

    Args:
        values: The instances, 1-D, at least 2 distinct.
        epsilon: Target ε > 0.
        candidates: Scales > 0 to choose from.
        edges: Shared bin edges (``bin_edges``).

    Returns:
        The best scale, its KL and its index (None/inf/None when none is feasible).

    """
    values, epsilon = _check_inputs(values, epsilon)
    candidates = _check_candidates(candidates)
    data_pmf = histogram_pmf(values, edges)
    best = SingleScaleResult(None, math.inf, None)
    for index, scale in enumerate(candidates):
        uniform = np.full(values.size, scale)
        if np.all(instance_privacy_losses(values, uniform) <= epsilon):
            kl = kl_divergence(data_pmf, privatized_pmf(values, uniform, edges))
            if kl < best.kl:
                best = SingleScaleResult(float(scale), kl, index)
    return best


def rejection_grid(values: np.ndarray, widest: float) -> np.ndarray:
    """Output points where a violation shows first: the data, midpoints, and the tails.

    The grid of ``feasible_losses``'s cheap pre-check; ``widest`` is the widest scale
    an assignment may use (the tails reach ``2^7`` times it).
    """
    distinct = np.unique(values)
    tails = widest * 2.0 ** np.arange(-4, 8)
    return np.concatenate(
        [distinct, 0.5 * (distinct[1:] + distinct[:-1]), distinct[0] - tails, distinct[-1] + tails]
    )


def feasible_losses(
    values: np.ndarray, scales: np.ndarray, epsilon: float, grid: np.ndarray
) -> np.ndarray | None:
    """Every instance's exact loss if all are within ε, else None.

    A cheap check on ``grid`` (``rejection_grid``) runs first and can only reject (a
    grid loss is a lower bound of the exact one); the exact losses
    (``instance_privacy_losses``) decide.
    """
    if np.any(instance_privacy_losses_on_grid(values, scales, grid) > epsilon):
        return None
    losses = instance_privacy_losses(values, scales)
    return losses if bool(np.all(losses <= epsilon)) else None


def greedy_scales(
    values: object,
    epsilon: float,
    candidates: object,
    edges: object,
    *,
    max_passes: int = 20,
) -> GreedyResult:
    """Coordinate descent on ``KL(data ‖ output)`` under every instance's ε-pDP constraint.

    Start: every instance at ``best_single_scale`` of ``candidates`` (or at the uniform
    ``Δf/ε``, within ε by ``uniform_laplace_loss_bound``,
    when no candidate is feasible). One pass visits the distinct values, most frequent
    first; for each, the candidate scales for all its copies are tried in order of the KL
    they give (cheap: the output PMF changes by the copies' bin masses), and the first
    that lowers the KL by a relative ``1e-9`` and keeps every instance's exact loss ≤ ε is
    taken. Passes repeat until one makes no move or ``max_passes`` is reached.

    Args:
        values: The instances, 1-D, at least 2 distinct.
        epsilon: Target ε > 0.
        candidates: Scales > 0 a value's copies may take.
        edges: Shared bin edges.
        max_passes: Upper bound on the passes, >= 1.

    Returns:
        The scales (never violating, KL ≤ the start's), their KL and search statistics.

    """
    values, epsilon = _check_inputs(values, epsilon)
    candidates = _check_candidates(candidates)
    max_passes = check_int_in_range("max_passes", max_passes, low=1)
    data_pmf = histogram_pmf(values, edges)
    start = best_single_scale(values, epsilon, candidates, edges)
    start_scale = float(np.ptp(values)) / epsilon if start.scale is None else start.scale
    distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    # Bin masses of every distinct value at every candidate, weighted by its share of D.
    options = np.append(candidates, start_scale)
    weighted = (
        np.stack(
            [laplace_bin_masses(distinct, np.full(distinct.size, s), edges) for s in options],
            axis=1,
        )
        * (counts / values.size)[:, None, None]
    )  # (distinct, options, bins)
    choice = np.full(distinct.size, options.size - 1)  # every value at the start scale
    pmf = weighted[np.arange(distinct.size), choice].sum(axis=0)
    kl = start_kl = kl_divergence(data_pmf, pmf)
    grid = rejection_grid(values, float(options.max()))
    passes = moves = 0
    for passes in range(1, max_passes + 1):  # noqa: B007 (reported after the loop)
        moved = False
        for value in np.argsort(-counts, kind="stable"):
            alternatives = pmf[None, :] + weighted[value] - weighted[value, choice[value]]
            alt_kl = np.array([kl_divergence(data_pmf, q) for q in alternatives])
            for option in np.argsort(alt_kl, kind="stable"):
                if not alt_kl[option] < kl * (1.0 - _MIN_GAIN):
                    break
                trial = options[np.where(inverse == value, option, choice[inverse])]
                if feasible_losses(values, trial, epsilon, grid) is not None:
                    choice[value], pmf, kl = option, alternatives[option], float(alt_kl[option])
                    moves += 1
                    moved = True
                    break
        if not moved:
            break
    scales = options[choice[inverse]]
    if start.scale is not None:
        start_kl = start.kl  # the same number as best_single_scale's, bit for bit
    # Recomputed from the scales (the running PMF differs from it in the last bits).
    kl = start_kl if moves == 0 else kl_divergence(data_pmf, privatized_pmf(values, scales, edges))
    return GreedyResult(scales, kl, start_kl, passes, moves)


def repair_scales(
    values: object,
    scales: object,
    epsilon: float,
    *,
    growth: float = 2.0,
    losses: object | None = None,
) -> RepairResult:
    """Widen scales until every instance is within ε-pDP (see the module docstring).

    Until no instance is over ε, each round either multiplies every violating instance's
    scale by ``growth``, capped at the assignment's widest scale (widening past it would
    make that instance a lone widest component, whose tails are unbounded), or, when every
    violator is already at that cap, widens to the cap the 1, 2, 4, ... instances nearest
    in value to the violators ("recruits": the widest components own the tails, so they
    need company). Only if every instance ends at the cap and some still violate (the cap
    is below ``Δf/ε``), every scale is set to a common ``s`` rising geometrically by
    ``growth`` from the cap to ``Δf/ε``; ``s = Δf/ε`` is within ε for every instance, so
    the repair always succeeds. It never narrows a scale, and returns a feasible
    assignment unchanged.

    Args:
        values: The instances, 1-D, at least 2 distinct.
        scales: Their scales > 0, same shape.
        epsilon: Target ε > 0.
        growth: Factor of each widening step, > 1.
        losses: The exact losses of ``scales`` if already computed (saves one evaluation).

    Returns:
        The repaired scales, which instances were widened, and how.

    Raises:
        RuntimeError: If the final uniform floor still shows a violation (floating-point
            trouble; never seen).

    """
    values, epsilon = _check_inputs(values, epsilon)
    original = as_float64_array("scales", scales).reshape(-1)
    if original.shape != values.shape or np.any(original <= 0.0):
        raise ValueError("scales must be > 0 and have the shape of values")
    growth = check_finite_positive("growth", growth)
    if not growth > 1.0:
        raise ValueError(f"growth must be > 1, got {growth!r}")
    if losses is None:
        losses = instance_privacy_losses(values, original)
    losses = np.asarray(losses, dtype=np.float64).reshape(-1)  # inf allowed (unbounded)
    if losses.shape != values.shape:
        raise ValueError("losses must have the shape of values")
    violations_before = int(np.count_nonzero(losses > epsilon))
    out = original.copy()
    cap = float(out.max())
    rounds = recruited = 0
    batch = 1
    while np.any(bad := losses > epsilon):
        grow = bad & (out < cap)
        below = np.flatnonzero(out < cap)
        if grow.any():
            out[grow] = np.minimum(out[grow] * growth, cap)
        elif below.size:
            # Every violator is at the cap: the widest components are too few (they own
            # the tails) or too alone. Recruit the instances nearest in value to them.
            distance = np.abs(values[below, None] - values[bad][None, :]).min(axis=1)
            chosen = below[np.argsort(distance, kind="stable")[:batch]]
            out[chosen] = cap
            recruited += chosen.size
            batch *= 2
        else:
            break  # All at the cap, which is below Δf/ε: only a wider common scale helps.
        rounds += 1
        losses = instance_privacy_losses(values, out)
    else:
        return RepairResult(out, out > original, violations_before, rounds, recruited, False)
    top = max(cap, float(np.ptp(values)) / epsilon)
    floor = cap
    while True:
        floor = min(floor * growth, top)
        trial = np.full(values.size, floor)
        rounds += 1
        if np.all(instance_privacy_losses(values, trial) <= epsilon):
            return RepairResult(trial, trial > original, violations_before, rounds, recruited, True)
        if floor >= top:
            raise RuntimeError(
                f"repair_scales: every scale at {top!r} >= Δf/ε still violates ε = {epsilon!r}"
            )
