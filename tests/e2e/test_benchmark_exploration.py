"""benchmarks/exploration.py without starting Ray: its tables and RESULTS.md update."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmark_modules import BENCH_DIR, benchmark_fixture

_PATH = BENCH_DIR / "exploration.py"
bench = benchmark_fixture("exploration")


def test_script_does_not_import_ray_at_module_level() -> None:
    top_level = [
        line for line in _PATH.read_text().splitlines() if line.startswith(("import ", "from "))
    ]
    assert not any("ray" in line or "torch" in line for line in top_level), top_level


def test_success_table_counts_solved_runs(bench) -> None:
    runs = [
        {
            "seed": 0,
            "bonus": True,
            "solved_at": 30000,
            "first_goal": 10000,
            "env_steps": 30000,
            "wall_s": 1.0,
        },
        {
            "seed": 1,
            "bonus": True,
            "solved_at": 50000,
            "first_goal": 20000,
            "env_steps": 50000,
            "wall_s": 1.0,
        },
        {
            "seed": 0,
            "bonus": False,
            "solved_at": None,
            "first_goal": None,
            "env_steps": 80000,
            "wall_s": 1.0,
        },
        {
            "seed": 1,
            "bonus": False,
            "solved_at": None,
            "first_goal": 7000,
            "env_steps": 80000,
            "wall_s": 1.0,
        },
    ]
    table = bench.success_table(runs, 80000)
    assert "| PPO + SimHash bonus | 2/2 | 40,000 | 2/2 |" in table
    assert "| PPO (no bonus) | 0/2 | — | 1/2 |" in table


def test_results_md_section_is_replaced_not_duplicated(bench, tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text("# Benchmark results\n\nother section\n")
    bench.RESULTS.write(path, "first")
    bench.RESULTS.write(path, "second")
    text = path.read_text()
    assert text.count(bench.RESULTS.start) == 1 and "second" in text and "first" not in text
    assert "other section" in text


def test_frozenlake_table_reports_steps_or_best_return_at_the_cap(bench) -> None:
    runs = [
        {"arm": "simhash", "seed": 0, "reached_at": 52000, "best_return": 1.0},
        {"arm": "rllib", "seed": 0, "reached_at": None, "best_return": 0.4},
    ]
    for run, steps in zip(runs, (52000, 120000), strict=True):
        run.update(env_steps=steps, wall_s=10.0)
    table = bench.frozenlake_table(runs)
    simhash, rllib = (bench.FROZENLAKE_ARMS[arm][2] for arm in ("simhash", "rllib"))
    assert f"| {simhash} | 0 | 52,000 | 1.000 |" in table
    assert f"| {rllib} | 0 | not reached | 0.400 |" in table
    assert f"| {simhash} | 1/1 | 52,000 | 52,000 |" in table
    assert f"| {rllib} | 0/1 | — | — |" in table
    assert "120,000" in table
    section = bench.render(bench.build_parser().parse_args([]), {"frozenlake": runs}, "python x.py")
    assert "### FrozenLake 8x8" in section and table in section


def test_frozenlake_summary_takes_the_median_over_seeds(bench) -> None:
    runs = [
        {"arm": "simhash", "seed": seed, "reached_at": steps, "best_return": 1.0}
        for seed, steps in enumerate((80000, None, 60000, 100000))
    ]
    for run in runs:
        run.update(env_steps=run["reached_at"] or 200000, wall_s=1.0)
    table = bench.frozenlake_table(runs)
    assert (
        f"| {bench.FROZENLAKE_ARMS['simhash'][2]} | 3/4 | 80,000 | 80,000, —, 60,000, 100,000 |"
        in (table)
    )


def test_merge_json_joins_the_runs_of_several_invocations(bench, tmp_path, capsys) -> None:
    def run(arm: str, seed: int) -> dict:
        return {
            "arm": arm,
            "seed": seed,
            "reached_at": 1000 * (seed + 1),
            "best_return": 1.0,
            "env_steps": 1000 * (seed + 1),
            "wall_s": 1.0,
        }

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"frozenlake": [run("simhash", 1), run("rllib", 1)]}))
    second.write_text(json.dumps({"frozenlake": [run("simhash", 0)]}))
    assert bench.main(["--merge-json", str(first), str(second)]) == 0
    out = capsys.readouterr().out
    assert f"| {bench.FROZENLAKE_ARMS['simhash'][2]} | 2/2 | 1,500 | 1,000, 2,000 |" in out


def test_unknown_frozenlake_arm_is_rejected(bench) -> None:
    args = bench.build_parser().parse_args(["--frozenlake-arms", "simhash,bogus"])
    with pytest.raises(SystemExit, match="bogus"):
        bench.run_frozenlake(args)
    with pytest.raises(ValueError, match="bogus"):
        bench.frozenlake_algo("bogus", 0)


def test_unknown_part_is_rejected_before_ray_starts(bench) -> None:
    with pytest.raises(SystemExit, match="frozenlake"):
        bench.main(["--parts", "speed,bogus"])
