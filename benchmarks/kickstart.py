#!/usr/bin/env python
"""Privacy-preserving kickstarting benchmark (Gohari et al., §5): sample efficiency and overhead.

Sample efficiency, per task (CartPole-v1 and Acrobot-v1), all in one run:

1. A teacher (plain PPO, hidden layers (64, 64), fixed seed) trains until its return reaches
   the task's target T or ``--teacher-cap`` env steps; its env steps to T are the reference.
2. Students (hidden layers (32, 32), ``--seeds`` seeds each) train until their return reaches
   T or a step cap (``--student-cap-factor`` × the teacher's steps, at most ``--cap``):

   * ``privacy-aware``: KickstartPPO, Dirichlet teacher, λ = 0.5 (the paper's best);
   * ``privacy-unaware``: KickstartPPO, Dirichlet teacher, λ = 0;
   * ``plain-kickstart``: KickstartPPO, non-private teacher (``teacher_mechanism: none``), λ = 0;
   * ``no-kickstart``: plain RLlib PPO (32, 32), the same hyperparameters.

   Reported per arm: env steps to T per seed, the median (a seed that never reached T counts
   as ∞ and sorts last) and the min-max spread, how many seeds reached T, the speed-up
   teacher steps / student steps (the paper: about 4× for privacy-aware students), and the
   teacher's privacy spend (ε, δ, answered states, the rollout at which it stopped sharing).
   "Return" is RLlib's ``env_runners/episode_return_mean`` as reported per iteration, the
   same for teacher and students. (``--smoothing`` sets ``metrics_num_episodes_for_smoothing``,
   but with ``num_env_runners: 0`` RLlib 2.60 reports the mean over the episodes that ended
   in that iteration: 4-10 CartPole episodes at 2000 steps, so "reached T" is one such mean.)

Every trial runs through Ray Tune (``num_env_runners: 0``: one CPU per trial, trials in
parallel on the available CPUs) with result folders under ``--storage-path``; the
learning curves (median and 15-85 % band over seeds, x = env steps, one curve per arm) are
drawn with ``rllib_privacy.plotting`` into ``benchmarks/kickstart_<task>.png``.

Resuming: every trial that finishes (a teacher, or a student of one task, arm and seed) is
recorded in ``kickstart_trials.json`` in the storage folder. Rerunning the same command
with the same ``--storage-path`` after an interruption runs only the trials not recorded
there (or whose settings changed) and reuses the others; one progress line per finished
trial gives done/total trials and an ETA from this run's pace.

Overhead: wall time per training iteration of KickstartPPO with the Dirichlet teacher vs
plain RLlib PPO on CartPole with the same batch sizes, model size and seed, and (with
``--overhead-cache-bits N``, default 24; 0 leaves it out) the same KickstartPPO with the
teacher's answer cache of N bits, built in the same process and trained in turn, the order
rotated every round against drift (ABBA for two); medians after a warm-up. The teacher
answers in every measured iteration (budgets lifted: the worst case), and the time spent
waiting for the teacher is reported separately, for the cache arm with the share of asked
states its cache served.

Examples::

    python benchmarks/kickstart.py --help
    python benchmarks/kickstart.py --quick                       # smoke run, minutes
    python benchmarks/kickstart.py --write-results --storage-path DIR  # the full run
    # interrupted? the same command again resumes from the trials recorded in DIR
    python benchmarks/kickstart.py --tasks acrobot --no-overhead --write-results
    python benchmarks/kickstart.py --overhead-only --overhead-iterations 9
    # redo the tables and plots from an earlier run's Tune folder DIR:
    python benchmarks/kickstart.py --analyze-only --storage-path DIR --tasks cartpole

Each part (a task, the overhead) has its own markers inside the RESULTS.md section, so
runs of single tasks add up instead of overwriting each other.

This file is the command line; the benchmark's parts are in ``kickstart_bench/`` by job:
``plan`` (tasks, arms, configs, the grid), ``results`` (what a trial measured), ``run``
(Tune, resuming, the overhead timing) and ``report`` (tables, plots, RESULTS.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from harness import (
    BENCH_DIR,
    RESULTS_MD,
    BenchmarkError,
    bounded_number,
    choice_list,
    command_line,
    dump_json,
    machine_info,
    positive_int,
    quiet_ray,
    spread,
    steps_to_threshold,
    usable_cpus,
)
from kickstart_bench.plan import (
    AIRRAID_STUDENT_YAML,
    AIRRAID_TEACHER_YAML,
    ARMS,
    CACHE_SCHEDULE,
    CLASSIC,
    PPO_KEYS,
    STUDENT_YAML,
    TASKS,
    arm_of,
    default_arms,
    load_yaml_config,
    split_student_config,
    student_cap,
)
from kickstart_bench.plan import with_target as _with_target
from kickstart_bench.report import (
    RESULTS,
    arm_table,
    bar_table,
    overhead_breakdown,
    overhead_table,
    raw_table,
    render_parts,
    results_json,
    tradeoff_table,
)
from kickstart_bench.report import run_lines as _run_lines
from kickstart_bench.results import (
    STEPS_KEY,
    ArmResult,
    OverheadResult,
    RunResult,
    TaskResult,
    median_steps,
    num_reached,
    speedup,
    student_folders,
    three_quarters,
    with_steps_to_target,
)
from kickstart_bench.run import RUN_RECORD, run_overhead, run_sample_efficiency
from kickstart_bench.run import is_finished as _finished
from kickstart_bench.run import record_run as _record_run

#: What the tests read of the benchmark through this module (its parts live in
#: kickstart_bench/; these names keep ``kickstart.<name>`` working).
__all__ = [
    "AIRRAID_STUDENT_YAML",
    "AIRRAID_TEACHER_YAML",
    "BENCH_DIR",
    "CACHE_SCHEDULE",
    "PPO_KEYS",
    "RUN_RECORD",
    "STEPS_KEY",
    "STUDENT_YAML",
    "ArmResult",
    "OverheadResult",
    "RunResult",
    "TaskResult",
    "_finished",
    "_record_run",
    "_run_lines",
    "_with_target",
    "arm_of",
    "dataclasses",
    "bar_table",
    "main",
    "median_steps",
    "num_reached",
    "parse_args",
    "speedup",
    "split_student_config",
    "spread",
    "steps_to_threshold",
    "student_cap",
    "student_folders",
    "three_quarters",
    "tradeoff_table",
    "with_steps_to_target",
]

# --------------------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------------------


def _targets(text: str) -> dict[str, float]:
    out = {}
    for item in (i.strip() for i in text.split(",") if i.strip()):
        name, sep, value = item.partition("=")
        if not sep or name not in TASKS:
            raise argparse.ArgumentTypeError(
                f"expected TASK=RETURN pairs with TASK in {', '.join(TASKS)}, got {item!r}"
            )
        try:
            out[name] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad return {value!r} for {name}") from None
    return out


_non_negative_int = bounded_number(int, low=0, strict=False)

#: Largest ``teacher_cache_bits`` (rllib_privacy.teachers.answer_cache.MAX_CACHE_BITS; not
#: imported: importing this module loads neither Ray nor rllib_privacy).
MAX_CACHE_BITS = 256
#: The overhead's cache arm: the code length of the budgeted CartPole arms at ε 10 and below
#: (``aware-eps10-k5-cache24``, the replay arms; docs/results.md's ε = 10 point).
OVERHEAD_CACHE_BITS = 24


def _cache_bits(text: str) -> int:
    """argparse type of ``--overhead-cache-bits``: 0 (no cache arm) or a code length."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_CACHE_BITS:
        raise argparse.ArgumentTypeError(
            f"expected 0 (no cache arm) or teacher_cache_bits in [1, {MAX_CACHE_BITS}], "
            f"got {text!r}"
        )
    return value


_positive_float = bounded_number(float, low=0.0, strict=True)


#: What ``--quick`` sets (unless given explicitly): tiny budgets for a smoke run.
QUICK_DEFAULTS = {
    "seeds": 2,
    "teacher_cap": 2000,
    "cap": 2000,
    "targets": {"cartpole": 25.0, "acrobot": -500.0},
    "overhead_warmup": 1,
    "overhead_iterations": 2,
    "smoothing": 5,
}


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog="kickstart.py",
        description=(
            "Privacy-preserving kickstarting benchmark: env steps for students (privacy-aware, "
            "privacy-unaware, plain kickstarting, no kickstarting) to reach the teacher's "
            "target return vs the teacher's own, and KickstartPPO's per-iteration overhead "
            "over plain PPO."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    _add_sample_efficiency_options(parser.add_argument_group("sample efficiency"))
    _add_overhead_options(parser.add_argument_group("overhead"))
    _add_run_options(parser.add_argument_group("run and output"))
    return parser


def _add_sample_efficiency_options(g: argparse._ArgumentGroup) -> None:
    """The options of the teachers' and students' grid."""
    g.add_argument(
        "--tasks",
        type=choice_list(tuple(TASKS), "tasks"),
        default=list(CLASSIC),
        help=f"comma-separated tasks ({', '.join(TASKS)})",
    )
    g.add_argument(
        "--arms",
        type=choice_list(tuple(ARMS), "arms"),
        default=None,
        help=f"comma-separated student arms ({', '.join(ARMS)}) [every arm of the --tasks]",
    )
    g.add_argument("--seeds", type=positive_int, default=None, help="seeds per arm [3]")
    g.add_argument("--seed", type=int, default=0, help="student seeds are SEED, SEED+1, ...")
    g.add_argument("--teacher-seed", type=int, default=0, help="the teachers' seed")
    g.add_argument(
        "--targets",
        type=_targets,
        default=None,
        help="override targets, e.g. 'cartpole=450,acrobot=-100' [task defaults]",
    )
    g.add_argument(
        "--teacher-cap",
        type=positive_int,
        default=None,
        help="env steps after which a teacher that has not reached T stops [150000]",
    )
    g.add_argument(
        "--student-cap-factor",
        type=_positive_float,
        default=1.25,
        help="students stop at this multiple of the teacher's steps to T (whole batches)",
    )
    g.add_argument(
        "--cap", type=positive_int, default=None, help="hard cap on a student's env steps [150000]"
    )
    g.add_argument(
        "--smoothing",
        type=positive_int,
        default=None,
        help="metrics_num_episodes_for_smoothing passed to RLlib [20]",
    )
    g.add_argument(
        "--student-config",
        type=Path,
        default=None,
        help="YAML whose first experiment's config gives the students' settings [the tasks']",
    )
    g.add_argument(
        "--teacher-config",
        type=Path,
        default=None,
        help="YAML whose first experiment's config gives the teachers' settings [the tasks']",
    )
    g.add_argument(
        "--storage-path",
        type=Path,
        default=None,
        help="Tune storage folder; the same folder again resumes an interrupted run from its "
        "finished trials [a new folder under the system temp dir; kept]",
    )
    g.add_argument(
        "--plot-dir",
        type=Path,
        default=None,
        help="where kickstart_<task>.png go [benchmarks/ with --write-results, else the "
        "storage folder]",
    )


def _add_overhead_options(o: argparse._ArgumentGroup) -> None:
    """The options of the per-iteration overhead measurement."""
    o.add_argument("--no-overhead", action="store_true", help="skip the overhead measurement")
    o.add_argument("--overhead-only", action="store_true", help="run only the overhead measurement")
    o.add_argument(
        "--overhead-warmup", type=_non_negative_int, default=None, help="warm-up iterations [1]"
    )
    o.add_argument(
        "--overhead-iterations",
        type=positive_int,
        default=None,
        help="measured iterations per algorithm [6]; with the cache arm a multiple of 3 "
        "rotates each algorithm through every position equally often",
    )
    o.add_argument(
        "--overhead-cache-bits",
        type=_cache_bits,
        default=OVERHEAD_CACHE_BITS,
        help="also time KickstartPPO with the teacher's answer cache of this many SimHash bits "
        "(teacher_cache_bits); 0: no cache arm",
    )


def _add_run_options(r: argparse._ArgumentGroup) -> None:
    """The options of how the run goes and where its results are written."""
    r.add_argument("--quick", action="store_true", help="tiny budgets: a smoke run")
    r.add_argument(
        "--reuse-teachers",
        action="store_true",
        help="train no teachers: use those in --storage-path/teachers (an earlier run's)",
    )
    r.add_argument(
        "--analyze-only",
        action="store_true",
        help="train nothing: read the Tune folders of an earlier run (--storage-path, same "
        "--tasks/--arms/targets) and redo the tables, plots and RESULTS.md",
    )
    r.add_argument(
        "--num-cpus",
        type=positive_int,
        default=usable_cpus(),
        help="CPUs for ray.init (one trial per CPU runs at a time)",
    )
    r.add_argument(
        "--tune-verbose", type=int, default=0, choices=(0, 1, 2, 3), help="Tune verbosity"
    )
    r.add_argument(
        "--write-results",
        action="store_true",
        help="write the section into RESULTS.md and the plots into benchmarks/",
    )
    r.add_argument("--results-md", type=Path, default=RESULTS_MD, help="the RESULTS.md to update")
    r.add_argument("--json", type=Path, default=None, help="also write raw results as JSON")


#: Defaults of the options whose default depends on --quick.
FULL_DEFAULTS = {
    "seeds": 3,
    "teacher_cap": 150_000,
    "cap": 150_000,
    "targets": None,
    "overhead_warmup": 1,
    "overhead_iterations": 6,
    "smoothing": 20,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parses and completes the arguments (quick/full defaults, command line, paths)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    defaults = QUICK_DEFAULTS if args.quick else FULL_DEFAULTS
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.overhead_only and args.no_overhead:
        parser.error("--overhead-only and --no-overhead exclude each other")
    if (args.analyze_only or args.reuse_teachers) and args.storage_path is None:
        parser.error(
            "--analyze-only/--reuse-teachers need --storage-path (the earlier run's Tune folder)"
        )
    if args.arms is None:
        args.arms = default_arms(args.tasks)
    for option, field in (("student_config", "student_yaml"), ("teacher_config", "teacher_yaml")):
        if getattr(args, option) is None:
            files = {getattr(TASKS[task], field) for task in args.tasks}
            if len(files) > 1:
                parser.error(
                    f"--tasks {','.join(args.tasks)} have different experiment files "
                    f"({', '.join(sorted(map(str, files)))}): run them separately or give "
                    f"--{option.replace('_', '-')}"
                )
            setattr(args, option, files.pop())
    args.command_line = command_line(__file__, argv)
    if args.plot_dir is None and args.write_results:
        args.plot_dir = BENCH_DIR
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the requested parts, prints the tables, writes results; returns the exit code."""
    args = parse_args(argv)
    try:  # Fail fast, before Ray starts, on a missing or broken experiment file.
        load_yaml_config(args.student_config)
        load_yaml_config(args.teacher_config)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    quiet_ray()  # Tune's result files stay: the tables are read back from them
    import ray

    import rllib_privacy

    rllib_privacy.register()  # Registers KickstartPPO

    storage = Path(args.storage_path or tempfile.mkdtemp(prefix="kickstart_bench_")).resolve()
    storage.mkdir(parents=True, exist_ok=True)
    if args.plot_dir is None:
        args.plot_dir = storage
    print(f"Tune results in {storage}", flush=True)
    if args.storage_path is None and not args.overhead_only:
        print(f"(if interrupted: the same command with --storage-path {storage} resumes)")
    tasks: list[TaskResult] = []
    overhead = None
    start = time.perf_counter()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=args.tune_verbose > 0)
    try:
        if not args.overhead_only:
            tasks = run_sample_efficiency(args, storage)
            for task in tasks:
                print(f"\n## {task.task.env}\n")
                print(arm_table(task))
                print()
                print(raw_table(task), flush=True)
        if not args.no_overhead:
            cartpole = next((t for t in tasks if t.task.name == "cartpole"), None)
            overhead = run_overhead(args, cartpole.teacher.path if cartpole else None)
            print("\n## Overhead\n")
            print(overhead_table(overhead))
            print(overhead_breakdown(overhead), flush=True)
    except BenchmarkError as e:
        print(f"\nerror: {e}", file=sys.stderr)
        if args.storage_path is None and not args.overhead_only:
            print(f"to resume: the same command with --storage-path {storage}", file=sys.stderr)
        return 1
    finally:
        ray.shutdown()
    print(f"\ntotal wall time {time.perf_counter() - start:.0f} s")
    machine = machine_info()
    date = machine["date"]
    if args.write_results:
        RESULTS.write(args.results_md, render_parts(tasks, overhead, args, machine, date))
        print(f"wrote {args.results_md}")
    if args.json is not None:
        dump_json(args.json, results_json(tasks, overhead, args, machine, date), indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
