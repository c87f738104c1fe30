"""What the kickstarting benchmark measured: per trial, per arm, per task; read from Tune folders.

A trial's numbers come from its Tune folder (``result.json``, read with
``rllib_privacy.plotting.load_trials``): the last result gives the privacy spend and how
far it ran, the whole curve gives the env steps to T and to T₂.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import INF, BenchmarkError, count_finite, median_or_inf, steps_to_threshold

from kickstart_bench.plan import TEACHER, Task, arm_of

#: Result keys (flattened with "/") read from the Tune result folders.
RETURN_KEY = "env_runners/episode_return_mean"
STEPS_KEY = "num_env_steps_sampled_lifetime"
EPSILON_KEY = "privacy/epsilon_spent"
DELTA_KEY = "privacy/delta_spent"
EPSILON_BASIC_KEY = "kickstart/epsilon_basic_composition"
DELTA_BASIC_KEY = "kickstart/delta_basic_composition"
ASKED_KEY = "kickstart/teacher_asked"
CACHED_KEY = "kickstart/teacher_cached"
CACHE_SIZE_KEY = "kickstart/teacher_cache_size"
RELEASES_KEY = "privacy/releases"
ANSWERED_KEY = "kickstart/teacher_answered"
SHARING_KEY = "kickstart/teacher_sharing"
STOPPED_AT_KEY = "kickstart/teacher_stopped_at_iteration"

#: Median over seeds; seeds that never reached T (∞) sort last, ∞ when half or more did not.
median_steps = median_or_inf
#: Seeds that reached T (finite steps).
num_reached = count_finite


def speedup(teacher_steps: float, student_steps: float) -> float:
    """teacher steps / student steps: > 1 means the student reached T in fewer env steps.

    0 when only the teacher reached T, NaN when the teacher did not (no reference).
    """
    if not math.isfinite(teacher_steps) or not student_steps > 0:
        return math.nan
    if math.isinf(student_steps):
        return 0.0
    return teacher_steps / student_steps


@dataclasses.dataclass
class RunResult:
    """One Tune trial: its seed, env steps to T (∞ if not reached) and how far it ran."""

    seed: int
    steps_to_target: float
    env_steps: int
    final_return: float
    iterations: int
    wall_s: float
    path: str
    epsilon_spent: float = math.nan
    delta_spent: float = math.nan
    releases: float = math.nan
    answered: float = math.nan
    sharing_at_end: float = math.nan
    stopped_at: float = math.nan
    unfinished: bool = False
    steps_to_lower: float = INF
    #: Env steps to 75% of T (the paper's tables report 50% and 75% of the teacher's return).
    steps_to_three_quarters: float = INF
    epsilon_basic: float = math.nan
    delta_basic: float = math.nan
    asked: float = math.nan
    cached: float = math.nan


@dataclasses.dataclass
class ArmResult:
    """All seeds of one arm on one task."""

    arm: str
    runs: list[RunResult]
    cap: int

    @property
    def steps(self) -> list[float]:
        return [r.steps_to_target for r in self.runs]

    @property
    def median(self) -> float:
        return median_steps(self.steps)

    @property
    def lower_steps(self) -> list[float]:
        return [r.steps_to_lower for r in self.runs]

    @property
    def three_quarter_steps(self) -> list[float]:
        return [r.steps_to_three_quarters for r in self.runs]


@dataclasses.dataclass
class TaskResult:
    """Teacher and students of one task."""

    task: Task
    teacher: RunResult
    teacher_cap: int
    arms: list[ArmResult]
    plot: str | None
    wall_s: float

    @property
    def teacher_steps(self) -> float:
        return self.teacher.steps_to_target


@dataclasses.dataclass
class OverheadResult:
    """Per-iteration wall times of KickstartPPO (Dirichlet) and PPO, measured in turn.

    The ``cache_*`` fields are the third algorithm, KickstartPPO with the teacher's answer
    cache of ``cache_bits`` bits (``--overhead-cache-bits``); 0 and empty lists where it was
    not measured. They have defaults so that the JSON of runs before it still loads
    (``OverheadResult(**fields)``).

    Attributes:
        kickstart_s: Seconds of each measured KickstartPPO iteration.
        ppo_s: Seconds of each measured PPO iteration.
        teacher_answer_s: Seconds per KickstartPPO iteration in the teacher's answer calls.
        teacher_rollout_s: Seconds per KickstartPPO iteration in rollout start and stats.
        warmup: Rounds not counted.
        batch: Train batch size (states the teacher is asked per iteration).
        sharing: ``teacher_sharing`` after each measured KickstartPPO iteration.
        teacher_source: What the teacher was.
        cache_bits: SimHash code length of the cache arm (0: not measured).
        cache_s: Seconds of each measured iteration of the cache arm.
        cache_answer_s: Its seconds per iteration in the teacher's answer calls.
        cache_rollout_s: Its seconds per iteration in rollout start and stats.
        cache_asked: States it sent to the teacher, per measured iteration.
        cache_cached: Of those, the states served from the cache (no release).
        cache_answered: Fresh releases (states of new codes), per measured iteration.
        cache_size: Distinct codes in the cache after each measured iteration.

    """

    kickstart_s: list[float]
    ppo_s: list[float]
    teacher_answer_s: list[float]
    teacher_rollout_s: list[float]
    warmup: int
    batch: int
    sharing: list[float]
    teacher_source: str
    cache_bits: int = 0
    cache_s: list[float] = dataclasses.field(default_factory=list)
    cache_answer_s: list[float] = dataclasses.field(default_factory=list)
    cache_rollout_s: list[float] = dataclasses.field(default_factory=list)
    cache_asked: list[float] = dataclasses.field(default_factory=list)
    cache_cached: list[float] = dataclasses.field(default_factory=list)
    cache_answered: list[float] = dataclasses.field(default_factory=list)
    cache_size: list[float] = dataclasses.field(default_factory=list)

    @property
    def kickstart_median(self) -> float:
        return statistics.median(self.kickstart_s)

    @property
    def ppo_median(self) -> float:
        return statistics.median(self.ppo_s)

    @property
    def ratio(self) -> float:
        return self.kickstart_median / self.ppo_median

    @property
    def paired_ratios(self) -> list[float]:
        """KickstartPPO / PPO seconds within each round (the two ran back to back)."""
        return _round_ratios(self.kickstart_s, self.ppo_s)

    @property
    def teacher_median(self) -> float:
        totals = [a + b for a, b in zip(self.teacher_answer_s, self.teacher_rollout_s, strict=True)]
        return statistics.median(totals) if totals else math.nan

    @property
    def has_cache(self) -> bool:
        """Whether the answer-cache arm was measured."""
        return self.cache_bits > 0 and bool(self.cache_s)

    @property
    def cache_median(self) -> float:
        """Median seconds per iteration of the cache arm; NaN where it was not measured."""
        return statistics.median(self.cache_s) if self.cache_s else math.nan

    @property
    def cache_ratio(self) -> float:
        """Median seconds of the cache arm / PPO's (NaN where it was not measured)."""
        return self.cache_median / self.ppo_median

    @property
    def cache_paired_ratios(self) -> list[float]:
        """Cache arm / PPO seconds within each round; none where it was not measured."""
        return _round_ratios(self.cache_s, self.ppo_s) if self.cache_s else []

    @property
    def cached_share(self) -> float:
        """States served from the cache / states asked, over every measured iteration."""
        asked = sum(self.cache_asked)
        return sum(self.cache_cached) / asked if asked > 0 else math.nan


def _round_ratios(seconds: list[float], ppo_s: list[float]) -> list[float]:
    """Seconds / PPO's seconds within each round (the iterations of a round ran back to back)."""
    return [s / p for s, p in zip(seconds, ppo_s, strict=True)]


# --------------------------------------------------------------------------------------
# Reading Tune folders.
# --------------------------------------------------------------------------------------


def load_trial_folders(folder: Path) -> list[Any]:
    """Every trial (``rllib_privacy.plotting.TrialResults``) in or below ``folder``.

    Raises:
        BenchmarkError: No trial folder there (an interrupted run, a moved folder).

    """
    from rllib_privacy.errors import PrivacyConfigError
    from rllib_privacy.plotting import load_trials

    try:
        return load_trials([folder])
    except PrivacyConfigError as e:
        raise BenchmarkError(str(e)) from None


def run_of(trial: Any) -> RunResult:
    """A trial's ``RunResult`` from its last result; steps to T and T₂ unset (∞)."""
    rows = list(trial.rows)
    config = trial.config or {}
    last = rows[-1] if rows else {}
    return RunResult(
        seed=int(config.get("seed") or 0),
        steps_to_target=INF,
        env_steps=_int_or_zero(last.get(STEPS_KEY)),
        final_return=to_float(last.get(RETURN_KEY)),
        iterations=len(rows),
        wall_s=to_float(last.get("time_total_s")),
        path=str(trial.path),
        epsilon_spent=to_float(last.get(EPSILON_KEY)),
        delta_spent=to_float(last.get(DELTA_KEY)),
        releases=to_float(last.get(RELEASES_KEY)),
        answered=to_float(last.get(ANSWERED_KEY)),
        sharing_at_end=to_float(last.get(SHARING_KEY)),
        stopped_at=to_float(last.get(STOPPED_AT_KEY)),
        epsilon_basic=to_float(last.get(EPSILON_BASIC_KEY)),
        delta_basic=to_float(last.get(DELTA_BASIC_KEY)),
        asked=to_float(last.get(ASKED_KEY)),
        cached=to_float(last.get(CACHED_KEY)),
    )


def read_runs(folder: Path, algorithm: str) -> list[tuple[str, str, Any, RunResult]]:
    """Every trial of an experiment folder as (env, arm, trial, RunResult); steps to T unset.

    Args:
        folder: The experiment folder.
        algorithm: Its trainable, or ``teacher`` for the teachers' folder.

    """
    out = []
    for trial in load_trial_folders(folder):
        config = trial.config or {}
        arm = TEACHER if algorithm == TEACHER else arm_of(algorithm, config)
        out.append((str(config.get("env")), arm, trial, run_of(trial)))
    if not out:
        raise BenchmarkError(f"no trial results under {folder}")
    return out


def with_steps_to_target(
    trial: Any, run: RunResult, target: float, lower: float, floor: float = 0.0, cap: float = INF
) -> RunResult:
    """``run`` with steps to T, to T₂ and to 0.75·T from the trial's results; beyond ``cap`` = ∞.

    0.75·T is measured from ``floor`` (``three_quarters``).
    """
    rows = trial.rows
    steps = [to_float(r.get(STEPS_KEY)) for r in rows]
    returns = [to_float(r.get(RETURN_KEY)) for r in rows]

    def capped(threshold: float) -> float:
        reached = steps_to_threshold(steps, returns, threshold)
        return reached if reached <= cap else INF

    return dataclasses.replace(
        run,
        steps_to_target=capped(target),
        steps_to_lower=capped(lower),
        steps_to_three_quarters=capped(three_quarters(target, floor)),
    )


def three_quarters(target: float, floor: float = 0.0) -> float:
    """The bar 75% of the way from ``floor`` to the target T (from 0, as the paper measures)."""
    return floor + 0.75 * (target - floor)


def student_folders(storage: Path) -> list[tuple[Path, str]]:
    """(folder, trainable) of every ``students_<KickstartPPO|PPO>[_suffix]`` experiment folder."""
    out = []
    for folder in sorted(storage.glob("students_*")):
        algorithm = folder.name.removeprefix("students_").split("_", 1)[0]
        if folder.is_dir() and algorithm in ("KickstartPPO", "PPO"):
            out.append((folder, algorithm))
    return out


def trial_summary(result: Mapping[str, Any]) -> dict[str, Any]:
    """What the store keeps of a finished trial's last (nested) Tune result."""
    runners = result.get("env_runners") or {}
    return {
        "env_steps": _int_or_zero(result.get(STEPS_KEY)),
        "final_return": to_float(runners.get("episode_return_mean")),
        "wall_s": to_float(result.get("time_total_s")),
    }


def _int_or_zero(value: Any) -> int:
    number = to_float(value)
    return int(number) if math.isfinite(number) else 0


def to_float(value: Any) -> float:
    """``value`` as a float; NaN where it is missing or not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
