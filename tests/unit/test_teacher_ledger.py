"""Tests for the kickstarting teacher's privacy ledger (rdp, basic and advanced composition)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.rdp import rdp_privacy_accountant

from rllib_privacy.accounting import (
    DEFAULT_ORDERS,
    DirichletAnswer,
    EpsilonDeltaRelease,
    TeacherLedger,
    compose_advanced,
    compose_basic,
    compose_dirichlet_rdp,
    dirichlet_epsilon,
    dirichlet_rdp,
    rdp_to_epsilon,
)
from rllib_privacy.errors import BudgetExhaustedError


def release(epsilon: float, delta: float, count: int) -> EpsilonDeltaRelease:
    """``count`` answers, each (ε, δ)-DP: what basic and advanced composition record."""
    return EpsilonDeltaRelease(epsilon=epsilon, delta=delta, count=count)


def roundtrip(ledger: TeacherLedger) -> TeacherLedger:
    encoded = json.dumps(ledger.state_dict(), allow_nan=False)  # strict JSON: no Infinity
    return TeacherLedger.from_state_dict(json.loads(encoded))


def dwork_roth_advanced(epsilon: float, delta: float, n: int, slack: float) -> tuple[float, float]:
    """Dwork & Roth Thm 3.20, homogeneous: (√(2n ln(1/δ'))ε + nε(e^ε − 1), nδ + δ')."""
    return (
        math.sqrt(2 * n * math.log(1 / slack)) * epsilon + n * epsilon * math.expm1(epsilon),
        n * delta + slack,
    )


def optimal_pure_composition(epsilons_counts: list[tuple[float, int]], delta: float) -> float:
    """Tight ε of composing pure ε_i-DP mechanisms at δ (dp-accounting PLD, independent)."""
    composed = None
    for epsilon, count in epsilons_counts:
        # A coarse grid is pessimistic (rounds privacy losses up): still a fair floor here.
        single = pld.from_privacy_parameters(
            pld_common.DifferentialPrivacyParameters(epsilon, 0.0),
            value_discretization_interval=1e-3,
        ).self_compose(count)
        composed = single if composed is None else composed.compose(single)
    assert composed is not None
    return float(composed.get_epsilon_for_delta(delta))


def test_empty_ledger() -> None:
    ledger = TeacherLedger(epsilon_budget=10.0)
    assert ledger.spent == (0.0, 0.0)
    assert ledger.epsilon_spent == 0.0 and ledger.delta_spent == 0.0
    assert ledger.releases == 0 and ledger.history == ()
    assert ledger.remaining[0] == 10.0 and ledger.delta_budget == 1.0
    assert ledger.composition == "basic"


def test_basic_composition_sums_counts() -> None:
    ledger = TeacherLedger(epsilon_budget=100.0)
    assert ledger.record(release(0.5, 1e-4, 10)) == pytest.approx(5.0)
    ledger.record(release(0.25, 1e-5, 20))
    assert ledger.epsilon_spent == pytest.approx(10.0)
    assert ledger.delta_spent == pytest.approx(10 * 1e-4 + 20 * 1e-5)
    assert ledger.releases == 30 and ledger.history[-1] == release(0.25, 1e-5, 20)
    assert ledger.remaining[0] == pytest.approx(90.0)
    assert ledger.remaining[1] == pytest.approx(1.0 - 1.2e-3)


def test_consecutive_identical_events_are_merged() -> None:
    ledger = TeacherLedger(epsilon_budget=math.inf)
    for _ in range(1000):
        ledger.record(release(0.01, 1e-6, 4))
    assert ledger.history == (release(0.01, 1e-6, 4000),)
    ledger.record(release(0.01, 1e-7, 1))  # same ε, another δ
    ledger.record(release(0.01, 1e-6, 1))  # not consecutive with the first
    assert [event.count for event in ledger.history] == [4000, 1, 1]
    assert ledger.releases == 4002
    assert ledger.epsilon_spent == pytest.approx(40.02)


def test_zero_count_records_nothing() -> None:
    ledger = TeacherLedger(epsilon_budget=1.0)
    assert ledger.record(release(100.0, 0.5, 0)) == 0.0
    assert ledger.history == () and ledger.can_afford(release(100.0, 0.5, 0))


def test_epsilon_budget_refusal_and_can_afford() -> None:
    ledger = TeacherLedger(epsilon_budget=1.0)
    for _ in range(3):
        assert ledger.can_afford(release(1 / 3, 0.0, 1))
        ledger.record(release(1 / 3, 0.0, 1))  # exactly at budget: allowed
    assert not ledger.can_afford(release(1e-3, 0.0, 1))
    with pytest.raises(BudgetExhaustedError, match="budget"):
        ledger.record(release(1e-3, 0.0, 1))
    assert ledger.releases == 3  # the refused release was not recorded
    assert ledger.remaining[0] == pytest.approx(0.0, abs=1e-12)
    assert ledger.can_afford(release(0.0, 0.0, 5))


def test_delta_budget_refusal() -> None:
    ledger = TeacherLedger(epsilon_budget=math.inf, delta_budget=1e-3)
    ledger.record(release(1.0, 1e-4, 10))
    assert not ledger.can_afford(release(1.0, 1e-4, 1))
    with pytest.raises(BudgetExhaustedError):
        ledger.record(release(1.0, 1e-4, 1))
    assert ledger.delta_spent == pytest.approx(1e-3)


def test_rollout_sized_affordability() -> None:
    # "Can I afford the next rollout of 200 states?"
    ledger = TeacherLedger(epsilon_budget=1000.0)
    ledger.record(release(4.0, 0.0, 200))
    assert ledger.can_afford(release(1.0, 0.0, 200))
    assert not ledger.can_afford(release(1.0, 0.0, 201))


def test_state_round_trip_through_json() -> None:
    ledger = TeacherLedger(
        epsilon_budget=math.inf, delta_budget=0.5, composition="advanced", advanced_delta_slack=1e-7
    )
    ledger.record(release(0.3, 1e-6, 100))
    ledger.record(release(math.inf, 0.0, 2))
    restored = roundtrip(ledger)
    assert restored == ledger and restored.history == ledger.history
    assert restored.spent == ledger.spent
    assert restored.epsilon_budget == math.inf and restored.advanced_delta_slack == 1e-7
    # load_state_dict continues the spent budget of a fresh ledger (no reset on restore).
    fresh = TeacherLedger(epsilon_budget=1.0)
    fresh.load_state_dict(json.loads(json.dumps(ledger.state_dict())))
    assert fresh.releases == 102 and fresh.composition == "advanced"
    assert "releases=102" in repr(fresh) and "advanced" in repr(fresh)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda s: s.pop("accountant"), "keys"),
        (lambda s: s.update(version=4), "version"),
        (lambda s: s["accountant"]["history"][0].update(count=0), "count"),
        (lambda s: s["accountant"]["history"][0].update(epsilon="big"), "epsilon"),
        (lambda s: s["accountant"]["history"][0].pop("delta"), "delta"),
        (lambda s: s["accountant"]["history"][0].update(type="Other"), "type"),
        (lambda s: s["accountant"].update(name="rdp"), "accountant"),
        (lambda s: s.update(composition="fancy"), "composition"),
        (lambda s: s.update(delta_budget=2.0), "delta_budget"),
    ],
)
def test_load_state_dict_rejects_bad_states(mutate: object, match: str) -> None:
    ledger = TeacherLedger(epsilon_budget=2.0)
    ledger.record(release(1.0, 0.0, 1))
    state = ledger.state_dict()
    mutate(state)  # type: ignore[operator]
    target = TeacherLedger(epsilon_budget=10.0)
    with pytest.raises(ValueError, match=match):
        target.load_state_dict(state)
    assert target.history == ()  # unchanged on failure


def test_state_over_its_budget_loads_and_affords_nothing() -> None:
    # Releases replayed from a journal may exceed the budget: the checkpoint must still load.
    ledger = TeacherLedger(epsilon_budget=2.0)
    ledger.replay([release(3.0, 0.0, 1)])
    restored = TeacherLedger.from_state_dict(json.loads(json.dumps(ledger.state_dict())))
    assert restored.spent == (3.0, 0.0) and restored.remaining == (0.0, 1.0)
    assert not restored.can_afford(release(1e-9, 0.0, 1))


@pytest.mark.parametrize(("epsilon", "n"), [(0.1, 1000), (0.5, 100), (0.05, 2000)])
def test_advanced_composition_between_optimal_and_dwork_roth(epsilon: float, n: int) -> None:
    slack, delta = 1e-6, 1e-7
    adv_eps, adv_delta = compose_advanced([(epsilon, delta, n)], delta_slack=slack)
    dr_eps, dr_delta = dwork_roth_advanced(epsilon, delta, n, slack)
    basic_eps, _ = compose_basic([(epsilon, delta, n)])
    assert adv_eps <= dr_eps and adv_eps < basic_eps
    assert adv_delta == pytest.approx(1 - (1 - slack) * (1 - delta) ** n, rel=1e-12)
    assert adv_delta <= dr_delta
    # Soundness: never below the tight composition of pure ε-DP (dp-accounting, δ' only).
    pure_eps, _ = compose_advanced([(epsilon, 0.0, n)], delta_slack=slack)
    assert pure_eps >= optimal_pure_composition([(epsilon, n)], slack)


def test_advanced_composition_heterogeneous() -> None:
    events = [(0.1, 0.0, 400), (0.3, 0.0, 50), (0.02, 0.0, 2000)]
    slack = 1e-6
    eps, delta = compose_advanced(events, delta_slack=slack)
    assert delta == pytest.approx(slack, rel=1e-12)
    tight = optimal_pure_composition([(e, c) for e, _, c in events], slack)
    assert tight <= eps < compose_basic(events)[0]
    # Splitting an event into two with the same ε changes nothing.
    split = [(0.1, 0.0, 150), (0.1, 0.0, 250), *events[1:]]
    assert compose_advanced(split, delta_slack=slack)[0] == pytest.approx(eps, rel=1e-12)


def test_ledger_reports_the_tighter_valid_pair() -> None:
    few = TeacherLedger(epsilon_budget=math.inf, composition="advanced")
    few.record(release(1.0, 0.0, 1))
    assert few.spent == (1.0, 0.0)  # advanced only adds δ' here: the basic pair is reported
    many = TeacherLedger(epsilon_budget=math.inf, composition="advanced", advanced_delta_slack=1e-6)
    many.record(release(0.1, 0.0, 1000))
    assert many.spent == compose_advanced([(0.1, 0.0, 1000)], delta_slack=1e-6)
    assert many.epsilon_spent < 100.0
    # Advanced lets a budget of ε = 30 hold releases that basic composition refuses.
    basic = TeacherLedger(epsilon_budget=30.0)
    advanced = TeacherLedger(epsilon_budget=30.0, composition="advanced")
    assert not basic.can_afford(release(0.1, 0.0, 1000))
    assert advanced.can_afford(release(0.1, 0.0, 1000))
    # ... unless its δ' does not fit the δ budget: then only the basic pair is valid.
    strict = TeacherLedger(
        epsilon_budget=30.0, delta_budget=1e-7, composition="advanced", advanced_delta_slack=1e-6
    )
    assert not strict.can_afford(release(0.1, 0.0, 1000))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon_budget": 0.0}, "epsilon_budget"),
        ({"epsilon_budget": -1.0}, "epsilon_budget"),
        ({"epsilon_budget": math.nan}, "epsilon_budget"),
        ({"epsilon_budget": 1.0, "delta_budget": 1.5}, "delta_budget"),
        ({"epsilon_budget": 1.0, "delta_budget": -0.1}, "delta_budget"),
        ({"epsilon_budget": 1.0, "composition": "fancy"}, "composition"),
        # rdp converts at δ_target = delta_budget: δ = 1 (the class default) means nothing.
        ({"epsilon_budget": 1.0, "composition": "rdp"}, "delta_budget.*rdp"),
        ({"epsilon_budget": 1.0, "advanced_delta_slack": 0.0}, "advanced_delta_slack"),
        ({"epsilon_budget": 1.0, "advanced_delta_slack": 1.0}, "advanced_delta_slack"),
    ],
)
def test_constructor_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TeacherLedger(**kwargs)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("k", 0.0),
        ("k", -5.0),
        ("epsilon", -0.1),
        ("epsilon", math.nan),
        ("delta", 1.5),
        ("delta", -1e-9),
        ("count", -1),
        ("count", 1.5),
        ("count", True),
    ],
)
def test_events_reject_bad_arguments(key: str, value: object) -> None:
    # An event validates itself when it is built, so no ledger ever sees a malformed one.
    if key == "k":
        with pytest.raises(ValueError, match=key):
            DirichletAnswer(**{**MECHANISM, "k": value, "count": 1})  # type: ignore[arg-type]
        return
    fields = {"epsilon": 0.1, "delta": 1e-6, "count": 1, key: value}
    with pytest.raises(ValueError, match=key):
        EpsilonDeltaRelease(**fields)  # type: ignore[arg-type]


# ---- rdp composition ------------------------------------------------------------------

MECHANISM = {"eta": 0.05, "radius": 0.1, "num_actions": 2}


def answer(k: float, count: int, **mechanism: object) -> DirichletAnswer:
    """``count`` Dirichlet answers at k (default mechanism ``MECHANISM``)."""
    return DirichletAnswer(k=k, count=count, **{**MECHANISM, **mechanism})  # type: ignore[arg-type]


def rdp_ledger(epsilon_budget: float = math.inf, **kwargs: object) -> TeacherLedger:
    return TeacherLedger(
        epsilon_budget=epsilon_budget, delta_budget=1e-5, composition="rdp", **kwargs
    )


def test_rdp_epsilon_of_n_identical_releases_is_the_conversion_of_n_curves() -> None:
    ledger = rdp_ledger()
    one = dirichlet_rdp(DEFAULT_ORDERS, k=5.0, **MECHANISM)
    for n in (1, 10, 1000):
        ledger.record(answer(5.0, n - ledger.releases))
        expected = rdp_to_epsilon(DEFAULT_ORDERS, n * one, 1e-5)
        assert ledger.spent == (pytest.approx(expected, rel=1e-12), 1e-5)
        assert np.allclose(ledger.rdp_curve(), n * one, rtol=1e-12, equal_nan=False)
    assert ledger.history == (answer(5.0, 1000),)
    assert ledger.history[-1].k == 5.0 and ledger.releases == 1000
    # Without the per-release δ and the ln(1/τ) term, far below basic composition of
    # Theorem 1's ε for the same releases (its L·b is the radius here).
    theorem_1 = dirichlet_epsilon(
        k=5.0, eta=0.05, tau=1e-3, lipschitz=0.1, adjacency=1.0, num_actions=2
    )
    assert ledger.epsilon_spent < 1000 * theorem_1 / 5


def test_rdp_epsilon_matches_dp_accountings_conversion_of_the_same_curve() -> None:
    # dp_accounting's conversion refuses orders <= 1.01; above them the two must agree.
    orders = [a for a in DEFAULT_ORDERS if a > 1.01]
    ledger = rdp_ledger(orders=orders)
    ledger.record(answer(5.0, 300))
    ledger.record(answer(4.5, 200))
    curve = ledger.rdp_curve()
    finite = np.isfinite(curve)
    theirs, _ = rdp_privacy_accountant.compute_epsilon(
        list(np.asarray(orders)[finite]), list(curve[finite]), 1e-5
    )
    assert ledger.epsilon_spent == pytest.approx(theirs, rel=1e-12)


def test_rdp_mixed_k_is_the_composed_curve() -> None:
    ledger = rdp_ledger()
    ks = {5.0: 40, 4.5: 30, 4.05: 20}
    for k, count in ks.items():
        ledger.record(answer(k, count // 2))
    for k, count in ks.items():  # a k seen before adds to its count, not a new entry
        ledger.record(answer(k, count - count // 2))
    assert [event.count for event in ledger.history] == list(ks.values())
    composed = compose_dirichlet_rdp(DEFAULT_ORDERS, ks, **MECHANISM)
    assert ledger.epsilon_spent == pytest.approx(
        rdp_to_epsilon(DEFAULT_ORDERS, composed, 1e-5), rel=1e-12
    )
    # Another mechanism (a different radius) is a separate entry and costs more.
    before = ledger.epsilon_spent
    ledger.record(answer(5.0, 1, radius=0.2))
    assert len(ledger.history) == 4 and ledger.epsilon_spent > before


def test_rdp_epsilon_is_monotone_in_releases() -> None:
    ledger = rdp_ledger()
    previous = 0.0
    for step in range(30):
        ledger.record(answer(5.0 * 0.9**step, 50))
        assert ledger.epsilon_spent > previous
        previous = ledger.epsilon_spent


def test_rdp_budget_stops_releases_and_records_nothing_on_refusal() -> None:
    probe = rdp_ledger()
    probe.record(answer(5.0, 100))
    ledger = rdp_ledger(epsilon_budget=probe.epsilon_spent)
    assert ledger.can_afford(answer(5.0, 100))
    assert not ledger.can_afford(answer(5.0, 101))
    ledger.record(answer(5.0, 100))
    state = ledger.state_dict()
    with pytest.raises(BudgetExhaustedError, match="rdp composition"):
        ledger.record(answer(0.5, 1))
    assert ledger.state_dict() == state and ledger.releases == 100
    assert ledger.can_afford(answer(0.5, 0))


def test_rdp_state_round_trip_neither_repays_nor_forgets() -> None:
    ledger = rdp_ledger(epsilon_budget=500.0)
    ledger.record(answer(5.0, 70))
    ledger.record(answer(4.5, 30, eta=0.02, radius=0.05, num_actions=3))
    restored = roundtrip(ledger)
    assert restored == ledger and restored.spent == ledger.spent
    assert restored.history == ledger.history and restored.orders == ledger.orders
    ledger.record(answer(4.5, 10))
    restored.record(answer(4.5, 10))
    assert restored.spent == ledger.spent and restored.releases == 110


def test_each_composition_records_its_own_kind_of_event() -> None:
    # RDP composes the mechanism itself; basic and advanced compose per-answer (ε, δ) pairs.
    ledger = rdp_ledger()
    with pytest.raises(ValueError, match="DirichletAnswer"):
        ledger.record(release(1.0, 1e-6, 1))
    with pytest.raises(ValueError, match="eta"):
        answer(5.0, 1, eta=0.6)  # η >= 1/m
    with pytest.raises(ValueError, match="k"):
        answer(math.inf, 1)
    basic = TeacherLedger(epsilon_budget=1.0)
    with pytest.raises(ValueError, match="EpsilonDeltaRelease"):
        basic.record(answer(5.0, 1))
    assert ledger.releases == 0 and basic.releases == 0


def test_version_1_states_still_load() -> None:
    old = {
        "format": "rllib_privacy.TeacherLedger",
        "version": 1,
        "epsilon_budget": "inf",
        "delta_budget": 0.05,
        "composition": "basic",
        "advanced_delta_slack": 1e-6,
        "events": [[5.0, 3.5, 1e-4, 10]],
    }
    ledger = TeacherLedger.from_state_dict(old)
    assert ledger.spent == pytest.approx((35.0, 1e-3)) and ledger.composition == "basic"
    assert ledger.state_dict()["version"] == 3 and ledger.history == (release(3.5, 1e-4, 10),)


def _version_2_rdp_state() -> dict:
    return {
        "format": "rllib_privacy.TeacherLedger",
        "version": 2,
        "epsilon_budget": "inf",
        "delta_budget": 1e-5,
        "composition": "rdp",
        "advanced_delta_slack": 1e-6,
        "events": [],
        "orders": list(DEFAULT_ORDERS),
        "rdp_releases": [[5.0, 0.05, 0.1, 2, 3]],
    }


def test_version_2_states_still_load() -> None:
    ledger = TeacherLedger.from_state_dict(_version_2_rdp_state())
    assert ledger.history == (answer(5.0, 3),)
    assert ledger.epsilon_spent == rdp_to_epsilon(
        DEFAULT_ORDERS, 3 * dirichlet_rdp(DEFAULT_ORDERS, k=5.0, **MECHANISM), 1e-5
    )


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda s: s.update(rdp_releases=[[5.0, 0.05, 0.1, 2]]), "rdp_releases"),
        (lambda s: s.update(rdp_releases=[[5.0, 0.05, 0.1, 2, 0]]), "count"),
        (lambda s: s.update(rdp_releases=[[5.0, 0.7, 0.1, 2, 1]]), "eta"),
        (lambda s: s.update(rdp_releases=[[5.0, 0.05, 0.1, 2, 1]] * 2), "twice"),
        (lambda s: s.update(events=[[5.0, 1.0, 0.0, 1]]), "composes"),
        (lambda s: s.update(composition="basic"), "composes"),
        (lambda s: s.update(orders=[0.5]), "orders"),
    ],
)
def test_load_state_dict_rejects_bad_version_2_states(mutate: object, match: str) -> None:
    state = _version_2_rdp_state()
    mutate(state)  # type: ignore[operator]
    target = rdp_ledger()
    with pytest.raises(ValueError, match=match):
        target.load_state_dict(state)
    assert target.history == ()


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda s: s["accountant"]["history"][0].update(count=0), "count"),
        (lambda s: s["accountant"]["history"][0].update(eta=0.7), "eta"),
        (lambda s: s["accountant"]["history"].append(s["accountant"]["history"][0]), "twice"),
        (lambda s: s.update(composition="basic"), "accountant"),
        (lambda s: s.update(orders=[0.5]), "orders"),
    ],
)
def test_load_state_dict_rejects_bad_rdp_states(mutate: object, match: str) -> None:
    ledger = rdp_ledger()
    ledger.record(answer(5.0, 3))
    state = json.loads(json.dumps(ledger.state_dict()))
    mutate(state)  # type: ignore[operator]
    target = rdp_ledger()
    with pytest.raises(ValueError, match=match):
        target.load_state_dict(state)
    assert target.history == ()
