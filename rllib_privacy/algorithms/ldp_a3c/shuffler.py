"""The shuffler of LDPA3C: its own trust domain between the local agents and the aggregator.

The shuffle model (Bittau et al., "Prochlo", SOSP 2017; Erlingsson et al., "Amplification
by Shuffling", SODA 2019): the local agents send their ε₀-LDP reports to a shuffler, which

* keeps the per-agent accounting (the ids are here, and only here): it rejects a report it
  has seen (``agent_sequence`` not above the agent's recorded count: a resend), refuses one
  that would take its agent past ``epsilon_budget_per_agent`` (an
  [LDPLedger][rllib_privacy.accounting.ldp_ledger.LDPLedger]), and puts at most one report
  of an agent in a batch (a second one waits for the next batch);
* strips the identifying fields (``anonymous.anonymize``) and the arrival order: each batch
  of ``batch_size`` = |B| reports leaves in a uniformly random order drawn from OS entropy
  (``random.SystemRandom``, never the trial's seed);
* journals write-ahead (``accounting.journal.ReplayJournal``, component
  ``ldp_a3c_shuffler``): every accepted release before it is acknowledged to the agent,
  every formed batch (its members in their shuffled order) before it can leave, and every
  batch the aggregator acknowledged. A restarted shuffler replays the journal: nothing it
  accepted is lost, nothing is counted twice, and an unacknowledged batch is offered again
  under the same number and order (the aggregator skips a number it has applied).

The aggregator receives only ``anonymous.AnonymousBatch`` objects (``pull``), so by Feldman,
McMillan & Talwar (FOCS 2021) its view of each agent is (ε_b, δ)-DP per batch
(``accounting.shuffle_ledger.ShuffleLedger``). ``Shuffler`` is plain Python; LDPA3C runs it
as a Ray actor in its own process (``start_shuffler``), restarted by Ray if it dies.
"""

from __future__ import annotations

import collections
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from rllib_privacy.accounting import LDPLedger, PrivacyJournalError
from rllib_privacy.accounting.events import LDPReport, PrivacyEvent
from rllib_privacy.accounting.journal import ReplayJournal
from rllib_privacy.algorithms.ldp_a3c.anonymous import AnonymousBatch, AnonymousReport, anonymize
from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission

__all__ = ["SHUFFLER_JOURNAL_COMPONENT", "Shuffler", "start_shuffler", "submit_through_shuffler"]

#: Component name of the shuffler's privacy journal (``<journal dir>/ldp_a3c_shuffler.jsonl``).
SHUFFLER_JOURNAL_COMPONENT = "ldp_a3c_shuffler"

_FORMED = "formed"
_ACKED = "acked"


class _Pending:
    """An accepted report waiting for its batch (the shuffler's own bookkeeping)."""

    __slots__ = ("agent_id", "epsilon0", "report", "submission_id")

    def __init__(
        self, agent_id: str, submission_id: str, epsilon0: float, report: AnonymousReport
    ) -> None:
        self.agent_id = agent_id
        self.submission_id = submission_id
        self.epsilon0 = epsilon0
        self.report = report

    def to_json(self) -> list[Any]:
        return [self.agent_id, self.submission_id, self.epsilon0, self.report.to_json()]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> _Pending:
        agent_id, submission_id, epsilon0, report = data
        report = AnonymousReport.from_json(report)
        return cls(str(agent_id), str(submission_id), float(epsilon0), report)


class Shuffler:
    """Per-agent accounting, dedup and anonymous, OS-entropy-shuffled batches of |B| reports.

    Args:
        batch_size: |B|, the reports of distinct agents in every batch it forwards.
        epsilon_budget_per_agent: The most total ε one agent may spend (``math.inf``: no
            limit, the non-private baseline).
        journal_path: Its write-ahead journal file (created if missing, replayed if not).

    Raises:
        ValueError: If ``batch_size`` is not an int >= 1.
        PrivacyJournalError: If the journal is corrupt or another component's.

    """

    def __init__(
        self, *, batch_size: int, epsilon_budget_per_agent: float, journal_path: str
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        self.batch_size = batch_size
        self._ledger = LDPLedger(epsilon_budget_per_agent=epsilon_budget_per_agent)
        # OS entropy for every permutation: a seed anyone knows would undo the shuffle.
        self._rng = random.SystemRandom()
        self._pending: list[_Pending] = []  # accepted, in arrival order
        self._pending_agents: collections.Counter[str] = collections.Counter()
        self._outbox: list[AnonymousBatch] = []  # formed, not acknowledged yet
        self._batch_seq = 0  # number of the last batch formed
        self._acked = 0  # the aggregator has applied every batch up to this number
        self._duplicates = 0
        self._refused = 0
        self._replayed = 0
        self._journal = ReplayJournal(
            journal_path, component=SHUFFLER_JOURNAL_COMPONENT, ledger=self._ledger
        )
        # A restart (Ray's max_restarts, or a trial restarted without a checkpoint) finds
        # its accepted releases, formed batches and acknowledgements in the journal.
        self._journal.replay_all(self)
        self._form_batches()

    # ------------------------------------------------------------------ agents' side

    def submit(self, submissions: Sequence[GradientSubmission]) -> dict[str, int]:
        """Take reports from local agents; return a receipt without ids.

        A report is a duplicate (dropped, counted) if its agent has a report with the same
        or a higher ``agent_sequence`` recorded; it is refused (dropped, counted) if it
        would take its agent past the budget. Accepted reports are journaled (one fsync)
        before this returns, then wait until |B| distinct agents have one.

        Returns:
            ``{"accepted", "duplicates", "refused", "ready_batches"}`` counts.

        Raises:
            TypeError: If an item is not a ``GradientSubmission``.

        """
        accepted: list[tuple[GradientSubmission, LDPReport]] = []
        counts: dict[str, int] = {}
        spends: dict[str, float] = {}
        duplicates = refused = 0
        for submission in submissions:
            if not isinstance(submission, GradientSubmission):
                raise TypeError(
                    f"the shuffler accepts GradientSubmission objects, got {type(submission)}"
                )
            agent = submission.agent_id
            # An agent numbers its reports 1, 2, ...: a number not above the count
            # recorded (earlier reports of this call included) was delivered before.
            recorded = self._ledger.releases_of(agent, submission.mechanism)
            if submission.agent_sequence <= recorded + counts.get(agent, 0):
                duplicates += 1
                continue
            spend = spends.get(agent, 0.0) + submission.total_epsilon
            check = LDPReport(agent_id=agent, epsilon=spend, mechanism=submission.mechanism)
            if not self._ledger.can_afford(check):
                refused += 1
                continue
            spends[agent], counts[agent] = spend, counts.get(agent, 0) + 1
            report = LDPReport(
                agent_id=agent, epsilon=submission.total_epsilon, mechanism=submission.mechanism
            )
            accepted.append((submission, report))
        pending = [
            _Pending(s.agent_id, s.submission_id, s.total_epsilon, anonymize(s))
            for s, _ in accepted
        ]
        # Write-ahead: durable before the receipt, so a crash can only over-count.
        self._journal.extend_releases(
            (report, {"pending": entry.to_json()})
            for (_, report), entry in zip(accepted, pending, strict=True)
        )
        for (_, report), entry in zip(accepted, pending, strict=True):
            self._ledger.record(report)
            self._add_pending(entry)
        self._duplicates += duplicates
        self._refused += refused
        self._form_batches()
        return {
            "accepted": len(accepted),
            "duplicates": duplicates,
            "refused": refused,
            "ready_batches": len(self._outbox),
        }

    # ------------------------------------------------------------------ aggregator's side

    def pull(self, acked_through: int = 0) -> list[AnonymousBatch]:
        """Acknowledge the batches up to ``acked_through``; return those not acknowledged.

        The aggregator journals a batch before it applies it and acknowledges it with its
        next pull, so a batch leaves the shuffler's memory (and journal state) only once
        it is durable on the other side.
        """
        if acked_through > self._acked:
            acked = min(int(acked_through), self._batch_seq)
            self._journal.append_update(**{_ACKED: acked})
            self._ack(acked)
        return list(self._outbox)

    def stats(self) -> dict[str, float]:
        """Totals without ids: what the aggregator may log."""
        return {
            "releases": self._ledger.releases,
            "agents": self._ledger.num_agents,
            "max_epsilon_spent": self._ledger.max_epsilon_spent,
            "pending": len(self._pending),
            "ready_batches": len(self._outbox),
            "batches_formed": self._batch_seq,
            "batches_acked": self._acked,
            "duplicates": self._duplicates,
            "refused_over_budget": self._refused,
            "releases_replayed": self._replayed,
        }

    def ping(self) -> bool:
        """True: the actor is up (its journal replayed)."""
        return True

    # ------------------------------------------------------------------ batches

    def _add_pending(self, entry: _Pending) -> None:
        self._pending.append(entry)
        self._pending_agents[entry.agent_id] += 1

    def _form_batches(self) -> None:
        """Form every batch of |B| distinct agents' reports that the pending ones allow."""
        while len(self._pending_agents) >= self.batch_size:
            members: list[_Pending] = []
            seen: set[str] = set()
            # Oldest first, one report per agent: an agent's later report waits.
            for entry in self._pending:
                if entry.agent_id not in seen:
                    seen.add(entry.agent_id)
                    members.append(entry)
                    if len(members) == self.batch_size:
                        break
            self._rng.shuffle(members)
            seq = self._batch_seq + 1
            # Durable before the batch can leave: a restart offers the same batch again.
            self._journal.append_update(
                **{_FORMED: seq, "members": [m.submission_id for m in members]}
            )
            self._formed(seq, members)

    def _drop_pending(self, members: list[_Pending]) -> None:
        chosen = {id(m) for m in members}
        self._pending = [entry for entry in self._pending if id(entry) not in chosen]
        for member in members:
            self._pending_agents[member.agent_id] -= 1
            if not self._pending_agents[member.agent_id]:
                del self._pending_agents[member.agent_id]

    def _formed(self, seq: int, members: list[_Pending]) -> None:
        self._drop_pending(members)
        self._outbox.append(
            AnonymousBatch(
                batch_seq=seq,
                reports=tuple(m.report for m in members),
                epsilon0=max(m.epsilon0 for m in members),
            )
        )
        self._batch_seq = seq

    def _ack(self, acked: int) -> None:
        self._acked = max(self._acked, acked)
        self._outbox = [batch for batch in self._outbox if batch.batch_seq > self._acked]

    # ------------------------------------------------------------------ journal protocol

    def journal_snapshot(self) -> dict[str, Any]:
        """The whole state but the journal marker (a snapshot record of the journal)."""
        return {
            "ledger": self._ledger.state_dict(),
            "pending": [entry.to_json() for entry in self._pending],
            "outbox": [batch.to_json() for batch in self._outbox],
            "batch_seq": self._batch_seq,
            "acked": self._acked,
            "duplicates": self._duplicates,
            "refused_over_budget": self._refused,
            "releases_replayed": self._replayed,
        }

    def load_journal_snapshot(self, state: Mapping[str, Any]) -> None:
        """Reset everything to a ``journal_snapshot()``."""
        self._ledger.load_state_dict(state["ledger"])
        self._pending, self._pending_agents = [], collections.Counter()
        for raw in state["pending"]:
            self._add_pending(_Pending.from_json(raw))
        self._outbox = [AnonymousBatch.from_json(raw) for raw in state["outbox"]]
        self._batch_seq = int(state["batch_seq"])
        self._acked = int(state["acked"])
        self._duplicates = int(state["duplicates"])
        self._refused = int(state["refused_over_budget"])
        self._replayed = int(state["releases_replayed"])

    def apply_journal_update(self, fields: Mapping[str, Any]) -> None:
        """Replay a formed batch (its members, in their order) or an acknowledgement."""
        if _FORMED in fields:
            seq = int(fields[_FORMED])
            by_id = {entry.submission_id: entry for entry in self._pending}
            members = [by_id[str(sid)] for sid in fields["members"] if str(sid) in by_id]
            if len(members) == len(fields["members"]) and seq > self._batch_seq:
                self._formed(seq, members)
            else:
                # A batch of another run that went on from the same checkpoint (a restore
                # merges its journal): its reports left there; they never leave again.
                self._drop_pending(members)
        elif _ACKED in fields:
            self._ack(int(fields[_ACKED]))
        else:
            raise PrivacyJournalError(
                f"shuffler journal {str(self._journal.path)!r} holds an unknown update "
                f"{dict(fields)!r}"
            )

    def count_replayed_release(self, event: PrivacyEvent, extras: Mapping[str, Any]) -> None:
        """A replayed release (already in the ledger) waits for its batch again."""
        self._add_pending(_Pending.from_json(extras["pending"]))
        self._replayed += 1

    # ------------------------------------------------------------------ checkpoints

    def get_state(self) -> dict[str, Any]:
        """The whole state: ledger, waiting reports, unacknowledged batches, counters, marker."""
        return {**self.journal_snapshot(), "journal": self._journal.marker()}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore a ``get_state()``, then replay what the journal holds after it."""
        self.load_journal_snapshot(state)
        self._journal.after_restore(state.get("journal"), self)
        self._form_batches()

    def close(self) -> None:
        """Close the journal."""
        self._journal.close()


def submit_through_shuffler(
    runner: Any, *, shuffler: Any, request: Mapping[str, Any]
) -> dict[str, int]:
    """Runs on an EnvRunner: its agents' submissions go straight to the shuffler actor.

    The aggregator gets only the receipt (counts), never the submissions or their ids.
    """
    import ray

    return ray.get(shuffler.submit.remote(runner.submit_gradients(**request)))


def start_shuffler(
    *,
    batch_size: int,
    epsilon_budget_per_agent: float,
    journal_path: str,
    num_cpus: float,
    resources: Mapping[str, float] | None,
) -> Any:
    """Start the shuffler as a Ray actor in its own process; return its handle.

    Ray restarts it if its process dies (``max_restarts=-1``) and retries the call that was
    running (``max_task_retries=-1``): the restarted actor replays its journal, and a
    retried ``submit`` finds its reports recorded (duplicates), so nothing is counted twice.

    Args:
        batch_size: |B|.
        epsilon_budget_per_agent: Per-agent total ε budget.
        journal_path: The shuffler's journal file (on a disk its node sees).
        num_cpus: CPUs reserved for the actor.
        resources: Custom Ray resources it needs, e.g. ``{"shuffler": 1}`` to put it on the
            node started with ``ray start --resources='{"shuffler": 1}'``; None: the
            aggregator's node (where the trial's journal folder is).

    """
    import ray

    from rllib_privacy.utils.journaling import same_node_strategy

    options: dict[str, Any] = {"num_cpus": num_cpus, "max_restarts": -1, "max_task_retries": -1}
    if resources:
        options["resources"] = dict(resources)
        # Its own node, chosen by the resource; not the trial's placement group.
        options["scheduling_strategy"] = "DEFAULT"
    else:
        options["scheduling_strategy"] = same_node_strategy()
    actor_cls = ray.remote(Shuffler).options(**options)
    budget = float(epsilon_budget_per_agent)
    return actor_cls.remote(
        batch_size=batch_size,
        epsilon_budget_per_agent=budget if math.isfinite(budget) else math.inf,
        journal_path=journal_path,
    )
