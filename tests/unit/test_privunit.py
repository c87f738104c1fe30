"""PrivUnitG (Asi et al. 2022), PrivUnit2 (Bhowmick et al. 2018) and their GradientMechanism.

Statistical checks are seeded; every tolerance is derived from the sample size: ``Z_BOUND``
(6) standard errors of a mean or a proportion, computed from closed-form variances where
they exist (or a closed-form upper bound), else from the sample's own standard deviation;
KS tests at ``ALPHA``. With a seed the verdicts are deterministic; across seeds each check
fails spuriously with probability about 2e-9 (normal approximation) or ``ALPHA``.

The reference values (γ, MSE/C² at d = 112) and the formulas used as an independent check
(``design_g``, ``design_2``: direct, not log-space) are written from the two papers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms import (
    MECHANISM_NAMES,
    GradientMechanism,
    laplace_gradient,
    privunit2,
    privunit2_mse,
    privunit2_optimal_gamma,
    privunit2_rows,
    privunit2_scale,
    privunitg,
    privunitg_mse,
    privunitg_optimal_gamma,
    privunitg_rows,
    privunitg_scale,
    projected_random_sign,
)

Z_BOUND = 6.0
ALPHA = 1e-6
CLIP = 0.5

MECHANISMS = {
    "privunitg": (privunitg, privunitg_rows, privunitg_mse, privunitg_scale),
    "privunit2": (privunit2, privunit2_rows, privunit2_mse, privunit2_scale),
}


def design_g(epsilon: float, dim: int, gamma: float) -> tuple[float, float, float, float]:
    """PrivUnitG straight from Asi et al. 2022: (q, p, m, MSE/C²), no log space."""
    q = float(stats.norm.cdf(-gamma))
    e = math.exp(epsilon)
    p = e * q / (1 + (e - 1) * q)
    phi = float(stats.norm.pdf(gamma))
    m = phi * (e - 1) / (1 + (e - 1) * q)
    second = p * (1 + gamma * phi / q) + (1 - p) * (1 - gamma * phi / (1 - q))
    return q, p, m, (second + dim - 1) / m**2 - 1


def design_2(epsilon: float, dim: int, gamma: float) -> tuple[float, float, float, float]:
    """PrivUnit2 straight from Bhowmick et al. 2018: (q, p, m, MSE/C²), no log space."""
    a = (dim - 1) / 2
    q = 1 - float(special.betainc(a, a, (1 + gamma) / 2))
    e = math.exp(epsilon)
    p = e * q / (1 + (e - 1) * q)
    c_d = math.gamma(dim / 2) / (math.sqrt(math.pi) * math.gamma((dim - 1) / 2))
    m = (p / q - (1 - p) / (1 - q)) * c_d * (1 - gamma**2) ** ((dim - 1) / 2) / (dim - 1)
    return q, p, m, 1 / m**2 - 1


DESIGN = {"privunitg": design_g, "privunit2": design_2}
OPTIMAL_GAMMA = {"privunitg": privunitg_optimal_gamma, "privunit2": privunit2_optimal_gamma}


def unit(dim: int, index: int = 0) -> np.ndarray:
    vector = np.zeros(dim)
    vector[index] = 1.0
    return vector


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize(
    ("epsilon", "gamma", "mse_g", "mse_2"),
    [(1.0, 0.396, 709.0, 705.0), (4.0, 1.51, 48.7, 48.0)],
)
def test_design_values_at_d112(epsilon: float, gamma: float, mse_g: float, mse_2: float) -> None:
    assert privunitg_optimal_gamma(epsilon, 112) == pytest.approx(gamma, abs=2e-3)
    assert privunitg_mse(epsilon, 112) == pytest.approx(mse_g, abs=0.5)
    assert privunit2_mse(epsilon, 112) == pytest.approx(mse_2, abs=0.5)
    # Same numbers from the direct (non-log-space) formulas at the optimal γ.
    assert design_g(epsilon, 112, privunitg_optimal_gamma(epsilon, 112))[3] == pytest.approx(
        privunitg_mse(epsilon, 112), rel=1e-9
    )
    assert design_2(epsilon, 112, privunit2_optimal_gamma(epsilon, 112))[3] == pytest.approx(
        privunit2_mse(epsilon, 112), rel=1e-9
    )


def test_design_values_to_more_digits() -> None:
    # Measured with this implementation and cross-checked with design_g/design_2 above.
    assert privunitg_mse(1.0, 112) == pytest.approx(708.962, abs=1e-3)
    assert privunitg_mse(4.0, 112) == pytest.approx(48.7537, abs=1e-4)
    assert privunit2_mse(1.0, 112) == pytest.approx(705.308, abs=1e-3)
    assert privunit2_mse(4.0, 112) == pytest.approx(48.0416, abs=1e-4)
    assert privunit2_optimal_gamma(1.0, 112) == pytest.approx(0.03763, abs=1e-4)
    assert privunit2_optimal_gamma(4.0, 112) == pytest.approx(0.14280, abs=1e-4)


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
@pytest.mark.parametrize(("epsilon", "dim"), [(0.5, 3), (1.0, 112), (4.0, 112), (8.0, 1000)])
def test_optimal_gamma_is_a_minimum(name: str, epsilon: float, dim: int) -> None:
    mse = MECHANISMS[name][2]
    gamma = OPTIMAL_GAMMA[name](epsilon, dim)
    best = mse(epsilon, dim)
    assert best == pytest.approx(mse(epsilon, dim, gamma), rel=1e-12)
    for shift in (1e-3, 1e-2, 0.1):
        for candidate in (gamma - shift * max(gamma, 0.01), gamma + shift * max(gamma, 0.01)):
            if 0.0 <= candidate < (1.0 if name == "privunit2" else 30.0):
                assert mse(epsilon, dim, candidate) >= best * (1 - 1e-12)


def test_privunit2_beats_privunitg_at_every_epsilon() -> None:
    for epsilon in (0.25, 0.5, 1.0, 2.0, 4.0, 8.0):
        assert privunit2_mse(epsilon, 112) < privunitg_mse(epsilon, 112)


def test_closed_forms_match_numerical_integration() -> None:
    epsilon, dim, gamma = 1.5, 5, 0.3
    # PrivUnit2: t = <z, u> has density c_d (1 - t²)^{(d-3)/2} on [-1, 1].
    c_d = math.gamma(dim / 2) / (math.sqrt(math.pi) * math.gamma((dim - 1) / 2))

    def density(t: float) -> float:
        return c_d * (1 - t * t) ** ((dim - 3) / 2)

    q = integrate.quad(density, gamma, 1)[0]
    p = q / (q + math.exp(-epsilon) * (1 - q))
    tail = integrate.quad(lambda t: t * density(t), gamma, 1)[0]
    m = p / q * tail - (1 - p) / (1 - q) * tail  # E[t | cap]·p + E[t | not cap]·(1 - p)
    assert privunit2_scale(epsilon, dim, gamma) == pytest.approx(m, rel=1e-10)
    assert privunit2_mse(epsilon, dim, gamma) == pytest.approx(1 / m**2 - 1, rel=1e-9)
    # PrivUnitG: truncated normal moments from scipy.stats.truncnorm.
    q = float(stats.norm.sf(gamma))
    p = q / (q + math.exp(-epsilon) * (1 - q))
    upper, lower = stats.truncnorm(gamma, np.inf), stats.truncnorm(-np.inf, gamma)
    m = p * upper.mean() + (1 - p) * lower.mean()
    second = p * upper.moment(2) + (1 - p) * lower.moment(2)
    assert privunitg_scale(epsilon, dim, gamma) == pytest.approx(m, rel=1e-10)
    assert privunitg_mse(epsilon, dim, gamma) == pytest.approx(
        (second + dim - 1) / m**2 - 1, rel=1e-9
    )


@pytest.mark.parametrize("dim", [1, 2, 10_000, 1_000_000])
@pytest.mark.parametrize("epsilon", [1e-3, 1.0, 20.0, 200.0])
def test_closed_forms_are_finite_for_extreme_settings(epsilon: float, dim: int) -> None:
    for name in MECHANISMS:
        gamma = OPTIMAL_GAMMA[name](epsilon, dim)
        mse = MECHANISMS[name][2](epsilon, dim)
        scale = MECHANISMS[name][3](epsilon, dim)
        assert math.isfinite(gamma) and gamma >= 0.0
        assert math.isfinite(mse) and mse >= 0.0, (name, mse)
        assert math.isfinite(scale) and scale > 0.0
    assert privunit2_optimal_gamma(epsilon, dim) < 1.0
    # Neither can beat the exact requirement E‖Z‖² >= 1; at d = 1 PrivUnit2 is randomized
    # response on ±u (m = tanh(ε/2)).
    assert privunit2_scale(epsilon, 1) == pytest.approx(math.tanh(epsilon / 2), rel=1e-12)


def test_large_dimension_release_is_finite() -> None:
    dim, rng = 10_000, np.random.default_rng(1)
    grads = np.vstack([unit(dim), np.full(dim, 1e-3), np.zeros(dim)])
    for epsilon in (0.1, 20.0):
        out_g = privunitg_rows(grads, epsilon=epsilon, clip=CLIP, rng=rng)
        out_2 = privunit2_rows(grads, epsilon=epsilon, clip=CLIP, rng=rng)
        assert np.all(np.isfinite(out_g)) and np.all(np.isfinite(out_2))
        radius = CLIP / privunit2_scale(epsilon, dim)
        np.testing.assert_allclose(np.linalg.norm(out_2, axis=1), radius, rtol=1e-10)


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_unbiased_for_any_norm(name: str) -> None:
    rows_fn, mse_fn = MECHANISMS[name][1], MECHANISMS[name][2]
    epsilon, dim, n = 1.0, 6, 100_000
    rng = np.random.default_rng(11)
    direction = rng.standard_normal(dim)
    direction /= np.linalg.norm(direction)
    cases = {
        "inside": 0.6 * CLIP * direction,
        "on the sphere": CLIP * unit(dim, 2),
        "zero": np.zeros(dim),
        "clipped": 3.0 * CLIP * direction,  # released as CLIP·direction
    }
    for label, grad in cases.items():
        target = grad / max(1.0, float(np.linalg.norm(grad)) / CLIP)
        out = rows_fn(np.tile(grad, (n, 1)), epsilon=epsilon, clip=CLIP, rng=rng)
        # Closed form: the total variance is C²·E‖Z‖² - ‖ḡ‖²; it bounds each coordinate's.
        total = CLIP**2 * (mse_fn(epsilon, dim) + 1) - float(target @ target)
        tolerance = Z_BOUND * math.sqrt(total / n)
        error = np.abs(out.mean(axis=0) - target)
        assert np.all(error < tolerance), (label, error, tolerance)
    # (A wrong scale m would bias every coordinate by a fixed factor; the MSE test below
    # bounds it more tightly than this mean can.)


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
@pytest.mark.parametrize(("epsilon", "dim", "n"), [(1.0, 16, 60_000), (4.0, 112, 20_000)])
def test_mse_matches_the_closed_form(name: str, epsilon: float, dim: int, n: int) -> None:
    rows_fn, mse_fn = MECHANISMS[name][1], MECHANISMS[name][2]
    rng = np.random.default_rng(int(epsilon * 1000) + dim)
    grad = CLIP * unit(dim, 1)
    out = rows_fn(np.tile(grad, (n, 1)), epsilon=epsilon, clip=CLIP, rng=rng)
    squared = np.sum((out - grad) ** 2, axis=1) / CLIP**2
    expected = mse_fn(epsilon, dim)
    tolerance = Z_BOUND * float(squared.std()) / math.sqrt(n)
    assert abs(float(squared.mean()) - expected) < tolerance, (squared.mean(), expected)
    # Power: the tolerance is a small fraction of the value (a wrong m would show).
    assert tolerance < 0.05 * expected


@pytest.mark.parametrize("dim", [1, 2, 7, 112])
def test_privunit2_output_is_on_the_sphere_of_radius_c_over_m(dim: int) -> None:
    epsilon = 2.0
    rng = np.random.default_rng(dim)
    grads = rng.standard_normal((500, dim)) * rng.uniform(0, 2 * CLIP, size=(500, 1))
    out = privunit2_rows(grads, epsilon=epsilon, clip=CLIP, rng=rng)
    if dim == 1:
        m = math.tanh(epsilon / 2)  # randomized response on ±u
    else:
        m = design_2(epsilon, dim, privunit2_optimal_gamma(epsilon, dim))[2]
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), CLIP / m, rtol=1e-12)


def cap_probabilities(name: str, epsilon: float, dim: int, gamma: float) -> tuple[float, float]:
    """P(<Z, e₁> >= γ·C/m) on input C·e₁ and on -C·e₁, from the design formulas.

    On C·e₁ the event is the cap: p. On -C·e₁, <Z, e₁> = -t (PrivUnit2) or -α (PrivUnitG),
    so the event is {t <= -γ} (or {α <= -γ}) outside the cap, of probability
    (1 - p)·q/(1 - q) by symmetry; the ratio is (p/q)/((1 - p)/(1 - q)) = e^ε exactly.
    """
    q, p, _, _ = DESIGN[name](epsilon, dim, gamma)
    return p, (1 - p) * q / (1 - q)


def cap_z_scores(
    name: str, *, epsilon: float, dim: int, gamma: float, noise_epsilon: float, n: int, seed: int
) -> tuple[float, float]:
    """z-scores of the cap event's frequencies (n releases of ±C·e₁ run at noise_epsilon)
    against the probabilities that ε-calibration gives."""
    rows_fn = MECHANISMS[name][1]
    m = DESIGN[name](noise_epsilon, dim, gamma)[2]
    threshold = gamma * CLIP / m
    rng = np.random.default_rng(seed)
    p_a, p_b = cap_probabilities(name, epsilon, dim, gamma)
    scores = []
    for grad, prob in ((CLIP * unit(dim), p_a), (-CLIP * unit(dim), p_b)):
        out = rows_fn(np.tile(grad, (n, 1)), epsilon=noise_epsilon, clip=CLIP, gamma=gamma, rng=rng)
        frequency = float(np.mean(out[:, 0] >= threshold))
        scores.append((frequency - prob) / math.sqrt(prob * (1 - prob) / n))
    return scores[0], scores[1]


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_cap_event_has_privacy_ratio_exactly_e_epsilon(name: str) -> None:
    epsilon, dim, n = 2.0, 8, 100_000
    gamma = OPTIMAL_GAMMA[name](epsilon, dim)
    p_a, p_b = cap_probabilities(name, epsilon, dim, gamma)
    assert math.log(p_a / p_b) == pytest.approx(epsilon, abs=1e-12)
    z_a, z_b = cap_z_scores(
        name, epsilon=epsilon, dim=dim, gamma=gamma, noise_epsilon=epsilon, n=n, seed=21
    )
    assert abs(z_a) < Z_BOUND and abs(z_b) < Z_BOUND, (z_a, z_b)


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_cap_event_test_detects_a_miscalibrated_p(name: str) -> None:
    # p calibrated for ε + 0.5 (same γ): the true ratio is e^{ε+0.5}. The same test (same n)
    # must flag it: analytically the shift is > 2·Z_BOUND standard errors.
    epsilon, dim, n = 2.0, 8, 100_000
    gamma = OPTIMAL_GAMMA[name](epsilon, dim)
    p_a, p_b = cap_probabilities(name, epsilon, dim, gamma)
    wrong_a, wrong_b = cap_probabilities(name, epsilon + 0.5, dim, gamma)
    assert math.log(wrong_a / wrong_b) == pytest.approx(epsilon + 0.5, abs=1e-12)
    shift = max(
        abs(wrong_a - p_a) / math.sqrt(p_a * (1 - p_a) / n),
        abs(wrong_b - p_b) / math.sqrt(p_b * (1 - p_b) / n),
    )
    assert shift > 2 * Z_BOUND
    z_a, z_b = cap_z_scores(
        name, epsilon=epsilon, dim=dim, gamma=gamma, noise_epsilon=epsilon + 0.5, n=n, seed=22
    )
    assert max(abs(z_a), abs(z_b)) > Z_BOUND, (z_a, z_b)


# --------------------------------------------------------------------------- rows vs single


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_single_call_is_one_row(name: str) -> None:
    single_fn, rows_fn = MECHANISMS[name][0], MECHANISMS[name][1]
    grad = np.array([[0.1, -0.2], [0.05, 0.3]])
    single = single_fn(grad, epsilon=1.0, clip=CLIP, rng=np.random.default_rng(3))
    rows = rows_fn(grad.reshape(1, -1), epsilon=1.0, clip=CLIP, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(single, rows.reshape(grad.shape))
    # Seeded releases are reproducible.
    again = single_fn(grad, epsilon=1.0, clip=CLIP, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(single, again)


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_rows_have_the_law_of_single_calls(name: str) -> None:
    single_fn, rows_fn = MECHANISMS[name][0], MECHANISMS[name][1]
    epsilon, dim, n = 1.0, 5, 2000
    rng = np.random.default_rng(4)
    grads = np.vstack([0.7 * CLIP * unit(dim), -0.3 * CLIP * unit(dim, 1)])
    rows = rows_fn(np.repeat(grads, n, axis=0), epsilon=epsilon, clip=CLIP, rng=rng)
    assert rows.shape == (2 * n, dim)
    for index, grad in enumerate(grads):
        singles = np.stack([single_fn(grad, epsilon=epsilon, clip=CLIP, rng=rng) for _ in range(n)])
        block = rows[index * n : (index + 1) * n]
        for coordinate in (0, 1):
            result = stats.ks_2samp(block[:, coordinate], singles[:, coordinate])
            assert result.pvalue > ALPHA, (index, coordinate, result)
    # Rows are independent releases, not copies.
    assert len({tuple(row) for row in rows[:n]}) == n


# --------------------------------------------------------------------------- kinds


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_numpy_and_torch_kinds_are_preserved(name: str) -> None:
    torch = pytest.importorskip("torch")
    single_fn, rows_fn = MECHANISMS[name][0], MECHANISMS[name][1]
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        grad = np.arange(12, dtype=dtype).reshape(3, 2, 2) / 100
        out = single_fn(grad, epsilon=1.0, clip=CLIP, rng=rng)
        assert isinstance(out, np.ndarray) and out.shape == grad.shape and out.dtype == dtype
    for dtype in (torch.float32, torch.float64):
        tensor = torch.ones(4, 3, dtype=dtype, requires_grad=True)
        out = single_fn(tensor, epsilon=1.0, clip=CLIP, rng=rng)
        assert isinstance(out, torch.Tensor) and out.shape == tensor.shape
        assert out.dtype == dtype and out.device == tensor.device and not out.requires_grad
        rows = rows_fn(tensor, epsilon=1.0, clip=CLIP, rng=rng)
        assert isinstance(rows, torch.Tensor) and rows.shape == (4, 3) and rows.dtype == dtype
    # Lists are accepted and come back as float64 arrays.
    out = single_fn([0.1, 0.2], epsilon=1.0, clip=CLIP, rng=rng)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_bad_inputs_raise(name: str) -> None:
    single_fn, rows_fn = MECHANISMS[name][0], MECHANISMS[name][1]
    grad = np.ones(4)
    for epsilon in (0.0, -1.0, math.inf, math.nan, True, "1"):
        with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
            single_fn(grad, epsilon=epsilon, clip=CLIP)
    for clip in (0.0, math.inf, math.nan, None):
        with pytest.raises(ValueError, match="clip must be a finite number > 0"):
            single_fn(grad, epsilon=1.0, clip=clip)
    bad_gammas = [-0.1, math.nan, math.inf, True, "0.1"]
    bad_gammas += [1.0, 1.5] if name == "privunit2" else [30.5]
    for gamma in bad_gammas:
        with pytest.raises(ValueError, match="gamma must be"):
            single_fn(grad, epsilon=1.0, clip=CLIP, gamma=gamma)
    with pytest.raises(ValueError, match="finite values"):
        single_fn(np.array([1.0, math.nan]), epsilon=1.0, clip=CLIP)
    with pytest.raises(ValueError, match="finite values"):
        rows_fn(np.array([[1.0, math.inf]]), epsilon=1.0, clip=CLIP)
    with pytest.raises(ValueError, match="at least one entry"):
        single_fn(np.array([]), epsilon=1.0, clip=CLIP)
    with pytest.raises(ValueError, match="at least one entry"):
        rows_fn(np.zeros((0, 3)), epsilon=1.0, clip=CLIP)
    with pytest.raises(ValueError, match="2-D array"):
        rows_fn(grad, epsilon=1.0, clip=CLIP)
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator"):
        single_fn(grad, epsilon=1.0, clip=CLIP, rng=0)
    with pytest.raises(ValueError, match="secure_mode must be True or False"):
        single_fn(grad, epsilon=1.0, clip=CLIP, secure_mode=1)
    for helper in (MECHANISMS[name][2], MECHANISMS[name][3], OPTIMAL_GAMMA[name]):
        with pytest.raises(ValueError, match="dim must be an int >= 1"):
            helper(1.0, 0)
        with pytest.raises(ValueError, match="epsilon must be"):
            helper(0.0, 3)


def test_privunit2_rejects_a_cap_that_underflows() -> None:
    with pytest.raises(ValueError, match="too large for dim=5000"):
        privunit2(np.ones(5000), epsilon=1.0, clip=CLIP, gamma=0.99)
    assert privunit2_mse(1.0, 5000, 0.2) > 0  # a sampleable cap is fine


# --------------------------------------------------------------------------- secure mode


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_secure_mode_ignores_rng_and_rounds_to_the_grid(name: str) -> None:
    single_fn, rows_fn, mse_fn, scale_fn = MECHANISMS[name]
    epsilon, dim, n = 1.0, 4, 4000
    grad = 0.5 * CLIP * unit(dim)
    first = single_fn(
        grad, epsilon=epsilon, clip=CLIP, rng=np.random.default_rng(0), secure_mode=True
    )
    second = single_fn(
        grad, epsilon=epsilon, clip=CLIP, rng=np.random.default_rng(0), secure_mode=True
    )
    assert not np.array_equal(first, second)
    # rng is not even looked at in secure mode (as for PRS).
    single_fn(grad, epsilon=epsilon, clip=CLIP, rng="ignored", secure_mode=True)
    out = rows_fn(np.tile(grad, (n, 1)), epsilon=epsilon, clip=CLIP, secure_mode=True)
    scale = CLIP / scale_fn(epsilon, dim)
    step = 2.0 ** (math.floor(math.log2(scale)) - 20)
    np.testing.assert_array_equal(out / step, np.round(out / step))
    # Still unbiased (stochastic rounding is unbiased).
    total = CLIP**2 * (mse_fn(epsilon, dim) + 1) - float(grad @ grad)
    assert np.all(np.abs(out.mean(axis=0) - grad) < Z_BOUND * math.sqrt(total / n))


# --------------------------------------------------------------------------- GradientMechanism


def test_mechanism_names_include_privunit() -> None:
    assert {"privunitg", "privunit2"} <= set(MECHANISM_NAMES)
    assert {"laplace", "prs", "none"} <= set(MECHANISM_NAMES)


def test_gradient_mechanism_clip_properties_and_noise_scale() -> None:
    expected = {
        "laplace": ("l1", 0.05),
        "prs": ("linf_projected", 0.1),
        "privunitg": ("l2", 0.1),
        "privunit2": ("l2", 0.1),
    }
    for name, (norm, bound) in expected.items():
        spec = GradientMechanism(name, 2.0, 0.1)
        assert spec.clip_norm == norm and spec.clip_bound == pytest.approx(bound)
    none = GradientMechanism("none", math.inf, 0.1)
    assert none.clip_norm is None and none.clip_bound is None
    for name, mse_fn in (("privunitg", privunitg_mse), ("privunit2", privunit2_mse)):
        spec = GradientMechanism(name, 4.0, 0.1)
        assert spec.noise_scale(112) == pytest.approx(0.1 * math.sqrt(mse_fn(4.0, 112) / 112))
        assert spec.epsilon_per_release == 4.0
    with pytest.raises(PrivacyConfigError, match="reduced_dim is only allowed"):
        GradientMechanism("privunitg", 1.0, 0.1, reduced_dim=2)
    with pytest.raises(PrivacyConfigError, match="debias=True is only allowed"):
        GradientMechanism("privunit2", 1.0, 0.1, debias=True)
    with pytest.raises(PrivacyConfigError, match="epsilon must be a finite number > 0"):
        GradientMechanism("privunit2", math.inf, 0.1)
    spec = GradientMechanism("privunit2", 1.0, 0.1, secure_mode=True)
    assert GradientMechanism.from_dict(spec.to_dict()) == spec


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_gradient_mechanism_dispatches_to_privunit(name: str) -> None:
    single_fn, rows_fn = MECHANISMS[name][0], MECHANISMS[name][1]
    spec = GradientMechanism(name, 1.0, CLIP)
    grad = np.array([0.1, -0.2, 0.3])
    np.testing.assert_array_equal(
        spec.privatize(grad, np.random.default_rng(8)),
        single_fn(grad, epsilon=1.0, clip=CLIP, rng=np.random.default_rng(8)),
    )
    grads = np.vstack([grad, -grad, np.zeros(3)])
    np.testing.assert_array_equal(
        spec.privatize_rows(grads, np.random.default_rng(9)),
        rows_fn(grads, epsilon=1.0, clip=CLIP, rng=np.random.default_rng(9)),
    )


def test_privatize_rows_laplace_clips_each_row_and_adds_laplace_noise() -> None:
    spec = GradientMechanism("laplace", 1.0, CLIP)
    n = 50_000
    big = np.array([CLIP, CLIP, 0.0])  # L1 = 2C > C/2: clipped to [C/4, C/4, 0]
    small = np.array([0.1 * CLIP, 0.0, -0.1 * CLIP])  # inside the ball: unchanged
    grads = np.vstack([np.tile(big, (n, 1)), np.tile(small, (n, 1))])
    out = spec.privatize_rows(grads, np.random.default_rng(10))
    scale = CLIP / 1.0
    tolerance = Z_BOUND * math.sqrt(2) * scale / math.sqrt(n)
    for block, target in ((out[:n], big / 4), (out[n:], small)):
        assert np.all(np.abs(block.mean(axis=0) - target) < tolerance)
        # Per-entry Laplace variance 2b²; the sample variance has sd b²·sqrt(20/n)
        # (fourth moment 24b⁴).
        variance_tolerance = Z_BOUND * scale**2 * math.sqrt(20 / n)
        assert np.all(np.abs(block.var(axis=0) - 2 * scale**2) < variance_tolerance)
    # Same law as laplace_gradient on one row: compare a coordinate with a KS test.
    rng = np.random.default_rng(12)
    singles = np.stack(
        [laplace_gradient(big, epsilon=1.0, clip=CLIP, rng=rng) for _ in range(2000)]
    )
    assert stats.ks_2samp(out[:2000, 0], singles[:, 0]).pvalue > ALPHA


def test_privatize_rows_laplace_secure_mode_runs() -> None:
    spec = GradientMechanism("laplace", 1.0, CLIP, secure_mode=True)
    out = spec.privatize_rows(np.ones((5, 3)), np.random.default_rng(0))
    assert out.shape == (5, 3) and np.all(np.isfinite(out))


def test_privatize_rows_prs_and_none() -> None:
    spec = GradientMechanism("prs", 2.0, 1.0, debias=True)
    grads = np.random.default_rng(13).standard_normal((4, 6))
    rows = spec.privatize_rows(grads, np.random.default_rng(14))
    rng = np.random.default_rng(14)
    expected = np.stack(
        [projected_random_sign(row, epsilon=2.0, clip=1.0, rng=rng, debias=True) for row in grads]
    )
    np.testing.assert_array_equal(rows, expected)
    none = GradientMechanism("none", math.inf, 1.0)
    copy = none.privatize_rows(grads)
    np.testing.assert_array_equal(copy, grads)
    assert copy is not grads
    with pytest.raises(ValueError, match="2-D array"):
        GradientMechanism("laplace", 1.0, 1.0).privatize_rows(np.ones(3))
    with pytest.raises(ValueError, match="finite values"):
        GradientMechanism("prs", 1.0, 1.0).privatize_rows(np.array([[1.0, math.nan]]))


def test_privatize_rows_keeps_torch_kind() -> None:
    torch = pytest.importorskip("torch")
    grads = torch.ones(3, 4, dtype=torch.float32)
    for name in ("laplace", "prs", "privunitg", "privunit2"):
        out = GradientMechanism(name, 1.0, 1.0).privatize_rows(grads, np.random.default_rng(0))
        assert isinstance(out, torch.Tensor) and out.shape == (3, 4)
        assert out.dtype == torch.float32
