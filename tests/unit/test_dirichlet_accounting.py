"""Tests for the Dirichlet mechanism's (ε, δ) (Gohari et al., Theorem 1, eq. 6 and 12)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import special, stats

from rllib_privacy.accounting import (
    DirichletPrivacy,
    dirichlet_delta,
    dirichlet_delta_estimate,
    dirichlet_epsilon,
    dirichlet_privacy,
)

ALPHA = 1e-6  # false-failure probability of each statistical check


def eq12(k: float, eta: float, tau: float, lip: float, b: float, m: int) -> float:
    """Eq. 12 written out independently of the implementation."""
    return (
        np.sqrt(m) * lip * b * k * np.log(1.0 / tau)
        + (m - 1) * special.gammaln(k * eta)
        + special.gammaln(k * (1.0 - (m - 1) * eta))
        - m * special.gammaln(k / m)
    )


def exact_delta_two_actions(k: float, eta: float, tau: float) -> float:
    """m = 2: x_1 ~ Beta(kη, k(1−η)); δ = P(x_1 < τ) + P(x_2 < τ) (disjoint since τ < 1/2)."""
    beta = stats.beta(k * eta, k * (1.0 - eta))
    return float(beta.cdf(tau) + beta.sf(1.0 - tau))


@pytest.mark.parametrize(
    ("k", "eta", "tau", "lip", "b", "m"),
    [
        (5.0, 0.1, 1e-3, 2.0, 0.01, 6),
        (5.0, 0.01, 1e-3, 0.0, 0.0, 6),
        (0.5, 0.2, 0.1, 1.0, 1.0, 2),
        (100.0, 0.3, 0.05, 0.5, 0.2, 3),
        (1e-3, 1e-3, 1e-5, 10.0, 1.0, 4),
        (1e4, 0.09, 1e-4, 3.0, 1e-3, 10),
    ],
)
def test_epsilon_matches_direct_evaluation(
    k: float, eta: float, tau: float, lip: float, b: float, m: int
) -> None:
    got = dirichlet_epsilon(k=k, eta=eta, tau=tau, lipschitz=lip, adjacency=b, num_actions=m)
    assert got == pytest.approx(float(eq12(k, eta, tau, lip, b, m)), rel=1e-12, abs=1e-9)


def test_epsilon_structure() -> None:
    common = {"eta": 0.1, "tau": 1e-3, "num_actions": 6}
    base = dirichlet_epsilon(k=5.0, lipschitz=0.0, adjacency=0.0, **common)
    assert base > 0.0  # the lnΓ terms alone (independent of L·b)
    # Linear in L·b with slope √m·k·ln(1/τ).
    slope = math.sqrt(6) * 5.0 * math.log(1e3)
    for lip, b in ((1.0, 0.1), (2.0, 0.05), (0.5, 0.4)):
        eps = dirichlet_epsilon(k=5.0, lipschitz=lip, adjacency=b, **common)
        assert eps == pytest.approx(base + slope * lip * b, rel=1e-12)
    # At η → 1/m the lnΓ terms cancel: ε is the sensitivity term only.
    near = dirichlet_epsilon(
        k=5.0, eta=1 / 6 - 1e-12, tau=0.01, lipschitz=1.0, adjacency=0.1, num_actions=6
    )
    assert near == pytest.approx(math.sqrt(6) * 5.0 * 0.1 * math.log(100.0), rel=1e-6)
    # As k → 0 the ln k terms cancel: ε levels off at a positive floor, it does not reach 0.
    floor = 5 * math.log(1 / (6 * 0.1)) + math.log(1 / (6 * 0.5))
    tiny = dirichlet_epsilon(k=1e-9, lipschitz=1.0, adjacency=0.01, **common)
    assert tiny == pytest.approx(floor, rel=1e-6)
    ks = np.logspace(-6, 4, 41)
    eps_of_k = [dirichlet_epsilon(k=k, lipschitz=1.0, adjacency=0.01, **common) for k in ks]
    assert np.all(np.diff(eps_of_k) > 0) and eps_of_k[0] > 1.4


def test_paper_k5_example() -> None:
    """The paper's k = 5 → (4.46, 0.05) for AirRaid (m = 6), reproduced by one member of the
    family it leaves open: η = 0.1, τ = 2e-5, L·b = 0.0154 (see accounting/dirichlet.py)."""
    m, k, eta, tau = 6, 5.0, 0.1, 2e-5
    eps = dirichlet_epsilon(k=k, eta=eta, tau=tau, lipschitz=1.0, adjacency=0.0154, num_actions=m)
    assert round(eps, 2) == 4.46
    estimate, upper = dirichlet_delta_estimate(
        k=k, eta=eta, tau=tau, num_actions=m, num_samples=200_000, rng=np.random.default_rng(0)
    )
    assert round(estimate, 2) == 0.05 and estimate <= upper <= estimate + 0.002
    # The same δ with no Lipschitz term cannot give 4.46 below η = 0.0744.
    assert dirichlet_epsilon(k=k, eta=0.07, tau=tau, lipschitz=0, adjacency=0, num_actions=m) > 4.46


@pytest.mark.parametrize(
    ("k", "eta", "tau"),
    [(5.0, 0.1, 0.01), (5.0, 0.1, 1e-4), (0.5, 0.3, 0.1), (50.0, 0.05, 0.02), (2.0, 0.45, 0.4)],
)
def test_delta_bound_covers_exact_two_action_value(k: float, eta: float, tau: float) -> None:
    exact = exact_delta_two_actions(k, eta, tau)
    n = 70_000  # more than one sampling chunk
    estimate, upper = dirichlet_delta_estimate(
        k=k,
        eta=eta,
        tau=tau,
        num_actions=2,
        num_samples=n,
        confidence=1.0 - ALPHA,
        rng=np.random.default_rng(1),
    )
    assert exact <= upper
    # Not uselessly loose: the bound adds ~4.8 binomial standard errors at confidence 1 − 1e-6
    # and the estimate is off by at most ~5 more; for δ <= 0.2 that beats Hoeffding's margin.
    std_error = math.sqrt(max(exact * (1.0 - exact), 1.0 / n) / n)
    assert upper - exact <= 10.0 * std_error + 3.0 / n
    assert abs(estimate - exact) <= 5.0 * std_error + 1.0 / n
    if exact <= 0.2:
        assert upper - estimate < math.sqrt(math.log(1.0 / ALPHA) / (2.0 * n))


def test_clopper_pearson_coverage_frequency() -> None:
    # Over 300 independent small estimates, the 90% upper bound covers the exact δ at least
    # about 90% of the time (binomial lower tolerance at ALPHA).
    k, eta, tau, reps = 3.0, 0.2, 0.02, 300
    exact = exact_delta_two_actions(k, eta, tau)
    rng = np.random.default_rng(2)
    covered = sum(
        dirichlet_delta_estimate(
            k=k, eta=eta, tau=tau, num_actions=2, num_samples=500, confidence=0.9, rng=rng
        )[1]
        >= exact
        for _ in range(reps)
    )
    assert covered >= stats.binom.ppf(ALPHA, reps, 0.9)


@pytest.mark.parametrize(
    ("k", "eta", "tau"), [(5.0, 0.1, 0.01), (0.5, 0.3, 0.1), (200.0, 0.4, 0.3)]
)
def test_two_action_delta_is_exact_without_draws(k: float, eta: float, tau: float) -> None:
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    delta = dirichlet_delta(k=k, eta=eta, tau=tau, num_actions=2, rng=rng)
    assert delta == pytest.approx(exact_delta_two_actions(k, eta, tau), rel=1e-12, abs=1e-300)
    assert rng.bit_generator.state == before


def test_delta_between_union_bound_and_largest_term_for_six_actions() -> None:
    # Independent checks for m > 2: max_i P(x_i < τ) <= δ <= Σ_i P(x_i < τ), marginals Beta.
    m, k, eta, tau, n = 6, 5.0, 0.1, 1e-3, 100_000
    small = stats.beta(k * eta, k * (1.0 - eta)).cdf(tau)
    large = stats.beta(k * (1.0 - (m - 1) * eta), k * (m - 1) * eta).cdf(tau)
    estimate, upper = dirichlet_delta_estimate(
        k=k,
        eta=eta,
        tau=tau,
        num_actions=m,
        num_samples=n,
        confidence=1.0 - ALPHA,
        rng=np.random.default_rng(3),
    )
    assert max(small, large) <= upper
    slack = 6.0 * math.sqrt(0.25 / n)
    assert estimate <= (m - 1) * small + large + slack


def test_delta_saturates_at_one() -> None:
    # Tiny k: the draw sits on a vertex, so some coordinate is always < τ.
    estimate, upper = dirichlet_delta_estimate(
        k=1e-3, eta=0.1, tau=0.09, num_actions=2, num_samples=1000, rng=np.random.default_rng(4)
    )
    assert estimate == 1.0 and upper == 1.0


def test_dirichlet_privacy_combines_both() -> None:
    kwargs = {"k": 5.0, "eta": 0.1, "tau": 1e-3, "num_actions": 6}
    privacy = dirichlet_privacy(
        lipschitz=0.5, adjacency=0.01, num_samples=10_000, rng=np.random.default_rng(5), **kwargs
    )
    assert isinstance(privacy, DirichletPrivacy) and privacy.k == 5.0
    assert privacy.epsilon == dirichlet_epsilon(lipschitz=0.5, adjacency=0.01, **kwargs)
    assert privacy.delta == dirichlet_delta(
        num_samples=10_000, rng=np.random.default_rng(5), **kwargs
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        privacy.epsilon = 0.0  # type: ignore[misc]


GOOD = {"k": 5.0, "eta": 0.1, "tau": 1e-3, "lipschitz": 1.0, "adjacency": 0.1, "num_actions": 6}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("k", 0.0),
        ("k", -1.0),
        ("k", math.inf),
        ("k", math.nan),
        ("eta", 0.0),
        ("eta", 1.0 / 6.0),
        ("eta", 0.5),
        ("eta", "0.1"),
        ("tau", 0.0),
        ("tau", 0.1),
        ("tau", 0.2),
        ("tau", -1e-3),
        ("lipschitz", -1.0),
        ("lipschitz", math.inf),
        ("adjacency", -0.1),
        ("adjacency", math.nan),
        ("num_actions", 1),
        ("num_actions", 6.0),
        ("num_actions", True),
    ],
)
def test_invalid_arguments_name_the_argument(key: str, value: object) -> None:
    bad = {**GOOD, key: value}
    with pytest.raises(ValueError, match=key):
        dirichlet_epsilon(**bad)
    if key not in ("lipschitz", "adjacency"):
        del bad["lipschitz"], bad["adjacency"]
        with pytest.raises(ValueError, match=key):
            dirichlet_delta(**bad, num_samples=10, rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    ("key", "value"),
    [("num_samples", 0), ("num_samples", 10.0), ("confidence", 0.0), ("confidence", 1.0)],
)
def test_invalid_monte_carlo_arguments(key: str, value: object) -> None:
    kwargs = {"k": 5.0, "eta": 0.1, "tau": 1e-3, "num_actions": 6, "num_samples": 10, key: value}
    with pytest.raises(ValueError, match=key):
        dirichlet_delta(**kwargs, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        dirichlet_delta(k=5.0, eta=0.1, tau=1e-3, num_actions=6, num_samples=10, rng=3)


@pytest.mark.parametrize("k", [0.5, 5.0, 100.0])
@pytest.mark.parametrize("eta", [0.01, 0.3])
def test_vertex_is_the_worst_case_for_two_actions(k: float, eta: float) -> None:
    # Eq. 6 evaluates δ at a vertex of Δ_{m,η} (paper eq. 8-11); check that no other input
    # p ∈ Δ_{2,η} has a larger P(min_i x_i < τ), exactly, for m = 2.
    for tau in (eta / 100, eta / 2, 0.99 * eta):
        p = np.linspace(eta, 1.0 - eta, 2001)
        outside = stats.beta.cdf(tau, k * p, k * (1 - p)) + stats.beta.sf(
            1 - tau, k * p, k * (1 - p)
        )
        assert outside.max() <= exact_delta_two_actions(k, eta, tau) * (1 + 1e-9)


# ---- union bound ---------------------------------------------------------------------


def test_union_bound_is_exact_for_two_actions() -> None:
    from scipy import stats as scipy_stats

    from rllib_privacy.accounting import dirichlet_delta_union_bound

    k, eta, tau = 20.0, 0.1, 1e-3
    exact = scipy_stats.beta.cdf(tau, k * eta, k * (1 - eta)) + scipy_stats.beta.sf(
        1 - tau, k * eta, k * (1 - eta)
    )
    bound = dirichlet_delta_union_bound(k=k, eta=eta, tau=tau, num_actions=2)
    assert bound == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize(
    ("k", "eta", "tau"), [(5.0, 0.1, 1e-3), (5.0, 0.05, 1e-2), (20, 0.1, 0.01)]
)
def test_union_bound_covers_the_monte_carlo_estimate_for_six_actions(
    k: float, eta: float, tau: float
) -> None:
    from rllib_privacy.accounting import dirichlet_delta_union_bound

    estimate, _ = dirichlet_delta_estimate(
        k=k, eta=eta, tau=tau, num_actions=6, num_samples=200_000, rng=np.random.default_rng(3)
    )
    bound = dirichlet_delta_union_bound(k=k, eta=eta, tau=tau, num_actions=6)
    # The bound must be >= the true δ; the estimate's standard error sets the slack.
    slack = 4 * np.sqrt(max(estimate * (1 - estimate), 1e-12) / 200_000)
    assert bound >= estimate - slack
    # ... and it is the smaller bound that dirichlet_delta reports.
    reported = dirichlet_delta(
        k=k, eta=eta, tau=tau, num_actions=6, num_samples=20_000, rng=np.random.default_rng(4)
    )
    assert reported <= bound + 1e-15


def test_union_bound_certifies_deltas_monte_carlo_cannot() -> None:
    from rllib_privacy.accounting import dirichlet_delta_union_bound

    bound = dirichlet_delta_union_bound(k=50.0, eta=0.1, tau=1e-3, num_actions=2)
    assert 0.0 < bound < 1e-8
    reported = dirichlet_delta(
        k=50.0, eta=0.1, tau=1e-3, num_actions=2, num_samples=100_000, rng=np.random.default_rng(0)
    )
    assert reported == bound
