"""Unit and statistical tests of the empirical privacy auditor itself (no Ray).

Tolerances come from the sample size: the auditor's bound sits about z·σ·(1/p_a + 1/p_b)
below the true log ratio (delta method, σ the binomial standard error), and the tests allow
that gap plus ``NOISE_SIGMAS`` standard errors of its fluctuation. Coverage tests count the
seeds on which the bound exceeds the truth and compare with a binomial quantile at
``ALPHA``, the family-wise false-failure probability of each statistical test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rllib_privacy.audit import AuditResult, audit_mechanism, clopper_pearson, epsilon_lower_bound

ALPHA = 1e-6
NOISE_SIGMAS = 5.0
LN3 = math.log(3.0)


def randomized_response(bit: int, rng: np.random.Generator) -> int:
    """Keep the bit w.p. 3/4: exactly ln(3)-DP, and the event {output = bit} is tight."""
    return bit if rng.random() < 0.75 else 1 - bit


def randomized_response_batch(bit: int, n: int, rng: np.random.Generator) -> np.ndarray:
    keep = rng.random(n) < 0.75
    return np.where(keep, bit, 1 - bit).astype(np.int64)


def laplace_batch(x: float, n: int, rng: np.random.Generator) -> np.ndarray:
    return x + rng.laplace(0.0, 1.0, size=n)


def expected_gap(p_x: float, p_y: float, n: int, confidence: float) -> tuple[float, float]:
    """(mean shortfall of the bound below ln(p_x/p_y), standard error of the estimate)."""
    z = float(stats.norm.isf((1.0 - confidence) / 2.0))
    sigma = math.sqrt(p_x * (1 - p_x) / n) / p_x + math.sqrt(p_y * (1 - p_y) / n) / p_y
    return z * sigma, sigma


# ----------------------------------------------------------------- Clopper-Pearson bounds


@pytest.mark.parametrize(
    ("count", "n"), [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (57, 1000), (999, 1000)]
)
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.999])
def test_clopper_pearson_matches_scipy_binomtest(count: int, n: int, confidence: float) -> None:
    lower, upper = clopper_pearson(count, n, confidence)
    reference = stats.binomtest(count, n).proportion_ci(confidence, method="exact")
    assert float(lower) == pytest.approx(reference.low, rel=1e-9, abs=1e-12)
    assert float(upper) == pytest.approx(reference.high, rel=1e-9, abs=1e-12)


def test_clopper_pearson_is_vectorized() -> None:
    counts = np.array([0, 5, 50, 100])
    lower, upper = clopper_pearson(counts, 100, 0.95)
    for count, low, high in zip(counts, lower, upper, strict=True):
        assert (low, high) == clopper_pearson(int(count), 100, 0.95)
    assert np.all(lower <= counts / 100) and np.all(counts / 100 <= upper)


def test_epsilon_lower_bound_is_the_log_ratio_of_the_interval_ends() -> None:
    low = stats.binomtest(600, 1000).proportion_ci(0.9, method="exact").low
    high = stats.binomtest(200, 1000).proportion_ci(0.9, method="exact").high
    bound = epsilon_lower_bound(600, 200, 1000, delta=0.05, confidence=0.9)
    assert float(bound) == pytest.approx(math.log((low - 0.05) / high), rel=1e-12)
    # An event whose lower bound is below δ supports nothing.
    assert float(epsilon_lower_bound(600, 200, 1000, delta=0.6, confidence=0.9)) == -math.inf


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"count": 11, "n": 10}, "count"),
        ({"count": -1, "n": 10}, "count"),
        ({"count": 0.5, "n": 10}, "count"),
        ({"count": 1, "n": 0}, "n must be"),
        ({"count": 1, "n": 10, "confidence": 1.0}, "confidence"),
    ],
)
def test_clopper_pearson_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    arguments = {"confidence": 0.95, **kwargs}
    with pytest.raises(ValueError, match=match):
        clopper_pearson(arguments["count"], arguments["n"], arguments["confidence"])


# ----------------------------------------------------------------- known-ε mechanisms


def test_randomized_response_supported_epsilon_is_close_to_and_below_ln3() -> None:
    num_samples = 200_000
    result = audit_mechanism(
        randomized_response,
        0,
        1,
        epsilon=LN3,
        num_samples=num_samples,
        rng=np.random.default_rng(0),
        batch_mechanism=randomized_response_batch,
    )
    gap, sigma = expected_gap(0.75, 0.25, result.num_estimation, result.confidence)
    assert result.passed
    assert result.event_kind == "discrete"
    assert result.supported_epsilon <= LN3
    assert result.supported_epsilon >= LN3 - gap - NOISE_SIGMAS * sigma
    # The same evidence refutes a claim below the truth by more than the audit's slack.
    refuted = audit_mechanism(
        randomized_response,
        0,
        1,
        epsilon=LN3 - 2 * (gap + NOISE_SIGMAS * sigma),
        num_samples=num_samples,
        rng=np.random.default_rng(0),
        batch_mechanism=randomized_response_batch,
    )
    assert not refuted.passed
    assert refuted.supported_epsilon == result.supported_epsilon


def test_per_call_path_audits_a_scalar_mechanism() -> None:
    result = audit_mechanism(
        randomized_response, 0, 1, epsilon=LN3, num_samples=4_000, rng=np.random.default_rng(1)
    )
    gap, sigma = expected_gap(0.75, 0.25, result.num_estimation, result.confidence)
    assert result.passed
    assert LN3 - gap - NOISE_SIGMAS * sigma <= result.supported_epsilon <= LN3


def test_coverage_supported_epsilon_exceeds_the_truth_at_most_at_the_nominal_rate() -> None:
    # Randomized response is tight at ln 3, so each audit claiming exactly ln 3 fails with
    # probability <= 1 - confidence; the failures over many seeds are at most binomial.
    seeds, confidence = 300, 0.9
    failures = sum(
        not audit_mechanism(
            randomized_response,
            0,
            1,
            epsilon=LN3,
            num_samples=400,
            rng=np.random.default_rng(seed),
            confidence=confidence,
            batch_mechanism=randomized_response_batch,
        ).passed
        for seed in range(seeds)
    )
    assert failures <= stats.binom.ppf(1.0 - ALPHA, seeds, 1.0 - confidence)


def test_identical_inputs_support_no_epsilon() -> None:
    # Continuous path under the null: true ε = 0, so any positive bound is a false alarm,
    # which happens with probability <= 1 - confidence per audit.
    seeds, confidence = 100, 0.9
    results = [
        audit_mechanism(
            None,
            0.3,
            0.3,
            epsilon=0.0,
            num_samples=1_000,
            rng=np.random.default_rng(seed),
            confidence=confidence,
            batch_mechanism=laplace_batch,
        )
        for seed in range(seeds)
    ]
    assert all(r.event_kind == "continuous" for r in results)
    failures = sum(not r.passed for r in results)
    assert failures <= stats.binom.ppf(1.0 - ALPHA, seeds, 1.0 - confidence)
    # With many samples the bound is ~0 and a small claim passes.
    big = audit_mechanism(
        None,
        0.3,
        0.3,
        epsilon=0.05,
        num_samples=100_000,
        rng=np.random.default_rng(0),
        batch_mechanism=laplace_batch,
    )
    assert big.passed and big.supported_epsilon < 0.05


def test_delta_lowers_the_bound() -> None:
    kwargs = {
        "epsilon": LN3,
        "num_samples": 20_000,
        "batch_mechanism": randomized_response_batch,
    }
    plain = audit_mechanism(None, 0, 1, rng=np.random.default_rng(3), **kwargs)
    with_delta = audit_mechanism(None, 0, 1, delta=0.1, rng=np.random.default_rng(3), **kwargs)
    assert 0.0 < with_delta.supported_epsilon < plain.supported_epsilon
    # No event has probability above 3/4 + slack, so δ = 0.8 leaves nothing to support.
    nothing = audit_mechanism(None, 0, 1, delta=0.8, rng=np.random.default_rng(3), **kwargs)
    assert nothing.supported_epsilon == 0.0 and nothing.passed


def test_discrete_events_include_likelihood_ratio_unions() -> None:
    # Values 0 and 1 both have ratio 4 (0.4 vs 0.1); their union doubles the mass at the
    # same ratio, so it supports the largest bound.
    probabilities = {0: [0.4, 0.4, 0.2], 1: [0.1, 0.1, 0.8]}

    def batch(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.choice(3, size=n, p=probabilities[x])

    result = audit_mechanism(
        None,
        0,
        1,
        epsilon=10.0,
        num_samples=20_000,
        rng=np.random.default_rng(0),
        batch_mechanism=batch,
    )
    assert result.event == "s in {0, 1}"
    assert result.direction == "a>b"
    gap, sigma = expected_gap(0.8, 0.2, result.num_estimation, result.confidence)
    assert math.log(4.0) - gap - NOISE_SIGMAS * sigma <= result.supported_epsilon <= math.log(4)


def test_vector_default_statistic_projects_on_the_mean_difference() -> None:
    # Gaussian noise on a 16-d vector, shifted along a direction the auditor is not told.
    dim = 16
    direction = np.random.default_rng(42).normal(size=dim)
    direction /= np.linalg.norm(direction)

    def batch(x: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        return x + rng.normal(size=(n, dim))

    def audit(statistic: object) -> AuditResult:
        return audit_mechanism(
            None,
            direction,
            -direction,
            epsilon=10.0,
            num_samples=40_000,
            rng=np.random.default_rng(5),
            batch_mechanism=batch,
            statistic=statistic,
        )

    default = audit(None)
    oracle = audit(lambda releases: releases @ direction)
    wrong = audit(lambda releases: releases[:, np.argmin(np.abs(direction))])
    assert default.event_kind == "continuous"
    # Estimating 16 coordinates of the direction from 20k pilot draws costs little power.
    assert default.supported_epsilon >= 0.9 * oracle.supported_epsilon
    assert wrong.supported_epsilon < 0.5 * default.supported_epsilon


def test_torch_releases_are_accepted() -> None:
    torch = pytest.importorskip("torch")

    def mechanism(x: float, rng: np.random.Generator) -> object:
        return torch.tensor([x + rng.laplace()], dtype=torch.float32)

    result = audit_mechanism(
        mechanism, 0.0, 1.0, epsilon=1.0, num_samples=1_000, rng=np.random.default_rng(0)
    )
    assert result.passed and result.num_samples == 1_000


def test_mechanism_with_its_own_entropy_source_is_audited() -> None:
    # A secure-mode mechanism may ignore the rng and draw from OS entropy: the audit is then
    # not reproducible, so it runs at confidence 1 - 1e-6 to keep a false failure that rare.
    def batch(bit: int, n: int, rng: np.random.Generator) -> np.ndarray:
        own = np.random.default_rng()  # OS entropy, independent of the auditor's rng
        return np.where(own.random(n) < 0.75, bit, 1 - bit)

    confidence = 1.0 - ALPHA
    result = audit_mechanism(
        None,
        0,
        1,
        epsilon=LN3,
        num_samples=20_000,
        rng=np.random.default_rng(0),
        batch_mechanism=batch,
        confidence=confidence,
    )
    gap, sigma = expected_gap(0.75, 0.25, result.num_estimation, confidence)
    assert result.passed
    assert result.supported_epsilon > LN3 - gap - NOISE_SIGMAS * sigma


def test_infinite_claim_always_passes() -> None:
    result = audit_mechanism(
        None,
        0,
        1,
        epsilon=math.inf,
        num_samples=1_000,
        rng=np.random.default_rng(0),
        batch_mechanism=lambda x, n, rng: np.full(n, x),
    )
    assert result.passed and result.supported_epsilon > 3.0  # deterministic release


# ----------------------------------------------------------------- determinism and output


def test_result_is_deterministic_under_a_seed() -> None:
    def run(seed: int) -> AuditResult:
        return audit_mechanism(
            randomized_response,
            0,
            1,
            epsilon=1.0,
            num_samples=2_000,
            rng=np.random.default_rng(seed),
        )

    assert run(11) == run(11)
    assert run(11).count_a != run(12).count_a or run(11).count_b != run(12).count_b


def test_str_reports_the_verdict_and_the_numbers() -> None:
    result = audit_mechanism(
        None,
        0,
        1,
        epsilon=0.5,
        num_samples=10_000,
        rng=np.random.default_rng(0),
        batch_mechanism=randomized_response_batch,
    )
    text = str(result)
    assert not result.passed
    assert text.startswith("privacy audit FAILED")
    assert f"{result.supported_epsilon:.4g}" in text
    assert f"{result.count_a}/{result.num_estimation}" in text
    assert "95%" in text


# ----------------------------------------------------------------- argument errors

GOOD = {
    "epsilon": 1.0,
    "num_samples": 100,
    "rng": None,
    "batch_mechanism": laplace_batch,
}


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"epsilon": -1.0}, "epsilon must be"),
        ({"epsilon": float("nan")}, "epsilon must be"),
        ({"epsilon": True}, "epsilon must be"),
        ({"delta": 1.0}, "delta must be"),
        ({"delta": -0.1}, "delta must be"),
        ({"num_samples": 3}, "num_samples must be"),
        ({"num_samples": 100.0}, "num_samples must be"),
        ({"rng": 7}, "rng must be"),
        ({"confidence": 0.0}, "confidence must be"),
        ({"num_thresholds": 0}, "num_thresholds must be"),
        ({"selection_fraction": 1.0}, "selection_fraction must be"),
        ({"selection_fraction": 0.01}, "selection_fraction=0.01"),
        ({"max_discrete_values": -1}, "max_discrete_values must be"),
        ({"statistic": "mean"}, "statistic must be"),
        ({"batch_mechanism": 3}, "batch_mechanism must be"),
        ({"batch_mechanism": None}, "mechanism must be a callable"),
    ],
)
def test_bad_arguments_name_the_argument(changes: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        audit_mechanism(None, 0.0, 1.0, **{**GOOD, **changes})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mechanism": lambda x, rng: float("nan")}, "mechanism returned a NaN"),
        ({"mechanism": lambda x, rng: np.zeros(1 + rng.integers(2))}, "one shape"),
        ({"mechanism": lambda x, rng: 1j}, "real numbers"),
        ({"batch_mechanism": lambda x, n, rng: np.zeros(n - 1)}, "batch_mechanism must return"),
        ({"statistic": lambda releases: releases[:3]}, "statistic must map"),
        ({"statistic": lambda releases: releases * np.nan}, "statistic returned a NaN"),
    ],
)
def test_bad_mechanism_outputs_are_reported(kwargs: dict, match: str) -> None:
    arguments = {"mechanism": lambda x, rng: x + rng.laplace(), **kwargs}
    with pytest.raises(ValueError, match=match):
        audit_mechanism(
            arguments.pop("mechanism"),
            0.0,
            1.0,
            epsilon=1.0,
            num_samples=50,
            rng=np.random.default_rng(0),
            **arguments,
        )


def test_projection_scores_do_not_depend_on_the_batch() -> None:
    # Discrete events on projected vectors are matched by exact equality in the estimation
    # split, so one release must score bit-identically wherever it sits in a batch.
    from rllib_privacy.audit.auditor import _apply_statistic

    rng = np.random.default_rng(0)
    releases, direction = rng.normal(size=(1_000, 37)), rng.normal(size=37)
    whole = _apply_statistic(direction, releases, user=False)
    shifted = _apply_statistic(direction, releases[3:], user=False)
    assert np.array_equal(whole[3:], shifted)
