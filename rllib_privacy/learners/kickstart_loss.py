"""Learner mixin adding the (privacy-aware) kickstart term to any TorchLearner's loss.

Gohari et al. (eq. 15-17; docs/components/kickstarting.md): with the teacher's privatized policy
π^t(s) drawn from Dir_k and the student's π_θ(s),

    α_λ = λ·sqrt(ln(1/β) / (2(k + 1)))          (Lemma 1 radius, shrunk by λ)
    φ_λ(s) = ‖π_θ(s) − π^t(s)‖₂ · 1{‖π_θ(s) − π^t(s)‖₂ > α_λ}
    L = L_base + coeff · mean_s φ_λ(s)

over the samples the teacher answered. λ = 0 is the privacy-unaware student; a teacher
without mechanism (k = ∞, α_λ = 0) gives plain kickstarting with the L2 term, and
``loss="cross_entropy"`` gives Schmitt et al.'s H(π^t, π_θ) term instead.

Answer replay (``kickstart_answer_replay_size`` > 0): every answer that reaches the learner
is remembered with its state and k, and each minibatch's term is the mean over its own answered
samples and a uniform draw of that many remembered answers. Training again on a released
answer is post-processing of the release: it costs no privacy, so the answers bought early in
a budget keep teaching after the teacher stops sharing.

Debiased answers (``kickstart_answer_target="debiased"``): a Dirichlet answer x ~ Dir(k·π̃) has
mean π̃ = (1 − mη)·π + η, the teacher's policy squeezed towards uniform. Its unbiased estimate
of π is (x − η)/(1 − mη); the term uses it clipped at 0 and renormalized (a distribution again),
with the Lemma 1 radius scaled by 1/(1 − mη) to the same units. This is post-processing of the
release, with η a public setting, so it costs no privacy; it lets a teacher use a large η (a
cheaper release: the Rényi cost falls steeply as η approaches 1/m) without teaching the student
a near-uniform policy.

Argmax answers (``kickstart_answer_target="argmax"``): the term pulls towards the one-hot
action of the answer's largest entry, a noisy label of the teacher's action as in PATE's
student training (Papernot et al., ICLR 2017). Where the teacher prefers one action, Dir(k·π̃)
puts its largest entry there with high probability (for CartPole's η = 0.4, k = 100 and a
confident teacher, about 98%), so the labels are mostly right, while a debiased answer keeps
the noise of every entry. No Lemma 1 threshold applies to a label (α_λ = 0). Post-processing:
no privacy cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
from ray.rllib.utils.schedules.scheduler import Scheduler

from rllib_privacy.connectors.kickstart_teacher import (
    QUERY_RULES,
    TEACHER_K,
    TEACHER_MASK,
    TEACHER_POLICY,
    AddTeacherAnswersToBatch,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.learners.answer_replay import AnswerReplay
from rllib_privacy.mechanisms.dirichlet import kickstart_threshold

KICKSTART_LOSSES: tuple[str, ...] = ("thresholded_l2", "cross_entropy")
#: What the term pulls the student towards: the released answer, its debiased estimate of π,
#: or the one-hot action of its largest entry.
ANSWER_TARGETS: tuple[str, ...] = ("released", "debiased", "argmax")

#: Learner metric names (logged under the module id; the algorithm copies them to
#: ``kickstart/...`` result keys).
LOSS_METRIC = "kickstart_loss"
ACTIVE_FRACTION_METRIC = "kickstart_active_fraction"
ALPHA_LAMBDA_METRIC = "kickstart_alpha_lambda"
ANSWERED_FRACTION_METRIC = "kickstart_answered_fraction"
REMEMBERED_METRIC = "kickstart_answers_remembered"
COEFF_METRIC = "kickstart_coeff"
_CONNECTOR_STATE = "kickstart_teacher_connector"
_REPLAY_STATE = "kickstart_answer_replay"


@dataclass(frozen=True)
class KickstartLossSettings:
    """The student's kickstart term.

    Attributes:
        coeff: Weight of the term next to the base loss (≥ 0), or a schedule in RLlib's
            format, ``[[0, 1.0], [50000, 0.0]]`` (env steps sampled, weight; linear in
            between, the last weight after it), as PPO's ``entropy_coeff``: a help that ends.
        lam: λ ≥ 0 shrinking the Lemma 1 radius (0: privacy-unaware).
        beta: β in (0, 1), the confidence of Lemma 1.
        loss: ``"thresholded_l2"`` (φ_λ) or ``"cross_entropy"`` (Schmitt et al.).
        query_rule: Which states the teacher is asked about: ``"all"`` (every state in the
            loss), ``"uncertain"`` (only where the student's largest action probability
            is below ``query_confidence``) or ``"random"`` (each with probability
            ``query_fraction``, the student's own coin).
        query_confidence: The threshold of ``"uncertain"``, in (0, 1].
        query_fraction: The probability of ``"random"``, in (0, 1].
        replay_size: Remembered answers added to each minibatch's term (0: no replay).
        replay_capacity: How many answers are remembered; the oldest go first.
        answer_target: ``"released"`` (the answer x as released), ``"debiased"``
            ((x − η)/(1 − mη), clipped at 0 and renormalized; needs the teacher's η) or
            ``"argmax"`` (the one-hot action of the answer's largest entry, with α_λ = 0).
        teacher_eta: The teacher's η (``teacher_eta``), used by the ``"debiased"`` target.

    """

    coeff: float | Sequence[Sequence[float]] = 1.0
    lam: float = 0.5
    beta: float = 0.05
    loss: str = "thresholded_l2"
    query_rule: str = "all"
    query_confidence: float = 0.9
    query_fraction: float = 1.0
    replay_size: int = 0
    replay_capacity: int = 100_000
    answer_target: str = "released"
    teacher_eta: float | None = None

    def __post_init__(self) -> None:
        """Validate; messages name the ``kickstart_*`` config keys."""
        _check_coeff(self.coeff)
        lam = self.lam
        if isinstance(lam, bool) or not isinstance(lam, int | float):
            raise PrivacyConfigError(f"kickstart_lambda must be a number >= 0, got {lam!r}")
        if not math.isfinite(lam) or lam < 0:
            raise PrivacyConfigError(f"kickstart_lambda must be a finite number >= 0, got {lam!r}")
        if isinstance(self.beta, bool) or not isinstance(self.beta, int | float):
            raise PrivacyConfigError(f"kickstart_beta must be in (0, 1), got {self.beta!r}")
        if not 0.0 < self.beta < 1.0:
            raise PrivacyConfigError(f"kickstart_beta must be in (0, 1), got {self.beta!r}")
        if self.loss not in KICKSTART_LOSSES:
            raise PrivacyConfigError(
                f"kickstart_loss must be one of {list(KICKSTART_LOSSES)}, got {self.loss!r}"
            )
        if self.query_rule not in QUERY_RULES:
            raise PrivacyConfigError(
                f"kickstart_query_rule must be one of {list(QUERY_RULES)}, got {self.query_rule!r}"
            )
        confidence = self.query_confidence
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise PrivacyConfigError(
                f"kickstart_query_confidence must be a number in (0, 1], got {confidence!r}"
            )
        if not 0.0 < confidence <= 1.0:
            raise PrivacyConfigError(
                f"kickstart_query_confidence must be a number in (0, 1], got {confidence!r}"
            )
        fraction = self.query_fraction
        if (
            isinstance(fraction, bool)
            or not isinstance(fraction, int | float)
            or not 0.0 < fraction <= 1.0
        ):
            raise PrivacyConfigError(
                f"kickstart_query_fraction must be a number in (0, 1], got {fraction!r}"
            )
        for name, value, low in (
            ("kickstart_answer_replay_size", self.replay_size, 0),
            ("kickstart_answer_replay_capacity", self.replay_capacity, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise PrivacyConfigError(f"{name} must be an int >= {low}, got {value!r}")
        if self.answer_target not in ANSWER_TARGETS:
            raise PrivacyConfigError(
                f"kickstart_answer_target must be one of {list(ANSWER_TARGETS)}, got "
                f"{self.answer_target!r}"
            )
        if self.answer_target == "debiased":
            eta = self.teacher_eta
            if isinstance(eta, bool) or not isinstance(eta, int | float) or not 0.0 < eta < 1.0:
                raise PrivacyConfigError(
                    "kickstart_answer_target 'debiased' needs the teacher's η (teacher_eta), a "
                    f"number in (0, 1/m), got {eta!r}"
                )

    def check_num_actions(self, num_actions: int) -> None:
        """Raise if the ``"uncertain"`` rule could never ask (threshold at or below 1/m)."""
        if self.query_rule == "uncertain" and self.query_confidence <= 1.0 / num_actions:
            raise PrivacyConfigError(
                f"kickstart_query_confidence must be above 1/m = {1.0 / num_actions:.4g} for "
                f"{num_actions} actions with kickstart_query_rule uncertain (a policy's largest "
                f"probability is never below 1/m, so no state would be asked), got "
                f"{self.query_confidence}"
            )
        if self.answer_target == "debiased":
            assert self.teacher_eta is not None
            if self.teacher_eta * num_actions >= 1.0:
                raise PrivacyConfigError(
                    f"kickstart_answer_target 'debiased' needs teacher_eta below 1/m = "
                    f"{1.0 / num_actions:.4g} for {num_actions} actions, got {self.teacher_eta}"
                )

    def check_term_can_act(self, *, num_actions: int, k: float) -> None:
        """Raise if the debiased term's threshold exceeds every distance at the teacher's k.

        With ``kickstart_answer_target: debiased`` the thresholded L2 term uses α_λ/(1 − mη);
        at or above √2, the largest L2 distance between two distributions, the term is never
        active and the student learns nothing from the teacher, silently. k is the teacher's
        first (largest) k: a vanishing k only raises α_λ.
        """
        if self.answer_target != "debiased" or self.loss != "thresholded_l2" or self.lam == 0:
            return
        assert self.teacher_eta is not None
        scale = 1.0 - num_actions * self.teacher_eta
        alpha = kickstart_threshold(k=k, beta=self.beta, lam=self.lam) / scale
        if alpha >= math.sqrt(2.0):
            raise PrivacyConfigError(
                f"kickstart_lambda {self.lam:g} with kickstart_answer_target 'debiased', "
                f"teacher_eta {self.teacher_eta:g} ({num_actions} actions) and teacher_k {k:g} "
                f"gives a threshold α_λ/(1 − mη) = {alpha:.3g}, at or above √2, the largest "
                "distance between two policies: the kickstart term would never act. Lower "
                "kickstart_lambda or teacher_eta, raise teacher_k, or use "
                "kickstart_answer_target 'argmax' (no threshold)"
            )

    @classmethod
    def from_config(cls, config: Any) -> KickstartLossSettings:
        """From the config's ``kickstart_*`` keys, else ``learner_config_dict["kickstart"]``."""
        if hasattr(config, "kickstart_coeff"):
            return cls(
                coeff=config.kickstart_coeff,
                lam=config.kickstart_lambda,
                beta=config.kickstart_beta,
                loss=config.kickstart_loss,
                query_rule=getattr(config, "kickstart_query_rule", "all"),
                query_confidence=getattr(config, "kickstart_query_confidence", 0.9),
                query_fraction=getattr(config, "kickstart_query_fraction", 1.0),
                replay_size=getattr(config, "kickstart_answer_replay_size", 0),
                replay_capacity=getattr(config, "kickstart_answer_replay_capacity", 100_000),
                answer_target=getattr(config, "kickstart_answer_target", "released"),
                teacher_eta=getattr(config, "teacher_eta", None),
            )
        values = dict((getattr(config, "learner_config_dict", None) or {}).get("kickstart", {}))
        allowed = {
            "coeff",
            "lambda",
            "beta",
            "loss",
            "query_rule",
            "query_confidence",
            "query_fraction",
            "replay_size",
            "replay_capacity",
            "answer_target",
            "teacher_eta",
        }
        unknown = sorted(set(values) - allowed)
        if unknown:
            raise PrivacyConfigError(
                f"learner_config_dict['kickstart'] has unknown keys {unknown}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )
        if "lambda" in values:
            values["lam"] = values.pop("lambda")
        return cls(**values)


def _check_coeff(coeff: Any) -> None:
    """A weight >= 0, or a schedule [[0, w0], [t1, w1], ...] of weights >= 0 (RLlib's format)."""
    what = (
        "kickstart_coeff must be a number >= 0 or a schedule [[0, weight], [env_steps, "
        "weight], ...] with weights >= 0"
    )
    if isinstance(coeff, list | tuple):
        try:
            Scheduler.validate(
                fixed_value_or_schedule=coeff,
                setting_name="kickstart_coeff",
                description="kickstart weight",
            )
        except (ValueError, TypeError, IndexError) as exc:
            raise PrivacyConfigError(f"{what}, got {coeff!r}: {exc}") from exc
        entries = list(coeff)
        if not all(isinstance(entry, list | tuple) and len(entry) == 2 for entry in entries):
            raise PrivacyConfigError(f"{what}, got {coeff!r}")
        values = [value for entry in entries for value in entry]
        steps = [entry[0] for entry in entries]
    else:
        values, steps = [coeff], [0]
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise PrivacyConfigError(f"{what}, got {coeff!r}")
        if not math.isfinite(value) or value < 0:
            raise PrivacyConfigError(f"{what}, got {coeff!r}")
    if any(later <= earlier for earlier, later in zip(steps, steps[1:], strict=False)):
        raise PrivacyConfigError(f"{what} and increasing env steps, got {coeff!r}")


if TYPE_CHECKING:
    # mypy checks the mixin against the class it is mixed into; at run time it is a plain mixin.
    from ray.rllib.core.learner.torch.torch_learner import TorchLearner as _MixinBase
else:
    _MixinBase = object


class KickstartLossMixin(_MixinBase):
    """Adds ``coeff · mean φ_λ`` to a TorchLearner's loss, from teacher answers in the batch.

    Put it before the learner class, e.g.
    ``class MyLearner(KickstartLossMixin, PPOTorchLearner)``. It appends a
    ``AddTeacherAnswersToBatch`` to the learner pipeline in ``build()``; the algorithm
    attaches the teacher with ``set_kickstart_teacher``. The connector's counts are part
    of the Learner's state (RLlib does not checkpoint learner-connector state itself).
    Discrete (Categorical) action spaces only.
    """

    #: Remembered answers (``kickstart_answer_replay_size`` > 0), created in ``build()``.
    _answer_replay: AnswerReplay | None = None

    @override(Learner)
    def build(self) -> None:
        """Builds the learner, then appends the teacher connector to its pipeline."""
        super().build()
        self.kickstart_settings = KickstartLossSettings.from_config(self.config)
        self._kickstart_connector: AddTeacherAnswersToBatch | None = None
        if self._learner_connector is not None:
            module = next(iter(self.module._rl_modules.values()))
            if not hasattr(module.action_space, "n"):
                raise PrivacyConfigError(
                    f"kickstarting needs a Discrete action space, got {module.action_space}"
                )
            self.kickstart_settings.check_num_actions(int(module.action_space.n))
            self._kickstart_connector = AddTeacherAnswersToBatch(
                module_id=next(iter(self.module._rl_modules)),
                num_actions=int(module.action_space.n),
                query_rule=self.kickstart_settings.query_rule,
                query_confidence=self.kickstart_settings.query_confidence,
                query_fraction=self.kickstart_settings.query_fraction,
                seed=self.config.seed,
            )
            self._learner_connector.append(self._kickstart_connector)
        self._kickstart_coeff = Scheduler(
            fixed_value_or_schedule=self.kickstart_settings.coeff,
            framework="torch",
            device=getattr(self, "_device", None),
        )
        self._answer_replay: AnswerReplay | None = None
        if self.kickstart_settings.replay_size > 0:
            self._answer_replay = AnswerReplay(self.kickstart_settings.replay_capacity)
            self._replay_rng = np.random.default_rng(int(self.config.seed or 0))
            if self._kickstart_connector is not None:
                self._kickstart_connector.answer_sink = self._answer_replay.add

    def set_kickstart_teacher(self, teacher: Any) -> None:
        """Attach the teacher client that the connector asks."""
        if self._kickstart_connector is None:
            raise RuntimeError("this Learner has no learner connector to ask a teacher from")
        self._kickstart_connector.set_teacher(teacher)

    def kickstart_counts(self) -> dict[str, int]:
        """The connector's query/answered/refused counts."""
        if self._kickstart_connector is None:
            return {"queries": 0, "answered": 0, "refused": 0, "skipped": 0}
        return self._kickstart_connector.get_state()

    @override(TorchLearner)
    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> Any:
        """Base loss plus the kickstart term on the samples the teacher answered."""
        import torch

        base = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        if TEACHER_POLICY not in batch:
            return base
        logits = fwd_out[Columns.ACTION_DIST_INPUTS]
        teacher = batch[TEACHER_POLICY].to(logits.dtype)
        if Columns.LOSS_MASK in batch:
            in_loss = batch[Columns.LOSS_MASK].to(logits.dtype)
        else:
            in_loss = torch.ones(logits.shape[0], dtype=logits.dtype, device=logits.device)
        answered = batch[TEACHER_MASK].to(logits.dtype) * in_loss
        num_answered, num_in_loss = answered.sum(), in_loss.sum()
        teacher, alpha = self._kickstart_targets(teacher, batch[TEACHER_K].to(logits.dtype))
        per_sample, active = self._kickstart_per_sample(logits, teacher, alpha)
        active = active * answered
        term_sum, term_count = (per_sample * answered).sum(), num_answered
        metrics = {
            ACTIVE_FRACTION_METRIC: active.sum() / torch.clamp(num_in_loss, min=1.0),
            ANSWERED_FRACTION_METRIC: num_answered / torch.clamp(num_in_loss, min=1.0),
            ALPHA_LAMBDA_METRIC: (alpha * answered).sum() / torch.clamp(num_answered, min=1.0),
        }
        if self._answer_replay is not None:
            metrics[REMEMBERED_METRIC] = float(len(self._answer_replay))
            if len(self._answer_replay):
                replay_sum, replay_count = self._replayed_term(module_id, logits)
                term_sum, term_count = term_sum + replay_sum, term_count + replay_count
        term = term_sum / torch.clamp(term_count, min=1.0)
        self.metrics.log_dict({LOSS_METRIC: term, **metrics}, key=module_id, window=1)
        # The weight, or its schedule's value at the env steps sampled so far.
        return base + self._kickstart_coeff.get_current_value() * term

    @override(Learner)
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """Moves the kickstart weight along its schedule (after RLlib's own updates)."""
        super().after_gradient_based_update(timesteps=timesteps)
        weight = self._kickstart_coeff.update(
            timestep=timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)
        )
        for module_id in self.module._rl_modules:
            self.metrics.log_value((module_id, COEFF_METRIC), float(weight), window=1)

    def _kickstart_targets(self, policies: Any, k: Any) -> tuple[Any, Any]:
        """(the term's target per row, α_λ per row): debiased or argmax where settings say so."""
        import torch

        settings = self.kickstart_settings
        if settings.answer_target == "argmax":
            return argmax_answers(policies, k), torch.zeros_like(k)
        alpha = kickstart_alpha(k, settings)
        if settings.answer_target != "debiased":
            return policies, alpha
        assert settings.teacher_eta is not None
        targets = debiased_answers(policies, k, eta=settings.teacher_eta)
        # Lemma 1's radius bounds ‖x − π̃‖; the debiased target is (x − η)/(1 − mη). (k = ∞:
        # α_λ is 0 either way.)
        return targets, alpha / (1.0 - policies.shape[-1] * settings.teacher_eta)

    def _kickstart_per_sample(self, logits: Any, teacher: Any, alpha: Any) -> tuple[Any, Any]:
        """(φ_λ or the cross-entropy per sample, 1 where the term is active)."""
        import torch

        if self.kickstart_settings.loss == "thresholded_l2":
            distance = torch.linalg.vector_norm(torch.softmax(logits, dim=-1) - teacher, dim=-1)
            active = (distance > alpha).to(logits.dtype)
            return distance * active, active
        per_sample = -(teacher * torch.log_softmax(logits, dim=-1)).sum(dim=-1)
        return per_sample, torch.ones_like(per_sample)

    def _replayed_term(self, module_id: str, like: Any) -> tuple[Any, Any]:
        """Sum and count of the term over a uniform draw of remembered answers."""
        import torch

        assert self._answer_replay is not None
        observations, policies, k = self._answer_replay.sample(
            self.kickstart_settings.replay_size, self._replay_rng
        )
        device, dtype = like.device, like.dtype
        logits = self.module[module_id].forward_train(
            {Columns.OBS: torch.from_numpy(observations).to(device)}
        )[Columns.ACTION_DIST_INPUTS]
        targets, alpha = self._kickstart_targets(
            torch.from_numpy(policies).to(device, dtype), torch.from_numpy(k).to(device, dtype)
        )
        per_sample, _ = self._kickstart_per_sample(logits, targets, alpha)
        return per_sample.sum(), torch.tensor(float(len(k)), device=device, dtype=dtype)

    @override(Learner)
    def get_state(self, components: Any = None, *, not_components: Any = None, **kwargs: Any):
        """RLlib's learner state plus the teacher connector's counts."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self._kickstart_connector is not None:
            state[_CONNECTOR_STATE] = self._kickstart_connector.get_state()
        if self._answer_replay is not None and self._check_component(
            _REPLAY_STATE, components, not_components
        ):  # not in the weights-only states of every weight sync
            state[_REPLAY_STATE] = self._answer_replay.state_dict()
        return state

    @override(Learner)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores RLlib's learner state and the teacher connector's counts."""
        super().set_state(state)
        if self._kickstart_connector is not None and _CONNECTOR_STATE in state:
            self._kickstart_connector.set_state(state[_CONNECTOR_STATE])
        if self._answer_replay is not None and _REPLAY_STATE in state:
            self._answer_replay.load_state_dict(state[_REPLAY_STATE])


def debiased_answers(policies: Any, k: Any, *, eta: float) -> Any:
    """The teacher's policy estimated from Dirichlet answers: (x − η)/(1 − mη), clipped.

    A release x ~ Dir(k·π̃) of the restricted policy π̃ = (1 − mη)·π + η has E[x] = π̃, so
    (x − η)/(1 − mη) is an unbiased estimate of π. Rows leave the simplex where the noise is
    large; they are clipped at 0 and renormalized, which biases them towards less confident
    policies but keeps the term bounded. Rows with k = ∞ (no mechanism: the raw policy) and
    unanswered rows (k = 0) are returned unchanged. Post-processing: no privacy cost.

    Args:
        policies: (N, m) tensor of released answers.
        k: (N,) tensor of the k each answer was drawn with.
        eta: The teacher's η in (0, 1/m).

    Returns:
        (N, m) tensor of targets (rows sum to 1).

    """
    import torch

    scale = 1.0 - policies.shape[-1] * eta
    estimate = torch.clamp((policies - eta) / scale, min=0.0)
    total = estimate.sum(dim=-1, keepdim=True)
    # A row whose estimate is all zeros cannot occur (the entries sum to 1 before clipping).
    estimate = estimate / torch.clamp(total, min=torch.finfo(policies.dtype).tiny)
    released = torch.isfinite(k) & (k > 0)
    return torch.where(released.unsqueeze(-1), estimate, policies)


def kickstart_alpha(k: Any, settings: KickstartLossSettings) -> Any:
    """α_λ = λ·sqrt(ln(1/β)/(2(k+1))) elementwise on a tensor of k (k = ∞ gives 0)."""
    import torch

    radius = torch.sqrt(math.log(1.0 / settings.beta) / (2.0 * (k + 1.0)))
    return settings.lam * radius


def argmax_answers(policies: Any, k: Any) -> Any:
    """The one-hot action of each answer's largest entry (a noisy label of the teacher's action).

    Unanswered rows (k = 0) are returned unchanged. Post-processing: no privacy cost.

    Args:
        policies: (N, m) tensor of released answers.
        k: (N,) tensor of the k each answer was drawn with.

    Returns:
        (N, m) tensor of targets (one-hot rows where answered).

    """
    import torch

    labels = torch.nn.functional.one_hot(policies.argmax(dim=-1), policies.shape[-1])
    return torch.where((k > 0).unsqueeze(-1), labels.to(policies.dtype), policies)
