#!/usr/bin/env python
"""PGC-A3C benchmark: Ono & Takahashi's Tables 1-3 per arm and ε, learning curves, speed.

Sample efficiency: ARMS (a mechanism with a base config, e.g. ``privunitg_tuned``,
``laplace_paper``, ``zero_paper``; see ``--arms``) are run at every ε of ``--epsilons``
with ``--trials`` seeds each (one Tune trial per arm × ε × seed, ``--max-concurrent`` at a
time, in the arms' priority order). A trial stops when LDPA3C reports ``solved_at`` (the
mean score of the last 100 submissions reached 195: sustained success) or at ``--cap``
submissions (paper: 90,000); the first success time ``fst`` (paper eq. 26) is recorded as it
comes. ε = ∞ runs once per base family, not per arm: the tuned base with mechanism ``none``
(``nonprivate_tuned``) and the paper base with Laplace at ε = ∞ (``nonprivate_paper``).

Per arm × ε: median FST (∞ if half or more of the trials failed), success ratio (FST within
the cap), median ``solved_at`` and the number solved, the median final greedy evaluation
return, the AUC of the success-ratio curve relative to ε = ∞ of the same family, next to
the paper's values on the paper-protocol rows; a per-trial table; rows with fewer than 10
seeds are marked incomplete. One progress line per finished trial. ``--json`` keeps every
trial (with its learning curve) and is rewritten after each finished trial, so an
interrupted run keeps what finished; ``--merge-json`` joins the JSON files of several
invocations into one table; ``--plots`` draws one PNG per arm (median and interquartile
band per ε) with ``rllib_privacy.plotting``, the code of ``rllib-privacy plot``.

Speed (``--speed`` / ``--speed-only``): submissions per second of the quick-start config
(``--tuned-config``) with its own ``agents_per_env_runner`` (the vectorized fleet), with
``agents_per_env_runner: 1``, and with the plain-RLlib reference runner
(RLlibSamplingLDPA3CEnvRunner), 1..n remote EnvRunners, in the same run.

Examples::

    python benchmarks/pgc_a3c.py --help
    python benchmarks/pgc_a3c.py --dry-run                      # validate the arms, no runs
    python benchmarks/pgc_a3c.py --json /tmp/pgc_a3c.json --plots --write-results
    python benchmarks/pgc_a3c.py --arms privunitg_tuned --trials 3 --cap 20000 --json a.json
    python benchmarks/pgc_a3c.py --merge-json a.json b.json --plots --write-results
    python benchmarks/pgc_a3c.py --speed-only --runner-counts 1,2

This file is the command line; the benchmark's parts are in ``pgc_a3c_bench/`` by job:
``plan`` (arms, rows, trial variants), ``results`` (records and FST statistics),
``documents`` (the JSON file of a run, merging runs), ``run`` (Tune, speed) and
``report`` (tables, notes, plots, RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import (
    REPO_ROOT,
    RESULTS_MD,
    BenchmarkError,
    command_line,
    jsonable,
    load_average,
    machine_info,
    now,
    positive_int,
    quiet_ray,
    usable_cpus,
)
from pgc_a3c_bench.documents import (
    document_records,
    document_results,
    document_rows,
    load_document,
    merge_documents,
    new_document,
    write_document,
)
from pgc_a3c_bench.plan import (
    ARM_NAMES,
    DEFAULT_PAPER_FLEET,
    PAPER_CAP,
    PROTOCOL_TRIALS,
    VARIANT_KEY,
    Arm,
    Row,
    arm_metadata,
    default_arms,
    load_base_config,
    parse_arm_names,
    plan_rows,
    row_sort_key,
    strip_variant,
    trial_config,
    validate_configs,
    variants,
)
from pgc_a3c_bench.report import (
    RESULTS,
    finish_outputs,
    raw_trial_table,
    render_section,
    sample_efficiency_table,
    speed_table,
)
from pgc_a3c_bench.results import (
    SpeedResult,
    TrialRecord,
    TrialRecorder,
    censor,
    compute_rows,
    fleet_ratios,
    incomplete_rows,
    median_fst,
    relative_auc,
    success_auc,
    success_ratio,
)
from pgc_a3c_bench.run import run_speed, run_trials

#: What the tests read of the benchmark through this module (its parts live in
#: pgc_a3c_bench/; these names keep ``pgc_a3c.<name>`` working).
__all__ = [
    "RESULTS",
    "VARIANT_KEY",
    "Arm",
    "BenchmarkError",
    "Row",
    "TrialRecord",
    "TrialRecorder",
    "censor",
    "compute_rows",
    "document_records",
    "document_results",
    "document_rows",
    "fleet_ratios",
    "incomplete_rows",
    "jsonable",
    "main",
    "median_fst",
    "merge_documents",
    "raw_trial_table",
    "relative_auc",
    "render_section",
    "row_sort_key",
    "sample_efficiency_table",
    "speed_table",
    "strip_variant",
    "success_auc",
    "success_ratio",
    "trial_config",
    "write_document",
]

# --------------------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------------------


def _csv(convert: Callable[[str], Any], what: str) -> Callable[[str], list[Any]]:
    def parse(text: str) -> list[Any]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}")
        try:
            return [convert(item) for item in items]
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"bad {what} in {text!r}: {e}") from None

    return parse


def _epsilon(text: str) -> float:
    value = float(text)  # accepts "inf"
    if not value > 0:
        raise ValueError(f"ε must be > 0 or inf, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog="pgc_a3c.py",
        description=(
            "PGC-A3C (LDPA3C) benchmark. Per arm and ε: median first success time (FST), "
            "success ratio, median solved_at, evaluation return and relative AUC next to "
            "Ono & Takahashi's Tables 1-3; learning-curve plots. Speed (--speed): "
            "submissions/s of the agent fleet vs one agent vs a plain-RLlib EnvRunner."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    grid = parser.add_argument_group("sample efficiency")
    _add_sample_efficiency_options(grid)
    _add_trial_options(grid)
    _add_speed_options(parser.add_argument_group("speed"))
    _add_output_options(parser.add_argument_group("resources and output"))
    return parser


def _add_sample_efficiency_options(g: argparse._ArgumentGroup) -> None:
    """The options of the arms × ε × seeds grid."""
    g.add_argument(
        "--arms",
        type=parse_arm_names,
        default=",".join(ARM_NAMES),
        help="comma-separated arms in priority order (or 'all'): " + ", ".join(ARM_NAMES),
    )
    g.add_argument(
        "--epsilons",
        type=_csv(_epsilon, "epsilons"),
        default="1,2,5,10,inf",
        help="comma-separated ε values; 'inf' = the non-private baseline, run once per base "
        "family (nonprivate_tuned, nonprivate_paper)",
    )
    g.add_argument(
        "--trials",
        type=positive_int,
        default=PROTOCOL_TRIALS,
        help=f"trials (seeds) per arm × ε; rows with fewer than {PROTOCOL_TRIALS} are marked "
        "incomplete",
    )
    g.add_argument(
        "--cap",
        type=positive_int,
        default=PAPER_CAP,
        help="submissions per trial without sustained success (solved_at) before it stops",
    )
    g.add_argument("--seed", type=int, default=0, help="trial k uses seed SEED + k")
    g.add_argument(
        "--max-concurrent",
        type=positive_int,
        default=2,
        help="trials in parallel (each: num_env_runners 0, one CPU)",
    )
    g.add_argument(
        "--paper-fleet",
        type=positive_int,
        default=DEFAULT_PAPER_FLEET,
        help="agents_per_env_runner (= submissions_per_request) of the paper arms and of "
        "arms whose base config has no fleet (laplace_tuned, prs_tuned); 1 = the "
        "paper's exact protocol (slow: one agent at a time)",
    )


def _add_trial_options(g: argparse._ArgumentGroup) -> None:
    """The options of each trial's config and of the Tune run."""
    g.add_argument(
        "--tuned-config",
        default="tuned_configs/ldp_a3c.yaml",
        help="YAML experiment file of the tuned PrivUnitG quick start: base of "
        "privunitg_tuned, privunit2_tuned, zero_privunitg, nonprivate_tuned and --speed",
    )
    g.add_argument(
        "--laplace-config",
        default="tuned_configs/ldp_a3c_laplace.yaml",
        help="YAML experiment file of laplace_tuned",
    )
    g.add_argument(
        "--prs-config",
        default="tuned_configs/ldp_a3c_prs.yaml",
        help="YAML experiment file of prs_tuned",
    )
    g.add_argument(
        "--iteration-submissions",
        type=positive_int,
        default=500,
        help="submissions_per_iteration of each trial (stop checks and curve points; FST "
        "and solved_at are exact)",
    )
    g.add_argument(
        "--eval-episodes",
        type=int,
        default=None,
        help="eval_episodes per iteration (None: the arm config's, LDPA3C default 100)",
    )
    g.add_argument(
        "--dry-run",
        action="store_true",
        help="build and validate every arm's config, print the plan, run nothing",
    )
    g.add_argument(
        "--storage-path",
        default=None,
        help="Tune storage directory (None: a temporary directory, removed afterwards)",
    )
    g.add_argument("--keep-tune-dir", action="store_true", help="keep the temporary Tune directory")
    g.add_argument(
        "--tune-verbose", type=int, default=0, choices=(0, 1, 2, 3), help="Tune verbosity"
    )


def _add_speed_options(s: argparse._ArgumentGroup) -> None:
    """The options of the speed comparison."""
    s.add_argument("--speed", action="store_true", help="also run the speed comparison")
    s.add_argument("--speed-only", action="store_true", help="run only the speed comparison")
    s.add_argument(
        "--runner-counts",
        type=_csv(positive_int, "runner counts"),
        default="1,2",
        help="comma-separated numbers of remote EnvRunners",
    )
    s.add_argument(
        "--speed-submissions",
        type=positive_int,
        default=2000,
        help="submissions measured per speed setting (after a warm-up iteration)",
    )
    s.add_argument(
        "--speed-iteration",
        type=positive_int,
        default=500,
        help="submissions per training iteration in speed runs (the warm-up is one)",
    )
    s.add_argument(
        "--cpus-per-runner",
        type=float,
        default=None,
        help="num_cpus_per_env_runner (None: min(1, (num_cpus - 1) / runners))",
    )


def _add_output_options(o: argparse._ArgumentGroup) -> None:
    """The options of resources, tables, plots and files."""
    o.add_argument(
        "--num-cpus",
        type=int,
        default=usable_cpus(),
        help="CPUs for ray.init",
    )
    o.add_argument(
        "--write-results",
        action="store_true",
        help=f"write this run's sections into {RESULTS_MD.relative_to(REPO_ROOT)}",
    )
    o.add_argument("--results-md", type=Path, default=RESULTS_MD, help="the RESULTS.md to update")
    o.add_argument(
        "--json",
        type=Path,
        default=None,
        help="write every trial (with its learning curve) as JSON; rewritten after each "
        "finished trial",
    )
    o.add_argument(
        "--plots",
        action="store_true",
        help="write pgc_a3c_<arm>.png next to --results-md (median and IQR band per ε)",
    )
    o.add_argument(
        "--plot-eval",
        action="store_true",
        help="with --plots, also pgc_a3c_<arm>_eval.png (greedy evaluation return)",
    )
    o.add_argument(
        "--merge-json",
        nargs="+",
        type=Path,
        default=None,
        metavar="JSON",
        help="join the --json files of several invocations into one table (runs nothing; "
        "with --json, writes the merged file)",
    )


def _merge(args: argparse.Namespace) -> int:
    """``--merge-json``: joins the documents, prints and writes the tables; runs nothing."""
    try:
        docs = [load_document(path) for path in args.merge_json]
        doc = merge_documents(docs, [str(p) for p in args.merge_json])
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finish_outputs(doc, args, [SpeedResult.from_json(s) for s in doc.get("speed", [])])
    return 0


def _new_run_document(
    args: argparse.Namespace,
    rows: Sequence[Row],
    seeds: Sequence[int],
    spi: int,
    arms: dict[str, Arm],
    arm_configs: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """This invocation's document: its command, machine and settings, no trials yet."""
    run: dict[str, Any] = {
        "command": args.command_line,
        "date_start": now(),
        "loadavg_start": args.loadavg_start,
        "machine": machine_info(),
        "seeds": list(seeds),
        "epsilons": list(args.epsilons),
        "arms": list(args.arms),
        "paper_fleet": args.paper_fleet,
        "max_concurrent": args.max_concurrent,
        "iteration_submissions": spi,
        "eval_episodes": args.eval_episodes,
        "failures": [],
    }
    return new_document(
        cap=args.cap,
        trials=args.trials,
        arms={name: {**arm.to_json(), "config": arm_configs[name]} for name, arm in arms.items()},
        rows=rows,
        run=run,
    )


def _run(
    args: argparse.Namespace,
    doc: dict[str, Any],
    trial_variants: list[dict[str, Any]],
    *,
    rows: int,
    seeds: int,
) -> int:
    """Runs the trials and the speed part in a fresh local Ray; writes the outputs."""
    import ray

    import rllib_privacy

    rllib_privacy.register()  # Registers LDPA3C and the env

    run = doc["runs"][-1]  # the document's own copy: end date, failures go there
    speeds: list[SpeedResult] = []
    failures: list[str] = []
    start = time.perf_counter()
    # address="local": always a fresh local instance, never another job's running cluster.
    ray.init(
        address="local",
        num_cpus=args.num_cpus,
        include_dashboard=False,
        log_to_driver=args.tune_verbose > 0,
    )
    try:
        if trial_variants:
            print(
                f"{rows} rows × {seeds} seeds = {len(trial_variants)} trials "
                f"(cap {args.cap}, {args.max_concurrent} at a time)...",
                flush=True,
            )
            recorder = run_trials(doc, trial_variants, args)
            failures = recorder.failures
            run["failures"] = failures
            if recorder.done < recorder.total:
                run["interrupted"] = True
        if args.speed or args.speed_only:
            speeds = run_speed(args)
            doc["speed"] = [s.to_json() for s in speeds]
    except BenchmarkError as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
    finally:
        ray.shutdown()
        run["date_end"] = now()
        run["loadavg_end"] = load_average()
        run["wall_s"] = time.perf_counter() - start
    if failures and args.write_results:
        print(
            f"\nerror: {len(failures)} trial(s) failed (not diverged); RESULTS.md is not "
            "written (--json keeps the finished trials; rerun the failed ones and merge)",
            file=sys.stderr,
        )
        args.write_results = False
    if args.speed_only:
        doc["rows"] = []
    finish_outputs(doc, args, speeds)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the requested parts, prints the tables, writes results; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.command_line = command_line(__file__, argv)
    args.loadavg_start = load_average()
    if args.num_cpus < 1:
        parser.error("--num-cpus must be >= 1")
    if args.eval_episodes is not None and args.eval_episodes < 0:
        parser.error("--eval-episodes must be >= 0")
    if args.merge_json:
        return _merge(args)
    seeds = [args.seed + k for k in range(args.trials)]
    rows = [] if args.speed_only else plan_rows(args.arms, args.epsilons, default_arms())
    spi = max(1, min(args.iteration_submissions, args.cap))
    # Results come from the callbacks: Tune's TensorBoard/CSV/JSON files are not needed (they
    # also warn about the ε = ∞ scalars).
    quiet_ray(tune_loggers=False)
    try:  # Fail fast, before Ray starts, on a missing or invalid experiment file.
        if args.speed or args.speed_only:
            load_base_config(args.tuned_config)
        arms, arm_configs = arm_metadata([] if args.speed_only else args.arms, rows, args)
        trial_variants = variants(
            rows,
            arm_configs,
            seeds,
            submissions_per_iteration=spi,
            eval_episodes=args.eval_episodes,
        )
        if args.dry_run:
            validate_configs(trial_variants)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(
            f"{len(rows)} rows × {len(seeds)} seeds = {len(trial_variants)} trials, cap "
            f"{args.cap}, {args.max_concurrent} at a time; configs valid:"
        )
        for name in arms:
            print(f"  {name}: {json.dumps(jsonable(arm_configs[name]), sort_keys=True)}")
        print("rows: " + ", ".join(row.label for row in rows))
        return 0
    doc = _new_run_document(args, rows, seeds, spi, arms, arm_configs)
    return _run(args, doc, trial_variants, rows=len(rows), seeds=len(seeds))


if __name__ == "__main__":
    sys.exit(main())
