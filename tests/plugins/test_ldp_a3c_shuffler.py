"""LDPA3C's shuffler: anonymous types, dedup, budget, uniform order, crash and restore."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from journaled_component_contract import JournaledComponentContract
from scipy import stats

from rllib_privacy.accounting.events import (
    LDPReport,
    ShuffledBatch,
    event_from_dict,
    event_to_dict,
)
from rllib_privacy.accounting.journal import ReplayJournal
from rllib_privacy.accounting.shuffle import shuffle_epsilon, shuffled_rounds_epsilon
from rllib_privacy.accounting.shuffle_ledger import ShuffleLedger
from rllib_privacy.algorithms.ldp_a3c.anonymous import (
    ANONYMOUS_FIELDS,
    IDENTIFYING_FIELDS,
    AnonymousBatch,
    AnonymousReport,
    anonymize,
)
from rllib_privacy.algorithms.ldp_a3c.shuffler import SHUFFLER_JOURNAL_COMPONENT, Shuffler
from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission
from rllib_privacy.errors import BudgetExhaustedError

DIM = 3


def _submission(agent: str, sequence: int = 1, *, epsilon: float = 1.0, score: float = 10.0):
    gradient = np.arange(DIM, dtype=np.float32) + float(sequence)
    return GradientSubmission(
        agent_id=agent,
        gradient=gradient,
        epsilon=epsilon,
        mechanism="privunitg",
        score=score,
        env_steps=int(score),
        weights_version=0,
        agent_sequence=sequence,
    )


def _shuffler(folder: Path, *, batch_size: int = 4, budget: float = math.inf) -> Shuffler:
    return Shuffler(
        batch_size=batch_size,
        epsilon_budget_per_agent=budget,
        journal_path=str(folder / f"{SHUFFLER_JOURNAL_COMPONENT}.jsonl"),
    )


# ---------------------------------------------------------------------- anonymous types


def test_anonymous_report_holds_every_field_but_the_identifying_ones() -> None:
    fields = [f.name for f in dataclasses.fields(GradientSubmission)]
    assert set(IDENTIFYING_FIELDS) == {"agent_id", "agent_sequence"}
    # Every other field passes through, whatever was added to GradientSubmission.
    assert list(ANONYMOUS_FIELDS) == [f for f in fields if f not in IDENTIFYING_FIELDS]
    submission = _submission("agent-7", 3)
    report = anonymize(submission)
    for name in ANONYMOUS_FIELDS:
        value = getattr(report, name)
        expected = getattr(submission, name)
        assert (
            np.array_equal(value, expected) if isinstance(value, np.ndarray) else value == expected
        )
    for name in IDENTIFYING_FIELDS:
        with pytest.raises(AttributeError):
            getattr(report, name)
    with pytest.raises(TypeError, match="identifying"):
        AnonymousReport(**report.as_dict(), agent_id="agent-7")
    with pytest.raises(AttributeError, match="read-only"):
        report.score = 1.0
    # Pickled for Ray and JSON'd for the journal: bit-exact, and the id never in the bytes.
    assert pickle.loads(pickle.dumps(report)) == report
    assert AnonymousReport.from_json(json.loads(json.dumps(report.to_json()))) == report
    assert b"agent-7" not in pickle.dumps(report)


def test_anonymize_refuses_anything_but_a_submission() -> None:
    with pytest.raises(TypeError, match="GradientSubmission"):
        anonymize({"agent_id": "a"})  # type: ignore[arg-type]  # the point of the test


# ---------------------------------------------------------------------- the shuffle ledger


def test_shuffled_batch_event_round_trips_and_validates() -> None:
    event = ShuffledBatch(epsilon0=3.0, num_reports=2048)
    assert event_from_dict(json.loads(json.dumps(event_to_dict(event)))) == event
    with pytest.raises(ValueError, match="epsilon0"):
        ShuffledBatch(epsilon0=math.inf, num_reports=2048)
    with pytest.raises(ValueError, match="num_reports"):
        ShuffledBatch(epsilon0=3.0, num_reports=0)


def test_shuffle_ledger_composes_over_the_rounds_an_agent_can_be_in() -> None:
    small = ShuffledBatch(epsilon0=2.0, num_reports=4096)
    large = ShuffledBatch(epsilon0=4.0, num_reports=4096)
    ledger = ShuffleLedger(rounds=2, delta=1e-6)
    assert ledger.spent == (0.0, 0.0)
    ledger.record(small)
    assert ledger.spent == (shuffle_epsilon(2.0, 4096, 1e-6), 1e-6)
    for event in (small, small, large):
        ledger.record(event)
    # An agent is in at most 2 of the 4 batches; the worst ε₀ bounds each of them.
    assert ledger.spent == (shuffled_rounds_epsilon(4.0, 4096, 1e-6, rounds=2), 1e-6)
    assert ledger.releases == 4 and ledger.reports == 4 * 4096
    restored = ShuffleLedger()
    restored.load_state_dict(json.loads(json.dumps(ledger.state_dict())))
    assert restored == ledger and restored.spent == ledger.spent
    target = shuffled_rounds_epsilon(2.0, 4096, 1e-6, rounds=2)
    budgeted = ShuffleLedger(rounds=2, delta=1e-6, epsilon_budget=target)
    for _ in range(5):  # any number of batches: an agent is in 2 at most
        budgeted.record(small)
    assert not budgeted.can_afford(large)
    with pytest.raises(BudgetExhaustedError, match="above the budget"):
        budgeted.record(large)


def test_shuffle_ledger_replays_from_its_journal(tmp_path: Path) -> None:
    ledger = ShuffleLedger(rounds=1)
    journal = ReplayJournal(tmp_path / "agg.jsonl", component="agg", ledger=ledger)
    event = ShuffledBatch(epsilon0=3.0, num_reports=1000)
    journal.append_release(event, batch_seq=1)
    ledger.record(event)
    journal.close()
    again = ShuffleLedger(rounds=1)

    class _Sink:
        def count_replayed_release(self, *_: Any) -> None:
            pass

    ReplayJournal(tmp_path / "agg.jsonl", component="agg", ledger=again).replay_all(
        _Sink()  # type: ignore[arg-type]  # only count_replayed_release is called
    )
    assert again.spent == ledger.spent and again.releases == 1


# ---------------------------------------------------------------------- the shuffler


def test_batches_hold_batch_size_distinct_agents_without_ids(tmp_path: Path) -> None:
    shuffler = _shuffler(tmp_path, batch_size=4)
    receipt = shuffler.submit([_submission(f"agent-{i}") for i in range(10)])
    assert receipt == {"accepted": 10, "duplicates": 0, "refused": 0, "ready_batches": 2}
    batches = shuffler.pull()
    assert [b.batch_seq for b in batches] == [1, 2]
    for batch in batches:
        assert type(batch) is AnonymousBatch and len(batch) == 4
        assert batch.epsilon0 == 1.0
        assert all(type(r) is AnonymousReport for r in batch)
    assert b"agent-" not in pickle.dumps(batches)
    # Acknowledged batches leave; the rest is offered again.
    assert [b.batch_seq for b in shuffler.pull(acked_through=1)] == [2]
    assert shuffler.pull(acked_through=2) == []
    assert shuffler.stats()["pending"] == 2


def test_one_report_per_agent_per_batch_and_resends_are_duplicates(tmp_path: Path) -> None:
    shuffler = _shuffler(tmp_path, batch_size=3)
    first = [_submission("a", 1), _submission("a", 2, score=20.0), _submission("b", 1)]
    receipt = shuffler.submit(first)
    assert receipt["accepted"] == 3 and receipt["ready_batches"] == 0  # only 2 agents
    # A resent submission (same agent and number) and an older number are duplicates.
    receipt = shuffler.submit([_submission("a", 1), _submission("b", 1), _submission("c", 1)])
    assert receipt["duplicates"] == 2 and receipt["accepted"] == 1
    (batch,) = shuffler.pull()
    # a's second report waits for the next batch: the batch has 3 distinct agents, so
    # exactly one report of a (its first, score 10).
    assert sorted(r.score for r in batch) == [10.0, 10.0, 10.0]
    assert shuffler.stats()["pending"] == 1
    assert shuffler.stats()["duplicates"] == 2
    assert shuffler.stats()["releases"] == 4


def test_budget_is_enforced_at_the_shuffler(tmp_path: Path) -> None:
    shuffler = _shuffler(tmp_path, batch_size=2, budget=1.0)
    receipt = shuffler.submit([_submission("a", 1, epsilon=0.6), _submission("a", 2, epsilon=0.6)])
    assert receipt["accepted"] == 1 and receipt["refused"] == 1
    assert shuffler.submit([_submission("a", 3, epsilon=0.4)])["accepted"] == 1
    assert shuffler.stats()["max_epsilon_spent"] == pytest.approx(1.0)
    assert shuffler.stats()["refused_over_budget"] == 1
    assert shuffler.submit([_submission("a", 4, epsilon=0.1)])["refused"] == 1


def test_output_order_is_uniform_and_not_seeded(tmp_path: Path) -> None:
    # The first-arriving report of every batch is tagged (score 1, others 0); its output
    # position must be uniform over the |B| slots. Pearson's chi-square with |B| - 1
    # degrees of freedom; the threshold is its 1 - 1e-6 quantile: a correct shuffler fails
    # this test with probability 1e-6. With 600 expected per slot, a shuffler that kept
    # the tagged report first even 2% more often than uniform (a 1/B + 0.02 share) would
    # push the statistic past it with high probability.
    batch_size, num_batches = 4, 2400
    shuffler = _shuffler(tmp_path, batch_size=batch_size)
    positions: Counter[int] = Counter()
    # The shuffler's permutations come from OS entropy: seeding Python's and numpy's
    # generators must not fix them.
    random.seed(0)
    np.random.seed(0)
    for start in range(0, num_batches, 200):
        submissions = [
            _submission(f"agent-{start + b}-{slot}", score=float(slot == 0))
            for b in range(200)
            for slot in range(batch_size)
        ]
        shuffler.submit(submissions)
        batches = shuffler.pull()
        for batch in batches:
            scores = [r.score for r in batch]
            assert sorted(scores) == [0.0] * (batch_size - 1) + [1.0]
            positions[scores.index(1.0)] += 1
        shuffler.pull(acked_through=batches[-1].batch_seq)
    observed = np.array([positions[i] for i in range(batch_size)])
    assert observed.sum() == num_batches
    statistic = stats.chisquare(observed).statistic
    assert statistic < stats.chi2.isf(1e-6, df=batch_size - 1), observed


# ---------------------------------------------------------------------- crash and restore


def test_restarted_shuffler_loses_nothing_and_counts_nothing_twice(tmp_path: Path) -> None:
    shuffler = _shuffler(tmp_path, batch_size=4)
    shuffler.submit([_submission(f"agent-{i}") for i in range(6)])  # one batch + 2 waiting
    (formed,) = shuffler.pull()
    # The process dies (no close): a new one replays the journal.
    restarted = _shuffler(tmp_path, batch_size=4)
    assert restarted.stats()["releases"] == 6
    assert restarted.stats()["releases_replayed"] == 6
    assert restarted.stats()["pending"] == 2
    # The unacknowledged batch is offered again: same number, same order, same reports.
    (again,) = restarted.pull()
    assert again.batch_seq == formed.batch_seq and list(again) == list(formed)
    # Agents resending after the crash are duplicates; the waiting ones still go out.
    receipt = restarted.submit(
        [_submission(f"agent-{i}") for i in range(6)] + [_submission("x"), _submission("y")]
    )
    assert receipt["duplicates"] == 6 and receipt["accepted"] == 2
    batches = restarted.pull(acked_through=1)
    assert [b.batch_seq for b in batches] == [2]
    assert restarted.stats()["releases"] == 8 and restarted.stats()["pending"] == 0


def test_a_killed_shuffler_actor_restarts_from_its_journal(ray_session, tmp_path: Path) -> None:
    import ray

    from rllib_privacy.algorithms.ldp_a3c.shuffler import start_shuffler

    handle = start_shuffler(
        batch_size=4,
        epsilon_budget_per_agent=2.0,
        journal_path=str(tmp_path / "shuffler.jsonl"),
        num_cpus=0,
        resources=None,
    )
    try:
        ray.get(handle.submit.remote([_submission(f"agent-{i}") for i in range(3)]))

        def actor_pid() -> int:
            return ray.get(handle.__ray_call__.remote(lambda self: __import__("os").getpid()))

        pid = actor_pid()
        # Mid-batch: 3 of 4 reports wait. Ray restarts the actor (max_restarts=-1).
        ray.kill(handle, no_restart=False)
        # ray.kill is asynchronous: a call sent at once may still reach the old process, so
        # wait until the restarted one answers before submitting.
        deadline = time.monotonic() + 60.0
        new_pid = pid
        while new_pid == pid and time.monotonic() < deadline:
            try:
                new_pid = actor_pid()
            except ray.exceptions.RayActorError:
                pass
            if new_pid == pid:
                time.sleep(0.1)
        assert new_pid != pid, "the killed shuffler actor did not restart within 60 s"
        receipt = ray.get(handle.submit.remote([_submission("agent-0"), _submission("agent-3")]))
        assert receipt == {"accepted": 1, "duplicates": 1, "refused": 0, "ready_batches": 1}
        (batch,) = ray.get(handle.pull.remote(0))
        assert len(batch) == 4
        stats_ = ray.get(handle.stats.remote())
        assert stats_["releases"] == 4 and stats_["releases_replayed"] == 3
    finally:
        ray.kill(handle, no_restart=True)


class TestShufflerJournal(JournaledComponentContract):
    """The journaled-component contract for the shuffler (its per-agent ledger)."""

    component = SHUFFLER_JOURNAL_COMPONENT

    def build(self, folder: Path, *, budget_spends: int | None) -> Shuffler:
        shuffler = _shuffler(
            folder, batch_size=4, budget=math.inf if budget_spends is None else budget_spends
        )
        shuffler.budgeted = budget_spends is not None  # type: ignore[attr-defined]
        return shuffler

    def spend(self, component: Shuffler, seed: int) -> int:
        # Agent "a" reports once per call (ε 1); without a budget, 4 fresh agents too.
        sequence = component._ledger.releases_of("a") + 1
        submissions = [_submission("a", sequence)]
        if not component.budgeted:  # type: ignore[attr-defined]
            submissions += [_submission(f"s{seed}-{i}") for i in range(4)]
        return component.submit(submissions)["accepted"]

    def checkpoint(self, component: Shuffler, where: Path) -> Any:
        return json.loads(json.dumps(component.get_state()))

    def restore(self, component: Shuffler, checkpoint: Any) -> None:
        component.set_state(checkpoint)

    def releases(self, component: Shuffler) -> int:
        return int(component.stats()["releases"])

    def replayed(self, component: Shuffler) -> int:
        return int(component.stats()["releases_replayed"])

    def privacy(self, component: Shuffler) -> dict[str, Any]:
        # The per-agent ledger and the batch counts (the order inside a batch is drawn
        # afresh in every process, so two runs' batches differ in order only).
        state = component.journal_snapshot()
        return {
            "ledger": state["ledger"],
            "pending": len(state["pending"]),
            "outbox": [len(batch["reports"]) for batch in state["outbox"]],
            "batch_seq": state["batch_seq"],
        }

    def exhausted(self, component: Shuffler) -> bool:
        report = LDPReport(agent_id="a", epsilon=1.0, mechanism="privunitg")
        return not component._ledger.can_afford(report)

    def close(self, component: Shuffler) -> None:
        component.close()
