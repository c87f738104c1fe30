"""PATE 2018 accounting (GNMax, Confident-GNMax, smooth sensitivity) against the authors' code.

Fixtures: tests/fixtures/pate_2018.json, written by benchmarks/pate_2018_fixtures.py from the
reference functions of tensorflow/privacy research/pate_2018 (core.py, smooth_sensitivity.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent
from dp_accounting.rdp import RdpAccountant

from rllib_privacy.accounting import rdp_to_epsilon
from rllib_privacy.accounting.gnmax import _log_q0 as log_q0
from rllib_privacy.accounting.gnmax import (
    confident_gnmax_rdp,
    gnmax_data_independent_rdp,
    gnmax_local_sensitivities,
    gnmax_log_q,
    gnmax_rdp,
    gnss_rdp,
    release_data_dependent_epsilon,
    smooth_sensitivity,
    threshold_data_independent_rdp,
    threshold_local_sensitivities,
    threshold_log_pr_answered,
    threshold_rdp,
)
from rllib_privacy.accounting.pate_moments import data_dependent_log_moments, lemma4_q

FIXTURES = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "pate_2018.json").read_text()
)
ORDERS = np.array(FIXTURES["header"]["orders"])
SS_ORDER = FIXTURES["header"]["ss_order"]
SETTINGS = FIXTURES["settings"]
CASES = [(s, h) for s in SETTINGS for h in s["histograms"]]
IDS = [f"m{s['num_classes']}-n{s['num_teachers']}-{i}" for i, (s, _) in enumerate(CASES)]


@pytest.mark.parametrize(("setting", "row"), CASES, ids=IDS)
def test_gnmax_matches_reference(setting: dict, row: dict) -> None:
    sigma = setting["sigma"]
    assert float(gnmax_log_q(row["votes"], sigma=sigma)) == pytest.approx(row["log_q"], rel=1e-9)
    ours = gnmax_rdp(row["votes"], sigma=sigma, orders=ORDERS)
    np.testing.assert_allclose(ours, row["rdp"], rtol=1e-9, atol=1e-300)
    assert np.all(ours <= gnmax_data_independent_rdp(sigma, ORDERS) * (1 + 1e-12))


@pytest.mark.parametrize(("setting", "row"), CASES, ids=IDS)
def test_threshold_matches_reference(setting: dict, row: dict) -> None:
    kwargs = {"threshold": setting["threshold"], "sigma": setting["sigma_threshold"]}
    assert float(threshold_log_pr_answered(row["votes"], **kwargs)) == pytest.approx(
        row["log_pr_answered"], rel=1e-9
    )
    np.testing.assert_allclose(
        threshold_rdp(row["votes"], orders=ORDERS, **kwargs), row["threshold_rdp"], rtol=1e-9
    )


@pytest.mark.parametrize(("setting", "row"), CASES, ids=IDS)
def test_local_sensitivities_match_reference(setting: dict, row: dict) -> None:
    n = setting["num_teachers"]
    ls = gnmax_local_sensitivities(row["votes"], num_teachers=n, sigma=setting["sigma"],
                                   order=SS_ORDER)  # fmt: skip
    np.testing.assert_allclose(ls, row["ls_gnmax"], rtol=1e-7, atol=1e-15)
    ls_t = threshold_local_sensitivities(
        row["votes"], num_teachers=n, threshold=setting["threshold"],
        sigma=setting["sigma_threshold"], order=SS_ORDER,
    )  # fmt: skip
    np.testing.assert_allclose(ls_t, row["ls_threshold"], rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize(("setting", "row"), CASES, ids=IDS)
def test_lemma4_matches_reference_laplace(setting: dict, row: dict) -> None:
    # PATE 2017's Lemma 4 and Theorem 3 as the 2018 code computes them (log space).
    gamma = setting["gamma"]
    q = float(lemma4_q(row["votes"], gamma=gamma))
    m = setting["num_classes"]
    expected_q = math.exp(row["laplace_log_q"])
    assert q == pytest.approx(expected_q, rel=1e-9) or (q == 1.0 and expected_q == 1 - 1 / m)
    # Our moments alpha(l) are the reference's RDP at order l + 1 times l.
    integer_orders = [i for i, a in enumerate(ORDERS) if a == int(a) and a - 1 <= 8]
    moments = data_dependent_log_moments(row["votes"], gamma=gamma, max_order=8)
    for i in integer_orders:
        lam = ORDERS[i]
        reference = row["laplace_rdp"][i] * (lam - 1)
        # Ours is min(Theorem 2, Theorem 3); the reference also caps the RDP at ε = 2γ.
        assert moments[int(lam) - 2] >= reference * (1 - 1e-9)
        if row["laplace_rdp"][i] < 2 * gamma * (1 - 1e-9):
            assert moments[int(lam) - 2] == pytest.approx(reference, rel=1e-7, abs=1e-300)


@pytest.mark.parametrize("setting", SETTINGS, ids=[f"m{s['num_classes']}" for s in SETTINGS])
def test_setting_level_values(setting: dict) -> None:
    sigma, sigma1 = setting["sigma"], setting["sigma_threshold"]
    np.testing.assert_allclose(
        gnmax_data_independent_rdp(sigma, ORDERS), setting["data_independent_rdp"], rtol=1e-12
    )
    np.testing.assert_allclose(
        threshold_data_independent_rdp(sigma1, ORDERS),
        setting["threshold_data_independent_rdp"],
        rtol=1e-12,
    )
    assert log_q0(sigma, SS_ORDER) == pytest.approx(setting["log_q0"], rel=1e-8)
    assert gnss_rdp(setting["gnss_beta"], 20.0, SS_ORDER) == pytest.approx(
        setting["gnss_rdp"], rel=1e-12
    )
    votes = [h["votes"] for h in setting["histograms"]]
    total = gnmax_rdp(votes, sigma=sigma, orders=ORDERS).sum(axis=0)
    standard = rdp_to_epsilon(ORDERS, total, FIXTURES["header"]["delta"], conversion="standard")
    assert standard == pytest.approx(setting["summed_epsilon"], rel=1e-9)


def test_majority_22_2_has_positive_q_and_rdp() -> None:
    log_q = float(gnmax_log_q([22, 2], sigma=2.0))
    assert -math.inf < log_q < math.log(1e-10)
    rdp = gnmax_rdp([22, 2], sigma=2.0, orders=[2.0, 8.0])
    assert np.all(rdp > 0) and np.all(rdp < np.array([2.0, 8.0]) / 4.0)


def test_data_independent_matches_dp_accounting() -> None:
    # 100 GNMax answers at sigma: L2 sensitivity sqrt(2), i.e. Gaussian noise multiplier
    # sigma/sqrt(2); dp_accounting's RDP accountant uses the same conversion.
    sigma, count, delta = 40.0, 100, 1e-5
    orders = np.array(RdpAccountant().orders if hasattr(RdpAccountant(), "orders") else ORDERS)
    accountant = RdpAccountant(orders=list(orders))
    accountant.compose(GaussianDpEvent(sigma / math.sqrt(2.0)), count)
    ours = rdp_to_epsilon(orders, count * gnmax_data_independent_rdp(sigma, orders), delta)
    assert ours == pytest.approx(accountant.get_epsilon(delta), rel=1e-9)


def test_confident_gnmax_composition() -> None:
    votes = np.array([[240, 5, 5], [100, 90, 60], [10, 0, 0]])
    answered = np.array([True, False, True])
    orders = [2.0, 10.0]
    kwargs = {"threshold": 150.0, "sigma_threshold": 100.0, "sigma": 40.0, "orders": orders}
    total = confident_gnmax_rdp(votes, answered, **kwargs)
    expected = threshold_rdp(votes, threshold=150.0, sigma=100.0, orders=orders).sum(0) + (
        gnmax_rdp(votes[answered], sigma=40.0, orders=orders).sum(0)
    )
    np.testing.assert_allclose(total, expected)
    independent = confident_gnmax_rdp(votes, answered, data_dependent=False, **kwargs)
    np.testing.assert_allclose(
        independent, 3 * np.array(orders) / (2 * 100.0**2) + 2 * np.array(orders) / 40.0**2
    )
    assert np.all(total <= independent)


def test_smooth_sensitivity_release() -> None:
    setting = SETTINGS[0]
    votes = np.array([h["votes"] for h in setting["histograms"]])
    sigma, n = setting["sigma"], setting["num_teachers"]
    release = release_data_dependent_epsilon(
        votes, sigma=sigma, order=SS_ORDER, delta=1e-5, num_teachers=n,
        rng=np.random.default_rng(0),
    )  # fmt: skip
    ls = np.sum([h["ls_gnmax"] for h in setting["histograms"]], axis=0)
    assert release.smooth_sensitivity == pytest.approx(
        smooth_sensitivity(0.4 / SS_ORDER, ls), rel=1e-7
    )
    assert release.release_cost == pytest.approx(setting["gnss_rdp"], rel=1e-12)
    dd = gnmax_rdp(votes, sigma=sigma, orders=[SS_ORDER]).sum()
    conversion = math.log1p(-1 / SS_ORDER) - (math.log(1e-5) + math.log(SS_ORDER)) / (SS_ORDER - 1)
    assert conversion < math.log(1e5) / (SS_ORDER - 1)
    center = dd + release.release_cost + conversion
    z = np.random.default_rng(0).standard_normal()
    assert release.epsilon == pytest.approx(center + release.noise_std * z, rel=1e-12)
    assert release.noise_std == pytest.approx(release.smooth_sensitivity * 20.0)
    assert dd < float(gnmax_data_independent_rdp(sigma, [SS_ORDER])[0]) * len(votes)


def test_gnss_order_range() -> None:
    with pytest.raises(ValueError, match="order must be in"):
        gnss_rdp(0.1, 10.0, 5.0)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="sigma"):
        gnmax_rdp([3, 1], sigma=0.0)
    with pytest.raises(ValueError, match="orders"):
        gnmax_rdp([3, 1], sigma=1.0, orders=[1.0])
    with pytest.raises(ValueError, match="votes"):
        gnmax_rdp([3, -1], sigma=1.0)
    with pytest.raises(ValueError, match="threshold"):
        threshold_rdp([3, 1], threshold=math.nan, sigma=1.0)
