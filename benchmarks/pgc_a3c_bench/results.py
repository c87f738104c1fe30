"""What PGC-A3C trials measured, and the statistics over a row's trials (pure; unit-tested).

FST statistics as the paper's Tables 1-3 (median FST, success ratio, relative AUC), one
``TrialRecord`` per finished trial (built by ``TrialRecorder`` from Tune's
results as they come) and the speed comparison's ``SpeedResult``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from harness import (
    INF,
    Progress,
    finite_median,
    format_number,
    jsonable,
    median_or_inf,
    nested_get,
)

from pgc_a3c_bench.plan import BASELINE_ARMS, FAMILIES, PROTOCOL_TRIALS, Row, row_sort_key


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
            return None if value is None else json_float(value)

        curve = data.get("curve") or {}
        return cls(
            arm=str(data["arm"]),
            epsilon=json_float(data["epsilon"]),
            seed=int(data["seed"]),
            fst=number(data.get("fst")),
            solved_at=number(data.get("solved_at")),
            eval_return_final=number(data.get("eval_return_final")),
            eval_return_max=number(data.get("eval_return_max")),
            submissions=int(data.get("submissions", 0)),
            env_steps=int(data.get("env_steps", 0)),
            wall_s=json_float(data.get("wall_s", math.nan)),
            diverged=bool(data.get("diverged", False)),
            curve={
                "submissions": list(curve.get("submissions", [])),
                "score_mean": [number(v) for v in curve.get("score_mean", [])],
                "eval_return_mean": [number(v) for v in curve.get("eval_return_mean", [])],
            },
        )


def json_float(value: Any) -> float:
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


def maybe_float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


class TrialRecorder:
    """Collects per-iteration curves, builds a ``TrialRecord`` per finished trial and
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
        curve["score_mean"].append(maybe_float(result.get("score_mean")))
        curve["eval_return_mean"].append(maybe_float(nested_get(result, "ldp/eval_return_mean")))
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
        ``failures``, no record.
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
            fst=maybe_float(last.get("fst")),
            solved_at=maybe_float(last.get("solved_at")),
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


#: What LDPA3C raises when θ or a gradient has become non-finite (a learning outcome of
#: unstable settings, e.g. the paper's unclipped non-private baseline, not a crash).
DIVERGENCE_MESSAGE = "GradientSubmission.gradient must be finite"


def is_divergence(error: BaseException) -> bool:
    """True if a trial failed because training diverged (non-finite gradient)."""
    return DIVERGENCE_MESSAGE in str(error)


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
            **{k: (json_float(v) if k == "epsilon" else v) for k, v in data.items() if k in names}
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
