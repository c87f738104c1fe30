#!/usr/bin/env python
"""Soak benchmark: PGC-A3C with SimHash counting, memory and ledger over a long run.

Each *arm* builds an LDPA3C algorithm in-process (``build_algo()``, Ray
local with ``--num-cpus``) with ``--num-env-runners`` remote EnvRunners whose local agents
add the SimHash count bonus (``count_exploration``), and trains it for ``--minutes`` or
``--submissions``. After every training iteration it samples:

* the driver's RSS and every EnvRunner's RSS (psutil, from the runners' pids);
* the live count tables' entries and bytes (``LDPA3CEnvRunner.count_exploration_stats``);
* submissions per second;
* the ledger: releases recorded vs submissions received (must be equal) and the largest
  ε spent by one local agent (must not exceed ``epsilon``).

At the end of an arm the in-flight requests are drained so that the releases produced by
the runners can be compared with the ledger's total exactly.

Arms are ``SCOPE:COUNTER`` (``count_exploration_scope`` : ``counter``). Per-agent tables
(``agent``, the private default) are reset for every local agent and are bounded by one
episode, so only the ``env_runner`` scope (one table per runner for its whole life; it
breaks the per-agent guarantee and exists for this measurement) shows whether a table
grows: Count-Min's size is fixed by its primes, an exact table grows with the distinct
codes seen. Growth is the slope of a least-squares line, in MB per 10,000 submissions.

Examples::

    python benchmarks/soak.py --help
    python benchmarks/soak.py --minutes 10 --write-results
    python benchmarks/soak.py --arms runner:exact --submissions 5000 --json /tmp/soak.json
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import (
    RESULTS_MD,
    BenchmarkError,
    ResultsSection,
    command_line,
    dump_json,
    load_averages,
    load_experiment_config,
    log_algorithms_into_a_temporary_folder,
    machine_line,
    quiet_ray,
)

DEFAULT_CONFIG = "tuned_configs/ldp_a3c_laplace.yaml"
RESULTS = ResultsSection("soak")
SCOPES = {"agent": "agent", "runner": "env_runner", "env_runner": "env_runner"}
COUNTERS = ("exact", "count_min")
MB = 2**20


# --------------------------------------------------------------------------------------
# Data and statistics (pure; unit-tested in tests/e2e/test_benchmark_soak.py).
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Arm:
    """One soak arm: where the counts live and how they are counted."""

    scope: str
    counter: str

    @property
    def label(self) -> str:
        short = "runner" if self.scope == "env_runner" else self.scope
        return f"{short}:{self.counter}"


def parse_arms(text: str) -> list[Arm]:
    """``"runner:count_min,runner:exact"`` → arms; raises ValueError naming the bad item."""
    arms = []
    for item in (p.strip() for p in text.split(",")):
        scope, _, counter = item.partition(":")
        if scope not in SCOPES or counter not in COUNTERS:
            raise ValueError(
                f"arm {item!r} must be SCOPE:COUNTER with SCOPE in {sorted(SCOPES)} and "
                f"COUNTER in {list(COUNTERS)}"
            )
        arms.append(Arm(SCOPES[scope], counter))
    if len(set(arms)) != len(arms):
        raise ValueError(f"arms must be distinct, got {text!r}")
    return arms


@dataclasses.dataclass
class Sample:
    """Everything measured after one training iteration."""

    elapsed_s: float
    submissions: int
    submissions_per_s: float
    driver_rss: int
    runner_rss: list[int]
    table_entries: int
    table_bytes: int
    counted_states: int
    ledger_releases: int
    max_epsilon_spent: float

    @property
    def total_rss(self) -> int:
        return self.driver_rss + sum(self.runner_rss)


@dataclasses.dataclass
class ArmResult:
    """One arm's samples plus the end-of-run checks."""

    arm: Arm
    samples: list[Sample]
    wall_s: float
    epsilon: float
    runner_releases: int = 0
    ledger_releases: int = 0
    submissions_received: int = 0
    runner_restarts: int = 0


@dataclasses.dataclass(frozen=True)
class Fit:
    """Least-squares line y = slope·x + intercept."""

    slope: float
    intercept: float
    r_squared: float


def linear_fit(x: Sequence[float], y: Sequence[float]) -> Fit:
    """Least-squares line through (x, y) (scipy.stats.linregress); NaN with < 2 distinct x."""
    from scipy import stats

    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    if len(set(x)) < 2:
        return Fit(math.nan, math.nan, math.nan)
    if len(set(y)) == 1:  # linregress's r is undefined for a constant y
        return Fit(0.0, float(y[0]), 1.0)
    result = stats.linregress(x, y)
    return Fit(float(result.slope), float(result.intercept), float(result.rvalue**2))


def growth_mb_per_10k(samples: Sequence[Sample], field: str, *, skip: int = 0) -> float:
    """Slope of ``field`` (bytes; ``total_rss`` allowed) vs submissions, in MB per 10k.

    Args:
        samples: The arm's samples in order.
        field: A byte-valued attribute of :class:`Sample`.
        skip: Leading samples left out (warm-up: imports, first allocations).

    """
    used = list(samples)[skip:]
    fit = linear_fit([float(s.submissions) for s in used], [getattr(s, field) / MB for s in used])
    return fit.slope * 10_000


def warmup_samples(samples: Sequence[Sample], fraction: float = 0.1) -> int:
    """How many leading samples count as warm-up: ``fraction`` of them, at least 1."""
    if len(samples) < 3:
        return 0
    return max(1, int(len(samples) * fraction))


def is_flat(samples: Sequence[Sample], field: str, *, tolerance_mb: float) -> bool:
    """Whether the fitted growth of ``field`` over the run (after warm-up) is ≤ tolerance.

    The fitted increase (slope × submissions covered) is used instead of max − min so
    that one noisy sample (the allocator, a garbage collection) does not decide it.
    """
    skip = warmup_samples(samples)
    used = list(samples)[skip:]
    if len(used) < 2:
        return False
    span = used[-1].submissions - used[0].submissions
    return growth_mb_per_10k(used, field) * span / 10_000 <= tolerance_mb


def check_ledger(result: ArmResult) -> list[str]:
    """The privacy invariants of one arm; returns the violations (empty = all hold)."""
    problems = []
    if result.ledger_releases != result.submissions_received:
        problems.append(
            f"ledger releases {result.ledger_releases} != submissions received "
            f"{result.submissions_received}"
        )
    if result.runner_releases != result.ledger_releases:
        problems.append(
            f"runners produced {result.runner_releases} releases but the ledger recorded "
            f"{result.ledger_releases}"
        )
    for sample in result.samples:
        if sample.ledger_releases != sample.submissions:
            problems.append(
                f"at {sample.submissions} submissions the ledger had {sample.ledger_releases}"
            )
            break
    worst = max((s.max_epsilon_spent for s in result.samples), default=0.0)
    if worst > result.epsilon * (1 + 1e-9):
        problems.append(f"a local agent spent ε = {worst} > ε = {result.epsilon}")
    return problems


def arm_summary(result: ArmResult, *, tolerance_mb: float) -> dict[str, Any]:
    """The table row of one arm (numbers, not strings)."""
    samples = result.samples
    skip = warmup_samples(samples)
    first, last = samples[skip] if samples else None, samples[-1] if samples else None
    submissions = last.submissions if last else 0
    return {
        "arm": result.arm.label,
        "submissions": submissions,
        "wall_s": result.wall_s,
        "submissions_per_s": submissions / result.wall_s if result.wall_s > 0 else math.nan,
        "table_mb_start": first.table_bytes / MB if first else math.nan,
        "table_mb_end": last.table_bytes / MB if last else math.nan,
        "table_entries_end": last.table_entries if last else 0,
        "table_growth_mb_per_10k": growth_mb_per_10k(samples, "table_bytes", skip=skip),
        "driver_rss_mb_start": first.driver_rss / MB if first else math.nan,
        "driver_rss_mb_end": last.driver_rss / MB if last else math.nan,
        "runner_rss_mb_start": sum(first.runner_rss) / MB if first else math.nan,
        "runner_rss_mb_end": sum(last.runner_rss) / MB if last else math.nan,
        "rss_growth_mb_per_10k": growth_mb_per_10k(samples, "total_rss", skip=skip),
        "rss_flat": is_flat(samples, "total_rss", tolerance_mb=tolerance_mb),
        "table_flat": is_flat(samples, "table_bytes", tolerance_mb=0.0),
        "ledger_ok": not check_ledger(result),
        "ledger_releases": result.ledger_releases,
        "runner_releases": result.runner_releases,
        "max_epsilon_spent": max((s.max_epsilon_spent for s in samples), default=0.0),
        "runner_restarts": result.runner_restarts,
    }


def _fmt(value: float, digits: int = 1) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:,.{digits}f}"


def results_table(results: Sequence[ArmResult], *, tolerance_mb: float) -> str:
    """Markdown table, one row per arm."""
    header = (
        "| arm | submissions | subm./s | table MB (start → end) | table entries | "
        "table growth MB/10k | RSS MB driver (start → end) | RSS MB runners, sum (start → end) "
        "| RSS growth MB/10k | RSS flat | ledger = releases | max ε/agent |"
    )
    lines = [header, "|" + "---|" * 12]
    for result in results:
        row = arm_summary(result, tolerance_mb=tolerance_mb)
        lines.append(
            f"| {row['arm']} | {row['submissions']} | {_fmt(row['submissions_per_s'])} | "
            f"{_fmt(row['table_mb_start'], 2)} → {_fmt(row['table_mb_end'], 2)} | "
            f"{row['table_entries_end']:,} | {_fmt(row['table_growth_mb_per_10k'], 3)} | "
            f"{_fmt(row['driver_rss_mb_start'])} → {_fmt(row['driver_rss_mb_end'])} | "
            f"{_fmt(row['runner_rss_mb_start'])} → {_fmt(row['runner_rss_mb_end'])} | "
            f"{_fmt(row['rss_growth_mb_per_10k'], 2)} | {'yes' if row['rss_flat'] else 'no'} | "
            f"{'yes' if row['ledger_ok'] else 'NO'} ({row['ledger_releases']} = "
            f"{row['runner_releases']}) | {_fmt(row['max_epsilon_spent'], 2)} |"
        )
    return "\n".join(lines)


def timeline_table(result: ArmResult, *, rows: int = 8) -> str:
    """A few evenly spaced samples of one arm (memory over time)."""
    samples = result.samples
    if not samples:
        return "(no samples)"
    step = max(1, math.ceil(len(samples) / rows))
    picked = samples[::step]
    if picked[-1] is not samples[-1]:
        picked.append(samples[-1])
    lines = [
        "| elapsed s | submissions | subm./s (iteration) | table entries | table MB | "
        "driver RSS MB | runners RSS MB |",
        "|" + "---|" * 7,
    ]
    for s in picked:
        lines.append(
            f"| {s.elapsed_s:.0f} | {s.submissions} | {_fmt(s.submissions_per_s)} | "
            f"{s.table_entries:,} | {s.table_bytes / MB:.2f} | {s.driver_rss / MB:.1f} | "
            f"{sum(s.runner_rss) / MB:.1f} |"
        )
    return "\n".join(lines)


def render_section(
    results: Sequence[ArmResult], *, command: str, machine: Mapping[str, Any], notes: str
) -> str:
    """This benchmark's RESULTS.md section."""
    tolerance = float(machine.get("tolerance_mb", 10.0))
    parts = [
        "## Soak: PGC-A3C with SimHash counting (`benchmarks/soak.py`)",
        "",
        f"- Command: `{command}`",
        f"- Machine: {machine['line']} (at the start; shared with other jobs)",
        f"- Load average observed (1, 5, 15 min): start {machine['load_start']}, "
        f"end {machine['load_end']}",
        notes,
        "",
        results_table(results, tolerance_mb=tolerance),
    ]
    for result in results:
        parts += ["", f"Memory over time, arm `{result.arm.label}`:", "", timeline_table(result)]
    return "\n".join(parts)


# --------------------------------------------------------------------------------------
# Running (Ray).
# --------------------------------------------------------------------------------------


def load_base_config(path: str) -> dict[str, Any]:
    """The first experiment's ``config:`` of a YAML experiment file (env folded in)."""
    return load_experiment_config(path)


def build_config(base: Mapping[str, Any], arm: Arm, args: argparse.Namespace) -> Any:
    """LDPA3CConfig of one arm: ``base`` plus the runners and the count bonus."""
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig

    settings = dict(base)
    settings.pop("env", None)
    config = LDPA3CConfig().environment(base.get("env", LDPA3CConfig().env))
    config.update_from_dict(settings)
    cpus = args.cpus_per_runner
    if cpus is None:
        cpus = max(0.01, (args.num_cpus - 1) / args.num_env_runners)
    config.env_runners(num_env_runners=args.num_env_runners, num_cpus_per_env_runner=cpus)
    config.aggregator(aggregator_submissions_per_iteration=args.submissions_per_iteration)
    config.count_exploration(
        count_exploration_config={
            "hash": "simhash",
            "num_bits": args.num_bits,
            "counter": arm.counter,
        },
        count_exploration_scope=arm.scope,
    )
    config.debugging(seed=args.seed, log_level="ERROR")
    config.validate()
    return config


def _rss(pid: int) -> int:
    import psutil

    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:  # a runner that just died (restart_failed_env_runners)
        return 0


def runner_stats(algo: Any) -> list[dict[str, Any]]:
    """``count_exploration_stats()`` of every healthy remote EnvRunner, plus its RSS."""
    stats = algo.env_runner_group.foreach_env_runner(
        "count_exploration_stats", local_env_runner=False
    )
    for s in stats:
        s["rss"] = _rss(int(s["pid"]))
    return stats


def drain(algo: Any, *, timeout_s: float = 60.0) -> None:
    """Receives the submissions still in flight, so the ledger can be compared exactly."""
    group = algo.env_runner_group
    deadline = time.monotonic() + timeout_s
    while group.num_in_flight_async_reqs(tag="ldp_submit") > 0:
        if time.monotonic() > deadline:
            raise BenchmarkError(f"in-flight submissions did not arrive within {timeout_s:g} s")
        for _, submissions in group.fetch_ready_async_reqs(tags="ldp_submit", timeout_seconds=1):
            algo._receive(submissions)


def run_arm(arm: Arm, base: Mapping[str, Any], args: argparse.Namespace) -> ArmResult:
    """Builds the algorithm, trains it for the arm's time or submissions, samples memory."""
    config = build_config(base, arm, args)
    log_algorithms_into_a_temporary_folder("soak_")
    algo = config.build_algo()
    samples: list[Sample] = []
    start = time.perf_counter()
    try:
        while True:
            results = algo.train()
            elapsed = time.perf_counter() - start
            stats = runner_stats(algo)
            ledger = algo._ledger
            samples.append(
                Sample(
                    elapsed_s=elapsed,
                    submissions=int(results["submissions"]),
                    submissions_per_s=float(results["ldp"]["submissions_per_second"]),
                    driver_rss=_rss(os.getpid()),
                    runner_rss=[int(s["rss"]) for s in stats],
                    table_entries=sum(int(s["entries"]) for s in stats),
                    table_bytes=sum(int(s["bytes"]) for s in stats),
                    counted_states=sum(int(s["counted_states"]) for s in stats),
                    ledger_releases=ledger.releases,
                    max_epsilon_spent=ledger.max_epsilon_spent,
                )
            )
            last = samples[-1]
            if args.verbose:
                print(
                    f"  [{arm.label}] {elapsed:7.0f} s  {last.submissions:7d} subm.  "
                    f"{last.submissions_per_s:6.1f}/s  table {last.table_bytes / MB:8.2f} MB "
                    f"({last.table_entries} entries)  RSS {last.total_rss / MB:8.1f} MB",
                    flush=True,
                )
            if args.minutes is not None and elapsed >= args.minutes * 60:
                break
            if args.submissions is not None and last.submissions >= args.submissions:
                break
        drain(algo)
        final = runner_stats(algo)
        wall = time.perf_counter() - start
        return ArmResult(
            arm=arm,
            samples=samples,
            wall_s=wall,
            epsilon=float(config.privacy_epsilon),
            runner_releases=sum(int(s["releases"]) for s in final),
            ledger_releases=algo._ledger.releases,
            submissions_received=algo._scores.submissions,
            runner_restarts=algo.env_runner_group.num_remote_worker_restarts(),
        )
    finally:
        algo.stop()


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in load_averages())


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("--minutes", type=float, default=None, help="minutes per arm")
    stop.add_argument("--submissions", type=int, default=None, help="submissions per arm")
    parser.add_argument(
        "--arms",
        default="runner:count_min,runner:exact",
        help="comma-separated SCOPE:COUNTER arms (scope agent or runner)",
    )
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="base experiment file")
    parser.add_argument("--num-env-runners", type=int, default=4)
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs for ray.init")
    parser.add_argument("--cpus-per-runner", type=float, default=None)
    parser.add_argument("--num-bits", type=int, default=64, help="SimHash k")
    parser.add_argument("--submissions-per-iteration", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--flat-tolerance-mb",
        type=float,
        default=10.0,
        help="an arm's RSS is 'flat' if its fitted growth over the run is at most this",
    )
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument("--results-md", type=Path, default=RESULTS_MD)
    parser.add_argument("--json", type=Path, default=None, help="also write raw samples")
    parser.add_argument("--note", default="", help="extra sentence for RESULTS.md")
    parser.add_argument("-q", "--quiet", dest="verbose", action="store_false")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the arms, prints the tables, writes results; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    command = command_line(__file__, argv)
    if args.minutes is None and args.submissions is None:
        args.minutes = 10.0
    for name in ("num_env_runners", "num_cpus", "num_bits", "submissions_per_iteration"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if (args.minutes is not None and not args.minutes > 0) or (
        args.submissions is not None and args.submissions < 1
    ):
        parser.error("--minutes / --submissions must be > 0")
    try:
        arms = parse_arms(args.arms)
        base = load_base_config(args.config)
        for arm in arms:  # fail before Ray starts
            build_config(base, arm, args)
    except (ValueError, BenchmarkError) as e:
        parser.error(str(e))
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    quiet_ray()
    warnings.filterwarnings("ignore")
    import ray

    machine = {"load_start": _load(), "tolerance_mb": args.flat_tolerance_mb}
    results: list[ArmResult] = []
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        machine["line"] = machine_line(load=False)  # loads: the line below
        for arm in arms:
            print(f"arm {arm.label} (load {_load()})", flush=True)
            results.append(run_arm(arm, base, args))
    finally:
        ray.shutdown()
    machine["load_end"] = _load()
    print()
    print(results_table(results, tolerance_mb=args.flat_tolerance_mb))
    problems = {r.arm.label: check_ledger(r) for r in results}
    for label, found in problems.items():
        for problem in found:
            print(f"LEDGER CHECK FAILED [{label}]: {problem}", file=sys.stderr)
    notes = (
        f"- Setup: `{args.config}` with {args.num_env_runners} EnvRunners, SimHash k = "
        f"{args.num_bits}, {args.submissions_per_iteration} submissions per iteration; "
        "arms run one after the other in the same process. Memory is sampled after every "
        "iteration; growth = least-squares slope after a 10% warm-up; RSS 'flat' = fitted "
        f"growth over the arm ≤ {args.flat_tolerance_mb:g} MB. `runner` scope = one table "
        "per EnvRunner for its whole life (opt-in, breaks the per-agent guarantee); "
        "`agent` scope tables are reset per local agent, so they never exceed one episode."
    )
    if args.note:
        notes += f"\n- Note: {args.note}"
    if args.write_results:
        RESULTS.write(
            args.results_md, render_section(results, command=command, machine=machine, notes=notes)
        )
        print(f"\nwrote {args.results_md}")
    if args.json is not None:
        payload = {
            "command": command,
            "machine": machine,
            "arms": [
                {
                    "summary": arm_summary(r, tolerance_mb=args.flat_tolerance_mb),
                    "samples": [dataclasses.asdict(s) for s in r.samples],
                }
                for r in results
            ],
        }
        dump_json(args.json, payload)
    return 1 if any(problems.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
