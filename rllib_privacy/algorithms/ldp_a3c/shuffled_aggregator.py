"""LDPA3C's aggregator behind the shuffler: anonymous batches in, a central (ε, δ) recorded.

With ``shuffler_enabled`` the local agents send their reports to the shuffler actor
(``shuffler.Shuffler``), which keeps the per-agent ledger; the aggregator only pulls
``AnonymousBatch`` objects and records one
[ShuffledBatch][rllib_privacy.accounting.events.ShuffledBatch] event per batch in its
[ShuffleLedger][rllib_privacy.accounting.shuffle_ledger.ShuffleLedger], journaled before the
batch is applied. ``ShuffledAggregatorMixin`` holds that path; ``LDPA3C`` mixes it in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import ray

from rllib_privacy.accounting.events import ShuffledBatch
from rllib_privacy.accounting.journal import ReplayJournal
from rllib_privacy.accounting.shuffle import shuffled_rounds_epsilon
from rllib_privacy.accounting.shuffle_ledger import ShuffleLedger
from rllib_privacy.algorithms.ldp_a3c.anonymous import AnonymousBatch
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_config import LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.score_tracker import ScoreTracker
from rllib_privacy.algorithms.ldp_a3c.shuffler import (
    SHUFFLER_JOURNAL_COMPONENT,
    start_shuffler,
    submit_through_shuffler,
)
from rllib_privacy.errors import BudgetExhaustedError
from rllib_privacy.utils import metrics as keys
from rllib_privacy.utils.journaling import algorithm_journal_path

__all__ = ["ShuffledAggregatorMixin", "central_ledger", "hypothetical_central_metrics"]


def central_ledger(config: LDPA3CConfig) -> ShuffleLedger:
    """The aggregator's ledger behind the shuffler: T rounds, the target as its budget."""
    target = config.privacy_central_epsilon
    return ShuffleLedger(
        rounds=config.agents_submissions_per_agent,
        delta=float(config.privacy_shuffle_delta),
        epsilon_budget=math.inf if target is None else float(target),
    )


def hypothetical_central_metrics(config: LDPA3CConfig) -> dict[str, float]:
    """Without the shuffler: the central (ε, δ) a shuffler WOULD give; not achieved.

    ``privacy/epsilon_central_if_shuffled``: each agent's T reports of ε₀ in T batches of
    |B| (``shuffled_rounds_epsilon``); absent when non-private.
    """
    if not config.is_private:
        return {}
    delta = float(config.privacy_shuffle_delta)
    epsilon = shuffled_rounds_epsilon(
        config.local_epsilon_per_report,
        config.effective_max_buffer,
        delta,
        rounds=config.agents_submissions_per_agent,
    )
    return {
        keys.PRIVACY_EPSILON_CENTRAL_IF_SHUFFLED: epsilon,
        keys.PRIVACY_DELTA_CENTRAL_IF_SHUFFLED: delta,
        keys.PRIVACY_EPSILON_PER_REPORT: config.local_epsilon_per_report,
    }


class ShuffledAggregatorMixin:
    """The aggregator's side of the shuffler (mixed into ``LDPA3C``).

    Expects the host to set ``_scores``, ``_journal``, ``_ledger``, ``_requests_sent`` and
    ``_requests_answered``, and to define ``_receive`` (everything received passes there;
    it calls ``_receive_batches`` behind the shuffler), ``_validate`` (the check a report
    passes first), ``_apply_report`` (the one place where a report's gradient goes into θ)
    and ``_request_kwargs``.
    """

    config: LDPA3CConfig
    env_runner_group: Any
    env_runner: Any
    _scores: ScoreTracker
    _journal: ReplayJournal
    _ledger: Any
    _requests_sent: int
    _requests_answered: int
    _shuffler: Any = None
    _last_batch_seq: int = 0
    _shuffler_stats: dict[str, float] | None = None

    def _apply_report(self, report: Any) -> None:
        raise NotImplementedError

    def _validate(self, report: Any) -> str | None:
        raise NotImplementedError

    def _request_kwargs(self) -> dict[str, Any]:
        raise NotImplementedError

    def _receive(self, submissions: list[Any]) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ lifecycle

    def _start_shuffler(self, request_tag: str) -> None:
        """Start the shuffler actor, journaling in the trial's journal folder."""
        config = self.config
        journal = algorithm_journal_path(
            self, config.privacy_journal_dir, component=SHUFFLER_JOURNAL_COMPONENT
        )
        self._shuffler_tag = request_tag
        self._shuffler = start_shuffler(
            batch_size=config.effective_max_buffer,
            epsilon_budget_per_agent=config.effective_epsilon if config.is_private else math.inf,
            journal_path=str(journal),
            num_cpus=float(config.shuffler_num_cpus),
            resources=config.shuffler_resources,
        )
        self._last_batch_seq = 0
        # Fails here (not in the first training step) if the actor cannot start.
        ray.get(self._shuffler.ping.remote())

    def _stop_shuffler(self) -> None:
        if self._shuffler is not None:
            ray.kill(self._shuffler, no_restart=True)
            self._shuffler = None

    # ------------------------------------------------------------------ collecting

    def _shuffled_collect(self, target: int) -> None:
        """Collect until ``target`` submissions are applied: agents -> shuffler -> here."""
        group = self.env_runner_group
        # A restarted shuffler may hold batches formed before its crash.
        self._pull_batches()
        if group.num_remote_env_runners() == 0:
            # EnvRunner in this process (tests): the agents run here, so this path shows
            # the types, not the trust separation; use remote EnvRunners for that.
            while self._scores.submissions < target:
                submissions = self.env_runner.submit_gradients(**self._request_kwargs())
                receipt = ray.get(self._shuffler.submit.remote(submissions))
                if receipt["ready_batches"]:
                    self._pull_batches()
            return
        while self._scores.submissions < target:
            if group.num_healthy_remote_workers() == 0:
                break
            # Each EnvRunner hands its agents' reports to the shuffler itself; only the
            # receipt (counts, no ids) comes back here.
            self._requests_sent += group.foreach_env_runner_async(
                submit_through_shuffler,
                tag=self._shuffler_tag,
                kwargs={"shuffler": self._shuffler, "request": self._request_kwargs()},
            )
            ready = False
            for _, receipt in group.fetch_ready_async_reqs(
                tags=self._shuffler_tag, timeout_seconds=0.002
            ):
                self._requests_answered += 1
                ready |= receipt["ready_batches"] > 0
            if ready:
                self._pull_batches()

    def _pull_batches(self) -> None:
        """Acknowledge the batches applied so far and receive the shuffler's new ones."""
        batches = ray.get(self._shuffler.pull.remote(self._last_batch_seq))
        if batches:
            self._receive(batches)

    def _receive_batches(self, batches: Sequence[AnonymousBatch]) -> None:
        """Record, journal (write-ahead) and apply anonymous batches, each once.

        Raises:
            TypeError: If an item is not an ``AnonymousBatch`` (this path never takes
                anything that carries an id).
            BudgetExhaustedError: If a batch would take the central (ε, δ) past
                ``privacy_central_epsilon``.

        """
        for batch in batches:
            if not isinstance(batch, AnonymousBatch):
                raise TypeError(
                    "the aggregator behind the shuffler accepts only AnonymousBatch objects, "
                    f"got {type(batch).__name__}"
                )
        for batch in sorted(batches, key=lambda b: b.batch_seq):
            if batch.batch_seq <= self._last_batch_seq:
                continue  # offered again by a restarted shuffler: applied before
            event = ShuffledBatch(epsilon0=batch.epsilon0, num_reports=len(batch))
            if not self._ledger.can_afford(event):
                raise BudgetExhaustedError(
                    f"shuffled batch {batch.batch_seq} of {len(batch)} reports at epsilon0="
                    f"{batch.epsilon0!r} refused (not applied): the central (epsilon, delta) "
                    f"{self._ledger.spent!r} would pass the budget {self._ledger.budget!r} "
                    "(privacy_central_epsilon at privacy_shuffle_delta)"
                )
            # Write-ahead: the batch's release is durable before any report touches θ.
            self._journal.append_release(
                event,
                batch_seq=batch.batch_seq,
                scores=[float(r.score) for r in batch],
                env_steps=[int(r.env_steps) for r in batch],
                score_mechanisms=[str(r.score_mechanism) for r in batch],
            )
            self._ledger.record(event)
            self._last_batch_seq = batch.batch_seq
            for report in batch:
                # docs/components/ldp-a3c.md#untrusted-agents: a report outside its
                # mechanism's output set is counted and never applied.
                if self._validate(report) is None:
                    self._apply_report(report)

    def _count_replayed_batch(self, extras: Mapping[str, Any]) -> None:
        """A journaled batch (its update rolled back): its scores count, its number is used."""
        mechanisms = extras["score_mechanisms"]
        for score, steps, mechanism in zip(
            extras["scores"], extras["env_steps"], mechanisms, strict=True
        ):
            self._scores.add_release(float(score), int(steps), str(mechanism))
        self._last_batch_seq = max(self._last_batch_seq, int(extras["batch_seq"]))

    # ------------------------------------------------------------------ reporting

    def _refresh_shuffler_stats(self) -> dict[str, float]:
        self._shuffler_stats = ray.get(self._shuffler.stats.remote())
        return self._shuffler_stats

    def _central_metrics(self) -> dict[str, float]:
        """The guarantee of this run: central (ε, δ) per agent and the shuffler's totals."""
        epsilon, delta = self._ledger.spent
        stats = self._shuffler_stats or self._refresh_shuffler_stats()
        values: dict[str, float] = {
            keys.PRIVACY_EPSILON_CENTRAL: epsilon,
            keys.PRIVACY_DELTA_CENTRAL: delta,
            keys.PRIVACY_SHUFFLED_BATCHES: self._ledger.releases,
            keys.SHUFFLER_PENDING: stats["pending"],
            keys.SHUFFLER_REFUSED_OVER_BUDGET: stats["refused_over_budget"],
            keys.SHUFFLER_RELEASES_REPLAYED: stats["releases_replayed"],
        }
        if self.config.is_private:
            values[keys.PRIVACY_EPSILON_PER_REPORT] = self.config.local_epsilon_per_report
        return values

    # ------------------------------------------------------------------ checkpoints

    def _shuffler_state(self) -> dict[str, Any]:
        return {
            "state": ray.get(self._shuffler.get_state.remote()),
            "last_batch_seq": self._last_batch_seq,
        }

    def _restore_shuffler(self, state: Mapping[str, Any] | None) -> None:
        """Restore the shuffler's whole state (it then replays its journal's newer records)."""
        if state is None:
            return
        self._last_batch_seq = max(self._last_batch_seq, int(state["last_batch_seq"]))
        ray.get(self._shuffler.set_state.remote(state["state"]))
