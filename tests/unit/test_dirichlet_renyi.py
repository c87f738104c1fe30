"""Tests for the Rényi DP of the Dirichlet mechanism (rllib_privacy.accounting.dirichlet_renyi)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import integrate, optimize, special

import rllib_privacy.accounting
from rllib_privacy.accounting.dirichlet_renyi import (
    DEFAULT_ORDERS,
    __all__,
    _coordinate_maxima,
    _max_plus_knapsack,
    _relaxed_bound,
    compose_dirichlet_rdp,
    dirichlet_rdp,
    dirichlet_rdp_max_order,
    dirichlet_renyi_divergence,
    rdp_to_epsilon,
)


def test_public_functions_are_exported_by_the_accounting_package() -> None:
    for name in __all__:
        assert getattr(rllib_privacy.accounting, name) is globals()[name]


def divergence(order: float, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Closed form written out independently (broadcasts over leading axes; last axis = m)."""
    mixed = order * p + (1.0 - order) * q

    def log_beta(v: np.ndarray) -> np.ndarray:
        return special.gammaln(v).sum(axis=-1) - special.gammaln(v.sum(axis=-1))

    with np.errstate(invalid="ignore"):
        value = (log_beta(mixed) - order * log_beta(p) - (1.0 - order) * log_beta(q)) / (
            order - 1.0
        )
    return np.where(np.all(mixed > 0.0, axis=-1), value, np.inf)


def beta_log_density(x: float, shape: tuple[float, float]) -> float:
    return (
        (shape[0] - 1.0) * math.log(x)
        + (shape[1] - 1.0) * math.log1p(-x)
        - float(special.betaln(*shape))
    )


@pytest.mark.parametrize(
    ("order", "p", "q"),
    [
        (2.0, (2.0, 3.0), (3.0, 2.5)),
        (1.05, (0.25, 4.75), (0.6035, 4.3964)),  # k = 5, η = 0.05: shapes below 1
        (5.0, (10.0, 40.0), (11.0, 39.0)),
        (1.5, (1.2, 0.7), (0.9, 1.0)),
    ],
)
def test_closed_form_matches_quadrature_for_beta(
    order: float, p: tuple[float, float], q: tuple[float, float]
) -> None:
    def integrand(x: float) -> float:
        return math.exp(order * beta_log_density(x, p) + (1.0 - order) * beta_log_density(x, q))

    integral, error = integrate.quad(integrand, 0.0, 1.0, limit=200, epsabs=0.0, epsrel=1e-12)
    numeric = math.log(integral) / (order - 1.0)
    # |Δ ln I| <= err/(I − err); the divergence divides it by (a − 1).
    tolerance = 10.0 * error / (integral - error) / (order - 1.0) + 1e-12
    assert dirichlet_renyi_divergence(order, p, q) == pytest.approx(numeric, abs=tolerance)
    assert tolerance < 1e-6


def test_closed_form_matches_quadrature_for_three_actions() -> None:
    order, p, q = 1.5, np.array([2.0, 3.0, 2.5]), np.array([2.6, 2.2, 2.7])

    def log_density(x: float, y: float, shape: np.ndarray) -> float:
        z = 1.0 - x - y
        if z <= 0.0:
            return -math.inf
        logs = np.log([x, y, z])
        return float(
            np.dot(shape - 1.0, logs) - special.gammaln(shape).sum() + special.gammaln(shape.sum())
        )

    def integrand(y: float, x: float) -> float:
        return math.exp(order * log_density(x, y, p) + (1.0 - order) * log_density(x, y, q))

    integral, error = integrate.dblquad(
        integrand, 0.0, 1.0, 0.0, lambda x: 1.0 - x, epsabs=1e-11, epsrel=1e-11
    )
    numeric = math.log(integral) / (order - 1.0)
    # dblquad's estimate covers the outer integral; the inner ones are held to epsabs/epsrel.
    tolerance = (10.0 * error + 1e-10) / integral / (order - 1.0)
    assert dirichlet_renyi_divergence(order, p, q) == pytest.approx(numeric, abs=tolerance)
    assert abs(numeric - float(divergence(order, p, q))) <= tolerance
    assert tolerance < 1e-7


def test_divergence_is_nonnegative_zero_on_the_diagonal_and_grows_with_the_order() -> None:
    rng = np.random.default_rng(0)
    orders = np.array([1.01, 1.1, 1.5, 2.0, 3.0, 8.0, 32.0])
    for _ in range(50):
        m = int(rng.integers(2, 7))
        p = rng.gamma(2.0, 2.0, size=m) + 0.05
        q = rng.gamma(2.0, 2.0, size=m) + 0.05
        values = np.array([dirichlet_renyi_divergence(a, p, q) for a in orders])
        assert np.all(values >= 0.0)
        assert dirichlet_renyi_divergence(float(rng.uniform(1.01, 20.0)), p, p) == 0.0
        finite = values[np.isfinite(values)]
        assert np.all(np.diff(finite) >= -1e-9 * np.maximum(1.0, finite[1:]))
        # Infinite exactly from the first order where a·p + (1−a)·q leaves the positive orthant.
        beyond = (p / (q - p))[q > p]
        if beyond.size:
            limit = 1.0 + float(beyond.min())
            assert math.isinf(dirichlet_renyi_divergence(limit * 1.0001, p, q))
            assert math.isfinite(dirichlet_renyi_divergence(1.0 + (limit - 1.0) * 0.999, p, q))


def test_fixed_first_policy_divergence_grows_with_the_displacement() -> None:
    """m = 2: for fixed t the supremum over t' sits at the extreme t' (module docstring)."""
    k, eta, order = 5.0, 0.05, 1.4
    for t in np.linspace(eta, 1.0 - eta, 13):
        upward = np.linspace(t, min(1.0 - eta, t + 0.3), 200)
        downward = np.linspace(t, max(eta, t - 0.3), 200)
        for path in (upward, downward):
            x = k * np.array([t, 1.0 - t])
            xp = k * np.stack([path, 1.0 - path], axis=-1)
            values = divergence(order, x, xp)
            finite = values[np.isfinite(values)]
            assert finite[0] == pytest.approx(0.0, abs=1e-12)
            assert np.all(np.diff(finite) >= -1e-12)


@pytest.mark.parametrize(
    ("k", "eta", "radius"),
    [(5.0, 0.05, 0.1), (100.0, 0.2, 0.3), (0.3, 0.1, 0.5), (2.0, 0.4, 0.3), (20.0, 0.05, 2.0)],
)
def test_two_action_supremum_matches_a_grid_search(k: float, eta: float, radius: float) -> None:
    a_max = dirichlet_rdp_max_order(eta=eta, radius=radius, num_actions=2)
    orders = [1.0 + f * min(a_max - 1.0, 10.0) for f in (0.05, 0.5, 0.9)]
    ours = dirichlet_rdp(orders, k=k, eta=eta, radius=radius, num_actions=2)
    # Brute force over the admissible band |t − t'|·√2 <= radius, with no structure assumed.
    t = np.linspace(eta, 1.0 - eta, 301)
    tt, tp = np.meshgrid(t, t, indexing="ij")
    admissible = np.abs(tt - tp) * math.sqrt(2.0) <= radius + 1e-15
    x = k * np.stack([tt, 1.0 - tt], axis=-1)[admissible]
    xp = k * np.stack([tp, 1.0 - tp], axis=-1)[admissible]
    s = min(radius / math.sqrt(2.0), 1.0 - 2.0 * eta)
    for order, value in zip(orders, ours, strict=True):
        assert np.max(divergence(order, x, xp)) <= value * (1.0 + 1e-12)

        # A dense 1-D search along the extreme displacement, polished by a bounded search,
        # comes within the documented tolerance from below.
        def along(u: float, order: float = order) -> float:
            pair = k * np.array([[u, 1.0 - u], [u + s, 1.0 - u - s]])
            return float(divergence(order, pair[0], pair[1]))

        grid = np.linspace(eta, max(eta, 1.0 - eta - s), 2001)
        values = [along(u) for u in grid]
        best = max(values)
        j = int(np.argmax(values))
        lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)]
        if hi > lo:
            polished = optimize.minimize_scalar(
                lambda u, f=along: -f(u),
                bounds=(lo, hi),
                method="bounded",
                options={"xatol": 1e-12},
            )
            best = max(best, -polished.fun)
        assert best <= value * (1.0 + 1e-12)
        assert value - best <= 1e-8 * max(1.0, best)


def _structured_pairs(eta: float, radius: float, m: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Adversarial starts: a coordinate at η moving up by d_max (and back), a two-way swap."""
    d1 = min(radius * math.sqrt((m - 1) / m), 1.0 - m * eta)
    x = np.full(m, eta + d1 / (m - 1))
    x[0] = eta
    x[-1] = 1.0 - x[:-1].sum()
    xp = x - d1 / (m - 1)
    xp[0] = eta + d1
    d2 = min(radius / math.sqrt(2.0), 1.0 - m * eta)
    y = np.full(m, eta)
    y[1] = eta + d2
    y[-1] = 1.0 - y[:-1].sum()
    yp = y.copy()
    yp[[0, 1]] = y[[1, 0]]
    return [(x, xp), (xp, x), (y, yp)]


def _polish(
    order: float, k: float, eta: float, radius: float, x: np.ndarray, xp: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """SLSQP ascent of the divergence over admissible pairs; None if it ends infeasible."""
    m = x.size
    upper = 1.0 - (m - 1) * eta

    def negative(z: np.ndarray) -> tuple[float, np.ndarray]:
        p, q = k * z[:m], k * z[m:]
        w = order * p + (1.0 - order) * q
        if np.any(w <= 0.0):
            return 1e6, np.zeros(2 * m)
        value = float(divergence(order, p, q))
        grad_p = k * order * (special.digamma(w) - special.digamma(p)) / (order - 1.0)
        grad_q = -k * (special.digamma(w) - special.digamma(q))
        return -value, -np.concatenate([grad_p, grad_q])

    first = np.concatenate([np.ones(m), np.zeros(m)])
    constraints = [
        {"type": "eq", "fun": lambda z: z[:m].sum() - 1.0, "jac": lambda z: first},
        {"type": "eq", "fun": lambda z: z[m:].sum() - 1.0, "jac": lambda z: first[::-1]},
        {
            "type": "ineq",
            "fun": lambda z: radius**2 - np.sum((z[:m] - z[m:]) ** 2),
            "jac": lambda z: np.concatenate([-2.0 * (z[:m] - z[m:]), 2.0 * (z[:m] - z[m:])]),
        },
    ]
    result = optimize.minimize(
        negative,
        np.concatenate([x, xp]),
        jac=True,
        method="SLSQP",
        bounds=[(eta, upper)] * (2 * m),
        constraints=constraints,
        options={"maxiter": 200, "ftol": 1e-14},
    )
    z = np.clip(result.x, eta, upper)
    x, xp = z[:m], z[m:]
    distance = np.linalg.norm(xp - x)
    if distance > radius:
        xp = x + (xp - x) * (radius / distance)
    if abs(x.sum() - 1.0) > 1e-12 or abs(xp.sum() - 1.0) > 1e-12:
        return None
    return x, xp


@pytest.mark.parametrize("m", [3, 4, 6])
@pytest.mark.parametrize(("k", "eta", "radius"), [(5.0, 0.05, 0.1), (20.0, 0.1, 0.2)])
def test_many_action_bound_is_never_below_an_admissible_pair(
    m: int, k: float, eta: float, radius: float
) -> None:
    rng = np.random.default_rng(m)
    upper = 1.0 - (m - 1) * eta
    a_max = dirichlet_rdp_max_order(eta=eta, radius=radius, num_actions=m)
    orders = [1.0 + 0.3 * (a_max - 1.0), 1.0 + 0.8 * (a_max - 1.0)]
    bounds = dirichlet_rdp(orders, k=k, eta=eta, radius=radius, num_actions=m)
    # Random admissible pairs: x in Δ_{m,η}, a random zero-sum step of length <= radius.
    x = eta + (1.0 - m * eta) * rng.dirichlet(np.full(m, 0.5), size=4000)
    step = rng.normal(size=(4000, m))
    step -= step.mean(axis=1, keepdims=True)
    step *= (radius * rng.uniform(0.0, 1.0, size=(4000, 1)) ** 0.25) / np.linalg.norm(
        step, axis=1, keepdims=True
    )
    xp = x + step
    inside = np.all((xp >= eta) & (xp <= upper), axis=1)
    assert inside.sum() > 100
    starts = _structured_pairs(eta, radius, m)
    starts += [(x[i], xp[i]) for i in np.flatnonzero(inside)[:4]]
    for order, bound in zip(orders, bounds, strict=True):
        random_best = float(np.max(divergence(order, k * x[inside], k * xp[inside])))
        found = [random_best] + [float(divergence(order, k * a, k * b)) for a, b in starts]
        for a, b in starts:
            polished = _polish(order, k, eta, radius, a, b)
            if polished is not None:
                assert np.linalg.norm(polished[1] - polished[0]) <= radius * (1.0 + 1e-12)
                found.append(float(divergence(order, k * polished[0], k * polished[1])))
        best = max(found)
        assert best <= bound
        # How loose (module docstring): within about m/(m−1) of the best pair found.
        assert bound <= best * (m / (m - 1) + 0.1)


@pytest.mark.parametrize(
    ("n", "budget", "items"), [(4, 0, 3), (5, 3, 2), (6, 7, 3), (5, 9, 3), (4, 20, 4), (3, 5, 1)]
)
def test_knapsack_matches_brute_force_over_every_allocation(
    n: int, budget: int, items: int
) -> None:
    rng = np.random.default_rng(n * 100 + budget * 10 + items)
    values = np.maximum.accumulate(rng.exponential(size=(5, n)), axis=1)
    expected = [
        max(
            sum(row[w] for w in picks)
            for picks in itertools.product(range(n), repeat=items)
            if sum(picks) <= budget
        )
        for row in values
    ]
    np.testing.assert_allclose(_max_plus_knapsack(values, budget, items), expected, rtol=1e-12)


def test_relaxed_bound_stops_growing_once_every_coordinate_takes_its_largest_move() -> None:
    # A radius far above 1 − mη (a steep teacher, η near 1/m) made the knapsack's budget tens of
    # thousands of grid units; every coordinate then takes its largest move.
    orders = np.array([1.05, 1.5, 2.0])
    bound = _relaxed_bound(orders, 5.0, 0.16, 0.5, 6)
    single = _relaxed_bound(orders, 5.0, 0.16, 0.04 * math.sqrt(6 / 5), 6)
    assert np.all(np.isfinite(bound))
    # Once the radius is past the point where it binds, a larger radius changes nothing.
    np.testing.assert_allclose(bound, _relaxed_bound(orders, 5.0, 0.16, 5.0, 6), rtol=1e-12)
    assert np.all(bound >= single)


@pytest.mark.parametrize("seed", range(6))
def test_coordinate_maxima_match_a_dense_search_over_the_box(seed: int) -> None:
    # The closed form puts the pair's lower point at η (the digamma is concave); a dense grid
    # over every lower point l in the box, written out independently, must never beat it.
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 7))
    eta = float(rng.uniform(0.01, 0.95 / m))
    k = float(rng.choice([0.3, 2.0, 20.0, 300.0]))
    d_top = (1.0 - m * eta) * float(rng.uniform(0.05, 1.0))
    displacements = np.array([d_top * 1e-3, d_top * 0.3, d_top])
    limit = 1.0 + eta / d_top
    orders = 1.0 + (limit - 1.0) * np.array([0.05, 0.5, 0.95])
    closed = _coordinate_maxima(orders, k, eta, displacements)
    upper = 1.0 - (m - 1) * eta
    for i, a in enumerate(orders):
        for j, d in enumerate(displacements):
            lower_points = np.linspace(eta, upper - d, 2001)
            up = (
                special.gammaln(k * (lower_points - (a - 1.0) * d))
                - a * special.gammaln(k * lower_points)
                + (a - 1.0) * special.gammaln(k * (lower_points + d))
            )
            down = (
                special.gammaln(k * (lower_points + a * d))
                - a * special.gammaln(k * (lower_points + d))
                + (a - 1.0) * special.gammaln(k * lower_points)
            )
            best = max(up.max(), down.max())
            slack = 1e-12 * (1.0 + abs(special.gammaln(k * eta)) * a)
            assert best <= closed[i, j] + slack
            assert closed[i, j] <= best + slack


def test_relaxed_bound_lies_above_the_exact_two_action_supremum() -> None:
    orders = np.array([1.05, 1.2, 1.5, 1.65])
    exact = dirichlet_rdp(orders, k=5.0, eta=0.05, radius=0.1, num_actions=2)
    relaxed = _relaxed_bound(orders, 5.0, 0.05, 0.1, 2)
    assert np.all(relaxed >= exact)
    assert np.all(relaxed <= 2.5 * exact)


@pytest.mark.parametrize("m", [2, 3, 6])
def test_monotone_in_k_and_radius_and_zero_at_radius_zero(m: int) -> None:
    orders = np.array([1.02, 1.1, 1.3])
    eta = 0.05
    by_k = np.array(
        [
            dirichlet_rdp(orders, k=k, eta=eta, radius=0.1, num_actions=m)
            for k in (0.1, 0.5, 1.0, 2.0, 5.0, 20.0, 100.0)
        ]
    )
    assert np.all(np.isfinite(by_k))
    assert np.all(np.diff(by_k, axis=0) >= -1e-9 * by_k[1:])
    by_radius = np.array(
        [
            dirichlet_rdp(orders, k=5.0, eta=eta, radius=r, num_actions=m)
            for r in (0.0, 0.01, 0.03, 0.06, 0.1)
        ]
    )
    assert np.all(by_radius[0] == 0.0)
    assert np.all(by_radius[1] > 0.0)
    assert np.all(np.diff(by_radius, axis=0) >= -1e-9 * by_radius[1:])


@pytest.mark.parametrize("m", [2, 3, 5])
def test_curve_is_infinite_exactly_from_the_max_order(m: int) -> None:
    eta, radius = 0.05, 0.1
    a_max = dirichlet_rdp_max_order(eta=eta, radius=radius, num_actions=m)
    d_max = min(radius * math.sqrt((m - 1) / m), 1.0 - m * eta)
    assert a_max == pytest.approx(1.0 + eta / d_max)
    values = dirichlet_rdp(
        [a_max - 1e-6, a_max, a_max + 0.5], k=3.0, eta=eta, radius=radius, num_actions=m
    )
    assert math.isfinite(values[0]) and values[0] > 0.0
    assert math.isinf(values[1]) and math.isinf(values[2])
    assert dirichlet_rdp_max_order(eta=eta, radius=0.0, num_actions=m) == math.inf


def test_composition_adds_releases_and_counts_equal_repeats() -> None:
    orders = np.array([1.05, 1.2, 1.5])
    common = {"eta": 0.05, "radius": 0.1, "num_actions": 2}
    one = {k: dirichlet_rdp(orders, k=k, **common) for k in (5.0, 4.5, 4.05)}
    expected = 3 * one[5.0] + 2 * one[4.5] + one[4.05]
    sequence = [5.0, 4.5, 5.0, 4.05, 4.5, 5.0]
    assert np.allclose(compose_dirichlet_rdp(orders, sequence, **common), expected, rtol=1e-12)
    mapping = {5.0: 3, 4.5: 2, 4.05: 1}
    assert np.allclose(compose_dirichlet_rdp(orders, mapping, **common), expected, rtol=1e-12)
    assert np.all(compose_dirichlet_rdp(orders, [], **common) == 0.0)
    # 10⁵ releases over 5 distinct k cost 5 evaluations.
    many = np.repeat([5.0, 4.5, 4.05, 3.645, 3.2805], 20_000)
    total = compose_dirichlet_rdp(orders, many, **common)
    single = [dirichlet_rdp(orders, k=k, **common) for k in np.unique(many)]
    assert np.allclose(total, 20_000 * np.sum(single, axis=0), rtol=1e-12)
    # An order past the finite range stays infinite after composition.
    assert math.isinf(compose_dirichlet_rdp([2.0], mapping, **common)[0])


def test_rdp_to_epsilon_matches_dp_accounting() -> None:
    orders = np.array(rdp_privacy_accountant.DEFAULT_RDP_ORDERS, dtype=float)
    dirichlet_orders = np.array([o for o in DEFAULT_ORDERS if o > 1.01])
    curves = [
        (
            dirichlet_orders,
            compose_dirichlet_rdp(
                dirichlet_orders,
                {5.0 * 0.9**j: 1000 for j in range(3)},
                eta=0.05,
                radius=0.1,
                num_actions=2,
            ),
        ),
        (orders, orders / (2.0 * 3.0**2) * 50),  # 50 Gaussian releases, σ = 3
        (orders, np.full(orders.size, 1e-12)),  # the KL branch: ε = 0
    ]
    for delta in (1e-5, 1e-3):
        for curve_orders, curve in curves:
            finite = np.isfinite(curve)
            theirs, _ = rdp_privacy_accountant.compute_epsilon(
                list(curve_orders[finite]), list(curve[finite]), delta
            )
            ours = rdp_to_epsilon(curve_orders, curve, delta)
            assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-12)
            assert rdp_to_epsilon(curve_orders, curve, delta, conversion="standard") >= ours
    # The accountant's own composition of a Gaussian event gives the same ε from its curve.
    accountant = rdp_privacy_accountant.RdpAccountant(list(orders))
    accountant.compose(dp_event.GaussianDpEvent(3.0), 50)
    assert rdp_to_epsilon(orders, curves[1][1], 1e-5) == pytest.approx(
        accountant.get_epsilon(1e-5), rel=1e-12
    )
    # Orders at or below 1.01 (where dp_accounting gives up) can only help.
    low = np.array([1.001, 1.005, 1.01, 1.1, 2.0])
    curve = np.array([0.001, 0.002, 0.003, 0.5, 3.0])
    theirs, _ = rdp_privacy_accountant.compute_epsilon(list(low), list(curve), 1e-5)
    assert rdp_to_epsilon(low, curve, 1e-5) <= theirs
    assert rdp_to_epsilon([1.5, 2.0], [math.inf, math.inf], 1e-5) == math.inf


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: dirichlet_rdp([1.0], k=1.0, eta=0.1, radius=0.1, num_actions=2), "orders"),
        (lambda: dirichlet_rdp([math.inf], k=1.0, eta=0.1, radius=0.1, num_actions=2), "orders"),
        (lambda: dirichlet_rdp([2.0], k=0.0, eta=0.1, radius=0.1, num_actions=2), "k"),
        (lambda: dirichlet_rdp([2.0], k=math.inf, eta=0.1, radius=0.1, num_actions=2), "k"),
        (lambda: dirichlet_rdp([2.0], k=1.0, eta=0.5, radius=0.1, num_actions=2), "eta"),
        (lambda: dirichlet_rdp([2.0], k=1.0, eta=0.0, radius=0.1, num_actions=2), "eta"),
        (lambda: dirichlet_rdp([2.0], k=1.0, eta=0.1, radius=-0.1, num_actions=2), "radius"),
        (lambda: dirichlet_rdp([2.0], k=1.0, eta=0.1, radius=math.nan, num_actions=2), "radius"),
        (lambda: dirichlet_rdp([2.0], k=1.0, eta=0.1, radius=0.1, num_actions=1), "num_actions"),
        (lambda: dirichlet_rdp([2.0], k=1.0, eta=0.1, radius=0.1, num_actions=2.0), "num_actions"),
        (lambda: dirichlet_renyi_divergence(1.0, [1, 2], [2, 1]), "alpha_order"),
        (lambda: dirichlet_renyi_divergence(2.0, [1, 0], [2, 1]), "p"),
        (
            lambda: compose_dirichlet_rdp([2.0], [1.0, -1.0], eta=0.1, radius=0.1, num_actions=2),
            "ks",
        ),
        (lambda: rdp_to_epsilon([2.0], [1.0], 0.0), "delta"),
        (lambda: rdp_to_epsilon([2.0], [-1.0], 1e-5), "rdp"),
        (lambda: rdp_to_epsilon([2.0, 3.0], [1.0], 1e-5), "rdp"),
        (lambda: rdp_to_epsilon([2.0], [1.0], 1e-5, conversion="pld"), "conversion"),
    ],
)
def test_invalid_arguments_are_named(call: object, name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name}"):
        call()  # type: ignore[operator]


def test_small_k_tends_to_the_lngamma_pole_limit_not_to_zero() -> None:
    """As k → 0, ε(a) tends to a positive floor, not to 0.

    lnΓ(z) ≈ −ln z makes k cancel: along the extreme displacement, ε(a) tends to
    max_t Σ_i ln(x_i^a·x'_i^(1−a)/(a·x_i + (1−a)·x'_i))/(a − 1).
    """
    eta, radius, order = 0.05, 0.1, 1.05
    s = radius / math.sqrt(2.0)
    t = np.linspace(eta, 1.0 - eta - s, 20001)
    x = np.stack([t, 1.0 - t], axis=-1)
    xp = np.stack([t + s, 1.0 - t - s], axis=-1)
    mixed = order * x + (1.0 - order) * xp
    limit = np.max(
        np.sum(order * np.log(x) + (1.0 - order) * np.log(xp) - np.log(mixed), axis=-1)
        / (order - 1.0)
    )
    tiny = dirichlet_rdp([order], k=1e-7, eta=eta, radius=radius, num_actions=2)[0]
    assert tiny == pytest.approx(limit, rel=1e-5)
    assert 0.5 < tiny < dirichlet_rdp([order], k=5.0, eta=eta, radius=radius, num_actions=2)[0]
