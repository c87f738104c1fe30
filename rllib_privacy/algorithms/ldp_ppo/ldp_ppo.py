"""LDPPPO: RLlib's PPO whose learner clips and noises every gradient update.

User guide: docs/components/ldp-ppo.md. The learner is
``LDPPPOTorchLearner`` (PPO's torch learner with
``LDPGradientPrivatizerMixin``); this module adds what the bare
learner class cannot give: a config class with ``.privacy()`` keys that a YAML ``config:``
can set (``rllib train -f``), validation that names the key before Ray starts, and the
ledgers' figures at the top level of every result (``privacy/epsilon_spent`` ...).

Privacy unit: the learner's training data as a whole. Every gradient update is one ε-LDP
release of the whole clipped gradient vector, recorded in the learner's ``LDPLedger`` (part
of the learner's checkpointed state: a restored run continues the spent budget).
"""

from __future__ import annotations

import math
from typing import Any

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    LEARNER_RESULTS,
)
from typing_extensions import Self

from rllib_privacy._validation import check_finite_positive
from rllib_privacy.algorithms.config_keys import GroupedConfigMixin
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.learners.gradient_privatizer import (
    LEARNER_CONFIG_KEY,
    LDPGradientPrivatizerMixin,
)
from rllib_privacy.mechanisms import MECHANISM_NAMES, GradientMechanism
from rllib_privacy.utils import metrics as keys

#: Top-level result keys, first in every result (Tune's progress table shows them).
HEADLINE_KEYS = ("episode_return_mean", "epsilon_spent", "releases")

#: Clipping size C per mechanism when ``privacy_clip`` is None (Ono & Takahashi's §4
#: defaults; PrivUnit bounds the L2 norm by C).
DEFAULT_CLIP = {"laplace": 0.01, "prs": 1.0, "privunitg": 1.0, "privunit2": 1.0, "none": 1.0}

#: GradientMechanism field -> the config key that sets it (names the key in its errors).
_MECHANISM_KEYS = {
    "name": "privacy_mechanism",
    "epsilon": "privacy_epsilon",
    "clip": "privacy_clip",
    "reduced_dim": "privacy_reduced_dim",
    "debias": "privacy_debias",
    "secure_mode": "privacy_secure_mode",
}


class LDPPPOConfig(GroupedConfigMixin, PPOConfig):
    """PPO config plus the gradient mechanism's keys (``.privacy()``).

    Its keys (docs/configuration.md) are PPO's plus ``privacy_*``, set by ``.privacy()``;
    the default learner class is ``LDPPPOTorchLearner``, which
    reads the mechanism from ``get_gradient_mechanism``.

    Example::

        config = (
            LDPPPOConfig()
            .environment("CartPole-v1")
            .privacy(privacy_mechanism="laplace", privacy_epsilon=5.0, privacy_clip=0.01)
        )
        algo = config.build_algo()
    """

    CONFIG_GROUPS = {
        "privacy": (
            "privacy_mechanism",
            "privacy_epsilon",
            "privacy_clip",
            "privacy_reduced_dim",
            "privacy_debias",
            "privacy_secure_mode",
            "privacy_epsilon_budget",
        ),
    }

    def __init__(self, algo_class: type[Algorithm] | None = None) -> None:
        super().__init__(algo_class=algo_class or LDPPPO)
        self.privacy_mechanism = "laplace"
        self.privacy_epsilon = 1.0
        self.privacy_clip: float | None = None
        self.privacy_reduced_dim: int | None = None
        self.privacy_debias = False
        self.privacy_secure_mode = False
        self.privacy_epsilon_budget = math.inf

    def privacy(
        self,
        *,
        privacy_mechanism: str = NotProvided,
        privacy_epsilon: float = NotProvided,
        privacy_clip: float | None = NotProvided,
        privacy_reduced_dim: int | None = NotProvided,
        privacy_debias: bool = NotProvided,
        privacy_secure_mode: bool = NotProvided,
        privacy_epsilon_budget: float = NotProvided,
    ) -> Self:
        """Sets the mechanism that clips and noises every gradient update, and its budget.

        User guide: docs/components/ldp-ppo.md.

        Args:
            privacy_mechanism: ``laplace`` (Ono & Takahashi Alg. 2), ``prs`` (Alg. 3),
                ``privunitg``, ``privunit2`` or ``none`` (no noise; needs ε = ``inf``).
            privacy_epsilon: ε of ONE release, i.e. one gradient update. PPO makes
                ``num_epochs`` × (minibatches per epoch) updates per iteration, so the
                spent ε grows by that many ε every iteration.
            privacy_clip: Clipping size C; ``None`` = the mechanism's default (0.01
                Laplace, 1 PRS and PrivUnit). Laplace clips the L1 norm to C/2, PrivUnit
                the L2 norm to C, PRS each projected coordinate to [-C, C].
            privacy_reduced_dim: PRS only: projection size d̂; ``None`` =
                max{1, min{d, ⌊ε/2.5⌋}}.
            privacy_debias: PRS only: rescale the random signs so E[output] = gradient.
            privacy_secure_mode: Floating-point-safe noise (OpenDP samplers, OS entropy).
                Same ε.
            privacy_epsilon_budget: Most ε the learner's data may spend (``inf`` = no
                limit). An update that would exceed it is refused before it is applied:
                the run stops with ``BudgetExhaustedError``. End runs cleanly earlier
                with a stop criterion on ``epsilon_spent``.

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    @property
    def effective_clip(self) -> float:
        """C actually used: ``privacy_clip`` or the mechanism's default."""
        if self.privacy_clip is None:
            return DEFAULT_CLIP.get(self.privacy_mechanism, 1.0)
        return float(self.privacy_clip)

    def get_gradient_mechanism(self) -> GradientMechanism:
        """The mechanism of one gradient update (validated; errors name the config key).

        ``LDPGradientPrivatizerMixin`` calls this on the learner's config, in preference
        to ``learner_config_dict["ldp_gradient"]``.

        Raises:
            PrivacyConfigError: Naming the ``privacy_*`` key of a bad value.

        """
        if self.privacy_clip is not None:
            check_finite_positive(
                "config key 'privacy_clip'", self.privacy_clip, error=PrivacyConfigError
            )
        try:
            return GradientMechanism(
                name=self.privacy_mechanism,
                epsilon=self.privacy_epsilon,
                clip=self.effective_clip,
                reduced_dim=self.privacy_reduced_dim,
                debias=self.privacy_debias,
                secure_mode=self.privacy_secure_mode,
            )
        except PrivacyConfigError as e:
            message = str(e)
            # GradientMechanism's messages start with the field they are about.
            field = next((f for f in _MECHANISM_KEYS if message.startswith(f)), "name")
            raise PrivacyConfigError(f"config key '{_MECHANISM_KEYS[field]}': {message}") from None

    @override(PPOConfig)
    def get_default_learner_class(self) -> type[Learner]:
        """PPO's torch learner with LDP gradient noise."""
        # It lives in learners/, not in a torch/ subpackage here: stock PPO uses it too
        # (`learner_class=LDPPPOTorchLearner`), and its checkpoints pickle that path.
        from rllib_privacy.learners.ldp_ppo import LDPPPOTorchLearner

        return LDPPPOTorchLearner

    @override(PPOConfig)
    def validate(self) -> None:
        """PPO's checks plus the gradient mechanism's; every message names the key."""
        super().validate()
        self.validate_privacy_settings()

    def validate_privacy_settings(self) -> None:
        """Raises PrivacyConfigError for a bad ``privacy_*`` setting (no Ray needed)."""
        if self.privacy_mechanism not in MECHANISM_NAMES:
            raise PrivacyConfigError(
                f"config key 'privacy_mechanism' must be one of {list(MECHANISM_NAMES)}, "
                f"got {self.privacy_mechanism!r}"
            )
        self.get_gradient_mechanism()
        check_finite_positive(
            "config key 'privacy_epsilon_budget'",
            self.privacy_epsilon_budget,
            allow_inf=True,
            error=PrivacyConfigError,
        )
        if self.framework_str != "torch":
            raise PrivacyConfigError(
                f"config key 'framework' must be 'torch' for LDPPPO, got {self.framework_str!r}"
            )
        if self.num_learners > 1:
            # DDP averages gradients in backward(); each learner would then add its own
            # noise to the same average and the copies of the model would drift apart.
            raise PrivacyConfigError(
                "config key 'num_learners' must be 0 or 1 for LDPPPO: each learner would "
                "add its own noise after DDP's all-reduce"
            )
        if (self.learner_config_dict or {}).get(LEARNER_CONFIG_KEY) is not None:
            raise PrivacyConfigError(
                f"config key 'learner_config_dict' sets {LEARNER_CONFIG_KEY!r}, which "
                "LDPPPOConfig ignores: set the mechanism with the privacy_* keys "
                "(.privacy())"
            )
        if self._learner_class is not None and not issubclass(
            self._learner_class, LDPGradientPrivatizerMixin
        ):
            raise PrivacyConfigError(
                f"config key 'learner_class' is {self._learner_class.__name__}, which adds "
                "no gradient noise: LDPPPO needs a learner with LDPGradientPrivatizerMixin"
            )


class LDPPPO(PPO):
    """PPO with LDP gradient noise; the learners' ledgers' figures at the top level.

    Every result carries ``privacy/epsilon_spent``, ``privacy/delta_spent`` and
    ``privacy/releases`` (and ``epsilon_spent``, ``releases`` among the headline keys
    Tune's table shows first), copied from what the learner logs per module under
    ``learners/<module_id>/privacy/``. With several modules each has its own ledger (its
    own gradient): the top-level ε and δ are the MAX over modules (the guarantee of the
    worst-off module's data; their data are disjoint) and the releases the SUM over them.
    With ``privacy_mechanism: none`` nothing is recorded and ``epsilon_spent`` is ``inf``.
    """

    #: Result keys this algorithm adds at the top level (usable as Tune stop keys).
    TOP_LEVEL_RESULT_KEYS = (*HEADLINE_KEYS, "timesteps_total")

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> LDPPPOConfig:
        """Returns the default LDPPPOConfig."""
        return LDPPPOConfig()

    @override(PPO)
    def training_step(self) -> None:
        """One PPO iteration, then the learners' ledgers' figures at the top level."""
        super().training_step()
        figures = self._privacy_figures()
        values: dict[str, float] = {
            keys.PRIVACY_EPSILON_SPENT: figures["epsilon_spent"],
            keys.PRIVACY_DELTA_SPENT: figures["delta_spent"],
            keys.PRIVACY_RELEASES: figures["releases"],
            "epsilon_spent": figures["epsilon_spent"],
            "releases": figures["releases"],
        }
        for key, value in values.items():
            self.metrics.log_value(tuple(key.split("/")) if "/" in key else key, value, window=1)

    def _privacy_figures(self) -> dict[str, float]:
        """Max ε and δ over the modules' ledgers, and their summed releases."""
        if self.config.privacy_mechanism == "none":
            return {"epsilon_spent": math.inf, "delta_spent": 0.0, "releases": 0}
        learner_results = self.metrics.peek(LEARNER_RESULTS, default={}) or {}
        epsilon, delta, releases = 0.0, 0.0, 0
        for module_results in learner_results.values():
            privacy = module_results.get("privacy") if isinstance(module_results, dict) else None
            if not isinstance(privacy, dict):
                continue
            epsilon = max(epsilon, float(privacy.get("epsilon_spent", 0.0)))
            delta = max(delta, float(privacy.get("delta_spent", 0.0)))
            releases += int(privacy.get("releases", 0))
        return {"epsilon_spent": epsilon, "delta_spent": delta, "releases": releases}

    @override(Algorithm)
    def step(self) -> dict[str, Any]:
        """One iteration; headline keys first, env steps as ``timesteps_total``."""
        return keys.ppo_family_results(super().step(), HEADLINE_KEYS)
