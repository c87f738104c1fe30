"""LDPA3C: A3C whose local agents send only locally private gradients.

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
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_LEN_MEAN,
    EPISODE_RETURN_MEAN,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES_LIFETIME,
)

from rllib_privacy.accounting import LDPLedger, PrivacyJournalError
from rllib_privacy.accounting.events import LDPReport, PrivacyEvent, ShuffledBatch
from rllib_privacy.accounting.journal import ReplayJournal
from rllib_privacy.algorithms.ldp_a3c.anonymous import AnonymousBatch, AnonymousReport
from rllib_privacy.algorithms.ldp_a3c.fleet import evaluation_gravities, greedy_evaluation
from rllib_privacy.algorithms.ldp_a3c.gradient_aggregator import GradientBuffer
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_config import LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import exploration_alpha
from rllib_privacy.algorithms.ldp_a3c.score_tracker import ScoreTracker
from rllib_privacy.algorithms.ldp_a3c.shuffled_aggregator import (
    ShuffledAggregatorMixin,
    central_ledger,
    hypothetical_central_metrics,
)
from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission
from rllib_privacy.algorithms.ldp_a3c.validation import (
    check_report,
    configured_score_mechanism,
    rejected_charges,
)
from rllib_privacy.envs import CARTPOLE_GRAVITY_ENV_ID
from rllib_privacy.envs.cartpole_gravity import (
    PAPER_GRAVITY_CHOICES,
    validate_positive_choices,
)
from rllib_privacy.utils import metrics as keys
from rllib_privacy.utils.journaling import RestartGuard, algorithm_journal_path

_REQUEST_TAG = "ldp_submit"
#: Component name of LDPA3C's privacy journal (``<journal dir>/ldp_a3c.jsonl``).
JOURNAL_COMPONENT = "ldp_a3c"

logger = logging.getLogger(__name__)

#: Result keys copied to the top level (Tune's table shows the first four).
HEADLINE_KEYS = ("score_mean", "epsilon_per_agent", "submissions", "submissions_per_second")


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


def _report(submission: GradientSubmission) -> LDPReport:
    """The privacy event of a submission: its agent's ε-LDP report."""
    return LDPReport(
        agent_id=submission.agent_id, epsilon=submission.epsilon, mechanism=submission.mechanism
    )


def _journal_extras(submission: GradientSubmission) -> dict[str, Any]:
    """What the journal keeps of a submission besides its report: public scalars."""
    return {
        "id": submission.submission_id,
        "agent_sequence": submission.agent_sequence,
        "score": submission.score,
        "score_mechanism": submission.score_mechanism,
        "env_steps": submission.env_steps,
        "weights_version": submission.weights_version,
    }


def _releases(submission: GradientSubmission) -> list[tuple[LDPReport, dict[str, Any]]]:
    """A submission's releases with their journal extras: its gradient, and its score if private.

    A private score is a release of its own (``score_epsilon``, its mechanism's name): the
    ledger and the journal count both, so an agent's ε covers everything it sends.
    """
    releases = [(_report(submission), _journal_extras(submission))]
    if submission.score_is_private:
        score = LDPReport(
            agent_id=submission.agent_id,
            epsilon=submission.score_epsilon,
            mechanism=submission.score_mechanism,
        )
        releases.append((score, {"id": f"{submission.submission_id}/score", "release": "score"}))
    return releases


class LDPA3C(ShuffledAggregatorMixin, Algorithm):
    """LDPA3C: the aggregator side (training_step) of Ono & Takahashi's PGC-A3C (Alg. 1).

    With ``shuffler_enabled`` the reports reach it through the shuffler
    (``ShuffledAggregatorMixin``): anonymous batches, a central (ε, δ) in its ledger.
    """

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
        self._buffer = GradientBuffer(
            config.effective_max_buffer,
            self._weights.size,
            robust=config.aggregator_robust,
            std_bound=config.get_gradient_mechanism().output_std_bound(self._weights.size),
        )
        if config.shuffler_enabled:
            # The per-agent ledger lives with the ids, in the shuffler; this one records
            # each anonymous batch's central (ε, δ).
            self._ledger = central_ledger(config)
        else:
            # Each local agent may spend at most ε in total; the ledger refuses more.
            self._ledger = LDPLedger(
                epsilon_budget_per_agent=config.effective_epsilon if config.is_private else math.inf
            )
        self._scores = ScoreTracker.for_config(config)
        self._mechanism = config.get_gradient_mechanism()
        # Fault accounting (see docs/privacy-journal.md).
        self._applied = 0  # gradients that went into the buffer in this θ's history
        self._duplicates = 0
        # Reports refused by _validate (docs/components/ldp-a3c.md#untrusted-agents).
        self._rejected = 0
        self._score_check = configured_score_mechanism(config)
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
        # A trial that crashed before its first checkpoint restarts from scratch in the same
        # trial dir: its releases are in the journal, its updates are lost.
        replayed = self._journal.replay_all(self)
        self._restart_guard = RestartGuard(
            component=JOURNAL_COMPONENT,
            journal=self._journal.path,
            journal_had_releases=replayed > 0,
        )
        if replayed:
            logger.warning(
                "LDPA3C: replayed %d releases from the privacy journal %s (their updates "
                "were lost with the crash; the spent budget is kept)",
                self._replayed,
                self._journal.path,
            )
        if config.shuffler_enabled:
            self._start_shuffler(_REQUEST_TAG)

    # The JournaledComponent protocol (rllib_privacy.accounting.journal):

    def journal_snapshot(self) -> dict[str, Any]:
        """The totals a journal snapshot holds (ledger, scores, replayed count)."""
        return {
            "ledger": self._ledger.state_dict(),
            "scores": self._scores.state_dict(),
            "releases_replayed": self._replayed,
        }

    def load_journal_snapshot(self, state: Mapping[str, Any]) -> None:
        """Reset the ledger, the scores and the replayed count to a ``journal_snapshot()``."""
        self._ledger.load_state_dict(state["ledger"])
        self._scores.load_state_dict(state["scores"])
        self._replayed = int(state["releases_replayed"])

    def apply_journal_update(self, fields: Mapping[str, Any]) -> None:
        """The aggregator journals no updates: a record of one is not this journal's."""
        raise PrivacyJournalError(
            f"privacy journal {str(self._journal.path)!r} holds an update {dict(fields)!r}, "
            "which LDPA3C never writes; was it written by another program?"
        )

    def count_replayed_release(self, event: PrivacyEvent, extras: Mapping[str, Any]) -> None:
        """Add a replayed submission's score (never its gradient: θ rolled back with it)."""
        self._replayed += 1
        if isinstance(event, ShuffledBatch):
            self._count_replayed_batch(extras)
            return
        if extras.get("rejected"):
            # A refused report was charged, never scored or applied.
            self._rejected += 1
            return
        if "score" in extras:  # a submission's score release is scored with its gradient's
            self._scores.add_release(
                float(extras["score"]),
                int(extras["env_steps"]),
                str(extras.get("score_mechanism", "public")),  # absent before private scores
            )

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
        self._restart_guard.check(self)
        start, start_submissions = time.perf_counter(), self._scores.submissions
        target = start_submissions + self.config.aggregator_submissions_per_iteration
        group = self.env_runner_group
        if self.config.shuffler_enabled:
            self._shuffled_collect(target)
        elif group.num_remote_env_runners() == 0:
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

    def _receive(self, submissions: list[GradientSubmission] | list[AnonymousBatch]) -> None:
        """Everything the aggregator receives passes here (a test hooks it).

        Behind the shuffler only ``AnonymousBatch`` objects are accepted (TypeError
        otherwise); without it, ``GradientSubmission`` objects.
        """
        if self.config.shuffler_enabled:
            self._receive_batches(submissions)  # type: ignore[arg-type]  # checked there
            return
        self._receive_submissions(submissions)  # type: ignore[arg-type]  # checked there

    def _receive_submissions(self, submissions: list[GradientSubmission]) -> None:
        fresh: list[GradientSubmission] = []
        pending: dict[str, int] = {}
        pending_epsilon: dict[str, float] = {}
        for submission in submissions:
            if not isinstance(submission, GradientSubmission):
                raise TypeError(
                    f"aggregator accepts only GradientSubmission objects, got {type(submission)}"
                )
            if self._validate(submission) is not None:
                continue
            agent = submission.agent_id
            recorded = self._ledger.releases_of(agent, submission.mechanism) + pending.get(agent, 0)
            # An agent numbers its submissions 1, 2, ... in order, so a number that is not
            # above the count already recorded was delivered before.
            if submission.agent_sequence <= recorded:
                self._duplicates += 1
                continue
            # Checked before anything is journaled or applied; earlier releases of the same
            # agent in this batch count too.
            pending_epsilon[agent] = pending_epsilon.get(agent, 0.0) + submission.total_epsilon
            pending_report = LDPReport(
                agent_id=agent, epsilon=pending_epsilon[agent], mechanism=submission.mechanism
            )
            if not self._ledger.can_afford(pending_report):
                # Refused, not raised: an agent that sends past its budget (a bug or a
                # malicious agent) must not be able to stop the trial. Nothing is journaled
                # or charged: the ledger already holds the whole budget of this agent.
                pending_epsilon[agent] -= submission.total_epsilon
                self._count_refused(
                    f"agent {agent!r} has spent epsilon={self._ledger.epsilon_spent(agent)!r} "
                    f"of its budget {self._ledger.epsilon_budget_per_agent!r}; submission "
                    f"{submission.submission_id!r} of epsilon={submission.total_epsilon!r} "
                    "would exceed it (refused, not applied)"
                )
                continue
            pending[agent] = pending.get(agent, 0) + 1
            fresh.append(submission)
        # Write-ahead: the releases are durable before any of them touches θ, so a crash
        # from here on can only over-count the budget, never forget it.
        self._journal.extend_releases(r for s in fresh for r in _releases(s))
        for submission in fresh:
            for report, _ in _releases(submission):
                self._ledger.record(report)
            self._apply_report(submission)

    def _apply_report(self, report: GradientSubmission | AnonymousReport) -> None:
        """The one place a recorded report is scored and its gradient enters θ (via B)."""
        self._scores.add_release(report.score, report.env_steps, report.score_mechanism)
        self._applied += 1
        mean_gradient = self._buffer.add(report.gradient)
        if mean_gradient is not None:
            self._weights = self._on_learner(
                _apply_mean_gradient,
                mean_gradient=mean_gradient,
                env_steps=self._scores.env_steps,
            )
            self._weights_version += 1

    def _count_refused(self, reason: str) -> None:
        """Count a refused report (``ldp/rejected_submissions``) and log it, rate-limited."""
        self._rejected += 1
        # The first ten, then one in a thousand: a flood of bad reports must not flood the log.
        if self._rejected <= 10 or self._rejected % 1000 == 0:
            logger.warning("LDPA3C: refused report #%d: %s", self._rejected, reason)

    def _validate(self, submission: Any) -> str | None:
        """Why ``submission`` is refused, or None: the check before a report is applied.

        ``submission`` is a ``GradientSubmission``, or a report without ids behind the
        shuffler (never charged here: the shuffler keeps the per-agent ledger).

        A refused report is counted (``ldp/rejected_submissions``), logged and never
        applied or scored; it is charged as an honest release would be (``rejected_charges``:
        it left the device), journaled first and marked ``rejected``.
        See docs/components/ldp-a3c.md#untrusted-agents.
        """
        reason = check_report(
            submission,
            mechanism=self._mechanism,
            dim=self._weights.size,
            max_weights_version=self._weights_version,
            score_mechanism=self._score_check,
        )
        if reason is None:
            return None
        self._count_refused(reason)
        charges = rejected_charges(
            submission,
            mechanism=self._mechanism,
            score_mechanism=self._score_check,
            ledger=self._ledger,
        )
        if charges:
            sender = f"{submission.agent_id}#{submission.agent_sequence}"
            extras = {"id": sender, "rejected": reason}
            self._journal.extend_releases((event, extras) for event in charges)
            for event in charges:
                self._ledger.record(event)
        return reason

    def _local_totals(self) -> tuple[float, int, int]:
        """(largest ε any agent spent, releases, duplicates): the shuffler keeps them when on."""
        if not self.config.shuffler_enabled:
            return self._ledger.max_epsilon_spent, self._ledger.releases, self._duplicates
        stats = self._refresh_shuffler_stats()
        return stats["max_epsilon_spent"], int(stats["releases"]), int(stats["duplicates"])

    def _log_metrics(self, *, submissions_per_second: float) -> None:
        scores = self._scores
        local_epsilon, releases, duplicates = self._local_totals()
        alpha_n = exploration_alpha(
            scores.submissions,
            initial=self.config.agents_exploration_alpha,
            zero_at=self.config.agents_exploration_alpha_zero_at,
        )
        # The mean of the solved criterion's window (debiased when the scores are private).
        recent = scores.score_mean
        values = {
            "score_mean": recent,
            "submissions_per_second": submissions_per_second,
            "score_moving_mean": scores.moving_mean,
            "epsilon_per_agent": local_epsilon,
            "submissions": scores.submissions,
            keys.LDP_SUBMISSIONS: scores.submissions,
            keys.LDP_SCORE_MEAN: recent,
            keys.LDP_SCORE_WINDOW: scores.solved_window,
            keys.LDP_SCORE_PRIVATE: float(scores.mechanism is not None),
            keys.LDP_SCORE_MOVING_MEAN: scores.moving_mean,
            keys.LDP_EPSILON_PER_AGENT: local_epsilon,
            keys.LDP_NOISE_SCALE: self._mechanism.noise_scale(self._weights.size),
            keys.LDP_BUFFER_SIZE: len(self._buffer),
            # Each update makes a new θ version.
            keys.LDP_UPDATES: self._weights_version,
            keys.LDP_SUBMISSIONS_PER_SECOND: submissions_per_second,
            keys.LDP_EXPLORATION_ALPHA: alpha_n,
            # Always present (0/1) so that Tune can stop on it; `fst` itself only
            # exists once reached.
            keys.LDP_FST_REACHED: float(scores.fst is not None),
            # The local guarantee (each agent against everyone, the shuffler included).
            keys.PRIVACY_EPSILON_SPENT: local_epsilon,
            keys.PRIVACY_DELTA_SPENT: 0.0,
            keys.PRIVACY_RELEASES: releases,
            keys.PRIVACY_RELEASES_REPLAYED: self._replayed,
            keys.LDP_APPLIED_SUBMISSIONS: self._applied,
            # Recorded releases whose gradient is not in this θ's history (a rollback).
            keys.LDP_SUBMISSIONS_DROPPED: max(0, scores.submissions - self._applied),
            keys.LDP_DUPLICATE_SUBMISSIONS: duplicates,
            keys.LDP_REJECTED_SUBMISSIONS: self._rejected,
            keys.LDP_FILTERED_SUBMISSIONS: self._buffer.filtered,
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
        if scores.solved_score is not None:
            values[keys.LDP_SOLVED_SCORE] = scores.solved_score
        values.update(self._evaluation_metrics())
        if self.config.shuffler_enabled:
            values.update(self._central_metrics())
        else:
            # Only what a shuffler WOULD give: no central ε is achieved without one.
            values.update(hypothetical_central_metrics(self.config))
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
            "rejected": self._rejected,
            "lost_requests": self._lost_requests,
            "releases_replayed": self._replayed,
        }
        if self._shuffler is not None:
            # The shuffler's whole state (its per-agent ledger too): see docs/components/
            # ldp-a3c.md#shuffler on where such a checkpoint may be stored.
            state["ldp_a3c_shuffler"] = self._shuffler_state()
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
        shuffler = state.get("ldp_a3c_shuffler")
        if aggregator is not None:
            self._ledger.load_state_dict(aggregator["ledger"])
            self._buffer.load_state_dict(aggregator["buffer"])
            self._scores.load_state_dict(aggregator["scores"])
            self._weights_version = int(aggregator["weights_version"])
            # Checkpoints written before the journal existed lack these entries.
            self._applied = int(aggregator.get("applied", self._scores.submissions))
            self._duplicates = int(aggregator.get("duplicates", 0))
            self._rejected = int(aggregator.get("rejected", 0))
            self._lost_requests_restored = int(aggregator.get("lost_requests", 0))
            # Requests in flight now are not lost yet: count from here.
            self._requests_sent, self._requests_answered = self._in_flight(), 0
            self._replayed = int(aggregator.get("releases_replayed", 0))
            if shuffler is not None:
                self._last_batch_seq = int(shuffler["last_batch_seq"])
            self._journal.after_restore(aggregator.get("journal"), self)
            self._restart_guard.restored()
        if self._shuffler is not None:
            self._restore_shuffler(shuffler)
        self._weights = self._on_learner(_flat_weights)

    @override(Algorithm)
    def cleanup(self) -> None:
        """Stops RLlib's actors and the shuffler, and closes the privacy journal."""
        super().cleanup()
        self._stop_shuffler()
        journal = getattr(self, "_journal", None)
        if journal is not None:
            journal.close()
