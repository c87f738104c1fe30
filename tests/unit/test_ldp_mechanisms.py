"""Unit and statistical tests for the LDP gradient mechanisms (Ono & Takahashi, Alg. 2 / 3).

Statistical checks use tolerances derived from the sample size: Bonferroni-corrected
normal quantiles for means/variances, exact (Clopper-Pearson) binomial bounds for
probabilities and likelihood ratios, and KS / chi-square tests, each at a family-wise
false-failure probability of at most ``ALPHA``.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from scipy import stats

from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms import (
    MECHANISM_NAMES,
    GradientMechanism,
    clip_l1,
    laplace_gradient,
    laplace_noise_scale,
    projected_random_sign,
    prs_projection_matrix,
    prs_reduced_dim,
    prs_sign_probability,
    randomized_sign,
)

ALPHA = 1e-6  # family-wise false-failure probability of each statistical test
SQRT3 = math.sqrt(3.0)


def z_bound(num_comparisons: int = 1) -> float:
    """Two-sided normal quantile with a Bonferroni correction."""
    return float(stats.norm.isf(ALPHA / (2 * num_comparisons)))


def clopper_pearson(counts: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided (1 - alpha) confidence bounds for binomial proportions."""
    counts = np.asarray(counts)
    lower = np.where(counts > 0, stats.beta.ppf(alpha / 2, counts, n - counts + 1), 0.0)
    upper = np.where(counts < n, stats.beta.isf(alpha / 2, counts + 1, n - counts), 1.0)
    return lower, upper


def certified_log_ratio(counts_a: np.ndarray, counts_b: np.ndarray, n: int) -> float:
    """Largest lower confidence bound on |log(P_a(bin) / P_b(bin))| over all bins.

    If the mechanism is ε-DP, every true bin ratio is within e^{±ε}, so this value exceeds ε
    with probability at most ALPHA (Bonferroni over 2 samples x bins x 2 directions).
    """
    alpha = ALPHA / (2 * 2 * len(counts_a))
    lo_a, hi_a = clopper_pearson(counts_a, n, alpha)
    lo_b, hi_b = clopper_pearson(counts_b, n, alpha)
    with np.errstate(divide="ignore"):
        forward = np.log(lo_a) - np.log(hi_b)
        backward = np.log(lo_b) - np.log(hi_a)
    return float(np.max(np.maximum(forward, backward)))


def l1(x: np.ndarray) -> float:
    return float(np.sum(np.abs(x)))


# --------------------------------------------------------------------------- Laplace


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4), (2, 3, 5)])
@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e3, 1e300])
def test_clip_l1_bounds_norm_and_keeps_direction(shape: tuple[int, ...], scale: float) -> None:
    rng = np.random.default_rng(0)
    grad = rng.normal(size=shape) * scale
    bound = 0.005
    clipped = clip_l1(grad, bound=bound)
    assert clipped.shape == grad.shape
    assert l1(clipped) <= bound * (1 + 1e-12)
    factor = min(1.0, bound / l1(grad))
    np.testing.assert_allclose(clipped, grad * factor, rtol=1e-12)


def test_clip_l1_leaves_in_bound_gradients_unchanged() -> None:
    grad = np.array([[0.001, -0.002], [0.0, 0.0015]])  # L1 = 0.0045 <= 0.005
    clipped = clip_l1(grad, bound=0.005)
    np.testing.assert_array_equal(clipped, grad)
    assert clipped is not grad
    np.testing.assert_array_equal(clip_l1(np.zeros(4), bound=1.0), np.zeros(4))
    on_boundary = np.array([0.25, -0.25])
    np.testing.assert_array_equal(clip_l1(on_boundary, bound=0.5), on_boundary)


def test_laplace_release_is_clipped_gradient_plus_noise_from_rng() -> None:
    grad = np.array([[0.3, -0.1, 0.2], [0.0, 0.05, -0.6]])
    epsilon, clip = 2.0, 0.01
    out = laplace_gradient(grad, epsilon=epsilon, clip=clip, rng=np.random.default_rng(7))
    noise = np.random.default_rng(7).laplace(0.0, clip / epsilon, size=grad.shape)
    np.testing.assert_allclose(out - noise, clip_l1(grad, bound=clip / 2), rtol=0, atol=1e-15)
    assert laplace_noise_scale(epsilon=epsilon, clip=clip) == clip / epsilon


def test_laplace_noise_mean_and_variance() -> None:
    n = 200_000
    epsilon, clip = 0.5, 2.0
    b = clip / epsilon
    noise = laplace_gradient(np.zeros(n), epsilon=epsilon, clip=clip, rng=np.random.default_rng(1))
    k = z_bound(2)
    variance = 2 * b**2
    assert abs(noise.mean()) <= k * math.sqrt(variance / n)
    # Var(sample variance) ~ (mu4 - sigma^4)/n with mu4 = 24 b^4 for the Laplace law.
    assert abs(noise.var(ddof=1) - variance) <= k * math.sqrt((24 * b**4 - variance**2) / n)


def test_laplace_noise_ks_against_scipy_laplace() -> None:
    epsilon, clip = 1.5, 0.3
    noise = laplace_gradient(
        np.zeros(50_000), epsilon=epsilon, clip=clip, rng=np.random.default_rng(2)
    )
    result = stats.kstest(noise, stats.laplace(loc=0.0, scale=clip / epsilon).cdf)
    assert result.pvalue > ALPHA


def test_laplace_is_unbiased_for_in_bound_gradient() -> None:
    epsilon, clip = 1.0, 1.0
    grad = np.array([0.2, -0.1, 0.0, 0.05, -0.1])  # L1 = 0.45 <= C/2
    n = 4000
    rng = np.random.default_rng(3)
    outs = np.stack([laplace_gradient(grad, epsilon=epsilon, clip=clip, rng=rng) for _ in range(n)])
    sd_of_mean = math.sqrt(2) * (clip / epsilon) / math.sqrt(n)
    assert np.all(np.abs(outs.mean(axis=0) - grad) <= z_bound(grad.size) * sd_of_mean)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_laplace_numpy_in_numpy_out(dtype: type) -> None:
    grad = np.ones((3, 4), dtype=dtype) * 0.01
    out = laplace_gradient(grad, epsilon=1.0, clip=0.1, rng=np.random.default_rng(0))
    assert isinstance(out, np.ndarray)
    assert out.shape == grad.shape and out.dtype == grad.dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_laplace_torch_in_torch_out(dtype: torch.dtype) -> None:
    grad = torch.full((3, 4), 0.01, dtype=dtype, requires_grad=True)
    out = laplace_gradient(grad, epsilon=1.0, clip=0.1, rng=np.random.default_rng(0))
    assert isinstance(out, torch.Tensor)
    assert out.shape == grad.shape and out.dtype == dtype and out.device == grad.device
    assert not out.requires_grad


def test_laplace_seeded_determinism_and_torch_numpy_agreement() -> None:
    grad = np.linspace(-1.0, 1.0, 12).reshape(3, 4)

    def release(x: object, seed: int) -> object:
        return laplace_gradient(x, epsilon=1.0, clip=0.5, rng=np.random.default_rng(seed))

    np.testing.assert_array_equal(release(grad, 11), release(grad, 11))
    assert not np.array_equal(release(grad, 11), release(grad, 12))
    from_torch = release(torch.from_numpy(grad.copy()), 11)
    np.testing.assert_array_equal(from_torch.numpy(), release(grad, 11))


def _laplace_samples(
    grad: np.ndarray, epsilon: float, clip: float, n: int, seed: int
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array(
        [laplace_gradient(grad, epsilon=epsilon, clip=clip, rng=rng)[0] for _ in range(n)]
    )


def _laplace_certified_ratio(noise_epsilon: float, epsilon: float, clip: float) -> float:
    """Certified log-ratio for adjacent inputs when the noise is drawn for ``noise_epsilon``."""
    n = 10_000
    # Adjacent inputs: their clipped versions are at L1 distance exactly `clip`.
    grad_a, grad_b = np.array([clip / 2]), np.array([-clip / 2])
    assert l1(clip_l1(grad_a, bound=clip / 2) - clip_l1(grad_b, bound=clip / 2)) == clip
    b = clip / epsilon
    # Fixed (data-independent) bins covering the bulk of both output laws, open tails.
    edges = np.concatenate(
        ([-np.inf], np.linspace(-clip / 2 - 4 * b, clip / 2 + 4 * b, 37), [np.inf])
    )
    counts_a, _ = np.histogram(_laplace_samples(grad_a, noise_epsilon, clip, n, 21), edges)
    counts_b, _ = np.histogram(_laplace_samples(grad_b, noise_epsilon, clip, n, 22), edges)
    return certified_log_ratio(counts_a, counts_b, n)


def test_laplace_privacy_inequality_holds_empirically() -> None:
    epsilon, clip = 1.0, 1.0
    assert _laplace_certified_ratio(epsilon, epsilon, clip) <= epsilon


def test_laplace_privacy_check_detects_halved_noise_scale() -> None:
    # Same check with Laplace(C/(2ε)) noise, i.e. a mechanism that is only 2ε-LDP: the
    # certified log-ratio must exceed ε, showing that the test above has power.
    epsilon, clip = 1.0, 1.0
    assert _laplace_certified_ratio(2 * epsilon, epsilon, clip) > epsilon


# --------------------------------------------------------------------------- PRS


@pytest.mark.parametrize(
    ("epsilon", "dim", "expected"),
    [
        (1, 112, 1),
        (2, 112, 1),
        (5, 112, 2),
        (10, 112, 4),
        (2.49, 112, 1),
        (100, 112, 40),
        (1000, 112, 112),
        (10, 3, 3),
        (0.01, 1, 1),
    ],
)
def test_prs_reduced_dim_rule(epsilon: float, dim: int, expected: int) -> None:
    assert prs_reduced_dim(epsilon, dim) == expected


def test_prs_release_composes_projection_clip_and_sign() -> None:
    rng_grad = np.random.default_rng(4)
    grad = rng_grad.normal(size=(4, 5))
    epsilon, clip, reduced_dim = 6.0, 1.0, 3
    out = projected_random_sign(
        grad, epsilon=epsilon, clip=clip, reduced_dim=reduced_dim, rng=np.random.default_rng(5)
    )
    # Replay the documented draw order: M first, then one uniform per projected coordinate.
    rng = np.random.default_rng(5)
    matrix = prs_projection_matrix(reduced_dim, grad.size, rng)
    u_bar = np.clip(matrix @ grad.reshape(-1), -clip, clip)
    u_tilde = randomized_sign(
        u_bar, epsilon_per_coordinate=epsilon / reduced_dim, clip=clip, rng=rng
    )
    assert set(np.unique(u_tilde)) <= {-clip, clip}
    np.testing.assert_allclose(out, (matrix.T @ u_tilde).reshape(grad.shape), rtol=1e-12)


def test_randomized_sign_support_is_plus_minus_clip() -> None:
    clip = 0.7
    u_bar = np.linspace(-clip, clip, 1001)
    out = randomized_sign(
        u_bar, epsilon_per_coordinate=0.3, clip=clip, rng=np.random.default_rng(6)
    )
    assert out.shape == u_bar.shape
    assert set(np.unique(out)) == {-clip, clip}


def test_randomized_sign_mean_is_shrunk_input() -> None:
    clip, eps_c = 2.0, 0.8
    c = (math.exp(eps_c) - 1) / (math.exp(eps_c) + 1)
    values = np.array([-clip, -clip / 2, 0.0, 0.3 * clip, clip])
    n = 100_000
    out = randomized_sign(
        np.repeat(values, n), epsilon_per_coordinate=eps_c, clip=clip, rng=np.random.default_rng(7)
    ).reshape(len(values), n)
    k = z_bound(len(values))
    for value, row in zip(values, out, strict=True):
        expected = value * c
        sd = math.sqrt(clip**2 - expected**2)  # ũ ∈ {±C}: Var = C² - E[ũ]²
        assert abs(row.mean() - expected) <= k * sd / math.sqrt(n)
        p = float(prs_sign_probability(value, epsilon_per_coordinate=eps_c, clip=clip))
        test = stats.binomtest(int(np.sum(row > 0)), n, p)
        assert test.pvalue > ALPHA / len(values)


def test_prs_sign_probability_formula_and_ratio_bound() -> None:
    clip, eps_c = 1.0, 1.3
    u_bar = np.linspace(-clip, clip, 41)
    p = prs_sign_probability(u_bar, epsilon_per_coordinate=eps_c, clip=clip)
    paper = 1 / (math.exp(eps_c) + 1) + (u_bar + clip) / (2 * clip) * (math.exp(eps_c) - 1) / (
        math.exp(eps_c) + 1
    )
    np.testing.assert_allclose(p, paper, rtol=1e-12)
    p_hi = float(prs_sign_probability(clip, epsilon_per_coordinate=eps_c, clip=clip))
    p_lo = float(prs_sign_probability(-clip, epsilon_per_coordinate=eps_c, clip=clip))
    assert p_hi / p_lo == pytest.approx(math.exp(eps_c), rel=1e-12)
    assert (1 - p_lo) / (1 - p_hi) == pytest.approx(math.exp(eps_c), rel=1e-12)
    # Every pair of inputs, both outputs: ratio <= e^{ε'}.
    ratios = np.concatenate(
        [(p[:, None] / p[None, :]).ravel(), ((1 - p)[:, None] / (1 - p)[None, :]).ravel()]
    )
    assert ratios.max() <= math.exp(eps_c) * (1 + 1e-12)


def test_randomized_sign_ratio_bound_empirically() -> None:
    clip, eps_c = 1.0, 1.0
    n = 200_000
    rng = np.random.default_rng(8)
    plus_hi = int(
        np.sum(
            randomized_sign(np.full(n, clip), epsilon_per_coordinate=eps_c, clip=clip, rng=rng) > 0
        )
    )
    plus_lo = int(
        np.sum(
            randomized_sign(np.full(n, -clip), epsilon_per_coordinate=eps_c, clip=clip, rng=rng) > 0
        )
    )
    counts_a = np.array([plus_hi, n - plus_hi])
    counts_b = np.array([plus_lo, n - plus_lo])
    assert certified_log_ratio(counts_a, counts_b, n) <= eps_c
    # The ratio is attained, not just bounded: the exact value e^{ε'} lies in the CI.
    lo_a, hi_a = clopper_pearson(plus_hi, n, ALPHA / 2)
    lo_b, hi_b = clopper_pearson(plus_lo, n, ALPHA / 2)
    assert lo_a / hi_b <= math.exp(eps_c) <= hi_a / lo_b


def test_prs_projection_matrix_entry_distribution() -> None:
    matrix = prs_projection_matrix(60, 2000, np.random.default_rng(9))
    assert matrix.shape == (60, 2000) and matrix.dtype == np.float64
    values, counts = np.unique(matrix, return_counts=True)
    np.testing.assert_array_equal(values, [-SQRT3, 0.0, SQRT3])
    expected = matrix.size * np.array([1 / 6, 2 / 3, 1 / 6])
    assert stats.chisquare(counts, expected).pvalue > ALPHA


def test_prs_projection_matrix_gram_expectation() -> None:
    reduced_dim, dim, n = 3, 6, 20_000
    # n independent d̂×d matrices stacked row-wise: Σ_j M_jᵀ M_j = stackedᵀ stacked.
    stacked = prs_projection_matrix(n * reduced_dim, dim, np.random.default_rng(10))
    gram_mean = stacked.T @ stacked / n
    # Per draw: diagonal entries have variance 2·d̂, off-diagonal ones d̂.
    sd = np.where(np.eye(dim, dtype=bool), math.sqrt(2 * reduced_dim), math.sqrt(reduced_dim))
    k = z_bound(dim * dim)
    assert np.all(np.abs(gram_mean - reduced_dim * np.eye(dim)) <= k * sd / math.sqrt(n))


def _prs_mean(
    grad: np.ndarray, *, debias: bool, n: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    outs = np.stack(
        [
            projected_random_sign(grad, epsilon=10.0, clip=1.0, rng=rng, debias=debias)
            for _ in range(n)
        ]
    )
    return outs.mean(axis=0), outs.std(axis=0, ddof=1) / math.sqrt(n)


def test_prs_debias_is_unbiased_without_clipping() -> None:
    grad = np.array([0.05, -0.1, 0.02, 0.0, 0.08, -0.03])
    assert SQRT3 * l1(grad) <= 1.0  # |(Mg)_i| <= √3·‖g‖₁ <= C: nothing is ever clipped
    mean, sem = _prs_mean(grad, debias=True, n=10_000, seed=11)
    assert np.all(np.abs(mean - grad) <= z_bound(grad.size) * sem)


def test_prs_default_is_paper_form_with_known_shrinkage() -> None:
    grad = np.array([0.05, -0.1, 0.02, 0.0, 0.08, -0.03])
    reduced_dim = prs_reduced_dim(10.0, grad.size)
    c = math.tanh(10.0 / reduced_dim / 2)
    mean, sem = _prs_mean(grad, debias=False, n=10_000, seed=12)
    assert np.all(np.abs(mean - c * reduced_dim * grad) <= z_bound(grad.size) * sem)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prs_numpy_shape_and_dtype_preserved(dtype: type) -> None:
    grad = np.ones((2, 3, 4), dtype=dtype)
    out = projected_random_sign(grad, epsilon=5.0, clip=1.0, rng=np.random.default_rng(0))
    assert isinstance(out, np.ndarray) and out.shape == grad.shape and out.dtype == grad.dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_prs_torch_shape_dtype_device_preserved(dtype: torch.dtype) -> None:
    grad = torch.ones((3, 5), dtype=dtype, requires_grad=True)
    out = projected_random_sign(
        grad, epsilon=5.0, clip=1.0, reduced_dim=2, rng=np.random.default_rng(0)
    )
    assert isinstance(out, torch.Tensor)
    assert out.shape == grad.shape and out.dtype == dtype and out.device == grad.device
    assert not out.requires_grad


def test_prs_seeded_determinism() -> None:
    grad = np.linspace(-1, 1, 10)

    def release(seed: int) -> np.ndarray:
        return projected_random_sign(grad, epsilon=10.0, clip=1.0, rng=np.random.default_rng(seed))

    np.testing.assert_array_equal(release(3), release(3))
    assert not np.array_equal(release(3), release(4))


# --------------------------------------------------------------------------- validation

MECHANISMS = [laplace_gradient, projected_random_sign]


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("epsilon", [0, 0.0, -1.0, math.inf, -math.inf, math.nan, "1", None, True])
def test_bad_epsilon_rejected(mechanism: object, epsilon: object) -> None:
    with pytest.raises(ValueError, match=r"^epsilon must be a finite number > 0, got"):
        mechanism(np.ones(3), epsilon=epsilon, clip=1.0)


def test_error_message_format() -> None:
    with pytest.raises(ValueError, match=r"^epsilon must be a finite number > 0, got inf$"):
        laplace_gradient(np.ones(3), epsilon=math.inf, clip=1.0)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("clip", [0, -0.5, math.inf, math.nan, "1"])
def test_bad_clip_rejected(mechanism: object, clip: object) -> None:
    with pytest.raises(ValueError, match=r"^clip must be a finite number > 0"):
        mechanism(np.ones(3), epsilon=1.0, clip=clip)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_grad_rejected(mechanism: object, bad: float) -> None:
    grad = np.array([0.1, bad, 0.2])
    with pytest.raises(ValueError, match=r"^grad must contain only finite values"):
        mechanism(grad, epsilon=1.0, clip=1.0)
    with pytest.raises(ValueError, match=r"^grad must contain only finite values"):
        mechanism(torch.tensor(grad, dtype=torch.float32), epsilon=1.0, clip=1.0)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("empty", [np.array([]), np.zeros((0, 3)), torch.empty(0), []])
def test_empty_grad_rejected(mechanism: object, empty: object) -> None:
    with pytest.raises(ValueError, match=r"^grad must have at least one entry"):
        mechanism(empty, epsilon=1.0, clip=1.0)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_bad_rng_rejected(mechanism: object) -> None:
    with pytest.raises(ValueError, match=r"^rng must be a numpy.random.Generator or None"):
        mechanism(np.ones(3), epsilon=1.0, clip=1.0, rng=42)


@pytest.mark.parametrize("reduced_dim", [0, -1, 7, 1.5, 2.0, True, "2"])
def test_bad_reduced_dim_rejected(reduced_dim: object) -> None:
    grad = np.ones((2, 3))  # d = 6
    with pytest.raises(ValueError, match=r"^reduced_dim must be an int in \[1, 6\]"):
        projected_random_sign(grad, epsilon=1.0, clip=1.0, reduced_dim=reduced_dim)


def test_reduced_dim_bounds_accepted() -> None:
    grad = np.ones(6)
    for reduced_dim in (1, 6, np.int64(3)):
        out = projected_random_sign(grad, epsilon=1.0, clip=1.0, reduced_dim=reduced_dim)
        assert out.shape == grad.shape


def test_other_bad_arguments_name_themselves() -> None:
    with pytest.raises(ValueError, match=r"^debias must be a bool"):
        projected_random_sign(np.ones(3), epsilon=1.0, clip=1.0, debias="yes")
    with pytest.raises(ValueError, match=r"^bound must be a finite number > 0"):
        clip_l1(np.ones(3), bound=0.0)
    with pytest.raises(ValueError, match=r"^u_clipped must contain only values in \[-clip, clip\]"):
        randomized_sign(np.array([1.5]), epsilon_per_coordinate=1.0, clip=1.0)
    with pytest.raises(ValueError, match=r"^epsilon_per_coordinate must be a finite number > 0"):
        prs_sign_probability(np.array([0.5]), epsilon_per_coordinate=0.0, clip=1.0)
    with pytest.raises(ValueError, match=r"^dim must be an int >= 1"):
        prs_reduced_dim(1.0, 0)
    with pytest.raises(ValueError, match=r"^reduced_dim must be an int >= 1"):
        prs_projection_matrix(0, 5)
    with pytest.raises(ValueError, match=r"^grad must be real-valued"):
        laplace_gradient(np.ones(3, dtype=complex), epsilon=1.0, clip=1.0)


# --------------------------------------------------------------------------- GradientMechanism


def test_mechanism_names() -> None:
    assert MECHANISM_NAMES == ("laplace", "prs", "privunitg", "privunit2", "none")


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        (
            {"name": "gauss", "epsilon": 1.0, "clip": 1.0},
            r"^name must be one of 'laplace', 'prs', 'privunitg', 'privunit2', 'none'",
        ),
        (
            {"name": "laplace", "epsilon": math.inf, "clip": 1.0},
            r"^epsilon must be a finite number > 0",
        ),
        ({"name": "prs", "epsilon": 0.0, "clip": 1.0}, r"^epsilon must be a finite number > 0"),
        (
            {"name": "none", "epsilon": 1.0, "clip": 1.0},
            r"^epsilon must be math.inf for name='none'",
        ),
        ({"name": "laplace", "epsilon": 1.0, "clip": 0.0}, r"^clip must be a finite number > 0"),
        (
            {"name": "none", "epsilon": math.inf, "clip": math.nan},
            r"^clip must be a finite number > 0",
        ),
        (
            {"name": "laplace", "epsilon": 1.0, "clip": 1.0, "reduced_dim": 2},
            r"^reduced_dim is only allowed with name='prs'",
        ),
        (
            {"name": "prs", "epsilon": 1.0, "clip": 1.0, "reduced_dim": 0},
            r"^reduced_dim must be an int >= 1",
        ),
        (
            {"name": "prs", "epsilon": 1.0, "clip": 1.0, "reduced_dim": 1.5},
            r"^reduced_dim must be an int >= 1",
        ),
        (
            {"name": "laplace", "epsilon": 1.0, "clip": 1.0, "debias": True},
            r"^debias=True is only allowed with name='prs'",
        ),
        (
            {"name": "prs", "epsilon": 1.0, "clip": 1.0, "debias": "yes"},
            r"^debias must be True or False",
        ),
    ],
)
def test_gradient_mechanism_validation(kwargs: dict, pattern: str) -> None:
    with pytest.raises(PrivacyConfigError, match=pattern):
        GradientMechanism(**kwargs)
    assert issubclass(PrivacyConfigError, ValueError)


def test_gradient_mechanism_normalizes_and_is_frozen() -> None:
    mechanism = GradientMechanism("prs", 10, 1, reduced_dim=np.int64(3))
    assert mechanism.epsilon == 10.0 and isinstance(mechanism.epsilon, float)
    assert isinstance(mechanism.clip, float) and type(mechanism.reduced_dim) is int
    with pytest.raises(dataclasses.FrozenInstanceError):
        mechanism.epsilon = 2.0  # type: ignore[misc]


def test_gradient_mechanism_none_is_identity_copy() -> None:
    mechanism = GradientMechanism("none", math.inf, 1.0)
    grad = np.array([[1.0, -2.0], [3.0, 1e6]], dtype=np.float32)
    out = mechanism.privatize(grad, np.random.default_rng(0))
    np.testing.assert_array_equal(out, grad)
    assert out.dtype == grad.dtype and not np.shares_memory(out, grad)
    tensor = torch.tensor([1.0, 2.0], requires_grad=True)
    out_t = mechanism.privatize(tensor)
    assert torch.equal(out_t, tensor.detach()) and out_t.data_ptr() != tensor.data_ptr()
    assert not out_t.requires_grad
    assert mechanism.epsilon_per_release == math.inf and mechanism.noise_scale(112) == 0.0


def test_gradient_mechanism_privatize_matches_functions() -> None:
    grad = np.linspace(-0.5, 0.5, 12)
    laplace = GradientMechanism("laplace", 2.0, 0.01)
    np.testing.assert_array_equal(
        laplace.privatize(grad, np.random.default_rng(1)),
        laplace_gradient(grad, epsilon=2.0, clip=0.01, rng=np.random.default_rng(1)),
    )
    prs = GradientMechanism("prs", 5.0, 1.0, reduced_dim=3, debias=True)
    np.testing.assert_array_equal(
        prs.privatize(grad, np.random.default_rng(2)),
        projected_random_sign(
            grad, epsilon=5.0, clip=1.0, reduced_dim=3, debias=True, rng=np.random.default_rng(2)
        ),
    )
    with pytest.raises(ValueError, match=r"^reduced_dim must be an int in \[1, 2\]"):
        prs.privatize(np.ones(2))


def test_gradient_mechanism_noise_scale_and_epsilon() -> None:
    assert GradientMechanism("laplace", 2.0, 0.01).noise_scale(112) == pytest.approx(0.005)
    prs = GradientMechanism("prs", 10.0, 1.0)
    assert prs.noise_scale(112) == 1.0 and prs.epsilon_per_release == 10.0
    assert prs.reduced_dim_for(112) == 4 and prs.reduced_dim_for(2) == 2
    debiased = GradientMechanism("prs", 10.0, 1.0, debias=True)
    assert debiased.noise_scale(112) == pytest.approx(1.0 / (math.tanh(10.0 / 8) * 4))
    with pytest.raises(ValueError, match=r"^dim must be an int >= 1"):
        prs.noise_scale(0)
    with pytest.raises(ValueError, match=r"^reduced_dim must be an int in \[1, 2\]"):
        GradientMechanism("prs", 10.0, 1.0, reduced_dim=3).noise_scale(2)


@pytest.mark.parametrize(
    "mechanism",
    [
        GradientMechanism("laplace", 1.0, 0.01),
        GradientMechanism("prs", 5.0, 1.0),
        GradientMechanism("prs", 10.0, 0.5, reduced_dim=2, debias=True),
        GradientMechanism("none", math.inf, 1.0),
    ],
)
def test_gradient_mechanism_dict_round_trip(mechanism: GradientMechanism) -> None:
    encoded = json.dumps(mechanism.to_dict(), allow_nan=False)
    assert GradientMechanism.from_dict(json.loads(encoded)) == mechanism


def test_gradient_mechanism_from_dict_rejects_bad_mappings() -> None:
    with pytest.raises(
        PrivacyConfigError, match=r"unknown GradientMechanism key\(s\) \['epsilom'\]"
    ):
        GradientMechanism.from_dict({"name": "laplace", "epsilom": 1.0, "clip": 1.0})
    with pytest.raises(PrivacyConfigError, match=r"needs key\(s\) \['clip'\]"):
        GradientMechanism.from_dict({"name": "laplace", "epsilon": 1.0})
    with pytest.raises(PrivacyConfigError, match=r"needs a mapping"):
        GradientMechanism.from_dict([("name", "laplace")])  # type: ignore[arg-type]
