"""benchmarks/soak.py: its statistics and checks, plus one tiny arm on a local Ray."""

from __future__ import annotations

import argparse
import math

import pytest
from benchmark_modules import BENCH_DIR, benchmark_fixture

_PATH = BENCH_DIR / "soak.py"
MB = 2**20
soak = benchmark_fixture("soak", name="soak")


def _samples(soak, table_mb_per_1k: float, rss_mb_per_1k: float, n: int = 20, noise=0.0):
    """Samples every 500 submissions with linear table/RSS growth (± alternating noise)."""
    out = []
    for i in range(n):
        subm = 500 * (i + 1)
        wiggle = noise * MB * (1 if i % 2 else -1)
        out.append(
            soak.Sample(
                elapsed_s=10.0 * (i + 1),
                submissions=subm,
                submissions_per_s=50.0,
                driver_rss=int(500 * MB + rss_mb_per_1k * MB * subm / 1000 + wiggle),
                runner_rss=[300 * MB] * 4,
                table_entries=subm,
                table_bytes=int(table_mb_per_1k * MB * subm / 1000),
                counted_states=60 * subm,
                ledger_releases=subm,
                max_epsilon_spent=10.0,
            )
        )
    return out


def test_script_does_not_import_ray_or_torch_at_module_level() -> None:
    top_level = [
        line for line in _PATH.read_text().splitlines() if line.startswith(("import ", "from "))
    ]
    assert not any("ray" in line or "torch" in line for line in top_level), top_level


def test_parse_arms(soak) -> None:
    assert soak.parse_arms("runner:count_min, agent:exact") == [
        soak.Arm("env_runner", "count_min"),
        soak.Arm("agent", "exact"),
    ]
    assert soak.Arm("env_runner", "exact").label == "runner:exact"
    for bad in ("runner", "runner:bloom", "global:exact", "agent:exact,agent:exact"):
        with pytest.raises(ValueError, match="arm|distinct"):
            soak.parse_arms(bad)


def test_growth_is_the_fitted_slope_in_mb_per_10k(soak) -> None:
    samples = _samples(soak, table_mb_per_1k=0.25, rss_mb_per_1k=2.0, noise=0.5)
    assert soak.growth_mb_per_10k(samples, "table_bytes") == pytest.approx(2.5, rel=1e-6)
    # Alternating ±0.5 MB noise barely moves the least-squares slope of 20 MB/10k.
    assert soak.growth_mb_per_10k(samples, "total_rss") == pytest.approx(20.0, abs=0.5)
    fit = soak.linear_fit([1.0, 2.0, 3.0], [5.0, 5.0, 5.0])
    assert (fit.slope, fit.intercept) == (0.0, 5.0)
    assert math.isnan(soak.linear_fit([1.0, 1.0], [1.0, 2.0]).slope)


def test_flatness_uses_the_fit_not_one_noisy_sample(soak) -> None:
    noisy_flat = _samples(soak, 0.0, 0.0, noise=30.0)  # ±30 MB jitter, no trend
    assert soak.is_flat(noisy_flat, "total_rss", tolerance_mb=10.0)
    growing = _samples(soak, 0.0, 1.0)  # 1 MB per 1k over ~9k submissions after warm-up
    assert not soak.is_flat(growing, "total_rss", tolerance_mb=5.0)
    assert soak.is_flat(growing, "total_rss", tolerance_mb=10.0)
    assert soak.is_flat(_samples(soak, 0.0, 0.0), "table_bytes", tolerance_mb=0.0)
    assert not soak.is_flat(_samples(soak, 0.01, 0.0), "table_bytes", tolerance_mb=0.0)


def test_ledger_check_catches_every_mismatch(soak) -> None:
    def result(**overrides):
        fields = {
            "arm": soak.Arm("env_runner", "exact"),
            "samples": _samples(soak, 0.1, 0.0),
            "wall_s": 200.0,
            "epsilon": 10.0,
            "runner_releases": 10_003,
            "ledger_releases": 10_003,
            "submissions_received": 10_003,
        }
        fields.update(overrides)
        return soak.ArmResult(**fields)

    assert soak.check_ledger(result()) == []
    assert "runners produced" in soak.check_ledger(result(runner_releases=10_004))[0]
    assert "submissions received" in soak.check_ledger(result(submissions_received=10_002))[0]
    over = _samples(soak, 0.1, 0.0)
    over[3].max_epsilon_spent = 10.5
    assert "spent" in soak.check_ledger(result(samples=over))[0]
    lost = _samples(soak, 0.1, 0.0)
    lost[5].ledger_releases -= 1
    assert "ledger had" in soak.check_ledger(result(samples=lost))[0]
    table = soak.results_table([result(runner_releases=1)], tolerance_mb=10.0)
    assert "| runner:exact |" in table and "NO (10003 = 1)" in table


def test_results_md_section_is_replaced_in_place(soak, tmp_path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep\n<!-- other:end -->\n")
    soak.RESULTS.write(path, "first run")
    soak.RESULTS.write(path, "second run")
    text = path.read_text()
    assert "keep" in text and "second run" in text and "first run" not in text
    assert text.count(soak.RESULTS.start) == 1 and text.count(soak.RESULTS.end) == 1


@pytest.mark.ray
@pytest.mark.slow
def test_one_tiny_arm_keeps_the_ledger_equal_to_the_releases(soak, ray_session) -> None:
    args = argparse.Namespace(
        num_env_runners=1,
        num_cpus=2,
        cpus_per_runner=0.5,
        num_bits=16,
        submissions_per_iteration=10,
        seed=0,
        minutes=None,
        submissions=20,
        verbose=False,
    )
    base = soak.load_base_config(soak.DEFAULT_CONFIG)
    result = soak.run_arm(soak.Arm("env_runner", "exact"), base, args)
    assert soak.check_ledger(result) == []
    assert [s.submissions for s in result.samples] == [10, 20]
    assert result.ledger_releases >= 20 and result.runner_releases == result.ledger_releases
    first, last = result.samples
    # One long-lived exact table on the one runner: it holds every counted state.
    assert 0 < first.table_entries <= last.table_entries
    assert last.table_bytes == 16 * last.table_entries
    assert last.counted_states >= 20  # at least one state per episode
    assert last.driver_rss > 0 and len(last.runner_rss) == 1 and last.runner_rss[0] > 0
