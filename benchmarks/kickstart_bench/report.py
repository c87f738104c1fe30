"""What the kickstarting benchmark reports: tables, plots, the RESULTS.md parts, the JSON file.

Pure formatting of ``kickstart_bench.results`` (unit-tested without Ray), plus the two
plots (``rllib_privacy.plotting`` for the learning curves, matplotlib for the
privacy-utility points).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import (
    REPO_ROOT,
    ResultsSection,
    format_number,
    jsonable,
    known_median,
    machine_line,
    markdown_table,
    spread,
)

from kickstart_bench.plan import ARMS, TASKS, GridPlan, Task, is_kickstart, is_private, with_target
from kickstart_bench.results import (
    RETURN_KEY,
    STEPS_KEY,
    ArmResult,
    OverheadResult,
    RunResult,
    TaskResult,
    median_steps,
    num_reached,
    speedup,
    three_quarters,
)

#: The paper's headline: privacy-aware students converge about 4× faster than the teacher.
PAPER_SPEEDUP = 4.0

#: This benchmark's RESULTS.md section: one part per task and ``overhead``, each with its
#: own markers, so runs of single tasks add up instead of overwriting each other; a new part
#: takes its place in this order.
RESULTS = ResultsSection(
    "kickstart",
    title="## Privacy-preserving kickstarting (`benchmarks/kickstart.py`)",
    parts=(*TASKS, "overhead"),
)

# --------------------------------------------------------------------------------------
# Cells.
# --------------------------------------------------------------------------------------


def format_steps(value: float | None) -> str:
    """Env steps with thousands separators; ∞ = not reached; — = unknown."""
    if value is None or math.isnan(value):
        return "—"
    if math.isinf(value):
        return "not reached"
    return f"{int(round(value)):,}"


def format_speedup(value: float) -> str:
    """``2.31×``; ``< 1`` style for 0 (student did not reach T); ``—`` for NaN."""
    if math.isnan(value):
        return "—"
    if value == 0.0:
        return "0 (not reached)"
    return f"{value:.2f}×"


def format_sci(value: float) -> str:
    """Compact scientific notation (privacy spend spans many orders of magnitude)."""
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞"
    return f"{value:.3g}"


def _unfinished(arm: ArmResult) -> int:
    return sum(1 for r in arm.runs if r.unfinished)


# --------------------------------------------------------------------------------------
# Tables.
# --------------------------------------------------------------------------------------


def arm_table(result: TaskResult) -> str:
    """Per arm: reached, median and spread of steps to T, speed-up, teacher privacy spend."""
    header = [
        "student",
        "reached T",
        "median steps to T",
        "min–max",
        "teacher/student (median)",
        "per-seed teacher/student",
        "ε spent (median)",
        "δ spent (median)",
        "states answered (median)",
        "teacher stopped sharing at iteration",
    ]
    rows = []
    for arm in result.arms:
        low, high = spread(arm.steps)
        ratios = [speedup(result.teacher_steps, s) for s in arm.steps]
        stopped = [r.stopped_at for r in arm.runs]
        stopped_text = ", ".join("no" if math.isnan(s) else format_number(s) for s in stopped)
        kickstart = is_kickstart(arm.arm)
        private = is_private(arm.arm)
        rows.append(
            [
                arm.arm,
                f"{num_reached(arm.steps)}/{len(arm.runs)}"
                + (f" ({unfinished} unfinished)" if (unfinished := _unfinished(arm)) else ""),
                format_steps(arm.median),
                f"{format_steps(low)} – {format_steps(high)}",
                format_speedup(speedup(result.teacher_steps, arm.median)),
                ", ".join(format_speedup(r) for r in ratios),
                format_sci(known_median(r.epsilon_spent for r in arm.runs))
                if private
                else ("∞ (no privacy)" if kickstart else "—"),
                format_sci(known_median(r.delta_spent for r in arm.runs)) if private else "—",
                format_steps(known_median(r.answered for r in arm.runs)) if kickstart else "—",
                stopped_text if private else "—",
            ]
        )
    return markdown_table(header, rows)


def bar_table(result: TaskResult, *, bar: str = "T₂") -> str:
    """Per arm: steps to a lower bar (``"T₂"`` or ``"0.75·T"``) and the speed-up there."""
    if bar == "T₂":
        teacher, per_arm = result.teacher.steps_to_lower, [a.lower_steps for a in result.arms]
    else:
        teacher = result.teacher.steps_to_three_quarters
        per_arm = [a.three_quarter_steps for a in result.arms]
    rows = []
    for arm, steps in zip(result.arms, per_arm, strict=True):
        low, high = spread(steps)
        median = median_steps(steps)
        rows.append(
            [
                arm.arm,
                f"{num_reached(steps)}/{len(steps)}",
                format_steps(median),
                f"{format_steps(low)} – {format_steps(high)}",
                format_speedup(speedup(teacher, median)),
                ", ".join(format_speedup(speedup(teacher, v)) for v in steps),
            ]
        )
    return markdown_table(
        [
            "student",
            f"reached {bar}",
            f"median steps to {bar}",
            "min–max",
            "teacher/student (median)",
            "per-seed teacher/student",
        ],
        rows,
    )


def tradeoff_rows(result: TaskResult) -> list[dict[str, Any]]:
    """Per arm: medians of the final ε (RDP and basic composition) and the speed-up at T₂."""
    rows = []
    for arm in result.arms:
        runs = arm.runs
        rows.append(
            {
                "arm": arm.arm,
                "private": is_private(arm.arm),
                "epsilon_rdp": known_median(r.epsilon_spent for r in runs),
                "delta_rdp": known_median(r.delta_spent for r in runs),
                "epsilon_basic": known_median(r.epsilon_basic for r in runs),
                "delta_basic": known_median(r.delta_basic for r in runs),
                "releases": known_median(r.releases for r in runs),
                "asked": known_median(r.asked for r in runs),
                "cached": known_median(r.cached for r in runs),
                "speedup_lower": speedup(
                    result.teacher.steps_to_lower, median_steps(arm.lower_steps)
                ),
                "speedup_target": speedup(result.teacher_steps, arm.median),
                "reached_lower": f"{num_reached(arm.lower_steps)}/{len(runs)}",
            }
        )
    return rows


def tradeoff_table(result: TaskResult) -> str:
    """The privacy-utility table: both accountings of the same runs beside the speed-ups."""
    rows = []
    for row in tradeoff_rows(result):
        private = row["private"]
        rows.append(
            [
                row["arm"],
                format_sci(row["epsilon_rdp"]) if private else "—",
                f"{format_sci(row['epsilon_basic'])} (δ {format_sci(row['delta_basic'])})"
                if private
                else "—",
                format_steps(row["releases"]) if private else "—",
                f"{format_steps(row['asked'])} / {format_steps(row['cached'])}"
                if math.isfinite(row["asked"])
                else "—",
                row["reached_lower"],
                format_speedup(row["speedup_lower"]),
                format_speedup(row["speedup_target"]),
            ]
        )
    return markdown_table(
        [
            "student",
            "final ε, RDP at δ = 10⁻⁵ (median)",
            "same runs, basic composition of Theorem 1: ε (δ) (median)",
            "releases (median)",
            "states asked / served from cache (median)",
            "reached T₂",
            "teacher/student at T₂ (median)",
            "teacher/student at T (median)",
        ],
        rows,
    )


def raw_table(result: TaskResult) -> str:
    """Every seed: steps to T, final return, env steps run, wall time."""
    rows = [
        [
            "teacher (64, 64)",
            str(result.teacher.seed),
            format_steps(result.teacher.steps_to_target),
            format_steps(result.teacher.steps_to_lower),
            f"{result.teacher.final_return:.1f}",
            format_steps(result.teacher.env_steps),
            f"{result.teacher.wall_s:.0f}",
        ]
    ]
    for arm in result.arms:
        for run in arm.runs:
            rows.append(
                [
                    arm.arm,
                    str(run.seed),
                    format_steps(run.steps_to_target)
                    + (" (unfinished: run interrupted)" if run.unfinished else ""),
                    format_steps(run.steps_to_lower),
                    f"{run.final_return:.1f}",
                    format_steps(run.env_steps),
                    f"{run.wall_s:.0f}",
                ]
            )
    return markdown_table(
        [
            "run",
            "seed",
            "steps to T",
            "steps to T₂",
            "final return",
            "env steps run",
            "trial wall s",
        ],
        rows,
    )


def cache_label(bits: int) -> str:
    """The overhead table's label of the answer-cache arm."""
    return f"KickstartPPO (Dirichlet teacher, answer cache {bits} bits)"


def overhead_table(result: OverheadResult) -> str:
    """Median (min-max) seconds per iteration and the ratio to PPO, one row per algorithm."""

    def row(label: str, seconds: list[float], median: float, ratio: str) -> list[str]:
        return [
            label,
            str(len(seconds)),
            f"{median:.2f}",
            f"{min(seconds):.2f} – {max(seconds):.2f}",
            ratio,
        ]

    rows = [
        row(
            "KickstartPPO (Dirichlet teacher)",
            result.kickstart_s,
            result.kickstart_median,
            f"{result.ratio:.3f}×",
        )
    ]
    if result.has_cache:
        rows.append(
            row(
                cache_label(result.cache_bits),
                result.cache_s,
                result.cache_median,
                f"{result.cache_ratio:.3f}×",
            )
        )
    rows.append(row("PPO (no teacher)", result.ppo_s, result.ppo_median, "1×"))
    return markdown_table(
        ["algorithm", "iterations", "median s/iteration", "min – max", "ratio"], rows
    )


def overhead_breakdown(result: OverheadResult) -> str:
    """Teacher time per KickstartPPO iteration (median), what is left, and the cache arm's."""
    answer = statistics.median(result.teacher_answer_s)
    rollout = statistics.median(result.teacher_rollout_s)
    extra = result.kickstart_median - result.ppo_median
    text = (
        f"Per KickstartPPO iteration (medians): waiting for the teacher's answers (actor call "
        f"incl. the Dirichlet draws for {result.batch} states) {answer * 1000:.0f} ms; rollout "
        f"start + stats (k decay, budget check, (ε, δ) for the new k) {rollout * 1000:.0f} ms; "
        f"together {(answer + rollout) * 1000:.0f} ms. Median KickstartPPO − median PPO: "
        f"{extra * 1000:+.0f} ms (besides the teacher: the kickstart term in every SGD step, "
        "the extra batch columns, and machine noise)."
    )
    if not result.has_cache:
        return text
    answer = statistics.median(result.cache_answer_s)
    rollout = statistics.median(result.cache_rollout_s)
    extra = result.cache_median - result.ppo_median
    size = f"{result.cache_size[-1]:.0f}" if result.cache_size else "?"
    return text + (
        f" With the answer cache ({result.cache_bits} bits), per iteration (medians): waiting "
        f"for the teacher's answers (SimHash codes of the states, cache look-ups, Dirichlet "
        f"draws for new codes only) {answer * 1000:.0f} ms; rollout start + stats "
        f"{rollout * 1000:.0f} ms; of {_median_count(result.cache_asked)} states asked per "
        f"iteration, {_percent(result.cached_share)} over the measured iterations were "
        f"served from the cache ({_median_count(result.cache_answered)} fresh releases per "
        f"iteration; {size} codes cached at the end). Median cache arm − median PPO: "
        f"{extra * 1000:+.0f} ms."
    )


def _median_count(values: Sequence[float]) -> str:
    return f"{statistics.median(values):,.0f}" if values else "?"


def _percent(share: float) -> str:
    return f"{share:.1%}" if math.isfinite(share) else "? %"


def _paired(label: str, ratios: Sequence[float]) -> str:
    """Ratios of the rounds, their median and in how many rounds ``label`` was slower."""
    return (
        ", ".join(f"{r:.2f}" for r in ratios)
        + f" (median {statistics.median(ratios):.2f}; {label} slower in "
        f"{sum(r > 1 for r in ratios)} of {len(ratios)} rounds)"
    )


def render_overhead(overhead: OverheadResult, args: argparse.Namespace, run: list[str]) -> str:
    """The RESULTS.md part of the overhead measurement.

    Args:
        overhead: What it measured.
        args: The run's arguments.
        run: Its command, machine and date lines (``run_lines``).

    """
    if overhead.has_cache:
        algorithms = (
            f"the three algorithms (the third: the same KickstartPPO with the teacher's answer "
            f"cache, `teacher_cache_bits: {overhead.cache_bits}`) were built in one process and "
            "trained in turn, the order rotated every round (ABC, BCA, CAB: drift cancels)"
        )
    else:
        algorithms = (
            "the two algorithms were built in one process and trained alternately (ABBA order)"
        )

    def target(ratio: float) -> str:
        return f"**{'met' if ratio <= 1.10 else 'missed'}** ({ratio:.3f}×)"

    lines = [
        "### Overhead: seconds per training iteration",
        "",
        *run,
        f"- CartPole-v1, batch {overhead.batch}, same seed, model size, minibatches and epochs; "
        f"{algorithms}, {overhead.warmup} warm-up iteration(s) each not counted; teacher: "
        f"{overhead.teacher_source}, budgets lifted so that it answered in "
        f"{sum(1 for v in overhead.sharing if v == 1.0)}/{len(overhead.sharing)} measured "
        "iterations.",
        f"- Target ≤ 1.10×: {target(overhead.ratio)}"
        + (f"; with the answer cache {target(overhead.cache_ratio)}" if overhead.has_cache else "")
        + ".",
        "",
        overhead_table(overhead),
        "",
        overhead_breakdown(overhead),
        "",
        "Per round (the iterations of a round ran back to back), KickstartPPO ÷ PPO: "
        + _paired("KickstartPPO", overhead.paired_ratios)
        + (
            "; with the answer cache ÷ PPO: " + _paired("it", overhead.cache_paired_ratios)
            if overhead.has_cache
            else ""
        )
        + ".",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# RESULTS.md and JSON.
# --------------------------------------------------------------------------------------


def three_quarters_meaning(task: Task) -> str:
    """What the 0.75·T bar of ``task`` is, in words."""
    if task.floor == 0.0:
        return "75% of the teacher's final return"
    return (
        f"75% of the way from the task's worst return, {format_number(task.floor)}, to T, "
        "since for negative returns 0.75·T would lie above T"
    )


def render_task(result: TaskResult, results_md: Path) -> str:
    """The RESULTS.md block of one task."""
    task = result.task
    teacher = result.teacher
    lines = [
        f"- Target T = {format_number(task.target)}: {task.why}.",
        f"- Teacher (PPO (64, 64), seed {teacher.seed}): "
        + (
            f"reached T after {format_steps(teacher.steps_to_target)} env steps"
            if math.isfinite(teacher.steps_to_target)
            else f"did not reach T within {format_steps(result.teacher_cap)} env steps"
        )
        + f" ({teacher.iterations} iterations, {teacher.wall_s:.0f} s).",
        f"- Student step cap: {format_steps(result.arms[0].cap if result.arms else math.nan)} "
        "env steps; a seed that did not reach T by then counts as not reached (∞) and sorts "
        "last in the median.",
        "- Wall time of the sample-efficiency part (all tasks of this run): "
        + (f"{result.wall_s:.0f} s." if math.isfinite(result.wall_s) else "not recorded."),
        "- Curves: trials stop at T, so past a seed's stop the median and band are over the "
        "seeds still running (a curve ends when its last seed stops).",
        "",
        arm_table(result),
        "",
        f"Lower bar T₂ = {format_number(task.lower)} (the teacher reached it after "
        f"{format_steps(teacher.steps_to_lower)} env steps), same caps:",
        "",
        bar_table(result, bar="T₂"),
        "",
        f"Bar 0.75·T = {format_number(three_quarters(task.target, task.floor))} "
        f"({three_quarters_meaning(task)}; the teacher reached it after "
        f"{format_steps(teacher.steps_to_three_quarters)} env steps), same caps:",
        "",
        bar_table(result, bar="0.75·T"),
        "",
        "Privacy-utility: the teacher's final ε under RDP (the ledger's accounting) and, for the "
        "same releases, under basic composition of Theorem 1's per-release (ε, δ) (the "
        "accounting before RDP), beside the speed-ups:",
        "",
        tradeoff_table(result),
        "",
        raw_table(result),
    ]
    if result.plot:
        rel = os.path.relpath(result.plot, results_md.parent)
        lines += ["", f"![{task.env} learning curves]({rel})"]
        tradeoff = Path(result.plot).with_name(f"kickstart_{task.name}_tradeoff.png")
        if tradeoff.is_file():
            rel = os.path.relpath(tradeoff, results_md.parent)
            lines += ["", f"![{task.env} privacy-utility]({rel})"]
    return "\n".join(lines)


def run_lines(args: argparse.Namespace, machine: Mapping[str, Any], date: str) -> list[str]:
    """Command, machine and date lines of one part."""
    lines = [
        f"- Command: `{args.command_line}`",
        f"- Machine: {machine_line(machine, date=False)} (at the end); shared with other "
        "engineers' jobs while it ran, so wall times are inflated and noisy.",
        f"- Date: {date}",
    ]
    if getattr(args, "run_note", None):
        lines.append(f"- Note: {args.run_note}")
    if getattr(args, "analyzed_by", None):
        lines.append(
            f"- Tables and plots redone from that run's Tune folders by `{args.analyzed_by}`"
        )
    if args.quick:
        lines.append("- **`--quick` smoke run: tiny budgets, the numbers mean nothing.**")
    return lines


def render_parts(
    tasks: Sequence[TaskResult],
    overhead: OverheadResult | None,
    args: argparse.Namespace,
    machine: Mapping[str, Any],
    date: str,
) -> dict[str, str]:
    """RESULTS.md parts of this run: one per task, and ``overhead``; each names its run."""
    parts: dict[str, str] = {}
    for task in tasks:
        lines = [
            f"### Sample efficiency: {task.task.env}",
            "",
            *run_lines(args, machine, date),
            "- Students (32, 32), seeds "
            + "; ".join(
                f"{arm.arm}: {', '.join(str(r.seed) for r in arm.runs) or 'none'}"
                for arm in task.arms
            )
            + "; PPO and kickstart settings from "
            f"`{_rel(args.student_config)}` (batch, minibatch, epochs, lr, γ, teacher k₀, c, "
            "η, τ, b, budgets, β), one CPU per trial (`num_env_runners: 0`) through Ray Tune; "
            "teacher with the settings of `" + _rel(args.teacher_config) + "`, seed "
            f"{args.teacher_seed}.",
            f"- Return = `{RETURN_KEY}` as RLlib reports it per iteration, for teacher and "
            "students alike: with `num_env_runners: 0` this is the mean over the episodes that "
            "ended in that iteration (the result's `env_runners/num_episodes`; "
            f"`metrics_num_episodes_for_smoothing: {args.smoothing}` does not carry it across "
            f"iterations). Steps to T = `{STEPS_KEY}` at the first iteration whose return is "
            "≥ T.",
            "- teacher/student = the teacher's env steps to T ÷ the student's (the paper "
            f"reports ≈ {PAPER_SPEEDUP:g}× for privacy-aware students on AirRaid-ram); "
            "0 = the student did not reach T within its cap.",
            "- Privacy spend: the teacher's ledger at the student's last iteration (a trial "
            "stops at T, so later rollouts were never shared): ε of the Rényi-DP curve of every "
            "release, converted at δ = `teacher_delta_budget` (10⁻⁵); the privacy-utility table "
            "also gives the same releases under basic composition of Theorem 1 (the accounting "
            "before RDP).",
            "- Arms: " + "; ".join(f"`{a}` = {ARMS[a].description}" for a in args.arms) + ".",
            render_task(task, args.results_md),
        ]
        parts[task.task.name] = "\n".join(lines)
    if overhead is not None:
        parts["overhead"] = render_overhead(overhead, args, run_lines(args, machine, date))
    return parts


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def results_json(
    tasks: Sequence[TaskResult],
    overhead: OverheadResult | None,
    args: argparse.Namespace,
    machine: Mapping[str, Any],
    date: str,
) -> dict[str, Any]:
    """Everything measured (∞ as ``"inf"``, NaN as null)."""
    out: dict[str, Any] = {
        "command": args.command_line,
        "date": date,
        "machine": dict(machine),
        "tasks": [dataclasses.asdict(t) for t in tasks],
        "overhead": None,
    }
    if overhead is not None:
        out["overhead"] = {
            **dataclasses.asdict(overhead),
            "ratio": overhead.ratio,
            "cache_ratio": overhead.cache_ratio,
            "cached_share": overhead.cached_share,
        }
    return jsonable(out)


# --------------------------------------------------------------------------------------
# Plots and the task results they belong to.
# --------------------------------------------------------------------------------------


def draw_plot(
    task: Task, groups: Sequence[tuple[str, Sequence[Any]]], target: float, plot_dir: Path
) -> Path:
    """Median + 15-85 % band over seeds per group (teacher, arms) into kickstart_<task>.png."""
    from rllib_privacy.errors import PrivacyConfigError
    from rllib_privacy.plotting import aggregate_curves, plot_learning_curves

    curves = []
    for label, trials in groups:
        trials = [t for t in trials if t.rows]  # an interrupted trial may have no result
        try:
            with warnings.catch_warnings():
                # Seeds differ in teacher_seed as well: expected, not worth a warning.
                warnings.simplefilter("ignore")
                (curve,) = aggregate_curves(trials, group_by="env", metric=RETURN_KEY, x=STEPS_KEY)
        except PrivacyConfigError as e:
            print(f"[plot] {task.env} {label}: no curve ({e})", flush=True)
            continue
        curves.append(dataclasses.replace(curve, group_by="arm", value=label))
    output = plot_dir / f"kickstart_{task.name}.png"
    plot_learning_curves(
        curves,
        output,
        metric="episode return (mean of the iteration's episodes)",
        title=f"{task.env}: median, 15–85 % over seeds; T = {format_number(target)}",
    )
    return output


def draw_tradeoff_plot(result: TaskResult, plot_dir: Path) -> Path:
    """Speed-up at T₂ against the final ε, under RDP (filled) and basic composition (hollow)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = tradeoff_rows(result)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for row in rows:
        if not row["private"]:
            if math.isfinite(row["speedup_lower"]):
                ax.axhline(row["speedup_lower"], linestyle="--", linewidth=1, color="grey")
                ax.annotate(
                    row["arm"],
                    (1.0, row["speedup_lower"]),
                    xycoords=("axes fraction", "data"),
                    ha="right",
                    va="bottom",
                    fontsize=8,
                    color="grey",
                )
            continue
        y = row["speedup_lower"]
        rdp, basic = row["epsilon_rdp"], row["epsilon_basic"]
        if not (math.isfinite(y) and math.isfinite(rdp) and rdp > 0):
            continue
        (point,) = ax.plot([rdp], [y], "o", label=row["arm"])
        if math.isfinite(basic) and basic > 0:
            ax.plot([basic], [y], "o", mfc="none", color=point.get_color())
            ax.plot([rdp, basic], [y, y], ":", color=point.get_color(), linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel(
        "teacher's final ε at δ = 10⁻⁵ (filled: RDP; hollow: basic composition, its own δ)"
    )
    ax.set_ylabel(f"teacher/student env steps to return {format_number(result.task.lower)}")
    ax.set_title(f"{result.task.env}: privacy-utility, medians over seeds")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    output = plot_dir / f"kickstart_{result.task.name}_tradeoff.png"
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def task_results(
    args: argparse.Namespace,
    plan: GridPlan,
    teachers: Mapping[str, tuple[Any, RunResult]],
    students: Sequence[tuple[str, str, Any, RunResult]],
    caps: Mapping[str, int],
    *,
    wall_s: float,
) -> list[TaskResult]:
    """One ``TaskResult`` per task (arms in ``--arms`` order, seeds sorted), and plots.

    Args:
        args: The run's arguments (``arms``, ``plot_dir``).
        plan: The grid (tasks, targets, the teachers' cap).
        teachers: env → (teacher trial, its result).
        students: (env, arm, trial, result with steps to T) of every student.
        caps: env → the students' step cap.
        wall_s: Wall seconds of the sample-efficiency part (all tasks).

    """
    by_task_arm: dict[tuple[str, str], list[tuple[Any, RunResult]]] = {}
    for env, arm, trial, run in students:
        by_task_arm.setdefault((env, arm), []).append((trial, run))
    results = []
    for task in plan.tasks:
        teacher_trial, teacher = teachers[task.env]
        arm_results = []
        curves_input: list[tuple[str, list[Any]]] = [("teacher (64, 64)", [teacher_trial])]
        for arm_name in args.arms:
            pairs = sorted(by_task_arm.get((task.env, arm_name), []), key=lambda p: p[1].seed)
            arm_results.append(ArmResult(arm_name, [run for _, run in pairs], caps[task.env]))
            curves_input.append((arm_name, [trial for trial, _ in pairs]))
        target = plan.targets[task.env]
        plot = None
        if args.plot_dir is not None:
            plot = str(draw_plot(task, curves_input, target, args.plot_dir))
        result = TaskResult(
            task=with_target(task, target),
            teacher=teacher,
            teacher_cap=plan.teacher_cap,
            arms=arm_results,
            plot=plot,
            wall_s=wall_s,
        )
        if args.plot_dir is not None:
            draw_tradeoff_plot(result, args.plot_dir)
        results.append(result)
    return results
