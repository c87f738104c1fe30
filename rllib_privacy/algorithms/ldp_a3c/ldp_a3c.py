"""PGC-A3C: A3C whose local agents send only locally private gradients.

Ono & Takahashi, "Locally Private Distributed Reinforcement Learning" (§3, Alg. 1).
Every submission comes from a local agent (an episode on an EnvRunner, with its
private environment parameter ψ_n) that computes the A3C gradient, privatizes it
with the Laplace or projected-random-sign mechanism and sends only the noisy
gradient and its public score. The aggregator buffers ``aggregator_max_buffer`` gradients,
applies θ ← θ − lr·mean(B) and sends θ back with the next request (eq. 22).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import deque
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_LEN_MEAN,
    EPISODE_RETURN_MEAN,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES_LIFETIME,
)
from typing_extensions import Self

from rllib_privacy.accounting import LDPLedger, PrivacyJournalError
from rllib_privacy.accounting.journal import SNAPSHOT, ReplayJournal, record_kind
from rllib_privacy.accounting.shuffle import shuffle_epsilon
from rllib_privacy.algorithms.config_keys import (
    GroupedConfigMixin,
    LegacyCountExplorationMixin,
)
from rllib_privacy.algorithms.ldp_a3c.fleet import evaluation_gravities, greedy_evaluation
from rllib_privacy.algorithms.ldp_a3c.gradient_aggregator import GradientBuffer
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import (
    LDPA3CEnvRunner,
    exploration_alpha,
)
from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission
from rllib_privacy.envs import CARTPOLE_GRAVITY_ENV_ID
from rllib_privacy.envs.cartpole_gravity import (
    PAPER_GRAVITY_CHOICES,
    validate_positive_choices,
)
from rllib_privacy.errors import BudgetExhaustedError, PrivacyConfigError
from rllib_privacy.exploration import ExplorationSpec
from rllib_privacy.mechanisms import MECHANISM_NAMES, GradientMechanism
from rllib_privacy.mechanisms.secure_noise import warn_fixed_seed
from rllib_privacy.teachers.journaling import algorithm_journal_path, check_journal_dir
from rllib_privacy.utils import metrics as keys
from rllib_privacy.utils.strict_config import StrictConfigMixin

#: Paper defaults of the clipping size C per mechanism (§4, "Hyper Parameters").
DEFAULT_CLIP = {"laplace": 0.01, "prs": 1.0, "privunitg": 1.0, "privunit2": 1.0, "none": 1.0}
#: Paper defaults of |B| per mechanism (§4.1: buffering helps PRS, hurts Laplace).
#: PrivUnit's release is unbiased but has MSE ≈ d·C²/ε²-ish: it needs averaging.
DEFAULT_MAX_BUFFER = {"laplace": 1, "prs": 100, "privunitg": 100, "privunit2": 100, "none": 1}
#: Mechanisms whose clip C bounds the L2 norm (the others: L1 norm C/2).
L2_MECHANISMS = ("privunitg", "privunit2")
#: Gravities of the greedy evaluation that no local agent trains on (default).
DEFAULT_HELDOUT_GRAVITIES = (9.6, 9.75, 9.85, 10.0)
ACTION_SELECTIONS = ("epsilon_argmax", "sample")
AGGREGATOR_OPTIMIZERS = ("sgd", "adam")
#: Moving-mean window and success threshold of the paper's FST metric (eq. 26).
SCORE_WINDOW = 10
#: Window of the sustained criterion ``ldp/solved_at`` (a random walk of the weights can
#: pass the paper's 10-submission window; see docs/components/ldp-a3c.md).
SOLVED_WINDOW = 100

#: Where a local agent's visit counts live (``count_exploration_scope``).
COUNT_EXPLORATION_SCOPES = ("agent", "env_runner")
_REQUEST_TAG = "ldp_submit"
#: Component name of PGC-A3C's privacy journal (``<journal dir>/ldp_a3c.jsonl``).
JOURNAL_COMPONENT = "ldp_a3c"

logger = logging.getLogger(__name__)

#: Result keys copied to the top level (Tune's table shows the first four).
HEADLINE_KEYS = ("score_mean", "epsilon_per_agent", "submissions", "submissions_per_second")


class LDPA3CConfig(
    GroupedConfigMixin, LegacyCountExplorationMixin, StrictConfigMixin, AlgorithmConfig
):
    """Configuration of PGC-A3C (``LDPA3C``); defaults are the paper's settings.

    Its keys (docs/configuration.md) are grouped by builder method: ``.privacy()`` (the
    gradient mechanism), ``.agents()`` (the local agents and the fleet),
    ``.aggregator()``, ``.scoring()`` (FST and the greedy evaluation) and
    ``.count_exploration()``; RLlib's own keys (``lr``, ``gamma``, ``vf_loss_coeff``,
    ``entropy_coeff``) stay in ``.training()``.

    Example::

        config = (
            LDPA3CConfig()
            .environment("rllib_privacy/CartPoleGravity-v0")
            .privacy(privacy_mechanism="laplace", privacy_epsilon=5.0)
            .env_runners(num_env_runners=2)
        )
        algo = config.build_algo()
    """

    key_reference = "LDPA3C"
    #: Nested keys checked by ``rllib train -f`` before Ray starts.
    config_dict_keys = {"count_exploration_config": ExplorationSpec.keys()}
    CONFIG_GROUPS = {
        "privacy": (
            "privacy_mechanism",
            "privacy_epsilon",
            "privacy_clip",
            "privacy_policy_clip_share",
            "privacy_reduced_dim",
            "privacy_debias",
            "privacy_secure_mode",
            "privacy_zero_signal_control",
            "privacy_shuffle_delta",
            "privacy_journal_dir",
        ),
        "agents": (
            "agents_per_env_runner",
            "agents_submissions_per_agent",
            "agents_episodes_per_submission",
            "agents_action_selection",
            "agents_exploration_alpha",
            "agents_exploration_alpha_zero_at",
            "agents_loss_reduction",
            "agents_normalize_advantages",
        ),
        "aggregator": (
            "aggregator_max_buffer",
            "aggregator_optimizer",
            "aggregator_submissions_per_iteration",
            "aggregator_submissions_per_request",
        ),
        "scoring": (
            "scoring_fst_target_score",
            "scoring_eval_episodes",
            "scoring_eval_heldout_gravities",
        ),
        "count_exploration": ("count_exploration_config", "count_exploration_scope"),
    }
    LEGACY_CONFIG_KEYS = {
        "mechanism": "privacy_mechanism",
        "epsilon": "privacy_epsilon",
        "clip": "privacy_clip",
        "policy_clip_share": "privacy_policy_clip_share",
        "reduced_dim": "privacy_reduced_dim",
        "debias": "privacy_debias",
        "secure_mode": "privacy_secure_mode",
        "zero_signal_control": "privacy_zero_signal_control",
        "shuffle_delta": "privacy_shuffle_delta",
        "submissions_per_agent": "agents_submissions_per_agent",
        "episodes_per_submission": "agents_episodes_per_submission",
        "action_selection": "agents_action_selection",
        "exploration_alpha": "agents_exploration_alpha",
        "exploration_alpha_zero_at": "agents_exploration_alpha_zero_at",
        "loss_reduction": "agents_loss_reduction",
        "normalize_advantages": "agents_normalize_advantages",
        "max_buffer": "aggregator_max_buffer",
        "submissions_per_iteration": "aggregator_submissions_per_iteration",
        "submissions_per_request": "aggregator_submissions_per_request",
        "fst_target_score": "scoring_fst_target_score",
        "eval_episodes": "scoring_eval_episodes",
        "eval_heldout_gravities": "scoring_eval_heldout_gravities",
        "count_exploration": "count_exploration_config",
    }
    LEGACY_TRAINING_KWARGS = {
        **{old: new for old, new in LEGACY_CONFIG_KEYS.items() if old != "count_exploration"},
        "privacy_journal_dir": "privacy_journal_dir",
        "agents_per_env_runner": "agents_per_env_runner",
        "aggregator_optimizer": "aggregator_optimizer",
    }

    def __init__(self, algo_class: type[Algorithm] | None = None) -> None:
        super().__init__(algo_class=algo_class or LDPA3C)
        self.env = CARTPOLE_GRAVITY_ENV_ID
        self.env_runner_cls = LDPA3CEnvRunner
        self.num_env_runners = 2
        self.max_requests_in_flight_per_env_runner = 1
        # Nothing to merge: local agents have no connector state worth syncing.
        self._dont_auto_sync_env_runner_states = True
        # Paper §4 "Hyper Parameters".
        self.lr = 0.5
        self.gamma = 0.99
        self.vf_loss_coeff = 0.5
        self.entropy_coeff = 0.01
        self.privacy_mechanism = "laplace"
        self.privacy_epsilon = 1.0
        self.privacy_clip: float | None = None
        self.privacy_policy_clip_share: float | None = None
        self.privacy_reduced_dim: int | None = None
        self.privacy_debias = False
        self.privacy_secure_mode = False
        self.privacy_zero_signal_control = False
        self.privacy_shuffle_delta = 1e-6
        self.privacy_journal_dir: str | None = None
        self.agents_per_env_runner = 1
        self.agents_submissions_per_agent = 1
        self.agents_episodes_per_submission = 1
        self.agents_action_selection = "epsilon_argmax"
        self.agents_exploration_alpha = 0.5
        self.agents_exploration_alpha_zero_at = 900
        self.agents_loss_reduction = "sum"
        self.agents_normalize_advantages = False
        self.aggregator_max_buffer: int | None = None
        self.aggregator_optimizer = "sgd"
        self.aggregator_submissions_per_iteration = 100
        self.aggregator_submissions_per_request = 1
        self.scoring_fst_target_score = 195.0
        self.scoring_eval_episodes = 100
        self.scoring_eval_heldout_gravities: list[float] = list(DEFAULT_HELDOUT_GRAVITIES)
        # Count-based exploration bonus of the local agents (off unless a dict is given).
        self.count_exploration_config: dict[str, Any] | None = None
        self.count_exploration_scope = "agent"

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        vf_loss_coeff: float = NotProvided,  # type: ignore[assignment]
        entropy_coeff: float = NotProvided,  # type: ignore[assignment]
        **kwargs: Any,
    ) -> Self:
        """RLlib's ``training()`` plus the loss weights of the paper's eq. 15-18.

        The keywords this method took before the keys got their own builder methods
        (``mechanism``, ``epsilon``, ``max_buffer``, ...) still work, with a
        DeprecationWarning naming the new key and method.

        Args:
            vf_loss_coeff: λ, weight of the value loss.
            entropy_coeff: β, weight of the entropy bonus.
            **kwargs: Forwarded to ``AlgorithmConfig.training``.

        Returns:
            This updated config.

        """
        super().training(**kwargs)
        if vf_loss_coeff is not NotProvided:
            self.vf_loss_coeff = vf_loss_coeff
        if entropy_coeff is not NotProvided:
            self.entropy_coeff = entropy_coeff
        return self

    def privacy(
        self,
        *,
        privacy_mechanism: str = NotProvided,  # type: ignore[assignment]
        privacy_epsilon: float = NotProvided,  # type: ignore[assignment]
        privacy_clip: float | None = NotProvided,  # type: ignore[assignment]
        privacy_policy_clip_share: float | None = NotProvided,  # type: ignore[assignment]
        privacy_reduced_dim: int | None = NotProvided,  # type: ignore[assignment]
        privacy_debias: bool = NotProvided,  # type: ignore[assignment]
        privacy_secure_mode: bool = NotProvided,  # type: ignore[assignment]
        privacy_zero_signal_control: bool = NotProvided,  # type: ignore[assignment]
        privacy_shuffle_delta: float = NotProvided,  # type: ignore[assignment]
        privacy_journal_dir: str | os.PathLike[str] | None = NotProvided,  # type: ignore[assignment]
    ) -> Self:
        """Sets the gradient mechanism every local agent applies before anything leaves it.

        Args:
            privacy_mechanism: ``laplace`` (Alg. 2), ``prs`` (Alg. 3), ``privunitg`` (Asi,
                Feldman & Talwar 2022), ``privunit2`` (Bhowmick et al. 2018) or ``none``.
            privacy_epsilon: Total ε of one local agent (split as ε/T over its T =
                ``agents_submissions_per_agent`` submissions); ``inf`` = non-private.
            privacy_clip: Clipping size C; ``None`` = paper default (0.01 Laplace, 1 PRS,
                1 PrivUnit). Laplace clips the L1 norm to C/2, PrivUnit the L2 norm to C.
            privacy_policy_clip_share: ``None`` = one joint clip (paper); ρ in (0, 1) =
                policy and value gradients pre-clipped to ρ and (1−ρ) of the bound.
            privacy_reduced_dim: PRS projection size d̂; ``None`` = max{1, min{d, ⌊ε/2.5⌋}}.
            privacy_debias: PRS only: rescale the random signs so E[output] = gradient.
            privacy_secure_mode: Floating-point-safe noise (OpenDP Laplace; PRS bits from
                OS entropy); the seed then does not drive the noise. Same ε.
            privacy_zero_signal_control: Replace every gradient by zeros before the
                mechanism: a no-signal control that shows what the noise alone does.
            privacy_shuffle_delta: δ of ``privacy/epsilon_shuffled``, the central ε a
                trusted shuffler of each buffer of |B| reports would give (Feldman,
                McMillan & Talwar 2021).
            privacy_journal_dir: Folder of the write-ahead privacy journal; ``None`` =
                ``<trial dir>/privacy_journal`` (stable across ``--resume``). It cannot be
                switched off: a run without it could forget releases in a crash.

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def agents(
        self,
        *,
        agents_per_env_runner: int = NotProvided,  # type: ignore[assignment]
        agents_submissions_per_agent: int = NotProvided,  # type: ignore[assignment]
        agents_episodes_per_submission: int = NotProvided,  # type: ignore[assignment]
        agents_action_selection: str = NotProvided,  # type: ignore[assignment]
        agents_exploration_alpha: float = NotProvided,  # type: ignore[assignment]
        agents_exploration_alpha_zero_at: int = NotProvided,  # type: ignore[assignment]
        agents_loss_reduction: str = NotProvided,  # type: ignore[assignment]
        agents_normalize_advantages: bool = NotProvided,  # type: ignore[assignment]
    ) -> Self:
        """Sets what one local agent does: episodes, actions, its A3C loss, the fleet.

        Args:
            agents_per_env_runner: Local agents each EnvRunner simulates at once (a
                vectorized fleet: one CartPole per agent, per-agent gradients with
                ``torch.func.vmap``); 1 = one agent at a time. Above 1 needs
                ``rllib_privacy/CartPoleGravity-v0`` and no count exploration.
            agents_submissions_per_agent: T of the multi-round variant (§3.3): each agent
                submits T gradients at ε/T each.
            agents_episodes_per_submission: Episodes an agent runs (in its own
                environment) before it submits ONE gradient of their mean loss: still one
                release. Fleet only.
            agents_action_selection: ``epsilon_argmax`` (paper) or ``sample``.
            agents_exploration_alpha: α₀ of the random-action schedule.
            agents_exploration_alpha_zero_at: Submissions after which α reaches 0.
            agents_loss_reduction: ``sum`` over the episode (paper) or ``mean``.
            agents_normalize_advantages: Shift and scale each agent's advantages over its
                own steps to zero mean and unit variance before the policy loss.

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def aggregator(
        self,
        *,
        aggregator_max_buffer: int | None = NotProvided,  # type: ignore[assignment]
        aggregator_optimizer: str = NotProvided,  # type: ignore[assignment]
        aggregator_submissions_per_iteration: int = NotProvided,  # type: ignore[assignment]
        aggregator_submissions_per_request: int = NotProvided,  # type: ignore[assignment]
    ) -> Self:
        """Sets how the aggregator buffers and applies the privatized gradients (eq. 22).

        Args:
            aggregator_max_buffer: |B|; ``None`` = paper default (1 Laplace, 100 PRS and
                PrivUnit).
            aggregator_optimizer: ``sgd`` (θ ← θ − lr·mean(B), paper) or ``adam``.
            aggregator_submissions_per_iteration: Submissions per training iteration.
            aggregator_submissions_per_request: Episodes one EnvRunner runs per remote call
                (all with the same θ; more = faster, staler gradients). With a fleet it is
                rounded up to a multiple of ``agents_per_env_runner`` (whole rounds).

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def scoring(
        self,
        *,
        scoring_fst_target_score: float = NotProvided,  # type: ignore[assignment]
        scoring_eval_episodes: int = NotProvided,  # type: ignore[assignment]
        scoring_eval_heldout_gravities: float | list[float] = NotProvided,  # type: ignore[assignment]
    ) -> Self:
        """Sets how a run is scored: the paper's FST and a greedy evaluation.

        Args:
            scoring_fst_target_score: Θ of the first-success-time metric.
            scoring_eval_episodes: Greedy evaluation episodes of the current weights per
                iteration (``ldp/eval_return_mean``), half on the training gravities and
                half on ``scoring_eval_heldout_gravities``; 0 = off. CartPoleGravity only.
            scoring_eval_heldout_gravities: Gravities no local agent trains on.

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def count_exploration(
        self,
        *,
        count_exploration_config: dict[str, Any] | None = NotProvided,  # type: ignore[assignment]
        count_exploration_scope: str = NotProvided,  # type: ignore[assignment]
    ) -> Self:
        """Adds Tang et al.'s count bonus to each local agent's rewards.

        Every local agent hashes the states of its own episode (SimHash, BASS or a key
        function), counts them, and trains on r + β·f(n(φ(s))) in its A3C loss; the
        public score stays the extrinsic return. The bonus is computed from the agent's
        own states only, inside its EnvRunner, and influences nothing but the gradient that
        is clipped and privatized, so each release stays ε/T-LDP for that agent
        (docs/components/ldp-a3c.md#what-it-protects).

        Args:
            count_exploration_config: The same settings dict as ExplorationPPO's (e.g.
                ``{"num_bits": 32, "beta": 0.01}``; ``{}`` = defaults); ``None`` = no
                bonus. ``hash: autoencoder`` is not supported (a learned hash would need
                training on pooled states).
            count_exploration_scope: ``agent`` (default): a new, empty table for every
                local agent, kept across its T submissions, so its gradient depends on its
                own states only. ``env_runner``: one table per EnvRunner, shared by all the
                local agents it hosts over its lifetime. This BREAKS the per-agent
                guarantee: agent n+1's bonus, hence its released gradient, depends on the
                states of agents 1..n, which leak through that release outside their ε.
                Only for trusted single-owner runners and for measuring long-lived tables
                (``benchmarks/soak.py``).

        Returns:
            This updated config.

        """
        if count_exploration_config is not NotProvided:
            self.count_exploration_config = (
                None if count_exploration_config is None else dict(count_exploration_config)
            )
        if count_exploration_scope is not NotProvided:
            self.count_exploration_scope = count_exploration_scope
        return self

    def get_exploration_spec(self) -> ExplorationSpec | None:
        """The validated ``count_exploration_config``, or None when the bonus is off."""
        if self.count_exploration_config is None:
            return None
        spec = ExplorationSpec.from_dict(
            self.count_exploration_config, prefix="count_exploration_config"
        )
        if spec.hash == "autoencoder":
            raise PrivacyConfigError(
                "count_exploration_config.hash 'autoencoder' is not supported by LDPA3C (a "
                "learned hash would be trained on states pooled across releases); use "
                "simhash, bass or key_function"
            )
        return spec

    def heldout_gravities(self) -> tuple[float, ...]:
        """``scoring_eval_heldout_gravities`` as a tuple (a single number is one gravity)."""
        name = "scoring_eval_heldout_gravities"
        try:
            return validate_positive_choices(name, self.scoring_eval_heldout_gravities)
        except PrivacyConfigError:
            raise PrivacyConfigError(
                f"config key '{name}' must be a number or a non-empty list of finite "
                f"numbers > 0, got {self.scoring_eval_heldout_gravities!r}"
            ) from None

    def _validate_fleet(self) -> None:
        self.heldout_gravities()
        if self.agents_per_env_runner > 100_000:
            raise PrivacyConfigError(
                "config key 'agents_per_env_runner' must be <= 100000, "
                f"got {self.agents_per_env_runner!r}"
            )
        fleet = self.agents_per_env_runner > 1
        if self.agents_episodes_per_submission > 1 and not fleet:
            raise PrivacyConfigError(
                "config key 'agents_episodes_per_submission' > 1 needs agents_per_env_runner "
                f"> 1 (the fleet path), got agents_per_env_runner={self.agents_per_env_runner}"
            )
        if fleet and self.env != CARTPOLE_GRAVITY_ENV_ID:
            raise PrivacyConfigError(
                f"config key 'agents_per_env_runner' > 1 needs env {CARTPOLE_GRAVITY_ENV_ID!r} "
                f"(the fleet vectorizes its dynamics), got env {self.env!r}; use "
                "agents_per_env_runner: 1 for other environments"
            )
        if fleet and self.count_exploration_config is not None:
            raise PrivacyConfigError(
                "config key 'count_exploration_config' is not supported with "
                "agents_per_env_runner > 1; use agents_per_env_runner: 1"
            )

    def _validate_count_exploration(self) -> None:
        _check_choice(
            "count_exploration_scope", self.count_exploration_scope, COUNT_EXPLORATION_SCOPES
        )
        config = self.count_exploration_config
        if config is not None and not isinstance(config, dict):
            raise PrivacyConfigError(
                "config key 'count_exploration_config' must be a dict of settings or null, "
                f"got {config!r}"
            )
        self.get_exploration_spec()

    @property
    def effective_clip(self) -> float:
        """C actually used: ``privacy_clip`` or the mechanism's paper default."""
        if self.privacy_clip is None:
            return DEFAULT_CLIP.get(self.privacy_mechanism, 1.0)
        return float(self.privacy_clip)

    @property
    def effective_max_buffer(self) -> int:
        """|B| actually used: ``aggregator_max_buffer`` or the mechanism's paper default."""
        if self.aggregator_max_buffer is None:
            return DEFAULT_MAX_BUFFER.get(self.privacy_mechanism, 1)
        return int(self.aggregator_max_buffer)

    @property
    def policy_clip(self) -> tuple[float, str]:
        """(bound, norm) that ``privacy_policy_clip_share`` splits: (C/2, l1) or (C, l2)."""
        if self.privacy_mechanism in L2_MECHANISMS:
            return self.effective_clip, "l2"
        return self.effective_clip / 2.0, "l1"

    @property
    def is_private(self) -> bool:
        """False for the non-private baseline (mechanism none or ε = ∞)."""
        return self.privacy_mechanism != "none" and math.isfinite(float(self.privacy_epsilon))

    def get_gradient_mechanism(self) -> GradientMechanism:
        """The mechanism one submission uses (ε/T per release)."""
        if not self.is_private:
            return GradientMechanism(name="none", epsilon=math.inf, clip=self.effective_clip)
        return GradientMechanism(
            name=self.privacy_mechanism,
            epsilon=float(self.privacy_epsilon) / self.agents_submissions_per_agent,
            clip=self.effective_clip,
            reduced_dim=self.privacy_reduced_dim,
            debias=self.privacy_debias,
            secure_mode=self.privacy_secure_mode,
        )

    @override(AlgorithmConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """The paper's actor-critic network (see LDPA3CTorchRLModule)."""
        from rllib_privacy.algorithms.ldp_a3c.torch.ldp_a3c_torch_rl_module import (
            LDPA3CTorchRLModule,
        )

        return RLModuleSpec(module_class=LDPA3CTorchRLModule)

    @override(AlgorithmConfig)
    def get_default_learner_class(self) -> type[Learner]:
        """The torch learner with the A3C loss and gradient privatization."""
        from rllib_privacy.algorithms.ldp_a3c.torch.ldp_a3c_torch_learner import (
            LDPA3CTorchLearner,
        )

        return LDPA3CTorchLearner

    @override(AlgorithmConfig)
    def validate(self) -> None:
        """Checks PGC-A3C's settings; every message names the key."""
        super().validate()
        self.validate_ldp_settings()

    def validate_ldp_settings(self) -> None:
        """Raises PrivacyConfigError for a bad PGC-A3C setting (no Ray needed)."""
        mechanism = self.privacy_mechanism
        _check_choice("privacy_mechanism", mechanism, MECHANISM_NAMES)
        _check_choice("agents_loss_reduction", self.agents_loss_reduction, ("sum", "mean"))
        _check_choice("aggregator_optimizer", self.aggregator_optimizer, AGGREGATOR_OPTIMIZERS)
        _check_choice("agents_action_selection", self.agents_action_selection, ACTION_SELECTIONS)
        epsilon = _check_number("privacy_epsilon", self.privacy_epsilon, low=0.0, allow_inf=True)
        if mechanism == "none" and math.isfinite(epsilon):
            raise PrivacyConfigError(
                f"config key 'privacy_epsilon' is {epsilon} but privacy_mechanism 'none' "
                "releases raw gradients (epsilon = inf): set privacy_epsilon: .inf, or "
                "privacy_mechanism: laplace or prs"
            )
        if self.framework_str != "torch":
            raise PrivacyConfigError(
                f"config key 'framework' must be 'torch' for LDPA3C, got {self.framework_str!r}"
            )
        if self.privacy_clip is not None:
            _check_number("privacy_clip", self.privacy_clip, low=0.0)
        for name in (
            "agents_submissions_per_agent",
            "aggregator_submissions_per_iteration",
            "aggregator_submissions_per_request",
            "agents_exploration_alpha_zero_at",
            "agents_per_env_runner",
            "agents_episodes_per_submission",
        ):
            _check_int(name, getattr(self, name), low=1)
        _check_int("scoring_eval_episodes", self.scoring_eval_episodes, low=0)
        for name in (
            "privacy_zero_signal_control",
            "agents_normalize_advantages",
            "privacy_debias",
            "privacy_secure_mode",
        ):
            if not isinstance(getattr(self, name), bool):
                raise PrivacyConfigError(
                    f"config key '{name}' must be true or false, got {getattr(self, name)!r}"
                )
        _check_number("privacy_shuffle_delta", self.privacy_shuffle_delta, low=0.0, high=1.0)
        self._validate_fleet()
        if self.privacy_policy_clip_share is not None:
            _check_number(
                "privacy_policy_clip_share", self.privacy_policy_clip_share, low=0.0, high=1.0
            )
        if self.aggregator_max_buffer is not None:
            _check_int("aggregator_max_buffer", self.aggregator_max_buffer, low=1)
        if self.privacy_reduced_dim is not None:
            _check_int("privacy_reduced_dim", self.privacy_reduced_dim, low=1)
            if mechanism != "prs":
                raise PrivacyConfigError(
                    "config key 'privacy_reduced_dim' only applies to privacy_mechanism "
                    f"'prs', but privacy_mechanism is {mechanism!r}"
                )
        if self.privacy_debias and mechanism != "prs":
            raise PrivacyConfigError(
                "config key 'privacy_debias' only applies to privacy_mechanism 'prs', "
                f"got {mechanism!r}"
            )
        if not isinstance(self.lr, list):  # a list is RLlib's schedule, checked by RLlib
            _check_number("lr", self.lr, low=0.0)
        _check_number("gamma", self.gamma, low=0.0, high=1.0, inclusive_low=True)
        _check_number("vf_loss_coeff", self.vf_loss_coeff, low=0.0, inclusive_low=True)
        _check_number("entropy_coeff", self.entropy_coeff, low=0.0, inclusive_low=True)
        _check_number(
            "agents_exploration_alpha",
            self.agents_exploration_alpha,
            low=0.0,
            high=1.0,
            inclusive_low=True,
        )
        _check_number("scoring_fst_target_score", self.scoring_fst_target_score, low=-math.inf)
        check_journal_dir(self.privacy_journal_dir)
        if self.num_learners > 1:
            raise PrivacyConfigError(
                "config key 'num_learners' must be 0 or 1 for LDPA3C: the aggregator is one learner"
            )
        self._validate_count_exploration()
        # Builds (and so validates) the mechanism once, before any Ray actor starts.
        self.get_gradient_mechanism()
        if self.seed is not None and self.is_private:
            # Before Ray starts: a fixed seed outside tests would let anyone who knows it
            # regenerate the gradient noise (a restarted runner still draws fresh noise).
            warn_fixed_seed("seed (.debugging(seed=...))", secure_mode=self.privacy_secure_mode)


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise PrivacyConfigError(
            f"config key '{name}' must be one of {list(allowed)}, got {value!r}"
        )


def _check_number(
    name: str,
    value: Any,
    *,
    low: float,
    high: float = math.inf,
    inclusive_low: bool = False,
    allow_inf: bool = False,
) -> float:
    # float("1e-5") works, but the string would stay in the config and reach the loss.
    if isinstance(value, str | bytes):
        raise PrivacyConfigError(f"config key '{name}' must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise PrivacyConfigError(f"config key '{name}' must be a number, got {value!r}") from None
    if isinstance(value, bool) or math.isnan(number) or (math.isinf(number) and not allow_inf):
        raise PrivacyConfigError(f"config key '{name}' must be a finite number, got {value!r}")
    too_low = number < low if inclusive_low else number <= low
    if too_low or number > high:
        bound = f"{'>=' if inclusive_low else '>'} {low}" + (
            f" and <= {high}" if high < math.inf else ""
        )
        raise PrivacyConfigError(f"config key '{name}' must be {bound}, got {value!r}")
    return number


def _check_int(name: str, value: Any, *, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise PrivacyConfigError(f"config key '{name}' must be an integer >= {low}, got {value!r}")
    return int(value)


class _ScoreTracker:
    """Scores in submission order: moving mean μ_n and first success time (eq. 26)."""

    def __init__(self, target: float) -> None:
        self.target = float(target)
        self.submissions = 0
        self.env_steps = 0
        self.fst: int | None = None
        self.solved_at: int | None = None
        self.window: deque[float] = deque(maxlen=SCORE_WINDOW)
        self.recent: deque[float] = deque(maxlen=SOLVED_WINDOW)

    def add(self, score: float, env_steps: int) -> None:
        self.submissions += 1
        self.env_steps += env_steps
        self.window.append(score)
        self.recent.append(score)
        if (
            self.fst is None
            and len(self.window) == SCORE_WINDOW
            # Plain sums: np.mean costs more than the rest of a submission's bookkeeping.
            and sum(self.window) / SCORE_WINDOW >= self.target
        ):
            # μ_n covers submissions n..n+9, so it is complete at submission n+9.
            self.fst = self.submissions - SCORE_WINDOW + 1
        if (
            self.solved_at is None
            and len(self.recent) == SOLVED_WINDOW
            and sum(self.recent) / SOLVED_WINDOW >= self.target
        ):
            # Unlike the FST, the submission count at which the window is complete.
            self.solved_at = self.submissions

    @property
    def moving_mean(self) -> float:
        return float(np.mean(self.window)) if self.window else math.nan

    def state_dict(self) -> dict[str, Any]:
        return {
            "submissions": self.submissions,
            "env_steps": self.env_steps,
            "fst": self.fst,
            "solved_at": self.solved_at,
            "window": list(self.window),
            "recent": list(self.recent),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.submissions = int(state["submissions"])
        self.env_steps = int(state["env_steps"])
        self.fst = None if state["fst"] is None else int(state["fst"])
        solved_at = state.get("solved_at")  # absent in checkpoints from before #13
        self.solved_at = None if solved_at is None else int(solved_at)
        self.window = deque((float(s) for s in state["window"]), maxlen=SCORE_WINDOW)
        self.recent = deque((float(s) for s in state["recent"]), maxlen=SOLVED_WINDOW)


def _flat_weights(learner: Learner) -> np.ndarray:
    module = learner.module[DEFAULT_MODULE_ID]
    return torch.nn.utils.parameters_to_vector(module.parameters()).detach().cpu().numpy()


def _apply_mean_gradient(learner: Learner, mean_gradient: np.ndarray, env_steps: int) -> np.ndarray:
    """θ ← optimizer step with mean(B) as the gradient; returns the new flat θ.

    ``after_gradient_based_update`` advances RLlib's learning-rate schedule (an ``lr``
    given as ``[[env_steps, lr], ...]``) exactly as for RLlib's own algorithms.
    """
    module = learner.module[DEFAULT_MODULE_ID]
    flat = torch.as_tensor(mean_gradient)
    grads, offset = {}, 0
    for param in module.parameters():
        size = param.numel()
        grads[learner.get_param_ref(param)] = (
            flat[offset : offset + size].view_as(param).to(param.device, param.dtype)
        )
        offset += size
    learner.apply_gradients(grads)
    learner.after_gradient_based_update(timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: env_steps})
    return _flat_weights(learner)


def _greedy_returns(learner: Learner, gravities: np.ndarray, seed: int) -> np.ndarray:
    return greedy_evaluation(learner.module[DEFAULT_MODULE_ID], gravities=gravities, seed=seed)


def _reduce_learner_metrics(learner: Learner) -> dict[str, Any]:
    return learner.metrics.reduce()


def _journal_record(submission: GradientSubmission) -> dict[str, Any]:
    """What the journal keeps of a submission: its ledger event and public scalars."""
    return {
        "id": submission.submission_id,
        "agent_id": submission.agent_id,
        "agent_sequence": submission.agent_sequence,
        "epsilon": "inf" if math.isinf(submission.epsilon) else submission.epsilon,
        "mechanism": submission.mechanism,
        "score": submission.score,
        "env_steps": submission.env_steps,
        "weights_version": submission.weights_version,
    }


def _decode_epsilon(value: float | str) -> float:
    return math.inf if value == "inf" else float(value)


class LDPA3C(Algorithm):
    """PGC-A3C: the aggregator side (training_step) of Ono & Takahashi's Alg. 1."""

    #: Result keys this algorithm adds at the top level (usable as Tune stop keys).
    TOP_LEVEL_RESULT_KEYS = (
        *HEADLINE_KEYS,
        "score_moving_mean",
        "fst",
        "solved_at",
        "timesteps_total",
    )

    @classmethod
    @override(Algorithm)
    def get_default_config(cls) -> LDPA3CConfig:
        """Returns the paper-default LDPA3CConfig."""
        return LDPA3CConfig()

    @override(Algorithm)
    def setup(self, config: LDPA3CConfig) -> None:
        """Builds EnvRunners and the aggregator learner, then the aggregator state."""
        super().setup(config)
        self._weights = self._on_learner(_flat_weights)
        self._weights_version = 0
        self._buffer = GradientBuffer(config.effective_max_buffer, self._weights.size)
        # Each local agent may spend at most ε in total; the ledger refuses more.
        self._ledger = LDPLedger(
            epsilon_budget_per_agent=float(config.privacy_epsilon)
            if config.is_private
            else math.inf
        )
        self._scores = _ScoreTracker(config.scoring_fst_target_score)
        self._mechanism = config.get_gradient_mechanism()
        # Fault accounting (see docs/privacy-journal.md).
        self._applied = 0  # gradients that went into the buffer in this θ's history
        self._duplicates = 0
        # Lost requests = sent − answered − still in flight. Counting them this way also
        # catches requests that RLlib's actor manager forgets without an error result (it
        # drops every in-flight request of an actor that another call found dead).
        self._lost_requests_restored = 0
        self._requests_sent = 0
        self._requests_answered = 0
        self._replayed = 0
        # The one write-ahead journal (accounting.journal.ReplayJournal), tied to the ledger.
        self._journal = ReplayJournal(
            algorithm_journal_path(
                self, self.config.privacy_journal_dir, component=JOURNAL_COMPONENT
            ),
            component=JOURNAL_COMPONENT,
            ledger=self._ledger,
        )
        records = self._journal.records_to_replay()
        if records:
            # A trial that crashed before its first checkpoint restarts from scratch in
            # the same trial dir: its releases are in the journal, its updates are lost.
            self._replay(records)
            logger.warning(
                "LDPA3C: replayed %d releases from the privacy journal %s (their updates "
                "were lost with the crash; the spent budget is kept)",
                self._replayed,
                self._journal.path,
            )

    def _replay(self, records: list[dict[str, Any]]) -> None:
        """Re-applies journal records to the ledger and scores (never to θ)."""
        for record in records:
            kind = record_kind(record)
            if kind == "submission":
                # Counted even beyond the budget: the release may have left before a crash.
                self._ledger.replay(
                    record["agent_id"], _decode_epsilon(record["epsilon"]), record["mechanism"]
                )
                self._scores.add(float(record["score"]), int(record["env_steps"]))
                self._replayed += 1
            elif kind == SNAPSHOT:
                # Journals written before the one ReplayJournal kept the fields at the top.
                snapshot = record.get("state", record)
                self._ledger.load_state_dict(snapshot["ledger"])
                self._scores.load_state_dict(snapshot["scores"])
                self._replayed = int(snapshot["releases_replayed"])
            else:
                raise PrivacyJournalError(
                    f"privacy journal {str(self._journal.path)!r} record {record['seq']} has "
                    f"an unknown type {kind!r} for LDPA3C; was it written by another program?"
                )

    def _privacy_state(self) -> dict[str, Any]:
        """The totals a journal snapshot holds (ledger, scores, replayed count)."""
        return {
            "ledger": self._ledger.state_dict(),
            "scores": self._scores.state_dict(),
            "releases_replayed": self._replayed,
        }

    def _on_learner(self, func: Any, **kwargs: Any) -> Any:
        """Runs ``func(learner, **kwargs)`` on the aggregator's one learner."""
        return next(iter(self.learner_group.foreach_learner(func, **kwargs))).get()

    def _in_flight(self) -> int:
        manager = getattr(self.env_runner_group, "_worker_manager", None)
        return 0 if manager is None else manager.num_outstanding_async_reqs(tag=_REQUEST_TAG)

    @property
    def _lost_requests(self) -> int:
        """Requests whose EnvRunner died before answering (their releases never arrived)."""
        lost = self._requests_sent - self._requests_answered - self._in_flight()
        return self._lost_requests_restored + lost

    def _request_kwargs(self) -> dict[str, Any]:
        return {
            "weights": self._weights,
            "weights_version": self._weights_version,
            "submissions_so_far": self._scores.submissions,
            "num_submissions": self.config.aggregator_submissions_per_request,
        }

    @override(Algorithm)
    def training_step(self) -> None:
        """Collects ``aggregator_submissions_per_iteration`` submissions, updating θ as B fills."""
        start, start_submissions = time.perf_counter(), self._scores.submissions
        target = start_submissions + self.config.aggregator_submissions_per_iteration
        group = self.env_runner_group
        if group.num_remote_env_runners() == 0:
            while self._scores.submissions < target:
                self._receive(self.env_runner.submit_gradients(**self._request_kwargs()))
        else:
            while self._scores.submissions < target:
                if group.num_healthy_remote_workers() == 0:
                    # RLlib restores failed EnvRunners before the next training_step.
                    break
                # One request in flight per runner (max_requests_in_flight_per_env_runner=1):
                # runners that are busy are skipped, idle ones get the newest θ.
                self._requests_sent += group.foreach_env_runner_async(
                    "submit_gradients", tag=_REQUEST_TAG, kwargs=self._request_kwargs()
                )
                ready: list[GradientSubmission] = []
                for _, submissions in group.fetch_ready_async_reqs(
                    tags=_REQUEST_TAG, timeout_seconds=0.002
                ):
                    self._requests_answered += 1
                    ready.extend(submissions)
                if ready:
                    # One journal fsync for everything that arrived together.
                    self._receive(ready)
        # The aggregator learner's own metrics (its learning rate) go to learners/.
        self.metrics.aggregate([self._on_learner(_reduce_learner_metrics)], key=LEARNER_RESULTS)
        self._log_metrics(
            submissions_per_second=(self._scores.submissions - start_submissions)
            / max(time.perf_counter() - start, 1e-9)
        )

    def _receive(self, submissions: list[GradientSubmission]) -> None:
        fresh: list[GradientSubmission] = []
        pending: dict[str, int] = {}
        pending_epsilon: dict[str, float] = {}
        for submission in submissions:
            if not isinstance(submission, GradientSubmission):
                raise TypeError(
                    f"aggregator accepts only GradientSubmission objects, got {type(submission)}"
                )
            agent = submission.agent_id
            recorded = self._ledger.num_releases_of(agent) + pending.get(agent, 0)
            # An agent numbers its submissions 1, 2, ... in order, so a number that is not
            # above the count already recorded was delivered before.
            if submission.agent_sequence <= recorded:
                self._duplicates += 1
                continue
            # Checked before anything is journaled or applied; earlier releases of the same
            # agent in this batch count too.
            pending_epsilon[agent] = pending_epsilon.get(agent, 0.0) + submission.epsilon
            if not self._ledger.can_release(agent, pending_epsilon[agent]):
                raise BudgetExhaustedError(
                    f"agent {agent!r} has spent epsilon={self._ledger.epsilon_spent(agent)!r} "
                    f"of its budget {self._ledger.epsilon_budget_per_agent!r}; submission "
                    f"{submission.submission_id!r} of epsilon={submission.epsilon!r} would "
                    "exceed it (refused, not applied)"
                )
            pending[agent] = pending.get(agent, 0) + 1
            fresh.append(submission)
        # Write-ahead: the releases are durable before any of them touches θ, so a crash
        # from here on can only over-count the budget, never forget it.
        self._journal.extend("submission", (_journal_record(submission) for submission in fresh))
        for submission in fresh:
            self._ledger.record(submission.agent_id, submission.epsilon, submission.mechanism)
            self._scores.add(submission.score, submission.env_steps)
            self._applied += 1
            mean_gradient = self._buffer.add(submission.gradient)
            if mean_gradient is not None:
                self._weights = self._on_learner(
                    _apply_mean_gradient,
                    mean_gradient=mean_gradient,
                    env_steps=self._scores.env_steps,
                )
                self._weights_version += 1

    def _log_metrics(self, *, submissions_per_second: float) -> None:
        scores, ledger = self._scores, self._ledger
        alpha_n = exploration_alpha(
            scores.submissions,
            initial=self.config.agents_exploration_alpha,
            zero_at=self.config.agents_exploration_alpha_zero_at,
        )
        recent = float(np.mean(scores.recent)) if scores.recent else math.nan
        values = {
            "score_mean": recent,
            "submissions_per_second": submissions_per_second,
            "score_moving_mean": scores.moving_mean,
            "epsilon_per_agent": ledger.max_epsilon_spent,
            "submissions": scores.submissions,
            keys.LDP_SUBMISSIONS: scores.submissions,
            keys.LDP_SCORE_MEAN: recent,
            keys.LDP_SCORE_MOVING_MEAN: scores.moving_mean,
            keys.LDP_EPSILON_PER_AGENT: ledger.max_epsilon_spent,
            keys.LDP_NOISE_SCALE: self._mechanism.noise_scale(self._weights.size),
            keys.LDP_BUFFER_SIZE: len(self._buffer),
            # Each update makes a new θ version.
            keys.LDP_UPDATES: self._weights_version,
            keys.LDP_SUBMISSIONS_PER_SECOND: submissions_per_second,
            keys.LDP_EXPLORATION_ALPHA: alpha_n,
            # Always present (0/1) so that Tune can stop on it; `fst` itself only
            # exists once reached.
            keys.LDP_FST_REACHED: float(scores.fst is not None),
            keys.PRIVACY_EPSILON_SPENT: ledger.max_epsilon_spent,
            keys.PRIVACY_DELTA_SPENT: 0.0,
            keys.PRIVACY_RELEASES: ledger.num_releases,
            keys.PRIVACY_RELEASES_REPLAYED: self._replayed,
            keys.LDP_APPLIED_SUBMISSIONS: self._applied,
            # Recorded releases whose gradient is not in this θ's history (a rollback).
            keys.LDP_SUBMISSIONS_DROPPED: max(0, scores.submissions - self._applied),
            keys.LDP_DUPLICATE_SUBMISSIONS: self._duplicates,
            keys.LDP_LOST_REQUESTS: self._lost_requests,
            (ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN): recent,
            (ENV_RUNNER_RESULTS, EPISODE_LEN_MEAN): recent,
        }
        if scores.fst is not None:
            values["fst"] = scores.fst
            values[keys.LDP_FST] = scores.fst
        values[keys.LDP_SOLVED] = float(scores.solved_at is not None)
        if scores.solved_at is not None:
            values["solved_at"] = scores.solved_at
            values[keys.LDP_SOLVED_AT] = scores.solved_at
        values.update(self._evaluation_metrics())
        values.update(self._shuffled_epsilon_metrics())
        for key, value in values.items():
            if isinstance(key, str) and "/" in key:
                key = tuple(key.split("/"))
            self.metrics.log_value(key, value, window=1)
        # RLlib itself reads the lifetime counters (stop checks, EnvRunner state sync
        # on restore), so they are RLlib-style lifetime sums fed with increments.
        for key, total in (
            (NUM_ENV_STEPS_SAMPLED_LIFETIME, scores.env_steps),
            ((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), scores.env_steps),
            ((ENV_RUNNER_RESULTS, NUM_EPISODES_LIFETIME), scores.submissions),
        ):
            logged = self.metrics.peek(key, default=0) or 0
            self.metrics.log_value(key, total - logged, reduce="lifetime_sum")

    def _evaluation_metrics(self) -> dict[str, float]:
        """Greedy returns of the current θ on training and held-out gravities."""
        config = self.config
        if config.scoring_eval_episodes == 0 or config.env != CARTPOLE_GRAVITY_ENV_ID:
            return {}
        train = validate_positive_choices(
            "gravity_choices",
            (config.env_config or {}).get("gravity_choices", PAPER_GRAVITY_CHOICES),
        )
        gravities, heldout = evaluation_gravities(
            train, config.heldout_gravities(), config.scoring_eval_episodes
        )
        # A public seed per iteration: the evaluation uses no agent's data.
        returns = self._on_learner(
            _greedy_returns, gravities=gravities, seed=int(self.iteration) + 1
        )
        out = {keys.LDP_EVAL_RETURN_MEAN: float(returns.mean())}
        out[keys.LDP_EVAL_RETURN_MEAN_TRAIN] = float(returns[~heldout].mean())
        if heldout.any():
            out[keys.LDP_EVAL_RETURN_MEAN_HELDOUT] = float(returns[heldout].mean())
        return out

    def _shuffled_epsilon_metrics(self) -> dict[str, float]:
        """ε of one agent's reports, centrally, if each buffer of |B| were shuffled."""
        if not self.config.is_private:
            return {}
        epsilon0 = self._mechanism.epsilon_per_release
        per_buffer = shuffle_epsilon(
            epsilon0, self.config.effective_max_buffer, self.config.privacy_shuffle_delta
        )
        # An agent's T reports land in up to T buffers: basic composition over them.
        rounds = self.config.agents_submissions_per_agent
        return {
            keys.PRIVACY_EPSILON_SHUFFLED: per_buffer * rounds,
            keys.PRIVACY_DELTA_SHUFFLED: self.config.privacy_shuffle_delta * rounds,
        }

    @override(Algorithm)
    def step(self) -> dict[str, Any]:
        """Runs one iteration; puts headline keys first and env steps as x-axis."""
        results = super().step()
        results["timesteps_total"] = self._scores.env_steps
        return keys.headline_first(results, HEADLINE_KEYS)

    @override(Algorithm)
    def get_state(
        self, components: Any = None, *, not_components: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Adds the aggregator state (ledger, buffer, scores) to RLlib's state."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        state["ldp_a3c_aggregator"] = {
            "ledger": self._ledger.state_dict(),
            "buffer": self._buffer.state_dict(),
            "scores": self._scores.state_dict(),
            "weights_version": self._weights_version,
            "journal": self._journal.marker(),
            "applied": self._applied,
            "duplicates": self._duplicates,
            "lost_requests": self._lost_requests,
            "releases_replayed": self._replayed,
        }
        return state

    @override(Algorithm)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores RLlib's state and the aggregator's (the ledger never resets).

        Releases journaled after the checkpoint (a crash between two checkpoints, or the
        run that wrote it going on) are replayed into the ledger; their updates rolled back
        with θ. The checkpoint's journal is found by its ledger id also when it is restored
        into another folder (``ReplayJournal.after_restore``); if it cannot be found the
        restore raises ``JournalNotFoundError`` naming it.
        """
        super().set_state(state)
        aggregator = state.get("ldp_a3c_aggregator")
        if aggregator is not None:
            self._ledger.load_state_dict(aggregator["ledger"])
            self._buffer.load_state_dict(aggregator["buffer"])
            self._scores.load_state_dict(aggregator["scores"])
            self._weights_version = int(aggregator["weights_version"])
            # Checkpoints written before the journal existed lack these entries.
            self._applied = int(aggregator.get("applied", self._scores.submissions))
            self._duplicates = int(aggregator.get("duplicates", 0))
            self._lost_requests_restored = int(aggregator.get("lost_requests", 0))
            # Requests in flight now are not lost yet: count from here.
            self._requests_sent, self._requests_answered = self._in_flight(), 0
            self._replayed = int(aggregator.get("releases_replayed", 0))
            self._journal.after_restore(
                aggregator.get("journal"), replay=self._replay, snapshot=self._privacy_state
            )
        self._weights = self._on_learner(_flat_weights)

    @override(Algorithm)
    def cleanup(self) -> None:
        """Stops RLlib's actors and closes the privacy journal."""
        super().cleanup()
        journal = getattr(self, "_journal", None)
        if journal is not None:
            journal.close()
