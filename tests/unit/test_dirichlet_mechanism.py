"""Tests for the Dirichlet mechanism (Gohari et al., privacy-preserving kickstarting).

Statistical checks use tolerances derived from the sample size: Bonferroni-corrected normal
quantiles for means, exact (Clopper-Pearson) binomial bounds for probabilities and KS tests,
each at a family-wise false-failure probability of at most ``ALPHA``. All draws are seeded.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

# Same statistical helpers (and family-wise ALPHA = 1e-6) as the LDP mechanism tests.
from test_ldp_mechanisms import ALPHA, clopper_pearson, z_bound

from rllib_privacy.accounting import dirichlet_delta_estimate, dirichlet_epsilon
from rllib_privacy.mechanisms import (
    argmax_label_distribution,
    concentration_radius,
    dirichlet_mechanism,
    kickstart_threshold,
    norm_concentration_radius,
    restrict_policy,
    sample_dirichlet,
)


def repeat_rows(policy: list[float], n: int) -> np.ndarray:
    return np.tile(np.asarray(policy, dtype=np.float64), (n, 1))


# --------------------------------------------------------------------------- restriction


def test_restrict_policy_mixes_with_uniform() -> None:
    policy = np.array([[0.7, 0.2, 0.1], [1.0, 0.0, 0.0]])
    restricted = restrict_policy(policy, eta=0.1)
    np.testing.assert_allclose(restricted, 0.7 * policy + 0.1, atol=1e-15)
    assert restricted.min() >= 0.1 - 1e-15
    np.testing.assert_allclose(restricted.sum(axis=-1), 1.0, atol=1e-15)
    np.testing.assert_allclose(restrict_policy(policy, eta=0.0), policy, atol=1e-15)


def test_restrict_policy_batched_torch_keeps_kind_dtype_and_shape() -> None:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 4, generator=generator)
    policy = torch.softmax(logits, dim=-1)  # float32 rows, sums off by ~1e-7
    restricted = restrict_policy(policy, eta=0.05)
    assert isinstance(restricted, torch.Tensor)
    assert restricted.dtype == torch.float32 and restricted.shape == (2, 5, 4)
    expected = 0.8 * policy.double() / policy.double().sum(-1, keepdim=True) + 0.05
    torch.testing.assert_close(restricted.double(), expected, atol=1e-7, rtol=0)
    np_result = restrict_policy(policy.numpy(), eta=0.05)
    assert isinstance(np_result, np.ndarray) and np_result.dtype == np.float32


def test_restrict_policy_tolerates_round_off_only() -> None:
    tiny_negative = np.array([1.0 + 5e-7, -5e-7])
    np.testing.assert_allclose(restrict_policy(tiny_negative, eta=0.0), [1.0, 0.0], atol=1e-15)
    with pytest.raises(ValueError, match="not a probability vector"):
        restrict_policy(np.array([1.001, -1e-3]), eta=0.1)
    with pytest.raises(ValueError, match="not a probability vector"):
        restrict_policy(np.array([[0.5, 0.5], [0.5, 0.4]]), eta=0.1)
    with pytest.raises(ValueError, match="not a probability vector"):
        restrict_policy(torch.tensor([0.6, 0.6]), eta=0.1)


@pytest.mark.parametrize(
    ("policy", "eta", "match"),
    [
        ([0.5, 0.5], 0.5, "eta"),
        ([0.5, 0.5], -0.01, "eta"),
        ([0.2, 0.3, 0.5], 1.0 / 3.0, "eta"),
        ([0.5, 0.5], math.nan, "eta"),
        ([0.5, 0.5], True, "eta"),
        ([0.5, math.nan], 0.1, "policy"),
        ([1.0], 0.1, "policy"),
        (0.5, 0.1, "policy"),
        (np.zeros((0, 3)), 0.1, "policy"),
    ],
)
def test_restrict_policy_rejects_bad_input(policy: object, eta: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        restrict_policy(policy, eta=eta)
    if not isinstance(policy, np.ndarray) and np.ndim(policy) > 0:
        with pytest.raises(ValueError, match=match):
            restrict_policy(torch.tensor(policy), eta=eta)


# --------------------------------------------------------------------------- mechanism


@pytest.mark.parametrize("k", [0.0, -1.0, math.inf, math.nan, "5"])
def test_dirichlet_mechanism_rejects_bad_k(k: object) -> None:
    with pytest.raises(ValueError, match="k must be"):
        dirichlet_mechanism(np.array([0.5, 0.5]), k=k, eta=0.1, rng=np.random.default_rng(0))


def test_dirichlet_mechanism_rejects_bad_rng() -> None:
    with pytest.raises(ValueError, match="rng"):
        dirichlet_mechanism(np.array([0.5, 0.5]), k=1.0, eta=0.1, rng=0)
    with pytest.raises(ValueError, match="rng"):
        dirichlet_mechanism(np.array([0.5, 0.5]), k=1.0, eta=0.1, rng=torch.Generator())
    with pytest.raises(ValueError, match="rng"):
        dirichlet_mechanism(torch.tensor([0.5, 0.5]), k=1.0, eta=0.1, rng=np.random.RandomState(0))


@pytest.mark.parametrize("k", [0.5, 5.0, 50.0])
def test_sample_mean_is_restricted_policy(k: float) -> None:
    n, eta = 40_000, 0.05
    policy = [0.6, 0.25, 0.1, 0.05]
    draws = dirichlet_mechanism(repeat_rows(policy, n), k=k, eta=eta, rng=np.random.default_rng(1))
    target = restrict_policy(np.array(policy), eta=eta)
    std_error = np.sqrt(target * (1.0 - target) / (k + 1.0) / n)  # exact Dirichlet variance
    assert np.all(np.abs(draws.mean(axis=0) - target) <= z_bound(4) * std_error)


def test_spread_matches_dirichlet_variance_and_shrinks_with_k() -> None:
    n, eta = 40_000, 0.05
    policy = [0.6, 0.25, 0.1, 0.05]
    target = restrict_policy(np.array(policy), eta=eta)
    spreads = []
    for seed, k in enumerate([0.5, 5.0, 50.0, 500.0]):
        draws = dirichlet_mechanism(
            repeat_rows(policy, n), k=k, eta=eta, rng=np.random.default_rng(seed)
        )
        squared = np.sum((draws - target) ** 2, axis=1)
        expected = (1.0 - np.sum(target**2)) / (k + 1.0)  # E‖x − π̃‖² for x ~ Dir(k·π̃)
        std_error = squared.std(ddof=1) / math.sqrt(n)
        assert abs(squared.mean() - expected) <= z_bound(4) * std_error
        spreads.append(squared.mean())
    assert all(a > 3.0 * b for a, b in zip(spreads, spreads[1:], strict=False))


def beta_pit(draws: np.ndarray, i: int, a: float, b: float) -> np.ndarray:
    """Probability integral transform of x_i ~ Beta(a, b), exact near both ends.

    Near 1, x_i is stored rounded to 1.0 (the other entries are ~1e-20), so the upper tail is
    evaluated from 1 − x_i = Σ_{j≠i} x_j, which keeps full precision.
    """
    x = draws[:, i]
    rest = np.delete(draws, i, axis=1).sum(axis=1)
    return np.where(x <= 0.5, stats.beta.cdf(x, a, b), stats.beta.sf(rest, b, a))


@pytest.mark.parametrize("k", [0.3, 2.0, 30.0])
def test_marginal_is_exact_beta(k: float) -> None:
    # Dirichlet marginals: x_i ~ Beta(kπ̃_i, k(1 − π̃_i)). KS of the PIT against U(0, 1).
    n, eta = 20_000, 0.02
    policy = np.array([0.7, 0.2, 0.1])
    target = restrict_policy(policy, eta=eta)
    draws = dirichlet_mechanism(repeat_rows(policy, n), k=k, eta=eta, rng=np.random.default_rng(2))
    for i in range(3):
        pit = beta_pit(draws, i, k * target[i], k * (1.0 - target[i]))
        assert stats.kstest(pit, "uniform").pvalue > ALPHA / 3


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_outputs_lie_on_the_simplex(dtype: type) -> None:
    rng = np.random.default_rng(3)
    policy = rng.dirichlet(np.ones(6), size=(50, 20)).astype(dtype)
    draws = dirichlet_mechanism(policy, k=3.0, eta=0.01, rng=rng)
    assert draws.shape == policy.shape and draws.dtype == dtype
    assert np.all(draws >= 0.0)
    atol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(draws.sum(axis=-1), 1.0, atol=atol)


@pytest.mark.parametrize("k", [1e-3, 1e-2])
@pytest.mark.parametrize("eta", [1e-4, 1e-3])
def test_small_k_never_nan_or_all_zero(k: float, eta: float) -> None:
    n = 20_000
    policy = np.array([0.5, 0.2, 0.1, 0.1, 0.05, 0.05])
    for draws in (
        dirichlet_mechanism(repeat_rows(policy, n), k=k, eta=eta, rng=np.random.default_rng(4)),
        dirichlet_mechanism(
            torch.from_numpy(repeat_rows(policy, n)).float(),
            k=k,
            eta=eta,
            rng=torch.Generator().manual_seed(4),
        ).numpy(),
    ):
        assert np.all(np.isfinite(draws)) and np.all(draws >= 0.0)
        assert np.all(draws.max(axis=1) > 0.0)
        np.testing.assert_allclose(draws.sum(axis=1), 1.0, atol=1e-6)
        # As k → 0, Dir(kπ̃) puts its mass on one vertex, vertex i with probability π̃_i
        # (up to O(k)): the log-space sampler must keep that, not just avoid NaN.
        target = restrict_policy(policy, eta=eta)
        winners = np.bincount(draws.argmax(axis=1), minlength=6)
        lower, upper = clopper_pearson(winners, n, ALPHA / 6)
        assert np.all(lower <= target + 2 * k) and np.all(target - 2 * k <= upper)


def test_zero_concentration_entries_are_exactly_zero() -> None:
    policy = np.array([[0.0, 0.3, 0.7]] * 100)
    draws = dirichlet_mechanism(policy, k=2.0, eta=0.0, rng=np.random.default_rng(5))
    assert np.all(draws[:, 0] == 0.0)
    np.testing.assert_allclose(draws.sum(axis=1), 1.0, atol=1e-12)


def test_seeded_draws_are_reproducible() -> None:
    policy = np.array([[0.2, 0.8], [0.9, 0.1]])
    a = dirichlet_mechanism(policy, k=2.0, eta=0.1, rng=np.random.default_rng(6))
    b = dirichlet_mechanism(policy, k=2.0, eta=0.1, rng=np.random.default_rng(6))
    np.testing.assert_array_equal(a, b)
    t = torch.tensor(policy)
    c = dirichlet_mechanism(t, k=2.0, eta=0.1, rng=torch.Generator().manual_seed(6))
    d = dirichlet_mechanism(t, k=2.0, eta=0.1, rng=torch.Generator().manual_seed(6))
    torch.testing.assert_close(c, d, rtol=0, atol=0)


def test_torch_output_kind_and_no_graph() -> None:
    logits = torch.randn(8, 3, requires_grad=True)
    policy = torch.softmax(logits, dim=-1)
    out = dirichlet_mechanism(policy, k=5.0, eta=0.1, rng=torch.Generator().manual_seed(0))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert out.device == policy.device and not out.requires_grad
    out_np_rng = dirichlet_mechanism(policy, k=5.0, eta=0.1, rng=np.random.default_rng(0))
    assert isinstance(out_np_rng, torch.Tensor) and out_np_rng.dtype == torch.float32
    half = dirichlet_mechanism(policy.double(), k=5.0, eta=0.1, rng=np.random.default_rng(0))
    assert half.dtype == torch.float64


def test_numpy_and_torch_paths_agree_in_distribution() -> None:
    n, k, eta = 20_000, 1.5, 0.05
    policy = np.array([0.55, 0.3, 0.15])
    from_numpy = dirichlet_mechanism(
        repeat_rows(policy, n), k=k, eta=eta, rng=np.random.default_rng(7)
    )
    from_torch = dirichlet_mechanism(
        torch.from_numpy(repeat_rows(policy, n)),
        k=k,
        eta=eta,
        rng=torch.Generator().manual_seed(7),
    ).numpy()
    for i in range(3):
        assert stats.ks_2samp(from_numpy[:, i], from_torch[:, i]).pvalue > ALPHA / 3


def test_sample_dirichlet_matches_numpy_reference() -> None:
    # Independent reference: numpy's own Dirichlet sampler (fine for moderate α).
    n = 20_000
    alpha = np.array([0.4, 1.0, 3.0])
    ours = sample_dirichlet(np.tile(alpha, (n, 1)), rng=np.random.default_rng(8))
    reference = np.random.default_rng(9).dirichlet(alpha, size=n)
    for i in range(3):
        assert stats.ks_2samp(ours[:, i], reference[:, i]).pvalue > ALPHA / 3


# --------------------------------------------------------------------------- privacy


def log_ratio_sup(pi: np.ndarray, pi_prime: np.ndarray, k: float, tau: float) -> float:
    """max over many z in Δ_{m,τ} of ln p_{Dir(kπ)}(z) − ln p_{Dir(kπ')}(z) (scipy densities)."""
    rng = np.random.default_rng(10)
    m = len(pi)
    candidates = [rng.dirichlet(np.full(m, 0.3), size=20_000)]
    # The ratio is largest near the faces z_i = τ: add points on them.
    for i in range(m):
        face = rng.dirichlet(np.ones(m), size=2_000) * (1.0 - m * tau) + tau
        face[:, i] = tau
        candidates.append(face / face.sum(axis=1, keepdims=True))
    z = np.concatenate(candidates)
    z = z[z.min(axis=1) >= tau]
    log_ratio = stats.dirichlet.logpdf(z.T, k * pi) - stats.dirichlet.logpdf(z.T, k * pi_prime)
    return float(np.max(log_ratio))


@pytest.mark.parametrize("seed", range(3))
def test_density_ratio_on_restricted_simplex_is_below_epsilon(seed: int) -> None:
    """Theorem 1's ε bounds the exact log density ratio on Δ_{m,τ} (scipy's Dirichlet pdf)."""
    rng = np.random.default_rng(seed)
    m, eta, k, tau = 4, 0.05, 5.0, 0.01
    # Worst case for the lnΓ terms: π at a vertex of Δ_{m,η}, π' near the centre.
    pi = np.full(m, eta)
    pi[rng.integers(m)] = 1.0 - (m - 1) * eta
    pi_prime = restrict_policy(rng.dirichlet(np.full(m, 20.0)), eta=eta)
    distance = float(np.linalg.norm(pi - pi_prime))
    epsilon = dirichlet_epsilon(
        k=k, eta=eta, tau=tau, lipschitz=1.0, adjacency=distance, num_actions=m
    )
    for a, b in ((pi, pi_prime), (pi_prime, pi)):
        assert log_ratio_sup(a, b, k, tau) <= epsilon


def test_empirical_privacy_inequality_on_histogram_events() -> None:
    """P(M(π) ∈ S) <= e^ε·P(M(π') ∈ S) + δ on histogram cells S ⊂ Δ_{m,τ} and on S = R_1."""
    n, m, k, eta, tau = 200_000, 3, 8.0, 0.3, 0.02
    pi = np.array([0.3, 0.3, 0.4])  # a vertex of Δ_{3,0.3}
    pi_prime = np.array([0.32, 0.33, 0.35])
    distance = float(np.linalg.norm(pi - pi_prime))
    epsilon = dirichlet_epsilon(
        k=k, eta=eta, tau=tau, lipschitz=1.0, adjacency=distance, num_actions=m
    )
    _, delta = dirichlet_delta_estimate(
        k=k,
        eta=eta,
        tau=tau,
        num_actions=m,
        num_samples=n,
        confidence=1.0 - ALPHA,
        rng=np.random.default_rng(11),
    )
    # The policies are already in Δ_{m,η}: release them with eta = 0 (no second restriction).
    a = dirichlet_mechanism(repeat_rows(pi, n), k=k, eta=0.0, rng=np.random.default_rng(12))
    b = dirichlet_mechanism(repeat_rows(pi_prime, n), k=k, eta=0.0, rng=np.random.default_rng(13))
    edges = np.linspace(0.0, 1.0, 11)

    def cell_counts(x: np.ndarray) -> np.ndarray:
        inside = x.min(axis=1) >= tau
        cells = np.digitize(x[inside, 0], edges) * 12 + np.digitize(x[inside, 1], edges)
        counts = np.bincount(cells, minlength=144)
        return np.append(counts, n - inside.sum())  # last event: R_1 = Δ_m ∖ Δ_{m,τ}

    counts_a, counts_b = cell_counts(a), cell_counts(b)
    tests = 2 * 2 * len(counts_a)
    lo_a, hi_a = clopper_pearson(counts_a, n, ALPHA / tests)
    lo_b, hi_b = clopper_pearson(counts_b, n, ALPHA / tests)
    assert np.all(lo_a <= math.exp(epsilon) * hi_b + delta)
    assert np.all(lo_b <= math.exp(epsilon) * hi_a + delta)
    # R_1 itself has probability at most δ under both inputs (eq. 6 at the worst vertex).
    assert lo_a[-1] <= delta and lo_b[-1] <= delta


# --------------------------------------------------------------------------- Lemma 1


def test_concentration_radius_and_threshold_values() -> None:
    assert concentration_radius(k=5.0, beta=0.1) == pytest.approx(
        math.sqrt(math.log(10.0) / 12.0), rel=1e-15
    )
    assert kickstart_threshold(k=5.0, beta=0.1, lam=0.5) == pytest.approx(
        0.5 * math.sqrt(math.log(10.0) / 12.0), rel=1e-15
    )
    assert kickstart_threshold(k=5.0, beta=0.1, lam=0.0) == 0.0
    assert kickstart_threshold(k=math.inf, beta=0.1, lam=2.0) == 0.0
    assert concentration_radius(k=1.0, beta=0.5) > concentration_radius(k=10.0, beta=0.5)


def test_concentration_radius_holds_in_every_direction() -> None:
    # What holds (sub-Gaussian Dirichlet): P(⟨u, x − π̃⟩ >= r) <= β for fixed unit u.
    n, k, beta, eta = 100_000, 3.0, 0.05, 0.02
    policy = np.array([0.5, 0.3, 0.2])
    draws = dirichlet_mechanism(repeat_rows(policy, n), k=k, eta=eta, rng=np.random.default_rng(14))
    deviation = draws - restrict_policy(policy, eta=eta)
    radius = concentration_radius(k=k, beta=beta)
    directions = np.array([[1.0, -1.0, 0.0], [-1.0, 0.0, 1.0], [1.0, 1.0, -2.0], [0.0, -1.0, 1.0]])
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    exceed = np.count_nonzero(deviation @ directions.T >= radius, axis=0)
    lower, _ = clopper_pearson(exceed, n, ALPHA / len(directions))
    assert np.all(lower <= beta)


def test_lemma1_norm_version_fails_but_markov_radius_holds() -> None:
    # Documented finding: the paper's Lemma 1 for the L2 norm is violated at m = 6, k = 5.
    n, k, beta, eta = 100_000, 5.0, 0.05, 0.01
    policy = np.array([0.4, 0.2, 0.15, 0.1, 0.1, 0.05])
    draws = dirichlet_mechanism(repeat_rows(policy, n), k=k, eta=eta, rng=np.random.default_rng(15))
    distance = np.linalg.norm(draws - restrict_policy(policy, eta=eta), axis=1)
    paper = int(np.count_nonzero(distance >= concentration_radius(k=k, beta=beta)))
    lower, _ = clopper_pearson(np.array([paper]), n, ALPHA)
    assert lower[0] > beta
    for level in (0.05, 0.2, 0.5):
        radius = norm_concentration_radius(k=k, beta=level, num_actions=6)
        exceed = int(np.count_nonzero(distance >= radius))
        lower, _ = clopper_pearson(np.array([exceed]), n, ALPHA / 3)
        assert lower[0] <= level
    assert norm_concentration_radius(k=math.inf, beta=0.1, num_actions=2) == 0.0
    assert norm_concentration_radius(k=3.0, beta=0.25, num_actions=2) == pytest.approx(
        math.sqrt(0.5 / (0.25 * 4.0)), rel=1e-15
    )
    with pytest.raises(ValueError, match="num_actions"):
        norm_concentration_radius(k=3.0, beta=0.25, num_actions=1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 0.0, "beta": 0.1}, "k must be"),
        ({"k": -1.0, "beta": 0.1}, "k must be"),
        ({"k": 1.0, "beta": 0.0}, "beta"),
        ({"k": 1.0, "beta": 1.0}, "beta"),
        ({"k": 1.0, "beta": math.nan}, "beta"),
    ],
)
def test_radius_rejects_bad_arguments(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        concentration_radius(**kwargs)
    with pytest.raises(ValueError, match=match):
        kickstart_threshold(**kwargs, lam=0.5)


@pytest.mark.parametrize("lam", [-0.1, math.inf, math.nan])
def test_threshold_rejects_bad_lambda(lam: float) -> None:
    with pytest.raises(ValueError, match="lam"):
        kickstart_threshold(k=1.0, beta=0.1, lam=lam)


# --------------------------------------------------------------------------- argmax labels


@pytest.mark.parametrize(
    ("policy", "k", "eta"),
    [
        ([0.8, 0.2], 100.0, 0.4),
        ([0.7, 0.3], 0.05, 0.2),
        ([1.0, 0.0], 5.0, 0.05),
        ([0.5, 0.5], 3.0, 0.1),
    ],
)
def test_argmax_label_law_for_two_actions_is_the_beta_tail(
    policy: list[float], k: float, eta: float
) -> None:
    restricted = (1 - 2 * eta) * np.asarray(policy) + eta
    first = stats.beta.sf(0.5, k * restricted[0], k * restricted[1])
    law = argmax_label_distribution(policy, k=k, eta=eta)
    np.testing.assert_allclose(law, [first, 1.0 - first], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(
    ("policy", "k", "eta"),
    [
        ([1.0, 0.0, 0.0], 200.0, 0.3),
        ([0.5, 0.3, 0.2], 5.0, 0.05),
        ([1.0, 0.0, 0.0, 0.0, 0.0, 0.0], 100.0, 0.16),
        ([0.1, 0.4, 0.0, 0.2, 0.3], 20.0, 0.1),
    ],
)
def test_argmax_label_law_matches_the_mechanisms_draws(
    policy: list[float], k: float, eta: float
) -> None:
    n = 100_000
    draws = dirichlet_mechanism(repeat_rows(policy, n), k=k, eta=eta, rng=np.random.default_rng(5))
    counts = np.bincount(draws.argmax(axis=1), minlength=len(policy))
    law = argmax_label_distribution(policy, k=k, eta=eta)
    assert law.sum() == pytest.approx(1.0, abs=1e-8)
    lower, upper = clopper_pearson(counts, n, ALPHA / len(policy))
    assert np.all((lower <= law) & (law <= upper)), (counts / n, law)
    # Actions with the same restricted probability get the same share.
    restricted = restrict_policy(np.asarray(policy), eta=eta)
    for value in np.unique(restricted):
        assert np.ptp(law[restricted == value]) < 1e-9


def test_argmax_label_law_gives_no_mass_to_an_action_with_zero_concentration() -> None:
    # η = 0 and π_j = 0: Gamma(0) is a point mass at 0, so j is never the largest entry.
    law = argmax_label_distribution([0.6, 0.4, 0.0], k=10.0, eta=0.0)
    expected = stats.beta.sf(0.5, 6.0, 4.0)
    np.testing.assert_allclose(law, [expected, 1.0 - expected, 0.0], rtol=1e-8, atol=1e-10)


def test_argmax_label_law_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="k"):
        argmax_label_distribution([0.5, 0.5], k=0.0, eta=0.1)
    with pytest.raises(ValueError, match="eta"):
        argmax_label_distribution([0.5, 0.5], k=1.0, eta=0.5)
    with pytest.raises(ValueError, match="one probability vector"):
        argmax_label_distribution([[0.5, 0.5]], k=1.0, eta=0.1)
