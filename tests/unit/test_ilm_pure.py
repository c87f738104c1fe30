"""Instance-wise Laplace mechanism: pDP losses, release, bin masses and KL (no Ray)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rllib_privacy.accounting.pdp import (
    instance_privacy_losses,
    instance_privacy_losses_on_grid,
    uniform_laplace_loss_bound,
)
from rllib_privacy.mechanisms.instance_laplace import (
    bin_edges,
    histogram_pmf,
    instance_laplace,
    kl_divergence,
    laplace_bin_masses,
    privatized_pmf,
)

PAPER_ACTIONS = (3.0, 2.0)  # × Δf/ε
SMALL_ACTIONS = (0.5, 0.005, 0.0005)  # × Δf


def _dataset(seed: int, n: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(50.0, 10.0, size=n))  # integer-valued: duplicates, like ages


def _paper_scale_set(values: np.ndarray, epsilon: float, seed: int) -> np.ndarray:
    delta_f = float(np.ptp(values))
    choices = [a * delta_f / epsilon for a in PAPER_ACTIONS] + [a * delta_f for a in SMALL_ACTIONS]
    return np.asarray(choices)[np.random.default_rng(seed).integers(0, 5, values.size)]


# ------------------------------------------------------------------------------ pDP


@pytest.mark.parametrize("epsilon", [0.011, 0.1, 1.0, 5.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_uniform_laplace_at_sensitivity_over_epsilon_is_within_epsilon(
    epsilon: float, seed: int
) -> None:
    values = _dataset(seed)
    scales = np.full(values.size, np.ptp(values) / epsilon)
    losses = instance_privacy_losses(values, scales)
    bound = uniform_laplace_loss_bound(epsilon, values.size)
    assert bound <= epsilon
    assert np.all(losses <= bound * (1 + 1e-9)), (losses.max(), bound)
    assert np.all(losses > 0.0)


def test_two_point_dataset_matches_closed_form() -> None:
    # D = {0, 1}, equal scales b: ρ_1 rises to e^{1/b}/(1 + e^{1/b}) at +∞, so the loss of
    # either point is ln(1/2) + ln(1 + e^{1/b}) (attained only in the limit: the analytic
    # tail, not a grid, finds it).
    for b in (0.3, 1.0, 4.0):
        losses = instance_privacy_losses([0.0, 1.0], [b, b])
        expected = math.log(0.5) + math.log1p(math.exp(1.0 / b))
        np.testing.assert_allclose(losses, [expected, expected], rtol=1e-12)


def test_scale_set_known_to_violate_pdp_is_flagged() -> None:
    # One isolated instance with a tiny scale: at y = its value it makes up nearly all of
    # the output density, so removing it changes the density by a factor ~n.
    values = np.concatenate([np.zeros(30), [10.0]])
    epsilon = 0.5
    scales = np.full(values.size, 10.0 / epsilon)
    scales[-1] = 0.001 * 10.0 / 2
    losses = instance_privacy_losses(values, scales)
    assert losses[-1] > epsilon
    assert losses[-1] > math.log(values.size / 2)  # ρ ≈ 1 at y = 10
    # The uniform set on the same data is fine.
    uniform = instance_privacy_losses(values, np.full(values.size, 10.0 / epsilon))
    assert np.all(uniform <= epsilon)


@pytest.mark.parametrize("seed", [0])
def test_exact_loss_bounds_and_matches_a_fine_grid(seed: int) -> None:
    values = _dataset(seed, n=20)
    scales = _paper_scale_set(values, 1.0, seed)
    exact = instance_privacy_losses(values, scales)
    # Fine steps around the data; far points where the tails reach their limits.
    width = float(np.ptp(values))
    far = width * np.geomspace(1.0, 1e6, 2_000)
    fine = np.linspace(values.min() - 3 * width, values.max() + 3 * width, 1_000_001)
    grid = np.concatenate([values.min() - far, fine, values.max() + far])
    on_grid = instance_privacy_losses_on_grid(values, scales, grid)
    # The grid is a subset of R: its sup can only be lower (up to float rounding).
    assert np.all(on_grid <= exact + 1e-9)
    # Where the sup is attained on the fine part (or approached far out), a grid of step h
    # is within Lipschitz·h/2 of it: ln ρ has slope at most 2/b_min and
    # d loss / d ln ρ = ρ/(1-ρ) ≤ 1/(1-ρ).
    step = fine[1] - fine[0]
    one_minus_rho = (values.size - 1) / values.size * np.exp(-exact)
    tolerance = step / 2 * 2 / scales.min() / one_minus_rho + 1e-9
    assert np.all(exact - on_grid <= tolerance), np.max(exact - on_grid - tolerance)


def test_sup_in_a_tail_outside_the_data_range_is_found() -> None:
    # Target (1, b=1) is squeezed between a narrow component at the same value and a wide
    # one at 0: its share of the density keeps rising to the right of the data until the
    # wide component takes over, so the sup lies outside the data range.
    values, scales = np.array([0.0, 0.0, 1.0, 1.0]), np.array([3.0, 3.0, 1.0, 0.1])
    exact = instance_privacy_losses(values, scales)
    grid = np.linspace(-50.0, 50.0, 1_000_001)
    on_grid = instance_privacy_losses_on_grid(values, scales, grid)
    np.testing.assert_allclose(exact, on_grid, rtol=1e-6)
    y = grid[np.argmax(instance_loss_curve(values, scales, 2, grid))]
    assert y > 1.5


def instance_loss_curve(values: np.ndarray, scales: np.ndarray, z: int, y: np.ndarray):
    """ln p_D(y) - ln p_{D∖{z}}(y) written out directly."""
    density = np.exp(-np.abs(y[:, None] - values) / scales) / (2 * scales)
    rest = np.delete(density, z, axis=1)
    return np.log(density.mean(axis=1)) - np.log(rest.mean(axis=1))


def test_losses_are_invariant_to_order_and_shift_and_subset_matches() -> None:
    values = _dataset(3, n=30)
    scales = _paper_scale_set(values, 0.5, 3)
    losses = instance_privacy_losses(values, scales)
    order = np.random.default_rng(0).permutation(values.size)
    np.testing.assert_allclose(
        instance_privacy_losses(values[order] + 1000.0, scales[order]), losses[order], rtol=1e-9
    )
    picked = np.array([4, 0, 17])
    np.testing.assert_allclose(
        instance_privacy_losses(values, scales, instances=picked), losses[picked], rtol=1e-12
    )
    np.testing.assert_allclose(
        instance_privacy_losses(torch.tensor(values), torch.tensor(scales)), losses
    )


@pytest.mark.parametrize(
    ("values", "scales", "message"),
    [
        ([1.0], [1.0], "at least 2 instances"),
        ([1.0, 2.0], [1.0, 0.0], "scales must all be > 0"),
        ([1.0, 2.0], [1.0], "scales must have the shape"),
        ([1.0, float("nan")], [1.0, 1.0], "values must contain only finite"),
        ([[1.0, 2.0]], [[1.0, 1.0]], "values must be 1-D"),
    ],
)
def test_pdp_rejects_bad_input(values: list, scales: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        instance_privacy_losses(values, scales)
    with pytest.raises(ValueError, match="instances must be integer indices"):
        instance_privacy_losses([1.0, 2.0], [1.0, 1.0], instances=[2])


def test_exact_event_probabilities_respect_each_instance_loss() -> None:
    # Any event's probability ratio between D and D∖{z} is bounded by the density ratio's
    # sup; bins (with the ±∞ outer bins) are events whose probabilities are exact.
    values = _dataset(4, n=30)
    scales = _paper_scale_set(values, 1.0, 4)
    losses = instance_privacy_losses(values, scales)
    edges = bin_edges(values, 40)
    with_all = privatized_pmf(values, scales, edges)
    for z in range(values.size):
        without = privatized_pmf(np.delete(values, z), np.delete(scales, z), edges)
        assert np.max(np.abs(np.log(with_all) - np.log(without))) <= losses[z] + 1e-9


def test_empirical_privacy_on_adjacent_datasets_for_a_histogram_event() -> None:
    # Monte Carlo of the released output (random sampling query + the drawn instance's
    # noise) on D and D∖{z}, event = the bin holding z: the empirical log-ratio stays
    # within z's loss plus 4 standard errors of the two estimates (delta method).
    values = np.array([0.0] * 20 + [5.0] * 10 + [10.0])
    scales = np.full(values.size, 5.0)
    scales[-1] = 1.0
    z = values.size - 1
    loss = instance_privacy_losses(values, scales, instances=[z])[0]
    rng = np.random.default_rng(7)
    samples = 400_000

    def event_rate(data: np.ndarray, data_scales: np.ndarray) -> float:
        drawn = rng.integers(0, data.size, samples)
        out = instance_laplace(data[drawn], data_scales[drawn], rng=rng)
        return float(np.mean((out >= 8.0) & (out < 12.0)))

    p_d = event_rate(values, scales)
    p_neighbour = event_rate(np.delete(values, z), np.delete(scales, z))
    standard_error = math.sqrt(
        (1 - p_d) / (p_d * samples) + (1 - p_neighbour) / (p_neighbour * samples)
    )
    ratio = math.log(p_d / p_neighbour)
    assert ratio <= loss + 4 * standard_error
    # The event is informative: z's presence is visible in it.
    assert ratio > 4 * standard_error


# --------------------------------------------------------------------------- release


def test_instance_laplace_mean_variance_and_scale_per_instance() -> None:
    rng = np.random.default_rng(0)
    count = 200_000
    values = np.repeat([-3.0, 2.0], count)
    scales = np.repeat([0.5, 4.0], count)
    out = instance_laplace(values, scales, rng=rng)
    for center, b, part in ((-3.0, 0.5, out[:count]), (2.0, 4.0, out[count:])):
        variance = 2 * b * b
        assert abs(part.mean() - center) <= 4 * math.sqrt(variance / count)
        # Var of the sample variance for Laplace: (μ4 - σ⁴)/N with μ4 = 24 b⁴.
        assert abs(part.var() - variance) <= 4 * math.sqrt((24 * b**4 - variance**2) / count)
        # Support is the real line: both sides of the center are reached.
        assert part.min() < center - 5 * b and part.max() > center + 5 * b


def test_instance_laplace_keeps_kind_and_validates() -> None:
    tensor = torch.zeros(3, dtype=torch.float32)
    out = instance_laplace(tensor, 1.0, rng=np.random.default_rng(0))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == (3,)
    with pytest.raises(ValueError, match="scales must all be > 0"):
        instance_laplace([1.0, 2.0], [1.0, -1.0])
    with pytest.raises(ValueError, match="do not broadcast"):
        instance_laplace([1.0, 2.0], [1.0, 1.0, 1.0])


# ------------------------------------------------------------------------- bins / KL


def test_bin_masses_are_exact_and_sum_to_one() -> None:
    edges = np.linspace(0.0, 10.0, 11)
    masses = laplace_bin_masses([2.0, 9.5], [1.0, 0.3], edges)
    np.testing.assert_allclose(masses.sum(axis=1), 1.0, rtol=1e-12)
    rng = np.random.default_rng(1)
    samples = 200_000
    draws = 2.0 + rng.laplace(0.0, 1.0, samples)
    empirical = histogram_pmf(draws, edges)
    standard_error = np.sqrt(masses[0] * (1 - masses[0]) / samples)
    assert np.all(np.abs(empirical - masses[0]) <= 4 * standard_error + 1e-12)


def test_histogram_pmf_puts_edge_values_in_the_upper_bin() -> None:
    pmf = histogram_pmf([0.0, 5.0, 10.0, 10.0], np.linspace(0.0, 10.0, 3))
    np.testing.assert_allclose(pmf, [0.25, 0.75])


def test_kl_is_zero_for_identical_and_positive_otherwise() -> None:
    values = _dataset(5, n=60)
    edges = bin_edges(values, 17)
    assert not np.isin(values, edges[1:-1]).any()  # else tiny noise splits a point's mass
    p = histogram_pmf(values, edges)
    assert kl_divergence(p, p) == pytest.approx(0.0, abs=1e-9)
    delta_f = float(np.ptp(values))
    kls = [kl_divergence(p, privatized_pmf(values, delta_f / eps, edges)) for eps in (10, 1, 0.1)]
    assert 0.0 < kls[0] < kls[1] < kls[2]  # more noise, more divergence
    # Vanishing noise recovers the data's own PMF (no point sits on an interior edge here).
    tiny = privatized_pmf(values, 1e-9 * delta_f, edges)
    assert kl_divergence(p, tiny) == pytest.approx(0.0, abs=1e-6)


def test_bin_and_kl_inputs_are_validated() -> None:
    with pytest.raises(ValueError, match="must not all be equal"):
        bin_edges([3.0, 3.0], 10)
    with pytest.raises(ValueError, match="num_bins must be an int >= 2"):
        bin_edges([1.0, 2.0], 1)
    with pytest.raises(ValueError, match="same shape"):
        kl_divergence([0.5, 0.5], [1.0])


def test_extreme_scales_give_large_finite_or_inf_losses_never_nan() -> None:
    # ρ within float rounding of 1 (an isolated value with a minute scale next to wide
    # ones): the tangent bound may overshoot ln ρ = 0, and the loss must not become NaN,
    # which would compare as "within ε".
    values = np.array([0.0, 1.0, 1.0, 50.0])
    scales = np.array([1e-9, 100.0, 100.0, 1e-12])
    losses = instance_privacy_losses(values, scales)
    assert not np.any(np.isnan(losses))
    assert losses[0] > 10.0 and losses[3] > 10.0
