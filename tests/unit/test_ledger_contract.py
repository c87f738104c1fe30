"""The contract every privacy ledger implements (``rllib_privacy.accounting.ledger.Ledger``).

As dp-accounting and Opacus do for their accountants, the behaviour every ledger must have is
written once, in ``LedgerContract``, and each ledger gets a subclass that says how to build it
and which event one release is. Recording, affording and replaying go through the one
interface of ``Ledger``: ``record(event)``, ``can_afford(event)``, ``replay(events)``. A new
ledger is covered by adding a subclass.
"""

from __future__ import annotations

import abc
import json
import math
from typing import Any

import pytest

from rllib_privacy.accounting import (
    DirichletAnswer,
    EpsilonDeltaRelease,
    LDPLedger,
    LDPReport,
    PATELedger,
    PATEQueries,
    PrivacyEvent,
    TeacherLedger,
)
from rllib_privacy.accounting.ledger import Ledger
from rllib_privacy.errors import BudgetExhaustedError

#: Releases the budget of ``make_ledger(budget_releases=BUDGET)`` affords exactly.
BUDGET = 4


def _json(state: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(state, allow_nan=False))


def _close(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(
        (math.isinf(x) and x == y) or math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-15)
        for x, y in zip(a, b, strict=True)
    )


class LedgerContract(abc.ABC):
    """Tests every ledger must pass; subclasses build the ledger and record releases."""

    #: Releases one :meth:`record_one` call adds to ``Ledger.releases``.
    releases_per_record = 1

    @abc.abstractmethod
    def make_ledger(self, *, budget_releases: int | None) -> Ledger[Any]:
        """A new ledger whose budget affords exactly ``budget_releases`` (None: unlimited)."""

    @abc.abstractmethod
    def event(self) -> PrivacyEvent:
        """The release every ``record_one`` records (the same one every time)."""

    def record_one(self, ledger: Ledger[Any]) -> None:
        ledger.record(self.event())

    def can_afford_one(self, ledger: Ledger[Any]) -> bool:
        return ledger.can_afford(self.event())

    def replay_one(self, ledger: Ledger[Any]) -> None:
        ledger.replay([self.event()])

    # ------------------------------------------------------------------ the contract

    def test_is_a_ledger_with_a_written_down_privacy_unit(self) -> None:
        ledger = self.make_ledger(budget_releases=BUDGET)
        assert isinstance(ledger, Ledger)
        unit = type(ledger).privacy_unit
        assert isinstance(unit, str) and len(unit.split()) >= 3, unit

    def test_spent_starts_at_zero(self) -> None:
        ledger = self.make_ledger(budget_releases=BUDGET)
        assert ledger.spent == (0.0, 0.0) and ledger.releases == 0
        assert ledger.remaining == ledger.budget
        assert self.can_afford_one(ledger)
        assert ledger.privacy_metrics() == {
            "privacy/epsilon_spent": 0.0,
            "privacy/delta_spent": 0.0,
            "privacy/releases": 0,
        }

    def test_spent_grows_monotonically_and_remaining_is_budget_minus_spent(self) -> None:
        ledger = self.make_ledger(budget_releases=BUDGET)
        previous = ledger.spent
        for n in range(1, BUDGET + 1):
            self.record_one(ledger)
            spent = ledger.spent
            assert spent[0] > previous[0] and spent[1] >= previous[1]
            assert ledger.releases == n * self.releases_per_record
            (eps_budget, delta_budget), remaining = ledger.budget, ledger.remaining
            assert _close(remaining, (max(0.0, eps_budget - spent[0]), delta_budget - spent[1]))
            previous = spent
        metrics = ledger.privacy_metrics()
        assert (metrics["privacy/epsilon_spent"], metrics["privacy/delta_spent"]) == ledger.spent
        assert metrics["privacy/releases"] == ledger.releases

    def test_unlimited_budget_has_infinite_remaining_epsilon(self) -> None:
        ledger = self.make_ledger(budget_releases=None)
        for _ in range(3):
            self.record_one(ledger)
        assert ledger.remaining[0] == math.inf and self.can_afford_one(ledger)

    def test_exhausted_budget_refuses_and_record_raises_without_recording(self) -> None:
        ledger = self.make_ledger(budget_releases=BUDGET)
        for _ in range(BUDGET):
            assert self.can_afford_one(ledger)
            self.record_one(ledger)
        assert not self.can_afford_one(ledger)
        before = (ledger.spent, ledger.releases, ledger.state_dict())
        with pytest.raises(BudgetExhaustedError):
            self.record_one(ledger)
        assert (ledger.spent, ledger.releases, ledger.state_dict()) == before
        assert ledger.remaining[0] == pytest.approx(0.0, abs=1e-9)

    def test_state_dict_round_trip_through_json(self) -> None:
        ledger = self.make_ledger(budget_releases=BUDGET)
        for _ in range(BUDGET - 1):
            self.record_one(ledger)
        state = _json(ledger.state_dict())
        restored = self.make_ledger(budget_releases=BUDGET)
        restored.load_state_dict(state)
        assert restored.spent == ledger.spent and restored.remaining == ledger.remaining
        assert restored.releases == ledger.releases and restored.budget == ledger.budget
        assert restored.state_dict() == ledger.state_dict() and restored == ledger
        # It goes on exactly as the original does.
        self.record_one(ledger)
        self.record_one(restored)
        assert restored.spent == ledger.spent and not self.can_afford_one(restored)

    def test_spent_is_recomputed_from_events_never_stored(self) -> None:
        ledger = self.make_ledger(budget_releases=BUDGET)
        self.record_one(ledger)
        text = json.dumps(ledger.state_dict())
        assert "spent" not in text and "remaining" not in text

    def test_load_into_a_ledger_of_another_identity_and_budget(self) -> None:
        # As designed: the state brings its events AND its budget (a restore must not widen
        # the budget); the identity stays the loading ledger's (it names that ledger's journal).
        ledger = self.make_ledger(budget_releases=BUDGET)
        for _ in range(BUDGET):
            self.record_one(ledger)
        other = self.make_ledger(budget_releases=None)
        own_id = other.ledger_id
        assert own_id != ledger.ledger_id
        other.load_state_dict(_json(ledger.state_dict()))
        assert other.ledger_id == own_id
        assert other.budget == ledger.budget and other.spent == ledger.spent
        assert other.releases == ledger.releases and not self.can_afford_one(other)

    def test_state_replayed_past_the_budget_loads_and_affords_nothing(self) -> None:
        ledger = self.make_ledger(budget_releases=BUDGET)
        for _ in range(BUDGET + 2):
            self.replay_one(ledger)
        assert ledger.releases == (BUDGET + 2) * self.releases_per_record
        restored = self.make_ledger(budget_releases=BUDGET)
        restored.load_state_dict(_json(ledger.state_dict()))
        assert restored.spent == ledger.spent and restored.releases == ledger.releases
        assert restored.remaining[0] == 0.0 and not self.can_afford_one(restored)

    def test_event_of_another_kind_is_refused_and_changes_nothing(self) -> None:
        ledger = self.make_ledger(budget_releases=BUDGET)
        self.record_one(ledger)
        before = ledger.state_dict()
        others = [
            EpsilonDeltaRelease(epsilon=0.1, delta=0.0),
            DirichletAnswer(k=5.0, eta=0.05, radius=0.1, num_actions=2),
            LDPReport(agent_id="agent-0", epsilon=0.25, mechanism="laplace"),
            PATEQueries(votes=((7, 1, 0),), aggregator="lnmax", gamma=0.05),
        ]
        for other in others:
            if isinstance(other, ledger.event_types):
                continue
            assert not ledger.accepts(other)
            for call in (ledger.record, ledger.can_afford, lambda e: ledger.replay([e])):
                with pytest.raises(ValueError, match="records"):
                    call(other)
        assert ledger.state_dict() == before and ledger.accepts(self.event())

    def test_replay_adds_exactly_what_record_adds(self) -> None:
        recorded = self.make_ledger(budget_releases=None)
        replayed = self.make_ledger(budget_releases=None)
        for _ in range(3):
            self.record_one(recorded)
        replayed.replay([self.event()] * 3)
        assert replayed.state_dict() == recorded.state_dict()
        assert replayed.spent == recorded.spent and replayed.releases == recorded.releases

    def test_ledger_id_is_stable_and_adoptable(self) -> None:
        ledger = self.make_ledger(budget_releases=BUDGET)
        ledger_id = ledger.ledger_id
        assert ledger_id and ledger_id != self.make_ledger(budget_releases=BUDGET).ledger_id
        self.record_one(ledger)
        ledger.load_state_dict(_json(ledger.state_dict()))
        assert ledger.ledger_id == ledger_id
        ledger.adopt_ledger_id("journal-header-id_1")
        assert ledger.ledger_id == "journal-header-id_1"
        for bad in ("", "a/b", "../x", 3, None):
            with pytest.raises(ValueError, match="ledger_id"):
                ledger.adopt_ledger_id(bad)  # type: ignore[arg-type]


def _probe_budget(contract: LedgerContract, releases: int) -> float:
    """The spent ε of exactly ``releases`` recorded releases (the tightest budget for them)."""
    probe = contract.make_ledger(budget_releases=None)
    for _ in range(releases):
        contract.record_one(probe)
    return probe.spent[0]


class TestTeacherLedgerBasic(LedgerContract):
    """The kickstart teacher's ledger, basic composition."""

    composition = "basic"
    releases_per_record = 2

    def make_ledger(self, *, budget_releases: int | None) -> Ledger[Any]:
        budget = math.inf if budget_releases is None else _probe_budget(self, budget_releases)
        return TeacherLedger(epsilon_budget=budget, composition=self.composition)

    def event(self) -> PrivacyEvent:
        return EpsilonDeltaRelease(epsilon=0.5, delta=1e-6, count=2)


class TestTeacherLedgerAdvanced(TestTeacherLedgerBasic):
    """The kickstart teacher's ledger, advanced composition."""

    composition = "advanced"


class TestLDPLedger(LedgerContract):
    """LDPA3C's per-agent LDP ledger (and the privatizing learners' ledger)."""

    def make_ledger(self, *, budget_releases: int | None) -> Ledger[Any]:
        budget = math.inf if budget_releases is None else 0.25 * budget_releases
        return LDPLedger(epsilon_budget_per_agent=budget)

    def event(self) -> PrivacyEvent:
        return LDPReport(agent_id="agent-0", epsilon=0.25, mechanism="laplace")


class TestPATELedgerDataIndependent(LedgerContract):
    """PATE's query ledger, budget on the data-independent ε."""

    basis = "data_independent"
    votes = ((7, 1, 0), (5, 3, 0))
    releases_per_record = 2

    def make_ledger(self, *, budget_releases: int | None) -> Ledger[Any]:
        budget = math.inf if budget_releases is None else _probe_budget(self, budget_releases)
        return PATELedger(gamma=0.05, delta=1e-5, epsilon_budget=budget, budget_basis=self.basis)

    def event(self) -> PrivacyEvent:
        return PATEQueries(votes=self.votes, aggregator="lnmax", gamma=0.05)


class TestPATELedgerDataDependent(TestPATELedgerDataIndependent):
    """PATE's query ledger, budget on the data-dependent ε."""

    basis = "data_dependent"


class TestPATELedgerGNMax(TestPATELedgerDataIndependent):
    """PATE's query ledger for GNMax answers (Rényi DP), data-dependent budget."""

    basis = "data_dependent"

    def make_ledger(self, *, budget_releases: int | None) -> Ledger[Any]:
        budget = math.inf if budget_releases is None else _probe_budget(self, budget_releases)
        return PATELedger(
            aggregator="gnmax",
            sigma=2.0,
            delta=1e-5,
            epsilon_budget=budget,
            budget_basis=self.basis,
        )

    def event(self) -> PrivacyEvent:
        return PATEQueries(votes=self.votes, aggregator="gnmax", sigma=2.0)


class TestTeacherLedgerRDP(LedgerContract):
    """The kickstart teacher's ledger, Rényi DP composition (the default in the config)."""

    releases_per_record = 2

    def make_ledger(self, *, budget_releases: int | None) -> Ledger[Any]:
        budget = math.inf if budget_releases is None else _probe_budget(self, budget_releases)
        return TeacherLedger(epsilon_budget=budget, delta_budget=1e-5, composition="rdp")

    def event(self) -> PrivacyEvent:
        return DirichletAnswer(k=5.0, eta=0.05, radius=0.1, num_actions=2, count=2)
