#!/usr/bin/env python
"""Runs the README's quick start N times, as a user would, and reports how often it solves.

Each run is ``rllib train -f tuned_configs/ldp_a3c.yaml`` in a fresh process with its own
storage folder (unseeded, as shipped: every run is a different random draw). A run counts as
solved when its last result has ``ldp/solved_at`` (the mean score of the last 100 submissions
reached 195). Reported: solved runs out of N, wall time of the whole command (Ray start-up
included), ``solved_at``, the final greedy evaluation return and throughput, with the 1-minute
load average before and after every run.

The central-ε row (``tuned_configs/ldp_a3c_central.yaml``: the same job behind the shuffler
at central ε ≤ 1) goes into its own section beside the quick start's::

    python benchmarks/quick_start.py --runs 10 --write-results
    python benchmarks/quick_start.py --runs 10 --config tuned_configs/ldp_a3c_central.yaml \
        --section quick_start_central --write-results

The ε columns are the run's local ε per agent (``privacy/epsilon_spent``), the per-report ε₀
and the central ε: ``privacy/epsilon_central`` behind the shuffler, else the hypothetical
``privacy/epsilon_central_if_shuffled`` (marked "if shuffled"; ``privacy/epsilon_shuffled``
in result files of 0.2.0 and before).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import (
    REPO_ROOT,
    RESULTS_MD,
    Progress,
    ResultsSection,
    command_line,
    dump_json,
    load_average,
    machine_line,
)

RESULTS = ResultsSection("quick_start")
#: The central-ε job's section, beside the quick start's (``--section``).
RESULTS_CENTRAL = ResultsSection("quick_start_central")
SECTIONS = {section.marker: section for section in (RESULTS, RESULTS_CENTRAL)}


def central_epsilon(privacy: dict[str, Any]) -> tuple[float | None, bool]:
    """(central ε, achieved): recorded behind the shuffler, or only what one would give."""
    if privacy.get("epsilon_central") is not None:
        return privacy["epsilon_central"], True
    for key in ("epsilon_central_if_shuffled", "epsilon_shuffled"):  # the second: <= 0.2.0
        if privacy.get(key) is not None:
            return privacy[key], False
    return None, False


def last_result(storage: Path) -> dict[str, Any]:
    """The last row of the (single) trial's result.json under ``storage``."""
    files = sorted(storage.rglob("result.json"))
    if not files:
        return {}
    lines = [line for line in files[0].read_text().splitlines() if line.strip()]
    return json.loads(lines[-1]) if lines else {}


def run_once(config: str, extra: list[str], timeout: float) -> dict[str, Any]:
    """One quick-start run; returns its figures."""
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="quick_start_") as tmp:
        command = ["rllib", "train", "-f", config, "--storage-path", tmp, *extra]
        start = time.perf_counter()
        proc = subprocess.run(
            command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
        wall = time.perf_counter() - start
        result = last_result(Path(tmp))
    ldp = result.get("ldp", {})
    central, achieved = central_epsilon(result.get("privacy", {}))
    return {
        "returncode": proc.returncode,
        "wall_s": wall,
        "solved_at": ldp.get("solved_at"),
        "submissions": ldp.get("submissions"),
        "eval_return_mean": ldp.get("eval_return_mean"),
        "eval_heldout": ldp.get("eval_return_mean_heldout_gravities"),
        # Untrusted agents (benchmarks/poisoning.py): reports the robust mean left out or
        # the aggregator's check refused.
        "filtered": ldp.get("filtered_submissions"),
        "rejected": ldp.get("rejected_submissions"),
        "epsilon_per_agent": ldp.get("epsilon_per_agent"),
        "epsilon_per_report": result.get("privacy", {}).get("epsilon_per_report"),
        "epsilon_central": central,
        "central_achieved": achieved,
        "submissions_per_second": result.get("submissions_per_second"),
        "training_s": result.get("time_total_s"),
        "load_before": load_before,
        "load_after": load_average(),
        "stderr_tail": proc.stderr[-1500:] if proc.returncode else "",
        # The last progress lines, for the docs' example output.
        "progress_tail": [line for line in proc.stdout.splitlines() if line.startswith("[")][-3:],
    }


def fmt(value: Any, spec: str = ".1f") -> str:
    """A number formatted with ``spec``, or — when missing."""
    return "—" if value is None else format(value, spec)


def central_cell(run: dict[str, Any]) -> str:
    """The central ε, marked when it is only what a shuffler would give."""
    value = run.get("epsilon_central", run.get("epsilon_shuffled"))
    if value is None:
        return "—"
    return f"{value:.3f}" + ("" if run.get("central_achieved") else " (if shuffled)")


def table(runs: list[dict[str, Any]]) -> str:
    """Markdown table of every run."""
    rows = [
        "| run | solved_at | submissions | wall (s) | training (s) | eval return (held-out) "
        "| subm/s | ε/agent | ε₀ | central ε | load before/after |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs):
        rows.append(
            f"| {i} | {fmt(r['solved_at'], ',.0f')} | {fmt(r['submissions'], ',.0f')} | "
            f"{r['wall_s']:.0f} | {fmt(r['training_s'], '.0f')} | "
            f"{fmt(r['eval_return_mean'])} ({fmt(r['eval_heldout'])}) | "
            f"{fmt(r['submissions_per_second'], ',.0f')} | {fmt(r['epsilon_per_agent'], 'g')} | "
            f"{fmt(r.get('epsilon_per_report'), '.3g')} | "
            f"{central_cell(r)} | "
            f"{r['load_before']:.2f}/{r['load_after']:.2f} |"
        )
    return "\n".join(rows)


def summary(runs: list[dict[str, Any]]) -> str:
    """One line: solved k/N, median wall time and median solved_at."""
    solved = [r for r in runs if r["solved_at"] is not None and r["returncode"] == 0]
    walls = [r["wall_s"] for r in runs]
    at = [r["solved_at"] for r in solved]
    return (
        f"solved in {len(solved)} of {len(runs)} runs; median wall time "
        f"{statistics.median(walls):.0f} s (max {max(walls):.0f} s); median solved_at "
        f"{statistics.median(at):,.0f} submissions"
        if at
        else f"solved in 0 of {len(runs)} runs; median wall time {statistics.median(walls):.0f} s"
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="independent runs (default 10)")
    parser.add_argument("--config", default="tuned_configs/ldp_a3c.yaml", help="experiment file")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    parser.add_argument(
        "--section",
        choices=list(SECTIONS),
        default=RESULTS.marker,
        help="RESULTS.md section to write (quick_start_central: the central-ε job's row)",
    )
    parser.add_argument("--json", type=Path, help="also write the runs as JSON")
    parser.add_argument(
        "extra", nargs=argparse.REMAINDER, help="after --: more `rllib train` options"
    )
    args = parser.parse_args(argv)
    extra = [a for a in args.extra if a != "--"]
    machine = machine_line(load=False)  # the start; each run's load is in the table
    runs = []
    progress = Progress(args.runs)
    for _ in range(args.runs):
        run = run_once(args.config, extra, args.timeout)
        runs.append(run)
        progress.advance(
            f"rc={run['returncode']} solved_at={fmt(run['solved_at'], ',.0f')} "
            f"wall={run['wall_s']:.0f}s eval={fmt(run['eval_return_mean'])} "
            f"load={run['load_before']:.2f}"
        )
        if run["returncode"]:
            print(run["stderr_tail"], file=sys.stderr)
    text = "\n".join(
        [
            "### Quick start: success over independent runs"
            + (" (central ε, shuffler on)" if args.section == "quick_start_central" else ""),
            "",
            f"`{command_line(__file__, argv)}` — {machine}; each run is "
            f"`rllib train -f {args.config}` in a fresh process (unseeded).",
            "",
            f"**{summary(runs)}.**",
            "",
            table(runs),
        ]
    )
    print(text)
    if args.json:
        dump_json(args.json, runs)
    if args.write_results:
        SECTIONS[args.section].write(RESULTS_MD, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
