"""benchmarks/kickstart_labels.py: what a teacher's ε buys as argmax labels."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
from benchmark_modules import benchmark_fixture

from rllib_privacy.accounting.dirichlet_renyi import DEFAULT_ORDERS, dirichlet_rdp, rdp_to_epsilon

bench = benchmark_fixture("kickstart_labels")


@pytest.mark.parametrize("num_actions", [2, 3, 6])
def test_label_information_is_ln_m_for_a_sure_label_and_zero_for_a_uniform_one(
    bench, num_actions: int
) -> None:
    assert bench.label_information(1.0, num_actions) == pytest.approx(math.log(num_actions))
    assert bench.label_information(1.0 / num_actions, num_actions) == pytest.approx(0.0, abs=1e-12)
    # The binary symmetric channel's capacity at 0.9: ln 2 − h(0.9).
    if num_actions == 2:
        h = -(0.9 * math.log(0.9) + 0.1 * math.log(0.1))
        assert bench.label_information(0.9, 2) == pytest.approx(math.log(2) - h)


@pytest.mark.parametrize(("budget", "k", "eta"), [(1.0, 30.0, 0.45), (10.0, 100.0, 0.4)])
def test_releases_within_is_the_largest_count_the_budget_allows(
    bench, budget: float, k: float, eta: float
) -> None:
    orders = np.asarray(DEFAULT_ORDERS)
    curve = dirichlet_rdp(orders, k=k, eta=eta, radius=(1 - 2 * eta) * 0.01, num_actions=2)
    count = bench.releases_within(budget, curve, orders)
    assert count > 0
    assert rdp_to_epsilon(orders, count * curve, bench.DELTA) <= budget
    assert rdp_to_epsilon(orders, (count + 1) * curve, bench.DELTA) > budget


def test_releases_within_is_zero_when_one_release_exceeds_the_budget(bench) -> None:
    orders = np.asarray(DEFAULT_ORDERS)
    curve = dirichlet_rdp(orders, k=1000.0, eta=0.05, radius=0.5, num_actions=2)
    assert bench.releases_within(0.1, curve, orders) == 0


def test_teacher_argument_needs_a_name_and_a_path(bench) -> None:
    assert bench.parse_teacher("cartpole=/a/b") == ("cartpole", "/a/b")
    for bad in ("cartpole", "=x", "cartpole="):
        with pytest.raises(argparse.ArgumentTypeError, match="NAME=PATH"):
            bench.parse_teacher(bad)
