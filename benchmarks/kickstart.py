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

Overhead: wall time per training iteration of KickstartPPO with the Dirichlet teacher vs
plain RLlib PPO on CartPole with the same batch sizes, model size and seed, built in the
same process and trained alternately (ABBA order against drift); medians after a warm-up.
The teacher answers in every measured iteration (budgets lifted: the worst case), and the
time spent waiting for the teacher is reported separately.

Examples::

    python benchmarks/kickstart.py --help
    python benchmarks/kickstart.py --quick                       # smoke run, minutes
    python benchmarks/kickstart.py --write-results               # the full run
    python benchmarks/kickstart.py --tasks acrobot --no-overhead --write-results
    python benchmarks/kickstart.py --overhead-only --overhead-iterations 10
    # redo the tables and plots from an earlier run's Tune folder DIR:
    python benchmarks/kickstart.py --analyze-only --storage-path DIR --tasks cartpole

Each part (a task, the overhead) has its own markers inside the RESULTS.md section, so
runs of single tasks add up instead of overwriting each other.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import (
    BENCH_DIR,
    INF,
    REPO_ROOT,
    RESULTS_MD,
    BenchmarkError,
    Progress,
    ResultsSection,
    command_line,
    count_finite,
    dump_json,
    format_number,
    jsonable,
    known_median,
    load_json,
    machine_info,
    machine_line,
    markdown_table,
    median_or_inf,
    positive_int,
    quiet_ray,
    spread,
    steps_to_threshold,
    usable_cpus,
)

STUDENT_YAML = REPO_ROOT / "tuned_configs" / "kickstart_dirichlet_cartpole.yaml"
TEACHER_YAML = REPO_ROOT / "tuned_configs" / "kickstart_teacher_cartpole.yaml"
AIRRAID_STUDENT_YAML = REPO_ROOT / "tuned_configs" / "kickstart_dirichlet_airraid.yaml"
AIRRAID_TEACHER_YAML = REPO_ROOT / "tuned_configs" / "kickstart_teacher_airraid.yaml"

#: Result keys (flattened with "/") read from the Tune result folders.
RETURN_KEY = "env_runners/episode_return_mean"
STEPS_KEY = "num_env_steps_sampled_lifetime"
EPSILON_KEY = "privacy/epsilon_spent"
DELTA_KEY = "privacy/delta_spent"
EPSILON_BASIC_KEY = "kickstart/epsilon_basic_composition"
DELTA_BASIC_KEY = "kickstart/delta_basic_composition"
ASKED_KEY = "kickstart/teacher_asked"
CACHED_KEY = "kickstart/teacher_cached"
RELEASES_KEY = "privacy/releases"
ANSWERED_KEY = "kickstart/teacher_answered"
SHARING_KEY = "kickstart/teacher_sharing"
STOPPED_AT_KEY = "kickstart/teacher_stopped_at_iteration"

#: The paper's headline: privacy-aware students converge about 4× faster than the teacher.
PAPER_SPEEDUP = 4.0


@dataclasses.dataclass(frozen=True)
class Task:
    """A benchmark environment and the return that counts as "reached".

    Attributes:
        name: Short name (CLI, file names).
        env: Gymnasium id.
        target: Return T that teacher and students must reach.
        why: Why this target (written into RESULTS.md).
        lower: A lower bar T₂ reported next to T (steps to T₂ and the speed-up there), for
            runs where T is mostly not reached within the cap.
        student_yaml: Experiment file whose first config gives the students' settings.
        teacher_yaml: Experiment file whose first config gives the teacher's settings.

    """

    name: str
    env: str
    target: float
    why: str
    lower: float
    student_yaml: Path = STUDENT_YAML
    teacher_yaml: Path = TEACHER_YAML


TASKS: dict[str, Task] = {
    "cartpole": Task(
        "cartpole",
        "CartPole-v1",
        450.0,
        "the tuned teacher YAML's stop value (episodes end at 500)",
        250.0,
    ),
    "acrobot": Task(
        "acrobot",
        "Acrobot-v1",
        -100.0,
        "Gymnasium's reward_threshold for Acrobot-v1 (swing-up in ≤ 100 steps on average; "
        "a random policy scores about −500)",
        -250.0,
    ),
    # The paper's setting (Gohari et al. §5): run alone (its own YAMLs), on many cores.
    "airraid": Task(
        "airraid",
        # The prefix makes every Ray worker import the package, which registers the RAM ids.
        "rllib_privacy:ALE/AirRaid-ram-v5",
        2000.0,
        "about what the paper's PPO teachers reach on AirRaid-ram within 4M steps (a uniformly "
        "random policy scores 500-700 per episode)",
        1000.0,
        student_yaml=AIRRAID_STUDENT_YAML,
        teacher_yaml=AIRRAID_TEACHER_YAML,
    ),
}


@dataclasses.dataclass(frozen=True)
class Arm:
    """One kind of student.

    Attributes:
        name: Label in tables and plots.
        algorithm: Registered Tune trainable (``KickstartPPO`` or ``PPO``).
        overrides: Config keys that make this arm (on top of the student base config).
        description: One line for RESULTS.md.
        tasks: The tasks it runs on (None: all). The paper's c-arms run on AirRaid only, the
            budget arms on the classic-control tasks; this also keeps arm_of unambiguous
            where an arm's overrides equal a task YAML's own values.

    """

    name: str
    algorithm: str
    overrides: Mapping[str, Any]
    description: str
    tasks: tuple[str, ...] | None = None


#: The classic-control tasks (CartPole, Acrobot), where the budget arms run.
CLASSIC = ("cartpole", "acrobot")
#: With a cache the budget lasts: the help ends when k = k₀·c^t falls below min_k = k₀/10
#: (after about 11 rollouts, about when the ε-1000 arm's budget runs out).
CACHE_SCHEDULE = {"teacher_vanishing_coefficient": 0.8, "teacher_min_k": 5.0}

ARMS: dict[str, Arm] = {
    "privacy-aware": Arm(
        "privacy-aware",
        "KickstartPPO",
        {"teacher_mechanism": "dirichlet", "kickstart_lambda": 0.5},
        "KickstartPPO, Dirichlet teacher, λ = 0.5",
        CLASSIC,
    ),
    "privacy-unaware": Arm(
        "privacy-unaware",
        "KickstartPPO",
        {"teacher_mechanism": "dirichlet", "kickstart_lambda": 0.0},
        "KickstartPPO, Dirichlet teacher, λ = 0",
        CLASSIC,
    ),
    "plain-kickstart": Arm(
        "plain-kickstart",
        "KickstartPPO",
        {"teacher_mechanism": "none", "kickstart_lambda": 0.0},
        "KickstartPPO, non-private teacher (`teacher_mechanism: none`), λ = 0",
        CLASSIC,
    ),
    "no-kickstart": Arm("no-kickstart", "PPO", {}, "plain RLlib PPO, no teacher"),
    # The paper's vanishing coefficients (AirRaid figures), for both kinds of student.
    **{
        f"{kind}-c{c}": Arm(
            f"{kind}-c{c}",
            "KickstartPPO",
            {
                "teacher_mechanism": "dirichlet",
                "kickstart_lambda": lam,
                "teacher_vanishing_coefficient": c,
            },
            f"KickstartPPO, Dirichlet teacher, λ = {lam}, c = {c}",
            ("airraid",),
        )
        for kind, lam in (("aware", 0.5), ("unaware", 0.0))
        for c in (0.1, 0.3, 0.9)
    },
    # Points of the privacy-utility curve: smaller budgets, made usable by the answer cache.
    "aware-eps100-cache32": Arm(
        "aware-eps100-cache32",
        "KickstartPPO",
        {
            "teacher_mechanism": "dirichlet",
            "kickstart_lambda": 0.5,
            "teacher_epsilon_budget": 100.0,
            "teacher_cache_bits": 32,
            **CACHE_SCHEDULE,
        },
        "privacy-aware, ε budget 100, a 32-bit answer cache, c = 0.8, min_k = 5",
        CLASSIC,
    ),
    "aware-eps10-cache16": Arm(
        "aware-eps10-cache16",
        "KickstartPPO",
        {
            "teacher_mechanism": "dirichlet",
            "kickstart_lambda": 0.5,
            "teacher_epsilon_budget": 10.0,
            "teacher_cache_bits": 16,
            **CACHE_SCHEDULE,
        },
        "privacy-aware, ε budget 10, a 16-bit answer cache, c = 0.8, min_k = 5",
        CLASSIC,
    ),
    "aware-eps10-k5-cache24": Arm(
        "aware-eps10-k5-cache24",
        "KickstartPPO",
        {
            "teacher_mechanism": "dirichlet",
            "kickstart_lambda": 0.5,
            "teacher_epsilon_budget": 10.0,
            "teacher_cache_bits": 24,
            "teacher_k": 5.0,
            **CACHE_SCHEDULE,
            "teacher_min_k": 0.5,
        },
        "privacy-aware, ε budget 10, k₀ = 5, a 24-bit answer cache, c = 0.8, min_k = 0.5",
        CLASSIC,
    ),
}


# --------------------------------------------------------------------------------------
# Statistics (pure; unit-tested in tests/e2e/test_benchmark_kickstart.py).
# --------------------------------------------------------------------------------------


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


def student_cap(teacher_steps: float, *, factor: float, cap: int, batch: int) -> int:
    """Steps a student may take: ``factor`` × the teacher's, whole batches, at most ``cap``.

    A teacher that never reached T gives no reference: the students get ``cap``.
    """
    if not math.isfinite(teacher_steps):
        return int(cap)
    batches = max(1, math.ceil(factor * teacher_steps / batch))
    return int(min(cap, batches * batch))


# --------------------------------------------------------------------------------------
# Results.
# --------------------------------------------------------------------------------------


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
    """Per-iteration wall times of KickstartPPO (Dirichlet) and PPO, measured alternately."""

    kickstart_s: list[float]
    ppo_s: list[float]
    teacher_answer_s: list[float]
    teacher_rollout_s: list[float]
    warmup: int
    batch: int
    sharing: list[float]
    teacher_source: str

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
        return [k / p for k, p in zip(self.kickstart_s, self.ppo_s, strict=True)]

    @property
    def teacher_median(self) -> float:
        totals = [a + b for a, b in zip(self.teacher_answer_s, self.teacher_rollout_s, strict=True)]
        return statistics.median(totals) if totals else math.nan


# --------------------------------------------------------------------------------------
# Configs.
# --------------------------------------------------------------------------------------


def load_yaml_config(path: Path) -> dict[str, Any]:
    """The first experiment's ``config:`` of a YAML experiment file (plain ``yaml``).

    Not ``rllib_privacy.experiments.load_experiments``: that validates the student's
    ``teacher_checkpoint``, which only exists once this run's teacher is trained.
    """
    import yaml

    if not path.is_file():
        raise BenchmarkError(f"experiment file {str(path)!r} not found")
    with path.open(encoding="utf-8") as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict) or not data:
        raise BenchmarkError(f"{path}: expected a mapping of experiment names to experiments")
    experiment = next(iter(data.values()))
    config = experiment.get("config") if isinstance(experiment, dict) else None
    if not isinstance(config, dict):
        raise BenchmarkError(f"{path}: the first experiment has no config mapping")
    return dict(config)


#: Keys the benchmark sets itself (per arm, task, seed) or that would start more processes.
_BENCH_KEYS = frozenset({"teacher_checkpoint", "num_env_runners", "env", "seed"})

#: PPO hyperparameters a student's no-kickstart twin shares with it.
PPO_KEYS = ("train_batch_size_per_learner", "minibatch_size", "num_epochs", "lr", "gamma")


def split_student_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(PPO keys incl. ``model_config``, teacher_*/kickstart_* keys) of a student config."""
    ppo: dict[str, Any] = {}
    kickstart: dict[str, Any] = {}
    for key, value in config.items():
        if key in _BENCH_KEYS:
            continue
        if key.startswith(("teacher_", "kickstart_")):
            kickstart[key] = value
        else:
            ppo[key] = value
    return ppo, kickstart


QUICK_PPO = {"train_batch_size_per_learner": 400, "minibatch_size": 100, "num_epochs": 2}


def arm_config(
    arm: Arm,
    *,
    ppo: Mapping[str, Any],
    kickstart: Mapping[str, Any],
    env: str,
    teacher_checkpoint: str,
    smoothing: int,
) -> tuple[Any, dict[str, Any]]:
    """(RLlib AlgorithmConfig, its dict for Tune) of one arm on one task, before seeding."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig

    ppo = dict(ppo)
    model = dict(ppo.pop("model_config", {}) or {})
    if arm.algorithm == "KickstartPPO":
        config: Any = KickstartPPOConfig()
        # Teacher and kickstart keys go through update_from_dict, which sends each key to
        # its builder method (.teacher()/.kickstart()); .training() takes only PPO's own.
        # update_from_dict also takes the env-runner keys of a YAML (num_envs_per_env_runner),
        # which .training() would reject.
        config.update_from_dict(ppo).update_from_dict(
            {**kickstart, **arm.overrides, "teacher_checkpoint": teacher_checkpoint}
        )
    elif arm.algorithm == "PPO":
        config = PPOConfig().update_from_dict(ppo)
    else:
        raise BenchmarkError(f"arm {arm.name}: unknown algorithm {arm.algorithm!r}")
    config.environment(env).env_runners(num_env_runners=0).rl_module(
        model_config=DefaultModelConfig(**model)
    )
    config.reporting(metrics_num_episodes_for_smoothing=smoothing)
    config.debugging(log_level="ERROR")
    return config, config.to_dict()


# --------------------------------------------------------------------------------------
# Tune.
# --------------------------------------------------------------------------------------


def arm_of(algorithm: str, config: Mapping[str, Any]) -> str:
    """The arm a trial belongs to, from its trainable and its (resolved) config.

    Raises:
        BenchmarkError: The config matches no arm.

    """
    # The most specific arm wins: every privacy-utility point also matches "privacy-aware".
    task = next((t.name for t in TASKS.values() if t.env == config.get("env")), None)
    matches = [
        arm
        for arm in ARMS.values()
        if arm.algorithm == algorithm
        and (arm.tasks is None or task is None or task in arm.tasks)
        and all(config.get(k) == v for k, v in arm.overrides.items())
    ]
    if matches:
        return max(matches, key=lambda arm: len(arm.overrides)).name
    raise BenchmarkError(f"a {algorithm} trial whose config matches no arm: {dict(config)!r}")


def _finished(result: Mapping[str, Any], stop: tuple[float, int]) -> bool:
    """Whether a (nested) result has reached the return target or the step cap."""
    target, cap = stop
    value = _float((result.get("env_runners") or {}).get("episode_return_mean"))
    return (not math.isnan(value) and value >= target) or _float(result.get(STEPS_KEY)) >= cap


def _make_stopper(stops: Mapping[str, tuple[float, int]]) -> tuple[Any, Any]:
    """(Tune callback, stopper): a trial stops at its env's target return or step cap.

    One Tuner runs trials of several envs, but Tune's ``stop`` dict is per Tuner and a
    stopper only sees ``(trial_id, result)``; the callback tells the stopper each trial's
    env when the trial starts.
    """
    from ray import tune

    env_of: dict[str, str] = {}

    class RecordEnv(tune.Callback):
        """Remembers every trial's env for the stopper."""

        def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            env_of[trial.trial_id] = trial.config["env"]

    class TargetOrCapStopper(tune.Stopper):
        """Stops a trial at return ≥ its env's target or at its env's step cap."""

        def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
            return _finished(result, stops[env_of[trial_id]])

        def stop_all(self) -> bool:
            return False

    return RecordEnv(), TargetOrCapStopper()


def run_tuner(
    trainable: str,
    base: Mapping[str, Any],
    points: Sequence[Mapping[str, Any]],
    *,
    seeds: Sequence[int] | None,
    stops: Mapping[str, tuple[float, int]],
    storage_path: Path,
    name: str,
    checkpoint_at_end: bool,
    verbose: int,
) -> float:
    """One Tuner: every point (env, arm settings) × every seed, in parallel; returns wall s.

    Args:
        trainable: Registered algorithm name.
        base: Param space shared by all trials.
        points: Per-variant overrides (each must set ``env``).
        seeds: A seed grid applied to every point (None: the seed in ``base``).
        stops: env → (target return, step cap).
        storage_path: Tune storage folder; the experiment lands in ``storage_path/name``.
        name: Experiment name.
        checkpoint_at_end: Save each trial's final checkpoint (teachers).
        verbose: Tune verbosity.

    Raises:
        BenchmarkError: A trial errored.

    """
    from ray import tune
    from ray.tune.search import BasicVariantGenerator

    space = dict(base)
    if seeds is not None:
        space["seed"] = tune.grid_search(list(seeds))
        if trainable == "KickstartPPO":
            # The teacher's seed follows the student's; its noise also mixes in a fresh
            # OS-entropy nonce per start (NoiseStreams), so reruns differ in the noise.
            space["teacher_seed"] = tune.sample_from(lambda spec: spec.config.seed)
    callback, stopper = _make_stopper(stops)
    tuner = tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(
            # Each point is one sample; the seed grid expands inside it.
            search_alg=BasicVariantGenerator(points_to_evaluate=[dict(p) for p in points]),
            num_samples=len(points),
            reuse_actors=False,
        ),
        run_config=tune.RunConfig(
            name=name,
            stop=stopper,
            callbacks=[callback],
            storage_path=str(storage_path),
            verbose=verbose,
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=checkpoint_at_end),
            failure_config=tune.FailureConfig(max_failures=0),
        ),
    )
    start = time.perf_counter()
    grid = tuner.fit()
    wall = time.perf_counter() - start
    failed = [r for r in grid if r.error is not None]
    # An interrupted fit (Ctrl-C) returns without errors: every trial must have stopped
    # at its target or cap, or the run is incomplete and must not be reported.
    unfinished = [
        r
        for r in grid
        if r.error is None and not _finished(r.metrics or {}, stops[(r.config or {})["env"]])
    ]
    if unfinished:
        raise BenchmarkError(
            f"{len(unfinished)} trial(s) stopped before their target or cap (interrupted?): "
            + ", ".join(str(r.path) for r in unfinished)
        )
    if failed:
        lines = [f"{r.path}: {type(r.error).__name__}: {r.error}" for r in failed]
        raise BenchmarkError(
            f"{len(failed)} trial(s) failed; no results are reported:\n  " + "\n  ".join(lines)
        )
    return wall


def read_runs(folder: Path, algorithm: str) -> list[tuple[str, str, Any, RunResult]]:
    """Every trial of an experiment folder as (env, arm, trial, RunResult); steps to T unset."""
    from rllib_privacy.errors import PrivacyConfigError
    from rllib_privacy.plotting import load_trials

    try:
        trials = load_trials([folder])
    except PrivacyConfigError as e:  # no trial folders: an interrupted run
        raise BenchmarkError(str(e)) from None
    out = []
    for trial in trials:
        rows = list(trial.rows)
        config = trial.config or {}
        last = rows[-1] if rows else {}
        run = RunResult(
            seed=int(config.get("seed") or 0),
            steps_to_target=INF,
            env_steps=_int_or_zero(last.get(STEPS_KEY)),
            final_return=_float(last.get(RETURN_KEY)),
            iterations=len(rows),
            wall_s=_float(last.get("time_total_s")),
            path=str(trial.path),
            epsilon_spent=_float(last.get(EPSILON_KEY)),
            delta_spent=_float(last.get(DELTA_KEY)),
            releases=_float(last.get(RELEASES_KEY)),
            answered=_float(last.get(ANSWERED_KEY)),
            sharing_at_end=_float(last.get(SHARING_KEY)),
            stopped_at=_float(last.get(STOPPED_AT_KEY)),
            epsilon_basic=_float(last.get(EPSILON_BASIC_KEY)),
            delta_basic=_float(last.get(DELTA_BASIC_KEY)),
            asked=_float(last.get(ASKED_KEY)),
            cached=_float(last.get(CACHED_KEY)),
        )
        arm = "teacher" if algorithm == "teacher" else arm_of(algorithm, config)
        out.append((str(config.get("env")), arm, trial, run))
    if not out:
        raise BenchmarkError(f"no trial results under {folder}")
    return out


def with_steps_to_target(
    trial: Any, run: RunResult, target: float, lower: float, cap: float = INF
) -> RunResult:
    """``run`` with steps to T and to T₂ from the trial's results; beyond ``cap`` = ∞."""
    rows = trial.rows
    steps = [_float(r.get(STEPS_KEY)) for r in rows]
    returns = [_float(r.get(RETURN_KEY)) for r in rows]
    to_target = steps_to_threshold(steps, returns, target)
    to_lower = steps_to_threshold(steps, returns, lower)
    return dataclasses.replace(
        run,
        steps_to_target=to_target if to_target <= cap else INF,
        steps_to_lower=to_lower if to_lower <= cap else INF,
    )


def _int_or_zero(value: Any) -> int:
    number = _float(value)
    return int(number) if math.isfinite(number) else 0


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


# --------------------------------------------------------------------------------------
# Sample efficiency.
# --------------------------------------------------------------------------------------


def run_sample_efficiency(args: argparse.Namespace, storage: Path) -> list[TaskResult]:
    """Teachers (one per task, in parallel), then the students of every task together."""
    student_base = load_yaml_config(args.student_config)
    teacher_base = load_yaml_config(args.teacher_config)
    ppo, kickstart = split_student_config(student_base)
    teacher_ppo, _ = split_student_config(teacher_base)
    if args.quick:
        ppo.update(QUICK_PPO)
        teacher_ppo.update(QUICK_PPO)
    batch = int(ppo.get("train_batch_size_per_learner", 4000))
    tasks = [TASKS[name] for name in args.tasks]
    targets = {t.env: _target(args, t) for t in tasks}
    lowers = {t.env: t.lower for t in tasks}

    # Teachers: plain PPO (64, 64) with the teacher YAML's settings, one fixed seed.
    _, teacher_space = arm_config(
        ARMS["no-kickstart"],
        ppo=teacher_ppo,
        kickstart={},
        env=tasks[0].env,
        teacher_checkpoint="",
        smoothing=args.smoothing,
    )
    teacher_space["seed"] = args.teacher_seed
    print(f"[teachers] {', '.join(t.env for t in tasks)}: PPO until T or {args.teacher_cap} steps")
    teacher_wall = _run_or_reuse(
        args if not args.reuse_teachers else argparse.Namespace(analyze_only=True),
        "PPO",
        teacher_space,
        [{"env": t.env} for t in tasks],
        seeds=None,
        stops={t.env: (targets[t.env], args.teacher_cap) for t in tasks},
        storage_path=storage,
        name="teachers",
        checkpoint_at_end=True,
        verbose=args.tune_verbose,
    )
    teachers: dict[str, tuple[Any, RunResult]] = {}
    for env, _, trial, run in read_runs(storage / "teachers", "teacher"):
        if env not in targets:  # --analyze-only on a folder with more tasks
            continue
        teachers[env] = (trial, with_steps_to_target(trial, run, targets[env], lowers[env]))
    for task in tasks:
        teacher = teachers[task.env][1]
        reached = (
            f"reached at {format_steps(teacher.steps_to_target)} steps"
            if math.isfinite(teacher.steps_to_target)
            else "not reached"
        )
        print(
            f"[teachers] {task.env}: T={format_number(targets[task.env])} {reached} "
            f"(final return {teacher.final_return:.1f} after {teacher.env_steps} steps)",
            flush=True,
        )

    # Students: KickstartPPO arms in one Tuner, the plain-PPO arm in another.
    seeds = [args.seed + k for k in range(args.seeds)]
    caps = {
        t.env: student_cap(
            teachers[t.env][1].steps_to_target,
            factor=args.student_cap_factor,
            cap=args.cap,
            batch=batch,
        )
        for t in tasks
    }
    stops = {t.env: (targets[t.env], caps[t.env]) for t in tasks}
    print(
        f"[students] {len(tasks)} task(s) × {len(args.arms)} arms × {len(seeds)} seeds; "
        "step caps " + ", ".join(f"{t.env} {caps[t.env]}" for t in tasks),
        flush=True,
    )
    student_wall = 0.0
    for algorithm in ("KickstartPPO", "PPO"):
        arms = [ARMS[a] for a in args.arms if ARMS[a].algorithm == algorithm]
        if not arms:
            continue
        # The base has no arm's overrides: each point sets every key any arm overrides (the
        # YAML's value where its arm does not), so no arm inherits another's settings.
        _, base = arm_config(
            Arm("base", algorithm, {}, ""),
            ppo=ppo,
            kickstart=kickstart,
            env=tasks[0].env,
            teacher_checkpoint=teachers[tasks[0].env][1].path,
            smoothing=args.smoothing,
        )
        varied = {key for arm in arms for key in arm.overrides}
        points = []
        for task in tasks:
            for arm in arms:
                if arm.tasks is not None and task.name not in arm.tasks:
                    continue
                point = {"env": task.env, **{key: base[key] for key in varied}, **arm.overrides}
                if algorithm == "KickstartPPO":
                    point["teacher_checkpoint"] = teachers[task.env][1].path
                points.append(point)
        student_wall += _run_or_reuse(
            args,
            algorithm,
            base,
            points,
            seeds=seeds,
            stops=stops,
            storage_path=storage,
            name=f"students_{algorithm}",
            checkpoint_at_end=False,
            verbose=args.tune_verbose,
        )
        print(f"[students] {algorithm} done ({student_wall:.0f} s so far)", flush=True)
    teacher_wall, student_wall = _record_run(args, storage, teacher_wall, student_wall)
    by_task_arm: dict[tuple[str, str], list[tuple[Any, RunResult]]] = {}
    # students_<algorithm> folders of this run, plus any students_<algorithm>_<suffix> an
    # earlier, interrupted run left (linked in for --analyze-only).
    for folder, algorithm in student_folders(storage):
        try:
            runs = read_runs(folder, algorithm)
        except BenchmarkError as e:
            if not args.analyze_only:
                raise
            print(f"[students] note: {e}; left out", flush=True)
            continue
        for env, arm, trial, run in runs:
            if env not in targets:
                continue
            # The cap also censors a linked-in trial that ran with a longer cap.
            run = with_steps_to_target(trial, run, targets[env], lowers[env], caps[env])
            if not math.isfinite(run.steps_to_target) and run.env_steps < caps[env]:
                # Only an --analyze-only of an interrupted run gets here: a trial that
                # neither reached T nor its cap. Counted as not reached, and marked.
                run = dataclasses.replace(run, unfinished=True)
            by_task_arm.setdefault((env, arm), []).append((trial, run))

    results = []
    for task in tasks:
        teacher_trial, teacher = teachers[task.env]
        arm_results = []
        curves_input = [("teacher (64, 64)", [teacher_trial])]
        for arm_name in args.arms:
            pairs = sorted(by_task_arm.get((task.env, arm_name), []), key=lambda p: p[1].seed)
            arm_results.append(ArmResult(arm_name, [run for _, run in pairs], caps[task.env]))
            curves_input.append((arm_name, [trial for trial, _ in pairs]))
        plot = None
        if args.plot_dir is not None:
            plot = str(draw_plot(task, curves_input, targets[task.env], args.plot_dir))
        result = TaskResult(
            task=_with_target(task, targets[task.env]),
            teacher=teacher,
            teacher_cap=args.teacher_cap,
            arms=arm_results,
            plot=plot,
            wall_s=teacher_wall + student_wall,
        )
        if args.plot_dir is not None:
            draw_tradeoff_plot(result, args.plot_dir)
        results.append(result)
    return results


def student_folders(storage: Path) -> list[tuple[Path, str]]:
    """(folder, trainable) of every ``students_<KickstartPPO|PPO>[_suffix]`` experiment folder."""
    out = []
    for folder in sorted(storage.glob("students_*")):
        algorithm = folder.name.removeprefix("students_").split("_", 1)[0]
        if folder.is_dir() and algorithm in ("KickstartPPO", "PPO"):
            out.append((folder, algorithm))
    return out


def _run_or_reuse(args: argparse.Namespace, *run_args: Any, **kwargs: Any) -> float:
    """``run_tuner``, or nothing with ``--analyze-only`` (the folders exist; wall time NaN)."""
    if args.analyze_only:
        return math.nan
    return run_tuner(*run_args, **kwargs)


RUN_RECORD = "kickstart_benchmark_run.json"


def _record_run(
    args: argparse.Namespace, storage: Path, teacher_wall: float, student_wall: float
) -> tuple[float, float]:
    """Saves the training run's command and wall times beside its Tune folders.

    With ``--analyze-only`` it reads them back instead, so that RESULTS.md names the
    command that trained (and how long it took), not only the one that re-analyzed.
    """
    path = storage / RUN_RECORD
    if not args.analyze_only:
        record = {
            "command": args.command_line,
            "teachers_s": teacher_wall,
            "students_s": student_wall,
        }
        dump_json(path, record, indent=None)
        return teacher_wall, student_wall
    if not path.is_file():
        return math.nan, math.nan
    record = load_json(path)
    args.analyzed_by = args.command_line
    args.command_line = record["command"]
    args.run_note = record.get("note")  # e.g. how runs of several processes were combined
    return float(record["teachers_s"]), float(record["students_s"])


def _with_target(task: Task, target: float) -> Task:
    """``task`` with the target used in this run (its reason rewritten if overridden)."""
    if target == task.target:
        return task
    why = f"set by --targets/--quick (default {format_number(task.target)}: {task.why})"
    return dataclasses.replace(task, target=target, why=why)


def _target(args: argparse.Namespace, task: Task) -> float:
    override = (args.targets or {}).get(task.name)
    return float(override) if override is not None else task.target


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


# --------------------------------------------------------------------------------------
# Overhead.
# --------------------------------------------------------------------------------------


class _TimedTeacher:
    """Wraps a TeacherClient's methods in place and adds up the seconds spent in them."""

    def __init__(self, client: Any) -> None:
        self.seconds = {"answer": 0.0, "rollout": 0.0}
        self.calls = {"answer": 0, "rollout": 0}
        for method, bucket in (
            ("answer", "answer"),
            ("start_rollout", "rollout"),
            ("stats", "rollout"),
        ):
            setattr(client, method, self._timed(getattr(client, method), bucket))

    def _timed(self, fn: Callable[..., Any], bucket: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[bucket] += time.perf_counter() - start
                self.calls[bucket] += 1

        return call

    def take(self) -> tuple[float, float, int]:
        """(answer s, rollout+stats s, answer calls) since the last take; resets."""
        out = (self.seconds["answer"], self.seconds["rollout"], self.calls["answer"])
        self.seconds = {"answer": 0.0, "rollout": 0.0}
        self.calls = {"answer": 0, "rollout": 0}
        return out


def run_overhead(args: argparse.Namespace, teacher_checkpoint: str | None) -> OverheadResult:
    """KickstartPPO (Dirichlet) vs PPO seconds per iteration, alternating, after a warm-up."""
    student_base = load_yaml_config(args.student_config)
    ppo, kickstart = split_student_config(student_base)
    if args.quick:
        ppo.update(QUICK_PPO)
    source = "this run's CartPole teacher"
    if teacher_checkpoint is None:
        teacher_checkpoint = _quick_teacher(args)
        source = "a (64, 64) PPO teacher trained for one iteration (weights do not change cost)"
    # Budgets lifted: the teacher answers every measured iteration (the costly case).
    kickstart = {
        **kickstart,
        "teacher_epsilon_budget": INF,
        # rdp (the default composition) converts ε at this δ, which must stay below 1.
        "teacher_delta_budget": 0.5
        if kickstart.get("teacher_composition", "rdp") == "rdp"
        else 1.0,
        "teacher_seed": args.seed,
    }
    algos = {}
    for arm_name in ("privacy-aware", "no-kickstart"):
        config, _ = arm_config(
            ARMS[arm_name],
            ppo=ppo,
            kickstart=kickstart,
            env=TASKS["cartpole"].env,
            teacher_checkpoint=teacher_checkpoint,
            smoothing=args.smoothing,
        )
        config.debugging(seed=args.seed)
        algos[arm_name] = config.build_algo()
    timer = _TimedTeacher(algos["privacy-aware"]._teacher)
    times: dict[str, list[float]] = {"privacy-aware": [], "no-kickstart": []}
    answer_s: list[float] = []
    rollout_s: list[float] = []
    sharing: list[float] = []
    try:
        total = args.overhead_warmup + args.overhead_iterations
        progress = Progress(total)
        for i in range(total):
            # ABBA: alternate which one goes first so that slow drift cancels.
            order = ("privacy-aware", "no-kickstart")
            order = order if i % 2 == 0 else order[::-1]
            for name in order:
                start = time.perf_counter()
                result = algos[name].train()
                elapsed = time.perf_counter() - start
                if i < args.overhead_warmup:
                    continue
                times[name].append(elapsed)
                if name == "privacy-aware":
                    answer, rollout, calls = timer.take()
                    if calls == 0:
                        raise BenchmarkError(
                            "overhead: the learner did not call the wrapped teacher client; "
                            "the teacher time breakdown would be wrong"
                        )
                    answer_s.append(answer)
                    rollout_s.append(rollout)
                    sharing.append(float(result.get("teacher_sharing", math.nan)))
            if i < args.overhead_warmup:
                timer.take()
            progress.advance(
                "overhead iteration" + (" (warm-up)" if i < args.overhead_warmup else "")
            )
    finally:
        for algo in algos.values():
            algo.stop()
    return OverheadResult(
        kickstart_s=times["privacy-aware"],
        ppo_s=times["no-kickstart"],
        teacher_answer_s=answer_s,
        teacher_rollout_s=rollout_s,
        warmup=args.overhead_warmup,
        batch=int(ppo.get("train_batch_size_per_learner", 4000)),
        sharing=sharing,
        teacher_source=source,
    )


def _quick_teacher(args: argparse.Namespace) -> str:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    config = (
        PPOConfig()
        .environment(TASKS["cartpole"].env)
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[64, 64]))
        .debugging(seed=args.teacher_seed, log_level="ERROR")
    )
    algo = config.build_algo()
    try:
        algo.train()
        path = Path(tempfile.mkdtemp(prefix="kickstart_overhead_teacher_")) / "checkpoint"
        algo.save_to_path(str(path))
    finally:
        algo.stop()
    return str(path)


# --------------------------------------------------------------------------------------
# Formatting.
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
        is_kickstart = ARMS[arm.arm].algorithm == "KickstartPPO" if arm.arm in ARMS else False
        private = is_kickstart and ARMS[arm.arm].overrides.get("teacher_mechanism") == "dirichlet"
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
                else ("∞ (no privacy)" if is_kickstart else "—"),
                format_sci(known_median(r.delta_spent for r in arm.runs)) if private else "—",
                format_steps(known_median(r.answered for r in arm.runs)) if is_kickstart else "—",
                stopped_text if private else "—",
            ]
        )
    return markdown_table(header, rows)


def lower_table(result: TaskResult) -> str:
    """Per arm: steps to the lower bar T₂ and the teacher/student speed-up there."""
    teacher = result.teacher.steps_to_lower
    rows = []
    for arm in result.arms:
        steps = arm.lower_steps
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
            "reached T₂",
            "median steps to T₂",
            "min–max",
            "teacher/student (median)",
            "per-seed teacher/student",
        ],
        rows,
    )


def _is_private(arm_name: str) -> bool:
    arm = ARMS.get(arm_name)
    return arm is not None and arm.overrides.get("teacher_mechanism") == "dirichlet"


def tradeoff_rows(result: TaskResult) -> list[dict[str, Any]]:
    """Per arm: medians of the final ε (RDP and basic composition) and the speed-up at T₂."""
    rows = []
    for arm in result.arms:
        runs = arm.runs
        rows.append(
            {
                "arm": arm.arm,
                "private": _is_private(arm.arm),
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


def overhead_table(result: OverheadResult) -> str:
    """Median (min-max) seconds per iteration and the ratio."""
    rows = [
        [
            "KickstartPPO (Dirichlet teacher)",
            str(len(result.kickstart_s)),
            f"{result.kickstart_median:.2f}",
            f"{min(result.kickstart_s):.2f} – {max(result.kickstart_s):.2f}",
            f"{result.ratio:.3f}×",
        ],
        [
            "PPO (no teacher)",
            str(len(result.ppo_s)),
            f"{result.ppo_median:.2f}",
            f"{min(result.ppo_s):.2f} – {max(result.ppo_s):.2f}",
            "1×",
        ],
    ]
    return markdown_table(
        ["algorithm", "iterations", "median s/iteration", "min – max", "ratio"], rows
    )


def overhead_breakdown(result: OverheadResult) -> str:
    """Teacher time per KickstartPPO iteration (median), and what is left for the rest."""
    answer = statistics.median(result.teacher_answer_s)
    rollout = statistics.median(result.teacher_rollout_s)
    extra = result.kickstart_median - result.ppo_median
    return (
        f"Per KickstartPPO iteration (medians): waiting for the teacher's answers (actor call "
        f"incl. the Dirichlet draws for {result.batch} states) {answer * 1000:.0f} ms; rollout "
        f"start + stats (k decay, budget check, (ε, δ) for the new k) {rollout * 1000:.0f} ms; "
        f"together {(answer + rollout) * 1000:.0f} ms. Median KickstartPPO − median PPO: "
        f"{extra * 1000:+.0f} ms (besides the teacher: the kickstart term in every SGD step, "
        "the extra batch columns, and machine noise)."
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
        lower_table(result),
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


def _run_lines(args: argparse.Namespace, machine: Mapping[str, Any], date: str) -> list[str]:
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
            *_run_lines(args, machine, date),
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
        parts["overhead"] = "\n".join(
            [
                "### Overhead: seconds per training iteration",
                "",
                *_run_lines(args, machine, date),
                f"- CartPole-v1, batch {overhead.batch}, same seed, model size, minibatches "
                "and epochs; the two algorithms were built in one process and trained "
                f"alternately (ABBA order), {overhead.warmup} warm-up iteration(s) each not "
                f"counted; teacher: {overhead.teacher_source}, budgets lifted so that it "
                f"answered in {sum(1 for v in overhead.sharing if v == 1.0)}/"
                f"{len(overhead.sharing)} measured iterations.",
                f"- Target ≤ 1.10×: **{'met' if overhead.ratio <= 1.10 else 'missed'}** "
                f"({overhead.ratio:.3f}×).",
                "",
                overhead_table(overhead),
                "",
                overhead_breakdown(overhead),
                "",
                "Per round (the two iterations ran back to back), KickstartPPO ÷ PPO: "
                + ", ".join(f"{r:.2f}" for r in overhead.paired_ratios)
                + f" (median {statistics.median(overhead.paired_ratios):.2f}; KickstartPPO "
                f"slower in {sum(r > 1 for r in overhead.paired_ratios)} of "
                f"{len(overhead.paired_ratios)} rounds).",
            ]
        )
    return parts


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


#: This benchmark's RESULTS.md section: one part per task and ``overhead``, each with its
#: own markers, so runs of single tasks add up instead of overwriting each other; a new part
#: takes its place in this order.
RESULTS = ResultsSection(
    "kickstart",
    title="## Privacy-preserving kickstarting (`benchmarks/kickstart.py`)",
    parts=(*TASKS, "overhead"),
)


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
        out["overhead"] = {**dataclasses.asdict(overhead), "ratio": overhead.ratio}
    return jsonable(out)


# --------------------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------------------


def _csv(choices: Sequence[str], what: str) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}")
        bad = [item for item in items if item not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {bad}; choose from {', '.join(choices)}"
            )
        return list(dict.fromkeys(items))

    return parse


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


def _bounded_number(convert: Callable[[str], float], *, low: float, strict: bool) -> Any:
    """argparse type: a finite number ≥ ``low`` (> ``low`` when ``strict``)."""
    relation = ">" if strict else ">="

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(
                f"expected a finite number {relation} {low}, got {text!r}"
            )
        return value

    return parse


_non_negative_int = _bounded_number(int, low=0, strict=False)
_positive_float = _bounded_number(float, low=0.0, strict=True)


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
    g = parser.add_argument_group("sample efficiency")
    g.add_argument(
        "--tasks",
        type=_csv(tuple(TASKS), "tasks"),
        default=list(CLASSIC),
        help=f"comma-separated tasks ({', '.join(TASKS)})",
    )
    g.add_argument(
        "--arms",
        type=_csv(tuple(ARMS), "arms"),
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
        help="Tune storage folder [a new folder under the system temp dir; kept]",
    )
    g.add_argument(
        "--plot-dir",
        type=Path,
        default=None,
        help="where kickstart_<task>.png go [benchmarks/ with --write-results, else the "
        "storage folder]",
    )
    o = parser.add_argument_group("overhead")
    o.add_argument("--no-overhead", action="store_true", help="skip the overhead measurement")
    o.add_argument("--overhead-only", action="store_true", help="run only the overhead measurement")
    o.add_argument(
        "--overhead-warmup", type=_non_negative_int, default=None, help="warm-up iterations [1]"
    )
    o.add_argument(
        "--overhead-iterations",
        type=positive_int,
        default=None,
        help="measured iterations per algorithm [6]",
    )
    r = parser.add_argument_group("run and output")
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
    return parser


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
        args.arms = [
            name
            for name, arm in ARMS.items()
            if arm.tasks is None or any(task in arm.tasks for task in args.tasks)
        ]
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
