"""PATE moments accountant and ledger: the paper's numbers, dp-accounting, budget, round trip."""

from __future__ import annotations

import json
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld, rdp
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

from rllib_privacy.accounting import (
    PATELedger,
    advanced_composition_epsilon,
    data_dependent_log_moments,
    data_independent_log_moments,
    epsilon_from_log_moments,
    gnmax_epsilon,
    pate_epsilon,
    theorem3_max_q,
)
from rllib_privacy.errors import BudgetExhaustedError

GAMMA, DELTA = 0.05, 1e-5


def _two_class_votes(gap: int, num_queries: int = 100, teachers: int = 250) -> np.ndarray:
    top = (teachers + gap) // 2
    return np.tile([top, teachers - top], (num_queries, 1))


def test_paper_data_independent_epsilon_is_5_30_at_order_5() -> None:
    result = pate_epsilon(100, gamma=GAMMA, delta=DELTA)
    assert round(result.epsilon, 2) == 5.30 and result.order == 5
    assert not result.data_dependent and result.num_queries == 100
    assert float(result) == result.epsilon
    # The same from votes with data_dependent=False.
    from_votes = pate_epsilon(_two_class_votes(0), gamma=GAMMA, delta=DELTA, data_dependent=False)
    assert from_votes.epsilon == pytest.approx(result.epsilon, rel=1e-12)


def test_paper_advanced_composition_is_5_80_and_the_exact_theorem_is_larger() -> None:
    # 4Tγ² + 2γ·sqrt(2T ln 1/δ): the paper's first-order form of Dwork-Rothblum-Vadhan.
    assert round(advanced_composition_epsilon(100, gamma=GAMMA, delta=DELTA), 2) == 5.80
    exact = advanced_composition_epsilon(100, gamma=GAMMA, delta=DELTA, exact=True)
    assert round(exact, 2) == 5.85
    assert advanced_composition_epsilon(0, gamma=GAMMA, delta=DELTA) == 0.0


def test_data_dependent_never_exceeds_data_independent() -> None:
    rng = np.random.default_rng(0)
    for gamma in (0.01, 0.05, 0.2, 1.0):
        votes = rng.integers(0, 100, size=(500, 5))
        dependent = data_dependent_log_moments(votes, gamma=gamma, max_order=12)
        independent = data_independent_log_moments(gamma, max_order=12)
        assert dependent.shape == (500, 12)
        assert np.all(dependent <= independent + 1e-15) and np.all(dependent >= 0)
        assert (
            pate_epsilon(votes, gamma=gamma, delta=DELTA).epsilon
            <= pate_epsilon(len(votes), gamma=gamma, delta=DELTA).epsilon + 1e-12
        )


def test_data_dependent_epsilon_falls_as_the_vote_gap_grows() -> None:
    gaps = [0, 20, 40, 60, 80, 100, 150, 250]
    epsilons = [pate_epsilon(_two_class_votes(g), gamma=GAMMA, delta=DELTA).epsilon for g in gaps]
    assert all(b <= a + 1e-12 for a, b in zip(epsilons, epsilons[1:], strict=False))
    assert epsilons[0] == pytest.approx(5.3026, abs=1e-4)  # no gap: Theorem 3 does not apply
    assert epsilons[-1] < 0.5 * epsilons[0]


def test_epsilon_grows_with_the_number_of_queries() -> None:
    votes = _two_class_votes(60, num_queries=400)
    for data_dependent in (True, False):
        epsilons = [
            pate_epsilon(votes[:t], gamma=GAMMA, delta=DELTA, data_dependent=data_dependent).epsilon
            for t in (1, 10, 100, 200, 400)
        ]
        assert all(b > a for a, b in zip(epsilons, epsilons[1:], strict=False))


def test_theorem3_bound_by_hand_and_its_validity_condition() -> None:
    gamma, votes = 0.1, [40, 10]
    q = (2 + 3.0) / (4 * math.exp(3.0))
    threshold = theorem3_max_q(gamma)
    assert threshold == pytest.approx((math.exp(2 * gamma) - 1) / (math.exp(4 * gamma) - 1))
    assert q < threshold
    ratio = (1 - q) / (1 - math.exp(2 * gamma) * q)
    by_hand = [math.log((1 - q) * ratio**o + q * math.exp(2 * gamma * o)) for o in range(1, 9)]
    got = data_dependent_log_moments(votes, gamma=gamma)
    independent = data_independent_log_moments(gamma)
    np.testing.assert_allclose(got, np.minimum(by_hand, independent), rtol=1e-12)
    # A tie gives q = 1/2, above the threshold: only Theorem 2 applies.
    assert theorem3_max_q(gamma) < 0.5
    np.testing.assert_array_equal(data_dependent_log_moments([5, 5], gamma=gamma), independent)


def test_dp_accounting_anchor_numbers_bound_ours_from_below() -> None:
    """100 pure (2γ = 0.1)-DP releases: dp-accounting's Laplace RDP/PLD are tighter than ours."""
    ours = pate_epsilon(100, gamma=GAMMA, delta=DELTA).epsilon
    rdp_accountant = rdp.RdpAccountant()
    rdp_accountant.compose(dp_accounting.LaplaceDpEvent(1 / (2 * GAMMA)), 100)
    rdp_eps = rdp_accountant.get_epsilon(DELTA)
    pld_accountant = pld.PLDAccountant()
    pld_accountant.compose(dp_accounting.LaplaceDpEvent(1 / (2 * GAMMA)), 100)
    pld_eps = pld_accountant.get_epsilon(DELTA)
    assert round(rdp_eps, 2) == 4.53 and round(pld_eps, 2) == 4.22  # dp-accounting 0.6
    assert pld_eps < rdp_eps < ours < advanced_composition_epsilon(100, gamma=GAMMA, delta=DELTA)


@pytest.mark.parametrize("gap", [0, 80, 200])
def test_our_moments_through_dp_accountings_conversion(gap: int) -> None:
    """α(l) is RDP of order λ = l+1 with value α(l)/l; dp-accounting converts it to (ε, δ).

    Ours is the classical conversion ε = min_l (α(l) + ln 1/δ)/l; dp-accounting's
    improved one differs per order by exactly ln((λ−1)/λ) − ln(λ)/(λ−1) ≤ 0.
    """
    result = pate_epsilon(_two_class_votes(gap), gamma=GAMMA, delta=DELTA)
    orders = [o + 1 for o in range(1, len(result.log_moments) + 1)]
    rdp_values = [alpha / o for o, alpha in enumerate(result.log_moments, start=1)]
    for lam, value, alpha in zip(orders, rdp_values, result.log_moments, strict=True):
        theirs, _ = compute_epsilon([lam], [value], DELTA)
        own_at_order = (alpha + math.log(1 / DELTA)) / (lam - 1)
        expected_gap = math.log((lam - 1) / lam) - math.log(lam) / (lam - 1)
        assert theirs == pytest.approx(own_at_order + expected_gap, rel=1e-9)
    theirs_best, _ = compute_epsilon(orders, rdp_values, DELTA)
    assert theirs_best < result.epsilon


def test_ledger_budget_stops_queries_and_records_nothing_over_it() -> None:
    budget = pate_epsilon(100, gamma=GAMMA, delta=DELTA).epsilon
    ledger = PATELedger(gamma=GAMMA, delta=DELTA, epsilon_budget=budget)
    votes = _two_class_votes(0, num_queries=150)
    assert ledger.affordable(votes) == 100 and ledger.affordable(num_queries=150) == 100
    ledger.record(ledger.queries(votes[:60]))
    assert ledger.affordable(num_queries=41) == 40
    with pytest.raises(BudgetExhaustedError, match="only 40 of 41"):
        ledger.record(ledger.queries(votes[:41]))
    assert ledger.num_queries == 60
    ledger.record(ledger.queries(votes[:40]))
    assert ledger.affordable(num_queries=1) == 0 and ledger.affordable(votes) == 0
    assert ledger.epsilon_data_independent == pytest.approx(budget)


def test_ledger_query_cap_and_data_dependent_basis() -> None:
    capped = PATELedger(gamma=GAMMA, delta=DELTA, max_queries=3)
    assert capped.affordable(num_queries=10) == 3
    confident = _two_class_votes(250, num_queries=1000)
    budget = 3.0
    independent = PATELedger(gamma=GAMMA, delta=DELTA, epsilon_budget=budget)
    dependent = PATELedger(
        gamma=GAMMA, delta=DELTA, epsilon_budget=budget, budget_basis="data_dependent"
    )
    assert dependent.affordable(confident) > 5 * independent.affordable(confident)
    with pytest.raises(ValueError, match="needs the votes"):
        dependent.affordable(num_queries=1)


def test_ledger_state_dict_round_trips_through_json() -> None:
    rng = np.random.default_rng(5)
    ledger = PATELedger(gamma=0.1, delta=1e-6, max_order=10, epsilon_budget=50.0, max_queries=900)
    votes = rng.multinomial(10, [0.7, 0.2, 0.1], size=500)
    ledger.record(ledger.queries(votes))
    state = json.loads(json.dumps(ledger.state_dict()))
    restored = PATELedger.from_state_dict(state)
    assert restored == ledger and restored.num_queries == 500
    assert restored.epsilon == ledger.epsilon
    assert restored.epsilon_data_independent == ledger.epsilon_data_independent
    assert restored.affordable(votes) == ledger.affordable(votes) == 400
    # Identical histograms are stored once (a multinomial of 10 over 3 classes: <= 66).
    assert len(state["histograms"]) <= 66 and sum(state["counts"]) == 500
    unlimited = PATELedger(gamma=0.1, delta=1e-6)
    assert json.loads(json.dumps(unlimited.state_dict()))["epsilon_budget"] == "inf"


def test_ledger_rejects_bad_settings_and_states() -> None:
    with pytest.raises(ValueError, match="delta"):
        PATELedger(gamma=0.1, delta=1.0)
    with pytest.raises(ValueError, match="budget_basis"):
        PATELedger(gamma=0.1, delta=1e-5, budget_basis="both")
    ledger = PATELedger(gamma=0.1, delta=1e-5)
    good = ledger.state_dict()
    with pytest.raises(ValueError, match="keys"):
        ledger.load_state_dict({**good, "extra": 1})
    with pytest.raises(ValueError, match="equal lengths"):
        ledger.load_state_dict({**good, "histograms": [[1, 2]], "counts": []})
    with pytest.raises(ValueError, match="listed twice"):
        ledger.load_state_dict(
            {**good, "histograms": [[1, 2], [1, 2]], "answered": [True, True], "counts": [1, 1]}
        )
    with pytest.raises(ValueError, match=">= 0"):
        ledger.load_state_dict({**good, "histograms": [[-1, 2]], "answered": [True], "counts": [1]})
    with pytest.raises(ValueError, match="only confident_gnmax"):
        ledger.load_state_dict({**good, "histograms": [[1, 2]], "answered": [False], "counts": [1]})
    with pytest.raises(ValueError, match="votes_or_count"):
        pate_epsilon(-1, gamma=0.1, delta=1e-5)


@pytest.mark.parametrize(("sigma", "queries"), [(40.0, 100), (10.0, 1000), (100.0, 5000)])
def test_gnmax_epsilon_matches_dp_accountings_gaussian_rdp(sigma: float, queries: int) -> None:
    """GNMax (L2 sensitivity √2, noise σ) is the Gaussian mechanism with noise multiplier σ/√2."""
    ours = gnmax_epsilon(queries, sigma=sigma, delta=DELTA, max_order=32)
    orders = list(range(2, 34))
    accountant = rdp.RdpAccountant(orders=orders)
    accountant.compose(dp_accounting.GaussianDpEvent(sigma / math.sqrt(2)), queries)
    theirs, their_order = accountant.get_epsilon_and_optimal_order(DELTA)
    # Same RDP curve; dp-accounting's conversion is tighter by a known term per order.
    lam = ours.order + 1.0
    expected_gap = math.log((lam - 1) / lam) - math.log(lam) / (lam - 1)
    theirs_at_our_order, _ = compute_epsilon([lam], [queries * lam / sigma**2], DELTA)
    assert theirs_at_our_order == pytest.approx(ours.epsilon + expected_gap, rel=1e-9)
    assert theirs <= ours.epsilon
    assert gnmax_epsilon(queries, sigma=2 * sigma, delta=DELTA).epsilon < ours.epsilon


def test_lemma4_in_log_space_keeps_a_clear_majority_positive() -> None:
    """Votes [22, 2] at γ = 2: q ≈ 4.5e-17 (Σ terms − 1/2 rounds it to 0) and α(8) ≈ 3.5e-3."""
    from rllib_privacy.accounting.pate_moments import lemma4_log_q, lemma4_q

    by_hand = (2 + 40.0) / (4 * math.exp(40.0))
    assert float(lemma4_q([22, 2], gamma=2.0)) == pytest.approx(by_hand, rel=1e-12)
    assert float(lemma4_log_q([22, 2], gamma=2.0)) == pytest.approx(math.log(by_hand), rel=1e-12)
    moments = data_dependent_log_moments([22, 2], gamma=2.0)
    assert np.all(moments > 0)
    # The exact bound of Theorem 3, from the series ln(1 + S), S ≈ q·(l·(e^{2γ}−1) − 1 + e^{2γl}).
    q = by_hand
    series = [math.log1p(q * (o * math.expm1(4.0) - 1 + math.exp(4.0 * o))) for o in range(1, 9)]
    np.testing.assert_allclose(moments, series, rtol=1e-9)
    assert moments[7] == pytest.approx(3.5e-3, rel=0.01)


def test_ledger_charges_every_unanimous_query() -> None:
    """100,000 unanimous queries (q ≈ 1.8e-20 each) cost 100,000 times one query's moments."""
    votes = np.tile([24, 0], (100_000, 1))
    one = data_dependent_log_moments([24, 0], gamma=2.0)
    assert np.all(one > 0)
    ledger = PATELedger(gamma=2.0, delta=DELTA, budget_basis="data_dependent")
    ledger.record(ledger.queries(votes))
    result = ledger.result(data_dependent=True)
    np.testing.assert_allclose(result.log_moments, 100_000 * one, rtol=1e-9)
    assert result.log_moments[7] > 0.1  # ≈ 0.14: not free
    free = epsilon_from_log_moments(np.zeros(8), delta=DELTA)[0]
    assert ledger.spent[0] > free
    # Even where the bound underflows a float, each query is charged a positive amount.
    huge = data_dependent_log_moments([1000, 0], gamma=2.0)
    assert np.all(huge > 0) and np.all(huge < 1e-300)


def test_version_1_state_loads_as_lnmax() -> None:
    ledger = PATELedger(gamma=0.1, delta=1e-5, epsilon_budget=20.0)
    ledger.record(ledger.queries([[7, 1, 0], [7, 1, 0], [4, 4, 0]]))
    v1 = {
        "format": "rllib_privacy.PATELedger",
        "version": 1,
        "gamma": 0.1,
        "delta": 1e-5,
        "max_order": 8,
        "epsilon_budget": 20.0,
        "max_queries": None,
        "budget_basis": "data_independent",
        "histograms": [[7, 1, 0], [4, 4, 0]],
        "counts": [2, 1],
    }
    restored = PATELedger.from_state_dict(v1)
    assert restored == ledger and restored.state_dict()["version"] == 2
    assert restored.epsilon == ledger.epsilon


def _gnmax_ledger(**kwargs: object) -> PATELedger:
    settings = {"aggregator": "gnmax", "sigma": 40.0, "delta": DELTA, **kwargs}
    return PATELedger(**settings)  # type: ignore[arg-type]


def test_gnmax_ledger_composes_rdp_and_converts_like_dp_accounting() -> None:
    from rllib_privacy.accounting import gnmax_data_independent_rdp, gnmax_rdp, rdp_to_epsilon

    rng = np.random.default_rng(3)
    votes = rng.multinomial(250, [0.9, 0.05, 0.05], size=300)
    ledger = _gnmax_ledger()
    ledger.record(ledger.queries(votes))
    orders = ledger.orders
    expected = gnmax_rdp(votes, sigma=40.0, orders=orders).sum(axis=0)
    np.testing.assert_allclose(ledger.result().log_moments, expected, rtol=1e-9)
    assert ledger.epsilon == pytest.approx(rdp_to_epsilon(orders, expected, DELTA), rel=1e-12)
    # Data-independent: 300 Gaussian mechanisms of noise multiplier σ/√2 (dp_accounting).
    accountant = rdp.RdpAccountant(orders=list(orders))
    accountant.compose(dp_accounting.GaussianDpEvent(40.0 / math.sqrt(2.0)), 300)
    assert ledger.epsilon_data_independent == pytest.approx(accountant.get_epsilon(DELTA), rel=1e-9)
    np.testing.assert_allclose(
        ledger.result(data_dependent=False).log_moments,
        300 * gnmax_data_independent_rdp(40.0, orders),
    )
    assert ledger.epsilon < ledger.epsilon_data_independent


def test_gnmax_ledger_budget_and_state_round_trip() -> None:
    probe = _gnmax_ledger()
    probe.record(probe.queries(np.tile([200, 30, 20], (100, 1))))
    budget = probe.epsilon_data_independent
    ledger = _gnmax_ledger(epsilon_budget=budget)
    assert ledger.affordable(num_queries=150) == 100
    ledger.record(ledger.queries(np.tile([200, 30, 20], (60, 1))))
    with pytest.raises(BudgetExhaustedError):
        ledger.record(ledger.queries(np.tile([200, 30, 20], (41, 1))))
    assert ledger.num_queries == 60
    state = json.loads(json.dumps(ledger.state_dict()))
    restored = PATELedger.from_state_dict(state)
    assert restored == ledger and restored.epsilon == ledger.epsilon
    assert restored.affordable(num_queries=100) == 40


def test_confident_gnmax_ledger_charges_thresholds_and_answers() -> None:
    from rllib_privacy.accounting import confident_gnmax_rdp

    settings = {"threshold": 200.0, "sigma_threshold": 150.0}
    ledger = _gnmax_ledger(aggregator="confident_gnmax", **settings)
    votes = np.array([[240, 5, 5], [100, 90, 60], [240, 5, 5]])
    answered = np.array([True, False, True])
    ledger.record(ledger.queries(votes, answered=answered))
    assert (ledger.num_queries, ledger.num_answered) == (3, 2)
    expected = confident_gnmax_rdp(
        votes, answered, sigma=40.0, orders=ledger.orders, **settings
    )  # fmt: skip
    np.testing.assert_allclose(ledger.result().log_moments, expected, rtol=1e-12)
    independent = confident_gnmax_rdp(
        votes, answered, sigma=40.0, orders=ledger.orders, data_dependent=False, **settings,
    )  # fmt: skip
    np.testing.assert_allclose(ledger.result(data_dependent=False).log_moments, independent)
    restored = PATELedger.from_state_dict(json.loads(json.dumps(ledger.state_dict())))
    assert restored == ledger and restored.num_answered == 2
    assert restored.state_dict()["answered"] == [True, False]
    # The data-independent budget assumes every next query is answered (the worst case).
    worst = _gnmax_ledger(aggregator="confident_gnmax", **settings)
    worst.record(worst.queries(votes, answered=np.ones(3, dtype=bool)))
    capped = _gnmax_ledger(
        aggregator="confident_gnmax", epsilon_budget=worst.epsilon_data_independent, **settings
    )
    assert capped.affordable(num_queries=10) == 3


def test_ledger_settings_belong_to_their_aggregator() -> None:
    with pytest.raises(ValueError, match="sigma is required"):
        PATELedger(aggregator="gnmax", delta=DELTA)
    with pytest.raises(ValueError, match="gamma does not apply"):
        PATELedger(aggregator="gnmax", sigma=1.0, gamma=0.1, delta=DELTA)
    with pytest.raises(ValueError, match="threshold is required"):
        PATELedger(aggregator="confident_gnmax", sigma=1.0, sigma_threshold=1.0, delta=DELTA)
    with pytest.raises(ValueError, match="aggregator"):
        PATELedger(aggregator="rnmax", gamma=0.1, delta=DELTA)
    with pytest.raises(ValueError, match="answered applies"):
        PATELedger(gamma=0.1, delta=DELTA).queries([3, 1], answered=[True])
