"""PATE-PPO: a PPO student that also learns from a private teacher ensemble's noisy labels.

Papernot et al. 2017 (PATE) carried to RL (docs/components/pate.md): n teacher policies trained on
disjoint private data label states the student visited with noisy-argmax actions; the
student minimizes its PPO loss plus ``pate_label_loss_coeff`` × cross-entropy to those
labels; querying stops at the budget. The learner remembers every label it received and
keeps training on them (label replay, ``pate_label_sgd_steps``): post-processing, free.

Where things live:

* the teachers, the noise and the ONE ledger: a single Ray actor
  (``PATELabeler``) started by the Algorithm;
* choosing states and asking: ``PATELabelingCallback``
  on every EnvRunner, once per collected sample;
* labels into the batch and the loss: ``AddPATELabelsToBatch``
  and ``PATELabelLossMixin`` (``PATEPPOTorchLearner``);
* checkpoints: ``PATEPPO.get_state/set_state`` carry the labeler's ledger, so a restored
  run continues the spent budget.
"""

from __future__ import annotations

import math
from typing import Any

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override
from typing_extensions import Self

from rllib_privacy._validation import check_choice
from rllib_privacy.accounting import PATELedger
from rllib_privacy.accounting.owner_ledger import check_budget_scope, owner_ledger_args
from rllib_privacy.accounting.pate_ledger import AGGREGATORS, BUDGET_BASES
from rllib_privacy.algorithms.config_keys import GroupedConfigMixin, JournalPrivacyMixin
from rllib_privacy.callbacks.pate_labeling import (
    LABELER_ATTR,
    QUERY_SELECTIONS,
    PATELabelingCallback,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms.secure_noise import warn_fixed_seed
from rllib_privacy.pate.ensemble import resolve_teacher_checkpoints
from rllib_privacy.pate.labeler import JOURNAL_COMPONENT, create_labeler_actor
from rllib_privacy.utils import metrics as keys
from rllib_privacy.utils.journaling import (
    RestartGuard,
    algorithm_journal_path,
    check_journal_dir,
    trial_name,
)

#: Result keys copied to the top level, in this order (Tune's table shows the first ones).
HEADLINE_KEYS = (
    "episode_return_mean",
    "pate_epsilon",
    "pate_epsilon_data_independent",
    "pate_queries",
)

#: PATE keys of PATEPPOConfig and their defaults (docs/configuration.md).
PATE_DEFAULTS: dict[str, Any] = {
    "pate_teacher_checkpoints": None,
    "pate_num_teachers": None,
    "pate_aggregator": "lnmax",
    "pate_gamma": 0.05,
    "pate_gnmax_sigma": None,
    "pate_confident_threshold": None,
    "pate_confident_sigma": None,
    "pate_delta": 1e-5,
    "pate_epsilon_budget": 10.0,
    "pate_max_queries": None,
    "pate_budget_basis": "data_independent",
    "pate_max_order": 8,
    "pate_query_selection": "least_confident",
    "pate_queries_per_sample": 100,
    "pate_label_loss_coeff": 1.0,
    "pate_label_replay_size": 256,
    "pate_label_sgd_steps": 0,
    "pate_log_label_agreement": False,
    "pate_log_data_dependent_epsilon": False,
    "pate_secure_mode": False,
    "pate_budget_scope": "owner",
    "privacy_journal_dir": None,
}


#: Largest ``pate_max_order`` (the paper uses 8; ε barely changes past a few dozen).
MAX_PATE_ORDER = 1024
#: Largest ``pate_gamma``: Laplace noise of scale 1e-6 on vote counts is no noise at all.
MAX_PATE_GAMMA = 1.0e6


class PATEPPOConfig(GroupedConfigMixin, JournalPrivacyMixin, PPOConfig):
    """PPO config plus the PATE teacher-ensemble settings (``PATEPPO``).

    Its keys (docs/configuration.md) are grouped by builder method: ``.pate()``
    (``pate_*``: the teachers, the noisy max, the accountant and the label loss) and
    ``.privacy()`` (the journal).

    Example::

        config = (
            PATEPPOConfig()
            .environment("rllib_privacy/CartPoleGravity-v0")
            .pate(pate_teacher_checkpoints="~/ray_results/pate-teachers-cartpole",
                  pate_gamma=0.5, pate_epsilon_budget=20.0)
        )
        algo = config.build_algo()
    """

    CONFIG_GROUPS = {
        "pate": tuple(k for k in PATE_DEFAULTS if k.startswith("pate_")),
        "privacy": ("privacy_journal_dir",),
    }
    LEGACY_CONFIG_KEYS = {"teacher_checkpoints": "pate_teacher_checkpoints"}
    LEGACY_TRAINING_KWARGS = {
        "teacher_checkpoints": "pate_teacher_checkpoints",
        **{key: key for keys in CONFIG_GROUPS.values() for key in keys},
    }

    def __init__(self, algo_class: type[Algorithm] | None = None) -> None:
        super().__init__(algo_class=algo_class or PATEPPO)
        for name, value in PATE_DEFAULTS.items():
            setattr(self, name, value)
        # RLlib's type for the key: a callback class or a list of them.
        self.callbacks_class: type[Any] | list[type[Any]] = PATELabelingCallback

    def pate(
        self,
        *,
        pate_teacher_checkpoints: str | list[str] | None = NotProvided,
        pate_num_teachers: int | None = NotProvided,
        pate_aggregator: str = NotProvided,
        pate_gamma: float = NotProvided,
        pate_gnmax_sigma: float | None = NotProvided,
        pate_confident_threshold: float | None = NotProvided,
        pate_confident_sigma: float | None = NotProvided,
        pate_delta: float = NotProvided,
        pate_epsilon_budget: float = NotProvided,
        pate_max_queries: int | None = NotProvided,
        pate_budget_basis: str = NotProvided,
        pate_max_order: int = NotProvided,
        pate_query_selection: str = NotProvided,
        pate_queries_per_sample: int | None = NotProvided,
        pate_label_loss_coeff: float = NotProvided,
        pate_label_replay_size: int = NotProvided,
        pate_label_sgd_steps: int = NotProvided,
        pate_log_label_agreement: bool = NotProvided,
        pate_log_data_dependent_epsilon: bool = NotProvided,
        pate_secure_mode: bool = NotProvided,
        pate_budget_scope: str = NotProvided,
    ) -> Self:
        """Sets the teacher ensemble, its noisy-max labels, their budget and their loss.

        Args:
            pate_teacher_checkpoints: Teacher RLModule dirs, Algorithm checkpoints, or an
                experiment folder of teacher trials (a path or a list of paths). Required.
            pate_num_teachers: Use only the first n teachers found (None: all).
            pate_aggregator: ``lnmax`` (Laplace noisy max, 2017), ``gnmax`` (Gaussian noisy
                max, 2018) or ``confident_gnmax`` (GNMax on queries whose top vote passes a
                noisy threshold, 2018).
            pate_gamma: γ, inverse Laplace noise scale of LNMax (each query 2γ-DP).
            pate_gnmax_sigma: σ of GNMax's Gaussian vote noise (gnmax, confident_gnmax).
            pate_confident_threshold: Threshold T on the top vote count (confident_gnmax).
            pate_confident_sigma: σ₁ of the threshold's Gaussian noise (confident_gnmax).
            pate_delta: δ of the reported (ε, δ).
            pate_epsilon_budget: Stop answering before ε exceeds this (``inf``: no limit).
            pate_max_queries: Stop after this many queries (None: no cap; Confident-GNMax
                counts the unanswered ones too).
            pate_budget_basis: ``data_independent`` or ``data_dependent`` ε for the budget.
            pate_max_order: Largest moment order of the accountant.
            pate_query_selection: ``all``, ``random`` or ``least_confident``.
            pate_queries_per_sample: Most states sent per EnvRunner sample (None: all).
            pate_label_loss_coeff: Weight of the cross-entropy to the labels.
            pate_label_replay_size: Labels replayed per minibatch from every label received
                so far (post-processing: no privacy cost); 0: each batch's own labels only.
            pate_label_sgd_steps: Extra gradient steps on the replayed labels' loss alone
                after each update (needs label replay).
            pate_log_label_agreement: Report the NON-PRIVATE noisy-vs-plurality agreement.
            pate_log_data_dependent_epsilon: Report the NON-PRIVATE un-noised data-dependent ε.
            pate_secure_mode: Floating-point-safe vote noise (OpenDP, OS entropy); the seed
                then does not drive the labels' noise.
            pate_budget_scope: ``owner`` (default): the budget belongs to the teachers'
                private partitions, one ledger beside the teacher checkpoints that every
                trial, sweep and run of this ensemble spends from
                (docs/privacy-journal.md#owner-ledgers); ``trial``: each trial has its own
                budget (simulation sweeps whose trials stand for independent deployments).

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    @override(AlgorithmConfig)
    def get_default_learner_class(self) -> type[Learner]:
        """PPO's torch learner with the PATE label loss."""
        from rllib_privacy.algorithms.pate_ppo.torch.pate_ppo_torch_learner import (
            PATEPPOTorchLearner,
        )

        return PATEPPOTorchLearner

    @override(PPOConfig)
    def validate(self) -> None:
        """Checks PPO's and PATE's settings; every message names the key."""
        super().validate()
        self.validate_pate_settings()

    def validate_pate_settings(self) -> None:
        """Raises PrivacyConfigError for a bad PATE setting (no Ray, no file access).

        Whether ``pate_teacher_checkpoints`` exist is checked when the algorithm starts, so
        that an experiment file can be validated before its teachers are trained.
        """
        spec = self.pate_teacher_checkpoints
        if spec is None:
            raise PrivacyConfigError(
                "config key 'pate_teacher_checkpoints' is required: a teacher experiment folder, "
                "checkpoint or RLModule directory, or a list of them"
            )
        paths = [spec] if isinstance(spec, str) else spec
        if (
            not isinstance(paths, list | tuple)
            or not paths
            or not all(isinstance(p, str) and p for p in paths)
        ):
            raise PrivacyConfigError(
                "config key 'pate_teacher_checkpoints' must be a path or a non-empty list of "
                f"paths, got {spec!r}"
            )
        if self.pate_num_teachers is not None:
            _check_int("pate_num_teachers", self.pate_num_teachers, low=2)
        check_choice(
            "config key 'pate_budget_basis'",
            self.pate_budget_basis,
            BUDGET_BASES,
            error=PrivacyConfigError,
        )
        check_choice(
            "config key 'pate_query_selection'",
            self.pate_query_selection,
            QUERY_SELECTIONS,
            error=PrivacyConfigError,
        )
        if self.pate_queries_per_sample is not None:
            _check_int("pate_queries_per_sample", self.pate_queries_per_sample, low=1)
        if self.pate_max_queries is not None:
            _check_int("pate_max_queries", self.pate_max_queries, low=0)
        _check_int("pate_max_order", self.pate_max_order, low=1)
        if self.pate_max_order > MAX_PATE_ORDER:
            raise PrivacyConfigError(
                f"config key 'pate_max_order' must be at most {MAX_PATE_ORDER} (one moment "
                f"per order is kept for every query), got {self.pate_max_order!r}"
            )
        _check_number("pate_label_loss_coeff", self.pate_label_loss_coeff, low=0.0, closed=True)
        _check_int("pate_label_replay_size", self.pate_label_replay_size, low=0)
        _check_int("pate_label_sgd_steps", self.pate_label_sgd_steps, low=0)
        if self.pate_label_sgd_steps and not self.pate_label_replay_size:
            raise PrivacyConfigError(
                "config key 'pate_label_sgd_steps' needs label replay: set "
                "pate_label_replay_size > 0 or pate_label_sgd_steps: 0"
            )
        check_journal_dir(self.privacy_journal_dir)
        check_budget_scope("pate_budget_scope", self.pate_budget_scope)
        for key in ("pate_log_label_agreement", "pate_log_data_dependent_epsilon",
                    "pate_secure_mode"):  # fmt: skip
            if not isinstance(getattr(self, key), bool):
                raise PrivacyConfigError(
                    f"config key '{key}' must be true or false, got {getattr(self, key)!r}"
                )
        if self.seed is not None:
            # The labeler's noise is seeded from the run's seed (config.seed).
            warn_fixed_seed("seed (PATE labeler noise)", secure_mode=self.pate_secure_mode)
        callbacks = self.callbacks_class
        callbacks = callbacks if isinstance(callbacks, list | tuple) else [callbacks]
        if not any(isinstance(c, type) and issubclass(c, PATELabelingCallback) for c in callbacks):
            raise PrivacyConfigError(
                "config key 'callbacks_class' must include PATELabelingCallback for PATEPPO "
                "(e.g. a list [PATELabelingCallback, YourCallback])"
            )
        check_choice(
            "config key 'pate_aggregator'",
            self.pate_aggregator,
            AGGREGATORS,
            error=PrivacyConfigError,
        )
        if self.pate_aggregator == "lnmax":
            gamma = _as_float(self.pate_gamma)
            _check_number("pate_gamma", gamma, low=0.0, closed=False)
            if gamma > MAX_PATE_GAMMA:  # The moments 2γ²l(l+1) would overflow a float.
                raise PrivacyConfigError(
                    f"config key 'pate_gamma' must be at most {MAX_PATE_GAMMA:g} (noise scale "
                    f"1/γ; each query costs 2γ), got {self.pate_gamma!r}"
                )
        self._validate_gnmax_settings()
        delta = _as_float(self.pate_delta)
        _check_number("pate_delta", delta, low=0.0, closed=False)
        if delta >= 1.0:
            raise PrivacyConfigError(f"config key 'pate_delta' must be < 1, got {delta!r}")
        budget = _as_float(self.pate_epsilon_budget)
        # Only +inf means "no limit"; -inf must fail here, naming the key.
        if budget is not None and not (isinstance(budget, float) and budget == math.inf):
            _check_number("pate_epsilon_budget", budget, low=0.0, closed=False)
        self.build_pate_ledger()  # Everything it checks was checked above.

    def _validate_gnmax_settings(self) -> None:
        """The GNMax keys: required by their aggregator, numbers in range."""
        needed = {
            "lnmax": (),
            "gnmax": ("pate_gnmax_sigma",),
            "confident_gnmax": (
                "pate_gnmax_sigma",
                "pate_confident_threshold",
                "pate_confident_sigma",
            ),
        }[self.pate_aggregator]
        for key in ("pate_gnmax_sigma", "pate_confident_threshold", "pate_confident_sigma"):
            value = _as_float(getattr(self, key))
            if key not in needed:
                if value is not None:
                    raise PrivacyConfigError(
                        f"config key '{key}' applies to pate_aggregator "
                        f"{'confident_gnmax' if 'confident' in key else 'gnmax or confident_gnmax'}"
                        f", not {self.pate_aggregator!r}; remove it or change pate_aggregator"
                    )
                continue
            if value is None:
                raise PrivacyConfigError(
                    f"config key '{key}' is required with pate_aggregator: {self.pate_aggregator}"
                )
            if key == "pate_confident_threshold":
                _check_number(key, value, low=0.0, closed=True)
            else:
                _check_number(key, value, low=0.0, closed=False)

    def build_pate_ledger(self) -> PATELedger:
        """A fresh, empty ledger with this config's aggregator, noise, δ and budget."""
        budget = self.pate_epsilon_budget
        aggregator = self.pate_aggregator
        confident = aggregator == "confident_gnmax"
        return PATELedger(
            aggregator=aggregator,
            gamma=_as_float(self.pate_gamma) if aggregator == "lnmax" else None,
            sigma=None if aggregator == "lnmax" else _as_float(self.pate_gnmax_sigma),
            threshold=_as_float(self.pate_confident_threshold) if confident else None,
            sigma_threshold=_as_float(self.pate_confident_sigma) if confident else None,
            delta=_as_float(self.pate_delta),
            max_order=self.pate_max_order,
            epsilon_budget=math.inf if budget is None else _as_float(budget),
            max_queries=self.pate_max_queries,
            budget_basis=self.pate_budget_basis,
        )


def _as_float(value: Any) -> Any:
    # YAML writes 1e-5 as a string unless it has a dot ("1.0e-5"): accept both.
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _check_int(name: str, value: Any, *, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise PrivacyConfigError(f"config key '{name}' must be an integer >= {low}, got {value!r}")


def _check_number(name: str, value: Any, *, low: float, closed: bool) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < low or (value == low and not closed):
        bound = f"{'>=' if closed else '>'} {low}"
        raise PrivacyConfigError(
            f"config key '{name}' must be a finite number {bound}, got {value!r}"
        )


class PATEPPO(PPO):
    """PPO whose student also learns from PATE noisy-max labels (see module docstring)."""

    #: Result keys this algorithm adds at the top level (usable as Tune stop keys).
    TOP_LEVEL_RESULT_KEYS = (*HEADLINE_KEYS, "timesteps_total")

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> PATEPPOConfig:
        """Returns a PATEPPOConfig with PPO's and the PATE defaults."""
        return PATEPPOConfig()

    @override(PPO)
    def setup(self, config: PATEPPOConfig) -> None:
        """Builds PPO, then starts the one labeler actor and hands it to every EnvRunner."""
        super().setup(config)
        teacher_dirs = resolve_teacher_checkpoints(
            config.pate_teacher_checkpoints, num_teachers=config.pate_num_teachers
        )
        observation_space, action_space = self.env_runner_group.get_spaces()[DEFAULT_MODULE_ID]
        journal = algorithm_journal_path(
            self, config.privacy_journal_dir, component=JOURNAL_COMPONENT
        )
        owner: dict[str, str] = {}
        if config.pate_budget_scope == "owner":
            # The budget belongs to the teachers' partitions: one ledger per ensemble (the
            # teachers' files, in order), beside its first teacher (the teachers' common
            # folder could be a system one), shared by every trial and run.
            owner = owner_ledger_args(
                teacher_dirs,
                folder=teacher_dirs[0],
                component=JOURNAL_COMPONENT,
                extra={"num_teachers": len(teacher_dirs)},
            )
        self._restart_guard = RestartGuard.before_open(
            journal, component=JOURNAL_COMPONENT, owner_ledger=owner.get("owner_path")
        )
        self._labeler = create_labeler_actor(
            teacher_dirs=[str(p) for p in teacher_dirs],
            observation_space=observation_space,
            action_space=action_space,
            ledger=config.build_pate_ledger(),
            seed=config.seed,
            track_label_agreement=config.pate_log_label_agreement,
            report_data_dependent_epsilon=config.pate_log_data_dependent_epsilon,
            secure_mode=config.pate_secure_mode,
            journal_path=str(journal),
            trial=trial_name(self),
            **owner,
        )
        self._share_labeler()

    def _share_labeler(self) -> None:
        """Gives every EnvRunner (also restarted ones) the handle of the labeler actor."""
        handle = self._labeler
        self.env_runner_group.foreach_env_runner(
            lambda env_runner: setattr(env_runner, LABELER_ATTR, handle),
            local_env_runner=True,
        )

    @override(PPO)
    def training_step(self) -> None:
        """PPO's step (the callback labels the samples), then the ledger's metrics."""
        import ray

        self._share_labeler()
        self._restart_guard.check(self)
        super().training_step()
        pate = ray.get(self._labeler.metrics.remote())
        # Everything here is publishable: the data-independent ε is a function of the
        # number of queries (and answers) only. The vote-dependent numbers are logged only
        # when turned on (non-private diagnostics).
        values = {
            "pate_epsilon": pate["epsilon"],
            "pate_epsilon_data_independent": pate["epsilon_data_independent"],
            "pate_queries": pate["queries"],
            keys.PATE_QUERIES: pate["queries"],
            keys.PATE_ANSWERED: pate["answered"],
            keys.PATE_EPSILON: pate["epsilon"],
            keys.PATE_EPSILON_DATA_INDEPENDENT: pate["epsilon_data_independent"],
            keys.PATE_BUDGET_EXHAUSTED: pate["budget_exhausted"],
            keys.PATE_NUM_TEACHERS: pate["num_teachers"],
            # The headline ε is the data owner's: in owner scope what every trial and run of
            # these teachers spent together, in trial scope this trial's own.
            keys.PRIVACY_EPSILON_SPENT: pate["owner_epsilon"],
            keys.PRIVACY_TRIAL_EPSILON_SPENT: pate["epsilon_data_independent"],
            keys.PRIVACY_BUDGET_PER_TRIAL: 1.0 - pate["owner_scope"],
            keys.PRIVACY_DELTA_SPENT: pate["delta"],
            keys.PRIVACY_RELEASES: pate["queries"],
            keys.PRIVACY_RELEASES_REPLAYED: pate["replayed_queries"],
        }
        if "label_agreement" in pate:
            values[keys.PATE_LABEL_AGREEMENT] = pate["label_agreement"]
        if "epsilon_data_dependent" in pate:
            values[keys.PATE_EPSILON_DATA_DEPENDENT] = pate["epsilon_data_dependent"]
        for key, value in values.items():
            self.metrics.log_value(tuple(key.split("/")), value, window=1)

    @override(Algorithm)
    def step(self) -> dict[str, Any]:
        """Runs one iteration; puts headline keys first and env steps as x-axis."""
        return keys.ppo_family_results(super().step(), HEADLINE_KEYS)

    @override(Algorithm)
    def get_state(
        self, components: Any = None, *, not_components: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Adds the labeler's ledger (the spent budget) to RLlib's state."""
        import ray

        state = super().get_state(components, not_components=not_components, **kwargs)
        state["pate_labeler"], state["pate_labeler_journal"] = ray.get(
            self._labeler.checkpoint.remote()
        )
        return state

    @override(Algorithm)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores RLlib's state and the ledger (the spent budget never resets)."""
        import ray

        super().set_state(state)
        if "pate_labeler" in state:
            ray.get(
                self._labeler.load_state_dict.remote(
                    state["pate_labeler"], journal_marker=state.get("pate_labeler_journal")
                )
            )
            self._restart_guard.restored()

    @override(Algorithm)
    def cleanup(self) -> None:
        """Stops the labeler actor with the algorithm."""
        import ray

        labeler = getattr(self, "_labeler", None)
        if labeler is not None:
            ray.kill(labeler)
        super().cleanup()
