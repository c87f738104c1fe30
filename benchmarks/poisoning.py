#!/usr/bin/env python
"""Does the quick start still solve when some local agents send the worst valid reports?

Each trial is ``rllib train -f tuned_configs/ldp_a3c.yaml`` (PrivUnitG, ε = 1, |B| = 2048)
in a fresh process, with ``agents_malicious_fraction`` of the local agents malicious
(``agents_malicious_attack``: by default ``flip``, each sends the valid output of largest
norm against its own gradient: the manipulation attack of Cheu, Smith & Ullman 2021) and
the aggregator's mean (``aggregator_robust: none``) or its projection filter
(``projection_filter``). The no-attack baseline (fraction 0) runs in the same grid.
Reported per cell: solved runs (``ldp/solved_at`` reached before the submission cap), the
median ``solved_at``, the median last greedy evaluation return, reports left out by the
filter and refused by the check, wall time. Every finished trial is kept in
``--storage``/trials.json: rerunning the same command resumes the grid.
See docs/components/ldp-a3c.md#untrusted-agents.

Example (the full grid, about 50 minutes on 2 cores)::

    python benchmarks/poisoning.py --runs 2 --write-results

A tiny check::

    python benchmarks/poisoning.py --runs 1 --fractions 0 0.1 --max-submissions 16384
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import (
    RESULTS_MD,
    Progress,
    ResultsSection,
    TrialStore,
    command_line,
    machine_line,
    run_resumable,
)
from quick_start import run_once

RESULTS = ResultsSection("poisoning")
AGGREGATIONS = ("none", "projection_filter")
DEFAULT_FRACTIONS = (0.0, 0.01, 0.05, 0.10)


def plan(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Key → spec of every trial, baseline first, then by fraction and aggregation."""
    planned = {}
    for fraction in args.fractions:
        for robust in args.aggregations:
            for run in range(args.runs):
                key = f"fraction={fraction:g}/robust={robust}/run={run}"
                planned[key] = {
                    "config_file": args.config,
                    "fraction": fraction,
                    "robust": robust,
                    "attack": args.attack,
                    "max_submissions": args.max_submissions,
                    "run": run,
                }
    return planned


def run_trial(spec: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """One ``rllib train`` run of the quick start with the attack and aggregation of ``spec``."""
    overrides = {
        "agents_malicious_fraction": spec["fraction"],
        "agents_malicious_attack": spec["attack"],
        "aggregator_robust": spec["robust"],
    }
    stop = {"ldp/solved": 1, "submissions": spec["max_submissions"]}
    extra = ["--config", json.dumps(overrides), "--stop", json.dumps(stop)]
    return run_once(spec["config_file"], extra, timeout)


def fmt(value: Any, spec: str = ".1f") -> str:
    """A number formatted with ``spec``, or — when missing."""
    return "—" if value is None else format(value, spec)


def cell_rows(
    planned: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """One table row per (fraction, aggregation), over its runs."""
    cells: dict[tuple[float, str], list[Mapping[str, Any]]] = {}
    for key, spec in planned.items():
        if key in results:
            cells.setdefault((spec["fraction"], spec["robust"]), []).append(results[key])
    rows = []
    for (fraction, robust), runs in cells.items():
        solved = [r["solved_at"] for r in runs if r["solved_at"] is not None]
        evals = [r["eval_return_mean"] for r in runs if r["eval_return_mean"] is not None]
        submissions = sum(r["submissions"] or 0 for r in runs)
        filtered = sum(r["filtered"] or 0 for r in runs)
        rejected = sum(r["rejected"] or 0 for r in runs)
        rows.append(
            f"| {fraction:.0%} | {robust} | {len(solved)}/{len(runs)} | "
            f"{fmt(statistics.median(solved) if solved else None, ',.0f')} | "
            f"{fmt(statistics.median(evals) if evals else None)} | "
            f"{fmt(1000 * filtered / submissions if submissions else None, '.1f')} | "
            f"{rejected:.0f} | {statistics.median(r['wall_s'] for r in runs):.0f} | "
            f"{min(r['load_before'] for r in runs):.2f}–{max(r['load_after'] for r in runs):.2f} |"
        )
    return rows


def report(
    args: argparse.Namespace,
    argv: list[str] | None,
    planned: Mapping[str, Mapping[str, Any]],
    results: Mapping[str, Mapping[str, Any]],
    machine: str,
) -> str:
    """The RESULTS.md section: command, machine, date, load and the table."""
    header = (
        "| malicious | aggregation | solved | median solved_at | median last eval return "
        "| left out by the filter (per 1000 reports) | refused | median wall (s) "
        "| 1-min load |\n|---|---|---|---|---|---|---|---|---|"
    )
    return "\n".join(
        [
            "### Poisoning: the quick start with untrusted local agents",
            "",
            f"`{command_line(__file__, argv)}` — {machine}; each trial is "
            f"`rllib train -f {args.config}` in a fresh process (unseeded) with "
            f"`agents_malicious_attack: {args.attack}`, stopped at "
            f"`ldp/solved` or {args.max_submissions:,} submissions. The malicious agents send "
            "the valid report of largest norm (they all pass the check: `refused` stays 0); "
            "docs/components/ldp-a3c.md#untrusted-agents.",
            "",
            header,
            *cell_rows(planned, results),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="runs per cell (default 2)")
    parser.add_argument(
        "--fractions",
        type=float,
        nargs="+",
        default=list(DEFAULT_FRACTIONS),
        help="malicious fractions (default 0 0.01 0.05 0.1; 0 is the no-attack baseline)",
    )
    parser.add_argument(
        "--aggregations",
        nargs="+",
        choices=AGGREGATIONS,
        default=list(AGGREGATIONS),
        help="aggregator_robust values (default both)",
    )
    parser.add_argument("--attack", choices=("flip", "fixed"), default="flip")
    parser.add_argument(
        "--max-submissions",
        type=int,
        default=600_000,
        help=(
            "submission cap of a run that does not solve (default 600000: about twice the "
            "private-score quick start's median solved_at)"
        ),
    )
    parser.add_argument("--config", default="tuned_configs/ldp_a3c.yaml", help="experiment file")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument(
        "--storage",
        type=Path,
        default=Path(tempfile.gettempdir()) / "poisoning_benchmark",
        help="where finished trials are kept (rerun the same command to resume)",
    )
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    args = parser.parse_args(argv)
    if any(not 0.0 <= f < 1.0 for f in args.fractions):
        parser.error("--fractions must be in [0, 1)")
    machine = machine_line()
    planned = plan(args)
    store = TrialStore(args.storage / "trials.json")
    progress = Progress(len(planned))

    def run(keys: list[str], finished: Any) -> None:
        for key in keys:
            result = run_trial(planned[key], args.timeout)
            if result["returncode"]:
                print(result["stderr_tail"], file=sys.stderr)
            finished(key, result)

    def describe(key: str, result: Mapping[str, Any]) -> str:
        return (
            f"{key}: rc={result['returncode']} solved_at={fmt(result['solved_at'], ',.0f')} "
            f"eval={fmt(result['eval_return_mean'])} filtered={fmt(result['filtered'], '.0f')} "
            f"wall={result['wall_s']:.0f}s load={result['load_before']:.2f}"
        )

    results, _ = run_resumable(planned, store, run, progress=progress, describe=describe)
    text = report(args, argv, planned, results, machine)
    print(text)
    if args.write_results:
        RESULTS.write(RESULTS_MD, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
