"""Ledger states and privacy journals written by 0.1.0 load, and give the ε 0.1.0 reported.

The fixtures (``tests/fixtures/legacy_0_1``) were written once by the 0.1.0 code, before
typed privacy events, and are never regenerated: they are what a user upgrading has on disk.
Journals are replayed through the one generic replay, into a fresh ledger of the settings
they were written with.
"""

from __future__ import annotations

import json
import math
import pathlib
import shutil
from collections.abc import Mapping
from typing import Any

import pytest

from rllib_privacy.accounting import (
    LDPLedger,
    PATELedger,
    PrivacyEvent,
    ReplayJournal,
    TeacherLedger,
)
from rllib_privacy.accounting.ledger import Ledger

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "legacy_0_1"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
#: Ledger class by the fixture name's first word.
LEDGER_CLASSES: dict[str, Any] = {
    "teacher": TeacherLedger,
    "ldp": LDPLedger,
    "pate": PATELedger,
}


def assert_same_spend(spent: Any, expected: list[float]) -> None:
    """ε and δ as 0.1.0 reported them; ε to the relative 1e-9 of 0.1.0's Rényi curve.

    0.1.0 bounded the two-action curve by a certified bisection accurate to a relative 1e-9;
    the closed form that replaced it agrees with it to that tolerance.
    """
    assert len(spent) == len(expected)
    for ours, theirs in zip(spent, expected, strict=True):
        assert ours == pytest.approx(theirs, rel=1e-9, abs=0.0)


class Counter:
    """A journaled component that counts what the journal replays into it."""

    def __init__(self, ledger: Ledger[Any]) -> None:
        self.ledger = ledger
        self.releases = 0
        self.updates: list[dict[str, Any]] = []

    def journal_snapshot(self) -> dict[str, Any]:
        return {"ledger": self.ledger.state_dict()}

    def load_journal_snapshot(self, state: Mapping[str, Any]) -> None:
        self.ledger.load_state_dict(dict(state["ledger"]))

    def apply_journal_update(self, fields: Mapping[str, Any]) -> None:
        self.updates.append(dict(fields))

    def count_replayed_release(self, event: PrivacyEvent, extras: Mapping[str, Any]) -> None:
        self.releases += event.count


@pytest.mark.parametrize("name", sorted(EXPECTED["ledgers"]))
def test_ledger_state_of_0_1_loads_with_the_same_epsilon(name: str) -> None:
    state = json.loads((FIXTURES / f"{name}.json").read_text())
    expected = EXPECTED["ledgers"][name]
    ledger = LEDGER_CLASSES[name.split("_")[0]].from_state_dict(state)
    assert_same_spend(ledger.spent, expected["spent"])
    assert ledger.releases == expected["releases"]
    if isinstance(ledger, PATELedger):
        assert ledger.epsilon == expected["epsilon"]
        assert ledger.epsilon_data_independent == expected["epsilon_data_independent"]
    # Saved again in today's format, it reads back the same; the budget survives too.
    again = LEDGER_CLASSES[name.split("_")[0]].from_state_dict(
        json.loads(json.dumps(ledger.state_dict()))
    )
    assert again.spent == ledger.spent and again.budget == ledger.budget
    assert again.releases == ledger.releases


def _ledger_of(name: str) -> Ledger[Any]:
    """A fresh ledger with the settings the fixture's journal was written under."""
    expected = EXPECTED["journals"][name]
    if name.startswith("kickstart_teacher"):
        settings = expected["settings"]
        return TeacherLedger(
            epsilon_budget=settings["epsilon_budget"],
            delta_budget=settings["delta_budget"],
            composition=settings["composition"],
        )
    if name.startswith("pate_labeler"):
        return PATELedger(**expected["ledger_kwargs"])
    return LDPLedger(epsilon_budget_per_agent=1.0)


def _journal(name: str, tmp_path: pathlib.Path, ledger: Ledger[Any]) -> ReplayJournal:
    """The fixture's journal, copied (opening a journal may repair it: never the fixture)."""
    component = EXPECTED["journals"][name]["component"]
    source = FIXTURES / name / f"{component}.jsonl"
    copy = tmp_path / source.name
    shutil.copyfile(source, copy)
    # The 0.1.0 teacher journals carry their mechanism; ones from before RDP would need
    # the teacher's own, which it gives as legacy_defaults.
    return ReplayJournal(copy, component=component, ledger=ledger)


@pytest.mark.parametrize("name", sorted(EXPECTED["journals"]))
def test_journal_of_0_1_replays_to_the_same_epsilon(name: str, tmp_path: pathlib.Path) -> None:
    expected = EXPECTED["journals"][name]
    ledger = _ledger_of(name)
    journal = _journal(name, tmp_path, ledger)
    component = Counter(ledger)
    replayed = journal.replay_all(component)
    assert replayed == component.releases == expected["releases"] == ledger.releases
    assert_same_spend(ledger.spent, expected["spent"])
    assert ledger.state_dict() == _ledger_of_state(name).state_dict()
    if isinstance(ledger, PATELedger):
        assert ledger.epsilon == expected["epsilon"]
        assert ledger.epsilon_data_independent == expected["epsilon_data_independent"]
    if name.startswith("kickstart_teacher"):
        # The k schedule records came back as updates, in order.
        assert [update["rollouts"] for update in component.updates] == [1, 2, 3]


def _ledger_of_state(name: str) -> Ledger[Any]:
    """The ledger 0.1.0 held at the end of the fixture's run, from its saved state."""
    ledger = _ledger_of(name)
    ledger.load_state_dict(EXPECTED["journals"][name]["ledger_state"])
    return ledger


@pytest.mark.parametrize("name", sorted(EXPECTED["journals"]))
def test_checkpoint_of_0_1_restores_with_its_journal_tail(
    name: str, tmp_path: pathlib.Path
) -> None:
    """A 0.1.0 checkpoint plus the releases its journal holds after it: the whole spend."""
    expected = EXPECTED["journals"][name]
    checkpoint = json.loads((FIXTURES / name / "checkpoint_state.json").read_text())
    state = checkpoint.get("state", checkpoint)
    marker = checkpoint.get("marker", checkpoint.get("journal"))
    ledger = _ledger_of(name)
    journal = _journal(name, tmp_path, ledger)
    ledger.load_state_dict(state["ledger"])
    before = ledger.releases
    assert 0 < before < expected["releases"]
    component = Counter(ledger)
    journal.after_restore(marker, component)
    assert component.releases == expected["releases"] - before
    assert_same_spend(ledger.spent, expected["spent"])
    assert not math.isnan(ledger.spent[0])
