"""The smallest ε each gradient mechanism can be computed with (mechanisms.floors)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from rllib_privacy._validation import SMALLEST_NORMAL_EPSILON, check_normal_epsilon
from rllib_privacy.mechanisms import GradientMechanism
from rllib_privacy.mechanisms.floors import TAIL, gradient_epsilon_floor


def test_subnormal_epsilon_is_refused_with_the_smallest_normal_value():
    with pytest.raises(ValueError, match=r"is 1e-320, a subnormal float.*is 2.23e-308"):
        check_normal_epsilon("config key 'privacy_epsilon'", 1e-320)
    check_normal_epsilon("x", sys.float_info.min)  # the smallest normal float passes
    check_normal_epsilon("x", 0.0)  # zero and negatives are the range checks' business


def test_laplace_floor_matches_its_closed_form():
    """s = clip/ε and dim·(TAIL·s)² < max  ⇔  ε > TAIL·clip·sqrt(dim/max)."""
    dim = 10**8
    exact = TAIL * 2.0 * math.sqrt(dim / sys.float_info.max)
    floor = gradient_epsilon_floor("laplace", clip=2.0, dim=dim)
    assert exact <= floor <= exact * 1.1


@pytest.mark.parametrize(
    ("name", "debias"),
    [("laplace", False), ("prs", True), ("privunitg", False), ("privunit2", False)],
)
def test_at_the_floor_a_release_is_finite_and_below_it_the_scale_overflows(name, debias):
    dim = 10_000
    floor = gradient_epsilon_floor(name, clip=1.0, debias=debias, dim=dim)
    assert SMALLEST_NORMAL_EPSILON < floor < 1e-140

    def scale(epsilon: float) -> float:
        try:
            return GradientMechanism(
                name=name, epsilon=epsilon, clip=1.0, debias=debias
            ).noise_scale(dim)
        except (ArithmeticError, ValueError):
            return math.inf

    assert math.isfinite(dim * (TAIL * scale(floor)) ** 2)
    assert not math.isfinite(dim * (TAIL * scale(floor / 2.0)) ** 2)
    mechanism = GradientMechanism(name=name, epsilon=floor, clip=1.0, debias=debias)
    grad = np.random.default_rng(0).normal(size=dim)
    released = mechanism.privatize(grad, rng=np.random.default_rng(1))
    assert np.all(np.isfinite(released)) and math.isfinite(float(released @ released))


def test_prs_without_debiasing_has_only_the_normal_float_floor():
    assert gradient_epsilon_floor("prs", clip=1.0) == SMALLEST_NORMAL_EPSILON
    assert gradient_epsilon_floor("none", clip=1.0) == 0.0


def test_dirichlet_k_and_pate_sigma_keys_get_the_normal_float_floor():
    """k = 1e-320 makes every Dirichlet sample NaN; the smallest normal k still samples."""
    from rllib_privacy._validation import needs_normal_float
    from rllib_privacy.mechanisms import dirichlet_mechanism

    policy = np.array([0.7, 0.2, 0.1])
    with np.errstate(all="ignore"):
        tiny = dirichlet_mechanism(policy, k=1e-320, eta=0.01, rng=np.random.default_rng(0))
    assert np.isnan(tiny).all()
    rng = np.random.default_rng(0)
    sample = dirichlet_mechanism(policy, k=SMALLEST_NORMAL_EPSILON, eta=0.01, rng=rng)
    assert np.all(np.isfinite(sample))
    for key in ("teacher_k", "teacher_min_k", "pate_gnmax_sigma", "teacher_epsilon_budget"):
        assert needs_normal_float(key)
    assert not needs_normal_float("lr")
