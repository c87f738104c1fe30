"""The empirical auditor applied to every mechanism the package ships (no Ray).

Each mechanism is audited on worst-case adjacent inputs for the sensitivity its privacy
claim assumes, with its claimed (ε, δ) (from the package's accountant where there is one).
Every audit must pass (no statistically supported violation) AND have power: its supported
ε must reach a stated fraction of the claim where the claim is tight (Laplace-type
mechanisms), or of the exact ε of the mechanism's output distribution on these inputs
(computed in closed form here) where the accountant is loose by design. A deliberately
broken Laplace mechanism (noise scale halved, true ε = 2ε) must be caught with the same
sample budget as the honest audit.

Sample sizes and thresholds: with ``n`` estimation releases, an event of probabilities
(p_x, p_y) gives a bound about ``z·σ`` below ln(p_x/p_y), σ = Σ sqrt((1 − p)/(n·p)) (delta
method), z = 1.96 at 95% confidence. Each test states its numbers; every threshold leaves
more than ``NOISE_SIGMAS`` standard errors of room. Seeds are fixed, so the verdicts are
deterministic; across seeds each ``passed`` holds with probability >= 95% by construction.

Secure mode (``secure_mode=True``) draws from OpenDP / OS entropy, not from the audit's seed,
so those verdicts are random: they are audited at confidence ``SECURE_CONFIDENCE`` (see the
"secure mode" section for the failure bounds). ``test_every_exported_mechanism_is_audited``
fails when ``rllib_privacy.mechanisms.__all__`` gains a name without an audit or a reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import special, stats

from rllib_privacy import mechanisms
from rllib_privacy.accounting import (
    dirichlet_delta_union_bound,
    dirichlet_privacy,
    gnmax_epsilon,
    instance_privacy_losses,
    rdp_to_epsilon,
)
from rllib_privacy.audit import AuditResult, audit_mechanism
from rllib_privacy.envs.instance_laplace import PAPER_ACTIONS, action_multiplier
from rllib_privacy.mechanisms import (
    GradientMechanism,
    OneBitMechanism,
    confident_gnmax,
    dirichlet_mechanism,
    gaussian_noisy_max,
    instance_laplace,
    laplace_gradient,
    laplace_noise_scale,
    noisy_max,
    privunit2,
    privunit2_optimal_gamma,
    privunit2_rows,
    privunitg,
    privunitg_optimal_gamma,
    privunitg_rows,
    projected_random_sign,
    randomized_sign,
    restricted_lipschitz,
    secure_discrete_laplace,
    secure_gaussian,
    secure_laplace,
)

NOISE_SIGMAS = 5.0
CLIP = 0.01  # the paper's C for the Laplace mechanism
# Per-call mechanisms (no batch form): 2 x 20k calls of ~50 µs each.
PER_CALL_SAMPLES = 20_000
BATCH_SAMPLES = 200_000


def bound_slack(p_x: float, p_y: float, n: int, confidence: float = 0.95) -> float:
    """How far below ln(p_x/p_y) the bound may land: z·σ plus NOISE_SIGMAS·σ."""
    z = float(stats.norm.isf((1.0 - confidence) / 2.0))
    sigma = math.sqrt((1 - p_x) / (n * p_x)) + math.sqrt((1 - p_y) / (n * p_y))
    return (z + NOISE_SIGMAS) * sigma


def tiled(x: np.ndarray, n: int) -> np.ndarray:
    return np.tile(np.asarray(x, dtype=np.float64), (n, 1))


def audit_gradient_mechanism(
    mechanism: object,
    grad_a: object,
    *,
    claimed: float,
    num_samples: int,
    seed: int,
    confidence: float = 0.95,
) -> AuditResult:
    """Per-call audit of a gradient mechanism on ``grad_a`` vs ``-grad_a``."""
    return audit_mechanism(
        mechanism,
        grad_a,
        -grad_a,
        epsilon=claimed,
        num_samples=num_samples,
        rng=np.random.default_rng(seed),
        confidence=confidence,
    )


# ----------------------------------------------------------------- Laplace gradient (Alg. 2)

# Worst case for L1 clipping to C/2: opposite corners of the ball, at L1 distance C.
LAPLACE_GRAD_A = np.array([CLIP / 2, 0.0, 0.0, 0.0])


def audit_laplace_gradient(noise_epsilon: float, claimed: float) -> AuditResult:
    """Audit ``laplace_gradient`` run at ``noise_epsilon`` against a claim of ``claimed``."""
    return audit_gradient_mechanism(
        lambda grad, rng: laplace_gradient(grad, epsilon=noise_epsilon, clip=CLIP, rng=rng),
        LAPLACE_GRAD_A,
        claimed=claimed,
        num_samples=PER_CALL_SAMPLES,
        seed=2024,
    )


def test_laplace_gradient_passes_with_power() -> None:
    epsilon = 1.0
    result = audit_laplace_gradient(epsilon, epsilon)
    assert result.passed, result
    # The best event {s > C/2} has p_a = 1/2, p_b = e^{-ε}/2 (ratio exactly e^ε); with
    # 10^4 estimation releases the slack is 0.23, so 0.7·ε leaves room for a
    # slightly worse event chosen on the selection split and the 4-d projection.
    assert epsilon - bound_slack(0.5, 0.5 * math.exp(-epsilon), result.num_estimation) > 0.7
    assert result.supported_epsilon > 0.7 * epsilon, result


def test_broken_laplace_with_halved_noise_is_caught_with_the_same_budget() -> None:
    epsilon = 1.0
    # Noise scale C/(2ε) instead of C/ε: the true ε is 2ε, the claim still ε.
    result = audit_laplace_gradient(2 * epsilon, epsilon)
    assert result.num_samples == PER_CALL_SAMPLES
    assert not result.passed, result
    # p_a = 1/2, p_b = e^{-2ε}/2: the bound lands near 2ε - 0.4, well above ε.
    assert result.supported_epsilon > 1.4 * epsilon, result


# ----------------------------------------------------------------- PRS (Alg. 3)


@pytest.mark.parametrize(
    ("epsilon", "num_samples"),
    [(1.0, 10_000), (5.0, 10_000)],
    ids=["eps1-dhat1", "eps5-dhat2"],
)
def test_projected_random_sign_passes_with_power(epsilon: float, num_samples: int) -> None:
    clip = 1.0
    # Gradients whose projections land at the ends of the clip range: (Mg)_i = m_i1·C with
    # m_i1 ∈ {±√3, 0}, clipped to ±C whenever m_i1 ≠ 0 (M is fresh for every release).
    result = audit_gradient_mechanism(
        lambda grad, rng: projected_random_sign(grad, epsilon=epsilon, clip=clip, rng=rng),
        np.array([clip, 0.0]),
        claimed=epsilon,
        num_samples=num_samples,
        seed=7,
    )
    assert result.passed, result
    assert result.event_kind == "discrete"
    reduced_dim = max(1, min(2, math.floor(epsilon / 2.5)))
    keep = 1.0 / (1.0 + math.exp(-epsilon / reduced_dim))  # P(ũ_i = sign of ū_i)
    # Full-ε event: every row of M hits coordinate 1 (prob. 3^-d̂) and every bit keeps its
    # sign: p_a = 3^-d̂·keep^d̂, p_b = 3^-d̂·(1 - keep)^d̂, ratio e^ε.
    p_a = 3.0**-reduced_dim * keep**reduced_dim
    p_b = 3.0**-reduced_dim * (1 - keep) ** reduced_dim
    floor = epsilon - bound_slack(p_a, p_b, result.num_estimation)
    # ε = 1: floor 0.55 (p = 0.24 vs 0.09, 5000 releases); ε = 5: p_b = 6e-4, only ~5 hits
    # in 5000 releases, so the normal slack is loose and 0.5·ε is asserted instead.
    assert result.supported_epsilon > min(floor, 0.5 * epsilon), result
    assert result.supported_epsilon > 0.5 * epsilon, result


def audit_prs_spec(
    epsilon: float, *, secure_mode: bool, num_samples: int, confidence: float
) -> AuditResult:
    """Audit ``GradientMechanism("prs", ε, 1, debias=True).privatize`` on torch ±e₁."""
    torch = pytest.importorskip("torch")
    spec = GradientMechanism("prs", epsilon, 1.0, debias=True, secure_mode=secure_mode)
    return audit_gradient_mechanism(
        spec.privatize,
        torch.tensor([1.0, 0.0]),
        claimed=epsilon,
        num_samples=num_samples,
        seed=5,
        confidence=confidence,
    )


def test_gradient_mechanism_spec_on_torch_tensors_passes_with_power() -> None:
    # The path the learner mixin and LDPA3C's EnvRunners take: GradientMechanism.privatize
    # on torch tensors, here PRS with the debiased (rescaled: post-processing) output.
    epsilon = 2.0
    result = audit_prs_spec(epsilon, secure_mode=False, num_samples=5_000, confidence=0.95)
    assert result.passed, result
    # d̂ = 1, ε' = 2: p_a = 0.294, p_b = 0.040; 2500 releases: slack 0.9, floor 1.1.
    assert result.supported_epsilon > 0.5 * epsilon, result


def _assert_binary_audit_is_tight(
    batch: Callable[[float, int, np.random.Generator], np.ndarray],
    x: float,
    x_adjacent: float,
    *,
    epsilon: float,
    seed: int,
) -> None:
    """The audit of a two-output ε-mechanism passes and finds ε up to its sampling slack.

    On the worst adjacent pair the outputs keep their sign with probability
    1 / (1 + e^(-ε)), so the lower bound the audit can support is ε minus ``bound_slack``.
    """
    result = audit_mechanism(
        None,
        x,
        x_adjacent,
        epsilon=epsilon,
        num_samples=BATCH_SAMPLES,
        rng=np.random.default_rng(seed),
        batch_mechanism=batch,
    )
    keep = 1.0 / (1.0 + math.exp(-epsilon))
    assert result.passed, result
    assert result.supported_epsilon > epsilon - bound_slack(keep, 1 - keep, result.num_estimation)


def test_randomized_sign_per_coordinate_is_tight() -> None:
    epsilon, clip = 0.8, 1.0

    def batch(u: float, n: int, rng: np.random.Generator) -> np.ndarray:
        return randomized_sign(np.full(n, u), epsilon_per_coordinate=epsilon, clip=clip, rng=rng)

    _assert_binary_audit_is_tight(batch, clip, -clip, epsilon=epsilon, seed=3)


def test_one_bit_score_mechanism_is_tight_on_the_range_ends() -> None:
    """Duchi et al.'s one-bit mechanism: the range's ends are its worst adjacent pair."""
    epsilon, low, high = 0.2, 0.0, 200.0
    mech = OneBitMechanism(epsilon=epsilon, low=low, high=high)

    def batch(score: float, n: int, rng: np.random.Generator) -> np.ndarray:
        return mech.privatize(np.full(n, score), rng=rng).astype(np.float64)

    _assert_binary_audit_is_tight(batch, high, low, epsilon=epsilon, seed=5)


# ----------------------------------------------------------------- PrivUnitG / PrivUnit2

# Worst case for an L2 ball of radius C: opposite poles C·e₁ and -C·e₁ (both on the sphere,
# so the norm step is deterministic and the unit inputs are antipodal).
PRIVUNIT_EPSILON, PRIVUNIT_DIM, PRIVUNIT_CLIP = 2.0, 8, 1.0
PRIVUNIT_GRAD_A = np.eye(PRIVUNIT_DIM)[0] * PRIVUNIT_CLIP
PRIVUNIT_SINGLE = {"privunitg": privunitg, "privunit2": privunit2}
PRIVUNIT_ROWS = {"privunitg": privunitg_rows, "privunit2": privunit2_rows}


def privunit_cap_probabilities(name: str, epsilon: float) -> tuple[float, float]:
    """P(<Z, e₁> >= γC/m) on C·e₁ and on -C·e₁ at the optimal γ (their ε check).

    On C·e₁ it is the cap, p; on -C·e₁ the mirror of the cap, (1 - p)·q/(1 - q). The ratio
    is e^ε exactly, and the density ratio of the two output laws depends on <Z, e₁> alone
    (through cap membership), so <Z, e₁> is the likelihood-ratio statistic and thresholds
    at or above γC/m reach the full ε.
    """
    if name == "privunitg":
        q = float(special.ndtr(-privunitg_optimal_gamma(epsilon, PRIVUNIT_DIM)))
    else:
        a = (PRIVUNIT_DIM - 1) / 2
        gamma = privunit2_optimal_gamma(epsilon, PRIVUNIT_DIM)
        q = float(special.betainc(a, a, (1 - gamma) / 2))
    p = q / (q + math.exp(-epsilon) * (1 - q))
    return p, (1 - p) * q / (1 - q)


def audit_privunit_rows(
    name: str,
    *,
    noise_epsilon: float,
    claimed: float,
    num_samples: int,
    secure_mode: bool = False,
    confidence: float = 0.95,
) -> AuditResult:
    """Batch audit of ``privunit*_rows`` run at ``noise_epsilon`` on ±C·e₁."""
    rows = PRIVUNIT_ROWS[name]
    return audit_mechanism(
        None,
        PRIVUNIT_GRAD_A,
        -PRIVUNIT_GRAD_A,
        epsilon=claimed,
        num_samples=num_samples,
        # Secure mode draws from OS entropy whatever rng is (the verdict is random).
        rng=None if secure_mode else np.random.default_rng(31),
        confidence=confidence,
        # n stacked rows are n independent releases.
        batch_mechanism=lambda grad, n, rng: rows(
            tiled(grad, n),
            epsilon=noise_epsilon,
            clip=PRIVUNIT_CLIP,
            rng=rng,
            secure_mode=secure_mode,
        ),
        statistic=lambda releases: releases[:, 0],
    )


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_privunit_rows_pass_with_power(name: str) -> None:
    epsilon = PRIVUNIT_EPSILON
    result = audit_privunit_rows(
        name, noise_epsilon=epsilon, claimed=epsilon, num_samples=BATCH_SAMPLES
    )
    assert result.passed, result
    # d = 8, ε = 2: p = 0.69 vs 0.093; 10^5 estimation releases: slack 0.08, floor 1.92.
    p_a, p_b = privunit_cap_probabilities(name, epsilon)
    assert math.log(p_a / p_b) == pytest.approx(epsilon, abs=1e-12)
    floor = epsilon - bound_slack(p_a, p_b, result.num_estimation)
    assert floor > 0.9 * epsilon
    assert result.supported_epsilon > floor, result


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_privunit_single_call_passes_with_power(name: str) -> None:
    # The per-call path (flattening, kind restoration): one call per release.
    epsilon = PRIVUNIT_EPSILON
    single = PRIVUNIT_SINGLE[name]
    result = audit_gradient_mechanism(
        lambda grad, rng: single(grad, epsilon=epsilon, clip=PRIVUNIT_CLIP, rng=rng),
        PRIVUNIT_GRAD_A,
        claimed=epsilon,
        num_samples=PER_CALL_SAMPLES,
        seed=32,
    )
    assert result.passed, result
    # 10^4 estimation releases: slack 0.27, floor 1.73 (the default statistic, the
    # projection on the estimated mean difference, is close to <Z, e₁>).
    p_a, p_b = privunit_cap_probabilities(name, epsilon)
    assert result.supported_epsilon > epsilon - bound_slack(p_a, p_b, result.num_estimation)


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_broken_privunit_calibrated_for_a_larger_epsilon_is_caught(name: str) -> None:
    # p (and m) calibrated for ε + 1 but ε claimed: the same budget must catch it.
    epsilon = PRIVUNIT_EPSILON
    result = audit_privunit_rows(
        name, noise_epsilon=epsilon + 1.0, claimed=epsilon, num_samples=BATCH_SAMPLES
    )
    assert not result.passed, result
    # True ε = 3: p = 0.81 vs 0.04, the bound lands about 0.13 below 3.
    p_a, p_b = privunit_cap_probabilities(name, epsilon + 1.0)
    floor = epsilon + 1.0 - bound_slack(p_a, p_b, result.num_estimation)
    assert floor > 1.2 * epsilon
    assert result.supported_epsilon > floor, result


# ----------------------------------------------------------------- PATE noisy max


# One teacher (of 10) moves its vote from class 0 to class 1: the adjacency of noisy_max.
VOTES_A = np.array([3.0, 7.0])
VOTES_B = np.array([2.0, 8.0])


def lnmax_label_zero_probabilities(gamma: float) -> tuple[float, float]:
    """P(label 0) on VOTES_A and VOTES_B under LNMax with Laplace(1/γ) noise.

    Label 0 iff Z_0 - Z_1 > gap, P(Z_0 - Z_1 > t) = (2 + γt)e^{-γt}/4 for two Laplace(1/γ).
    Gaps 4 and 6 give ln ratio 0.777 at γ = 0.5 (2γ is reached only as gap → ∞).
    """
    return (
        (2 + gamma * 4) * math.exp(-gamma * 4) / 4,
        (2 + gamma * 6) * math.exp(-gamma * 6) / 4,
    )


def gnmax_label_zero_probabilities(sigma: float) -> tuple[float, float]:
    """P(label 0) on VOTES_A and VOTES_B under GNMax: label 0 iff N(0, 2σ²) > gap."""
    return (
        float(stats.norm.sf(4 / (sigma * math.sqrt(2)))),
        float(stats.norm.sf(6 / (sigma * math.sqrt(2)))),
    )


def test_lnmax_passes_with_power() -> None:
    gamma = 0.5  # claimed (2γ, 0)-DP per query: ε = 1
    result = audit_mechanism(
        None,
        VOTES_A,
        VOTES_B,
        epsilon=2 * gamma,
        num_samples=BATCH_SAMPLES,
        rng=np.random.default_rng(11),
        batch_mechanism=lambda votes, n, rng: noisy_max(tiled(votes, n), gamma=gamma, rng=rng),
    )
    assert result.passed, result
    assert result.event_kind == "discrete"
    p_a, p_b = lnmax_label_zero_probabilities(gamma)
    exact = math.log(p_a / p_b)
    assert result.supported_epsilon <= exact
    assert result.supported_epsilon > exact - bound_slack(p_a, p_b, result.num_estimation)
    assert result.supported_epsilon > 0.5 * 2 * gamma


GNMAX_SIGMA, GNMAX_DELTA = 2.0, 1e-5


def audit_gnmax(*, secure_mode: bool, num_samples: int, confidence: float) -> AuditResult:
    """Audit ``gaussian_noisy_max`` (σ = 2) on the votes against its accountant's (ε, 1e-5)."""
    claim = gnmax_epsilon(1, sigma=GNMAX_SIGMA, delta=GNMAX_DELTA)
    return audit_mechanism(
        None,
        VOTES_A,
        VOTES_B,
        epsilon=claim.epsilon,
        delta=GNMAX_DELTA,
        num_samples=num_samples,
        rng=np.random.default_rng(12),
        confidence=confidence,
        # In secure mode integer votes get OpenDP's exact discrete Gaussian, one call on the
        # (n, 2) stack.
        batch_mechanism=lambda votes, n, rng: gaussian_noisy_max(
            tiled(votes, n), sigma=GNMAX_SIGMA, rng=rng, secure_mode=secure_mode
        ),
    )


def test_confident_gnmax_passes_with_its_data_independent_epsilon_delta() -> None:
    # Threshold step (λ, λ/(2σ₁²)) plus the GNMax step (λ, λ/σ₂²), one query, converted at δ
    # the way the ledger does; the output is a label or UNANSWERED (−1).
    threshold, sigma_threshold, sigma = 7.5, 2.0, 2.0
    orders = np.arange(1.25, 64.0, 0.25)
    claim = rdp_to_epsilon(
        orders, orders / (2 * sigma_threshold**2) + orders / sigma**2, GNMAX_DELTA
    )
    result = audit_mechanism(
        None,
        VOTES_A,
        VOTES_B,
        epsilon=claim,
        delta=GNMAX_DELTA,
        num_samples=BATCH_SAMPLES,
        rng=np.random.default_rng(21),
        batch_mechanism=lambda votes, n, rng: confident_gnmax(
            tiled(votes, n),
            threshold=threshold,
            sigma_threshold=sigma_threshold,
            sigma=sigma,
            rng=rng,
        ),
    )
    assert result.passed, result
    assert result.event_kind == "discrete"
    # Power: P(unanswered) alone differs between the two histograms (top votes 7 and 8).
    p_a = stats.norm.cdf((threshold - 7) / sigma_threshold)
    p_b = stats.norm.cdf((threshold - 8) / sigma_threshold)
    assert result.supported_epsilon > 0.5 * math.log(p_a / p_b)


def test_gnmax_passes_with_the_accountants_epsilon_delta() -> None:
    sigma, delta = GNMAX_SIGMA, GNMAX_DELTA
    result = audit_gnmax(secure_mode=False, num_samples=BATCH_SAMPLES, confidence=0.95)
    assert result.passed, result
    # Exact: label 0 iff N(0, 2σ²) > gap. The RDP-to-DP conversion over orders <= 8 makes
    # the accountant's ε (3.64) about 2.4x the exact label-level ε at this δ (1.53), so power
    # is checked against the exact value.
    p_a, p_b = gnmax_label_zero_probabilities(sigma)
    exact = math.log((p_a - delta) / p_b)
    assert exact <= result.epsilon
    assert result.supported_epsilon <= exact
    assert result.supported_epsilon > exact - bound_slack(p_a, p_b, result.num_estimation)


# ----------------------------------------------------------------- Dirichlet (kickstarting)


def exact_beta_epsilon(
    concentration_a: tuple[float, float], concentration_b: tuple[float, float], delta: float
) -> float:
    """Exact ε(δ) of one 2-action Dirichlet release: x_1 ~ Beta, threshold events.

    The likelihood ratio of two Beta laws is monotone in x_1, so the worst events are
    {x_1 <= t} and {x_1 > t}; t runs over a grid dense in both tails.
    """
    beta_a, beta_b = stats.beta(*concentration_a), stats.beta(*concentration_b)
    grid = np.concatenate(
        [np.logspace(-300, -1, 3000), np.linspace(0.1, 0.9, 2000), 1 - np.logspace(-1, -16, 2000)]
    )
    best = 0.0
    for first, second in ((beta_a, beta_b), (beta_b, beta_a)):
        for p_x, p_y in ((first.cdf(grid), second.cdf(grid)), (first.sf(grid), second.sf(grid))):
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(p_x > delta, np.log((p_x - delta) / p_y), -np.inf)
            best = max(best, float(np.nanmax(ratio)))
    return best


DIRICHLET_K, DIRICHLET_ETA, DIRICHLET_TAU = 5.0, 0.1, 1e-3


def audit_dirichlet(
    *, secure_mode: bool, num_samples: int, confidence: float
) -> tuple[AuditResult, float, float]:
    """Audit ``dirichlet_mechanism`` (m = 2) at its worst case: (result, claimed ε, exact ε)."""
    k, eta, tau, num_actions = DIRICHLET_K, DIRICHLET_ETA, DIRICHLET_TAU, 2
    # The accountant assumes ‖π̃(s) - π̃(s')‖₂ <= L·b with L the restricted Lipschitz
    # constant; δ is computed at the vertex of Δ_{m,η}. Worst case: π̃_a = that vertex
    # (policy one-hot), π̃_b at distance exactly L·b from it (the only direction for m = 2).
    policy_a = np.array([0.0, 1.0])
    shift = 0.177
    policy_b = np.array([shift, 1.0 - shift])
    lipschitz = restricted_lipschitz(1.0, eta=eta, num_actions=num_actions)
    adjacency = float(np.linalg.norm(policy_a - policy_b))  # a 1-Lipschitz teacher
    claim = dirichlet_privacy(
        k=k,
        eta=eta,
        tau=tau,
        lipschitz=lipschitz,
        adjacency=adjacency,
        num_actions=num_actions,
        rng=np.random.default_rng(0),
    )
    # For m = 2 the union bound is δ itself (the two events are disjoint).
    assert claim.delta == pytest.approx(
        dirichlet_delta_union_bound(k=k, eta=eta, tau=tau, num_actions=num_actions)
    )
    result = audit_mechanism(
        None,
        policy_a,
        policy_b,
        epsilon=claim.epsilon,
        delta=claim.delta,
        num_samples=num_samples,
        rng=np.random.default_rng(13),
        confidence=confidence,
        batch_mechanism=lambda policy, n, rng: dirichlet_mechanism(
            tiled(policy, n), k=k, eta=eta, rng=rng, secure_mode=secure_mode
        ),
    )
    restricted_a = (1 - num_actions * eta) * policy_a + eta
    restricted_b = (1 - num_actions * eta) * policy_b + eta
    exact = exact_beta_epsilon(tuple(k * restricted_a), tuple(k * restricted_b), claim.delta)
    return result, claim.epsilon, exact


def test_dirichlet_passes_with_the_accountants_epsilon_delta() -> None:
    result, claimed, exact = audit_dirichlet(
        secure_mode=False, num_samples=BATCH_SAMPLES, confidence=0.95
    )
    assert result.passed, result
    # eq. 12 (ε = 12.2 here) bounds the ratio on all of Δ_{m,τ} by worst cases, so it is
    # about 5x the exact ε(δ) = 2.55 of these two output laws; power is checked against
    # the exact value (the best event has p ≈ 0.13 vs 0.0045: slack about 0.3).
    assert exact <= claimed
    assert result.supported_epsilon <= exact
    assert result.supported_epsilon > 0.8 * exact, result


# ----------------------------------------------------------------- instance-wise Laplace


@pytest.mark.parametrize("action", PAPER_ACTIONS[:2] + ("1/eps",))
def test_instance_laplace_per_instance_passes_with_power(action: str) -> None:
    # One instance released with scale b = K·Δf/ε: two instances at distance Δf (the
    # sensitivity of f(d) = d on data of range Δf) are (Δf/b)-DP apart.
    epsilon, low, high = 1.0, 150.0, 230.0  # e.g. heights in cm
    delta_f = high - low
    scale = action_multiplier(action, epsilon) * delta_f
    claimed = delta_f / scale
    result = audit_mechanism(
        None,
        low,
        high,
        epsilon=claimed,
        num_samples=BATCH_SAMPLES,
        rng=np.random.default_rng(17),
        batch_mechanism=lambda value, n, rng: instance_laplace(np.full(n, value), scale, rng=rng),
    )
    assert result.passed, result
    # Best event {s > high} (or its mirror): p = 1/2 vs e^{-ε}/2, 10^5 releases: slack <= 0.04.
    floor = claimed - bound_slack(0.5, 0.5 * math.exp(-claimed), result.num_estimation)
    assert result.supported_epsilon > max(floor, 0.5 * claimed), result


def test_instance_laplace_sampling_query_meets_its_pdp_loss() -> None:
    # The ILM's own claim: the random sampling query with per-instance scales is
    # loss(z)-pDP for instance z, loss from accounting.pdp (exact). Neighbours: D and D∖{z}.
    values = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 10.0])
    delta_f = values.max() - values.min()
    scales = np.array([3, 3, 3, 3, 3, 0.05]) * delta_f  # a tiny scale on the outlier
    z = values.size - 1
    loss = float(instance_privacy_losses(values, scales, instances=[z])[0])

    def sampling_query(data: tuple[np.ndarray, np.ndarray], n: int, rng: np.random.Generator):
        data_values, data_scales = data
        drawn = rng.integers(0, data_values.size, size=n)
        return instance_laplace(data_values[drawn], data_scales[drawn], rng=rng)

    result = audit_mechanism(
        None,
        (values, scales),
        (np.delete(values, z), np.delete(scales, z)),
        epsilon=loss,
        num_samples=BATCH_SAMPLES,
        rng=np.random.default_rng(19),
        batch_mechanism=sampling_query,
    )
    assert result.passed, result
    # The loss (2.63) is attained on a narrow spike around the outlier (probability ~ 1/6
    # vs ~0.01); the grid's bins catch most of it.
    assert result.supported_epsilon > 0.75 * loss, result


# ----------------------------------------------------------------- secure mode
#
# In secure mode the noise comes from OpenDP / OS entropy, never from the audit's seed, so
# these verdicts are random. Why a failure of an honest mechanism is negligible:
# - ``passed``: the auditor's guarantee (exact Clopper-Pearson bounds, no asymptotics) gives
#   P(passed is False) <= 1 - SECURE_CONFIDENCE = 1e-6 per audit for a mechanism that meets
#   its claim, whatever the sample size: <= 1.2e-5 over the twelve honest secure audits.
# - power floors: each is the best event's bound minus NOISE_SIGMAS = 5 more standard errors
#   (delta method, ``bound_slack``), so a spurious power failure has probability about
#   Φ(-5) ≈ 3e-7 per test (normal approximation; PRS at ε = 5 uses a Poisson tail instead).
# - the broken mechanism: its expected bound minus 5 standard errors is still above the
#   claim, so it escapes detection with probability about 3e-7.
# No test retries. Sample sizes keep the secure set under ~30 s on an idle machine (OpenDP's
# exact Laplace costs ~40-70 µs per entry plus ~0.3-1 ms per call; measured ~16 s idle).

SECURE_CONFIDENCE = 1.0 - 1e-6
# Per-call budget for laplace_gradient (one OpenDP call per release: ~0.3-1 ms each).
SECURE_LAPLACE_SAMPLES = 6_000
# Batch budget: ~2-4·10⁴ OpenDP Laplace entries per input.
SECURE_BATCH_SAMPLES = 20_000


def secure_floor(exact: float, p_x: float, p_y: float, num_estimation: int) -> float:
    """Power floor of a secure audit: ``exact`` minus the slack at SECURE_CONFIDENCE."""
    return exact - bound_slack(p_x, p_y, num_estimation, SECURE_CONFIDENCE)


def secure_audit(input_a: object, input_b: object, **options: object) -> AuditResult:
    """Batch audit at SECURE_CONFIDENCE; the mechanism draws its own (OpenDP/OS) noise."""
    return audit_mechanism(
        None, input_a, input_b, rng=None, confidence=SECURE_CONFIDENCE, **options
    )


def test_secure_laplace_gradient_passes_with_power() -> None:
    epsilon = 1.0
    # One OpenDP call per release: the global L1 clip of laplace_gradient forbids stacking
    # many releases into one gradient, so this audit is per call.
    result = audit_gradient_mechanism(
        lambda grad, rng: laplace_gradient(
            grad, epsilon=epsilon, clip=CLIP, rng=rng, secure_mode=True
        ),
        LAPLACE_GRAD_A,
        claimed=epsilon,
        num_samples=SECURE_LAPLACE_SAMPLES,
        seed=2024,
        confidence=SECURE_CONFIDENCE,
    )
    assert result.passed, result
    # Best event {s > C/2}: p = 1/2 vs e^{-ε}/2; 3000 estimation releases: floor 0.44.
    floor = secure_floor(epsilon, 0.5, 0.5 * math.exp(-epsilon), result.num_estimation)
    assert floor > 0.4
    assert result.supported_epsilon > floor, result


def broken_secure_laplace(grad: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n releases of laplace_gradient's formula, secure sampler, noise scale C/(2ε) (ε = 1).

    One OpenDP call on the (n, d) stack: the rows are independent releases.
    """
    del rng  # OpenDP draws its own randomness
    rows = tiled(grad, n)
    # Per-row L1 clip to C/2 as laplace_gradient does (clip_l1 clips a whole array at once).
    rows /= np.maximum(1.0, np.abs(rows).sum(axis=1, keepdims=True) / (CLIP / 2))
    return secure_laplace(rows, laplace_noise_scale(epsilon=1.0, clip=CLIP) / 2)


def test_broken_secure_laplace_with_halved_noise_is_caught_with_the_same_budget() -> None:
    epsilon = 1.0
    num_samples = SECURE_LAPLACE_SAMPLES
    result = secure_audit(
        LAPLACE_GRAD_A,
        -LAPLACE_GRAD_A,
        epsilon=epsilon,
        num_samples=num_samples,
        batch_mechanism=broken_secure_laplace,
    )
    # True ε = 2ε: best event p = 1/2 vs e^{-2ε}/2; 3000 estimation releases put the bound
    # 5 standard errors above the claim (1.15 > 1) even at 1e-6 confidence.
    floor = secure_floor(2 * epsilon, 0.5, 0.5 * math.exp(-2 * epsilon), num_samples // 2)
    assert floor > 1.1 * epsilon
    assert result.num_samples == SECURE_LAPLACE_SAMPLES
    assert not result.passed, result
    assert result.supported_epsilon > floor, result


@pytest.mark.parametrize(
    ("epsilon", "num_samples"),
    [(1.0, 10_000), (5.0, 20_000)],
    ids=["eps1-dhat1", "eps5-dhat2"],
)
def test_secure_projected_random_sign_passes_with_power(epsilon: float, num_samples: int) -> None:
    result = audit_gradient_mechanism(
        lambda grad, rng: projected_random_sign(
            grad, epsilon=epsilon, clip=1.0, rng=rng, secure_mode=True
        ),
        np.array([1.0, 0.0]),
        claimed=epsilon,
        num_samples=num_samples,
        seed=7,
        confidence=SECURE_CONFIDENCE,
    )
    assert result.passed, result
    reduced_dim = max(1, min(2, math.floor(epsilon / 2.5)))
    keep = 1.0 / (1.0 + math.exp(-epsilon / reduced_dim))
    p_a = 3.0**-reduced_dim * keep**reduced_dim
    p_b = 3.0**-reduced_dim * (1 - keep) ** reduced_dim
    if epsilon == 1.0:
        # p = 0.24 vs 0.09, 5000 estimation releases: floor 0.31.
        assert result.supported_epsilon > secure_floor(epsilon, p_a, p_b, result.num_estimation)
    else:
        # p_b = 6e-4: ~6 hits in 10^4 releases, too rare for the normal slack. Clopper-Pearson
        # at 1e-6 with 20 hits (P(Poisson(6.4) >= 20) = 1.3e-5) gives p_b <= 0.0052 and,
        # with p_a >= 0.08, a bound of 2.57 > 0.4·ε.
        assert result.supported_epsilon > 0.4 * epsilon, result


def test_secure_gradient_mechanism_spec_on_torch_tensors_passes() -> None:
    epsilon = 2.0
    result = audit_prs_spec(
        epsilon, secure_mode=True, num_samples=4_000, confidence=SECURE_CONFIDENCE
    )
    assert result.passed, result
    # d̂ = 1, ε' = 2: p_a = 0.294, p_b = 0.040; 2000 releases: floor 0.57.
    assert result.supported_epsilon > secure_floor(epsilon, 0.294, 0.040, 2000), result


def test_secure_randomized_sign_per_coordinate_is_tight() -> None:
    epsilon, clip = 0.8, 1.0

    def batch(u: float, n: int, rng: np.random.Generator) -> np.ndarray:
        return randomized_sign(
            np.full(n, u), epsilon_per_coordinate=epsilon, clip=clip, rng=rng, secure_mode=True
        )

    result = secure_audit(
        clip,
        -clip,
        epsilon=epsilon,
        num_samples=BATCH_SAMPLES,
        batch_mechanism=batch,
    )
    keep = 1.0 / (1.0 + math.exp(-epsilon))
    assert result.passed, result
    assert result.supported_epsilon > secure_floor(epsilon, keep, 1 - keep, result.num_estimation)


@pytest.mark.parametrize("name", ["privunitg", "privunit2"])
def test_secure_privunit_rows_pass_with_power(name: str) -> None:
    # Exact OS-entropy bits for the sign and cap choices, an OS-seeded generator for the rest
    # and a grid-rounded release (post-processing): the same cap event reaches ε.
    epsilon = PRIVUNIT_EPSILON
    result = audit_privunit_rows(
        name,
        noise_epsilon=epsilon,
        claimed=epsilon,
        num_samples=SECURE_BATCH_SAMPLES,
        secure_mode=True,
        confidence=SECURE_CONFIDENCE,
    )
    assert result.passed, result
    # 10^4 estimation releases: floor 1.62 (slack 0.38 at 1e-6 + 5 SE).
    p_a, p_b = privunit_cap_probabilities(name, epsilon)
    assert result.supported_epsilon > secure_floor(epsilon, p_a, p_b, result.num_estimation)


def test_secure_lnmax_passes_with_power() -> None:
    gamma = 0.5
    result = secure_audit(
        VOTES_A,
        VOTES_B,
        epsilon=2 * gamma,
        num_samples=SECURE_BATCH_SAMPLES,
        # One OpenDP call on the (n, 2) vote stack: n independent queries.
        batch_mechanism=lambda votes, n, rng: noisy_max(
            tiled(votes, n), gamma=gamma, rng=rng, secure_mode=True
        ),
    )
    assert result.passed, result
    p_a, p_b = lnmax_label_zero_probabilities(gamma)
    # 10^4 estimation queries: floor 0.14 (exact 0.777, slack 0.64 at 1e-6 + 5 SE).
    floor = secure_floor(math.log(p_a / p_b), p_a, p_b, result.num_estimation)
    assert floor > 0.1
    assert result.supported_epsilon > floor, result


def test_secure_gnmax_passes_with_the_accountants_epsilon_delta() -> None:
    sigma, delta = GNMAX_SIGMA, GNMAX_DELTA
    result = audit_gnmax(
        secure_mode=True, num_samples=SECURE_BATCH_SAMPLES, confidence=SECURE_CONFIDENCE
    )
    assert result.passed, result
    p_a, p_b = gnmax_label_zero_probabilities(sigma)
    # Integer votes get the discrete Gaussian, whose label law (lattice noise, ties) is
    # close to but not exactly the continuous one behind p_a, p_b (ln ratio 1.53); the
    # continuous floor (0.44 at 10^4 queries) leaves room for that gap (measured: ~1.1).
    floor = secure_floor(math.log((p_a - delta) / p_b), p_a, p_b, result.num_estimation)
    assert result.supported_epsilon > floor, result


def test_secure_dirichlet_passes_with_the_accountants_epsilon_delta() -> None:
    # Numpy Gamma draws seeded from OS entropy, then snapped to the 2^-20 grid: as fast as
    # the default mode, so the full default budget.
    result, claimed, exact = audit_dirichlet(
        secure_mode=True, num_samples=BATCH_SAMPLES, confidence=SECURE_CONFIDENCE
    )
    assert result.passed, result
    assert exact <= claimed
    # Best event p ≈ 0.13 vs 0.0045 with δ = 0.0735 subtracted from 0.13: at 1e-6 and
    # 10^5 releases the bound lands about 0.35 below 2.55, 5 SE more is 0.35 again.
    assert result.supported_epsilon > 0.7 * exact, result


def test_secure_instance_laplace_passes_with_power() -> None:
    # The tightest paper action (b = Δf/ε): claimed ε = 1 per instance.
    low, high = 150.0, 230.0
    scale = action_multiplier("1/eps", 1.0) * (high - low)
    claimed = (high - low) / scale
    result = secure_audit(
        low,
        high,
        epsilon=claimed,
        num_samples=SECURE_BATCH_SAMPLES // 2,
        # One OpenDP call on n copies of the instance: n independent releases.
        batch_mechanism=lambda value, n, rng: instance_laplace(
            np.full(n, value), scale, rng=rng, secure_mode=True
        ),
    )
    assert result.passed, result
    floor = secure_floor(claimed, 0.5, 0.5 * math.exp(-claimed), result.num_estimation)
    assert result.supported_epsilon > floor, result


def test_secure_discrete_laplace_sampler_passes_with_power() -> None:
    # No mechanism uses it yet; it is exported, so it is audited directly: counts 0 vs 1
    # (integer sensitivity 1) with scale 1 are 1-DP.
    result = secure_audit(
        0,
        1,
        epsilon=1.0,
        num_samples=2 * SECURE_BATCH_SAMPLES,
        batch_mechanism=lambda count, n, rng: secure_discrete_laplace(np.full(n, count), 1.0),
        max_discrete_values=0,  # many integer values: threshold events
    )
    assert result.passed, result
    # Best event {Z + c <= 0}: p = 1/(1 + e^{-1}) = 0.73 vs e^{-1}·0.73 = 0.27, ratio e.
    p_a = 1.0 / (1.0 + math.exp(-1.0))
    floor = secure_floor(1.0, p_a, p_a * math.exp(-1.0), result.num_estimation)
    assert result.supported_epsilon > floor, result


def gaussian_delta(epsilon: float, sigma: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism, sensitivity 1 (Balle & Wang 2018, Thm. 8)."""
    return float(
        stats.norm.cdf(1 / (2 * sigma) - epsilon * sigma)
        - math.exp(epsilon) * stats.norm.cdf(-1 / (2 * sigma) - epsilon * sigma)
    )


def test_secure_gaussian_sampler_passes_with_power() -> None:
    # Used by gaussian_noisy_max on non-integer votes; audited directly on 0 vs 1 with σ = 1
    # against its exact (ε = 1, δ(1) = 0.127) curve point.
    delta = gaussian_delta(1.0, 1.0)
    result = secure_audit(
        0.0,
        1.0,
        epsilon=1.0,
        delta=delta,
        num_samples=SECURE_BATCH_SAMPLES // 2,
        batch_mechanism=lambda value, n, rng: secure_gaussian(np.full(n, value), 1.0),
    )
    assert result.passed, result
    # (1, δ(1)) is tight (sup over events of ln((P_0(E) - δ)/P_1(E)) is exactly 1, at
    # {s <= -1/2}), but δ eats most of the mass there. At 1e-6 confidence the best event is
    # near {s <= 1/4} (p = 0.60 vs 0.23): bound minus 5 SE (delta method, δ subtracted) is
    # 0.26 with 5000 estimation releases.
    assert result.supported_epsilon > 0.2, result


# ----------------------------------------------------------------- coverage

# Every name exported by rllib_privacy.mechanisms: the audit tests (in this module) that
# cover it, or why it needs none. A new export fails test_every_exported_mechanism_is_audited
# until it is added here.
NO_RELEASE = "releases nothing random"
AUDIT_COVERAGE: dict[str, tuple[str, ...] | str] = {
    "GradientMechanism": (
        "test_gradient_mechanism_spec_on_torch_tensors_passes_with_power",
        "test_secure_gradient_mechanism_spec_on_torch_tensors_passes",
    ),
    "MECHANISM_NAMES": f"a tuple of names; {NO_RELEASE}",
    "OneBitMechanism": ("test_one_bit_score_mechanism_is_tight_on_the_range_ends",),
    "NoiseStreams": "a source of generators; the mechanisms that draw from them are audited",
    "PrivacyWarning": f"a warning class; {NO_RELEASE}",
    "SECURE_GRID_BITS": f"a constant; {NO_RELEASE}",
    "bin_edges": f"histogram edges (pure helper); {NO_RELEASE}",
    "clip_l1": f"deterministic clipping, audited inside laplace_gradient; {NO_RELEASE}",
    "argmax_label_distribution": f"the law of a release's post-processing; {NO_RELEASE}",
    "concentration_radius": f"closed-form radius; {NO_RELEASE}",
    "dirichlet_mechanism": (
        "test_dirichlet_passes_with_the_accountants_epsilon_delta",
        "test_secure_dirichlet_passes_with_the_accountants_epsilon_delta",
    ),
    "gaussian_noisy_max": (
        "test_gnmax_passes_with_the_accountants_epsilon_delta",
        "test_secure_gnmax_passes_with_the_accountants_epsilon_delta",
    ),
    "histogram_pmf": f"an empirical PMF; {NO_RELEASE}",
    "instance_laplace": (
        "test_instance_laplace_per_instance_passes_with_power",
        "test_instance_laplace_sampling_query_meets_its_pdp_loss",
        "test_secure_instance_laplace_passes_with_power",
    ),
    "kickstart_threshold": f"closed-form threshold; {NO_RELEASE}",
    "kl_divergence": f"a KL divergence of PMFs; {NO_RELEASE}",
    "laplace_bin_masses": f"exact Laplace bin masses; {NO_RELEASE}",
    "laplace_gradient": (
        "test_laplace_gradient_passes_with_power",
        "test_secure_laplace_gradient_passes_with_power",
    ),
    "laplace_noise_scale": f"the scale formula C/ε; {NO_RELEASE}",
    "lipschitz_upper_bound": f"a bound on a network's Lipschitz constant; {NO_RELEASE}",
    "policy_lipschitz_upper_bound": (
        f"a bound on a policy network's Lipschitz constant; {NO_RELEASE}"
    ),
    "noise_generator": "returns a generator; the mechanisms that draw from it are audited",
    "noisy_max": ("test_lnmax_passes_with_power", "test_secure_lnmax_passes_with_power"),
    "norm_concentration_radius": f"closed-form radius; {NO_RELEASE}",
    "os_entropy_generator": "returns a generator; secure PRS and Dirichlet audits draw from it",
    "plurality": f"noiseless argmax of the votes (no privacy claim); {NO_RELEASE}",
    "privatized_pmf": f"the exact PMF of a release, computed; {NO_RELEASE}",
    "privunit2": ("test_privunit_single_call_passes_with_power",),
    "privunit2_mse": f"closed-form MSE of PrivUnit2; {NO_RELEASE}",
    "privunit2_optimal_gamma": f"minimizes a closed-form MSE; {NO_RELEASE}",
    "privunit2_rows": (
        "test_privunit_rows_pass_with_power",
        "test_broken_privunit_calibrated_for_a_larger_epsilon_is_caught",
        "test_secure_privunit_rows_pass_with_power",
    ),
    "privunit2_scale": f"the closed-form debiasing scale m; {NO_RELEASE}",
    "privunitg": ("test_privunit_single_call_passes_with_power",),
    "privunitg_mse": f"closed-form MSE of PrivUnitG; {NO_RELEASE}",
    "privunitg_optimal_gamma": f"minimizes a closed-form MSE; {NO_RELEASE}",
    "privunitg_rows": (
        "test_privunit_rows_pass_with_power",
        "test_broken_privunit_calibrated_for_a_larger_epsilon_is_caught",
        "test_secure_privunit_rows_pass_with_power",
    ),
    "privunitg_scale": f"the closed-form debiasing scale m; {NO_RELEASE}",
    "projected_random_sign": (
        "test_projected_random_sign_passes_with_power",
        "test_secure_projected_random_sign_passes_with_power",
    ),
    "prs_projection_matrix": "data-independent projection (no privacy loss); audited in PRS",
    "prs_reduced_dim": f"the d̂ formula; {NO_RELEASE}",
    "prs_sign_probability": f"the eq. (24) probability; {NO_RELEASE}",
    "randomized_sign": (
        "test_randomized_sign_per_coordinate_is_tight",
        "test_secure_randomized_sign_per_coordinate_is_tight",
    ),
    "restrict_policy": f"deterministic η-restriction; {NO_RELEASE}",
    "restricted_lipschitz": f"a Lipschitz constant; {NO_RELEASE}",
    "sample_dirichlet": (
        "test_dirichlet_passes_with_the_accountants_epsilon_delta",
        "test_secure_dirichlet_passes_with_the_accountants_epsilon_delta",
    ),
    "secure_bernoulli": (
        "test_secure_randomized_sign_per_coordinate_is_tight",
        "test_secure_projected_random_sign_passes_with_power",
    ),
    "secure_discrete_gaussian": ("test_secure_gnmax_passes_with_the_accountants_epsilon_delta",),
    "confident_gnmax": ("test_confident_gnmax_passes_with_its_data_independent_epsilon_delta",),
    "UNANSWERED": f"the label of an unanswered Confident-GNMax query (a constant); {NO_RELEASE}",
    "secure_discrete_laplace": ("test_secure_discrete_laplace_sampler_passes_with_power",),
    "secure_gaussian": ("test_secure_gaussian_sampler_passes_with_power",),
    "secure_laplace": (
        "test_secure_laplace_gradient_passes_with_power",
        "test_secure_lnmax_passes_with_power",
        "test_secure_instance_laplace_passes_with_power",
    ),
    "snap_to_grid": f"post-processing of the Dirichlet release; {NO_RELEASE}",
    "validate_votes": f"input validation; {NO_RELEASE}",
    "warn_fixed_seed": f"emits a warning; {NO_RELEASE}",
}


def check_audit_coverage(exported: set[str]) -> None:
    """Assert that AUDIT_COVERAGE covers exactly ``exported``, naming existing audit tests."""
    assert set(AUDIT_COVERAGE) == exported, (
        f"audit or justify the new exports {sorted(exported - set(AUDIT_COVERAGE))}; "
        f"drop the stale entries {sorted(set(AUDIT_COVERAGE) - exported)}"
    )
    for name, covered_by in AUDIT_COVERAGE.items():
        if isinstance(covered_by, str):
            assert covered_by.strip(), name
            continue
        assert covered_by, name
        for test_name in covered_by:
            assert test_name.startswith("test_") and callable(globals().get(test_name)), (
                f"{name} names {test_name}, which is not an audit test in this module"
            )


def test_every_exported_mechanism_is_audited() -> None:
    check_audit_coverage(set(mechanisms.__all__))


def test_coverage_check_fails_on_an_unaudited_export() -> None:
    with pytest.raises(AssertionError, match="new_noise_mechanism"):
        check_audit_coverage({*mechanisms.__all__, "new_noise_mechanism"})
    with pytest.raises(AssertionError, match="laplace_gradient"):
        check_audit_coverage(set(mechanisms.__all__) - {"laplace_gradient"})


def print_table() -> None:
    """Run every audit above and print its figures (the README's table)."""
    recorded: list[AuditResult] = []
    original = audit_mechanism

    def recording(*args: object, **kwargs: object) -> AuditResult:
        result = original(*args, **kwargs)
        recorded.append(result)
        return result

    globals()["audit_mechanism"] = recording
    cases = [
        ("laplace_gradient", test_laplace_gradient_passes_with_power),
        ("broken Laplace", test_broken_laplace_with_halved_noise_is_caught_with_the_same_budget),
        ("PRS eps=1", lambda: test_projected_random_sign_passes_with_power(1.0, 10_000)),
        ("PRS eps=5", lambda: test_projected_random_sign_passes_with_power(5.0, 10_000)),
        (
            "GradientMechanism PRS debias, torch",
            test_gradient_mechanism_spec_on_torch_tensors_passes_with_power,
        ),
        ("randomized_sign", test_randomized_sign_per_coordinate_is_tight),
        *(
            (case.format(name), lambda n=name, t=test: t(n))
            for name in ("privunitg", "privunit2")
            for case, test in (
                ("{} rows", test_privunit_rows_pass_with_power),
                ("{} per call", test_privunit_single_call_passes_with_power),
                (
                    "broken {} (calibrated for ε + 1)",
                    test_broken_privunit_calibrated_for_a_larger_epsilon_is_caught,
                ),
            )
        ),
        ("LNMax", test_lnmax_passes_with_power),
        ("GNMax", test_gnmax_passes_with_the_accountants_epsilon_delta),
        ("Dirichlet", test_dirichlet_passes_with_the_accountants_epsilon_delta),
        *(
            (
                f"instance_laplace {action}",
                lambda a=action: test_instance_laplace_per_instance_passes_with_power(a),
            )
            for action in ("3/eps", "2/eps", "1/eps")
        ),
        ("ILM sampling query", test_instance_laplace_sampling_query_meets_its_pdp_loss),
        ("secure laplace_gradient", test_secure_laplace_gradient_passes_with_power),
        (
            "secure broken Laplace",
            test_broken_secure_laplace_with_halved_noise_is_caught_with_the_same_budget,
        ),
        *(
            (
                f"secure PRS eps={epsilon:g}",
                lambda e=epsilon, n=n: test_secure_projected_random_sign_passes_with_power(e, n),
            )
            for epsilon, n in ((1.0, 10_000), (5.0, 20_000))
        ),
        (
            "secure GradientMechanism PRS debias, torch",
            test_secure_gradient_mechanism_spec_on_torch_tensors_passes,
        ),
        ("secure randomized_sign", test_secure_randomized_sign_per_coordinate_is_tight),
        *(
            (f"secure {name} rows", lambda n=name: test_secure_privunit_rows_pass_with_power(n))
            for name in ("privunitg", "privunit2")
        ),
        ("secure LNMax", test_secure_lnmax_passes_with_power),
        ("secure GNMax", test_secure_gnmax_passes_with_the_accountants_epsilon_delta),
        ("secure Dirichlet", test_secure_dirichlet_passes_with_the_accountants_epsilon_delta),
        ("secure instance_laplace 1/eps", test_secure_instance_laplace_passes_with_power),
        ("secure_discrete_laplace", test_secure_discrete_laplace_sampler_passes_with_power),
        ("secure_gaussian", test_secure_gaussian_sampler_passes_with_power),
    ]
    print(
        "| audit | claim (ε, δ) | supported ε | point estimate | passed | releases per input "
        "| confidence |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, case in cases:
        case()
        result = recorded[-1]
        print(
            f"| {name} | ({result.epsilon:.3g}, {result.delta:.3g}) | "
            f"{result.supported_epsilon:.3f} | {result.empirical_epsilon:.3f} | "
            f"{'yes' if result.passed else 'no'} | {result.num_samples} | "
            f"{result.confidence:.7g} |"
        )
    globals()["audit_mechanism"] = original


if __name__ == "__main__":
    print_table()
