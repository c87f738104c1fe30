"""Tests for the per-agent pure-ε LDP ledger."""

from __future__ import annotations

import copy
import gc
import json
import math
import tracemalloc

import pytest

from rllib_privacy.accounting import LDPLedger, LDPReport, per_submission_epsilon
from rllib_privacy.errors import BudgetExhaustedError


def report(agent_id: str, epsilon: float, mechanism: str = "laplace") -> LDPReport:
    """One ε-LDP report of ``agent_id``."""
    return LDPReport(agent_id=agent_id, epsilon=epsilon, mechanism=mechanism)


def roundtrip(ledger: LDPLedger) -> LDPLedger:
    encoded = json.dumps(ledger.state_dict(), allow_nan=False)  # strict JSON: no Infinity
    restored = LDPLedger()
    restored.load_state_dict(json.loads(encoded))
    return restored


def test_empty_ledger() -> None:
    ledger = LDPLedger()
    assert ledger.epsilon_budget_per_agent == math.inf
    assert ledger.max_epsilon_spent == 0.0
    assert ledger.releases == 0 and ledger.num_agents == 0
    assert ledger.releases_by_mechanism == {}
    assert ledger.epsilon_spent("nobody") == 0.0


def test_sequential_composition_per_agent() -> None:
    ledger = LDPLedger()
    assert ledger.record(report("a", 0.5, "laplace")) == 0.5
    assert ledger.record(report("a", 0.25, "prs")) == 0.75
    assert ledger.record(report("a", 0.5, "laplace")) == 1.25
    assert ledger.record(report("b", 2.0, "prs")) == 2.0
    assert ledger.epsilon_spent("a") == pytest.approx(1.25)
    assert ledger.epsilon_spent("b") == 2.0
    assert ledger.epsilon_spent("c") == 0.0
    assert ledger.max_epsilon_spent == 2.0
    assert ledger.releases == 4 and ledger.num_agents == 2
    assert ledger.releases_by_mechanism == {"laplace": 2, "prs": 2}


def test_gradient_and_score_releases_compose_and_count_per_mechanism() -> None:
    """A private-score submission is two releases: both count in ε, each in its own count."""
    ledger = LDPLedger(epsilon_budget_per_agent=1.0)
    ledger.record(report("a", 0.8, "privunitg"))
    assert ledger.record(report("a", 0.2, "one_bit")) == pytest.approx(1.0)
    assert ledger.releases_of("a") == 2
    assert ledger.releases_of("a", "privunitg") == 1
    assert ledger.releases_of("a", "one_bit") == 1
    assert ledger.releases_of("a", "laplace") == 0
    assert ledger.releases_of("b", "privunitg") == 0
    assert not ledger.can_afford(report("a", 0.01, "one_bit"))
    assert ledger.releases_by_mechanism == {"privunitg": 1, "one_bit": 1}


def test_max_epsilon_spent_is_worst_agent() -> None:
    ledger = LDPLedger()
    spent: dict[str, float] = {}
    for i in range(200):
        agent, epsilon = f"agent-{i % 17}", 0.01 * (1 + i % 5)
        ledger.record(report(agent, epsilon, "laplace" if i % 2 else "prs"))
        spent[agent] = spent.get(agent, 0.0) + epsilon
    for agent, total in spent.items():
        assert ledger.epsilon_spent(agent) == pytest.approx(total, rel=1e-12)
    assert ledger.max_epsilon_spent == pytest.approx(max(spent.values()), rel=1e-12)
    assert ledger.max_epsilon_spent == max(ledger.epsilon_spent(a) for a in spent)


def test_budget_refusal_leaves_ledger_unchanged() -> None:
    ledger = LDPLedger(epsilon_budget_per_agent=1.0)
    ledger.record(report("a", 0.6, "laplace"))
    before = ledger.state_dict()
    assert not ledger.can_afford(report("a", 0.5))
    with pytest.raises(
        BudgetExhaustedError, match=r"agent 'a' has spent epsilon=0.6 of its budget 1.0"
    ):
        ledger.record(report("a", 0.5, "laplace"))
    assert ledger.state_dict() == before
    assert ledger.epsilon_spent("a") == 0.6 and ledger.releases == 1
    assert ledger.can_afford(report("a", 0.4)) and ledger.can_afford(report("b", 1.0))
    assert not ledger.can_afford(report("b", 1.5))
    ledger.record(report("a", 0.4, "laplace"))  # fills the budget exactly
    assert not ledger.can_afford(report("a", 1e-6))
    with pytest.raises(BudgetExhaustedError):
        ledger.record(report("a", 1e-6, "prs"))


@pytest.mark.parametrize("submissions", [3, 7, 10, 1000])
def test_multi_round_submissions_fit_budget_despite_rounding(submissions: int) -> None:
    total = 1.0
    per_submission = per_submission_epsilon(total, submissions)
    assert per_submission == total / submissions
    ledger = LDPLedger(epsilon_budget_per_agent=total)
    for _ in range(submissions):
        ledger.record(report("agent", per_submission, "laplace"))
    assert ledger.epsilon_spent("agent") == pytest.approx(total, rel=1e-12)
    assert not ledger.can_afford(report("agent", per_submission))
    assert ledger.releases_by_mechanism == {"laplace": submissions}


def test_per_submission_epsilon_validation() -> None:
    assert per_submission_epsilon(math.inf, 4) == math.inf
    with pytest.raises(ValueError, match=r"^total_epsilon must be a number > 0"):
        per_submission_epsilon(0.0, 4)
    with pytest.raises(ValueError, match=r"^submissions_per_agent must be an int >= 1"):
        per_submission_epsilon(1.0, 0)
    with pytest.raises(ValueError, match=r"^submissions_per_agent must be an int >= 1"):
        per_submission_epsilon(1.0, 2.0)


def test_infinite_release_only_under_unlimited_budget() -> None:
    unlimited = LDPLedger()
    unlimited.record(report("a", math.inf, "none"))
    assert unlimited.max_epsilon_spent == math.inf and unlimited.can_afford(report("a", 1.0))
    limited = LDPLedger(epsilon_budget_per_agent=10.0)
    assert not limited.can_afford(report("a", math.inf))
    with pytest.raises(BudgetExhaustedError):
        limited.record(report("a", math.inf, "none"))


def test_argument_validation() -> None:
    with pytest.raises(ValueError, match=r"^epsilon_budget_per_agent must be a number > 0"):
        LDPLedger(epsilon_budget_per_agent=0.0)
    with pytest.raises(ValueError, match=r"^epsilon_budget_per_agent must be a number > 0"):
        LDPLedger(epsilon_budget_per_agent=math.nan)
    ledger = LDPLedger()
    for bad in (0.0, -1.0, math.nan, "1", None):
        with pytest.raises(ValueError, match=r"^epsilon must be a number > 0"):
            ledger.record(report("a", bad, "laplace"))  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"^epsilon must be a number > 0"):
            ledger.can_afford(report("a", bad))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^agent_id must be a non-empty string"):
        ledger.record(report("", 1.0, "laplace"))
    with pytest.raises(ValueError, match=r"^agent_id must be a non-empty string"):
        ledger.record(report(3, 1.0, "laplace"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^mechanism must be a non-empty string"):
        ledger.record(report("a", 1.0, ""))
    assert ledger.releases == 0


def _populated_ledger(budget: float) -> LDPLedger:
    ledger = LDPLedger(epsilon_budget_per_agent=budget)
    ledger.record(report("a", 0.1, "laplace"))
    ledger.record(report("a", 0.1, "laplace"))
    ledger.record(report("a", 1 / 3, "prs"))
    ledger.record(report("b", 0.7, "prs"))
    ledger.record(report("c", 0.1, "laplace"))
    return ledger


@pytest.mark.parametrize("budget", [1.0, math.inf])
def test_state_dict_json_round_trip_is_exact(budget: float) -> None:
    ledger = _populated_ledger(budget)
    if budget == math.inf:
        ledger.record(report("d", math.inf, "none"))
    restored = roundtrip(ledger)
    assert restored.state_dict() == ledger.state_dict()
    assert restored == ledger
    for agent in ("a", "b", "c", "d"):
        assert restored.epsilon_spent(agent) == ledger.epsilon_spent(agent)
    assert restored.max_epsilon_spent == ledger.max_epsilon_spent
    assert restored.epsilon_budget_per_agent == budget
    assert restored.releases_by_mechanism == ledger.releases_by_mechanism
    assert restored.releases == ledger.releases
    # The restored ledger continues the spent budget (a reset would be a privacy leak).
    if budget == 1.0:
        assert not restored.can_afford(report("b", 0.5))
        with pytest.raises(BudgetExhaustedError):
            restored.record(report("b", 0.5, "prs"))
    restored.record(report("a", 0.1, "laplace"))
    ledger.record(report("a", 0.1, "laplace"))
    assert restored == ledger


def test_load_state_dict_replaces_contents() -> None:
    target = LDPLedger(epsilon_budget_per_agent=5.0)
    target.record(report("zzz", 1.0, "laplace"))
    source = _populated_ledger(1.0)
    target.load_state_dict(source.state_dict())
    assert target == source and target.epsilon_spent("zzz") == 0.0
    assert LDPLedger.from_state_dict(source.state_dict()) == source


def _garbage_states() -> list[object]:
    good = _populated_ledger(1.0).state_dict()

    def edit(path: tuple, value: object) -> dict:
        state = copy.deepcopy(good)
        node = state
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return state

    without_kinds = copy.deepcopy(good)
    del without_kinds["kinds"]
    extra = copy.deepcopy(good)
    extra["extra"] = 1
    return [
        None,
        [],
        "ledger",
        {},
        without_kinds,
        extra,
        edit(("format",), "other"),
        edit(("version",), 2),
        edit(("epsilon_budget_per_agent",), -1.0),
        edit(("epsilon_budget_per_agent",), "Infinity"),
        edit(("epsilon_budget_per_agent",), None),
        edit(("kinds",), {}),
        edit(("kinds", 0), ["laplace"]),
        edit(("kinds", 0), ["", 0.1]),
        edit(("kinds", 0), ["laplace", 0.0]),
        edit(("kinds", 0), ["laplace", "nan"]),
        edit(("kinds", 1), ["laplace", 0.1]),  # duplicate kind
        edit(("agents",), []),
        edit(("agents", "a"), []),
        edit(("agents", "a"), [[0]]),
        edit(("agents", "a"), [[99, 1]]),
        edit(("agents", "a"), [[-1, 1]]),
        edit(("agents", "a"), [[0, 0]]),
        edit(("agents", "a"), [[0, 1.5]]),
        edit(("agents", "a"), [[0, True]]),
        edit(("agents", "a"), [[0, 1], [0, 1]]),
        edit(("agents", ""), [[0, 1]]),
    ]


@pytest.mark.parametrize("state", _garbage_states())
def test_load_state_dict_rejects_garbage(state: object) -> None:
    ledger = _populated_ledger(1.0)
    before = ledger.state_dict()
    with pytest.raises(ValueError, match=r"state"):
        ledger.load_state_dict(state)  # type: ignore[arg-type]
    assert ledger.state_dict() == before


def test_agent_replayed_over_its_budget_loads_and_releases_nothing_more() -> None:
    ledger = LDPLedger(epsilon_budget_per_agent=1.0)
    ledger.record(report("a", 0.75, "laplace"))
    # A journaled release that may have left the agent:
    ledger.replay([report("a", 0.75, "laplace")])
    restored = LDPLedger.from_state_dict(json.loads(json.dumps(ledger.state_dict())))
    assert restored.epsilon_spent("a") == 1.5 and restored.spent == (1.5, 0.0)
    assert not restored.can_afford(report("a", 1e-9)) and restored.can_afford(report("b", 1.0))


def test_memory_stays_compact_for_100k_single_release_agents() -> None:
    num_agents = 100_000
    agent_ids = [f"agent-{i}" for i in range(num_agents)]  # owned by the caller, not counted
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        ledger = LDPLedger(epsilon_budget_per_agent=1.0)
        for agent_id in agent_ids:
            ledger.record(report(agent_id, 1.0, "prs"))
        retained = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert ledger.num_agents == num_agents and ledger.max_epsilon_spent == 1.0
    # A per-agent dict alone costs ~180 bytes; the compact layout needs only the id slot.
    assert retained / num_agents < 128, f"{retained / num_agents:.0f} bytes per agent"
    assert len(json.dumps(ledger.state_dict(), allow_nan=False)) < 40 * num_agents
