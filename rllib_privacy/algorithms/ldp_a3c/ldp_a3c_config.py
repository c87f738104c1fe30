"""LDPA3CConfig: the settings of LDPA3C and their checks.

Ono & Takahashi, "Locally Private Distributed Reinforcement Learning" (§4, "Hyper
Parameters") give the defaults. The keys are grouped by builder method; every check
runs before Ray starts and names the key it refuses.
"""

from __future__ import annotations

import functools
import logging
import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override
from typing_extensions import Self

from rllib_privacy._validation import check_choice
from rllib_privacy.accounting.shuffle import local_epsilon_for_central
from rllib_privacy.algorithms.config_keys import (
    COUNT_EXPLORATION_KEYS,
    GroupedConfigMixin,
    LegacyCountExplorationMixin,
    check_count_exploration_keys,
)
from rllib_privacy.algorithms.ldp_a3c.gradient_aggregator import ROBUST_AGGREGATIONS
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import LDPA3CEnvRunner
from rllib_privacy.algorithms.ldp_a3c.score_tracker import SOLVED_WINDOW, private_solved_window
from rllib_privacy.envs import CARTPOLE_GRAVITY_ENV_ID
from rllib_privacy.envs.cartpole_gravity import validate_positive_choices
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.exploration import ExplorationSpec
from rllib_privacy.mechanisms import MECHANISM_NAMES, GradientMechanism, OneBitMechanism
from rllib_privacy.mechanisms.secure_noise import warn_fixed_seed
from rllib_privacy.utils.journaling import check_journal_dir

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm import Algorithm

logger = logging.getLogger(__name__)

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
#: ``privacy_score_mechanism`` choices (``public``: the paper's score in the clear).
SCORE_MECHANISMS = ("one_bit", "public")
AGGREGATOR_OPTIMIZERS = ("sgd", "adam")
#: Where a local agent's visit counts live (``count_exploration_scope``).
COUNT_EXPLORATION_SCOPES = ("agent", "env_runner")
#: ``agents_malicious_attack``: what a simulated malicious agent pushes θ along.
MALICIOUS_ATTACKS = ("flip", "fixed")


class LDPA3CConfig(GroupedConfigMixin, LegacyCountExplorationMixin, AlgorithmConfig):
    """Configuration of LDPA3C; defaults are the paper's settings.

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
            "privacy_score_mechanism",
            "privacy_score_epsilon_share",
            "privacy_score_range",
            "privacy_shuffle_delta",
            "privacy_central_epsilon",
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
            "agents_malicious_fraction",
            "agents_malicious_attack",
        ),
        "aggregator": (
            "aggregator_max_buffer",
            "aggregator_optimizer",
            "aggregator_submissions_per_iteration",
            "aggregator_submissions_per_request",
            "aggregator_robust",
        ),
        "scoring": (
            "scoring_fst_target_score",
            "scoring_eval_episodes",
            "scoring_eval_heldout_gravities",
            "scoring_solved_window",
        ),
        "count_exploration": COUNT_EXPLORATION_KEYS,
        "shuffler": ("shuffler_enabled", "shuffler_num_cpus", "shuffler_resources"),
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
        # Imported here: the algorithm module imports this one.
        from rllib_privacy.algorithms.ldp_a3c.ldp_a3c import LDPA3C

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
        # Everything an agent sends is private by default (the paper sent the score in
        # the clear: `public`); the score takes this share of the agent's ε.
        self.privacy_score_mechanism = "one_bit"
        self.privacy_score_epsilon_share = 0.2
        self.privacy_score_range: list[float] = [0.0, 200.0]
        self.privacy_shuffle_delta = 1e-6
        self.privacy_central_epsilon: float | None = None
        self.privacy_journal_dir: str | None = None
        self.agents_per_env_runner = 1
        self.agents_submissions_per_agent = 1
        self.agents_episodes_per_submission = 1
        self.agents_action_selection = "epsilon_argmax"
        self.agents_exploration_alpha = 0.5
        self.agents_exploration_alpha_zero_at = 900
        self.agents_loss_reduction = "sum"
        self.agents_normalize_advantages = False
        # Simulation/testing only: untrusted agents (docs/components/ldp-a3c.md#untrusted-agents).
        self.agents_malicious_fraction = 0.0
        self.agents_malicious_attack = "flip"
        self.aggregator_max_buffer: int | None = None
        self.aggregator_optimizer = "sgd"
        self.aggregator_submissions_per_iteration = 100
        self.aggregator_submissions_per_request = 1
        self.aggregator_robust = "none"
        self.scoring_fst_target_score = 195.0
        self.scoring_eval_episodes = 100
        self.scoring_eval_heldout_gravities: list[float] = list(DEFAULT_HELDOUT_GRAVITIES)
        self.scoring_solved_window: int | None = None
        # Count-based exploration bonus of the local agents (off unless a dict is given).
        self.count_exploration_config: dict[str, Any] | None = None
        self.count_exploration_scope = "agent"
        self.count_exploration_flatten_observations = False
        # The shuffler between the local agents and the aggregator (off: agents -> aggregator).
        self.shuffler_enabled = False
        self.shuffler_num_cpus = 0.0
        self.shuffler_resources: dict[str, float] | None = None

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        vf_loss_coeff: float = NotProvided,
        entropy_coeff: float = NotProvided,
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
        privacy_mechanism: str = NotProvided,
        privacy_epsilon: float = NotProvided,
        privacy_clip: float | None = NotProvided,
        privacy_policy_clip_share: float | None = NotProvided,
        privacy_reduced_dim: int | None = NotProvided,
        privacy_debias: bool = NotProvided,
        privacy_secure_mode: bool = NotProvided,
        privacy_zero_signal_control: bool = NotProvided,
        privacy_score_mechanism: str = NotProvided,
        privacy_score_epsilon_share: float = NotProvided,
        privacy_score_range: list[float] = NotProvided,
        privacy_shuffle_delta: float = NotProvided,
        privacy_central_epsilon: float | None = NotProvided,
        privacy_journal_dir: str | os.PathLike[str] | None = NotProvided,
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
            privacy_score_mechanism: ``one_bit`` (Duchi et al.'s one-bit mechanism: the
                score leaves only privatized, debiased at the aggregator) or ``public``
                (the paper's setting: the score in the clear, outside ε).
            privacy_score_epsilon_share: Share of each submission's ε the private score
                takes (the gradient gets the rest), in (0, 1).
            privacy_score_range: ``[low, high]`` the score is clipped to before its
                release (CartPole-v0: ``[0, 200]``).
            privacy_shuffle_delta: δ of the central guarantee over an agent's T batches:
                ``privacy/delta_central`` with the shuffler on, else the δ of the
                hypothetical ``privacy/epsilon_central_if_shuffled`` (Feldman, McMillan &
                Talwar 2021).
            privacy_central_epsilon: Target central ε (at δ = ``privacy_shuffle_delta``)
                of every agent against the aggregator; needs ``shuffler_enabled``. It
                picks the largest per-report ε₀ whose shuffled ε over |B| reports,
                composed over T = ``agents_submissions_per_agent`` batches, meets it, and
                replaces ``privacy_epsilon`` (an agent's total is then T·ε₀). ``None``:
                ``privacy_epsilon`` sets ε₀ = ε/T.
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
        agents_per_env_runner: int = NotProvided,
        agents_submissions_per_agent: int = NotProvided,
        agents_episodes_per_submission: int = NotProvided,
        agents_action_selection: str = NotProvided,
        agents_exploration_alpha: float = NotProvided,
        agents_exploration_alpha_zero_at: int = NotProvided,
        agents_loss_reduction: str = NotProvided,
        agents_normalize_advantages: bool = NotProvided,
        agents_malicious_fraction: float = NotProvided,
        agents_malicious_attack: str = NotProvided,
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
            agents_malicious_fraction: SIMULATION/TESTING ONLY: each new local agent of a
                fleet is malicious with this probability (in [0, 1)); a malicious agent
                sends the worst valid output of the mechanism
                (``GradientMechanism.worst_valid_output``) instead of its release (the
                manipulation attacks of Cheu, Smith & Ullman 2021). Needs
                ``agents_per_env_runner`` > 1 and a private mechanism.
            agents_malicious_attack: ``flip``: along the negative of the agent's own
                (clipped) gradient; ``fixed``: along one fixed direction, the same for
                every malicious agent (all ones: all-same signs for sign mechanisms).

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def aggregator(
        self,
        *,
        aggregator_max_buffer: int | None = NotProvided,
        aggregator_optimizer: str = NotProvided,
        aggregator_submissions_per_iteration: int = NotProvided,
        aggregator_submissions_per_request: int = NotProvided,
        aggregator_robust: str = NotProvided,
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
            aggregator_robust: ``none`` (the mean of B, paper) or ``projection_filter``:
                the mean of the reports that stay within 4 σ_b of the median along the
                mean's and the top principal direction (robust to reports from untrusted
                agents, docs/components/ldp-a3c.md#untrusted-agents). Needs a private
                mechanism.

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def scoring(
        self,
        *,
        scoring_fst_target_score: float = NotProvided,
        scoring_eval_episodes: int = NotProvided,
        scoring_eval_heldout_gravities: float | list[float] = NotProvided,
        scoring_solved_window: int | None = NotProvided,
    ) -> Self:
        """Sets how a run is scored: the paper's FST and a greedy evaluation.

        Args:
            scoring_fst_target_score: Θ of the first-success-time metric.
            scoring_eval_episodes: Greedy evaluation episodes of the current weights per
                iteration (``ldp/eval_return_mean``), half on the training gravities and
                half on ``scoring_eval_heldout_gravities``; 0 = off. CartPoleGravity only.
            scoring_eval_heldout_gravities: Gravities no local agent trains on.
            scoring_solved_window: Scores in the window of ``ldp/solved``; ``None`` = 100
                with public scores, else the smallest window whose check fires with
                probability ≤ 1% when the true mean is 10 below the target
                (``private_solved_window``), rounded up to whole iterations.

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def shuffler(
        self,
        *,
        shuffler_enabled: bool = NotProvided,
        shuffler_num_cpus: float = NotProvided,
        shuffler_resources: dict[str, float] | None = NotProvided,
    ) -> Self:
        """Puts a shuffler (its own Ray actor, its own trust domain) before the aggregator.

        With it the local agents send their reports to the shuffler, which keeps the
        per-agent budget and dedup (the ids stay there), and forwards each batch of |B|
        reports of distinct agents without ids in a uniformly random order drawn from OS
        entropy. The aggregator then gets a central (ε, δ) per agent
        (``privacy/epsilon_central``), see docs/components/ldp-a3c.md#shuffler.

        Args:
            shuffler_enabled: Run the shuffler (default off: the agents' reports go to
                the aggregator with their ids, and the central ε is only hypothetical).
            shuffler_num_cpus: CPUs Ray reserves for the shuffler actor (default 0).
            shuffler_resources: Custom Ray resources the shuffler actor needs, e.g.
                ``{"shuffler": 1}`` to place it on the node started with
                ``ray start --resources='{"shuffler": 1}'`` (docs/cluster.md); ``None``:
                the aggregator's node.

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def count_exploration(
        self,
        *,
        count_exploration_config: dict[str, Any] | None = NotProvided,
        count_exploration_scope: str = NotProvided,
        count_exploration_flatten_observations: bool = NotProvided,
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
            count_exploration_flatten_observations: ``False`` only: the local agents give
                the RLModule the environment's observations as they are (no env-to-module
                connector runs). The key is here so that every ``.count_exploration()``
                takes the same keys.

        Returns:
            This updated config.

        """
        if count_exploration_config is not NotProvided:
            self.count_exploration_config = (
                None if count_exploration_config is None else dict(count_exploration_config)
            )
        if count_exploration_scope is not NotProvided:
            self.count_exploration_scope = count_exploration_scope
        if count_exploration_flatten_observations is not NotProvided:
            self.count_exploration_flatten_observations = count_exploration_flatten_observations
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

    def _validate_untrusted_agents(self) -> None:
        """The poisoning simulation keys and the robust aggregation."""
        check_choice(
            "config key 'aggregator_robust'",
            self.aggregator_robust,
            ROBUST_AGGREGATIONS,
            error=PrivacyConfigError,
        )
        check_choice(
            "config key 'agents_malicious_attack'",
            self.agents_malicious_attack,
            MALICIOUS_ATTACKS,
            error=PrivacyConfigError,
        )
        fraction = _check_number(
            "agents_malicious_fraction",
            self.agents_malicious_fraction,
            low=0.0,
            high=1.0,
            inclusive_low=True,
        )
        if fraction == 1.0:
            raise PrivacyConfigError(
                "config key 'agents_malicious_fraction' must be < 1 (at least some honest "
                f"agents), got {self.agents_malicious_fraction!r}"
            )
        needs_mechanism = [
            key
            for key, used in (
                ("aggregator_robust", self.aggregator_robust != "none"),
                ("agents_malicious_fraction", fraction > 0.0),
            )
            if used
        ]
        if needs_mechanism and not self.is_private:
            raise PrivacyConfigError(
                f"config key {needs_mechanism[0]!r} needs a private mechanism (a bounded "
                f"output set), got privacy_mechanism {self.privacy_mechanism!r} at "
                f"privacy_epsilon {self.privacy_epsilon!r}"
            )
        if fraction > 0.0 and self.agents_per_env_runner == 1:
            raise PrivacyConfigError(
                "config key 'agents_malicious_fraction' > 0 needs agents_per_env_runner > 1 "
                "(the fleet simulates the malicious agents), got agents_per_env_runner=1"
            )

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
        check_count_exploration_keys(
            "LDPA3C",
            scope=self.count_exploration_scope,
            flatten=self.count_exploration_flatten_observations,
            scopes=COUNT_EXPLORATION_SCOPES,
            flattens=False,
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
    def local_epsilon_per_report(self) -> float:
        """ε₀: the total ε of one report (gradient and all released with it).

        From ``privacy_central_epsilon`` when it is set (the largest ε₀ meeting it),
        else ``privacy_epsilon`` / T.
        """
        rounds = self.agents_submissions_per_agent
        if self.privacy_central_epsilon is None:
            return float(self.privacy_epsilon) / rounds
        return _local_epsilon_for_central(
            float(self.privacy_central_epsilon),
            self.effective_max_buffer,
            float(self.privacy_shuffle_delta),
            rounds,
        )

    @property
    def effective_epsilon(self) -> float:
        """An agent's total ε: ``privacy_epsilon``, or T·ε₀ under ``privacy_central_epsilon``."""
        if self.privacy_central_epsilon is None:
            return float(self.privacy_epsilon)
        return self.local_epsilon_per_report * self.agents_submissions_per_agent

    @property
    def is_private(self) -> bool:
        """False for the non-private baseline (mechanism none or ε = ∞)."""
        if self.privacy_mechanism == "none":
            return False
        # A central target always gives a finite ε₀ (or is refused by validation).
        return self.privacy_central_epsilon is not None or math.isfinite(
            float(self.privacy_epsilon)
        )

    @property
    def score_is_private(self) -> bool:
        """Whether scores leave the agents privatized (a private run, score not public)."""
        return self.is_private and self.privacy_score_mechanism != "public"

    @property
    def score_epsilon_share(self) -> float:
        """Share of a submission's ε its score takes (0 when the score is public)."""
        return float(self.privacy_score_epsilon_share) if self.score_is_private else 0.0

    def get_score_mechanism(self) -> OneBitMechanism | None:
        """The score's mechanism (share·ε/T per release), or None when the score is public."""
        if not self.score_is_private:
            return None
        low, high = (float(v) for v in self.privacy_score_range)
        return OneBitMechanism(
            epsilon=self.local_epsilon_per_report * self.score_epsilon_share,
            low=low,
            high=high,
            secure_mode=self.privacy_secure_mode,
        )

    @property
    def effective_solved_window(self) -> int:
        """Window of ``ldp/solved``: ``scoring_solved_window`` or its default."""
        if self.scoring_solved_window is not None:
            return int(self.scoring_solved_window)
        mechanism = self.get_score_mechanism()
        if mechanism is None:
            return SOLVED_WINDOW
        return private_solved_window(
            mechanism, multiple_of=self.aggregator_submissions_per_iteration
        )

    def get_gradient_mechanism(self) -> GradientMechanism:
        """The mechanism one submission uses (ε/T per release)."""
        if not self.is_private:
            return GradientMechanism(name="none", epsilon=math.inf, clip=self.effective_clip)
        return GradientMechanism(
            name=self.privacy_mechanism,
            # The private score takes its share; the gradient the rest (sequential
            # composition: ε per report in all).
            epsilon=self.local_epsilon_per_report * (1.0 - self.score_epsilon_share),
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
        """Checks LDPA3C's settings; every message names the key."""
        super().validate()
        self.validate_ldp_settings()

    def validate_ldp_settings(self) -> None:
        """Checks every LDPA3C setting, in this order, without Ray.

        Raises:
            PrivacyConfigError: For the first bad setting, naming its key.
        """
        self._validate_choices()
        self._validate_counts_and_flags()
        self._validate_fleet()
        self._validate_untrusted_agents()
        self._validate_mechanism_options()
        self._validate_loss()
        self._validate_scores()
        self._validate_shuffler()
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

    def _validate_choices(self) -> None:
        """The named choices, ε against the mechanism, the framework and the clip."""
        mechanism = self.privacy_mechanism
        check_choice(
            "config key 'privacy_mechanism'", mechanism, MECHANISM_NAMES, error=PrivacyConfigError
        )
        check_choice(
            "config key 'agents_loss_reduction'",
            self.agents_loss_reduction,
            ("sum", "mean"),
            error=PrivacyConfigError,
        )
        check_choice(
            "config key 'aggregator_optimizer'",
            self.aggregator_optimizer,
            AGGREGATOR_OPTIMIZERS,
            error=PrivacyConfigError,
        )
        check_choice(
            "config key 'agents_action_selection'",
            self.agents_action_selection,
            ACTION_SELECTIONS,
            error=PrivacyConfigError,
        )
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

    def _validate_counts_and_flags(self) -> None:
        """The integer counts, the true/false switches and the shuffling δ."""
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

    def _validate_mechanism_options(self) -> None:
        """The policy-clip share, |B| and the PRS-only options."""
        mechanism = self.privacy_mechanism
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

    def _validate_shuffler(self) -> None:
        """The shuffler's keys and the central ε target (which needs the shuffler)."""
        if not isinstance(self.shuffler_enabled, bool):
            raise PrivacyConfigError(
                "config key 'shuffler_enabled' must be true or false, got "
                f"{self.shuffler_enabled!r}"
            )
        _check_number("shuffler_num_cpus", self.shuffler_num_cpus, low=0.0, inclusive_low=True)
        resources = self.shuffler_resources
        if resources is not None and (
            not isinstance(resources, dict)
            or not all(
                isinstance(k, str)
                and k
                and not isinstance(v, bool)
                and isinstance(v, int | float)
                and v > 0
                for k, v in resources.items()
            )
        ):
            raise PrivacyConfigError(
                "config key 'shuffler_resources' must be null or a dict of Ray resource names "
                f"to amounts > 0 (e.g. {{'shuffler': 1}}), got {resources!r}"
            )
        if self.shuffler_enabled and not self.is_private:
            raise PrivacyConfigError(
                "config key 'shuffler_enabled' is true, but the run is not private "
                f"(privacy_mechanism {self.privacy_mechanism!r}, privacy_epsilon "
                f"{self.privacy_epsilon!r}): a shuffler amplifies a finite ε; use a private "
                "mechanism and a finite privacy_epsilon, or shuffler_enabled: false"
            )
        target = self.privacy_central_epsilon
        if target is None:
            return
        target = _check_number("privacy_central_epsilon", target, low=0.0)
        if not self.shuffler_enabled:
            raise PrivacyConfigError(
                f"config key 'privacy_central_epsilon' is {target!r}, but a central epsilon is "
                "only achieved behind a shuffler: set shuffler_enabled: true, or remove "
                "privacy_central_epsilon"
            )
        if self.privacy_mechanism == "none":
            raise PrivacyConfigError(
                "config key 'privacy_central_epsilon' needs a private privacy_mechanism "
                "(laplace, prs, privunitg, privunit2), got 'none'"
            )
        try:
            epsilon0 = self.local_epsilon_per_report
        except ValueError as error:
            rounds = self.agents_submissions_per_agent
            raise PrivacyConfigError(
                f"config key 'privacy_central_epsilon' is {target!r}, which |B| = "
                f"{self.effective_max_buffer} reports per batch over {rounds} round(s) at delta "
                f"= {self.privacy_shuffle_delta!r} cannot reach: the smallest reachable target "
                f"is {_SMALLEST_LOCAL_EPSILON * rounds!r} (per-report epsilon "
                f"{_SMALLEST_LOCAL_EPSILON!r}); a larger aggregator_max_buffer does not lower "
                f"it ({error})"
            ) from None
        # The effective ε₀ is part of the run's record (the summary shows it as well).
        logger.info(
            "LDPA3C: privacy_central_epsilon=%s at delta=%s over |B|=%d and %d round(s) gives "
            "a per-report epsilon0=%.6g (total per agent %.6g)",
            target,
            self.privacy_shuffle_delta,
            self.effective_max_buffer,
            self.agents_submissions_per_agent,
            epsilon0,
            epsilon0 * self.agents_submissions_per_agent,
        )

    def _validate_scores(self) -> None:
        """The score mechanism, its ε share and range, and the solved window."""
        check_choice(
            "config key 'privacy_score_mechanism'",
            self.privacy_score_mechanism,
            SCORE_MECHANISMS,
            error=PrivacyConfigError,
        )
        share = self.privacy_score_epsilon_share
        _check_number("privacy_score_epsilon_share", share, low=0.0)
        if not float(share) < 1.0:
            raise PrivacyConfigError(
                f"config key 'privacy_score_epsilon_share' must be > 0 and < 1 (the "
                f"gradient needs the rest of the agent's epsilon), got {share!r}"
            )
        bounds = self.privacy_score_range
        if not isinstance(bounds, list | tuple) or len(bounds) != 2:
            raise PrivacyConfigError(
                f"config key 'privacy_score_range' must be a list [low, high], got {bounds!r}"
            )
        low = _check_number("privacy_score_range", bounds[0], low=-math.inf)
        high = _check_number("privacy_score_range", bounds[1], low=-math.inf)
        if not low < high:
            raise PrivacyConfigError(
                f"config key 'privacy_score_range' must be [low, high] with low < high, "
                f"got {list(bounds)!r}"
            )
        if self.scoring_solved_window is not None:
            _check_int("scoring_solved_window", self.scoring_solved_window, low=1)

    def _validate_loss(self) -> None:
        """The learning rate, the loss weights, the exploration schedule and Θ."""
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


#: The smallest ε₀ ``local_epsilon_for_central`` returns (rllib_privacy.accounting.shuffle).
_SMALLEST_LOCAL_EPSILON = 1e-9


@functools.lru_cache(maxsize=64)
def _local_epsilon_for_central(
    central_epsilon: float, num_reports: int, delta: float, rounds: int
) -> float:
    # Cached: the config asks for ε₀ in every get_gradient_mechanism() and metric.
    return local_epsilon_for_central(central_epsilon, num_reports, delta, rounds=rounds)


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
