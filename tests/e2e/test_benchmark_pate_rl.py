"""benchmarks/pate_rl.py without Ray: teacher partition, steps to target, table, plot, RESULTS."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from benchmark_modules import benchmark_fixture

bench = benchmark_fixture("pate_rl")


def test_teacher_gravity_sets_are_disjoint_and_inside_the_range(bench) -> None:
    sets = bench.teacher_gravities(8, 5.0, 15.0)
    assert len(sets) == 8 and all(len(s) == 3 for s in sets)
    flat = [g for s in sets for g in s]
    assert flat == sorted(flat) and len(set(flat)) == 24
    assert 5.0 < min(flat) and max(flat) < 15.0
    for i, gravities in enumerate(sets):  # teacher i's set lies in slice i only
        assert all(5.0 + 1.25 * i < g < 5.0 + 1.25 * (i + 1) for g in gravities)


def test_steps_to_threshold_is_the_first_iteration_at_or_above_it(bench) -> None:
    steps = [2000, 4000, 6000, 8000]
    assert bench.steps_to_threshold(steps, [math.nan, 120.0, 195.0, 150.0], 195.0) == 6000
    assert bench.steps_to_threshold(steps, [10.0, 20.0, 30.0, 40.0], 195.0) == math.inf


def _arms() -> dict:
    def run(seed: int, returns: list[float], pate: bool) -> dict:
        steps = [2000 * (i + 1) for i in range(len(returns))]
        out = {"seed": seed, "steps": steps, "returns": returns,
               "to_target": bench_steps(steps, returns)}  # fmt: skip
        if pate:
            out.update(epsilon=9.9, queries=80, answered=80)
        return out

    def bench_steps(steps: list[int], returns: list[float]) -> float:
        return next((float(s) for s, r in zip(steps, returns, strict=True) if r >= 195.0), math.inf)

    slow, fast, never = [50.0, 100.0, 150.0, 199.0], [150.0, 199.0, 200.0, 200.0], [20.0] * 4
    return {
        "ppo": [run(s, slow, False) for s in range(3)],
        "pate": [run(s, fast, True) for s in range(3)],
        "pate-untrained": [run(s, never, True) for s in range(3)],
    }


def test_render_reports_the_ratio_to_ppo_and_the_control(bench, tmp_path: Path) -> None:
    args = bench.build_parser().parse_args(["--seeds", "3", "--cap", "8000"])
    args.batch = 2000
    teachers = {
        "wall_s": 12.0,
        "trained": [
            {"index": 0, "gravities": [5.2, 5.5, 5.8], "steps": 40000, "return": 196.0,
             "greedy_return": 200.0},
        ],
    }  # fmt: skip
    plot = bench.draw(args, _arms(), tmp_path / "curves.png")
    assert plot.stat().st_size > 0
    text = bench.render(args, teachers, _arms(), plot, ["--seeds", "3"])
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()}
    assert "| 8,000 | 8,000 / 8,000 / 8,000 | 3/3 | — |" in rows["PPO (no teachers)"]
    assert "| 4,000 |" in rows["PATE-PPO, competent teachers"]
    assert "| 0.50 |" in rows["PATE-PPO, competent teachers"]
    assert "| 9.90 | 80 |" in rows["PATE-PPO, competent teachers"]
    assert "| not reached |" in rows["PATE-PPO, untrained teachers (control)"]
    assert "0/3" in rows["PATE-PPO, untrained teachers (control)"]
    assert "1/1 competent" in text and "PATE-PPO / PPO = 0.50" in text

    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n")
    bench.RESULTS.write(results, {"rl": text})
    assert "<!-- pate:rl:start -->" in results.read_text()


def test_quick_settings_and_aggregator_choices(bench) -> None:
    args = bench.build_parser().parse_args(["--quick", "--aggregator", "lnmax"])
    assert args.quick and args.aggregator == "lnmax"
    assert bench._pate_settings(args)["pate_gamma"] == args.gamma
    args = bench.build_parser().parse_args([])
    settings = bench._pate_settings(args)
    assert settings["pate_gnmax_sigma"] == args.sigma and "pate_gamma" not in settings
    with pytest.raises(SystemExit):
        bench.build_parser().parse_args(["--aggregator", "confident"])


def test_shipped_student_yaml_has_the_measured_settings(bench) -> None:
    import yaml

    path = Path(__file__).resolve().parents[2] / "tuned_configs" / "pate_ppo_cartpole.yaml"
    config = yaml.safe_load(path.read_text())["pate-ppo-cartpole"]["config"]
    measured = bench._pate_settings(bench.build_parser().parse_args([]))
    for key, value in measured.items():
        assert config[key] == (pytest.approx(value) if isinstance(value, float) else value), key
    for key, value in bench.PPO_SETTINGS.items():
        assert config[key] == pytest.approx(value), key
    teachers = Path(__file__).resolve().parents[2] / "tuned_configs" / "pate_teachers_cartpole.yaml"
    grid = yaml.safe_load(teachers.read_text())["pate-teachers-cartpole"]["config"]["env_config"]
    assert grid["gravity_choices"]["grid_search"] == bench.teacher_gravities(24, 5.0, 15.0)
