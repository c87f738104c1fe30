"""benchmarks/kickstart.py without starting Ray: statistics, arguments, RESULTS.md."""

from __future__ import annotations

import argparse
import collections
import json
import math
import subprocess
import sys
import types
from pathlib import Path

import pytest
from benchmark_modules import BENCH_DIR, benchmark_fixture

INF = math.inf
_PATH = BENCH_DIR / "kickstart.py"
bench = benchmark_fixture("kickstart")


def test_script_imports_no_ray_or_torch_at_module_level() -> None:
    source = _PATH.read_text()
    top_level = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not any("ray" in line or "torch" in line for line in top_level), top_level
    # And importing it really leaves them unloaded (a fresh interpreter; no Ray started).
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH_DIR)!r})\n"
        "import kickstart\n"
        "print(sorted(n for n in ('ray', 'torch', 'rllib_privacy') if n in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_steps_to_threshold_is_the_first_result_at_or_above_the_target(bench) -> None:
    steps = [2000, 4000, 6000, 8000]
    assert bench.steps_to_threshold(steps, [20.0, 449.9, 450.0, 500.0], 450.0) == 6000.0
    assert bench.steps_to_threshold(steps, [20.0, 30.0, 40.0, 449.0], 450.0) == INF
    # A later dip does not matter: the first crossing counts.
    assert bench.steps_to_threshold(steps, [460.0, 100.0, 100.0, 100.0], 450.0) == 2000.0
    # Negative targets (Acrobot): -99 >= -100 reaches, -101 does not.
    assert bench.steps_to_threshold(steps, [-500.0, -101.0, -99.0, -90.0], -100.0) == 6000.0
    # No finished episode yet (None/NaN) never counts, even for a very low target.
    assert bench.steps_to_threshold([1, 2], [None, math.nan], -1e9) == INF
    assert bench.steps_to_threshold([], [], 1.0) == INF
    with pytest.raises(ValueError, match="same length"):
        bench.steps_to_threshold([1, 2], [1.0], 0.0)


def test_median_steps_sorts_not_reached_seeds_last(bench) -> None:
    assert bench.median_steps([30.0, 10.0, 20.0]) == 20.0
    assert bench.median_steps([40.0, 10.0, 30.0, 20.0]) == 25.0
    assert bench.median_steps([INF, 10.0, 20.0]) == 20.0  # 1 of 3 not reached
    assert bench.median_steps([INF, INF, 10.0]) == INF  # most not reached
    assert bench.median_steps([INF, 10.0]) == INF  # half of an even count
    assert math.isnan(bench.median_steps([]))


def test_spread_and_reached_count_include_not_reached_seeds(bench) -> None:
    assert bench.spread([30.0, INF, 10.0]) == (10.0, INF)
    assert bench.spread([5.0]) == (5.0, 5.0)
    assert all(math.isnan(v) for v in bench.spread([]))
    assert bench.num_reached([30.0, INF, 10.0, INF]) == 2


def test_speedup_is_teacher_over_student_steps(bench) -> None:
    assert bench.speedup(40_000.0, 10_000.0) == pytest.approx(4.0)
    assert bench.speedup(10_000.0, 20_000.0) == pytest.approx(0.5)
    assert bench.speedup(40_000.0, INF) == 0.0  # only the teacher reached T
    assert math.isnan(bench.speedup(INF, 10_000.0))  # no reference
    assert math.isnan(bench.speedup(10_000.0, math.nan))


def test_student_cap_is_whole_batches_of_a_multiple_of_the_teacher(bench) -> None:
    assert bench.student_cap(46_000.0, factor=1.25, cap=150_000, batch=2000) == 58_000
    assert bench.student_cap(46_000.0, factor=1.0, cap=150_000, batch=2000) == 46_000
    assert bench.student_cap(46_000.0, factor=10.0, cap=150_000, batch=2000) == 150_000
    assert bench.student_cap(INF, factor=1.25, cap=150_000, batch=2000) == 150_000
    assert bench.student_cap(100.0, factor=0.5, cap=150_000, batch=2000) == 2000


def _run(bench, seed: int, steps: float, **kwargs):
    values = dict(
        env_steps=int(steps if math.isfinite(steps) else 8000),
        final_return=1.0,
        iterations=3,
        wall_s=10.0,
        path="/tmp/x",
    )
    values.update(kwargs)
    return bench.RunResult(seed=seed, steps_to_target=steps, **values)


def _task_result(bench, teacher_steps: float = 40_000.0, plot: Path | None = None):
    aware = bench.ArmResult(
        "privacy-aware",
        [
            _run(bench, 0, 8000.0, epsilon_spent=1e5, delta_spent=1e-3, answered=8000.0),
            _run(bench, 1, 12_000.0, epsilon_spent=2e5, delta_spent=2e-3, answered=12_000.0),
            _run(
                bench,
                2,
                INF,
                epsilon_spent=3e5,
                delta_spent=3e-3,
                answered=16_000.0,
                stopped_at=5.0,
            ),
        ],
        cap=50_000,
    )
    baseline = bench.ArmResult("no-kickstart", [_run(bench, s, INF) for s in range(3)], cap=50_000)
    teacher = _run(bench, 0, teacher_steps)
    return bench.TaskResult(
        task=bench.TASKS["cartpole"],
        teacher=teacher,
        teacher_cap=150_000,
        arms=[aware, baseline],
        plot=str(plot or bench.BENCH_DIR / "kickstart_cartpole.png"),
        wall_s=123.0,
    )


def test_arm_table_reports_median_spread_ratio_and_privacy(bench) -> None:
    table = bench.arm_table(_task_result(bench))
    aware = next(line for line in table.splitlines() if line.startswith("| privacy-aware"))
    cells = [c.strip() for c in aware.strip("|").split("|")]
    assert cells[1] == "2/3"  # reached T
    assert cells[2] == "12,000"  # median with the not-reached seed sorted last
    assert cells[3] == "8,000 – not reached"
    assert cells[4] == "3.33×"  # 40,000 / 12,000
    assert cells[5] == "5.00×, 3.33×, 0 (not reached)"
    assert cells[6] == "2e+05" and cells[7] == "0.002"
    assert cells[9] == "no, no, 5"
    baseline = next(line for line in table.splitlines() if line.startswith("| no-kickstart"))
    cells = [c.strip() for c in baseline.strip("|").split("|")]
    assert cells[1] == "0/3" and cells[2] == "not reached" and cells[4] == "0 (not reached)"
    assert cells[6] == "—"  # no teacher, no privacy spend


def _args(bench, tmp_path: Path, *extra: str) -> argparse.Namespace:
    args = bench.parse_args(["--results-md", str(tmp_path / "RESULTS.md"), *extra])
    return args


_MACHINE = {
    "nproc": 2,
    "cpu_model": "cpu",
    "ram_gib": 1.0,
    "load_1min": 3.0,
    "python": "3",
    "ray": "r",
    "torch": "t",
}


def _overhead(bench, kickstart_s, ppo_s, answer_s, rollout_s=None, **cache):
    """An OverheadResult; without ``cache`` fields as a run before the cache arm wrote it."""
    return bench.OverheadResult(
        kickstart_s=kickstart_s,
        ppo_s=ppo_s,
        teacher_answer_s=answer_s,
        teacher_rollout_s=rollout_s or [0.01] * len(answer_s),
        warmup=1,
        batch=2000,
        sharing=[1.0] * len(kickstart_s),
        teacher_source="test",
        **cache,
    )


def test_parts_are_rendered_and_replaced_between_markers(bench, tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text(
        "# Benchmark results\n\n<!-- pgc_a3c:start -->\nother benchmark\n<!-- pgc_a3c:end -->\n"
    )
    args = _args(bench, tmp_path, "--write-results")
    overhead = _overhead(bench, [2.2, 2.0, 2.1], [2.0, 1.9, 2.0], [0.05, 0.04, 0.06])
    task = _task_result(bench, plot=tmp_path / "kickstart_cartpole.png")
    parts = bench.render_parts([task], overhead, args, _MACHINE, "day one")
    assert set(parts) == {"cartpole", "overhead"}
    bench.RESULTS.write(path, parts)
    text = path.read_text()
    assert text.index("other benchmark") < text.index(bench.RESULTS.start)  # appended at the end
    assert "day one" in text and "python benchmarks/kickstart.py" in text
    assert "(kickstart_cartpole.png)" in text  # linked relative to RESULTS.md
    assert "1.050×" in text and "**met**" in text  # medians 2.1 / 2.0
    # A later run of the overhead part only replaces that part and keeps the task's.
    bench.RESULTS.write(path, bench.render_parts([], overhead, args, _MACHINE, "day two"))
    text = path.read_text()
    assert text.count("day one") == 1 and text.count("day two") == 1
    assert text.index("kickstart:cartpole:start") < text.index("kickstart:overhead:start")
    # A part for a task earlier in the order is put back before the overhead part.
    bench.RESULTS.write(path, {"acrobot": "acrobot part"})
    text = path.read_text()
    assert text.index("kickstart:acrobot:start") < text.index("kickstart:overhead:start")
    assert text.count(bench.RESULTS.start) == 1 and text.count(bench.RESULTS.end) == 1
    assert text.count(bench.RESULTS.title) == 1 and "other benchmark" in text
    assert text.endswith(bench.RESULTS.end + "\n")


def test_overhead_ratio_and_target(bench) -> None:
    result = _overhead(bench, [3.0, 1.0, 2.4], [2.0, 2.0, 1.0], [0.1, 0.05, 0.1], [0.0, 0.1, 0.0])
    assert result.ratio == pytest.approx(1.2)  # medians 2.4 / 2.0
    assert result.teacher_median == pytest.approx(0.1)  # per-iteration totals 0.1, 0.15, 0.1
    parts = bench.render_parts([], result, bench.parse_args([]), _MACHINE, "d")
    assert "**missed**" in parts["overhead"]


def bench_plan() -> types.ModuleType:
    """The benchmark's plan module (its arms), imported with the benchmark."""
    import kickstart_bench.plan

    return kickstart_bench.plan


def test_parse_args_defaults_quick_and_validation(bench, tmp_path: Path) -> None:
    args = bench.parse_args([])
    assert args.tasks == ["cartpole", "acrobot"] and args.seeds == 3
    assert args.arms == [
        "privacy-aware",
        "privacy-unaware",
        "plain-kickstart",
        "no-kickstart",
        "aware-eps100-cache32",
        "aware-eps10-cache16",
        "aware-eps10-k5-cache24",
        "aware-eps10-replay",
        "aware-eps1-replay",
        "aware-eps10-debiased-eta0.4",
        "aware-eps10-debiased-eta0.3",
        "aware-eps10-debiased-eta0.4-spread",
        "aware-eps10-debiased-eta0.3-spread",
        "aware-eps10-debiased-eta0.4-fade",
        "aware-eps10-debiased-eta0.3-fade",
        "aware-eps10-debiased-eta0.4-spread-fade",
        "aware-eps10-debiased-eta0.3-spread-fade",
        "aware-eps10-argmax-eta0.4",
        "aware-eps10-argmax-eta0.3",
        "aware-eps10-argmax-eta0.4-spread",
        "aware-eps10-argmax-eta0.3-spread",
        "aware-eps10-argmax-eta0.4-fade",
        "aware-eps10-argmax-eta0.3-fade",
        "aware-eps10-argmax-eta0.4-spread-fade",
        "aware-eps10-argmax-eta0.3-spread-fade",
        "aware-eps1-argmax-eta0.45-k30-spread-fade30k",
        "aware-eps1-argmax-eta0.3-k100-spread-fade15k",
    ]
    # The measured variants run by name only, and each names an arm that exists.
    assert not set(args.arms) & bench_plan().VARIANT_ARMS
    assert bench_plan().VARIANT_ARMS <= set(bench_plan().ARMS)
    assert args.plot_dir is None and not args.write_results
    assert args.command_line == "python benchmarks/kickstart.py"
    quick = bench.parse_args(["--quick", "--seeds", "4"])
    assert quick.seeds == 4 and quick.teacher_cap == bench.QUICK_DEFAULTS["teacher_cap"]
    assert quick.command_line == "python benchmarks/kickstart.py --quick --seeds 4"
    written = bench.parse_args(["--write-results", "--tasks", "acrobot,acrobot"])
    assert written.plot_dir == bench.BENCH_DIR and written.tasks == ["acrobot"]
    targets = bench.parse_args(["--targets", "cartpole=400,acrobot=-120"]).targets
    assert targets == {"cartpole": 400.0, "acrobot": -120.0}
    for bad in (
        ["--tasks", "lunarlander"],
        ["--arms", "privacy_aware"],
        ["--seeds", "0"],
        ["--student-cap-factor", "0"],
        ["--targets", "pong=1"],
        ["--overhead-only", "--no-overhead"],
        ["--analyze-only"],  # needs the earlier run's --storage-path
        ["--overhead-iterations", "0"],
        ["--overhead-warmup", "-1"],
    ):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


def test_student_config_split_keeps_ppo_and_kickstart_keys_apart(bench) -> None:
    config = bench.load_yaml_config(bench.STUDENT_YAML)
    ppo, kickstart = bench.split_student_config(config)
    assert set(bench.PPO_KEYS) <= set(ppo) and "model_config" in ppo
    assert kickstart["teacher_mechanism"] == "dirichlet"
    assert all(k.startswith(("teacher_", "kickstart_")) for k in kickstart)
    # Set per arm/task/seed by the benchmark, never taken from the YAML.
    assert not {"teacher_checkpoint", "num_env_runners"} & (set(ppo) | set(kickstart))


def test_missing_experiment_file_is_a_clear_error_before_ray(bench, tmp_path: Path) -> None:
    with pytest.raises(bench.BenchmarkError, match="not found"):
        bench.load_yaml_config(tmp_path / "missing.yaml")
    assert bench.main(["--student-config", str(tmp_path / "missing.yaml")]) == 2


def test_arm_of_classifies_trials_by_trainable_and_config(bench) -> None:
    dirichlet = {"teacher_mechanism": "dirichlet"}
    assert bench.arm_of("KickstartPPO", {**dirichlet, "kickstart_lambda": 0.5}) == "privacy-aware"
    assert bench.arm_of("KickstartPPO", {**dirichlet, "kickstart_lambda": 0.0}) == "privacy-unaware"
    plain = {"teacher_mechanism": "none", "kickstart_lambda": 0.0}
    assert bench.arm_of("KickstartPPO", plain) == "plain-kickstart"
    assert bench.arm_of("PPO", {"lr": 3e-4}) == "no-kickstart"
    with pytest.raises(bench.BenchmarkError, match="matches no arm"):
        bench.arm_of("KickstartPPO", {**dirichlet, "kickstart_lambda": 2.0})


def test_overridden_target_says_so(bench) -> None:
    task = bench.TASKS["acrobot"]
    assert bench._with_target(task, -100.0) is task
    changed = bench._with_target(task, -450.0)
    assert changed.target == -450.0 and "default -100" in changed.why


def test_analyze_only_reports_the_training_run(bench, tmp_path: Path) -> None:
    """A re-analysis names the command that trained, and its wall times, from the record."""
    run = bench.parse_args(["--tasks", "cartpole", "--storage-path", str(tmp_path)])
    assert bench._record_run(run, tmp_path, 10.0, 20.0) == (10.0, 20.0)
    record = json.loads((tmp_path / bench.RUN_RECORD).read_text())
    (tmp_path / bench.RUN_RECORD).write_text(json.dumps({**record, "note": "two runs joined"}))
    again = bench.parse_args(["--analyze-only", "--storage-path", str(tmp_path)])
    assert bench._record_run(again, tmp_path, math.nan, math.nan) == (10.0, 20.0)
    assert again.command_line == run.command_line
    assert again.analyzed_by.startswith("python benchmarks/kickstart.py --analyze-only")
    lines = bench._run_lines(again, _MACHINE, "d")
    assert any("redone" in line and "--analyze-only" in line for line in lines)
    assert "- Note: two runs joined" in lines


def test_finished_means_target_or_cap(bench) -> None:
    stop = (450.0, 10_000)
    steps = bench.STEPS_KEY
    assert bench._finished({"env_runners": {"episode_return_mean": 450.0}, steps: 2000}, stop)
    assert bench._finished({"env_runners": {"episode_return_mean": 20.0}, steps: 10_000}, stop)
    assert not bench._finished({"env_runners": {"episode_return_mean": 449.0}, steps: 8000}, stop)
    assert not bench._finished({"env_runners": {}, steps: 2000}, (-1e9, 10_000))  # no episode
    assert not bench._finished({}, stop)  # interrupted before any result


def test_unfinished_runs_are_marked_in_both_tables(bench) -> None:
    result = _task_result(bench)
    run = result.arms[1].runs[0]
    result.arms[1].runs[0] = bench.dataclasses.replace(run, unfinished=True)
    assert "| no-kickstart | 0/3 (1 unfinished) |" in bench.arm_table(result)
    assert bench.raw_table(result).count("(unfinished: run interrupted)") == 1


def test_paired_ratios_compare_back_to_back_iterations(bench) -> None:
    result = _overhead(bench, [3.0, 1.0, 2.4], [2.0, 2.0, 1.0], [0.1, 0.1, 0.1])
    assert result.paired_ratios == pytest.approx([1.5, 0.5, 2.4])
    part = bench.render_parts([], result, bench.parse_args([]), _MACHINE, "d")["overhead"]
    assert "1.50, 0.50, 2.40 (median 1.50; KickstartPPO slower in 2 of 3 rounds)" in part


def test_task_part_lists_the_seeds_each_arm_ran(bench, tmp_path: Path) -> None:
    task = _task_result(bench, plot=tmp_path / "kickstart_cartpole.png")
    part = bench.render_parts([task], None, _args(bench, tmp_path), _MACHINE, "d")["cartpole"]
    assert "seeds privacy-aware: 0, 1, 2; no-kickstart: 0, 1, 2;" in part


def test_student_folders_include_linked_in_runs(bench, tmp_path: Path) -> None:
    for name in ("students_KickstartPPO", "students_PPO_run2", "students_DQN", "teachers"):
        (tmp_path / name).mkdir()
    (tmp_path / "students_KickstartPPO_run1").symlink_to(tmp_path / "students_KickstartPPO")
    (tmp_path / "students_PPO_note.txt").write_text("not a folder")
    found = [(p.name, a) for p, a in bench.student_folders(tmp_path)]
    assert found == [
        ("students_KickstartPPO", "KickstartPPO"),
        ("students_KickstartPPO_run1", "KickstartPPO"),
        ("students_PPO_run2", "PPO"),
    ]


def test_steps_to_target_and_lower_bar_are_censored_at_the_cap(bench) -> None:
    rows = [
        {bench.STEPS_KEY: 2000.0, "env_runners/episode_return_mean": 100.0},
        {bench.STEPS_KEY: 4000.0, "env_runners/episode_return_mean": 260.0},
        {bench.STEPS_KEY: 5000.0, "env_runners/episode_return_mean": 340.0},
        {bench.STEPS_KEY: 6000.0, "env_runners/episode_return_mean": 460.0},
    ]
    trial = types.SimpleNamespace(rows=rows)
    run = _run(bench, 0, INF)
    full = bench.with_steps_to_target(trial, run, 450.0, 250.0)
    assert (full.steps_to_target, full.steps_to_lower) == (6000.0, 4000.0)
    assert full.steps_to_three_quarters == 5000.0  # the first return >= 0.75·450
    capped = bench.with_steps_to_target(trial, run, 450.0, 250.0, cap=5000)
    assert (capped.steps_to_target, capped.steps_to_lower) == (INF, 4000.0)
    assert capped.steps_to_three_quarters == 5000.0


def test_three_quarters_bar_of_a_negative_return_task_lies_between_its_floor_and_t(bench) -> None:
    # Acrobot: T = −100, returns from −500 (the episode limit); 0.75·T = −75 would lie above T.
    rows = [
        {bench.STEPS_KEY: 2000.0, "env_runners/episode_return_mean": -480.0},
        {bench.STEPS_KEY: 4000.0, "env_runners/episode_return_mean": -210.0},
        {bench.STEPS_KEY: 6000.0, "env_runners/episode_return_mean": -190.0},
        {bench.STEPS_KEY: 8000.0, "env_runners/episode_return_mean": -99.0},
    ]
    acrobot = bench.TASKS["acrobot"]
    assert bench.three_quarters(acrobot.target, acrobot.floor) == -200.0
    assert bench.three_quarters(450.0) == 337.5
    run = bench.with_steps_to_target(
        types.SimpleNamespace(rows=rows), _run(bench, 0, INF), -100.0, -250.0, acrobot.floor
    )
    assert (run.steps_to_lower, run.steps_to_three_quarters, run.steps_to_target) == (
        4000.0,
        6000.0,
        8000.0,
    )


@pytest.mark.parametrize(
    ("bar", "field"), [("T₂", "steps_to_lower"), ("0.75·T", "steps_to_three_quarters")]
)
def test_bar_table_reports_the_speedup_at_each_lower_bar(bench, bar: str, field: str) -> None:
    result = _task_result(bench)
    result.teacher = bench.dataclasses.replace(result.teacher, **{field: 20_000.0})
    runs = result.arms[0].runs
    for run, steps in zip(runs, (5000.0, 10_000.0, INF), strict=True):
        runs[runs.index(run)] = bench.dataclasses.replace(run, **{field: steps})
    table = bench.bar_table(result, bar=bar)
    assert f"| student | reached {bar} | median steps to {bar} |" in table
    assert "| privacy-aware | 2/3 | 10,000 | 5,000 – not reached | 2.00× |" in table
    assert "| no-kickstart | 0/3 | not reached |" in table


def test_arm_of_picks_the_most_specific_arm_of_the_task(bench) -> None:
    cartpole = {
        "env": "CartPole-v1",
        "teacher_mechanism": "dirichlet",
        "kickstart_lambda": 0.5,
        "teacher_vanishing_coefficient": 0.9,  # the YAML's c: not the AirRaid c-arm here
        "teacher_epsilon_budget": 1000.0,
        "teacher_cache_bits": 0,
        "teacher_k": 50.0,
    }
    assert bench.arm_of("KickstartPPO", cartpole) == "privacy-aware"
    small = {**cartpole, "teacher_epsilon_budget": 10.0, "teacher_cache_bits": 16}
    small.update(bench.CACHE_SCHEDULE)
    assert bench.arm_of("KickstartPPO", small) == "aware-eps10-cache16"
    k5 = {**small, "teacher_cache_bits": 24, "teacher_k": 5.0, "teacher_min_k": 0.5}
    assert bench.arm_of("KickstartPPO", k5) == "aware-eps10-k5-cache24"
    airraid = {
        **cartpole,
        "env": "rllib_privacy:ALE/AirRaid-ram-v5",
        "teacher_vanishing_coefficient": 0.3,
    }
    assert bench.arm_of("KickstartPPO", airraid) == "aware-c0.3"
    assert bench.arm_of("KickstartPPO", {**airraid, "kickstart_lambda": 0.0}) == "unaware-c0.3"


def test_default_arms_and_experiment_files_follow_the_tasks(bench) -> None:
    classic = bench.parse_args(["--tasks", "cartpole,acrobot"])
    assert "aware-eps10-cache16" in classic.arms and "plain-kickstart" in classic.arms
    assert not any(arm.endswith(("-c0.1", "-c0.3", "-c0.9")) for arm in classic.arms)
    assert classic.student_config == bench.STUDENT_YAML
    airraid = bench.parse_args(["--tasks", "airraid"])
    assert set(airraid.arms) == {
        "no-kickstart",
        "plain-kickstart",
        "aware-eps10-replay",
        "aware-eps1-replay",
        *(
            f"aware-eps10-argmax-eta0.16{suffix}"
            for suffix in ("", "-spread", "-fade", "-spread-fade")
        ),
        *(f"{kind}-c{c}" for kind in ("aware", "unaware") for c in (0.1, 0.3, 0.9)),
    }
    assert airraid.student_config == bench.AIRRAID_STUDENT_YAML
    assert airraid.teacher_config == bench.AIRRAID_TEACHER_YAML
    with pytest.raises(SystemExit):  # CartPole's and AirRaid's YAMLs differ
        bench.parse_args(["--tasks", "cartpole,airraid"])


def test_tradeoff_table_gives_both_accountings_of_the_same_runs(bench) -> None:
    private = {"epsilon_spent": 970.8, "delta_spent": 1e-5, "releases": 24_000.0}
    basic = {"epsilon_basic": 4.08e5, "delta_basic": 0.035, "asked": 56_000.0, "cached": 0.0}
    aware = bench.ArmResult(
        "privacy-aware",
        [
            _run(bench, seed, INF, steps_to_lower=steps, **private, **basic)
            for seed, steps in enumerate((20_000.0, 24_000.0, 30_000.0))
        ],
        cap=72_000,
    )
    baseline = bench.ArmResult(
        "no-kickstart", [_run(bench, s, INF, steps_to_lower=48_000.0) for s in range(3)], 72_000
    )
    teacher = _run(bench, 0, 72_000.0, steps_to_lower=38_000.0)
    result = bench.TaskResult(
        bench.TASKS["cartpole"], teacher, 150_000, [aware, baseline], None, 1.0
    )
    lines = bench.tradeoff_table(result).splitlines()
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[0] == "privacy-aware"
    assert cells[1] == "971" and cells[2] == "4.08e+05 (δ 0.035)"
    assert cells[3] == "24,000" and cells[4] == "56,000 / 0"
    assert cells[5] == "3/3" and cells[6] == "1.58×"  # 38,000 / 24,000
    cells = [c.strip() for c in lines[3].strip("|").split("|")]
    assert cells[0] == "no-kickstart" and cells[1] == cells[2] == "—"
    assert cells[6] == "0.79×"


# --------------------------------------------------------------------------------------
# The overhead's answer-cache arm (a fake algorithm: no Ray).
# --------------------------------------------------------------------------------------


def _cached_overhead(bench):
    return _overhead(
        bench,
        [2.2, 2.0, 2.1],
        [2.0, 1.9, 2.0],
        [0.05, 0.04, 0.06],
        cache_bits=24,
        cache_s=[2.4, 1.9, 2.3],
        cache_answer_s=[0.03, 0.02, 0.04],
        cache_rollout_s=[0.01, 0.01, 0.01],
        cache_asked=[2000.0, 2000.0, 2000.0],
        cache_cached=[1500.0, 1800.0, 1900.0],
        cache_answered=[500.0, 200.0, 100.0],
        cache_size=[1200.0, 1400.0, 1500.0],
    )


def test_cache_arm_has_its_row_ratio_and_breakdown(bench, tmp_path: Path) -> None:
    result = _cached_overhead(bench)
    assert result.has_cache
    assert result.cache_ratio == pytest.approx(2.3 / 2.0)  # medians
    assert result.cache_paired_ratios == pytest.approx([1.2, 1.0, 1.15])
    assert result.cached_share == pytest.approx(5200 / 6000)
    rows = bench.overhead_table(result).splitlines()[2:]
    assert [row.split("|")[1].strip() for row in rows] == [
        "KickstartPPO (Dirichlet teacher)",
        "KickstartPPO (Dirichlet teacher, answer cache 24 bits)",
        "PPO (no teacher)",
    ]
    cells = [c.strip() for c in rows[1].strip("|").split("|")]
    assert cells[1:] == ["3", "2.30", "1.90 – 2.40", "1.150×"]
    breakdown = bench.overhead_breakdown(result)
    assert "With the answer cache (24 bits)" in breakdown
    assert "answers (SimHash codes of the states, cache look-ups, Dirichlet draws for new " in (
        breakdown
    )
    assert "of 2,000 states asked per iteration, 86.7% over the measured" in breakdown
    assert "(200 fresh releases per iteration; 1500 codes cached at the end)" in breakdown
    assert "Median cache arm − median PPO: +300 ms." in breakdown
    part = bench.render_parts([], result, _args(bench, tmp_path), _MACHINE, "d")["overhead"]
    assert "the three algorithms" in part and "`teacher_cache_bits: 24`" in part
    assert "rotated every round (ABC, BCA, CAB" in part
    assert "Target ≤ 1.10×: **met** (1.050×); with the answer cache **missed** (1.150×)." in part
    assert "with the answer cache ÷ PPO: 1.20, 1.00, 1.15 (median 1.15; it slower in 2 of 3" in (
        part
    )
    out = bench.results_json([], result, _args(bench, tmp_path), _MACHINE, "d")["overhead"]
    assert out["cache_bits"] == 24 and out["cache_cached"] == [1500.0, 1800.0, 1900.0]
    assert out["cache_ratio"] == pytest.approx(1.15)
    assert out["cached_share"] == pytest.approx(5200 / 6000)


def test_a_result_without_the_cache_arm_reports_two_rows(bench, tmp_path: Path) -> None:
    # The fields have defaults: the JSON of a run before the cache arm still loads.
    result = _overhead(bench, [2.2, 2.0, 2.1], [2.0, 1.9, 2.0], [0.05, 0.04, 0.06])
    assert not result.has_cache and math.isnan(result.cache_ratio)
    assert math.isnan(result.cached_share) and result.cache_paired_ratios == []
    assert len(bench.overhead_table(result).splitlines()) == 4  # header, rule, two rows
    assert "answer cache" not in bench.overhead_breakdown(result)
    part = bench.render_parts([], result, _args(bench, tmp_path), _MACHINE, "d")["overhead"]
    assert "trained alternately (ABBA order)" in part and "answer cache" not in part
    out = bench.results_json([], result, _args(bench, tmp_path), _MACHINE, "d")["overhead"]
    assert out["cache_ratio"] is None and out["cache_s"] == []  # NaN is written as null
    fields = {k: v for k, v in out.items() if k not in ("ratio", "cache_ratio", "cached_share")}
    old = {k: v for k, v in fields.items() if not k.startswith("cache_")}
    assert bench.OverheadResult(**old) == result


def test_overhead_cache_bits_option(bench) -> None:
    from rllib_privacy.teachers.answer_cache import MAX_CACHE_BITS

    assert bench.MAX_CACHE_BITS == MAX_CACHE_BITS
    assert bench.parse_args([]).overhead_cache_bits == bench.OVERHEAD_CACHE_BITS == 24
    assert bench.parse_args(["--overhead-cache-bits", "0"]).overhead_cache_bits == 0
    assert bench.parse_args(["--overhead-cache-bits", "256"]).overhead_cache_bits == 256
    for bad in ("257", "-1", "1.5", "many"):
        with pytest.raises(SystemExit):
            bench.parse_args(["--overhead-cache-bits", bad])


@pytest.mark.parametrize("n", [2, 3, 4])
def test_rotation_puts_every_algorithm_in_every_position_and_cancels_linear_drift(
    bench, n: int
) -> None:
    rotation = sys.modules["kickstart_bench.run"].rotation
    names = tuple("ABCD"[:n])
    rounds = [rotation(names, i) for i in range(2 * n)]
    assert rounds[0] == names and rounds[n] == names
    for name in names:
        assert sorted(r.index(name) for r in rounds[:n]) == list(range(n))
    # Under a drift linear in time each algorithm's slots add up to the same over n rounds.
    slots = {name: sum(n * i + r.index(name) for i, r in enumerate(rounds[:n])) for name in names}
    assert len(set(slots.values())) == 1
    if n == 2:
        assert rounds[:4] == [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")]  # ABBA


class _FakeTeacher:
    """A TeacherClient stand-in whose methods the overhead's timer wraps."""

    def answer(self, observations):
        return None

    def start_rollout(self, *, expected_states: int):
        return {}

    def stats(self):
        return {}


class _FakeAlgo:
    """``train()`` appends its name to ``log``; a kickstart arm calls its teacher like one.

    The cache arm reports cumulative teacher counts, nested as RLlib nests ``a/b`` keys:
    iteration t asks 100 states, of which 10·t came from the cache.
    """

    def __init__(self, name: str, log: list[str], *, teacher: bool, counts: bool) -> None:
        self.name, self.log, self.counts = name, log, counts
        self.iterations, self.stopped = 0, False
        if teacher:
            self._teacher = _FakeTeacher()

    def train(self):
        self.iterations += 1
        self.log.append(self.name)
        result = {"teacher_sharing": 1.0}
        if hasattr(self, "_teacher"):
            self._teacher.start_rollout(expected_states=100)
            self._teacher.stats()
            self._teacher.answer(None)
        if self.counts:
            t = self.iterations
            cached = 10 * t * (t + 1) // 2  # cumulative: 10, 30, 60, ...
            result["kickstart"] = {
                "teacher_asked": 100 * t,
                "teacher_cached": cached,
                "teacher_answered": 100 * t - cached,
                "teacher_cache_size": 100 * t - cached,
            }
        return result

    def stop(self) -> None:
        self.stopped = True


def _fake_overhead(bench, monkeypatch, cache_bits: int, *, counts: bool = True):
    run_module = sys.modules["kickstart_bench.run"]
    log: list[str] = []
    algos = {
        "privacy-aware": _FakeAlgo("K", log, teacher=True, counts=False),
        "no-kickstart": _FakeAlgo("P", log, teacher=False, counts=False),
    }
    if cache_bits:
        algos["answer-cache"] = _FakeAlgo("C", log, teacher=True, counts=counts)

    def fake_algos(args, teacher_checkpoint):
        assert args.overhead_cache_bits == cache_bits and teacher_checkpoint == "/teacher"
        return algos, 100

    monkeypatch.setattr(run_module, "_overhead_algos", fake_algos)
    argv = ["--overhead-only", "--overhead-warmup", "1", "--overhead-iterations", "3"]
    args = bench.parse_args([*argv, "--overhead-cache-bits", str(cache_bits)])
    return run_module.run_overhead, args, algos, log


def test_run_overhead_rotates_three_algorithms_and_counts_the_cache(bench, monkeypatch) -> None:
    run_overhead, args, algos, log = _fake_overhead(bench, monkeypatch, 24)
    result = run_overhead(args, "/teacher")
    # One warm-up round, then three measured ones; the order rotates every round.
    assert "".join(log) == "KPC" + "PCK" + "CKP" + "KPC"
    assert all(algo.stopped for algo in algos.values())
    assert result.cache_bits == 24 and result.has_cache
    assert len(result.kickstart_s) == len(result.ppo_s) == len(result.cache_s) == 3
    assert len(result.cache_answer_s) == len(result.cache_rollout_s) == 3
    assert result.sharing == [1.0, 1.0, 1.0]
    # Per iteration, not cumulative, and without the warm-up's: iterations 2-4 of the fake.
    assert result.cache_asked == [100.0, 100.0, 100.0]
    assert result.cache_cached == [20.0, 30.0, 40.0]
    assert result.cache_answered == [80.0, 70.0, 60.0]
    assert result.cache_size == [170.0, 240.0, 300.0]  # a level (= fresh releases so far)
    assert result.cached_share == pytest.approx(90 / 300)


def test_run_overhead_without_the_cache_arm_alternates_two(bench, monkeypatch) -> None:
    run_overhead, args, algos, log = _fake_overhead(bench, monkeypatch, 0)
    result = run_overhead(args, "/teacher")
    assert "".join(log) == "KP" + "PK" + "KP" + "PK"  # ABBA
    assert not result.has_cache and result.cache_bits == 0 and result.cache_s == []
    assert len(result.kickstart_s) == len(result.ppo_s) == 3


def test_run_overhead_fails_when_the_cache_arm_reports_no_counts(bench, monkeypatch) -> None:
    run_overhead, args, algos, _ = _fake_overhead(bench, monkeypatch, 24, counts=False)
    with pytest.raises(bench.BenchmarkError, match="kickstart/teacher_asked"):
        run_overhead(args, "/teacher")
    assert all(algo.stopped for algo in algos.values())


# --------------------------------------------------------------------------------------
# Resuming the grid (a fake trial runner: no Ray).
# --------------------------------------------------------------------------------------


def _fake_runner(bench, ran: list[str], *, stop_after: int | None = None):
    """A ``run_tuner`` stand-in: writes each trial's Tune folder (reaching T at 800 steps)."""

    def runner(algorithm, base, trials, *, on_finished, storage_path, name, **tuner) -> None:
        for trial in trials:
            if stop_after is not None and len(ran) >= stop_after:
                raise bench.BenchmarkError("interrupted")
            ran.append(trial.key)
            folder = Path(storage_path) / name / trial.key.replace("/", "_")
            folder.mkdir(parents=True, exist_ok=True)
            target = trial.stop[0]
            rows = [
                {
                    bench.STEPS_KEY: steps,
                    "env_runners": {"episode_return_mean": value},
                    "time_total_s": float(i),
                    "training_iteration": i,
                }
                for i, (steps, value) in enumerate(((400, target - 10.0), (800, target)), 1)
            ]
            (folder / "params.json").write_text(json.dumps(dict(trial.point)))
            (folder / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
            on_finished(trial.key, {"path": str(folder), "env_steps": 800, "final_return": target})

    return runner


def _fake_arm_config(arm, *, ppo, kickstart, env, teacher_checkpoint, smoothing):
    """``arm_config`` without RLlib: the Tuner's base is the YAML's keys (None for others)."""
    base = {**ppo, **kickstart, "env": env, "teacher_checkpoint": teacher_checkpoint}
    return None, collections.defaultdict(lambda: None, base)


def test_a_rerun_resumes_the_grid_from_its_finished_trials(bench, tmp_path, monkeypatch, capsys):
    run_module = sys.modules["kickstart_bench.run"]
    monkeypatch.setattr(run_module, "arm_config", _fake_arm_config)
    argv = ["--quick", "--tasks", "cartpole", "--arms", "privacy-aware,no-kickstart"]
    argv += ["--storage-path", str(tmp_path)]
    # 1 teacher + 2 arms × 2 seeds; the first run stops after the teacher and one student.
    ran: list[str] = []
    with pytest.raises(bench.BenchmarkError, match="interrupted"):
        bench.run_sample_efficiency(
            bench.parse_args(argv), tmp_path, runner=_fake_runner(bench, ran, stop_after=2)
        )
    assert ran == ["cartpole/teacher/seed=0", "cartpole/privacy-aware/seed=0"]
    assert "[2/5] cartpole/privacy-aware/seed=0: return 25 after 800 env steps" in (
        capsys.readouterr().out
    )
    # The same command again runs only what did not finish, and reports every trial.
    ran.clear()
    results = bench.run_sample_efficiency(
        bench.parse_args(argv), tmp_path, runner=_fake_runner(bench, ran)
    )
    assert ran == [
        "cartpole/privacy-aware/seed=1",
        "cartpole/no-kickstart/seed=0",
        "cartpole/no-kickstart/seed=1",
    ]
    out = capsys.readouterr().out
    assert "[1/5] 1 finished trial(s) reused" in out and "[2/5] 1 finished trial(s) reused" in out
    assert "[5/5] cartpole/no-kickstart/seed=1" in out and "ETA 0 s" in out
    (task,) = results
    assert task.teacher.steps_to_target == 800.0
    assert [(arm.arm, [r.seed for r in arm.runs]) for arm in task.arms] == [
        ("privacy-aware", [0, 1]),
        ("no-kickstart", [0, 1]),
    ]
    assert all(run.steps_to_target == 800.0 for arm in task.arms for run in arm.runs)
    # A finished grid reruns nothing; a changed setting reruns only the trials it changes.
    ran.clear()
    again = bench.run_sample_efficiency(
        bench.parse_args(argv), tmp_path, runner=_fake_runner(bench, ran)
    )
    assert ran == [] and bench.arm_table(again[0]) == bench.arm_table(task)
    bench.run_sample_efficiency(
        bench.parse_args([*argv, "--student-cap-factor", "2"]),
        tmp_path,
        runner=_fake_runner(bench, ran),
    )
    assert "cartpole/teacher/seed=0" not in ran and len(ran) == 4  # the students' cap changed


def test_tune_space_lets_arms_with_different_schedules_share_a_tuner(bench) -> None:
    """Each point's schedule reaches its trial, with no Tune warning in between."""
    pytest.importorskip("ray.tune")
    from kickstart_bench.run import tune_space
    from ray.tune.search.variant_generator import _get_preset_variants

    schedules = ([[0, 1.0], [15000, 0.0]], [[0, 1.0], [10000, 0.0]], 1.0)
    trials = [
        types.SimpleNamespace(point={"kickstart_coeff": schedule, "seed": seed})
        for seed, schedule in enumerate(schedules)
    ]
    space = tune_space({"lr": 0.1, "kickstart_coeff": 1.0, "seed": None}, trials)
    for trial, schedule in zip(trials, schedules, strict=True):
        (_, config), *_ = _get_preset_variants({"config": space}, trial.point)
        assert config["config"]["kickstart_coeff"] == schedule
        assert config["config"]["lr"] == 0.1
