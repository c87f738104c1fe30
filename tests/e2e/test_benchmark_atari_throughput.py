"""benchmarks/atari_throughput.py: its arithmetic and report, without training anything."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.e2e.benchmark_modules import benchmark_fixture

bench = benchmark_fixture("atari_throughput")


def test_variant_parsing_names_the_problem(bench: ModuleType) -> None:
    assert bench.parse_variant('one runner={"num_env_runners": 1}') == (
        "one runner",
        {"num_env_runners": 1},
    )
    for text, message in (("no-equals", "NAME=JSON"), ("x={", "invalid JSON"), ("x=[1]", "object")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            bench.parse_variant(text)


def _fake_run(tmp_path: Path, rows: list[dict[str, Any]], returncode: int = 0) -> Any:
    def run(command: list[str], **kwargs: Any) -> Any:
        storage = Path(command[command.index("--storage-path") + 1])
        trial = storage / "exp" / "trial"
        trial.mkdir(parents=True)
        (trial / "result.json").write_text("\n".join(json.dumps(row) for row in rows))

        class _Done:
            stderr = "boom"

        _Done.returncode = returncode
        return _Done()

    return run


def _row(steps: float, seconds: float) -> dict[str, Any]:
    timers = {"env_runner_sampling_timer": 0.5, "learner_update_timer": 0.25}
    return {"num_env_steps_sampled_lifetime": steps, "time_total_s": seconds, "timers": timers}


def test_rate_skips_the_warmup_iterations(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Iteration 1 takes 10 s (start-up); afterwards 4,000 steps per second.
    rows = [_row(4000, 10.0), _row(8000, 11.0), _row(12000, 12.0), _row(16000, 13.0)]
    monkeypatch.setattr(bench.subprocess, "run", _fake_run(tmp_path, rows))
    result = bench.training_rate(tmp_path / "x.yaml", {}, 16000, warmup=1)
    assert result["env_steps_per_s"] == pytest.approx(4000.0)
    assert result["steps_per_iteration"] == pytest.approx(4000.0)
    assert result["sampling_s"] == 0.5 and result["learner_s"] == 0.25


def test_a_failed_or_short_run_is_an_error(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench.subprocess, "run", _fake_run(tmp_path, [_row(4000, 1.0)]))
    with pytest.raises(bench.BenchmarkError, match="raise --steps"):
        bench.training_rate(tmp_path / "x.yaml", {}, 4000, warmup=1)


def test_report_gives_the_ratio_to_the_mean_emulator_rate(bench: ModuleType) -> None:
    row = {
        "env_steps_per_s": 4500.0,
        "sampling_s": 0.6,
        "learner_s": 0.3,
        "steps_per_iteration": 4032.0,
        "load_before": 0.5,
        "load_after": 1.9,
    }
    text = bench.report("cfg.yaml", [4400.0, 4600.0], {"shipped YAML": row}, ["--steps", "9"])
    assert "| shipped YAML | 4,500 | 1.00× | 0.60 | 0.30 | 4,032 | 0.50 → 1.90 |" in text
    assert "python benchmarks/atari_throughput.py --steps 9" in text
    assert "mean 4,500" in text
