"""Statistical tests of the one-bit mechanism (LDPA3C's private scores).

Every statistical check uses a tolerance of Z standard errors of its own sample size, with
Z = 5: a false failure has probability below 6e-7 per check (two-sided normal tail), about
1e-5 for the whole file. Seeds make the file deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rllib_privacy.mechanisms import OneBitMechanism

Z = 5.0
N = 200_000


def _mechanism(epsilon: float = 0.5) -> OneBitMechanism:
    return OneBitMechanism(epsilon=epsilon, low=0.0, high=200.0)


def test_output_set_is_zero_one_and_validate_refuses_anything_else() -> None:
    mech = _mechanism()
    bits = mech.privatize(np.linspace(-50.0, 300.0, 1_000), np.random.default_rng(0))
    assert set(np.unique(bits).tolist()) <= set(mech.output_set) == {0, 1}
    assert mech.validate([0, 1.0, 1]).tolist() == [0, 1, 1]
    for bad in (2, 0.5, -1, math.nan):
        with pytest.raises(ValueError, match="must be 0 or 1"):
            mech.validate([0, bad])


@pytest.mark.parametrize(
    ("value", "clipped"), [(0.0, 0.0), (37.0, 37.0), (195.0, 195.0), (-50.0, 0.0), (250.0, 200.0)]
)
def test_debiased_mean_is_unbiased_for_the_clipped_value(value: float, clipped: float) -> None:
    mech = _mechanism()
    estimates = mech.debias(mech.privatize(np.full(N, value), np.random.default_rng(1)))
    standard_error = math.sqrt(float(mech.variance(value)) / N)
    assert abs(estimates.mean() - clipped) <= Z * standard_error


@pytest.mark.parametrize("value", [0.0, 120.0, 199.0])
def test_variance_matches_the_formula_and_its_bound(value: float) -> None:
    mech = _mechanism(epsilon=0.2)
    estimates = mech.debias(mech.privatize(np.full(N, value), np.random.default_rng(2)))
    exact = float(mech.variance(value))
    # The estimate takes two values a < b with P(b) = P: its variance is (b − a)²·P(1 − P);
    # the sample variance's standard error follows from the Bernoulli's fourth moment.
    probability = float(mech.one_probability(value))
    spread = (mech.high - mech.low) / (mech.p - mech.q)
    assert exact == pytest.approx(spread**2 * probability * (1 - probability))
    fourth = probability * (1 - probability) * (1 - 3 * probability * (1 - probability))
    se_variance = spread**2 * math.sqrt(max(fourth - (probability * (1 - probability)) ** 2, 0) / N)
    assert abs(estimates.var() - exact) <= Z * se_variance
    assert exact <= mech.max_std**2 * (1 + 1e-12)


def test_the_documented_arithmetic() -> None:
    # docs/components/ldp-a3c.md#private-scores: Laplace on [0, 200] at ε = 0.1 has std
    # √2·200/0.1 ≈ 2,828; the one-bit mechanism's is at most 200/(2·tanh(ε/2)).
    assert math.sqrt(2) * 200 / 0.1 == pytest.approx(2828.4, abs=0.1)
    assert OneBitMechanism(epsilon=0.1, low=0, high=200).max_std == pytest.approx(2001.7, abs=0.1)
    assert OneBitMechanism(epsilon=0.2, low=0, high=200).max_std == pytest.approx(1003.3, abs=0.1)
    assert OneBitMechanism(epsilon=0.2, low=0, high=200).max_std / 256 == pytest.approx(
        3.92, abs=0.01
    )


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 3.0])
def test_epsilon_ldp_inequality_on_adjacent_inputs(epsilon: float) -> None:
    """P(y | x) ≤ e^ε·P(y | x') for every output y and inputs x, x' (exactly and empirically)."""
    mech = _mechanism(epsilon)
    grid = np.linspace(-20.0, 220.0, 49)
    ones = mech.one_probability(grid)
    for probs in (ones, 1.0 - ones):
        worst = probs.max() / probs.min()
        assert worst <= math.exp(epsilon) * (1 + 1e-12)
    # The extreme pair (low, high) attains e^ε: estimate both output distributions.
    rng = np.random.default_rng(3)
    lo_bits = mech.privatize(np.full(N, mech.low), rng)
    hi_bits = mech.privatize(np.full(N, mech.high), rng)
    for output in (0, 1):
        p_lo = float(np.mean(lo_bits == output))
        p_hi = float(np.mean(hi_bits == output))
        ratio = max(p_lo / p_hi, p_hi / p_lo)
        # Delta-method standard error of log(p̂/p̂'): sqrt((1−p)/(Np) + (1−p')/(Np')).
        se_log = math.sqrt((1 - p_lo) / (N * p_lo) + (1 - p_hi) / (N * p_hi))
        assert math.log(ratio) <= epsilon + Z * se_log
        assert math.log(ratio) >= epsilon - Z * se_log  # the bound is attained, not loose


def test_secure_mode_draws_from_os_entropy_with_the_same_distribution() -> None:
    mech = OneBitMechanism(epsilon=1.0, low=0.0, high=200.0, secure_mode=True)
    n = 20_000
    bits = mech.privatize(np.full(n, 150.0))
    assert set(np.unique(bits).tolist()) <= {0, 1}
    probability = float(mech.one_probability(150.0))
    assert abs(bits.mean() - probability) <= Z * math.sqrt(probability * (1 - probability) / n)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0, "low": 0.0, "high": 1.0}, "epsilon"),
        ({"epsilon": math.inf, "low": 0.0, "high": 1.0}, "epsilon"),
        ({"epsilon": 1.0, "low": 1.0, "high": 1.0}, "low < high"),
        ({"epsilon": 1.0, "low": 0.0, "high": math.inf}, "finite"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OneBitMechanism(**kwargs)


def test_nan_is_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        _mechanism().privatize([1.0, math.nan], np.random.default_rng(0))
