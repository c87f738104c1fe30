"""The Dirichlet mechanism for releasing policies (Gohari et al., privacy-preserving kickstarting).

Reference: P. Gohari, B. Chen, B. Wu, M. Hale, U. Topcu, "Privacy-Preserving Kickstarting Deep
Reinforcement Learning with Privacy-Aware Learners", §3 (eq. 5, Theorem 1) and §4 (Lemma 1,
eq. 15). See docs/components/kickstarting.md. The privacy parameters (ε, δ) of a release are
computed in
``rllib_privacy.accounting.dirichlet``.

A teacher's policy π(s) ∈ Δ_m is first restricted to Δ_{m,η} = {x : Σx = 1, x_i ≥ η} by mixing
it with the uniform distribution, π̃ = (1 − mη)·π + η, and then released as one draw
x ~ Dir(k·π̃), whose mean is π̃ and whose spread shrinks as k grows (Lemma 1).
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any, TypeVar

import numpy as np

from rllib_privacy._validation import (
    as_float64_array,
    check_bool,
    check_finite_positive,
    check_int_in_range,
    is_torch_tensor,
)
from rllib_privacy.mechanisms.secure_noise import os_entropy_generator

__all__ = [
    "SECURE_GRID_BITS",
    "argmax_label_distribution",
    "concentration_radius",
    "dirichlet_mechanism",
    "kickstart_threshold",
    "norm_concentration_radius",
    "restrict_policy",
    "sample_dirichlet",
    "snap_to_grid",
]

PolicyT = TypeVar("PolicyT")

# Entries down to this value are tolerated as float round-off of a zero probability (and
# clipped to 0); anything more negative is not a policy.
_NEGATIVE_TOLERANCE = 1e-6
#: Secure mode snaps released policies to multiples of 2^-SECURE_GRID_BITS (≈ 9.5e-7).
SECURE_GRID_BITS = 20
# How far a row sum may be from 1 (float32 softmax outputs over many actions drift by ~1e-6).
_SUM_TOLERANCE = 1e-4


def _check_eta(eta: Any, num_actions: int) -> float:
    if isinstance(eta, bool) or not isinstance(eta, numbers.Real) or not math.isfinite(eta):
        raise ValueError(f"eta must be a finite number in [0, 1/m), got {eta!r}")
    eta = float(eta)
    if not 0.0 <= eta < 1.0 / num_actions:
        raise ValueError(
            f"eta must be in [0, 1/m) = [0, {1.0 / num_actions!r}) for m = {num_actions} "
            f"actions, got {eta!r}"
        )
    return eta


def _num_actions(policy: Any) -> int:
    shape = tuple(policy.shape)
    if len(shape) == 0 or shape[-1] < 2:
        raise ValueError(
            "policy must have the m >= 2 action probabilities in its last dimension, "
            f"got shape {shape}"
        )
    if math.prod(shape) == 0:
        raise ValueError(f"policy must have at least one row, got shape {shape}")
    return shape[-1]


def _validated_policy_numpy(policy: Any) -> np.ndarray:
    """Return a validated, renormalized float64 copy of a numpy/array-like policy."""
    array = as_float64_array("policy", policy)
    _num_actions(array)
    smallest = float(array.min())
    if smallest < -_NEGATIVE_TOLERANCE:
        raise ValueError(
            f"policy is not a probability vector: it has a negative entry {smallest!r}"
        )
    np.clip(array, 0.0, None, out=array)
    sums = array.sum(axis=-1, keepdims=True)
    worst = float(np.max(np.abs(sums - 1.0)))
    if worst > _SUM_TOLERANCE:
        raise ValueError(
            f"policy is not a probability vector: a row sum differs from 1 by {worst:.3g} "
            f"(allowed: {_SUM_TOLERANCE})"
        )
    # Renormalize away the tolerated round-off so that π̃ lies exactly on Δ_{m,η}.
    array /= sums
    return array


def _validated_policy_torch(policy: Any) -> Any:
    """Return a validated, renormalized float64 copy of a torch policy (same device)."""
    torch = sys.modules["torch"]
    if policy.is_complex():
        raise ValueError(f"policy must be real-valued, got dtype {policy.dtype}")
    _num_actions(policy)
    array = policy.detach().to(dtype=torch.float64)
    if not bool(torch.isfinite(array).all()):
        raise ValueError("policy must contain only finite values (got NaN or inf)")
    smallest = float(array.min())
    if smallest < -_NEGATIVE_TOLERANCE:
        raise ValueError(
            f"policy is not a probability vector: it has a negative entry {smallest!r}"
        )
    array = array.clamp(min=0.0)
    sums = array.sum(dim=-1, keepdim=True)
    worst = float((sums - 1.0).abs().max())
    if worst > _SUM_TOLERANCE:
        raise ValueError(
            f"policy is not a probability vector: a row sum differs from 1 by {worst:.3g} "
            f"(allowed: {_SUM_TOLERANCE})"
        )
    return array / sums


def _restrict_float64(policy: Any, eta: Any) -> tuple[Any, float]:
    """Validate and restrict; float64 numpy array or float64 tensor on the input's device."""
    if is_torch_tensor(policy):
        array = _validated_policy_torch(policy)
    else:
        array = _validated_policy_numpy(policy)
    num_actions = array.shape[-1]
    eta = _check_eta(eta, num_actions)
    return (1.0 - num_actions * eta) * array + eta, eta


def _restore(result: Any, like: Any) -> Any:
    """Cast a float64 result back to ``like``'s kind, dtype and device."""
    if is_torch_tensor(like):
        torch = sys.modules["torch"]
        dtype = like.dtype if like.is_floating_point() else torch.get_default_dtype()
        if not is_torch_tensor(result):
            result = torch.from_numpy(result)
        return result.to(device=like.device, dtype=dtype)
    if isinstance(like, np.ndarray) and np.issubdtype(like.dtype, np.floating):
        return result.astype(like.dtype, copy=False)
    return result


def restrict_policy(policy: PolicyT, *, eta: float) -> PolicyT:
    """Restrict a policy to Δ_{m,η} by mixing with uniform: π̃ = (1 − mη)·π + η.

    Every entry of π̃ is at least η and rows still sum to 1. Mixing is (1 − mη)-Lipschitz in π,
    so it multiplies the teacher network's Lipschitz constant by (1 − mη)
    (docs/components/kickstarting.md).

    Entries in [-1e-6, 0) are treated as round-off and clipped to 0, and rows are renormalized
    before mixing (row sums must already be within 1e-4 of 1).

    Args:
        policy: Action probabilities, numpy array / array-like or torch tensor; the last
            dimension holds the m >= 2 actions, leading dimensions are batch dimensions.
        eta: The restriction η, a number in [0, 1/m).

    Returns:
        π̃, of the same kind, shape and floating dtype as ``policy`` (same device for torch,
        detached from any autograd graph). Computed in float64.

    Raises:
        ValueError: If ``eta`` is outside [0, 1/m), or ``policy`` has fewer than 2 actions,
            a NaN/inf entry, an entry < -1e-6, or a row whose sum is not 1 within 1e-4
            ("policy is not a probability vector").

    """
    restricted, _ = _restrict_float64(policy, eta)
    return _restore(restricted, policy)


def _log_gamma_numpy(alpha: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    # log g with g ~ Gamma(α, 1), via g = G·U^{1/α}, G ~ Gamma(α + 1), U ~ U(0, 1] (Marsaglia
    # & Tsang's boost): G never underflows because α + 1 >= 1, and log(U)/α is a finite, very
    # negative number for tiny α where Gamma(α) itself would round to exactly 0.
    positive = alpha > 0.0
    safe_alpha = np.where(positive, alpha, 1.0)
    gamma = rng.standard_gamma(safe_alpha + 1.0)
    uniform = 1.0 - rng.random(size=alpha.shape)  # in (0, 1], so log never sees 0
    log_g = np.log(gamma) + np.log(uniform) / safe_alpha
    # A zero concentration (η = 0 and π_i = 0) is a point mass at x_i = 0.
    return np.where(positive, log_g, -np.inf)


def _log_gamma_torch(alpha: Any, generator: Any) -> Any:
    # Same construction as _log_gamma_numpy, with torch's batched gamma sampler (the public
    # torch.distributions.Gamma.sample takes no generator, torch._standard_gamma does).
    torch = sys.modules["torch"]
    positive = alpha > 0.0
    safe_alpha = torch.where(positive, alpha, torch.ones_like(alpha))
    gamma = torch._standard_gamma(safe_alpha + 1.0, generator=generator)
    uniform = 1.0 - torch.rand(
        alpha.shape, dtype=alpha.dtype, device=alpha.device, generator=generator
    )
    log_g = torch.log(gamma) + torch.log(uniform) / safe_alpha
    return torch.where(positive, log_g, torch.full_like(log_g, -math.inf))


def _normalize_log(log_g: Any) -> Any:
    """Return g / Σg from log g, normalized by log-sum-exp.

    The largest entry becomes ≈ 1, so a row can neither underflow to all zeros nor be NaN.
    """
    if is_torch_tensor(log_g):
        torch = sys.modules["torch"]
        return torch.softmax(log_g, dim=-1)
    shifted = log_g - log_g.max(axis=-1, keepdims=True)
    x = np.exp(shifted)
    x /= x.sum(axis=-1, keepdims=True)
    return x


def sample_dirichlet(alpha: Any, *, rng: Any) -> Any:
    """Draw x ~ Dir(α) for every row of ``alpha`` in log space (safe for tiny α_i).

    No validation beyond the generator type: callers pass float64 concentrations α_i >= 0 with
    at least one positive entry per row (α_i = 0 gives x_i = 0).

    Args:
        alpha: float64 numpy array or torch tensor of concentrations, last dimension = m.
        rng: ``np.random.Generator`` (numpy or torch ``alpha``) or ``torch.Generator`` (torch
            ``alpha`` only, on the same device).

    Returns:
        Samples on the simplex, float64, same kind/shape/device as ``alpha``.

    Raises:
        ValueError: If ``rng`` is not a supported generator for ``alpha``.

    """
    if is_torch_tensor(alpha):
        torch = sys.modules["torch"]
        if isinstance(rng, torch.Generator):
            return _normalize_log(_log_gamma_torch(alpha, rng))
        if isinstance(rng, np.random.Generator):
            draws = _normalize_log(_log_gamma_numpy(alpha.detach().cpu().numpy(), rng))
            return torch.from_numpy(draws).to(device=alpha.device)
        raise ValueError(
            "rng must be a numpy.random.Generator or a torch.Generator for torch input, "
            f"got {type(rng).__name__}"
        )
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            "rng must be a numpy.random.Generator for numpy input "
            f"(use np.random.default_rng(seed)), got {type(rng).__name__}"
        )
    return _normalize_log(_log_gamma_numpy(np.asarray(alpha, dtype=np.float64), rng))


def snap_to_grid(x: np.ndarray, *, bits: int = SECURE_GRID_BITS) -> np.ndarray:
    """Round simplex rows to multiples of ``2^-bits`` that still sum to exactly 1.

    Largest-remainder rounding: every entry is floored to the grid, then the rows' missing
    grid units go to the entries with the largest remainders. Each entry moves by less than
    ``2^-bits``; the results are exact floats (small integers times a power of two), so the
    rows sum to 1 exactly.

    Args:
        x: float64 array, rows on the simplex (last dimension = m).
        bits: Grid resolution, an int in [1, 52].

    Returns:
        The snapped float64 array, same shape.

    """
    bits = check_int_in_range("bits", bits, low=1, high=52)
    units = float(2**bits)
    scaled = np.asarray(x, dtype=np.float64) * units
    floored = np.floor(scaled)
    missing = np.rint(units - floored.sum(axis=-1, keepdims=True))
    # Rank of each entry's remainder within its row (0 = largest).
    order = np.argsort(-(scaled - floored), axis=-1, kind="stable")
    ranks = np.argsort(order, axis=-1, kind="stable")
    return (floored + (ranks < missing)) / units


def dirichlet_mechanism(
    policy: PolicyT,
    *,
    k: float,
    eta: float,
    rng: np.random.Generator | Any | None = None,
    secure_mode: bool = False,
) -> PolicyT:
    """Release a policy through the Dirichlet mechanism: x ~ Dir(k·π̃), π̃ = (1 − mη)·π + η.

    Formula (paper eq. 5): density Γ(k)·Π_i x_i^{kπ̃_i − 1} / Γ(kπ̃_i) on the simplex, mean π̃,
    Var(x_i) = π̃_i(1 − π̃_i)/(k + 1). Each row is one release; its (ε, δ) follow from
    Theorem 1 (``rllib_privacy.accounting.dirichlet_privacy``), which assumes π̃ comes
    from an L-Lipschitz map of the observation (sensitivity: ‖π̃(s) − π̃(s')‖₂ ≤ L·b for
    b-adjacent observations) and η > 0.

    Sampling: g_i ~ Gamma(kπ̃_i, 1) and x = g/Σg, done in log space (log g = log G + log(U)/α
    with G ~ Gamma(α + 1), U ~ U(0, 1], then a log-sum-exp normalization) so that tiny
    concentrations kπ̃_i (say k = 1e-3) never give NaN or an all-zero row. Float64 throughout;
    the result is cast back to the input's dtype.

    Secure mode (``secure_mode=True``; ``rng`` is then ignored): OpenDP has no exact
    sampler for Gamma variates, so the draws come from a numpy generator seeded per call
    with 128 OS-entropy bits (``secure_noise.os_entropy_generator``), and the release is
    snapped to the grid of multiples of ``2^-20`` with rows summing to exactly 1
    (``snap_to_grid``). Snapping is post-processing, so (ε, δ) are unchanged; it
    removes the low-order float bits in which an input-dependent artifact of the float
    Gamma/log sampler (the Mironov 2012 kind of leak) would live. This is a mitigation,
    not a proof: the coarse bits still come from a float sampler. Entries below ``2^-21``
    may become 0 (already inside δ's event ``min_i x_i < τ`` when τ exceeds the grid).

    Args:
        policy: The teacher's action probabilities, numpy array or torch tensor, last
            dimension = m >= 2 actions, any leading batch dimensions (one release per row).
        k: Concentration k, a finite number > 0 (larger = more accurate, less private).
        eta: Restriction η in [0, 1/m) (the privacy analysis needs η > 0).
        rng: ``np.random.Generator`` (numpy or torch input) or ``torch.Generator`` (torch
            input, on the policy's device); None uses a fresh unseeded numpy generator.
            Ignored in secure mode.
        secure_mode: OS-entropy Gamma draws and a grid-snapped release (see above).

    Returns:
        The released policies, same kind, shape and floating dtype as ``policy`` (same device
        for torch, no autograd graph), every row on the simplex (entries >= 0, sum 1).

    Raises:
        ValueError: If ``k`` is not a finite number > 0, ``eta`` is outside [0, 1/m), the
            policy is not a batch of probability vectors (see ``restrict_policy``), or
            ``rng`` is not a supported generator, or ``secure_mode`` is not a bool.

    """
    k = check_finite_positive("k", k)
    restricted, _ = _restrict_float64(policy, eta)
    if check_bool("secure_mode", secure_mode):
        if is_torch_tensor(restricted):
            restricted = restricted.cpu().numpy()
        draws = sample_dirichlet(k * restricted, rng=os_entropy_generator())
        return _restore(snap_to_grid(draws), policy)
    if rng is None:
        rng = np.random.default_rng()
    return _restore(sample_dirichlet(k * restricted, rng=rng), policy)


def _check_beta(beta: Any) -> float:
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not 0.0 < float(beta) < 1.0:
        raise ValueError(f"beta must be a number in (0, 1), got {beta!r}")
    return float(beta)


def concentration_radius(*, k: float, beta: float) -> float:
    """Lemma 1 radius r = sqrt(ln(1/β) / (2(k + 1))), as the paper uses it for α_λ.

    The paper (Lemma 1, citing Gohari et al. 2020) states P(‖Dir_k(π) − π‖₂ >= r) <= β. That
    does NOT hold for the L2 norm in general: measured with 2·10⁵ draws, m = 6, k = 5 gives
    P ≈ 0.10 at β = 0.05 and ≈ 0.33 at β = 0.2 (``tests/unit/test_dirichlet_mechanism.py``). What
    holds is the bound for every fixed unit direction u: P(⟨u, Dir_k(π) − π⟩ >= r) <= β,
    because a Dirichlet vector with total concentration k is sub-Gaussian with variance proxy
    1/(4(k + 1)) (Marchal & Arbel 2017). The radius is kept as specified because the
    kickstart threshold α_λ = λ·r (eq. 15) is a tuned heuristic; for a radius that provably
    bounds the norm use ``norm_concentration_radius``.

    Args:
        k: Concentration k, a number > 0 (``math.inf`` gives 0: no noise).
        beta: Failure probability β in (0, 1).

    Returns:
        The radius r >= 0.

    Raises:
        ValueError: If ``k`` is not a number > 0 or ``beta`` is not in (0, 1).

    """
    k = check_finite_positive("k", k, allow_inf=True)
    beta = _check_beta(beta)
    if math.isinf(k):
        return 0.0
    return math.sqrt(math.log(1.0 / beta) / (2.0 * (k + 1.0)))


def norm_concentration_radius(*, k: float, beta: float, num_actions: int) -> float:
    """A radius r with P(‖Dir_k(π) − π‖₂ >= r) <= β for every π ∈ Δ_m (Markov's inequality).

    E‖x − π‖₂² = (1 − ‖π‖₂²)/(k + 1) <= (1 − 1/m)/(k + 1) for x ~ Dir(k·π), so
    r = sqrt((1 − 1/m) / (β·(k + 1))) works. Larger than ``concentration_radius`` for
    small β, but valid for the norm.

    Args:
        k: Concentration k, a number > 0 (``math.inf`` gives 0).
        beta: Failure probability β in (0, 1).
        num_actions: m, an int >= 2.

    Returns:
        The radius r >= 0.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    k = check_finite_positive("k", k, allow_inf=True)
    beta = _check_beta(beta)
    num_actions = check_int_in_range("num_actions", num_actions, low=2)
    if math.isinf(k):
        return 0.0
    return math.sqrt((1.0 - 1.0 / num_actions) / (beta * (k + 1.0)))


def kickstart_threshold(*, k: float, beta: float, lam: float) -> float:
    """Privacy-aware kickstart threshold α_λ = λ·sqrt(ln(1/β) / (2(k + 1))) (paper eq. 15).

    The student's kickstart term φ_λ is switched off inside the α_λ ball around the released
    policy. λ = 0 gives the privacy-unaware student; k = ∞ (no mechanism) gives α_λ = 0.

    Args:
        k: Concentration k, a number > 0 or ``math.inf``.
        beta: Confidence parameter β in (0, 1).
        lam: Shrink factor λ, a finite number >= 0.

    Returns:
        α_λ >= 0.

    Raises:
        ValueError: If ``k`` is not > 0, ``beta`` is not in (0, 1) or ``lam`` is not a finite
            number >= 0.

    """
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not 0.0 <= lam < math.inf:
        raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
    return float(lam) * concentration_radius(k=k, beta=beta)


def argmax_label_distribution(policy: Any, *, k: float, eta: float) -> np.ndarray:
    """P(argmax_i x_i = j) for one release x ~ Dir(k·π̃), π̃ = (1 − mη)·π + η: the label's law.

    A student that trains on the one-hot action of each answer's largest entry (argmax
    labels) sees action j with this probability. With x = g/Σg, g_i ~ Gamma(kπ̃_i, 1)
    independent, the largest x is the largest g, so, substituting t = F_j⁻¹(u),

        P(argmax = j) = ∫₀^∞ f_j(t)·Π_{i≠j} F_i(t) dt = ∫₀¹ Π_{i≠j} F_i(F_j⁻¹(u)) du,

    F the Gamma distribution functions (scipy.stats.gamma). The second form has a bounded
    integrand on [0, 1] (no density singularity at a small shape kπ̃_j < 1); it is integrated
    by ``scipy.integrate.quad``. For m = 2 it is P(Beta(kπ̃₁, kπ̃₂) > 1/2).

    Args:
        policy: One probability vector π over m >= 2 actions.
        k: Concentration k, a finite number > 0.
        eta: Restriction η in [0, 1/m).

    Returns:
        float64 array of m probabilities. They sum to 1 up to the quadrature's error (about
        1e-10), as long as every kπ̃_i is at least about 0.01; below that the Gamma quantiles
        underflow and the sum shows how much was lost.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    from scipy import integrate, stats

    k = check_finite_positive("k", k)
    restricted, _ = _restrict_float64(np.asarray(policy, dtype=np.float64), eta)
    if restricted.ndim != 1:
        raise ValueError(f"policy must be one probability vector, got shape {restricted.shape}")
    shapes = k * restricted
    result = np.empty(shapes.size)
    for j, shape in enumerate(shapes):
        if shape == 0.0:
            result[j] = 0.0  # Gamma(0) is a point mass at 0 (η = 0 and π_j = 0): never largest
            continue
        others = np.delete(shapes, j)
        others = others[others > 0.0]  # a point mass at 0 is below every t > 0

        def integrand(u: float, shape: float = shape, others: np.ndarray = others) -> float:
            return float(np.prod(stats.gamma.cdf(stats.gamma.ppf(u, shape), others)))

        result[j] = integrate.quad(integrand, 0.0, 1.0, limit=200, epsabs=1e-12)[0]
    return result
