"""Secure noise: OpenDP samplers, secure_mode of every mechanism, noise
streams per local agent, and the fixed-seed warning.

Statistical checks use n draws and k = 5 standard errors derived from n (a false failure
has probability below 1e-6 per check); KS tests use alpha = 1e-4.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from scipy import stats

from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms import (
    GradientMechanism,
    NoiseStreams,
    PrivacyWarning,
    dirichlet_mechanism,
    gaussian_noisy_max,
    instance_laplace,
    laplace_gradient,
    noisy_max,
    projected_random_sign,
    randomized_sign,
    restrict_policy,
    secure_bernoulli,
    secure_discrete_gaussian,
    secure_discrete_laplace,
    secure_gaussian,
    secure_laplace,
    secure_noise,
    snap_to_grid,
)

K_SE = 5.0
KS_ALPHA = 1e-4


def _check_moments(x: np.ndarray, *, mean: float, var: float, fourth_central: float) -> None:
    """Sample mean and variance within K_SE standard errors of the true values."""
    n = x.size
    assert abs(x.mean() - mean) <= K_SE * math.sqrt(var / n)
    # Var(s²) ≈ (μ₄ − σ⁴)/n for large n.
    assert abs(x.var() - var) <= K_SE * math.sqrt((fourth_central - var**2) / n)


def _integer_pmf(log_weight, half_width: int) -> tuple[np.ndarray, np.ndarray]:
    z = np.arange(-half_width, half_width + 1)
    w = np.exp(log_weight(z.astype(np.float64)))
    return z, w / w.sum()


# ---- OpenDP samplers ----------------------------------------------------------------


def test_secure_laplace_has_the_laplace_distribution() -> None:
    scale, n = 2.0, 10_000
    x = secure_laplace(np.full(n, 3.0), scale) - 3.0
    assert stats.kstest(x, stats.laplace(scale=scale).cdf).pvalue > KS_ALPHA
    _check_moments(x, mean=0.0, var=2 * scale**2, fourth_central=24 * scale**4)


def test_secure_gaussian_has_the_normal_distribution() -> None:
    sigma, n = 0.5, 10_000
    x = secure_gaussian(np.zeros((100, n // 100)), sigma).reshape(-1)
    assert stats.kstest(x, stats.norm(scale=sigma).cdf).pvalue > KS_ALPHA
    _check_moments(x, mean=0.0, var=sigma**2, fourth_central=3 * sigma**4)


def test_secure_discrete_laplace_support_and_variance_formula() -> None:
    scale, n = 3.0, 20_000
    x = secure_discrete_laplace(np.full(n, 7), scale) - 7
    assert x.dtype == np.int64
    z, pmf = _integer_pmf(lambda z: -np.abs(z) / scale, 200)
    var = float(np.sum(pmf * z**2))
    # The closed form in the docstring agrees with the pmf.
    t = math.exp(-1.0 / scale)
    assert var == pytest.approx(2 * t / (1 - t) ** 2, rel=1e-9)
    _check_moments(x, mean=0.0, var=var, fourth_central=float(np.sum(pmf * z**4)))
    # Empirical pmf near 0 within K_SE binomial standard errors.
    for value in (-1, 0, 2):
        p = pmf[z == value][0]
        assert abs(np.mean(x == value) - p) <= K_SE * math.sqrt(p * (1 - p) / n)


def test_secure_discrete_gaussian_support_and_variance_formula() -> None:
    sigma, n = 1.5, 20_000
    x = secure_discrete_gaussian(np.zeros(n, dtype=np.int64), sigma)
    assert x.dtype == np.int64
    # Canonne-Kamath-Steinke: Var = Σ z² e^{-z²/2σ²} / Σ e^{-z²/2σ²} (≤ σ²).
    z, pmf = _integer_pmf(lambda z: -(z**2) / (2 * sigma**2), 60)
    var = float(np.sum(pmf * z**2))
    assert var <= sigma**2 * (1 + 1e-9)
    _check_moments(x, mean=0.0, var=var, fourth_central=float(np.sum(pmf * z**4)))


def test_integer_samplers_reject_non_integers() -> None:
    with pytest.raises(ValueError, match="counts must be integers"):
        secure_discrete_laplace([0.5, 1.0], 1.0)
    with pytest.raises(ValueError, match="scale"):
        secure_laplace([0.0], 0.0)
    with pytest.raises(ValueError, match="finite"):
        secure_laplace([math.nan], 1.0)


def test_opendp_certifies_the_accountants_epsilon_and_rho() -> None:
    # Laplace gradient: L1 sensitivity C, scale C/ε → OpenDP's map says exactly ε.
    clip, epsilon = 0.01, 2.0
    laplace = secure_noise._float_measurement("laplace", clip / epsilon)
    assert laplace.map(clip) == pytest.approx(epsilon, rel=1e-12)
    # GNMax: L2 sensitivity √2, σ → zCDP ρ = 1/σ² (RDP λ/σ², as the accountant assumes).
    sigma = 4.0
    gaussian = secure_noise._int_measurement("gaussian", sigma)
    assert gaussian.map(math.sqrt(2.0)) == pytest.approx(1.0 / sigma**2, rel=1e-9)


def test_secure_bernoulli_is_exact_and_rejects_bad_p() -> None:
    p, n = 0.3, 20_000
    draws = secure_bernoulli(np.full(n, p))
    assert abs(draws.mean() - p) <= K_SE * math.sqrt(p * (1 - p) / n)
    assert not secure_bernoulli(np.zeros(50)).any() and secure_bernoulli(np.ones(50)).all()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        secure_bernoulli([1.5])


# ---- secure_mode of every mechanism --------------------------------------------------

_VOTES = np.array([[9.0, 3.0, 4.0], [5.0, 5.0, 1.0]])
_RELEASES = {
    "laplace_gradient": lambda rng, secure: laplace_gradient(
        np.linspace(-1, 1, 112), epsilon=1.0, clip=0.01, rng=rng, secure_mode=secure
    ),
    "prs": lambda rng, secure: projected_random_sign(
        np.linspace(-1, 1, 112), epsilon=10.0, clip=1.0, rng=rng, secure_mode=secure
    ),
    "lnmax": lambda rng, secure: noisy_max(
        np.tile(_VOTES, (50, 1)), gamma=0.2, rng=rng, secure_mode=secure
    ),
    "gnmax": lambda rng, secure: gaussian_noisy_max(
        np.tile(_VOTES, (50, 1)), sigma=4.0, rng=rng, secure_mode=secure
    ),
    "dirichlet": lambda rng, secure: dirichlet_mechanism(
        np.full((4, 3), 1 / 3), k=5.0, eta=0.01, rng=rng, secure_mode=secure
    ),
    "instance_laplace": lambda rng, secure: instance_laplace(
        np.arange(20.0), np.repeat([1.0, 3.0], 10), rng=rng, secure_mode=secure
    ),
}


@pytest.mark.parametrize("name", sorted(_RELEASES))
def test_secure_mode_ignores_a_seeded_rng(name: str) -> None:
    release = _RELEASES[name]
    # Outside secure mode the seed reproduces the release (so this check can fail) ...
    np.testing.assert_array_equal(
        release(np.random.default_rng(0), False), release(np.random.default_rng(0), False)
    )
    # ... in secure mode it does not drive the noise.
    assert not np.array_equal(
        release(np.random.default_rng(0), True), release(np.random.default_rng(0), True)
    )


@pytest.mark.parametrize("name", sorted(_RELEASES))
def test_secure_mode_must_be_a_bool(name: str) -> None:
    with pytest.raises(ValueError, match="secure_mode"):
        _RELEASES[name](None, 1)


def test_secure_laplace_gradient_keeps_clipping_dtype_and_scale() -> None:
    grad = torch.full((4, 28), 3.0, dtype=torch.float32)
    # Huge ε: the noise is negligible and the output is the gradient clipped to C/2 in L1.
    out = laplace_gradient(grad, epsilon=1e9, clip=0.01, secure_mode=True)
    assert out.dtype == torch.float32 and out.shape == grad.shape
    assert float(out.abs().sum()) == pytest.approx(0.005, rel=1e-4)
    # ε = 1: every coordinate's noise is Laplace(C/ε) around the clipped gradient.
    n = 5_000
    noisy = laplace_gradient(np.zeros(n), epsilon=1.0, clip=0.01, secure_mode=True)
    assert stats.kstest(noisy, stats.laplace(scale=0.01).cdf).pvalue > KS_ALPHA


def test_gradient_mechanism_carries_secure_mode() -> None:
    mechanism = GradientMechanism.from_dict(
        {"name": "laplace", "epsilon": 1.0, "clip": 0.01, "secure_mode": True}
    )
    assert mechanism.to_dict()["secure_mode"] is True
    a = mechanism.privatize(np.zeros(8), np.random.default_rng(0))
    b = mechanism.privatize(np.zeros(8), np.random.default_rng(0))
    assert not np.array_equal(a, b)
    with pytest.raises(PrivacyConfigError, match="secure_mode"):
        GradientMechanism(name="laplace", epsilon=1.0, clip=0.01, secure_mode="yes")


def test_secure_prs_sign_probability_and_two_point_support() -> None:
    epsilon_per_coordinate, clip, u, n = 1.0, 2.0, 0.5, 20_000
    signs = randomized_sign(
        np.full(n, u), epsilon_per_coordinate=epsilon_per_coordinate, clip=clip, secure_mode=True
    )
    assert set(np.unique(signs)) <= {-clip, clip}
    c = math.tanh(epsilon_per_coordinate / 2)
    p = (1 - c) / 2 + c * (u + clip) / (2 * clip)
    assert abs(np.mean(signs == clip) - p) <= K_SE * math.sqrt(p * (1 - p) / n)


def test_secure_lnmax_matches_continuous_laplace_lemma4() -> None:
    # Two classes with gap Δ: P(label ≠ j*) = (2 + γΔ)/(4·e^{γΔ}) for continuous Laplace
    # noise (Lemma 4 is exact here); the secure sampler must keep it.
    gamma, gap, n = 0.3, 5.0, 10_000
    labels = noisy_max(np.tile([gap, 0.0], (n, 1)), gamma=gamma, secure_mode=True)
    p = (2 + gamma * gap) / (4 * math.exp(gamma * gap))
    assert abs(np.mean(labels == 1) - p) <= K_SE * math.sqrt(p * (1 - p) / n)


def test_secure_gnmax_matches_the_discrete_gaussian_argmax() -> None:
    sigma, gap, n = 2.0, 2, 10_000
    labels = gaussian_noisy_max(np.tile([gap, 0], (n, 1)), sigma=sigma, secure_mode=True)
    # Label 1 iff Z₂ − Z₁ > gap (ties go to the lowest index, class 0).
    z, pmf = _integer_pmf(lambda z: -(z**2) / (2 * sigma**2), 40)
    difference = np.subtract.outer(z, z)  # Z₂ − Z₁
    p = float(np.sum(np.outer(pmf, pmf)[difference > gap]))
    assert abs(np.mean(labels == 1) - p) <= K_SE * math.sqrt(p * (1 - p) / n)


def test_secure_dirichlet_is_on_the_grid_and_has_the_right_marginal() -> None:
    k, eta, n = 5.0, 0.05, 5_000
    policy = np.tile([0.6, 0.3, 0.1], (n, 1))
    x = dirichlet_mechanism(policy, k=k, eta=eta, secure_mode=True)
    units = 2.0 ** secure_noise_grid_bits()
    np.testing.assert_array_equal(x * units, np.round(x * units))
    np.testing.assert_array_equal(x.sum(axis=1), 1.0)
    target = restrict_policy(policy[0], eta=eta)
    # Marginal x₀ ~ Beta(kπ̃₀, k(1 − π̃₀)); snapping moves it by < 2^-20.
    marginal = stats.beta(k * target[0], k * (1 - target[0]))
    assert stats.kstest(x[:, 0], marginal.cdf).pvalue > KS_ALPHA
    var = target * (1 - target) / (k + 1)
    assert np.all(np.abs(x.mean(axis=0) - target) <= K_SE * np.sqrt(var / n))
    # Torch in, torch out.
    out = dirichlet_mechanism(torch.tensor([[0.5, 0.5]]), k=k, eta=eta, secure_mode=True)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32


def secure_noise_grid_bits() -> int:
    from rllib_privacy.mechanisms import SECURE_GRID_BITS

    return SECURE_GRID_BITS


def test_snap_to_grid_rounds_within_one_unit_and_sums_to_one() -> None:
    x = np.random.default_rng(0).dirichlet([0.2, 1.0, 3.0, 0.01], size=500)
    snapped = snap_to_grid(x, bits=8)
    assert np.all(np.abs(snapped - x) < 2.0**-8)
    np.testing.assert_array_equal(snapped.sum(axis=1), 1.0)
    np.testing.assert_array_equal(snapped * 256, np.round(snapped * 256))


def test_secure_instance_laplace_uses_each_instances_scale() -> None:
    n = 5_000
    scales = np.repeat([0.5, 4.0], n)
    x = instance_laplace(np.zeros(2 * n), scales, secure_mode=True)
    for scale, part in ((0.5, x[:n]), (4.0, x[n:])):
        assert stats.kstest(part, stats.laplace(scale=scale).cdf).pvalue > KS_ALPHA


# ---- noise streams per local agent -----------------------------------------------------


def _draws(streams: NoiseStreams) -> np.ndarray:
    return streams.spawn().random(4)


def test_noise_streams_never_repeat_unless_deterministic(monkeypatch) -> None:
    monkeypatch.delenv(secure_noise.DETERMINISTIC_NOISE_ENV_VAR, raising=False)
    a, b = NoiseStreams(7, key=[1]), NoiseStreams(7, key=[1])
    assert not np.array_equal(_draws(a), _draws(b))  # a restarted process: fresh noise
    first, second = a.spawn().random(4), a.spawn().random(4)
    assert not np.array_equal(first, second)  # two agents of one process
    monkeypatch.setenv(secure_noise.DETERMINISTIC_NOISE_ENV_VAR, "1")
    c, d = NoiseStreams(7, key=[1]), NoiseStreams(7, key=[1])
    np.testing.assert_array_equal(_draws(c), _draws(d))
    assert not np.array_equal(_draws(NoiseStreams(7, key=[2])), _draws(NoiseStreams(7, key=[1])))
    # Without a seed there is nothing to reproduce: OS entropy even with the flag.
    assert not np.array_equal(_draws(NoiseStreams(None)), _draws(NoiseStreams(None)))


def _runner(seed: int, **training: object) -> object:
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
    from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import LDPA3CEnvRunner
    from rllib_privacy.envs.registry import register_envs

    register_envs()  # its default env is rllib_privacy/...: not registered in a unit-only run
    config = LDPA3CConfig().debugging(seed=seed).env_runners(num_envs_per_env_runner=2)
    # Public scores: the test compares the episodes' scores, which a private score would noise.
    config.privacy(privacy_score_mechanism="public")
    return LDPA3CEnvRunner(config=config.training(**training), worker_index=1)


def _agent_draws(runner: object) -> list[np.ndarray]:
    runner._agents = [None, None]
    return [runner._next_agent(slot).noise_rng.random(4) for slot in (0, 1)]


def test_ldp_a3c_runners_with_the_same_seed_and_index_draw_different_noise(monkeypatch) -> None:
    monkeypatch.delenv(secure_noise.DETERMINISTIC_NOISE_ENV_VAR, raising=False)
    first, restarted = _runner(3), _runner(3)
    a, b = _agent_draws(first), _agent_draws(restarted)
    assert not np.array_equal(a[0], a[1])  # agents of one runner: own streams
    assert not np.array_equal(a[0], b[0]) and not np.array_equal(a[1], b[1])

    # End to end: same seed → same episodes (exploration and environments are seeded),
    # but the released gradients carry different noise.
    module = first._learner().module["default_policy"]
    weights = torch.nn.utils.parameters_to_vector(module.parameters()).detach().numpy()
    kwargs = {"weights": weights, "weights_version": 0, "submissions_so_far": 0}
    one = first.submit_gradients(num_submissions=1, **kwargs)[0]
    two = restarted.submit_gradients(num_submissions=1, **kwargs)[0]
    assert one.score == two.score and one.env_steps == two.env_steps
    assert not np.array_equal(one.gradient, two.gradient)
    # Secure mode through the runner's learner: same episode, OpenDP noise, same ε.
    secure_runner = _runner(3, secure_mode=True)
    secure = secure_runner.submit_gradients(num_submissions=1, **kwargs)[0]
    mechanism = secure_runner._learner().gradient_mechanism_for_module(
        "default_policy", secure_runner.config
    )
    assert mechanism.secure_mode and mechanism.name == "laplace"
    assert secure.score == one.score and secure.epsilon == one.epsilon
    assert not np.array_equal(secure.gradient, one.gradient)

    monkeypatch.setenv(secure_noise.DETERMINISTIC_NOISE_ENV_VAR, "1")
    c, d = _agent_draws(_runner(3)), _agent_draws(_runner(3))
    np.testing.assert_array_equal(c[0], d[0])
    np.testing.assert_array_equal(c[1], d[1])


# ---- fixed-seed warning and config keys -----------------------------------------------


@pytest.fixture
def outside_tests(monkeypatch):
    """Pretend not to run under the tests, with a fresh once-per-setting memory."""
    monkeypatch.setattr(secure_noise, "running_tests", lambda: False)
    monkeypatch.delenv(secure_noise.DETERMINISTIC_NOISE_ENV_VAR, raising=False)
    monkeypatch.setattr(secure_noise, "_warned", set())


def test_tests_are_detected() -> None:
    # conftest.py sets RLLIB_PRIVACY_TESTING=1 (inherited by subprocesses and Ray workers).
    assert secure_noise.running_tests()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not secure_noise.warn_fixed_seed("a_seed_in_a_test")


def test_fixed_seed_warning_once_outside_tests_only(outside_tests, monkeypatch) -> None:
    with pytest.warns(PrivacyWarning, match="teacher_seed"):
        assert secure_noise.warn_fixed_seed("teacher_seed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not secure_noise.warn_fixed_seed("teacher_seed")  # once per process
        assert not secure_noise.warn_fixed_seed("other_seed", secure_mode=True)
    monkeypatch.setenv(secure_noise.DETERMINISTIC_NOISE_ENV_VAR, "1")
    with pytest.warns(PrivacyWarning, match="seed alone drives the privacy noise"):
        secure_noise.warn_fixed_seed("seed")


def test_configs_warn_about_a_fixed_seed_before_ray_starts(outside_tests) -> None:
    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
    from rllib_privacy.algorithms.pate_ppo import PATEPPOConfig

    with pytest.warns(PrivacyWarning, match=r"debugging\(seed"):
        LDPA3CConfig().debugging(seed=1).validate_ldp_settings()
    with pytest.warns(PrivacyWarning, match="teacher_seed"):
        with pytest.raises(PrivacyConfigError, match="teacher_checkpoint"):
            KickstartPPOConfig().training(teacher_seed=1).validate_kickstart_settings()
    with pytest.warns(PrivacyWarning, match="PATE labeler"):
        PATEPPOConfig().training(teacher_checkpoints="/nonexistent").debugging(
            seed=1
        ).validate_pate_settings()
    # Secure mode: the seed does not drive the noise, no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        LDPA3CConfig().debugging(seed=1).training(secure_mode=True).validate_ldp_settings()


def test_secure_mode_keys_reject_non_bools() -> None:
    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
    from rllib_privacy.algorithms.pate_ppo import PATEPPOConfig
    from rllib_privacy.envs.instance_laplace import parse_settings

    with pytest.raises(PrivacyConfigError, match="'privacy_secure_mode'"):
        LDPA3CConfig().training(secure_mode="yes").validate_ldp_settings()
    with pytest.raises(PrivacyConfigError, match="teacher_secure_mode"):
        KickstartPPOConfig().training(teacher_secure_mode=1).teacher_settings()
    with pytest.raises(PrivacyConfigError, match="pate_secure_mode"):
        PATEPPOConfig().training(
            teacher_checkpoints="/nonexistent", pate_secure_mode="true"
        ).validate_pate_settings()
    with pytest.raises(PrivacyConfigError, match="secure_mode"):
        parse_settings({"secure_mode": 1})
    config = LDPA3CConfig().training(mechanism="prs", epsilon=5.0, secure_mode=True)
    assert config.get_gradient_mechanism().secure_mode is True
    assert KickstartPPOConfig().training(teacher_secure_mode=True).teacher_settings().secure_mode


def test_ilm_env_release_uses_the_chosen_scales() -> None:
    from rllib_privacy.envs.instance_laplace import InstanceWiseLaplaceEnv

    env = InstanceWiseLaplaceEnv({"max_instances": 40, "secure_mode": True})
    env.reset(seed=0)
    a = env.release(np.random.default_rng(0))
    b = env.release(np.random.default_rng(0))
    assert a.shape == env.values.shape and not np.array_equal(a, b)


# ---- why: Mironov's attack on the textbook float sampler --------------------------------


def _textbook_laplace_outputs(loc: float, low: float, high: float) -> set[float]:
    """Every output in [low, high] of ``loc - ln(V)`` (scale 1), V = m·2^-52, m = 1..2^52.

    This is the textbook float sampler Mironov (2012) analysed: V has 52-bit resolution, so
    the noise takes finitely many float values, and ``loc + noise`` is rounded to a float.
    """
    # Positive noise n = -ln(V) lies in [low - loc, high - loc] iff V in this range.
    first = math.floor(2.0**52 * math.exp(-(high - loc))) - 2
    last = math.ceil(2.0**52 * math.exp(-(low - loc))) + 2
    noise = -np.log(np.arange(first, last + 1, dtype=np.float64) * 2.0**-52)
    outputs = loc + noise
    return set(outputs[(outputs >= low) & (outputs <= high)].tolist())


def test_textbook_float_laplace_has_input_dependent_outputs() -> None:
    # Window of 2000 consecutive floats just above 2 (spacing 2^-51 there).
    low, high = 2.0, 2.0 + 2000 * 2.0**-51
    from_zero = _textbook_laplace_outputs(0.0, low, high)
    from_one = _textbook_laplace_outputs(1.0, low, high)
    # Both inputs reach the window, but through different sets of floats: an output that
    # only input 1 can produce identifies it with certainty (infinite privacy loss), for
    # inputs at sensitivity distance 1. Secure mode's outputs are roundings of an exact
    # lattice sample, which reach every float in the window from any input.
    assert from_zero and from_one
    only_one = from_one - from_zero
    assert len(only_one) > 0.3 * len(from_one)
