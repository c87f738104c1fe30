"""(ε, δ) of one Dirichlet-mechanism release (Gohari et al., Theorem 1, eq. 6 and 12).

Setting: the teacher's restricted policy s ↦ π̃(s) ∈ Δ_{m,η} is L-Lipschitz (L2→L2) and two
observations are adjacent when they are at L2 distance at most b, so adjacent inputs give
policies at distance at most L·b. One release x ~ Dir(k·π̃(s)) is then (ε, δ)-DP with

* ε = √m·L·b·k·ln(1/τ) + (m−1)·lnΓ(kη) + lnΓ(k(1−(m−1)η)) − m·lnΓ(k/m)   (eq. 12),
* δ = P(min_i x_i < τ) for x ~ Dir(k·v), v = [η, …, η, 1−(m−1)η]            (eq. 6),

for any τ ∈ (0, η) (the split point between the "δ" part Δ_m ∖ Δ_{m,τ} and the "ε" part
Δ_{m,τ} of the output space). L must be the constant of the *restricted* map, i.e.
(1 − mη)·L_network (``rllib_privacy.mechanisms.restricted_lipschitz``).

δ has no closed form for m > 2. Two upper bounds are available and ``dirichlet_delta``
reports the smaller: the union bound over coordinates (each marginal of a Dirichlet is a Beta
distribution, so Σ_i P(x_i < τ) is exact with ``scipy.special.betainc``; it equals δ for
m = 2 and is tight when δ is small), and a Monte Carlo estimate with a one-sided
Clopper–Pearson upper confidence bound (tighter when the events overlap, i.e. δ is large;
the paper's eq. 13 uses Chebyshev with a misprinted N²). The union bound matters under
composition: Monte Carlo cannot certify a δ below about 3/N, whereas per-state releases
composed over thousands of states need δ per release far below that.

Reproducing the paper's "k = 5 gives (4.46, 0.05)-DP" for AirRaid (m = 6): the paper states
neither η, τ, L nor b, and once δ fixes τ for a given η, eq. 12 only pins down the product L·b,
so the pair is reproducible as a one-parameter family, not uniquely. One member: η = 0.1,
τ = 2e-5 gives δ = 0.0507 (10⁶ Monte Carlo samples, Clopper–Pearson 95% upper bound 0.0510)
and ε = 4.46 for L·b = 0.0154 (the lnΓ terms alone contribute 2.42). With L·b = 0, ε = 4.46
needs η = 0.0744, and then τ = 1e-6 gives δ ≈ 0.056. No η < 0.0744 gives ε = 4.46 for any
L·b >= 0 (the lnΓ terms alone exceed it). ``tests/unit/test_dirichlet_accounting.py`` checks the
first member.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

import numpy as np
from scipy import special, stats

from rllib_privacy._validation import (
    check_finite_positive,
    check_generator,
    check_int_in_range,
)
from rllib_privacy.mechanisms.dirichlet import sample_dirichlet

__all__ = [
    "DirichletPrivacy",
    "dirichlet_delta",
    "dirichlet_delta_estimate",
    "dirichlet_delta_union_bound",
    "dirichlet_epsilon",
    "dirichlet_privacy",
]

# Monte Carlo rows drawn at once (bounds memory at ~ 8·m·2^16 bytes per array).
_CHUNK = 1 << 16


def _check_nonnegative(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if not 0.0 <= float(value) < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_common(k: Any, eta: Any, tau: Any, num_actions: Any) -> tuple[float, float, float, int]:
    """Validate k > 0 finite, m >= 2, 0 < η < 1/m and 0 < τ < η, naming the bad argument."""
    k = check_finite_positive("k", k)
    num_actions = check_int_in_range("num_actions", num_actions, low=2)
    if isinstance(eta, bool) or not isinstance(eta, numbers.Real):
        raise ValueError(f"eta must be a number in (0, 1/m), got {eta!r}")
    if not 0.0 < float(eta) < 1.0 / num_actions:
        raise ValueError(
            f"eta must be in (0, 1/m) = (0, {1.0 / num_actions!r}) for m = {num_actions} "
            f"actions, got {eta!r}"
        )
    eta = float(eta)
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real):
        raise ValueError(f"tau must be a number in (0, eta), got {tau!r}")
    if not 0.0 < float(tau) < eta:
        raise ValueError(f"tau must be in (0, eta) = (0, {eta!r}), got {tau!r}")
    return k, eta, float(tau), num_actions


def dirichlet_epsilon(
    *,
    k: float,
    eta: float,
    tau: float,
    lipschitz: float,
    adjacency: float,
    num_actions: int,
) -> float:
    """ε of one Dirichlet release (Theorem 1, eq. 12).

    ε = √m·L·b·k·ln(1/τ) + (m−1)·lnΓ(kη) + lnΓ(k(1−(m−1)η)) − m·lnΓ(k/m), evaluated with
    ``scipy.special.gammaln``. The lnΓ part (a bound on the normalizing constants' ratio)
    does not depend on L·b and is >= 0. It does not vanish as k → 0: the ln k terms cancel and
    it tends to (m−1)·ln(1/(mη)) + ln(1/(m(1−(m−1)η))) (1.456 for m = 6, η = 0.1), so every
    release costs at least that much ε however small k is, and a finite budget always runs
    out (contrary to the paper's "k = 0 is (0, 0)-DP" remark; the terms do not
    grow as k → 0, they level off).

    Args:
        k: Concentration k, a finite number > 0.
        eta: Restriction η in (0, 1/m).
        tau: Split point τ in (0, η).
        lipschitz: L, Lipschitz constant of the restricted policy map, a finite number >= 0.
        adjacency: b, the adjacency radius in observation space, a finite number >= 0.
        num_actions: m, an int >= 2.

    Returns:
        ε >= 0.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    k, eta, tau, m = _check_common(k, eta, tau, num_actions)
    lipschitz = _check_nonnegative("lipschitz", lipschitz)
    adjacency = _check_nonnegative("adjacency", adjacency)
    sensitivity_term = math.sqrt(m) * lipschitz * adjacency * k * math.log(1.0 / tau)
    # (m−1)·lnΓ(kη) + lnΓ(k(1−(m−1)η)) − m·lnΓ(k/m), summed with fsum: the three terms can be
    # large and nearly cancel when η is close to 1/m.
    normalizer_term = math.fsum(
        [
            (m - 1) * float(special.gammaln(k * eta)),
            float(special.gammaln(k * (1.0 - (m - 1) * eta))),
            -m * float(special.gammaln(k / m)),
        ]
    )
    # Jensen (lnΓ convex) makes normalizer_term >= 0 exactly; clip the round-off.
    return sensitivity_term + max(normalizer_term, 0.0)


def _check_confidence(confidence: Any) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    return float(confidence)


def _count_outside(
    k: float, eta: float, tau: float, m: int, num_samples: int, rng: np.random.Generator
) -> int:
    """Number of draws of Dir(k·v) with min_i x_i < τ (v the vertex of Δ_{m,η})."""
    vertex = np.full(m, eta)
    vertex[-1] = 1.0 - (m - 1) * eta
    alpha = k * vertex
    outside = 0
    for start in range(0, num_samples, _CHUNK):
        rows = min(_CHUNK, num_samples - start)
        draws = sample_dirichlet(np.broadcast_to(alpha, (rows, m)), rng=rng)
        outside += int(np.count_nonzero(draws.min(axis=1) < tau))
    return outside


def dirichlet_delta_estimate(
    *,
    k: float,
    eta: float,
    tau: float,
    num_actions: int,
    num_samples: int = 100_000,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
) -> tuple[float, float]:
    """Monte Carlo estimate of δ (eq. 6) with a one-sided upper confidence bound.

    Draws N samples x ~ Dir(k·v), v = [η, …, η, 1−(m−1)η] (the vertex of Δ_{m,η} where
    P(Dir ∉ Δ_{m,τ}) is largest, by log-concavity; paper eq. 8-11), counts X draws with
    min_i x_i < τ and returns δ̂ = X/N and the one-sided Clopper–Pearson bound
    U = Beta.ppf(confidence; X + 1, N − X) (U = 1 when X = N). P(δ <= U) >= confidence
    exactly, for every δ. Clopper–Pearson is chosen over Hoeffding's δ̂ + sqrt(ln(1/(1−c))/(2N))
    because for small δ its margin is ~ sqrt(δ/N) instead of ~ sqrt(1/N) (about 3× tighter at
    δ ≈ 0.05, N = 10⁵).

    Args:
        k: Concentration k, a finite number > 0.
        eta: Restriction η in (0, 1/m).
        tau: Split point τ in (0, η).
        num_actions: m, an int >= 2.
        num_samples: N, an int >= 1.
        confidence: Confidence level c in (0, 1) of the upper bound.
        rng: numpy Generator for the draws; None uses a fresh unseeded one.

    Returns:
        ``(point_estimate, upper_bound)``, both in [0, 1].

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    k, eta, tau, m = _check_common(k, eta, tau, num_actions)
    num_samples = check_int_in_range("num_samples", num_samples, low=1)
    confidence = _check_confidence(confidence)
    rng = check_generator(rng)
    outside = _count_outside(k, eta, tau, m, num_samples, rng)
    if outside == num_samples:
        upper = 1.0
    else:
        upper = float(stats.beta.ppf(confidence, outside + 1, num_samples - outside))
    return outside / num_samples, min(1.0, upper)


def dirichlet_delta_union_bound(*, k: float, eta: float, tau: float, num_actions: int) -> float:
    """Deterministic upper bound on δ (eq. 6) by the union bound over coordinates.

    For x ~ Dir(k·v), v = [η, …, η, 1−(m−1)η], each x_i ~ Beta(k·v_i, k·(1 − v_i)), so

        δ = P(min_i x_i < τ) <= Σ_i P(x_i < τ) = (m−1)·I_τ(kη, k(1−η)) + I_τ(k(1−(m−1)η), k(m−1)η)

    with I the regularized incomplete Beta function. For m = 2 the two events are disjoint
    (x_1 + x_2 = 1 and τ < η < 1/2), so the bound is δ itself.

    Args:
        k: Concentration k, a finite number > 0.
        eta: Restriction η in (0, 1/m).
        tau: Split point τ in (0, η).
        num_actions: m, an int >= 2.

    Returns:
        The bound, in [0, 1].

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    k, eta, tau, m = _check_common(k, eta, tau, num_actions)
    small = special.betainc(k * eta, k * (1.0 - eta), tau)
    large_share = 1.0 - (m - 1) * eta
    large = special.betainc(k * large_share, k * (1.0 - large_share), tau)
    return float(min(1.0, (m - 1) * small + large))


def dirichlet_delta(
    *,
    k: float,
    eta: float,
    tau: float,
    num_actions: int,
    num_samples: int = 100_000,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
) -> float:
    """δ of one Dirichlet release (eq. 6): the smaller of two upper bounds.

    The deterministic union bound (``dirichlet_delta_union_bound``) and the Monte Carlo
    Clopper–Pearson bound of ``dirichlet_delta_estimate`` (which holds with probability
    >= confidence); the minimum holds whenever the Monte Carlo bound does. The Monte Carlo
    draws are skipped when the union bound is already below what N samples can certify
    (1 − (1 − confidence)^(1/N), the bound for zero hits), and for two actions, where the union
    bound is exact: x_1 + x_2 = 1 and τ < 1/2, so at most one coordinate is below τ.

    Args:
        k: Concentration k, a finite number > 0.
        eta: Restriction η in (0, 1/m).
        tau: Split point τ in (0, η).
        num_actions: m, an int >= 2.
        num_samples: N, an int >= 1.
        confidence: Confidence level c in (0, 1).
        rng: numpy Generator for the draws; None uses a fresh unseeded one.

    Returns:
        The upper confidence bound on δ, in [0, 1].

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    union = dirichlet_delta_union_bound(k=k, eta=eta, tau=tau, num_actions=num_actions)
    num_samples = check_int_in_range("num_samples", num_samples, low=1)
    confidence = _check_confidence(confidence)
    if num_actions == 2 or union <= 1.0 - (1.0 - confidence) ** (1.0 / num_samples):
        return union
    monte_carlo = dirichlet_delta_estimate(
        k=k,
        eta=eta,
        tau=tau,
        num_actions=num_actions,
        num_samples=num_samples,
        confidence=confidence,
        rng=rng,
    )[1]
    return min(union, monte_carlo)


@dataclasses.dataclass(frozen=True)
class DirichletPrivacy:
    """The (ε, δ) guarantee of one Dirichlet release at concentration k.

    Attributes:
        k: The concentration k.
        epsilon: ε from eq. 12.
        delta: δ from eq. 6 (a Monte Carlo upper confidence bound).

    """

    k: float
    epsilon: float
    delta: float


def dirichlet_privacy(
    *,
    k: float,
    eta: float,
    tau: float,
    lipschitz: float,
    adjacency: float,
    num_actions: int,
    num_samples: int = 100_000,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
) -> DirichletPrivacy:
    """(ε, δ) of one release: ``dirichlet_epsilon`` and ``dirichlet_delta`` together.

    Args:
        k: Concentration k, a finite number > 0.
        eta: Restriction η in (0, 1/m).
        tau: Split point τ in (0, η).
        lipschitz: L of the restricted policy map, a finite number >= 0.
        adjacency: b, a finite number >= 0.
        num_actions: m, an int >= 2.
        num_samples: Monte Carlo samples N for δ, an int >= 1.
        confidence: Confidence level of δ's upper bound, in (0, 1).
        rng: numpy Generator for the δ estimate; None uses a fresh unseeded one.

    Returns:
        ``DirichletPrivacy(k, epsilon, delta)``.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    epsilon = dirichlet_epsilon(
        k=k, eta=eta, tau=tau, lipschitz=lipschitz, adjacency=adjacency, num_actions=num_actions
    )
    delta = dirichlet_delta(
        k=k,
        eta=eta,
        tau=tau,
        num_actions=num_actions,
        num_samples=num_samples,
        confidence=confidence,
        rng=rng,
    )
    return DirichletPrivacy(k=float(k), epsilon=epsilon, delta=delta)
