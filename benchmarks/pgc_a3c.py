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
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import (
    INF,
    REPO_ROOT,
    RESULTS_MD,
    BenchmarkError,
    Progress,
    ResultsSection,
    command_line,
    dump_json,
    finite_median,
    format_number,
    jsonable,
    load_average,
    load_experiment_config,
    load_json,
    machine_info,
    machine_line,
    markdown_table,
    median_or_inf,
    now,
    positive_int,
    quiet_ray,
    usable_cpus,
)

#: Submissions within which the paper counts a success (its FST cap), and its trials.
PAPER_CAP = 90_000
PAPER_TRIALS = 20
#: Seeds per arm × ε of the protocol (issue): rows with fewer are marked incomplete.
PROTOCOL_TRIALS = 10
#: Default size of the agent fleet of the paper arms (``--paper-fleet``).
DEFAULT_PAPER_FLEET = 32
#: Ono & Takahashi, Table 1 (median FST), keyed by (mechanism, ε); ε = ∞ under "none".
PAPER_MEDIAN_FST: dict[tuple[str, float], float] = {
    ("laplace", 1.0): 18377,
    ("laplace", 2.0): 20238.5,
    ("laplace", 5.0): 5714.5,
    ("laplace", 10.0): 4055,
    ("prs", 1.0): 25226.5,
    ("prs", 2.0): 7549,
    ("prs", 5.0): 2656.5,
    ("prs", 10.0): 11217.5,
    ("none", INF): 1769,
}
#: Table 2 (success ratio within 90,000 submissions).
PAPER_SUCCESS_RATIO: dict[tuple[str, float], float] = {
    ("laplace", 1.0): 0.80,
    ("laplace", 2.0): 0.90,
    ("laplace", 5.0): 1.0,
    ("laplace", 10.0): 1.0,
    ("prs", 1.0): 0.85,
    ("prs", 2.0): 0.95,
    ("prs", 5.0): 0.90,
    ("prs", 10.0): 0.90,
    ("none", INF): 1.0,
}
#: Table 3 (AUC of the success-ratio curve relative to ε = ∞).
PAPER_RELATIVE_AUC: dict[tuple[str, float], float] = {
    ("laplace", 1.0): 0.673,
    ("laplace", 2.0): 0.711,
    ("laplace", 5.0): 0.909,
    ("laplace", 10.0): 0.965,
    ("prs", 1.0): 0.660,
    ("prs", 2.0): 0.862,
    ("prs", 5.0): 0.835,
    ("prs", 10.0): 0.771,
    ("none", INF): 1.0,
}
#: Rows that follow the paper's protocol, and the paper's mechanism they are compared to.
PAPER_ROWS = {"laplace_paper": "laplace", "prs_paper": "prs", "nonprivate_paper": "none"}

#: This benchmark's RESULTS.md section; each part (the arm tables, speed) has its own markers.
RESULTS = ResultsSection("pgc_a3c", title="## PGC-A3C (`benchmarks/pgc_a3c.py`)")
#: The RESULTS.md part of the arm tables.
RESULTS_PART = "arms"
JSON_FORMAT = "pgc_a3c/2"

# --------------------------------------------------------------------------------------
# Statistics (pure; unit-tested in tests/e2e/test_benchmark_pgc_a3c.py).
# --------------------------------------------------------------------------------------


def censor(fsts: Iterable[float], cap: float) -> list[float]:
    """FSTs with every value above ``cap`` (or missing, None) replaced by ∞."""
    return [INF if f is None or not f <= cap else float(f) for f in fsts]


#: Median first success time: failed trials (∞) sort last; ∞ when half or more failed.
median_fst = median_or_inf


def success_ratio(fsts: Sequence[float], cap: float) -> float:
    """Fraction of trials whose FST is at most ``cap`` (NaN for no trials)."""
    if not fsts:
        return math.nan
    return sum(1 for f in fsts if f <= cap) / len(fsts)


def success_auc(fsts: Sequence[float], cap: float) -> float:
    """Normalized area under success(n) = #{k: FST_k ≤ n}/K over n ∈ [0, cap].

    Equals the mean over trials of max(0, cap − FST_k)/cap; a failed trial adds 0.
    """
    if not fsts:
        return math.nan
    if not cap > 0:
        raise ValueError(f"cap must be > 0, got {cap!r}")
    return sum(max(0.0, cap - f) / cap for f in fsts if f <= cap) / len(fsts)


def relative_auc(fsts: Sequence[float], baseline_fsts: Sequence[float], cap: float) -> float:
    """``success_auc(fsts)`` divided by the non-private baseline's (NaN if that is 0)."""
    base = success_auc(baseline_fsts, cap)
    if not base > 0:
        return math.nan
    return success_auc(fsts, cap) / base


# --------------------------------------------------------------------------------------
# Arms.
# --------------------------------------------------------------------------------------

#: Base of the paper arms: LDPA3CConfig's defaults.
PAPER_BASE = "paper"
#: The two base families; each has its own ε = ∞ baseline arm.
FAMILIES = ("tuned", "paper")


@dataclasses.dataclass(frozen=True)
class Arm:
    """One configuration of LDPA3C run at every ε: a mechanism on a base config.

    Attributes:
        name: Row name in the tables (``privunitg_tuned``, ``laplace_paper``, ...).
        mechanism: LDPA3C ``mechanism``.
        base: A YAML experiment file (its first experiment's ``config``), or
            :data:`PAPER_BASE` for LDPA3CConfig's defaults (the paper's settings).
        family: ``tuned`` or ``paper``: whose ε = ∞ baseline its relative AUC uses.
        zero_signal_control: Replace every gradient by zeros before the mechanism.
        overrides: Config keys set on top of the base (after the benchmark's own).
        description: One line for the table notes.
        baseline: True for the ε = ∞ arms (``nonprivate_tuned``, ``nonprivate_paper``).

    """

    name: str
    mechanism: str
    base: str
    family: str
    zero_signal_control: bool = False
    overrides: tuple[tuple[str, Any], ...] = ()
    description: str = ""
    baseline: bool = False

    @property
    def is_paper_base(self) -> bool:
        return self.base == PAPER_BASE

    def build_config(self, base_config: Mapping[str, Any], *, paper_fleet: int) -> dict[str, Any]:
        """The arm's LDPA3C config (without ε, seed and the per-trial resource keys).

        Paper arms get ``agents_per_env_runner = aggregator_submissions_per_request = paper_fleet``
        (one fleet round per request); a base with a fleet but no
        ``aggregator_submissions_per_request`` gets one round per request too (else every round
        would release one gradient and discard the other agents' episodes).
        """
        config = dict(base_config)
        config["privacy_mechanism"] = self.mechanism
        if self.zero_signal_control:
            config["privacy_zero_signal_control"] = True
        if self.is_paper_base or int(config.get("agents_per_env_runner", 1) or 1) == 1:
            # Paper arms and one-agent-at-a-time bases (laplace_tuned, prs_tuned): a fleet
            # of paper_fleet agents, else 90,000 submissions take hours per trial.
            config["agents_per_env_runner"] = int(paper_fleet)
            config["aggregator_submissions_per_request"] = int(paper_fleet)
        config.update(dict(self.overrides))
        fleet = int(config.get("agents_per_env_runner", 1) or 1)
        if fleet > 1 and "aggregator_submissions_per_request" not in config:
            config["aggregator_submissions_per_request"] = fleet
        return config

    def to_json(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "base": self.base,
            "family": self.family,
            "zero_signal_control": self.zero_signal_control,
            "overrides": dict(self.overrides),
            "description": self.description,
            "baseline": self.baseline,
        }


#: Arm names in priority order (the issue's): PrivUnitG, Laplace, zero-signal, PRS, PrivUnit2.
ARM_NAMES = (
    "privunitg_tuned",
    "laplace_paper",
    "laplace_tuned",
    "zero_paper",
    "zero_privunitg",
    "prs_paper",
    "prs_tuned",
    "privunit2_tuned",
)
BASELINE_ARMS = {"tuned": "nonprivate_tuned", "paper": "nonprivate_paper"}
#: Row order of the tables: each family's ε = ∞ row after that family's first arm.
DISPLAY_ORDER = (
    "privunitg_tuned",
    "nonprivate_tuned",
    "laplace_paper",
    "nonprivate_paper",
    "laplace_tuned",
    "zero_paper",
    "zero_privunitg",
    "prs_paper",
    "prs_tuned",
    "privunit2_tuned",
)


def default_arms(
    *,
    tuned_config: str = "tuned_configs/ldp_a3c.yaml",
    laplace_config: str = "tuned_configs/ldp_a3c_laplace.yaml",
    prs_config: str = "tuned_configs/ldp_a3c_prs.yaml",
) -> dict[str, Arm]:
    """Every arm (and the two ε = ∞ baselines) by name, priority order first."""
    arms = [
        Arm(
            "privunitg_tuned",
            "privunitg",
            tuned_config,
            "tuned",
            description="PrivUnitG on the tuned quick start",
        ),
        Arm(
            "laplace_paper",
            "laplace",
            PAPER_BASE,
            "paper",
            description="Laplace, the paper's settings (LDPA3CConfig defaults)",
        ),
        Arm("laplace_tuned", "laplace", laplace_config, "tuned", description="Laplace, tuned"),
        Arm(
            "zero_paper",
            "laplace",
            PAPER_BASE,
            "paper",
            zero_signal_control=True,
            description="zero-signal control of laplace_paper (noise only)",
        ),
        Arm(
            "zero_privunitg",
            "privunitg",
            tuned_config,
            "tuned",
            zero_signal_control=True,
            description="zero-signal control of privunitg_tuned (noise only)",
        ),
        Arm(
            "prs_paper",
            "prs",
            PAPER_BASE,
            "paper",
            description="PRS, the paper's settings (LDPA3CConfig defaults)",
        ),
        Arm("prs_tuned", "prs", prs_config, "tuned", description="PRS, tuned"),
        Arm(
            "privunit2_tuned",
            "privunit2",
            tuned_config,
            "tuned",
            description="PrivUnit2 on the tuned quick start (mechanism swapped)",
        ),
        Arm(
            "nonprivate_tuned",
            "none",
            tuned_config,
            "tuned",
            baseline=True,
            description="ε = ∞: the tuned quick start with mechanism none",
        ),
        Arm(
            "nonprivate_paper",
            "laplace",
            PAPER_BASE,
            "paper",
            baseline=True,
            description="ε = ∞: the paper's settings with Laplace at ε = ∞ (no noise)",
        ),
    ]
    return {arm.name: arm for arm in arms}


def parse_arm_names(text: str) -> list[str]:
    """``--arms``: comma-separated names of :data:`ARM_NAMES` (or ``all``), deduplicated,
    in the given order."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list of arms")
    if items == ["all"]:
        return list(ARM_NAMES)
    unknown = [item for item in items if item not in ARM_NAMES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown arm(s) {', '.join(unknown)}; choose from {', '.join(ARM_NAMES)} "
            "(ε = ∞ runs with --epsilons ...,inf, once per base family)"
        )
    return list(dict.fromkeys(items))


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of the tables: an arm at one ε."""

    arm: str
    epsilon: float

    @property
    def label(self) -> str:
        return f"{self.arm} ε={format_number(self.epsilon)}"


def plan_rows(
    arm_names: Sequence[str], epsilons: Sequence[float], arms: Mapping[str, Arm]
) -> list[Row]:
    """The rows to run, in priority order.

    Every selected arm at every finite ε; zero-signal arms skip ε = ∞ (no gradient, no
    mechanism: nothing to control). If ε = ∞ is requested, the family baseline of each
    selected arm runs once, right after the first selected arm of that family.
    """
    finite = sorted({float(e) for e in epsilons if math.isfinite(e)})
    with_inf = any(math.isinf(e) for e in epsilons)
    rows: list[Row] = []
    families_done: set[str] = set()
    for name in arm_names:
        arm = arms[name]
        rows.extend(Row(name, e) for e in finite)
        if with_inf and arm.family not in families_done:
            families_done.add(arm.family)
            rows.append(Row(BASELINE_ARMS[arm.family], INF))
    return rows


def row_sort_key(row: Row) -> tuple[int, str, float]:
    """Display order: :data:`DISPLAY_ORDER`, unknown arms after, then ε (∞ last)."""
    rank = DISPLAY_ORDER.index(row.arm) if row.arm in DISPLAY_ORDER else len(DISPLAY_ORDER)
    return (rank, row.arm, row.epsilon)


def trial_config(
    arm_config: Mapping[str, Any],
    *,
    epsilon: float,
    seed: int,
    submissions_per_iteration: int,
    eval_episodes: int | None,
) -> dict[str, Any]:
    """One trial's full LDPA3C config: the arm's, at ``epsilon`` and ``seed``, run inside
    the trial's own process (``num_env_runners: 0``, one CPU), quiet."""
    config = dict(arm_config)
    config.update(
        privacy_epsilon=float(epsilon),
        seed=int(seed),
        num_env_runners=0,
        num_cpus_for_main_process=1,
        aggregator_submissions_per_iteration=int(submissions_per_iteration),
    )
    if eval_episodes is not None:
        config["scoring_eval_episodes"] = int(eval_episodes)
    return config


# --------------------------------------------------------------------------------------
# Trials and rows (pure; unit-tested).
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class TrialRecord:
    """One finished trial: what the tables and curves need.

    ``fst`` and ``solved_at`` are None when not reached (before the trial stopped).
    ``curve`` holds one entry per iteration: ``submissions``, ``score_mean`` (mean score
    of the last 100 submissions) and ``eval_return_mean`` (greedy evaluation; None if
    off).
    """

    arm: str
    epsilon: float
    seed: int
    fst: float | None
    solved_at: float | None
    eval_return_final: float | None
    eval_return_max: float | None
    submissions: int
    env_steps: int
    wall_s: float
    diverged: bool = False
    curve: dict[str, list[Any]] = dataclasses.field(
        default_factory=lambda: {"submissions": [], "score_mean": [], "eval_return_mean": []}
    )

    @property
    def row(self) -> Row:
        return Row(self.arm, self.epsilon)

    def to_json(self) -> dict[str, Any]:
        return jsonable(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrialRecord:
        def number(value: Any) -> float | None:
            return None if value is None else _float(value)

        curve = data.get("curve") or {}
        return cls(
            arm=str(data["arm"]),
            epsilon=_float(data["epsilon"]),
            seed=int(data["seed"]),
            fst=number(data.get("fst")),
            solved_at=number(data.get("solved_at")),
            eval_return_final=number(data.get("eval_return_final")),
            eval_return_max=number(data.get("eval_return_max")),
            submissions=int(data.get("submissions", 0)),
            env_steps=int(data.get("env_steps", 0)),
            wall_s=_float(data.get("wall_s", math.nan)),
            diverged=bool(data.get("diverged", False)),
            curve={
                "submissions": list(curve.get("submissions", [])),
                "score_mean": [number(v) for v in curve.get("score_mean", [])],
                "eval_return_mean": [number(v) for v in curve.get("eval_return_mean", [])],
            },
        )


def _float(value: Any) -> float:
    """A float from JSON: ``"inf"``/``"-inf"`` strings, None as NaN."""
    if value is None:
        return math.nan
    return float(value)


@dataclasses.dataclass
class RowResult:
    """All trials of one row plus the statistics over them."""

    row: Row
    trials: list[TrialRecord]
    cap: int
    required: int = PROTOCOL_TRIALS
    median_fst: float = math.nan
    success_ratio: float = math.nan
    auc: float = math.nan
    relative_auc: float = math.nan
    median_solved_at: float = math.nan
    solved: int = 0
    eval_final_median: float = math.nan
    eval_max_median: float = math.nan

    @property
    def fsts(self) -> list[float]:
        return censor((t.fst for t in self.trials), self.cap)

    @property
    def solved_ats(self) -> list[float]:
        return censor((t.solved_at for t in self.trials), self.cap)

    @property
    def incomplete(self) -> bool:
        return len(self.trials) < self.required

    @property
    def status(self) -> str:
        """``incomplete (k of N seeds)`` for a row with fewer than ``required`` trials."""
        if not self.incomplete:
            return ""
        return f"incomplete ({len(self.trials)} of {self.required} seeds)"


def compute_rows(
    records: Iterable[TrialRecord],
    *,
    cap: int,
    required: int,
    families: Mapping[str, str],
    rows: Iterable[Row] = (),
) -> list[RowResult]:
    """Groups trials into rows (plus ``rows`` without trials) and fills in the statistics.

    Relative AUC divides by the ε = ∞ row of the arm's family (``families``: arm name →
    ``tuned``/``paper``); NaN without that row. Rows are in display order, trials by seed.
    """
    by_row: dict[Row, list[TrialRecord]] = {row: [] for row in rows}
    for record in records:
        by_row.setdefault(record.row, []).append(record)
    results = [
        RowResult(row, sorted(trials, key=lambda t: t.seed), int(cap), int(required))
        for row, trials in sorted(by_row.items(), key=lambda item: row_sort_key(item[0]))
    ]
    baselines = {
        family: next(
            (r for r in results if r.row == Row(BASELINE_ARMS[family], INF) and r.trials), None
        )
        for family in FAMILIES
    }
    for result in results:
        fsts = result.fsts
        result.median_fst = median_fst(fsts)
        result.success_ratio = success_ratio(fsts, result.cap)
        result.auc = success_auc(fsts, result.cap)
        result.median_solved_at = median_or_inf(result.solved_ats)
        result.solved = sum(1 for s in result.solved_ats if s <= result.cap)
        result.eval_final_median = finite_median(t.eval_return_final for t in result.trials)
        result.eval_max_median = finite_median(t.eval_return_max for t in result.trials)
        baseline = baselines.get(families.get(result.row.arm, ""))
        if baseline is not None and result.trials:
            result.relative_auc = relative_auc(fsts, baseline.fsts, result.cap)
    return results


def incomplete_rows(results: Iterable[RowResult]) -> list[RowResult]:
    """The rows with fewer trials than required."""
    return [r for r in results if r.incomplete]


# --------------------------------------------------------------------------------------
# Recording trials as they finish (pure; the Tune callback forwards to it).
# --------------------------------------------------------------------------------------


def nested_get(result: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """``result["a"]["b"]`` for ``key = "a/b"`` (or a flat ``"a/b"`` entry)."""
    if key in result:
        return result[key]
    value: Any = result
    for part in key.split("/"):
        if not isinstance(value, Mapping) or part not in value:
            return default
        value = value[part]
    return value


def _maybe_float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


#: Key of the benchmark's per-trial variant in the Tune config (stripped before LDPA3C).
VARIANT_KEY = "pgc_a3c_bench"


def strip_variant(config: Any) -> Any:
    """The LDPA3C config of a benchmark trial (its variant's ``config``), else unchanged."""
    if isinstance(config, Mapping) and VARIANT_KEY in config:
        rest = {k: v for k, v in config.items() if k != VARIANT_KEY}
        return {**dict(config[VARIANT_KEY]["config"]), **rest}
    return config


class TrialRecorder:
    """Collects per-iteration curves, builds a :class:`TrialRecord` per finished trial and
    prints a progress line for it (with the run's elapsed time and ETA).

    Args:
        total: Trials in the run (for ``done / total``).
        on_record: Called with every new record (e.g. to rewrite the JSON file).
        echo: Where progress lines go.

    """

    def __init__(
        self,
        total: int,
        *,
        on_record: Callable[[TrialRecord], None] | None = None,
        echo: Callable[[str], None] = lambda line: print(line, flush=True),
    ) -> None:
        self.total = int(total)
        self.records: list[TrialRecord] = []
        self.failures: list[str] = []
        self._curves: dict[str, dict[str, list[Any]]] = {}
        self._last: dict[str, Mapping[str, Any]] = {}
        self._on_record = on_record
        self._progress = Progress(total, echo=echo)

    @property
    def done(self) -> int:
        return len(self.records) + len(self.failures)

    def on_result(self, trial_id: str, result: Mapping[str, Any]) -> None:
        curve = self._curves.setdefault(
            trial_id, {"submissions": [], "score_mean": [], "eval_return_mean": []}
        )
        curve["submissions"].append(int(result.get("submissions", 0)))
        curve["score_mean"].append(_maybe_float(result.get("score_mean")))
        curve["eval_return_mean"].append(_maybe_float(nested_get(result, "ldp/eval_return_mean")))
        self._last[trial_id] = result

    def on_complete(
        self,
        trial_id: str,
        variant: Mapping[str, Any],
        last_result: Mapping[str, Any] | None,
        *,
        error: str | None = None,
    ) -> TrialRecord | None:
        """Records a trial that stopped (``error`` None) or errored.

        A divergence error (non-finite gradient) is a learning outcome: recorded as a
        failed trial, ``diverged``. Any other error is a failure of the run: listed in
        :attr:`failures`, no record.
        """
        arm, epsilon, seed = variant["arm"], float(variant["epsilon"]), int(variant["seed"])
        where = f"{arm} ε={format_number(epsilon)} seed={seed}"
        diverged = error is not None and DIVERGENCE_MESSAGE in error
        if error is not None and not diverged:
            self.failures.append(f"{where}: {error.strip().splitlines()[-1] if error else '?'}")
            self._progress.update(self.done, f"{where}: FAILED ({self.failures[-1]})")
            return None
        last = last_result or self._last.get(trial_id) or {}
        curve = self._curves.pop(
            trial_id, {"submissions": [], "score_mean": [], "eval_return_mean": []}
        )
        evals = [v for v in curve["eval_return_mean"] if v is not None]
        record = TrialRecord(
            arm=arm,
            epsilon=epsilon,
            seed=seed,
            fst=_maybe_float(last.get("fst")),
            solved_at=_maybe_float(last.get("solved_at")),
            eval_return_final=evals[-1] if evals else None,
            eval_return_max=max(evals) if evals else None,
            submissions=int(last.get("submissions", 0) or 0),
            env_steps=int(
                last.get("num_env_steps_sampled_lifetime", last.get("timesteps_total", 0)) or 0
            ),
            wall_s=float(last.get("time_total_s", math.nan) or math.nan),
            diverged=diverged,
            curve=curve,
        )
        self.records.append(record)
        self._progress.update(self.done, trial_summary(record))
        if self._on_record is not None:
            self._on_record(record)
        return record


def trial_summary(record: TrialRecord) -> str:
    """``privunitg_tuned ε=1 seed=2: fst 4,210 | solved_at — | eval 87.3 | 212 s``."""

    def count(value: float | None) -> str:
        return "—" if value is None else f"{int(value):,}"

    eval_ = "—" if record.eval_return_final is None else f"{record.eval_return_final:.1f}"
    parts = [
        f"fst {count(record.fst)}",
        f"solved_at {count(record.solved_at)}",
        f"eval {eval_}",
        f"{record.submissions:,} submissions",
        f"{record.wall_s:.0f} s",
    ]
    if record.diverged:
        parts.append("DIVERGED")
    return f"{record.arm} ε={format_number(record.epsilon)} seed={record.seed}: " + " | ".join(
        parts
    )


# --------------------------------------------------------------------------------------
# Configs.
# --------------------------------------------------------------------------------------


def load_base_config(path: str) -> dict[str, Any]:
    """The first experiment's ``config:`` of a YAML experiment file (env folded in),
    validated as ``rllib train -f`` does; it must not sweep (no ``grid_search``)."""
    config = load_experiment_config(path)
    for key, value in config.items():
        if _has_grid_search(value):
            raise BenchmarkError(
                f"{path}: config key {key!r} is a grid_search; the benchmark needs one "
                "fixed base config (it sets mechanism, epsilon and seed itself)"
            )
    return config


def _has_grid_search(value: Any) -> bool:
    if isinstance(value, dict):
        return "grid_search" in value or any(_has_grid_search(v) for v in value.values())
    return False


def paper_base_config() -> dict[str, Any]:
    """The paper's settings: LDPA3CConfig's defaults (clip/|B| per mechanism, lr 0.5, ...)."""
    from rllib_privacy.envs import CARTPOLE_GRAVITY_ENV_ID

    return {"env": CARTPOLE_GRAVITY_ENV_ID}


#: What LDPA3C raises when θ or a gradient has become non-finite (a learning outcome of
#: unstable settings, e.g. the paper's unclipped non-private baseline, not a crash).
DIVERGENCE_MESSAGE = "GradientSubmission.gradient must be finite"


def is_divergence(error: BaseException) -> bool:
    """True if a trial failed because training diverged (non-finite gradient)."""
    return DIVERGENCE_MESSAGE in str(error)


# --------------------------------------------------------------------------------------
# Run documents: what a run measured (the JSON file), merging (pure; unit-tested).
# --------------------------------------------------------------------------------------


def new_document(
    *,
    cap: int,
    trials: int,
    arms: Mapping[str, Mapping[str, Any]],
    rows: Sequence[Row],
    run: Mapping[str, Any],
) -> dict[str, Any]:
    """A run's JSON document (before any trial finished).

    ``arms``: name → {mechanism, family, base, ..., config}; ``rows``: the planned rows;
    ``run``: command, dates, machine, load averages, settings of this invocation.
    """
    return {
        "format": JSON_FORMAT,
        "cap": int(cap),
        "trials_requested": int(trials),
        "arms": {name: dict(meta) for name, meta in arms.items()},
        "rows": [[row.arm, row.epsilon] for row in rows],
        "runs": [dict(run)],
        "trials": [],
        "speed": [],
    }


def document_records(doc: Mapping[str, Any]) -> list[TrialRecord]:
    return [TrialRecord.from_json(t) for t in doc.get("trials", [])]


def document_rows(doc: Mapping[str, Any]) -> list[Row]:
    return [Row(str(arm), _float(eps)) for arm, eps in doc.get("rows", [])]


def document_families(doc: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(meta.get("family", "")) for name, meta in doc.get("arms", {}).items()}


def document_results(doc: Mapping[str, Any]) -> list[RowResult]:
    """The rows of a document with their statistics."""
    required = max(PROTOCOL_TRIALS, int(doc.get("trials_requested", PROTOCOL_TRIALS)))
    return compute_rows(
        document_records(doc),
        cap=int(doc["cap"]),
        required=required,
        families=document_families(doc),
        rows=document_rows(doc),
    )


def load_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON file written by ``--json`` (format :data:`JSON_FORMAT`)."""
    try:
        doc = load_json(path)
    except BenchmarkError as e:
        raise BenchmarkError(f"--merge-json: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != JSON_FORMAT:
        raise BenchmarkError(
            f"--merge-json: {str(path)!r} is not a {JSON_FORMAT} file of this benchmark "
            "(written with --json by this version)"
        )
    return doc


def _comparable(meta: Mapping[str, Any]) -> str:
    return json.dumps(
        {k: meta.get(k) for k in ("mechanism", "family", "zero_signal_control", "config")},
        sort_keys=True,
        default=str,
    )


def merge_documents(
    docs: Sequence[Mapping[str, Any]],
    names: Sequence[str] | None = None,
    *,
    warn: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> dict[str, Any]:
    """Joins the runs of several invocations into one document.

    All documents must have the same cap, and an arm that several of them ran must have
    the same config in each (else its trials are not seeds of one setting). Trials are
    joined; a trial (arm, ε, seed) that occurs again is kept from the first document
    (with a warning). Planned rows and runs are joined; the speed part is the last
    document's that has one.

    Raises:
        BenchmarkError: No documents, different caps, or one arm with different configs.

    """
    if not docs:
        raise BenchmarkError("--merge-json: no files given")
    names = list(names) if names is not None else [f"#{k + 1}" for k in range(len(docs))]
    caps = {int(doc["cap"]) for doc in docs}
    if len(caps) > 1:
        raise BenchmarkError(
            f"--merge-json: the files have different caps {sorted(caps)}; FST statistics "
            "of different caps cannot be pooled"
        )
    arms: dict[str, dict[str, Any]] = {}
    arm_source: dict[str, str] = {}
    rows: dict[tuple[str, float], None] = {}
    runs: list[dict[str, Any]] = []
    trials: list[dict[str, Any]] = []
    seen: dict[tuple[str, float, int], str] = {}
    speed: list[Any] = []
    for name, doc in zip(names, docs, strict=True):
        for arm, meta in doc.get("arms", {}).items():
            if arm in arms and _comparable(arms[arm]) != _comparable(meta):
                raise BenchmarkError(
                    f"--merge-json: arm {arm!r} has a different config in {name} than in "
                    f"{arm_source[arm]}; run it under one config (or rename it) to pool"
                )
            arms.setdefault(arm, dict(meta))
            arm_source.setdefault(arm, name)
        for arm, eps in doc.get("rows", []):
            rows.setdefault((str(arm), _float(eps)), None)
        runs.extend({**run, "file": name} for run in doc.get("runs", []))
        for trial in doc.get("trials", []):
            key = (str(trial["arm"]), _float(trial["epsilon"]), int(trial["seed"]))
            if key in seen:
                warn(
                    f"--merge-json: {key[0]} ε={format_number(key[1])} seed={key[2]} is in "
                    f"{seen[key]} and {name}: kept {seen[key]}'s"
                )
                continue
            seen[key] = name
            trials.append(dict(trial))
        if doc.get("speed"):
            speed = list(doc["speed"])
    return {
        "format": JSON_FORMAT,
        "cap": caps.pop(),
        "trials_requested": max(int(doc.get("trials_requested", 0)) for doc in docs),
        "arms": arms,
        "rows": [[arm, eps] for arm, eps in rows],
        "runs": runs,
        "trials": trials,
        "speed": speed,
    }


def write_document(path: Path, doc: Mapping[str, Any]) -> None:
    """Writes the document atomically (a reader never sees half a file)."""
    dump_json(path, jsonable(doc))


# --------------------------------------------------------------------------------------
# Sample efficiency (Tune).
# --------------------------------------------------------------------------------------


def _trainable() -> type:
    """LDPA3C that takes a benchmark variant (arm, ε, seed and its config) as its config.

    One Tuner runs all arms (one ``max_concurrent_trials`` for the whole run, trials in
    priority order); the arm name rides along in the Tune config but never reaches
    LDPA3CConfig, whose strict key check would refuse it.
    """
    from rllib_privacy.algorithms.ldp_a3c.ldp_a3c import LDPA3C

    class PGCA3CBench(LDPA3C):
        @classmethod
        def default_resource_request(cls, config: Any) -> Any:
            return super().default_resource_request(strip_variant(config))

        def __init__(self, config: Any = None, env: Any = None, **kwargs: Any) -> None:
            super().__init__(strip_variant(config), env, **kwargs)

    return PGCA3CBench


def _make_stopper(cap: int) -> Any:
    from ray import tune

    class SolvedOrCapStopper(tune.Stopper):
        """Stops a trial once ``solved_at`` is reported (sustained success) or at ``cap``."""

        def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
            return result.get("solved_at") is not None or result.get("submissions", 0) >= cap

        def stop_all(self) -> bool:
            return False

    return SolvedOrCapStopper()


def _trial_error(trial: Any) -> str:
    try:
        error = trial.get_error()
    except Exception:  # noqa: BLE001 (any way of reading it will do)
        error = None
    if error is not None:
        return f"{type(error).__name__}: {error}"
    path = getattr(trial, "error_file", None)
    if path and os.path.isfile(path):
        return Path(path).read_text(errors="replace")
    return "unknown error"


def _make_callback(recorder: TrialRecorder) -> Any:
    from ray import tune

    class ProgressCallback(tune.Callback):
        """Forwards every result and every finished trial to the recorder."""

        def on_trial_result(self, iteration, trials, trial, result, **info):  # noqa: ANN001
            recorder.on_result(trial.trial_id, result)

        def on_trial_complete(self, iteration, trials, trial, **info):  # noqa: ANN001
            recorder.on_complete(
                trial.trial_id, trial.config[VARIANT_KEY], trial.last_result or None
            )

        def on_trial_error(self, iteration, trials, trial, **info):  # noqa: ANN001
            recorder.on_complete(
                trial.trial_id,
                trial.config[VARIANT_KEY],
                trial.last_result or None,
                error=_trial_error(trial),
            )

    return ProgressCallback()


#: |B| of the arms on the tuned quick-start base, per ε: the quick start's 2048 is what ε = 1
#: needs; a larger ε has less noise per report, so fewer reports per update suffice and
#: more updates fit in the cap (ε = 5 at 512 measured in tuning: 10 of 10 seeds solved).
TUNED_MAX_BUFFER: dict[float, int] = {1.0: 2048, 2.0: 1024, 5.0: 512, 10.0: 256, INF: 64}
TUNED_BUFFER_ARMS = ("privunitg_tuned", "zero_privunitg", "privunit2_tuned", "nonprivate_tuned")


def variants(
    rows: Sequence[Row],
    arm_configs: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    *,
    submissions_per_iteration: int,
    eval_episodes: int | None,
) -> list[dict[str, Any]]:
    """One Tune variant per row × seed, rows in priority order, seeds inside."""
    out = []
    for row in rows:
        for seed in seeds:
            config = trial_config(
                arm_configs[row.arm],
                epsilon=row.epsilon,
                seed=seed,
                submissions_per_iteration=submissions_per_iteration,
                eval_episodes=eval_episodes,
            )
            if row.arm in TUNED_BUFFER_ARMS and row.epsilon in TUNED_MAX_BUFFER:
                config["aggregator_max_buffer"] = TUNED_MAX_BUFFER[row.epsilon]
            out.append({"arm": row.arm, "epsilon": row.epsilon, "seed": seed, "config": config})
    return out


def run_trials(
    doc: dict[str, Any],
    trial_variants: list[dict[str, Any]],
    args: argparse.Namespace,
) -> TrialRecorder:
    """Runs every variant in one Tuner; records finish into ``doc`` as they come."""
    from ray import tune

    def on_record(record: TrialRecord) -> None:
        doc["trials"].append(record.to_json())
        if args.json is not None:
            write_document(args.json, doc)

    recorder = TrialRecorder(len(trial_variants), on_record=on_record)
    storage = args.storage_path or tempfile.mkdtemp(prefix="pgc_a3c_bench_")
    tuner = tune.Tuner(
        _trainable(),
        param_space={VARIANT_KEY: tune.grid_search(trial_variants)},
        tune_config=tune.TuneConfig(
            num_samples=1, reuse_actors=False, max_concurrent_trials=args.max_concurrent
        ),
        run_config=tune.RunConfig(
            name="pgc_a3c",
            stop=_make_stopper(args.cap),
            storage_path=storage,
            verbose=args.tune_verbose,
            callbacks=[_make_callback(recorder)],
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=False),
            failure_config=tune.FailureConfig(max_failures=0),
        ),
    )
    try:
        tuner.fit()
    except KeyboardInterrupt:
        print("\ninterrupted: the tables below hold the finished trials", flush=True)
        doc["runs"][-1]["interrupted"] = True
    finally:
        if args.storage_path is None and not args.keep_tune_dir:
            shutil.rmtree(storage, ignore_errors=True)
    return recorder


def cpus_per_runner(total_cpus: float, num_runners: int) -> float:
    """CPUs to reserve per remote runner so that runners + the main process fit."""
    spare = total_cpus - 1.0 if total_cpus > 1.0 else total_cpus / 2.0
    return max(0.01, min(1.0, spare / max(1, num_runners)))


# --------------------------------------------------------------------------------------
# Speed.
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class SpeedResult:
    """Throughput of one EnvRunner setup with one number of remote runners."""

    runner: str
    num_env_runners: int
    cpus_per_runner: float
    num_envs_per_env_runner: int
    submissions_per_request: int
    submissions: int
    env_steps: int
    wall_s: float
    agents_per_env_runner: int = 1
    mechanism: str = ""
    epsilon: float = math.nan

    @property
    def submissions_per_s(self) -> float:
        return self.submissions / self.wall_s if self.wall_s > 0 else math.nan

    @property
    def env_steps_per_s(self) -> float:
        return self.env_steps / self.wall_s if self.wall_s > 0 else math.nan

    @property
    def mean_episode_length(self) -> float:
        return self.env_steps / self.submissions if self.submissions else math.nan

    @property
    def is_reference(self) -> bool:
        return "reference" in self.runner

    def to_json(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "submissions_per_s": self.submissions_per_s,
            "env_steps_per_s": self.env_steps_per_s,
            "mean_episode_length": self.mean_episode_length,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpeedResult:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(
            **{k: (_float(v) if k == "epsilon" else v) for k, v in data.items() if k in names}
        )


def fleet_ratios(speeds: Sequence[SpeedResult]) -> dict[int, float]:
    """Per runner count: submissions/s of the fleet over that of one agent per runner."""
    out = {}
    for fleet in speeds:
        if fleet.is_reference or fleet.agents_per_env_runner <= 1:
            continue
        single = next(
            (
                s
                for s in speeds
                if not s.is_reference
                and s.agents_per_env_runner == 1
                and s.num_env_runners == fleet.num_env_runners
            ),
            None,
        )
        if single is not None and single.submissions_per_s > 0:
            out[fleet.num_env_runners] = fleet.submissions_per_s / single.submissions_per_s
    return out


def run_speed(args: argparse.Namespace) -> list[SpeedResult]:
    """Submissions/s of the quick start with its fleet, with one agent per runner, and of
    the reference runner, for each number of remote runners (same mechanism and ε)."""
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
    from rllib_privacy.algorithms.ldp_a3c.reference_env_runner import (
        RLlibSamplingLDPA3CEnvRunner,
    )

    base = load_base_config(args.tuned_config)
    fleet = int(base.get("agents_per_env_runner", 1) or 1)
    request = int(base.get("aggregator_submissions_per_request", fleet if fleet > 1 else 1) or 1)
    iteration = max(1, min(args.speed_iteration, args.speed_submissions))
    setups: list[tuple[str, dict[str, Any], type | None]] = []
    if fleet > 1:
        setups.append(
            (
                f"LDPA3CEnvRunner, fleet of {fleet}",
                {"aggregator_submissions_per_request": request},
                None,
            )
        )
        setups.append(
            (
                "LDPA3CEnvRunner, 1 agent",
                {
                    "agents_per_env_runner": 1,
                    "agents_episodes_per_submission": 1,
                    "aggregator_submissions_per_request": request,
                },
                None,
            )
        )
    else:
        setups.append(("LDPA3CEnvRunner", {}, None))
    setups.append(
        (
            "RLlibSamplingLDPA3CEnvRunner (reference)",
            {"agents_per_env_runner": 1, "agents_episodes_per_submission": 1},
            RLlibSamplingLDPA3CEnvRunner,
        )
    )
    out: list[SpeedResult] = []
    for count in args.runner_counts:
        for label, training, runner_cls in setups:
            cpus = args.cpus_per_runner or cpus_per_runner(args.num_cpus, count)
            config = LDPA3CConfig().update_from_dict(dict(base))
            config.env_runners(num_env_runners=count, num_cpus_per_env_runner=cpus)
            config.update_from_dict({"aggregator_submissions_per_iteration": iteration, **training})
            config.debugging(seed=args.seed, log_level="ERROR")
            if runner_cls is not None:
                # A plain runner: one environment, one episode and gradient per call.
                config.env_runners(env_runner_cls=runner_cls, num_envs_per_env_runner=1)
                config.aggregator(aggregator_submissions_per_request=1)
            print(
                f"[speed] {label}, {count} runner(s) × {cpus:g} CPU: warm-up {iteration}, "
                f"then {args.speed_submissions} submissions...",
                flush=True,
            )
            algo = config.build_algo()
            try:
                result = algo.train()  # warm-up: actors started, local learners built
                sub0 = int(result["submissions"])
                steps0 = int(result["num_env_steps_sampled_lifetime"])
                start = time.perf_counter()
                while int(result["submissions"]) - sub0 < args.speed_submissions:
                    result = algo.train()
                wall = time.perf_counter() - start
            finally:
                algo.stop()
            speed = SpeedResult(
                runner=label,
                num_env_runners=count,
                cpus_per_runner=cpus,
                num_envs_per_env_runner=int(config.num_envs_per_env_runner),
                submissions_per_request=int(config.aggregator_submissions_per_request),
                submissions=int(result["submissions"]) - sub0,
                env_steps=int(result["num_env_steps_sampled_lifetime"]) - steps0,
                wall_s=wall,
                agents_per_env_runner=int(config.agents_per_env_runner),
                mechanism=str(config.privacy_mechanism),
                epsilon=float(config.privacy_epsilon),
            )
            print(
                f"[speed]   {speed.submissions_per_s:.1f} submissions/s, "
                f"{speed.env_steps_per_s:.0f} env steps/s, "
                f"mean episode length {speed.mean_episode_length:.1f}",
                flush=True,
            )
            out.append(speed)
    for count, ratio in fleet_ratios(out).items():
        print(f"[speed] fleet / 1 agent, {count} runner(s): {ratio:.1f}× (issue: ≥ 10×)")
    return out


# --------------------------------------------------------------------------------------
# Formatting.
# --------------------------------------------------------------------------------------


def format_ratio(value: float | None) -> str:
    """Two or three decimals; ``—`` for None/NaN."""
    if value is None or math.isnan(value):
        return "—"
    return f"{value:.3f}"


def _paper_key(row: Row) -> tuple[str, float] | None:
    mechanism = PAPER_ROWS.get(row.arm)
    if mechanism is None:
        return None
    return (mechanism, INF if mechanism == "none" else row.epsilon)


def _count(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if math.isinf(value):
        return "∞"
    return format_number(value)


def sample_efficiency_table(results: Sequence[RowResult], cap: int) -> str:
    """Tables 1-3 per arm × ε, with the paper's values on the paper-protocol rows."""
    header = [
        "arm",
        "ε",
        "trials",
        "median FST",
        "paper",
        f"success ≤ {cap}",
        f"paper (≤ {PAPER_CAP})",
        "median solved_at",
        "solved",
        "eval return (final, median)",
        "rel. AUC",
        "paper",
        "wall s/trial",
    ]
    rows = []
    for r in results:
        key = _paper_key(r.row)

        def paper(table: Mapping[tuple[str, float], float], key: Any = key) -> float | None:
            return table.get(key) if key is not None else None

        walls = [t.wall_s for t in r.trials if math.isfinite(t.wall_s)]
        diverged = sum(t.diverged for t in r.trials)
        trials = str(len(r.trials))
        if diverged:
            trials += f" ({diverged} diverged)"
        if r.incomplete:
            trials += f" — {r.status}"
        rows.append(
            [
                r.row.arm,
                format_number(r.row.epsilon),
                trials,
                _count(r.median_fst),
                format_number(paper(PAPER_MEDIAN_FST)),
                format_ratio(r.success_ratio),
                format_ratio(paper(PAPER_SUCCESS_RATIO)),
                _count(r.median_solved_at),
                f"{r.solved}/{len(r.trials)}" if r.trials else "—",
                format_number(r.eval_final_median),
                format_ratio(r.relative_auc),
                format_ratio(paper(PAPER_RELATIVE_AUC)),
                format_number(statistics.mean(walls)) if walls else "—",
            ]
        )
    return markdown_table(header, rows)


def raw_trial_table(results: Sequence[RowResult]) -> str:
    """Every trial: seed, FST, solved_at, evaluation return, how far and how long it ran."""
    header = [
        "arm",
        "ε",
        "seed",
        "FST",
        "solved_at",
        "eval final",
        "eval max",
        "submissions",
        "env steps",
        "wall s",
        "note",
    ]
    rows = []
    for r in results:
        for t in r.trials:
            rows.append(
                [
                    r.row.arm,
                    format_number(r.row.epsilon),
                    str(t.seed),
                    _count(censor([t.fst], r.cap)[0]),
                    _count(censor([t.solved_at], r.cap)[0]),
                    format_number(t.eval_return_final),
                    format_number(t.eval_return_max),
                    str(t.submissions),
                    str(t.env_steps),
                    format_number(t.wall_s, 0),
                    "diverged" if t.diverged else "",
                ]
            )
    return markdown_table(header, rows)


#: Config keys the benchmark sets per trial, or boilerplate; not repeated in the notes.
_NOT_SHOWN_KEYS = frozenset(
    {
        "env",
        "epsilon",
        "seed",
        "num_env_runners",
        "num_cpus_per_env_runner",
        "num_cpus_for_main_process",
        "submissions_per_iteration",
        "enable_rl_module_and_learner",
        "enable_env_runner_and_connector_v2",
        "framework",
    }
)


def _run_line(run: Mapping[str, Any]) -> str:
    load = run.get("loadavg_start"), run.get("loadavg_end")
    load_text = "/".join("?" if v is None else f"{v:.2f}" for v in load)
    parts = [
        f"`{run.get('command', '?')}`",
        f"{run.get('date_start', '?')} → {run.get('date_end', '?')}",
        f"1-min load average at start/end {load_text}",
    ]
    if run.get("machine"):
        parts.append(machine_line(run["machine"], date=False, load=False))
    if run.get("wall_s") is not None:
        parts.append(f"{run['wall_s']:.0f} s")
    if run.get("interrupted"):
        parts.append("**interrupted**")
    if run.get("failures"):
        parts.append(f"**{len(run['failures'])} failed trial(s)**: " + "; ".join(run["failures"]))
    if run.get("file"):
        parts.append(f"from {run['file']}")
    return "; ".join(parts)


def section_notes(doc: Mapping[str, Any], results: Sequence[RowResult]) -> str:
    """What was run, how it differs from the paper's protocol, which rows are incomplete."""
    cap = int(doc["cap"])
    required = max(PROTOCOL_TRIALS, int(doc.get("trials_requested", PROTOCOL_TRIALS)))
    runs = doc.get("runs", [])
    lines = [f"- Run{'s' if len(runs) > 1 else ''}:"]
    lines += [f"  - {_run_line(run)}" for run in runs]
    lines.append(
        f"- Cap {cap} submissions (paper: {PAPER_CAP}); {required} seeds per row required "
        f"(paper: {PAPER_TRIALS} trials). Success ratio and relative AUC are within our cap; "
        "FST = paper eq. 26 (first n whose next 10 scores average ≥ 195); a trial stops at "
        "`solved_at` (the last 100 scores average ≥ 195: sustained success) or at the cap. "
        "A trial without FST (or solved_at) within the cap counts as ∞, and so does a "
        "trial that diverged (θ or a gradient became non-finite). Medians with ∞ for half "
        "or more of the trials are ∞."
        + ("" if cap >= PAPER_CAP else f" **Cap below the paper's {PAPER_CAP}.**")
    )
    lines.append(
        "- Relative AUC: area under success(n) = fraction of trials with FST ≤ n over "
        "n ∈ [0, cap], over the same for ε = ∞ of the arm's family (`nonprivate_tuned` for "
        "tuned arms, `nonprivate_paper` for paper arms). The paper's Tables 1-3 values are "
        "shown on the rows that follow its protocol (laplace_paper, prs_paper, "
        "nonprivate_paper)."
    )
    fleets = {
        int(meta.get("config", {}).get("agents_per_env_runner", 1) or 1)
        for meta in doc.get("arms", {}).values()
        if meta.get("base") == PAPER_BASE
    }
    if fleets:
        fleet_text = ", ".join(str(f) for f in sorted(fleets))
        lines.append(
            f"- Paper arms (LDPA3CConfig defaults: C, |B| per mechanism, lr 0.5, summed loss, "
            f"argmax with the α schedule) and the tuned Laplace/PRS files (one agent at a "
            f"time as shipped) run by a fleet of N = {fleet_text} agents "
            "(`agents_per_env_runner` = `submissions_per_request` = N, `--paper-fleet`) so "
            "that 90,000 submissions are affordable. The aggregator still applies |B| "
            "gradients per update (|B| = 1 for Laplace), but the N gradients of one fleet "
            "round are all computed from the same θ: a gradient is up to N − 1 updates "
            "stale. `--paper-fleet 1` is the paper's exact protocol (one agent at a time)."
        )
    lines.append(
        "- ε = ∞ runs once per family: `nonprivate_tuned` = the tuned quick start with "
        "mechanism none, `nonprivate_paper` = the paper's settings with Laplace at ε = ∞ "
        "(no noise, no clipping). Zero-signal arms (`zero_*`) replace every gradient by "
        "zeros before the mechanism: what the noise alone does (no ε = ∞ row)."
    )
    lines.append(
        "- Per trial: `num_env_runners: 0` (the fleet runs in the trial's own process), "
        "`num_cpus_for_main_process: 1`, `seed` = trial seed; eval return = "
        "`ldp/eval_return_mean` (greedy episodes of the current θ on the training and "
        "held-out gravities) at the last iteration."
    )
    for name, meta in sorted(doc.get("arms", {}).items(), key=lambda i: row_sort_key(Row(i[0], 0))):
        config = {k: v for k, v in (meta.get("config") or {}).items() if k not in _NOT_SHOWN_KEYS}
        source = "LDPA3CConfig defaults" if meta.get("base") == PAPER_BASE else meta.get("base")
        lines.append(
            f"- `{name}` ({meta.get('description', '')}; base {source}): "
            f"`{json.dumps(jsonable(config), sort_keys=True)}`"
        )
    missing = incomplete_rows(results)
    if missing:
        lines.append(
            "- **Incomplete rows** ("
            + str(len(missing))
            + "): "
            + ", ".join(f"{r.row.label} ({len(r.trials)} of {r.required})" for r in missing)
        )
    else:
        lines.append("- All rows complete.")
    return "\n".join(lines)


def render_section(doc: Mapping[str, Any], plots: Sequence[Path] = ()) -> str:
    """RESULTS.md block of the arm tables."""
    results = document_results(doc)
    cap = int(doc["cap"])
    parts = [
        "### Sample efficiency per arm (Tables 1-3)",
        "",
        section_notes(doc, results),
        "",
        sample_efficiency_table(results, cap),
        "",
        "Per trial (∞ = not reached within the cap):",
        "",
        raw_trial_table(results),
    ]
    if plots:
        parts += ["", "Learning curves (median and interquartile band over seeds, per ε):", ""]
        parts += [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(parts)


def speed_table(speeds: Sequence[SpeedResult]) -> str:
    """Throughput per setup and runner count, with ratios to the reference and to 1 agent."""
    header = [
        "EnvRunner",
        "remote runners",
        "CPU/runner",
        "agents/runner",
        "episodes/request",
        "submissions",
        "submissions/s",
        "env steps/s",
        "mean episode length",
        "vs reference (subm./s)",
        "fleet / 1 agent (subm./s)",
    ]
    reference = {s.num_env_runners: s for s in speeds if s.is_reference}
    ratios = fleet_ratios(speeds)
    rows = []
    for s in speeds:
        ref = reference.get(s.num_env_runners)
        vs_ref = not s.is_reference and ref is not None and ref.submissions_per_s > 0
        is_fleet = not s.is_reference and s.agents_per_env_runner > 1
        rows.append(
            [
                s.runner,
                str(s.num_env_runners),
                f"{s.cpus_per_runner:g}",
                str(s.agents_per_env_runner),
                str(s.submissions_per_request),
                str(s.submissions),
                f"{s.submissions_per_s:.1f}",
                f"{s.env_steps_per_s:.0f}",
                f"{s.mean_episode_length:.1f}",
                f"{s.submissions_per_s / ref.submissions_per_s:.1f}×" if vs_ref else "",
                f"{ratios[s.num_env_runners]:.1f}×"
                if is_fleet and s.num_env_runners in ratios
                else "",
            ]
        )
    return markdown_table(header, rows)


def render_speed_section(speeds: Sequence[SpeedResult], args: argparse.Namespace) -> str:
    """RESULTS.md block of the speed comparison."""
    mechanisms = {(s.mechanism, format_number(s.epsilon)) for s in speeds if s.mechanism}
    what = ", ".join(f"{m} ε={e}" for m, e in sorted(mechanisms)) or "?"
    return "\n".join(
        [
            "### Speed: submissions per second",
            "",
            f"- Command: `{args.command_line}`",
            f"- Machine: {machine_line(load=False)}; 1-min load average at start/end "
            f"{args.loadavg_start:.2f}/{load_average():.2f}",
            f"- Config: {args.tuned_config} ({what}); {args.speed_submissions} submissions "
            f"measured after one warm-up iteration of "
            f"{min(args.speed_iteration, args.speed_submissions)} (iterations of the same "
            "size; wall time includes `Algorithm.train()`).",
            "- Fleet vs 1 agent: the same config, mechanism, ε and remote runners, with the "
            "quick start's `agents_per_env_runner` and with 1 (same episodes per request, so "
            "the same staleness; the 1-agent runner plays them one after another). The issue "
            "asks for ≥ 10×.",
            "- Reference = `RLlibSamplingLDPA3CEnvRunner`: RLlib's `sample(num_episodes=1)` and "
            "learner connector pipeline, one environment and one gradient per remote call; "
            "its actions are sampled from π (no α schedule), so episode lengths can differ: "
            "compare env steps/s too.",
            "",
            speed_table(speeds),
        ]
    )


# --------------------------------------------------------------------------------------
# Learning curves (rllib_privacy.plotting, the code of `rllib-privacy plot`).
# --------------------------------------------------------------------------------------


def curve_trials(records: Iterable[TrialRecord], metric: str) -> list[Any]:
    """The records as ``rllib_privacy.plotting.TrialResults`` (config: epsilon, seed; rows:
    ``submissions`` and ``metric`` per iteration)."""
    from rllib_privacy.plotting import TrialResults

    out = []
    for t in records:
        rows = tuple(
            {"submissions": x, metric: y}
            for x, y in zip(t.curve["submissions"], t.curve[metric], strict=False)
            if y is not None
        )
        path = Path(f"{t.arm}/epsilon={format_number(t.epsilon)}/seed={t.seed}")
        out.append(TrialResults(path, {"epsilon": t.epsilon, "seed": t.seed}, rows, "benchmark"))
    return out


def plot_arms(doc: Mapping[str, Any], out_dir: Path, *, with_eval: bool = False) -> list[Path]:
    """One PNG per arm: per ε a median line and interquartile band over seeds of the score
    mean of the last 100 submissions (``pgc_a3c_<arm>.png``; with ``with_eval`` also the
    greedy evaluation return, ``pgc_a3c_<arm>_eval.png``), x = submissions. The arm's
    family baseline (ε = ∞) is drawn in each plot too. A curve ends where its trials
    stopped (solved or cap); the band at x is over the trials that reached x.
    """
    from rllib_privacy.errors import PrivacyConfigError
    from rllib_privacy.plotting import aggregate_curves, plot_learning_curves

    records = document_records(doc)
    families = document_families(doc)
    written: list[Path] = []
    arms = sorted({r.arm for r in records}, key=lambda a: row_sort_key(Row(a, 0)))
    for arm in arms:
        if arm in BASELINE_ARMS.values():
            continue
        baseline = BASELINE_ARMS.get(families.get(arm, ""), "")
        chosen = [r for r in records if r.arm == arm or (r.arm == baseline and r.epsilon == INF)]
        metrics = [("score_mean", "", "score mean (last 100 submissions)")]
        if with_eval:
            metrics.append(("eval_return_mean", "_eval", "greedy evaluation return"))
        for metric, suffix, label in metrics:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    curves = aggregate_curves(
                        curve_trials(chosen, metric),
                        group_by="epsilon",
                        metric=metric,
                        x="submissions",
                        band=75.0,
                    )
                    path = plot_learning_curves(
                        curves,
                        out_dir / f"pgc_a3c_{arm}{suffix}.png",
                        metric=label,
                        title=f"{arm}: median and IQR over seeds (inf = {baseline})",
                    )
                except PrivacyConfigError as e:
                    print(f"[plots] {arm}{suffix}: not plotted ({e})", file=sys.stderr)
                    continue
            written.append(path)
            print(f"[plots] wrote {path}", flush=True)
    return written


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
    g = parser.add_argument_group("sample efficiency")
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
    s = parser.add_argument_group("speed")
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
    o = parser.add_argument_group("resources and output")
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
    return parser


def _arm_metadata(
    arm_names: Sequence[str], rows: Sequence[Row], args: argparse.Namespace
) -> tuple[dict[str, Arm], dict[str, dict[str, Any]]]:
    """The arms of the planned rows and their configs (loads the YAML files once).

    Raises:
        BenchmarkError: A base YAML file is missing or invalid (named in the message).

    """
    arms = default_arms(
        tuned_config=args.tuned_config,
        laplace_config=args.laplace_config,
        prs_config=args.prs_config,
    )
    needed = list(dict.fromkeys([row.arm for row in rows] + list(arm_names)))
    bases: dict[str, dict[str, Any]] = {}
    configs: dict[str, dict[str, Any]] = {}
    for name in needed:
        arm = arms[name]
        if arm.base not in bases:
            if arm.is_paper_base:
                bases[arm.base] = paper_base_config()
            else:
                try:
                    bases[arm.base] = load_base_config(arm.base)
                except BenchmarkError as e:
                    raise BenchmarkError(f"arm {name}: {e}") from None
        configs[name] = arm.build_config(bases[arm.base], paper_fleet=args.paper_fleet)
    return {name: arms[name] for name in needed}, configs


def validate_configs(trial_variants: Sequence[Mapping[str, Any]]) -> None:
    """Builds every distinct trial config as an LDPA3CConfig and validates it."""
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig

    seen: set[str] = set()
    for variant in trial_variants:
        config = dict(variant["config"])
        config.pop("seed", None)
        key = json.dumps(config, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        try:
            LDPA3CConfig().update_from_dict(config).validate()
        except Exception as e:  # noqa: BLE001 (PrivacyConfigError, ValueError, ...)
            where = f"{variant['arm']} ε={format_number(variant['epsilon'])}"
            raise BenchmarkError(f"{where}: invalid config: {e}") from None


def _finish_outputs(
    doc: dict[str, Any], args: argparse.Namespace, speeds: Sequence[SpeedResult]
) -> None:
    """Prints the tables and writes JSON, plots and RESULTS.md as requested."""
    parts: dict[str, str] = {}
    if doc.get("trials") or doc.get("rows"):
        results = document_results(doc)
        print("\n## Sample efficiency per arm\n")
        print(sample_efficiency_table(results, int(doc["cap"])))
        print()
        print(section_notes(doc, results))
        print("\nPer trial:\n")
        print(raw_trial_table(results), flush=True)
        plots: list[Path] = []
        if args.plots:
            plots = plot_arms(doc, args.results_md.parent, with_eval=args.plot_eval)
        parts[RESULTS_PART] = render_section(doc, plots)
    if speeds:
        print("\n## Speed: submissions per second\n")
        print(speed_table(speeds), flush=True)
        if not args.merge_json:  # the section names this invocation's command and machine
            parts["speed"] = render_speed_section(speeds, args)
    if args.json is not None:
        write_document(args.json, doc)
        print(f"wrote {args.json}")
    if args.write_results and parts:
        RESULTS.write(args.results_md, parts)
        print(f"wrote {args.results_md}")


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
        try:
            docs = [load_document(path) for path in args.merge_json]
            doc = merge_documents(docs, [str(p) for p in args.merge_json])
        except BenchmarkError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        _finish_outputs(doc, args, [SpeedResult.from_json(s) for s in doc.get("speed", [])])
        return 0
    run_speed_part = args.speed or args.speed_only
    seeds = [args.seed + k for k in range(args.trials)]
    rows = [] if args.speed_only else plan_rows(args.arms, args.epsilons, default_arms())
    spi = max(1, min(args.iteration_submissions, args.cap))
    # Results come from the callbacks: Tune's TensorBoard/CSV/JSON files are not needed (they
    # also warn about the ε = ∞ scalars).
    quiet_ray(tune_loggers=False)
    try:  # Fail fast, before Ray starts, on a missing or invalid experiment file.
        if run_speed_part:
            load_base_config(args.tuned_config)
        arms, arm_configs = _arm_metadata([] if args.speed_only else args.arms, rows, args)
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
    import ray

    import rllib_privacy

    rllib_privacy.register()  # Registers LDPA3C and the env

    run: dict[str, Any] = {
        "command": args.command_line,
        "date_start": now(),
        "loadavg_start": args.loadavg_start,
        "machine": machine_info(),
        "seeds": seeds,
        "epsilons": list(args.epsilons),
        "arms": list(args.arms),
        "paper_fleet": args.paper_fleet,
        "max_concurrent": args.max_concurrent,
        "iteration_submissions": spi,
        "eval_episodes": args.eval_episodes,
        "failures": [],
    }
    doc = new_document(
        cap=args.cap,
        trials=args.trials,
        arms={name: {**arm.to_json(), "config": arm_configs[name]} for name, arm in arms.items()},
        rows=rows,
        run=run,
    )
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
                f"{len(rows)} rows × {len(seeds)} seeds = {len(trial_variants)} trials "
                f"(cap {args.cap}, {args.max_concurrent} at a time)...",
                flush=True,
            )
            recorder = run_trials(doc, trial_variants, args)
            failures = recorder.failures
            run["failures"] = failures
            if recorder.done < recorder.total:
                run["interrupted"] = True
        if run_speed_part:
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
    _finish_outputs(doc, args, speeds)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
