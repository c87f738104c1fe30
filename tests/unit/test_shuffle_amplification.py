"""Privacy amplification by shuffling: FMT21 and the stronger clone; no Ray.

Fixtures, written by benchmarks/shuffle_fixtures.py from the authors' code (see its
docstring for each field): tests/fixtures/shuffle_amplification.json (Feldman, McMillan &
Talwar's FOCS 2021 reference code) and tests/fixtures/shuffle_stronger_clone.json (Wang et
al.'s VLDB 2024 code, variation-ratio and stronger-clone bounds).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from rllib_privacy.accounting import shuffle_epsilon, shuffle_epsilon_closed_form
from rllib_privacy.accounting.shuffle import _numerical
from rllib_privacy.accounting.shuffle_clones import DeltaBound, hockey_sticks

FIXTURES = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "shuffle_amplification.json").read_text(
        "utf-8"
    )
)
POINTS = FIXTURES["points"]


def point_id(point: dict) -> str:
    return f"eps0={point['epsilon0']}-n={point['num_reports']}-delta={point['delta']:.0e}"


@pytest.mark.parametrize("point", POINTS, ids=point_id)
def test_matches_reference_fixtures(point: dict) -> None:
    eps0, n, delta = point["epsilon0"], point["num_reports"], point["delta"]
    ours = shuffle_epsilon(eps0, n, delta, analysis="fmt21")
    assert isinstance(ours, float)
    # δ(ε) summed exactly over every clone count with the reference's own `onestep`; ours
    # differs only by the tail of C charged in full (<= 1e-6·δ) and the binary search.
    assert ours == pytest.approx(point["exact"], rel=1e-6)
    # Between the reference's lower and upper bounds of the same analysis.
    assert point["reference_lower"] * (1 - 1e-9) <= ours <= point["reference_upper"] * (1 + 1e-9)
    # With the reference's block layout, step and stopping rule we reproduce the reference
    # (its deltaq typo fixed; see shuffle_epsilon's docstring).
    as_reference = _numerical(eps0, n, delta, point["num_iterations"], point["step"], True, "fmt21")
    assert as_reference == pytest.approx(point["reference_upper_patched"], rel=1e-6)
    # The reference's closed form is a looser variant of the paper's.
    assert shuffle_epsilon_closed_form(eps0, n, delta) <= point["reference_closed_form"] + 1e-12


def test_fixture_grid_is_the_intended_one() -> None:
    assert len(POINTS) == 30
    assert {p["epsilon0"] for p in POINTS} == {0.5, 1.0, 2.0, 4.0, 8.0}
    assert {p["num_reports"] for p in POINTS} == {100, 1000, 10000}
    assert {p["delta"] for p in POINTS} == {1e-6, 1e-8}
    assert FIXTURES["header"]["command"].startswith("python benchmarks/shuffle_fixtures.py")


def test_hockey_sticks_match_brute_force() -> None:
    eps0 = 1.3
    alpha = math.exp(eps0) / (1 + math.exp(eps0))
    c_values = np.arange(0, 41)
    for epsilon in (0.0, 0.05, 0.4, 1.2):
        d_pq, d_qp = hockey_sticks(c_values.astype(float), epsilon, eps0)
        for c, ours_pq, ours_qp in zip(c_values, d_pq, d_qp, strict=True):
            a = np.append(stats.binom.pmf(np.arange(c + 1), c, 0.5), 0.0)  # Bin(c, ½) on 0..c+1
            a_plus_1 = np.roll(a, 1)
            p = alpha * a + (1 - alpha) * a_plus_1
            q = (1 - alpha) * a + alpha * a_plus_1
            expected_pq = np.maximum(p - math.exp(epsilon) * q, 0).sum()
            expected_qp = np.maximum(q - math.exp(epsilon) * p, 0).sum()
            assert ours_pq == pytest.approx(expected_pq, rel=1e-9, abs=1e-15)
            assert ours_qp == pytest.approx(expected_qp, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("eps0", "n"), [(0.7, 40), (2.0, 200), (1.0, 3000)])
def test_delta_bound_is_the_exact_mixture_with_step_one(eps0: float, n: int) -> None:
    delta = 1e-6
    bound = DeltaBound(eps0, n, 1, delta, False, math.exp(-eps0))
    c = np.arange(n, dtype=float)
    weights = stats.binom.pmf(c, n - 1, math.exp(-eps0))
    for epsilon in (0.01, 0.1, 0.5 * eps0):
        d_pq, d_qp = hockey_sticks(c, epsilon, eps0)
        exact = max(float(weights @ d_pq), float(weights @ d_qp))
        assert exact <= bound(epsilon) <= exact + 1e-6 * delta + 1e-15


def test_sanity_large_batch() -> None:
    # Reference code, step 100: 0.0534; exact: 0.0530 (fixtures).
    eps = shuffle_epsilon(1.0, 10_000, 1e-6, analysis="fmt21")
    assert 0.05 < eps < 0.06
    assert shuffle_epsilon(1.0, 100_000, 1e-6, analysis="fmt21") < 0.02
    # The README's example point (n = 1e5, ε₀ = 4, δ = 1e-6): the reference prints
    # [0.1675, 0.1728] for its lower/upper bounds with step 100 and 10 iterations.
    assert 0.16 < shuffle_epsilon(4.0, 100_000, 1e-6, analysis="fmt21") < 0.1728


GRID = [(e0, n, d) for e0 in (0.1, 0.5, 1.0, 3.0, 8.0) for n in (2, 50, 5000) for d in (1e-3, 1e-9)]


@pytest.mark.parametrize(("eps0", "n", "delta"), GRID)
def test_never_above_closed_form_or_eps0(eps0: float, n: int, delta: float) -> None:
    closed = shuffle_epsilon_closed_form(eps0, n, delta)
    assert closed <= eps0
    assert 0.0 < shuffle_epsilon(eps0, n, delta) <= closed


def test_closed_form_formula_and_regime() -> None:
    eps0, n, delta = 0.5, 10_000, 1e-6
    factor = (math.exp(eps0) - 1) / (math.exp(eps0) + 1)
    slack = 8 * math.sqrt(math.exp(eps0) * math.log(4 / delta)) / math.sqrt(n)
    slack += 8 * math.exp(eps0) / n
    assert shuffle_epsilon_closed_form(eps0, n, delta) == pytest.approx(
        math.log(1 + factor * slack), rel=1e-12
    )
    # Regime: ε₀ <= log(n / (16 log(2/δ))); outside it, ε₀ (no amplification claimed).
    edge = math.log(n / (16 * math.log(2 / delta)))
    assert shuffle_epsilon_closed_form(edge * (1 - 1e-9), n, delta) < edge
    assert shuffle_epsilon_closed_form(edge * (1 + 1e-9), n, delta) == edge * (1 + 1e-9)
    assert shuffle_epsilon_closed_form(1.0, 100, 1e-6) == 1.0


def test_monotone_non_increasing_in_n() -> None:
    ns = [2, 3, 5, 10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000]
    for eps0 in (0.5, 2.0):
        values = [shuffle_epsilon(eps0, n, 1e-6) for n in ns]
        assert all(b <= a + 1e-12 for a, b in zip(values, values[1:], strict=False)), values
        assert values[-1] < values[0] / 10


def test_monotone_non_decreasing_in_eps0() -> None:
    eps0s = [0.05, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0]
    values = [shuffle_epsilon(e0, 10_000, 1e-6) for e0 in eps0s]
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:], strict=False)), values


def test_decreasing_in_delta() -> None:
    deltas = [1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 0.1]
    values = [shuffle_epsilon(1.0, 10_000, d) for d in deltas]
    assert all(b < a for a, b in zip(values, values[1:], strict=False)), values


def test_coarser_step_is_looser() -> None:
    for eps0, n in ((1.0, 10_000), (4.0, 10_000), (0.5, 1000)):
        fine = shuffle_epsilon(eps0, n, 1e-6)
        assert fine <= shuffle_epsilon(eps0, n, 1e-6, step=10) + 1e-12
        assert fine <= shuffle_epsilon(eps0, n, 1e-6, step=100) + 1e-12


def test_single_report_and_no_clones() -> None:
    assert shuffle_epsilon(1.5, 1, 1e-6) == 1.5
    assert shuffle_epsilon_closed_form(1.5, 1, 1e-6) == 1.5
    assert shuffle_epsilon(800.0, 10**6, 1e-6) == 800.0


def test_step_at_least_n_is_still_an_upper_bound() -> None:
    # The reference code returns ε ≈ 0 here (it visits no block when n <= step).
    exact = next(
        p["exact"]
        for p in POINTS
        if (p["epsilon0"], p["num_reports"], p["delta"]) == (1.0, 100, 1e-6)
    )
    assert shuffle_epsilon(1.0, 100, 1e-6, step=100, analysis="fmt21") >= exact
    assert shuffle_epsilon(1.0, 100, 1e-6, step=1000, analysis="fmt21") >= exact


BAD = [
    ({"epsilon0": 0.0}, "epsilon0"),
    ({"epsilon0": -1.0}, "epsilon0"),
    ({"epsilon0": math.inf}, "epsilon0"),
    ({"epsilon0": math.nan}, "epsilon0"),
    ({"epsilon0": "1"}, "epsilon0"),
    ({"epsilon0": True}, "epsilon0"),
    ({"num_reports": 0}, "num_reports"),
    ({"num_reports": -5}, "num_reports"),
    ({"num_reports": 10.0}, "num_reports"),
    ({"num_reports": True}, "num_reports"),
    ({"num_reports": 2**60}, "num_reports"),
    ({"delta": 0.0}, "delta"),
    ({"delta": 1.0}, "delta"),
    ({"delta": -1e-6}, "delta"),
    ({"delta": math.nan}, "delta"),
    ({"delta": None}, "delta"),
]


@pytest.mark.parametrize(("override", "name"), BAD)
@pytest.mark.parametrize("function", [shuffle_epsilon, shuffle_epsilon_closed_form])
def test_bad_inputs_name_the_argument(function, override: dict, name: str) -> None:
    kwargs = {"epsilon0": 1.0, "num_reports": 1000, "delta": 1e-6, **override}
    with pytest.raises(ValueError, match=name):
        function(**kwargs)


@pytest.mark.parametrize(
    ("override", "name"),
    [({"num_iterations": 0}, "num_iterations"), ({"step": 0}, "step"), ({"step": 1.5}, "step")],
)
def test_bad_search_settings(override: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        shuffle_epsilon(1.0, 1000, 1e-6, **override)
