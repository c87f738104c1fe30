"""ILM scale assignments: best single scale, greedy coordinate descent, pDP repair (no Ray)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rllib_privacy.accounting.ilm_scales import (
    best_single_scale,
    geometric_scales,
    greedy_scales,
    pdp_violations,
    repair_scales,
)
from rllib_privacy.accounting.pdp import instance_privacy_losses
from rllib_privacy.mechanisms.instance_laplace import (
    bin_edges,
    histogram_pmf,
    kl_divergence,
    privatized_pmf,
)

EPSILONS = (0.011, 0.1, 1.0)


def _dataset(rng: np.random.Generator, n: int) -> np.ndarray:
    """Integer-valued, so values repeat (like ages)."""
    return np.round(rng.normal(50.0, 8.0, size=n))


def _paper_scales(values: np.ndarray, epsilon: float) -> np.ndarray:
    delta_f = float(np.ptp(values))
    return np.array([3 * delta_f / epsilon, 2 * delta_f / epsilon, 0.5, 0.005, 0.0005]) * [
        1,
        1,
        delta_f,
        delta_f,
        delta_f,
    ]


def _kl(values: np.ndarray, scales: np.ndarray, edges: np.ndarray) -> float:
    return kl_divergence(histogram_pmf(values, edges), privatized_pmf(values, scales, edges))


# ------------------------------------------------------------------------------ repair


@pytest.mark.parametrize("seed", range(12))
def test_repair_leaves_no_violation_and_never_narrows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = _dataset(rng, int(rng.integers(8, 40)))
    epsilon = EPSILONS[seed % 3]
    delta_f = float(np.ptp(values))
    # Random scales over six orders of magnitude, around and beyond the paper's actions.
    scales = delta_f * 10.0 ** rng.uniform(-3.5, np.log10(3 / epsilon), values.size)
    before = instance_privacy_losses(values, scales)
    result = repair_scales(values, scales, epsilon)
    assert result.violations_before == np.count_nonzero(before > epsilon) > 0
    assert pdp_violations(values, result.scales, epsilon) == 0
    assert np.all(result.scales >= scales)
    np.testing.assert_array_equal(result.widened, result.scales > scales)
    assert result.num_widened >= 1


@pytest.mark.parametrize("seed", range(6))
def test_repair_of_random_paper_actions_succeeds(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    values = _dataset(rng, 30)
    epsilon = EPSILONS[seed % 3]
    scales = rng.choice(_paper_scales(values, epsilon), values.size)
    result = repair_scales(values, scales, epsilon)
    assert pdp_violations(values, result.scales, epsilon) == 0
    assert np.all(result.scales >= scales)


def test_repair_is_a_no_op_on_feasible_assignments() -> None:
    rng = np.random.default_rng(7)
    values = _dataset(rng, 40)
    epsilon = 0.1
    edges = bin_edges(values, 20)
    feasible = [
        np.full(values.size, np.ptp(values) / epsilon),
        greedy_scales(values, epsilon, _paper_scales(values, epsilon), edges).scales,
    ]
    for scales in feasible:
        assert pdp_violations(values, scales, epsilon) == 0  # precondition
        result = repair_scales(values, scales, epsilon)
        np.testing.assert_array_equal(result.scales, scales)
        assert result.num_widened == 0 and result.rounds == 0 and result.recruited == 0
        assert not result.floor_used


def test_repair_widens_only_the_violating_instance_when_that_suffices() -> None:
    # Many copies of 0 and 10 at Δf/2; one isolated value at a tiny scale spikes.
    values = np.array([0.0] * 20 + [10.0] * 20 + [5.0])
    scales = np.array([5.0] * 40 + [0.005])
    epsilon = 0.5
    losses = instance_privacy_losses(values, scales)
    assert np.flatnonzero(losses > epsilon).tolist() == [40]  # precondition
    result = repair_scales(values, scales, epsilon, losses=losses)
    assert result.widened.tolist() == [False] * 40 + [True]
    assert not result.floor_used and 0.005 < result.scales[40] <= 5.0
    assert pdp_violations(values, result.scales, epsilon) == 0


def test_a_lone_widest_scale_recruits_its_nearest_neighbours() -> None:
    # One instance wider than everyone dominates both tails: widening it cannot help (it
    # is the cap), so instances nearest in value join it at the cap, not everyone.
    values = np.array([0.0, 1.0, 2.0, 3.0] * 5 + [9.0] * 20)
    epsilon = 1.0
    scales = np.full(values.size, 0.5)
    scales[0] = 3.0
    losses = instance_privacy_losses(values, scales)
    assert np.flatnonzero(losses > epsilon).tolist() == [0]  # precondition
    result = repair_scales(values, scales, epsilon, losses=losses)
    assert not result.floor_used and result.recruited > 0
    assert result.scales[0] == scales[0]
    widened = np.flatnonzero(result.widened)
    assert np.all(result.scales[widened] == 3.0)
    # The recruits are the nearest values: none of the far copies of 9 was needed.
    assert np.all(values[widened] <= 3.0) and result.num_widened < 20
    assert pdp_violations(values, result.scales, epsilon) == 0


def test_a_common_scale_up_to_uniform_is_the_last_resort() -> None:
    # Every instance at the same tiny scale on sparse data: no violator can widen (all at
    # the cap) and there is no one to recruit, so one common scale rises toward Δf/ε.
    values = np.array([0.0, 1.0, 2.0, 10.0])
    epsilon = 0.1
    scales = np.full(values.size, 0.001)
    result = repair_scales(values, scales, epsilon)
    assert result.floor_used and result.recruited == 0
    assert np.all(result.scales == result.scales[0]) and result.scales[0] > 0.001
    assert result.scales[0] <= np.ptp(values) / epsilon
    assert pdp_violations(values, result.scales, epsilon) == 0


def test_repair_rejects_bad_arguments() -> None:
    values = np.array([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="growth must be > 1"):
        repair_scales(values, np.ones(3), 0.1, growth=1.0)
    with pytest.raises(ValueError, match="shape of values"):
        repair_scales(values, np.ones(2), 0.1)
    with pytest.raises(ValueError, match="shape of values"):
        repair_scales(values, np.ones(3), 0.1, losses=np.zeros(2))
    with pytest.raises(ValueError, match="epsilon"):
        repair_scales(values, np.ones(3), 0.0)


# ------------------------------------------------------------------- best single scale


@pytest.mark.parametrize("seed", range(4))
def test_best_single_scale_is_the_best_feasible_candidate_by_brute_force(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    values = _dataset(rng, 15)
    epsilon = EPSILONS[seed % 3]
    edges = bin_edges(values, 12)
    # Shuffled, so the answer is not simply the first feasible one in sorted order.
    candidates = rng.permutation(geometric_scales(np.ptp(values), epsilon, 16))
    result = best_single_scale(values, epsilon, candidates, edges)
    table = []
    for scale in candidates:
        uniform = np.full(values.size, scale)
        ok = bool(np.all(instance_privacy_losses(values, uniform) <= epsilon))
        table.append((ok, _kl(values, uniform, edges), scale))
    feasible = [(kl, scale) for ok, kl, scale in table if ok]
    assert feasible and any(not ok for ok, _, _ in table)  # the constraint binds
    best_kl, best = min(feasible)
    assert result.scale == best and result.kl == pytest.approx(best_kl)
    assert candidates[result.index] == best


def test_best_single_scale_is_none_when_nothing_is_feasible() -> None:
    values = np.array([0.0, 1.0, 7.0])
    result = best_single_scale(values, 0.01, [1e-3, 1e-2], bin_edges(values, 4))
    assert result.scale is None and result.index is None and result.kl == np.inf


# ------------------------------------------------------------------------------ greedy


@pytest.mark.parametrize("seed", range(6))
def test_greedy_never_violates_and_beats_or_ties_the_best_single_scale(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    values = _dataset(rng, int(rng.integers(20, 60)))
    epsilon = EPSILONS[seed % 3]
    edges = bin_edges(values, 20)
    candidates = (
        _paper_scales(values, epsilon)
        if seed % 2
        else geometric_scales(np.ptp(values), epsilon, 12)
    )
    single = best_single_scale(values, epsilon, candidates, edges)
    result = greedy_scales(values, epsilon, candidates, edges)
    assert pdp_violations(values, result.scales, epsilon) == 0
    assert result.start_kl == pytest.approx(single.kl)
    assert result.kl <= single.kl
    assert result.kl == pytest.approx(_kl(values, result.scales, edges))
    assert np.all(np.isin(result.scales, candidates))


def test_greedy_improves_where_frequent_values_can_take_smaller_scales() -> None:
    values = np.array([0.0] * 30 + [5.0] * 30 + [1.0, 2.0, 3.0, 4.0, 9.0])
    epsilon = 1.0
    edges = bin_edges(values, 18)
    candidates = geometric_scales(np.ptp(values), epsilon, 12)
    result = greedy_scales(values, epsilon, candidates, edges)
    assert result.moves > 0 and result.kl < 0.9 * result.start_kl
    # The frequent values got narrower scales than the isolated ones.
    assert result.scales[0] < result.scales[-1]


def test_greedy_is_a_local_optimum_checked_by_enumerating_every_single_move() -> None:
    rng = np.random.default_rng(5)
    values = _dataset(rng, 25)
    epsilon = 0.5
    edges = bin_edges(values, 10)
    candidates = geometric_scales(np.ptp(values), epsilon, 6)
    result = greedy_scales(values, epsilon, candidates, edges, max_passes=50)
    assert result.passes < 50  # converged
    for value, scale in itertools.product(np.unique(values), candidates):
        trial = np.where(values == value, scale, result.scales)
        if _kl(values, trial, edges) < result.kl * (1 - 1e-6):
            assert pdp_violations(values, trial, epsilon) > 0, (value, scale)


def test_geometric_scales_span_the_paper_smallest_to_uniform() -> None:
    scales = geometric_scales(60.0, 0.1, 5)
    assert scales[0] == pytest.approx(0.0005 * 60.0) and scales[-1] == pytest.approx(600.0)
    assert np.allclose(scales[1:] / scales[:-1], scales[1] / scales[0])
    with pytest.raises(ValueError, match="low must be below"):
        geometric_scales(1.0, 5000.0, 4)
    with pytest.raises(ValueError, match="num"):
        geometric_scales(1.0, 1.0, 1)
