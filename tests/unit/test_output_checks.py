"""GradientMechanism.check_output: honest outputs pass, crafted ones are refused.

Statistical tests state their false-failure rate: counts are compared with the binomial
mean ± 5 standard deviations (one-sided normal tail ≤ 3e-7 per comparison).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rllib_privacy.mechanisms import GradientMechanism

DIM = 28
SIGMAS = 5.0

EXACT = [
    GradientMechanism(name="privunit2", epsilon=1.0, clip=1.0),
    GradientMechanism(name="privunit2", epsilon=4.0, clip=0.5, secure_mode=True),
    GradientMechanism(name="prs", epsilon=1.0, clip=1.0),
    GradientMechanism(name="prs", epsilon=10.0, clip=1.0),
    GradientMechanism(name="prs", epsilon=10.0, clip=2.0, debias=True),
    GradientMechanism(name="prs", epsilon=5.0, clip=1.0, reduced_dim=3, secure_mode=True),
]
ALL = [
    *EXACT,
    GradientMechanism(name="privunitg", epsilon=1.0, clip=1.0),
    GradientMechanism(name="privunitg", epsilon=4.0, clip=1.0, secure_mode=True),
    GradientMechanism(name="laplace", epsilon=1.0, clip=0.01),
    GradientMechanism(name="laplace", epsilon=10.0, clip=1.0),
]


def _ids(mechanisms: list[GradientMechanism]) -> list[str]:
    return [f"{m.name}-eps{m.epsilon:g}-debias{m.debias}-secure{m.secure_mode}" for m in mechanisms]


def _gradients(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Gradients of every size: zero, inside the clip ball, far outside it."""
    grads = rng.normal(size=(rows, DIM)) * rng.choice([0.0, 0.01, 0.3, 100.0], size=(rows, 1))
    return grads


def _rejected(mechanism: GradientMechanism, outputs: np.ndarray, rate: float) -> int:
    return sum(
        mechanism.check_output(row, dim=DIM, false_rejection_rate=rate) is not None
        for row in outputs
    )


@pytest.mark.parametrize("mechanism", ALL, ids=_ids(ALL))
def test_honest_float32_outputs_pass_at_the_default_rate(mechanism: GradientMechanism) -> None:
    # 600 outputs at rate 1e-9: a false failure has probability <= 6e-7 (0 for exact sets).
    rng = np.random.default_rng(1)
    outputs = np.asarray(mechanism.privatize_rows(_gradients(rng, 600), rng), dtype=np.float32)
    assert _rejected(mechanism, outputs, 1e-9) == 0
    # float64 submissions (no cast) pass too.
    single = mechanism.privatize(np.full(DIM, 0.2), rng)
    assert mechanism.check_output(single) is None


@pytest.mark.parametrize("mechanism", EXACT, ids=_ids(EXACT))
def test_exact_sets_never_refuse_even_at_a_large_rate(mechanism: GradientMechanism) -> None:
    rng = np.random.default_rng(2)
    outputs = np.asarray(mechanism.privatize_rows(_gradients(rng, 400), rng), dtype=np.float32)
    assert _rejected(mechanism, outputs, 0.5) == 0


@pytest.mark.parametrize(
    ("mechanism", "gradient_scale", "tight"),
    [
        # g = 0: ‖x‖₁ = ‖z‖₁ exactly, so the Gamma tail is met with equality (rate/2),
        # and the per-entry union bound is nearly tight: the rate is nearly reached.
        (GradientMechanism(name="laplace", epsilon=1.0, clip=0.01), 0.0, True),
        (GradientMechanism(name="laplace", epsilon=2.0, clip=1.0), 10.0, False),
        (GradientMechanism(name="privunitg", epsilon=1.0, clip=1.0), 0.3, False),
        (GradientMechanism(name="privunitg", epsilon=3.0, clip=1.0), 0.0, False),
    ],
)
def test_statistical_bounds_refuse_at_most_the_stated_rate(
    mechanism: GradientMechanism, gradient_scale: float, tight: bool
) -> None:
    rate, rows = 0.02, 20_000
    rng = np.random.default_rng(3)
    grads = rng.normal(size=(rows, DIM)) * gradient_scale
    outputs = np.asarray(mechanism.privatize_rows(grads, rng), dtype=np.float32)
    refused = _rejected(mechanism, outputs, rate)
    sd = math.sqrt(rows * rate * (1 - rate))
    assert refused <= rows * rate + SIGMAS * sd
    if tight:
        # Not a vacuous bound: at least half the stated rate is reached.
        assert refused >= rows * rate / 2 - SIGMAS * sd


@pytest.mark.parametrize(
    ("vector", "fragment"),
    [
        ([0.0] * DIM, "not a numpy array"),
        (np.zeros((2, DIM), dtype=np.float32), "shape"),
        (np.zeros(DIM + 1, dtype=np.float32), "shape"),
        (np.zeros(DIM, dtype=np.float16), "dtype"),
        (np.zeros(DIM, dtype=np.int64), "dtype"),
        (np.full(DIM, np.nan, dtype=np.float32), "non-finite"),
        (np.array([np.inf] + [0.0] * (DIM - 1), dtype=np.float32), "non-finite"),
    ],
)
@pytest.mark.parametrize("mechanism", ALL[:1] + ALL[-3:], ids=_ids(ALL[:1] + ALL[-3:]))
def test_malformed_vectors_are_refused(
    mechanism: GradientMechanism, vector: object, fragment: str
) -> None:
    reason = mechanism.check_output(vector, dim=DIM)
    assert reason is not None and fragment in reason


def test_none_accepts_any_finite_vector_of_the_right_shape() -> None:
    mechanism = GradientMechanism(name="none", epsilon=math.inf, clip=1.0)
    assert mechanism.check_output(np.full(DIM, 1e30, dtype=np.float32), dim=DIM) is None
    assert mechanism.check_output(np.full(DIM, np.nan, dtype=np.float32), dim=DIM) is not None
    with pytest.raises(ValueError, match="no bounded output set"):
        mechanism.worst_valid_output(np.ones(DIM))


def test_privunit2_refuses_any_other_norm() -> None:
    mechanism = GradientMechanism(name="privunit2", epsilon=1.0, clip=1.0)
    rng = np.random.default_rng(4)
    honest = mechanism.privatize(rng.normal(size=DIM), rng)
    for factor in (0.5, 0.999, 1.0 + 1e-5, 2.0):
        reason = mechanism.check_output((honest * factor).astype(np.float32))
        assert reason is not None and "norm" in reason
    assert mechanism.check_output(np.zeros(DIM, dtype=np.float32)) is not None


def test_prs_refuses_off_lattice_and_too_large_entries() -> None:
    mechanism = GradientMechanism(name="prs", epsilon=10.0, clip=1.0)  # d̂ = 4
    unit = math.sqrt(3.0)
    on = np.zeros(DIM)
    on[:3] = [4 * unit, -4 * unit, unit]
    assert mechanism.check_output(on.astype(np.float32)) is None
    half = on.copy()
    half[5] = 0.5 * unit
    assert "support" in (mechanism.check_output(half.astype(np.float32)) or "")
    big = on.copy()
    big[0] = 5 * unit
    assert "support" in (mechanism.check_output(big.astype(np.float32)) or "")
    tiny = on.copy()
    tiny[7] = 1e-3
    assert mechanism.check_output(tiny.astype(np.float32)) is not None


def test_laplace_refuses_a_spike_and_a_large_l1_norm() -> None:
    mechanism = GradientMechanism(name="laplace", epsilon=1.0, clip=0.01)
    worst = mechanism.worst_valid_output(np.ones(DIM))
    assert mechanism.check_output(worst.astype(np.float32)) is None
    spike = np.zeros(DIM)
    spike[0] = float(np.max(worst)) * 1.01
    assert "per-entry" in (mechanism.check_output(spike) or "")
    spread = np.full(DIM, float(np.sum(worst)) * 1.01 / DIM)
    assert "L1" in (mechanism.check_output(spread) or "")


@pytest.mark.parametrize("mechanism", ALL, ids=_ids(ALL))
def test_worst_valid_output_is_accepted_and_maximal(mechanism: GradientMechanism) -> None:
    direction = np.linspace(-1.0, 2.0, DIM)
    direction[3] = 0.0
    worst = mechanism.worst_valid_output(direction)
    assert mechanism.check_output(worst.astype(np.float32)) is None
    assert float(worst @ direction) > 0.0
    # Anything further out along the same direction is refused.
    assert mechanism.check_output((worst * 1.01).astype(np.float32)) is not None
    rng = np.random.default_rng(5)
    honest = np.asarray(mechanism.privatize_rows(rng.normal(size=(200, DIM)), rng))
    assert float(np.max(honest @ direction)) <= float(worst @ direction) * (1 + 1e-6)


def test_bad_rate_and_direction_are_value_errors() -> None:
    mechanism = GradientMechanism(name="privunitg", epsilon=1.0, clip=1.0)
    for rate in (0.0, 0.6, -1.0, True, "0.1"):
        with pytest.raises(ValueError, match="false_rejection_rate"):
            mechanism.check_output(np.zeros(DIM, dtype=np.float32), false_rejection_rate=rate)
    with pytest.raises(ValueError, match="direction"):
        mechanism.worst_valid_output(np.zeros(DIM))
