"""The default shuffling bound (stronger clone), its lower limit, composition and inverse.

Fixtures: tests/fixtures/shuffle_stronger_clone.json, written by
benchmarks/shuffle_fixtures.py (``--kind unified``) from Wang et al.'s code for
"Privacy Amplification via Shuffling: Unified, Simplified, and Tightened" (VLDB 2024),
which evaluates both their variation-ratio bound and Feldman, McMillan & Talwar's stronger
clone (SODA 2023). The binary randomized response lower limit and the exact two-round
composition are computed here independently of the package (other formulas, other code).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

from rllib_privacy.accounting import (
    binary_rr_shuffle_epsilon,
    local_epsilon_for_central,
    shuffle_epsilon,
    shuffled_rounds_epsilon,
)
from rllib_privacy.accounting.shuffle_clones import batch_privacy_loss, clone_probability

FIXTURE_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "shuffle_stronger_clone.json"
FIXTURES = json.loads(FIXTURE_FILE.read_text("utf-8"))
POINTS = {(p["epsilon0"], p["num_reports"], p["delta"]): p for p in FIXTURES["points"]}


@pytest.mark.parametrize(("eps0", "n", "delta"), list(POINTS))
def test_matches_the_authors_code(eps0: float, n: int, delta: float) -> None:
    point = POINTS[eps0, n, delta]
    ours = shuffle_epsilon(eps0, n, delta)
    # Their code evaluates the generic variation-ratio pair and the stronger clone alike.
    assert point["strong_clone_upper"] == pytest.approx(point["variation_ratio_upper"], rel=1e-12)
    # Their lower bound is the lower end of their final bracket on the analysis's exact ε;
    # their upper bound pads δ by their summation tolerance (1e-14·n, which moves ε by up to
    # 2e-4 relative at δ = 1e-8). Ours is the upper end of our bracket with a tail of
    # 1e-6·δ charged: between the two, and within 2e-7 relative of the exact ε.
    assert point["variation_ratio_lower"] <= ours <= point["variation_ratio_upper"] * (1 + 1e-12)
    assert ours == pytest.approx(point["variation_ratio_lower"], rel=2e-7)


def test_fixture_grid_is_the_intended_one() -> None:
    assert {eps0 for eps0, _, _ in POINTS} == {0.5, 1.0, 2.0, 4.0}
    assert {n for _, n, _ in POINTS} == {100, 1000, 2048}
    assert {delta for _, _, delta in POINTS} == {1e-6, 1e-8}
    assert len(FIXTURES["points"]) == len(POINTS) == 11
    assert (1.0, 2048, 1e-6) in POINTS
    assert FIXTURES["header"]["command"].startswith(
        "python benchmarks/shuffle_fixtures.py --kind unified"
    )


def test_the_headline_point() -> None:
    # ε₀ = 1, n = 2048, δ = 1e-6: FMT21 0.1242, stronger clone 0.1012, binary RR 0.0850.
    assert shuffle_epsilon(1.0, 2048, 1e-6) == pytest.approx(0.10124, abs=5e-5)
    assert shuffle_epsilon(1.0, 2048, 1e-6, analysis="fmt21") == pytest.approx(0.12415, abs=5e-5)
    assert binary_rr_shuffle_epsilon(1.0, 2048, 1e-6) == pytest.approx(0.08504, abs=5e-5)


def shuffled_rr_counts(eps0: float, n: int, ones_among_others: int) -> tuple[np.ndarray, ...]:
    """Number of ones among n shuffled binary RRs; the differing user's bit 1 vs 0."""
    keep = math.exp(eps0) / (math.exp(eps0) + 1)  # Pr[report = true bit]
    from_ones = stats.binom.pmf(np.arange(ones_among_others + 1), ones_among_others, keep)
    zeros = n - 1 - ones_among_others
    from_zeros = stats.binom.pmf(np.arange(zeros + 1), zeros, 1 - keep)
    others = np.convolve(from_ones, from_zeros)
    return np.convolve(others, [1 - keep, keep]), np.convolve(others, [keep, 1 - keep])


def exact_rr_epsilon(eps0: float, n: int, delta: float, ones_among_others: int = 0) -> float:
    """The ε at which the two count distributions' hockey-stick divergences reach δ."""
    with_one, with_zero = shuffled_rr_counts(eps0, n, ones_among_others)

    def excess(epsilon: float) -> float:
        forward = np.clip(with_one - math.exp(epsilon) * with_zero, 0, None).sum()
        backward = np.clip(with_zero - math.exp(epsilon) * with_one, 0, None).sum()
        return max(forward, backward) - delta

    if excess(0.0) <= 0:
        return 0.0
    return optimize.brentq(excess, 0.0, eps0 + 1e-9, xtol=1e-12)


GRID = list(
    itertools.product((0.1, 0.5, 1.0, 2.0, 4.0, 8.0), (2, 10, 100, 2048, 5000), (1e-3, 1e-6, 1e-9))
)


@pytest.mark.parametrize(("eps0", "n", "delta"), GRID)
def test_between_binary_rr_and_fmt21(eps0: float, n: int, delta: float) -> None:
    ours = shuffle_epsilon(eps0, n, delta)
    # Binary RR is ε₀-LDP: a bound for every ε₀-LDP randomizer is never below its exact ε,
    # whatever the other users hold (all zeros, or half ones).
    lower = max(exact_rr_epsilon(eps0, n, delta), exact_rr_epsilon(eps0, n, delta, (n - 1) // 2))
    assert ours >= lower - 1e-9
    assert ours <= shuffle_epsilon(eps0, n, delta, analysis="fmt21") + 1e-12
    # The package's own lower limit agrees with this independent computation.
    assert binary_rr_shuffle_epsilon(eps0, n, delta) == pytest.approx(
        exact_rr_epsilon(eps0, n, delta), rel=1e-7, abs=1e-9
    )


def test_stronger_clone_is_strictly_tighter_where_it_matters() -> None:
    for eps0, n in ((0.5, 1000), (1.0, 2048), (2.0, 10_000), (4.0, 100_000)):
        assert shuffle_epsilon(eps0, n, 1e-6) < 0.9 * shuffle_epsilon(
            eps0, n, 1e-6, analysis="fmt21"
        )


def test_unknown_analysis_is_named() -> None:
    with pytest.raises(ValueError, match="analysis"):
        shuffle_epsilon(1.0, 100, 1e-6, analysis="blanket")
    with pytest.raises(ValueError, match="composition"):
        shuffled_rounds_epsilon(1.0, 100, 1e-6, rounds=2, composition="advanced")


def test_default_call_at_n_2048_is_fast() -> None:
    import time

    start = time.process_time()
    shuffle_epsilon(1.3, 2048, 1e-7)
    # Well under a second of CPU (about 0.05 s on an idle core).
    assert time.process_time() - start < 0.5


def test_a_million_reports() -> None:
    import time

    start = time.process_time()
    ours = shuffle_epsilon(2.0, 10**6, 1e-6)
    assert time.process_time() - start < 5.0  # about 0.5 s on an idle core
    # The table in benchmarks/RESULTS.md: FMT21 0.0130, binary RR 0.0070.
    assert 0.0070 < ours < 0.0130
    composed = shuffled_rounds_epsilon(2.0, 10**6, 1e-6, rounds=10)
    assert (
        ours < composed < shuffled_rounds_epsilon(2.0, 10**6, 1e-6, rounds=10, composition="basic")
    )


# --- composition over rounds -------------------------------------------------------------


def test_one_round_is_the_batch_bound() -> None:
    for composition in ("pld", "basic"):
        assert shuffled_rounds_epsilon(1.0, 2048, 1e-6, composition=composition) == shuffle_epsilon(
            1.0, 2048, 1e-6
        )


def test_basic_composition_splits_delta() -> None:
    one = shuffle_epsilon(1.0, 2048, 1e-6 / 4)
    assert shuffled_rounds_epsilon(1.0, 2048, 1e-6, rounds=4, composition="basic") == pytest.approx(
        4 * one
    )


@pytest.mark.parametrize(("eps0", "n"), [(0.5, 100), (1.0, 2048), (3.0, 10_000)])
def test_pld_composition_is_between_one_batch_and_basic(eps0: float, n: int) -> None:
    single = shuffle_epsilon(eps0, n, 1e-6)
    previous = single
    for rounds in (2, 5, 20, 100):
        pld = shuffled_rounds_epsilon(eps0, n, 1e-6, rounds=rounds)
        basic = shuffled_rounds_epsilon(eps0, n, 1e-6, rounds=rounds, composition="basic")
        assert previous < pld <= basic
        previous = pld
    # Roughly √T growth, not T: 100 rounds cost far less than 100 batches.
    assert previous < 25 * single


def test_batch_privacy_loss_reproduces_the_batch_bound() -> None:
    # The PLD of one batch is the same pair as the hockey-stick computation, rounded up.
    for eps0, n in ((0.5, 100), (1.0, 2048), (2.0, 50_000)):
        exact = shuffle_epsilon(eps0, n, 1e-6)
        loss = batch_privacy_loss(eps0, n, clone_probability("stronger_clone", eps0), 1e-12, 1e-5)
        assert exact - 1e-8 <= loss.get_epsilon_for_delta(1e-6) <= exact + 2e-4


def clone_pair_atoms(eps0: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """All atoms (c, x) of the stronger-clone pair, with their P and Q probabilities."""
    alpha = math.exp(eps0) / (math.exp(eps0) + 1)
    p_all, q_all = [], []
    for c in range(n):
        weight = stats.binom.pmf(c, n - 1, 2 / (math.exp(eps0) + 1))
        a = np.append(stats.binom.pmf(np.arange(c + 1), c, 0.5), 0.0)
        shifted = np.roll(a, 1)
        p_all.append(weight * (alpha * a + (1 - alpha) * shifted))
        q_all.append(weight * ((1 - alpha) * a + alpha * shifted))
    return np.concatenate(p_all), np.concatenate(q_all)


@pytest.mark.parametrize(("eps0", "n", "rounds"), [(1.0, 6, 2), (0.7, 12, 3), (2.0, 1, 5)])
def test_pld_composition_bounds_the_exact_composition(eps0: float, n: int, rounds: int) -> None:
    delta = 1e-6
    p, q = clone_pair_atoms(eps0, n)
    # The product pair over the rounds, atom by atom (small n and rounds only).
    p_t, q_t = p, q
    for _ in range(rounds - 1):
        p_t, q_t = np.outer(p_t, p).ravel(), np.outer(q_t, q).ravel()

    def excess(epsilon: float) -> float:
        return np.clip(p_t - math.exp(epsilon) * q_t, 0, None).sum() - delta

    exact = optimize.brentq(excess, 0.0, rounds * eps0, xtol=1e-12)
    ours = shuffled_rounds_epsilon(eps0, n, delta, rounds=rounds)
    assert exact - 1e-9 <= ours <= exact + 2e-3 * exact


# --- the inverse: local ε₀ for a central target -------------------------------------------


@pytest.mark.parametrize(
    ("central", "n", "delta", "rounds"),
    [(0.5, 2048, 1e-6, 1), (2.0, 2048, 1e-6, 10), (1.0, 100, 1e-8, 3), (0.05, 10, 1e-6, 1)],
)
def test_local_epsilon_for_central_is_the_largest_reaching_the_target(
    central: float, n: int, delta: float, rounds: int
) -> None:
    eps0 = local_epsilon_for_central(central, n, delta, rounds=rounds)
    assert eps0 >= central / rounds  # no amplification is the worst case
    assert shuffled_rounds_epsilon(eps0, n, delta, rounds=rounds) <= central
    assert shuffled_rounds_epsilon(eps0 * (1 + 1e-5), n, delta, rounds=rounds) > central


def test_local_epsilon_for_central_headline() -> None:
    # The ε₀ that the stronger clone allows for a central ε of 0.1012 at n = 2048 is ~1.
    assert local_epsilon_for_central(0.10124, 2048, 1e-6) == pytest.approx(1.0, abs=1e-3)
    # FMT21 would need a smaller ε₀ for the same target.
    fmt21 = local_epsilon_for_central(0.10124, 2048, 1e-6, analysis="fmt21")
    assert fmt21 < 0.9


def test_local_epsilon_for_central_is_monotone_in_the_target() -> None:
    values = [local_epsilon_for_central(c, 2048, 1e-6) for c in (0.05, 0.1, 0.3, 1.0)]
    assert values == sorted(values)
    assert len(set(values)) == len(values)


def test_local_epsilon_for_central_without_amplification() -> None:
    # One report per batch: nothing to hide among, the batch is ε₀-DP, so ε₀ = central ε.
    assert local_epsilon_for_central(0.8, 1, 1e-6) == pytest.approx(0.8, rel=1e-5)
    assert local_epsilon_for_central(800.0, 2048, 1e-6) == 800.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"central_epsilon": 0.0}, "central_epsilon"),
        ({"central_epsilon": math.inf}, "central_epsilon"),
        ({"num_reports": 0}, "num_reports"),
        ({"delta": 1.0}, "delta"),
        ({"rounds": 0}, "rounds"),
        ({"central_epsilon": 1e-12}, "central_epsilon"),
        ({"analysis": "clones"}, "analysis"),
    ],
)
def test_local_epsilon_for_central_rejects_bad_input(kwargs: dict, name: str) -> None:
    args = {"central_epsilon": 1.0, "num_reports": 100, "delta": 1e-6} | kwargs
    with pytest.raises(ValueError, match=name):
        local_epsilon_for_central(**args)
