"""KickstartPPO: privacy-preserving kickstarting (Gohari et al.) on RLlib's PPO.

Who trusts whom (docs/components/kickstarting.md#what-it-protects): the teacher is a separate party.
The algorithm starts it as a Ray actor (``TeacherServer``) that loads the teacher checkpoint in its
own process; the student's learners only hold a ``TeacherClient`` and receive Dir_k(π̃(s)) for the
states they trained on. The teacher owns its ledger and stops answering when its budget
or ``teacher_min_k`` is reached; from then on the kickstart term is masked off and the
student learns from its own rewards only.

Per training iteration: the teacher starts a rollout (k ← c·k after the first), PPO
samples, the learner connector asks the teacher once per collected sample, and the loss
adds ``kickstart_coeff · mean φ_λ``.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import ray
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    LEARNER_RESULTS,
)
from typing_extensions import Self

from rllib_privacy.accounting.owner_ledger import check_budget_scope, owner_ledger_args
from rllib_privacy.algorithms.config_keys import GroupedConfigMixin, JournalPrivacyMixin
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.learners.kickstart_loss import (
    ACTIVE_FRACTION_METRIC,
    ALPHA_LAMBDA_METRIC,
    ANSWERED_FRACTION_METRIC,
    COEFF_METRIC,
    LOSS_METRIC,
    REMEMBERED_METRIC,
    KickstartLossSettings,
)
from rllib_privacy.mechanisms.secure_noise import warn_fixed_seed
from rllib_privacy.teachers import (
    JOURNAL_COMPONENT,
    TeacherClient,
    TeacherServer,
    TeacherSettings,
    check_teacher_spaces,
    load_teacher_spaces,
    resolve_teacher_checkpoint,
)
from rllib_privacy.utils import metrics as keys
from rllib_privacy.utils.journaling import (
    RestartGuard,
    algorithm_journal_path,
    check_journal_dir,
    same_node_strategy,
    trial_name,
)

#: Top-level result keys, first in every result (Tune's progress table shows them).
HEADLINE_KEYS = (
    "episode_return_mean",
    "teacher_epsilon_spent",
    "teacher_k",
    "teacher_sharing",
)

#: Largest ``teacher_delta_samples``: δ's Monte Carlo runs again for every new k.
MAX_TEACHER_DELTA_SAMPLES = 100_000_000

#: KickstartPPOConfig attribute → TeacherSettings field.
_TEACHER_FIELDS = {
    "teacher_mechanism": "mechanism",
    "teacher_k": "k",
    "teacher_vanishing_coefficient": "vanishing_coefficient",
    "teacher_eta": "eta",
    "teacher_tau": "tau",
    "teacher_adjacency": "adjacency",
    "teacher_lipschitz": "lipschitz",
    "teacher_epsilon_budget": "epsilon_budget",
    "teacher_delta_budget": "delta_budget",
    "teacher_min_k": "min_k",
    "teacher_composition": "composition",
    "teacher_delta_samples": "delta_samples",
    "teacher_delta_confidence": "delta_confidence",
    "teacher_seed": "seed",
    "teacher_secure_mode": "secure_mode",
    "teacher_cache_bits": "cache_bits",
}


class KickstartPPOConfig(GroupedConfigMixin, JournalPrivacyMixin, PPOConfig):
    """PPO config plus the teacher's (``.teacher()``) and the kickstart term's keys.

    Its keys (docs/configuration.md) are grouped by builder method: ``.teacher()``
    (``teacher_*``: the teacher's checkpoint, mechanism and budget), ``.kickstart()``
    (``kickstart_*``: the student's kickstart loss) and ``.privacy()`` (the journal).

    Example::

        config = (
            KickstartPPOConfig()
            .environment("CartPole-v1")
            .teacher(teacher_checkpoint="~/ray_results/kickstart-teacher-cartpole",
                     teacher_vanishing_coefficient=0.9)
            .kickstart(kickstart_lambda=0.5)
        )
    """

    CONFIG_GROUPS = {
        "teacher": ("teacher_checkpoint", *_TEACHER_FIELDS, "teacher_budget_scope"),
        "kickstart": (
            "kickstart_coeff",
            "kickstart_lambda",
            "kickstart_beta",
            "kickstart_loss",
            "kickstart_query_rule",
            "kickstart_query_confidence",
            "kickstart_query_fraction",
            "kickstart_answer_replay_size",
            "kickstart_answer_replay_capacity",
            "kickstart_answer_target",
        ),
        "privacy": ("privacy_journal_dir",),
    }
    #: Keys that take a number or a schedule in RLlib's format (as PPO's ``entropy_coeff``).
    SCHEDULE_KEYS = ("kickstart_coeff",)
    #: Nothing renamed: the keys already had their group's prefix; only the method moved.
    LEGACY_TRAINING_KWARGS = {key: key for keys in CONFIG_GROUPS.values() for key in keys}

    def __init__(self, algo_class: type[Algorithm] | None = None) -> None:
        super().__init__(algo_class=algo_class or KickstartPPO)
        defaults = TeacherSettings()
        self.teacher_checkpoint: str | None = None
        for attribute, field in _TEACHER_FIELDS.items():
            setattr(self, attribute, getattr(defaults, field))
        self.teacher_budget_scope = "owner"
        loss_defaults = KickstartLossSettings()
        self.kickstart_coeff = loss_defaults.coeff
        self.kickstart_lambda = loss_defaults.lam
        self.kickstart_beta = loss_defaults.beta
        self.kickstart_loss = loss_defaults.loss
        self.kickstart_query_rule = loss_defaults.query_rule
        self.kickstart_query_confidence = loss_defaults.query_confidence
        self.kickstart_query_fraction = loss_defaults.query_fraction
        self.kickstart_answer_replay_size = loss_defaults.replay_size
        self.kickstart_answer_replay_capacity = loss_defaults.replay_capacity
        self.kickstart_answer_target = loss_defaults.answer_target
        self.privacy_journal_dir: str | None = None

    def teacher(
        self,
        *,
        teacher_checkpoint: str = NotProvided,
        teacher_mechanism: str = NotProvided,
        teacher_k: float = NotProvided,
        teacher_vanishing_coefficient: float = NotProvided,
        teacher_eta: float = NotProvided,
        teacher_tau: float = NotProvided,
        teacher_adjacency: float = NotProvided,
        teacher_lipschitz: float | None = NotProvided,
        teacher_epsilon_budget: float = NotProvided,
        teacher_delta_budget: float = NotProvided,
        teacher_min_k: float = NotProvided,
        teacher_composition: str = NotProvided,
        teacher_delta_samples: int = NotProvided,
        teacher_delta_confidence: float = NotProvided,
        teacher_seed: int | None = NotProvided,
        teacher_secure_mode: bool = NotProvided,
        teacher_cache_bits: int = NotProvided,
        teacher_budget_scope: str = NotProvided,
    ) -> Self:
        """Sets the teacher: which one, its Dirichlet mechanism and its budget.

        User guide: docs/components/kickstarting.md.

        The teacher is a separate party that owns its budget: the student sees only its
        privatized answers, and it stops answering when the budget is spent.

        Args:
            teacher_checkpoint: The trained teacher (RLlib checkpoint, Tune trial or
                experiment folder, or RLModule folder). Required.
            teacher_mechanism: ``dirichlet`` or ``none`` (the raw teacher policy).
            teacher_k: k₀, the Dirichlet concentration of the first rollout.
            teacher_vanishing_coefficient: c in (0, 1]: k is multiplied by c each rollout.
            teacher_eta: η < 1/m of the restricted simplex.
            teacher_tau: τ of the ε bound (eq. 12) and the δ estimate (eq. 6).
            teacher_adjacency: b, the adjacency radius in observation space.
            teacher_lipschitz: L of the teacher network s ↦ softmax(logits); ``None`` = a
                bound from its weights (``policy_lipschitz_upper_bound``).
            teacher_epsilon_budget: Stop answering before ε would exceed this.
            teacher_delta_budget: Stop answering before δ would exceed this (default 1e-5).
                With ``rdp`` composition, the δ at which ε is reported and budgeted (below
                1); with ``basic``/``advanced``, one release's δ at ``teacher_k`` must be
                below it (checked before Ray starts).
            teacher_min_k: Stop answering once k falls below this.
            teacher_composition: How the ledger composes releases: ``rdp`` (default; Rényi
                DP of the Dirichlet mechanism), ``basic`` or ``advanced`` (of the
                per-release (ε, δ) of Theorem 1).
            teacher_delta_samples: Monte Carlo samples of δ per k.
            teacher_delta_confidence: Confidence of δ's upper bound.
            teacher_seed: Seed of the teacher's noise (``None`` = fresh entropy).
            teacher_secure_mode: Floating-point-safe Dirichlet sampling from OS entropy.
            teacher_cache_bits: 0 (no cache) or the SimHash code length of the teacher's
                answer cache: one release per state code, reused for free for later states
                with that code; requests are then answered up to the budget.
            teacher_budget_scope: ``owner`` (default): the teacher's budget belongs to its
                private data, one ledger beside the teacher checkpoint that every trial,
                sweep and run of this teacher spends from (docs/privacy-journal.md#owner-
                ledgers); ``trial``: each trial has its own budget (simulation sweeps whose
                trials stand for independent deployments).

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def kickstart(
        self,
        *,
        kickstart_coeff: float | list[list[float]] = NotProvided,
        kickstart_lambda: float = NotProvided,
        kickstart_beta: float = NotProvided,
        kickstart_loss: str = NotProvided,
        kickstart_query_rule: str = NotProvided,
        kickstart_query_confidence: float = NotProvided,
        kickstart_query_fraction: float = NotProvided,
        kickstart_answer_replay_size: int = NotProvided,
        kickstart_answer_replay_capacity: int = NotProvided,
        kickstart_answer_target: str = NotProvided,
    ) -> Self:
        """Sets the student's privacy-aware kickstart term (eq. 15-17).

        Args:
            kickstart_coeff: Weight of the kickstart term in the loss, or a schedule
                ``[[0, 1.0], [50000, 0.0]]`` (env steps sampled, weight; linear in between,
                as PPO's ``entropy_coeff``): a help that fades out.
            kickstart_lambda: λ: the threshold α_λ is the Lemma 1 radius shrunk by λ
                (0 = the privacy-unaware student).
            kickstart_beta: β in (0, 1), the confidence of the Lemma 1 radius.
            kickstart_loss: ``thresholded_l2`` (φ_λ, eq. 16) or ``cross_entropy`` (Schmitt
                et al.).
            kickstart_query_rule: ``all`` (ask about every state in the loss),
                ``uncertain`` (only where the student's largest action probability is below
                ``kickstart_query_confidence``) or ``random`` (each state with probability
                ``kickstart_query_fraction``).
            kickstart_query_confidence: Threshold of the ``uncertain`` rule, in (1/m, 1].
            kickstart_query_fraction: Probability with which the ``random`` rule asks about
                each state, in (0, 1]: spreads a small budget over many rollouts.
            kickstart_answer_replay_size: Remembered teacher answers added to each
                minibatch's kickstart term (0: no replay). Replaying released answers is
                post-processing: it spends no budget.
            kickstart_answer_replay_capacity: How many answers are remembered (the oldest
                go first); part of the learner's checkpoint.
            kickstart_answer_target: ``released`` (the term pulls towards the answer as
                released), ``debiased`` (towards (x − η)/(1 − mη), clipped at 0 and
                renormalized: the teacher's policy estimated from the answer, free
                post-processing that undoes the restriction to Δ_{m,η}) or ``argmax``
                (towards the one-hot action of the answer's largest entry, a noisy label of
                the teacher's action, with no Lemma 1 threshold).

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    def teacher_settings(self) -> TeacherSettings:
        """The teacher's mechanism and budget settings (validated)."""
        return TeacherSettings(
            **{field: getattr(self, attribute) for attribute, field in _TEACHER_FIELDS.items()}
        )

    @override(PPOConfig)
    def get_default_learner_class(self) -> type[Learner]:
        """PPO's torch learner with the kickstart term and teacher connector."""
        from rllib_privacy.algorithms.kickstart_ppo.torch.kickstart_ppo_torch_learner import (
            KickstartPPOTorchLearner,
        )

        return KickstartPPOTorchLearner

    @override(PPOConfig)
    def validate(self) -> None:
        """PPO's checks plus the teacher's and the kickstart term's; messages name the key."""
        super().validate()
        self.validate_kickstart_settings()

    def validate_kickstart_settings(self) -> None:
        """Raises PrivacyConfigError for a bad teacher or kickstart setting (no Ray needed)."""
        settings = self.teacher_settings()
        KickstartLossSettings.from_config(self)
        if isinstance(self.teacher_seed, bool):
            raise PrivacyConfigError(
                f"config key 'teacher_seed' must be a non-negative int or null, "
                f"got {self.teacher_seed!r}"
            )
        if self.teacher_delta_samples > MAX_TEACHER_DELTA_SAMPLES:
            raise PrivacyConfigError(
                f"config key 'teacher_delta_samples' must be at most "
                f"{MAX_TEACHER_DELTA_SAMPLES:,} (the teacher draws them for every new k), "
                f"got {self.teacher_delta_samples!r}"
            )
        if settings.seed is not None and settings.mechanism != "none":
            warn_fixed_seed("teacher_seed", secure_mode=settings.secure_mode)
        check_journal_dir(self.privacy_journal_dir)
        check_budget_scope("teacher_budget_scope", self.teacher_budget_scope)
        if self.teacher_checkpoint is None:
            raise PrivacyConfigError(
                "teacher_checkpoint is required: the path of a trained teacher (RLlib "
                "checkpoint, Tune trial or experiment folder, or RLModule folder)"
            )
        module_dir = resolve_teacher_checkpoint(self.teacher_checkpoint)
        student = _student_env_spaces(self)
        if student is not None:
            teacher = load_teacher_spaces(module_dir)
            check_teacher_spaces(
                teacher_obs=teacher[0],
                teacher_act=teacher[1],
                student_obs=student[0],
                student_act=student[1],
                where=str(self.teacher_checkpoint),
            )
            # η < 1/m needs m; otherwise the teacher actor would fail inside Ray.
            if isinstance(getattr(teacher[1], "n", None), int | np.integer):
                settings.check_num_actions(int(teacher[1].n))
                settings.check_release_delta(int(teacher[1].n))
                if settings.mechanism == "dirichlet":
                    KickstartLossSettings.from_config(self).check_term_can_act(
                        num_actions=int(teacher[1].n), k=settings.k
                    )

    @staticmethod
    def normalize_config_dict(config: dict[str, Any]) -> dict[str, Any]:
        """Make ``teacher_checkpoint`` absolute before Tune moves trials to their own folders."""
        value = config.get("teacher_checkpoint")
        if isinstance(value, dict) and isinstance(value.get("grid_search"), list):
            config["teacher_checkpoint"] = {
                "grid_search": [_absolute(v) for v in value["grid_search"]]
            }
        elif value is not None:
            config["teacher_checkpoint"] = _absolute(value)
        return config


class KickstartPPO(PPO):
    """PPO whose student learns from a privatized teacher (see module docstring)."""

    #: Result keys this algorithm adds at the top level (usable as Tune stop keys).
    TOP_LEVEL_RESULT_KEYS = (*HEADLINE_KEYS, "timesteps_total")

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> KickstartPPOConfig:
        """Returns the default KickstartPPOConfig."""
        return KickstartPPOConfig()

    @override(PPO)
    def setup(self, config: AlgorithmConfig) -> None:
        """Builds PPO, starts the teacher actor, checks its spaces, attaches it to the learners."""
        super().setup(config)
        settings = config.teacher_settings()
        checkpoint = str(resolve_teacher_checkpoint(config.teacher_checkpoint))
        # The teacher writes its journal in the trial folder (stable across --resume): keep it
        # on this node, whose disk that folder is on.
        actor_cls = ray.remote(num_cpus=0, max_restarts=0)(TeacherServer).options(
            scheduling_strategy=same_node_strategy()
        )
        journal = algorithm_journal_path(
            self, config.privacy_journal_dir, component=JOURNAL_COMPONENT
        )
        owner: dict[str, str] = {}
        if config.teacher_budget_scope == "owner" and settings.mechanism == "dirichlet":
            # The budget belongs to the teacher's data: one ledger per teacher checkpoint
            # (by content), beside it, shared by every trial and run that queries it.
            owner = owner_ledger_args([checkpoint], folder=checkpoint, component=JOURNAL_COMPONENT)
        self._restart_guard = RestartGuard.before_open(
            journal, component=JOURNAL_COMPONENT, owner_ledger=owner.get("owner_path")
        )
        self._teacher = TeacherClient(
            actor_cls.remote(
                checkpoint,
                settings.to_dict(),
                journal_path=str(journal),
                trial=trial_name(self),
                **owner,
            )
        )
        teacher_obs, teacher_act = self._teacher.spaces()
        student_obs, student_act = self._student_spaces()
        check_teacher_spaces(
            teacher_obs=teacher_obs,
            teacher_act=teacher_act,
            student_obs=student_obs,
            student_act=student_act,
            where=str(config.teacher_checkpoint),
        )
        self.learner_group.foreach_learner(
            lambda learner, teacher: learner.set_kickstart_teacher(teacher), teacher=self._teacher
        )
        self._private = settings.mechanism != "none"

    def _student_spaces(self) -> tuple[Any, Any]:
        spaces = self.spaces or {}
        for key in (DEFAULT_MODULE_ID, "__env_single__"):
            if key in spaces:
                return spaces[key]
        module = self.learner_group._learner.module[DEFAULT_MODULE_ID]
        return module.observation_space, module.action_space

    @override(PPO)
    def training_step(self) -> None:
        """Starts the teacher's rollout (k decay, budget check), then one PPO iteration."""
        if self._private:
            self._restart_guard.check(self)
        self._teacher.start_rollout(expected_states=self.config.total_train_batch_size)
        before = self._teacher.stats()
        super().training_step()
        self._log_kickstart_metrics(self._teacher.stats(), before=before)

    def _log_kickstart_metrics(
        self, teacher: dict[str, float], *, before: dict[str, float]
    ) -> None:
        served = teacher["answered"] + teacher["cached"] - before["answered"] - before["cached"]
        values: dict[str, float] = {
            keys.KICKSTART_TEACHER_SERVING: float(served > 0),
            keys.KICKSTART_K: teacher["k"],
            keys.KICKSTART_TEACHER_SHARING: teacher["sharing"],
            keys.KICKSTART_TEACHER_ANSWERED: teacher["answered"],
            keys.KICKSTART_TEACHER_REFUSED: teacher["refused"],
            keys.KICKSTART_TEACHER_ASKED: teacher["asked"],
            keys.KICKSTART_TEACHER_CACHED: teacher["cached"],
            keys.KICKSTART_TEACHER_CACHE_SIZE: teacher["cache_size"],
            "teacher_k": teacher["k"],
            "teacher_sharing": teacher["sharing"],
        }
        if not math.isnan(teacher["stopped_at_rollout"]):
            values[keys.KICKSTART_TEACHER_STOPPED_AT] = teacher["stopped_at_rollout"]
        if self._private:
            # The headline ε is the data owner's: in owner scope what every trial and run of
            # this teacher spent together, in trial scope this trial's own.
            values.update(
                {
                    keys.PRIVACY_EPSILON_SPENT: teacher["owner_epsilon_spent"],
                    keys.PRIVACY_DELTA_SPENT: teacher["owner_delta_spent"],
                    keys.PRIVACY_TRIAL_EPSILON_SPENT: teacher["epsilon_spent"],
                    keys.PRIVACY_BUDGET_PER_TRIAL: 1.0 - teacher["owner_scope"],
                    keys.PRIVACY_RELEASES: teacher["releases"],
                    keys.PRIVACY_RELEASES_REPLAYED: teacher["replayed_releases"],
                    keys.KICKSTART_EPSILON_PER_RELEASE: teacher["epsilon_per_release"],
                    keys.KICKSTART_DELTA_PER_RELEASE: teacher["delta_per_release"],
                    keys.KICKSTART_EPSILON_BASIC: teacher["epsilon_basic"],
                    keys.KICKSTART_DELTA_BASIC: teacher["delta_basic"],
                    "teacher_epsilon_spent": teacher["owner_epsilon_spent"],
                }
            )
        for learner_key, result_key in (
            (LOSS_METRIC, keys.KICKSTART_LOSS),
            (ACTIVE_FRACTION_METRIC, keys.KICKSTART_ACTIVE_FRACTION),
            (ANSWERED_FRACTION_METRIC, keys.KICKSTART_ANSWERED_FRACTION),
            (ALPHA_LAMBDA_METRIC, keys.KICKSTART_ALPHA_LAMBDA),
            (REMEMBERED_METRIC, keys.KICKSTART_ANSWERS_REMEMBERED),
            (COEFF_METRIC, keys.KICKSTART_COEFF),
        ):
            # peek's default=None means "no default" (a KeyError): NaN marks a missing key.
            value = self.metrics.peek(
                (LEARNER_RESULTS, DEFAULT_MODULE_ID, learner_key), default=math.nan
            )
            if not math.isnan(value):
                values[result_key] = float(value)
        for key, value in values.items():
            self.metrics.log_value(tuple(key.split("/")) if "/" in key else key, value, window=1)

    @override(Algorithm)
    def step(self) -> dict[str, Any]:
        """One iteration; headline keys first, env steps as ``timesteps_total``."""
        return keys.ppo_family_results(super().step(), HEADLINE_KEYS)

    @override(Algorithm)
    def get_state(
        self, components: Any = None, *, not_components: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        """RLlib's state plus the teacher's (ledger, k schedule, counts; never weights)."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        state["kickstart_teacher"] = self._teacher.get_state()
        return state

    @override(Algorithm)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores RLlib's state and the teacher's (its spent budget never resets)."""
        super().set_state(state)
        if "kickstart_teacher" in state:
            self._teacher.set_state(state["kickstart_teacher"])
            self._restart_guard.restored()

    @override(Algorithm)
    def cleanup(self) -> None:
        """Stops the teacher actor with the algorithm."""
        teacher = getattr(self, "_teacher", None)
        if teacher is not None:
            teacher.shutdown()
        super().cleanup()


def _student_env_spaces(config: AlgorithmConfig) -> tuple[Any, Any] | None:
    """(observation, action) space of one env of the student, or None if it cannot be made.

    Lets a teacher trained on another environment be rejected before Ray starts; when the
    env cannot be made here (e.g. it needs the cluster), the check happens in ``setup``.
    """
    import gymnasium as gym
    from ray.rllib.env.env_context import EnvContext
    from ray.tune.registry import ENV_CREATOR, _global_registry

    if not isinstance(config.env, str):
        return None
    try:
        if _global_registry.contains(ENV_CREATOR, config.env):
            creator = _global_registry.get(ENV_CREATOR, config.env)
            env = creator(EnvContext(dict(config.env_config or {}), worker_index=0))
        else:
            env = gym.make(config.env, **dict(config.env_config or {}))
    except Exception:  # noqa: BLE001  (RLlib reports env errors itself when it builds)
        return None
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def _absolute(value: Any) -> Any:
    if isinstance(value, str) and value:
        return os.path.abspath(os.path.expanduser(value))
    return value
