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


def _row(steps: float, seconds: float, sampling: float = 0.5, learner: float = 0.25) -> Any:
    timers = {"env_runner_sampling_timer": sampling, "learner_update_timer": learner}
    return {"num_env_steps_sampled_lifetime": steps, "time_total_s": seconds, "timers": timers}


def _ema(values: list[float], coeff: float = 0.01) -> list[float]:
    """What RLlib reports: its EMA of the values, starting at the first."""
    out = [values[0]]
    for value in values[1:]:
        out.append((1 - coeff) * out[-1] + coeff * value)
    return out


def test_timers_are_each_iterations_own_value_not_the_ema(bench: ModuleType) -> None:
    # The first iteration's 4 s (start-up) dominates RLlib's EMA for a hundred iterations.
    values = [4.0, 0.5, 0.7, 0.6]
    recovered = bench.per_iteration_values(_ema(values))
    assert recovered == pytest.approx(values[1:], abs=1e-9)


def test_rate_skips_the_warmup_iterations(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Iteration 1 takes 10 s (start-up); afterwards 4,000 steps per second.
    sampling = _ema([9.0, 0.4, 0.5, 0.6])
    rows = [_row(4000 * (i + 1), 10.0 + i, sampling=sampling[i], learner=0.25) for i in range(4)]
    monkeypatch.setattr(bench.subprocess, "run", _fake_run(tmp_path, rows))
    result = bench.training_rate(tmp_path / "x.yaml", {}, 16000, warmup=1)
    assert result["env_steps_per_s"] == pytest.approx(4000.0)
    assert result["steps_per_iteration"] == pytest.approx(4000.0)
    assert result["iteration_s"] == pytest.approx(1.0)
    # Iterations 3 and 4's own values (after the warm-up one): median 0.55, not the EMA's 6.
    assert result["sampling_s"] == pytest.approx(0.55)
    assert result["learner_s"] == pytest.approx(0.25)


def test_a_run_override_trains_a_copy_of_the_yaml_with_that_algorithm(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    yaml_file = tmp_path / "teacher.yaml"
    yaml_file.write_text("exp:\n  run: PPO\n  env: CartPole-v1\n  config:\n    lr: 0.001\n")
    seen: dict[str, Any] = {}
    fake = _fake_run(tmp_path, [_row(4000 * (i + 1), 10.0 + i) for i in range(4)])

    def run(command: list[str], **kwargs: Any) -> Any:
        path = Path(command[command.index("-f") + 1])
        seen["file"], seen["text"] = path, path.read_text()
        seen["config"] = json.loads(command[command.index("--config") + 1])
        return fake(command, **kwargs)

    monkeypatch.setattr(bench.subprocess, "run", run)
    bench.training_rate(yaml_file, {"run": "PipelinedPPO", "lr": 0.01}, 16000, warmup=1)
    assert seen["file"] != yaml_file and "run: PipelinedPPO" in seen["text"]
    assert "lr: 0.001" in seen["text"] and seen["config"] == {"lr": 0.01}
    assert "run: PPO" in yaml_file.read_text()  # the shipped file is untouched


def test_a_failed_or_short_run_is_an_error(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench.subprocess, "run", _fake_run(tmp_path, [_row(4000, 1.0)]))
    with pytest.raises(bench.BenchmarkError, match="raise --steps"):
        bench.training_rate(tmp_path / "x.yaml", {}, 4000, warmup=1)


def _measured(rate: float, emulator: float) -> dict[str, Any]:
    return {
        "env_steps_per_s": rate,
        "emulator": emulator,
        "ratio": rate / emulator,
        "iteration_s": 0.9,
        "sampling_s": 0.6,
        "learner_s": 0.3,
        "steps_per_iteration": 4032.0,
        "load_before": 0.5,
        "load_after": 1.9,
    }


def test_report_gives_every_run_and_each_variants_median_ratio(bench: ModuleType) -> None:
    runs = [
        ("shipped YAML", _measured(4500.0, 4500.0)),
        ("PPO step", _measured(4000.0, 5000.0)),
        ("shipped YAML", _measured(5400.0, 4500.0)),
    ]
    text = bench.report("cfg.yaml", runs, ["--steps", "9"])
    assert (
        "| shipped YAML | 4,500 | 4,500 | 1.00× | 0.90 | 0.60 | 0.30 | 4,032 | 0.50 → 1.90 |"
        in text
    )
    assert "| PPO step | 4,000 | 5,000 | 0.80× |" in text
    assert "- shipped YAML: median 1.10× the emulator over 2 runs (range 1.00-1.20×)" in text
    assert "- PPO step: median 0.80× the emulator over 1 run (range 0.80-0.80×)" in text
    assert "python benchmarks/atari_throughput.py --steps 9" in text


def test_each_run_is_compared_with_the_emulator_measured_around_it(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The host slows down run by run: each ratio must use its own neighbours.
    emulator = iter([5000.0, 4000.0, 3000.0, 2000.0, 1000.0])
    monkeypatch.setattr(bench, "emulator_rate", lambda *a: next(emulator))
    rates = iter([4500.0, 3500.0, 2500.0, 1500.0])

    def training_rate(*args: Any) -> dict[str, Any]:
        row = _measured(next(rates), 1.0)
        del row["emulator"], row["ratio"]
        return row

    monkeypatch.setattr(bench, "training_rate", training_rate)
    assert bench.main(["--repeats", "2", "--variant", "b={}", "--only-shipped"]) == 0
    out = capsys.readouterr().out
    # Runs in turn: shipped, b, shipped, b; each against the mean of the measurements around it.
    for rate, around in ((4500, 4500), (3500, 3500), (2500, 2500), (1500, 1500)):
        assert f"| {rate:,} | {around:,} | 1.00× |" in out
