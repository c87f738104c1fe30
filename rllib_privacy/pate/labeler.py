"""The PATE aggregator for RL: teacher ensemble + noisy max + the one global ledger.

``PATELabeler`` is the trusted party of PATE. It holds the teachers (trained on
private data), counts their votes on the states the student sends, answers with noisy-max
labels while the budget lasts, and records every answered query in a
``PATELedger``. The student side (EnvRunners, the learner)
only ever receives labels, ``-1`` for "not answered", and aggregate metrics.

``PATEPPO`` runs exactly one labeler per
algorithm, as a Ray actor (``create_labeler_actor``), so that every EnvRunner spends
from the same budget: an actor handles one call at a time, so two EnvRunners can never
both spend the last query.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rllib_privacy._validation import required
from rllib_privacy.accounting import PATELedger
from rllib_privacy.accounting.events import PrivacyEvent
from rllib_privacy.accounting.journal import PrivacyJournalError, ReplayJournal
from rllib_privacy.accounting.owner_ledger import OwnerLedger
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms import (
    NoiseStreams,
    confident_gnmax,
    gaussian_noisy_max,
    noisy_max,
    plurality,
)
from rllib_privacy.pate.ensemble import TeacherEnsemble
from rllib_privacy.utils.journaling import same_node_strategy

__all__ = ["JOURNAL_COMPONENT", "UNLABELED", "PATELabeler", "create_labeler_actor"]

#: Label value of a state the ensemble did not answer.
UNLABELED = -1
#: Component name of the labeler's privacy journal (``<journal dir>/pate_labeler.jsonl``).
JOURNAL_COMPONENT = "pate_labeler"


class PATELabeler:
    """Noisy-max labels from a teacher ensemble under one budgeted ledger.

    The aggregator is the ledger's (``PATELedger.aggregator``): LNMax (γ), GNMax (σ) or
    Confident-GNMax (threshold, σ₁, σ₂; a query below the threshold is recorded, costs the
    threshold step, and gets no label).

    Args:
        teacher_dirs: RLModule directories of the teachers.
        observation_space: The student's observation space.
        action_space: The student's (Discrete) action space.
        ledger: The ledger (aggregator and its noise, δ, budget) to spend from.
        seed: Seed of the noise; None draws it from OS entropy (use a seed only for
            experiments). A fresh OS-entropy nonce is mixed in per labeler (see
            ``NoiseStreams``), so a restored labeler never repeats earlier noise.
        secure_mode: Floating-point-safe noise from OpenDP (see ``noisy_max``,
            ``gaussian_noisy_max``, ``confident_gnmax``); the seed then does not drive it.
        track_label_agreement: Count how often the noisy label equals the noiseless
            plurality. NOT private (it is a function of the votes): off by default.
        report_data_dependent_epsilon: Report the un-noised data-dependent ε in
            ``metrics`` (``epsilon_data_dependent``). NOT private (a function of the
            votes): off by default.
        journal_path: File of the write-ahead privacy journal (see
            ``rllib_privacy.utils.journaling``), or None (no journal: tests). The votes of
            every answered batch are journaled before its labels are returned; records
            already in the file are replayed, so a restart continues the spent budget.
        owner_path: The ensemble's owner-ledger journal
            (``rllib_privacy.accounting.owner_ledger.OwnerLedger``), or None
            (budget scope ``trial``). With it, every batch of queries is first reserved in
            the owner's ledger, under its file lock: every trial and run of the same
            teachers spends one budget.
        owner_identity: The ensemble's identity (``owner_identity`` of the teachers and
            their partition); required with ``owner_path``.
        trial: Who spends (the trial's name), written beside each release in the owner's
            journal; None draws a random name.

    """

    def __init__(
        self,
        teacher_dirs: Sequence[str | Path],
        *,
        observation_space: gym.Space,
        action_space: gym.Space,
        ledger: PATELedger,
        seed: int | None = None,
        track_label_agreement: bool = False,
        report_data_dependent_epsilon: bool = False,
        secure_mode: bool = False,
        journal_path: str | None = None,
        owner_path: str | None = None,
        owner_identity: str | None = None,
        trial: str | None = None,
    ) -> None:
        # Ray reports an exception raised in an actor's __init__ only as text: keep a
        # configuration error and raise it from ping(), where it keeps its type.
        self._init_error: PrivacyConfigError | None = None
        try:
            self._ensemble = TeacherEnsemble(
                teacher_dirs, observation_space=observation_space, action_space=action_space
            )
        except PrivacyConfigError as e:
            self._init_error = e
        self._ledger = ledger
        # The owner's ledger starts from these settings with nothing spent (taken before
        # the trial's journal replays into this one).
        empty_state = ledger.state_dict()
        self._rng = NoiseStreams(seed).spawn()
        self._secure_mode = bool(secure_mode)
        self._track_agreement = bool(track_label_agreement)
        self._report_dependent = bool(report_data_dependent_epsilon)
        self._agreements = 0
        self._requested = 0
        self._stopped = False
        self._replayed = 0
        self._journal: ReplayJournal | None = None
        if journal_path is not None and self._init_error is None:
            try:
                self._journal = ReplayJournal(
                    journal_path, component=JOURNAL_COMPONENT, ledger=self._ledger
                )
                self._journal.replay_all(self)
            except (PrivacyJournalError, OSError, ValueError) as e:
                self._init_error = PrivacyConfigError(f"privacy_journal_dir: {e}")
        self._trial = trial or uuid.uuid4().hex
        self._owner: OwnerLedger | None = None
        self._budgets: list[Any] = [self._ledger]
        if owner_path is not None and self._init_error is None:
            try:
                self._owner = OwnerLedger(
                    owner_path,
                    component=JOURNAL_COMPONENT,
                    identity=required("owner_identity", owner_identity),
                    ledger=PATELedger.from_state_dict(empty_state),
                )
            except (PrivacyJournalError, OSError, ValueError) as e:
                self._init_error = PrivacyConfigError(f"pate_budget_scope: {e}")

    def ping(self) -> int:
        """Return the number of teachers (used to wait until the actor is up).

        Raises:
            PrivacyConfigError: If the teachers could not be loaded (e.g. their spaces
                differ from the student's).

        """
        if self._init_error is not None:
            raise self._init_error
        return len(self._ensemble)

    def label(self, observations: Any) -> tuple[np.ndarray, bool]:
        """Answer label queries for ``observations`` (in order) while the budget lasts.

        Args:
            observations: Student states, shape ``(N, *obs_shape)``.

        Returns:
            ``(labels, exhausted)``: int64 labels of shape ``(N,)`` with
            ``UNLABELED`` for every state past the budget, and whether the labeler
            has stopped answering for good (the first query that did not fit stops it).

        """
        observations = np.asarray(observations)
        labels = np.full(len(observations), UNLABELED, dtype=np.int64)
        self._requested += len(observations)
        if self._stopped or not len(observations):
            return labels, self._stopped
        with self._spending():
            answered, noisy, votes = self._answer(observations)
            # Stop at the first query that does not fit. (With the data-dependent basis a
            # later state with a larger vote gap might still fit; answering it would pick
            # queries by their private votes.)
            stopped = answered < len(observations) or (
                self._ledger.budget_basis == "data_independent"
                and not self._affordable(num_queries=1)
            )
        if answered:
            labels[:answered] = noisy
            if self._track_agreement:
                self._agreements += int(np.sum(noisy == plurality(votes)))
        if stopped and self._journal is not None:
            self._journal.append_update(stopped=True)
        self._stopped = stopped
        return labels, self._stopped

    def _answer(self, observations: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
        """Record (write-ahead) and aggregate the affordable prefix of ``observations``.

        Called inside ``_spending``: the affordable count, the owner's journal entry and the
        trial's are decided and written while no other trial can spend.

        Returns:
            ``(answered, noisy labels of the answered states, their votes)``.

        """
        ledger = self._ledger
        confident = ledger.aggregator == "confident_gnmax"
        noisy = flags = None
        if ledger.budget_basis == "data_independent":
            # The budget does not need the votes to decide: only states that will be
            # answered are shown to the teachers (Confident-GNMax: each assumed answered).
            answered = self._affordable(num_queries=len(observations))
            votes = self._ensemble.votes(observations[:answered])
        else:
            votes = self._ensemble.votes(observations)
            if confident:  # its cost depends on which queries pass the threshold
                noisy = self._aggregate(votes)
                flags = noisy != UNLABELED
            answered = self._affordable(votes=votes, answered=flags)
            votes = votes[:answered]
        if not answered:
            return 0, np.zeros(0, dtype=np.int64), votes
        if confident:
            # Which queries pass the threshold is part of what the ledger records, so
            # the noise is drawn before the journal entry (nothing has left yet).
            noisy = self._aggregate(votes) if noisy is None else noisy[:answered]
            flags = noisy != UNLABELED
        queries = ledger.queries(votes, answered=flags if confident else None)
        # Write-ahead: the queries (votes and settings) are durable, in the owner's journal
        # and then the trial's, before any label of this batch can leave the labeler.
        if self._owner is not None:
            self._owner.append([queries], trial=self._trial)
        if self._journal is not None:
            self._journal.append_release(queries)
        ledger.record(queries)
        if noisy is None:
            noisy = self._aggregate(votes)
        return answered, noisy, votes

    @contextlib.contextmanager
    def _spending(self) -> Iterator[None]:
        """Hold the owner's lock (in owner scope) while queries are checked and journaled."""
        if self._owner is None:
            yield
            return
        with self._owner.spending() as owner:
            self._budgets = [self._ledger, owner]
            try:
                yield
            finally:
                self._budgets = [self._ledger]

    def _affordable(self, votes: Any = None, **kwargs: Any) -> int:
        """How many of the queries every budget (the trial's, the owner's) affords."""
        return min(
            (ledger.affordable(**kwargs) if votes is None else ledger.affordable(votes, **kwargs))
            for ledger in self._budgets
        )

    def _aggregate(self, votes: np.ndarray) -> np.ndarray:
        """The ledger's aggregator on ``votes``: labels, ``UNLABELED`` where not answered."""
        ledger, secure = self._ledger, self._secure_mode
        if ledger.aggregator == "lnmax":
            gamma = required("gamma", ledger.gamma)
            return noisy_max(votes, gamma=gamma, rng=self._rng, secure_mode=secure)
        sigma = required("sigma", ledger.sigma)
        if ledger.aggregator == "gnmax":
            return gaussian_noisy_max(votes, sigma=sigma, rng=self._rng, secure_mode=secure)
        return confident_gnmax(
            votes,
            threshold=required("threshold", ledger.threshold),
            sigma_threshold=required("sigma_threshold", ledger.sigma_threshold),
            sigma=sigma,
            rng=self._rng,
            secure_mode=secure,
        )

    def metrics(self) -> dict[str, float]:
        """Ledger-derived metrics; ``epsilon`` is the publishable (data-independent) ε.

        ``label_agreement`` and ``epsilon_data_dependent`` are functions of the votes (NOT
        private): present only when turned on.
        """
        ledger = self._ledger
        queries = ledger.num_queries
        out = {
            "queries": queries,
            "answered": ledger.num_answered,
            "requested": self._requested,
            "epsilon": ledger.epsilon_data_independent,
            "epsilon_data_independent": ledger.epsilon_data_independent,
            "delta": ledger.delta,
            "budget_exhausted": float(self._stopped),
            "num_teachers": len(self._ensemble),
            "replayed_queries": self._replayed,
            **self._owner_metrics(),
        }
        if self._track_agreement:
            answered = ledger.num_answered
            out["label_agreement"] = self._agreements / answered if answered else math.nan
        if self._report_dependent:
            out["epsilon_data_dependent"] = ledger.epsilon
        return out

    def _owner_metrics(self) -> dict[str, float]:
        """The ensemble's totals over every trial and run (owner scope), else the trial's."""
        ledger = self._ledger if self._owner is None else self._owner.refreshed()
        assert isinstance(ledger, PATELedger)
        return {
            "owner_scope": float(self._owner is not None),
            "owner_epsilon": ledger.epsilon_data_independent,
            "owner_queries": ledger.num_queries,
        }

    def state_dict(self) -> dict[str, Any]:
        """JSON-safe state: the ledger and the diagnostic counters."""
        return {
            "replayed_queries": self._replayed,
            "ledger": self._ledger.state_dict(),
            "agreements": self._agreements,
            "requested": self._requested,
            "stopped": self._stopped,
        }

    def checkpoint(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``(state_dict(), journal marker)``, taken together for an Algorithm checkpoint.

        The marker (which journal, up to which record) is kept apart from the state so that
        the states of two runs with the same spend compare equal.
        """
        return self.state_dict(), None if self._journal is None else self._journal.marker()

    def load_state_dict(
        self, state: dict[str, Any], *, journal_marker: dict[str, Any] | None = None
    ) -> None:
        """Continue from a ``state_dict``: the spent budget is never reset.

        With a journal, the queries journaled after that state was taken (answered after the
        checkpoint, before a crash) are replayed on top of it and counted in
        ``metrics()["replayed_queries"]``. A state from another journal (or without a
        ``journal_marker``: see ``checkpoint``) is instead written to this journal as a
        snapshot, so the journal alone still reproduces the totals.
        """
        self._load_state(state)
        # The checkpointed model saw none of the replayed queries: the count starts from the
        # checkpoint's own (earlier crashes), not from what this process replayed at start.
        self._replayed = int(state.get("replayed_queries", 0))
        if self._journal is not None:
            self._journal.after_restore(journal_marker, self)

    # The JournaledComponent protocol (rllib_privacy.accounting.journal):

    def journal_snapshot(self) -> dict[str, Any]:
        """The JSON-safe totals a journal snapshot holds."""
        state = self.state_dict()
        del state["replayed_queries"]
        return state

    def load_journal_snapshot(self, state: Mapping[str, Any]) -> None:
        """Reset the ledger and the counters to a ``journal_snapshot()``."""
        self._load_state(state)

    def apply_journal_update(self, fields: Mapping[str, Any]) -> None:
        """Apply a journaled stop (the labeler answers nothing more)."""
        self._stopped = bool(fields.get("stopped", self._stopped))

    def count_replayed_release(self, event: PrivacyEvent, extras: Mapping[str, Any]) -> None:
        """Count replayed queries (the journal already put them in the ledger)."""
        self._replayed += event.count

    def _load_state(self, state: Mapping[str, Any]) -> None:
        """Load a ``state_dict`` as it is (``load_state_dict`` adds the journal's tail)."""
        self._ledger.load_state_dict(state["ledger"])
        self._agreements = int(state["agreements"])
        self._requested = int(state["requested"])
        self._stopped = bool(state["stopped"])


def create_labeler_actor(**kwargs: Any) -> Any:
    """Start a ``PATELabeler`` as a Ray actor and wait until its teachers are loaded.

    No CPU is reserved for it: it mostly waits for EnvRunners' requests.

    Args:
        **kwargs: ``PATELabeler``'s arguments.

    Returns:
        The actor handle.

    Raises:
        PrivacyConfigError: As raised by the teachers' checks (e.g. a space mismatch),
            unwrapped from Ray's error types so that the user sees the message itself.

    """
    import ray

    # Pinned to this node: the labeler writes its journal in the trial folder on this disk.
    actor = (
        ray.remote(num_cpus=0, max_restarts=0)(PATELabeler)
        .options(scheduling_strategy=same_node_strategy())
        .remote(**kwargs)
    )
    try:
        ray.get(actor.ping.remote())
    except ray.exceptions.RayTaskError as e:
        if isinstance(e.cause, PrivacyConfigError):
            ray.kill(actor)
            raise PrivacyConfigError(str(e.cause)) from None
        raise
    return actor
