"""Cost of the write-ahead privacy journal: fsync'd appends, and PGC-A3C throughput.

Compares, in the same run, a journal on a real disk (every append ``fsync``-ed to the
device) with a journal on tmpfs (``/dev/shm``: ``fsync`` is nearly free, so this is the
"no durable journal" baseline). Two measurements:

1. raw appends per second of one PGC-A3C submission record;
2. PGC-A3C submissions per second with ``tuned_configs/ldp_a3c_laplace.yaml`` (2 EnvRunners),
   disk and tmpfs runs alternating so that machine drift hits both alike.

Usage::

    python benchmarks/journal_overhead.py                # prints the table, updates RESULTS.md
    python benchmarks/journal_overhead.py --iterations 3 --repeats 1 --no-write
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import (
    RESULTS_MD,
    BenchmarkError,
    Progress,
    ResultsSection,
    command_line,
    load_experiment_config,
    log_algorithms_into_a_temporary_folder,
    machine_line,
)

RESULTS = ResultsSection("journal_overhead")
RECORD = {
    "type": "submission",
    "id": "1-0123abcd-0#1",
    "agent_id": "1-0123abcd-0",
    "agent_sequence": 1,
    "epsilon": 10.0,
    "mechanism": "laplace",
    "score": 23.0,
    "env_steps": 23,
    "weights_version": 5,
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config", default="tuned_configs/ldp_a3c_laplace.yaml", help="experiment file"
    )
    parser.add_argument("--iterations", type=int, default=6, help="timed iterations per run")
    parser.add_argument("--submissions-per-iteration", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2, help="disk/tmpfs run pairs")
    parser.add_argument("--appends", type=int, default=2000, help="raw appends per location")
    parser.add_argument(
        "--disk-dir", default=str(Path.home()), help="folder on a real disk (a temp dir in it)"
    )
    parser.add_argument("--tmpfs-dir", default="/dev/shm", help="folder on tmpfs")
    parser.add_argument("--results-md", default=str(RESULTS_MD))
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args(argv)
    for name in ("iterations", "submissions_per_iteration", "repeats", "appends"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    for name in ("disk_dir", "tmpfs_dir"):
        if not os.path.isdir(getattr(args, name)):
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)!r} is not a folder")
    args.command_line = command_line(__file__, argv)
    return args


def appends_per_second(folder: str, count: int) -> float:
    """Appends/s of one submission record, each flushed and fsync'd."""
    from rllib_privacy.accounting import PrivacyJournal

    directory = tempfile.mkdtemp(prefix="journal_bench_", dir=folder)
    try:
        journal = PrivacyJournal(Path(directory) / "ldp_a3c.jsonl", component="ldp_a3c")
        start = time.perf_counter()
        for _ in range(count):
            journal.append(RECORD)
        elapsed = time.perf_counter() - start
        journal.close()
        return count / elapsed
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def submissions_per_second(base: dict[str, Any], folder: str, args: argparse.Namespace) -> float:
    """PGC-A3C submissions/s over the timed iterations (after one warm-up iteration)."""
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig

    directory = tempfile.mkdtemp(prefix="journal_bench_", dir=folder)
    config = LDPA3CConfig().update_from_dict(
        {
            **base,
            "aggregator_submissions_per_iteration": args.submissions_per_iteration,
            "privacy_journal_dir": directory,
        }
    )
    log_algorithms_into_a_temporary_folder("journal_overhead_")
    algo = config.build_algo()
    try:
        algo.train()  # warm-up: actors, first forward passes
        before, start = algo._scores.submissions, time.perf_counter()
        for _ in range(args.iterations):
            algo.train()
        return (algo._scores.submissions - before) / (time.perf_counter() - start)
    finally:
        algo.stop()
        shutil.rmtree(directory, ignore_errors=True)


def markdown(rows: list[tuple[str, str, str, str]], args: argparse.Namespace) -> str:
    lines = [
        "## Privacy journal overhead",
        "",
        f"Command: `{args.command_line}`  ",
        f"Machine: {machine_line()}. Disk = `--disk-dir` ({args.disk_dir}), "
        f"tmpfs = `--tmpfs-dir` ({args.tmpfs_dir}, fsync nearly free: the no-journal baseline). "
        "PGC-A3C journals once per batch of submissions that arrive together, before they "
        "touch θ.",
        "",
        "| measurement | disk | tmpfs | disk / tmpfs |",
        "|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Runs both measurements, prints the table and (unless --no-write) updates RESULTS.md."""
    args = parse_args(argv)
    try:
        base = load_experiment_config(args.config)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    import ray

    import rllib_privacy

    rllib_privacy.register()  # Registers LDPA3C and the envs

    raw = {
        name: appends_per_second(folder, args.appends)
        for name, folder in (("disk", args.disk_dir), ("tmpfs", args.tmpfs_dir))
    }
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        rates: dict[str, list[float]] = {"disk": [], "tmpfs": []}
        progress = Progress(2 * args.repeats)
        for repeat in range(args.repeats):
            order = ("disk", "tmpfs") if repeat % 2 == 0 else ("tmpfs", "disk")
            for name in order:
                folder = args.disk_dir if name == "disk" else args.tmpfs_dir
                rates[name].append(submissions_per_second(base, folder, args))
                progress.advance(f"{name}: {rates[name][-1]:.1f} submissions/s")
    finally:
        ray.shutdown()
    disk, tmpfs = statistics.median(rates["disk"]), statistics.median(rates["tmpfs"])
    rows = [
        (
            "fsync'd appends / s (one submission record)",
            f"{raw['disk']:.0f}",
            f"{raw['tmpfs']:.0f}",
            f"{raw['disk'] / raw['tmpfs']:.3f}",
        ),
        (
            f"PGC-A3C submissions / s (median of {args.repeats}; "
            f"{args.iterations}×{args.submissions_per_iteration} each)",
            f"{disk:.1f}",
            f"{tmpfs:.1f}",
            f"{disk / tmpfs:.3f}",
        ),
    ]
    section = markdown(rows, args)
    print(section)
    if not args.no_write:
        RESULTS.write(args.results_md, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
