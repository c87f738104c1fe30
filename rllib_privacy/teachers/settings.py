"""How the kickstarting teacher privatizes and budgets its answers: ``TeacherSettings``.

User guide: docs/components/kickstarting.md#what-it-protects.

The settings are the ``teacher_*`` keys of a kickstarting config, checked when they are
built (every message names its config key), plus the checks that need the action space
(η < 1/m, one release's δ below the δ budget) and δ of one release (eq. 6), which the config
check and the teacher compute the same way.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from rllib_privacy._validation import check_choice
from rllib_privacy.accounting.dirichlet import dirichlet_delta
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.teachers.answer_cache import MAX_CACHE_BITS

#: Teacher mechanisms: the Dirichlet mechanism, or none (plain, non-private kickstarting).
TEACHER_MECHANISMS: tuple[str, ...] = ("dirichlet", "none")
COMPOSITIONS: tuple[str, ...] = ("rdp", "basic", "advanced")


@dataclass(frozen=True)
class TeacherSettings:
    """How the teacher privatizes and budgets its answers.

    Attributes:
        mechanism: ``"dirichlet"`` or ``"none"`` (raw policy, no privacy: plain kickstarting).
        k: Initial concentration k₀ of the Dirichlet mechanism (paper: 5).
        vanishing_coefficient: c in (0, 1]; k is multiplied by c at each rollout after the first.
        eta: η of the restricted simplex Δ_{m,η}, 0 < η < 1/m.
        tau: τ of eq. 6 and 12, 0 < τ < η.
        adjacency: b, the L2 radius of adjacent observations (Definition 1).
        lipschitz: L of the teacher network s ↦ softmax(logits); None computes an upper bound
            from its weights (``policy_lipschitz_upper_bound``: softmax's 1/2 times a layered
            bound, at most the product of the layers' spectral norms).
        epsilon_budget: Total ε the teacher may spend (composition over all answered states;
            default 10: with δ = 1e-5 a budget a privacy engineer would sign off on).
        delta_budget: Total δ the teacher may spend (default 1e-5). Under ``"rdp"`` it is
            the δ at which the composed RDP curve is converted to the reported ε, so it must
            be below 1; under ``"basic"``/``"advanced"`` one release's δ (eq. 6 at k₀) must be
            below it (``check_release_delta``).
        min_k: Stop sharing once k_t < min_k.
        composition: How the ledger composes releases: ``"rdp"`` (default; Rényi DP of the
            Dirichlet mechanism, no per-release δ and no ln(1/τ) term), ``"basic"`` or
            ``"advanced"`` (of the per-release (ε, δ) of eq. 12 and eq. 6).
        delta_samples: Monte Carlo samples for δ's upper confidence bound.
        delta_confidence: Confidence of that bound.
        seed: Seed of the teacher's noise (None: fresh OS entropy). A fresh OS-entropy
            nonce is mixed in per process (see ``NoiseStreams``), so a resumed run never
            repeats noise it used before the crash.
        secure_mode: Secure Dirichlet releases (OS-entropy Gamma draws, grid-snapped
            policies; see ``dirichlet_mechanism``); the seed then does not drive the noise.
        cache_bits: 0 (default: every asked state is a fresh release) or the code length of
            the answer cache (``teachers.answer_cache``): the first state of each SimHash code
            is released, later states with that code get the same answer for free while the
            teacher shares, and a request is answered up to what the budget affords.

    """

    mechanism: str = "dirichlet"
    k: float = 5.0
    vanishing_coefficient: float = 0.9
    eta: float = 0.01
    tau: float = 0.001
    adjacency: float = 0.01
    lipschitz: float | None = None
    epsilon_budget: float = 10.0
    delta_budget: float = 1.0e-5
    min_k: float = 1.0e-3
    composition: str = "rdp"
    delta_samples: int = 100_000
    delta_confidence: float = 0.95
    seed: int | None = None
    secure_mode: bool = False
    cache_bits: int = 0

    def __post_init__(self) -> None:
        """Validates every field; messages name the config key ``teacher_<field>``."""
        check_choice(
            "teacher_mechanism", self.mechanism, TEACHER_MECHANISMS, error=PrivacyConfigError
        )
        check_choice(
            "teacher_composition", self.composition, COMPOSITIONS, error=PrivacyConfigError
        )
        _check_positive("teacher_k", self.k)
        coefficient = _check_positive("teacher_vanishing_coefficient", self.vanishing_coefficient)
        if coefficient > 1.0:
            raise PrivacyConfigError(
                f"teacher_vanishing_coefficient must be in (0, 1], got {self.vanishing_coefficient}"
            )
        eta = _check_positive("teacher_eta", self.eta)
        tau = _check_positive("teacher_tau", self.tau)
        if tau >= eta:
            raise PrivacyConfigError(
                f"teacher_tau must be in (0, teacher_eta={eta}), got {self.tau}"
            )
        _check_positive("teacher_adjacency", self.adjacency, allow_zero=True)
        if self.lipschitz is not None:
            _check_positive("teacher_lipschitz", self.lipschitz, allow_zero=True)
        _check_positive("teacher_epsilon_budget", self.epsilon_budget, allow_inf=True)
        delta_budget = _check_positive("teacher_delta_budget", self.delta_budget)
        if delta_budget > 1.0:
            raise PrivacyConfigError(
                f"teacher_delta_budget must be in (0, 1], got {self.delta_budget}"
            )
        if self.composition == "rdp" and delta_budget >= 1.0:
            raise PrivacyConfigError(
                "teacher_delta_budget must be below 1 with teacher_composition rdp (it is the "
                f"δ the RDP curve is converted at), got {self.delta_budget}"
            )
        _check_positive("teacher_min_k", self.min_k, allow_zero=True)
        if not isinstance(self.delta_samples, int) or self.delta_samples < 100:
            raise PrivacyConfigError(
                f"teacher_delta_samples must be an int >= 100, got {self.delta_samples!r}"
            )
        confidence = _check_positive("teacher_delta_confidence", self.delta_confidence)
        if confidence >= 1.0:
            raise PrivacyConfigError(
                f"teacher_delta_confidence must be in (0, 1), got {self.delta_confidence}"
            )
        if self.seed is not None and (not isinstance(self.seed, int) or self.seed < 0):
            raise PrivacyConfigError(
                f"teacher_seed must be a non-negative int or null, got {self.seed!r}"
            )
        if not isinstance(self.secure_mode, bool):
            raise PrivacyConfigError(
                f"teacher_secure_mode must be true or false, got {self.secure_mode!r}"
            )
        bits = self.cache_bits
        if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits <= MAX_CACHE_BITS:
            raise PrivacyConfigError(
                f"teacher_cache_bits must be an int in [0, {MAX_CACHE_BITS}] (0: no answer "
                f"cache), got {bits!r}"
            )

    def check_num_actions(self, num_actions: int) -> None:
        """Raise if η is not below 1/m for this action space."""
        if self.mechanism == "dirichlet" and self.eta >= 1.0 / num_actions:
            raise PrivacyConfigError(
                f"teacher_eta must be below 1/m = {1.0 / num_actions:.4g} for {num_actions} "
                f"actions, got {self.eta}"
            )

    def release_delta(self, k: float, num_actions: int, *, rollout: int) -> float:
        """δ of one release at concentration k (eq. 6: the smaller of two upper bounds).

        Its Monte Carlo draws use their own stream, seeded by the rollout, so that they do
        not shift the noise stream of the answers and the same k gives the same δ in the
        config check and in the teacher.
        """
        return float(
            dirichlet_delta(
                k=k,
                eta=self.eta,
                tau=self.tau,
                num_actions=num_actions,
                num_samples=self.delta_samples,
                confidence=self.delta_confidence,
                rng=np.random.default_rng([7, rollout]),
            )
        )

    def check_release_delta(self, num_actions: int) -> None:
        """Raise if one release's δ at k₀ reaches the δ budget (``"basic"``/``"advanced"``).

        Such a teacher could not answer a single state; without this check it would only
        refuse inside the run. RDP composition has no per-release δ.
        """
        if self.mechanism != "dirichlet" or self.composition == "rdp":
            return
        delta = self.release_delta(self.k, num_actions, rollout=1)
        if delta >= self.delta_budget:
            raise PrivacyConfigError(
                f"the per-release delta of the Dirichlet mechanism at teacher_k={self.k} "
                f"(eq. 6 with teacher_tau={self.tau}, teacher_eta={self.eta}, {num_actions} "
                f"actions) is {delta:.3g}, at or above teacher_delta_budget="
                f"{self.delta_budget}: under teacher_composition {self.composition} not one "
                "state could be answered. Raise teacher_delta_budget, lower teacher_tau, or use "
                "teacher_composition rdp (no per-release delta)"
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of the settings."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TeacherSettings:
        """Inverse of ``to_dict``; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise PrivacyConfigError(f"unknown teacher settings {unknown}; known: {sorted(known)}")
        return cls(**values)


def _check_positive(
    name: str, value: Any, *, allow_zero: bool = False, allow_inf: bool = False
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PrivacyConfigError(f"{name} must be a number, got {value!r}{_yaml_hint(value)}")
    number = float(value)
    bad = math.isnan(number) or (math.isinf(number) and not allow_inf)
    bad = bad or number < 0 or (number == 0 and not allow_zero)
    if bad:
        allowed = ">= 0" if allow_zero else "> 0"
        raise PrivacyConfigError(
            f"{name} must be a finite number {allowed}{' or inf' if allow_inf else ''}, "
            f"got {value!r}"
        )
    return number


def _yaml_hint(value: Any) -> str:
    """Why a number arrived as text: YAML 1.1 reads ``1.0e7`` (no exponent sign) as a string."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return ""
        return f" (a string; YAML reads {value} as text: write it as {float(value):.1e})"
    return ""
