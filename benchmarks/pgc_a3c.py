#!/usr/bin/env python
"""PGC-A3C benchmark: sample efficiency (Ono & Takahashi, Tables 1-3) and submission speed.

Sample efficiency: for every mechanism and ε, ``--trials`` independent LDPA3C runs (one
Tune trial each, different seeds) go until their first success time FST (the first n with
μ_n ≥ 195, result key ``fst``) or until ``--cap`` submissions. ε = ∞ (the non-private
baseline) runs once, with the Laplace base config. Reported per setting: median FST (∞ if
half or more of the trials failed), success ratio within the cap, and the AUC of the
success-ratio curve relative to ε = ∞, next to the paper's values (which are over 90,000
submissions and 20 trials).

Speed (``--speed`` / ``--speed-only``): submissions per second of the quick-start config
with 1 and 2 remote EnvRunners, for LDPA3CEnvRunner and for the plain-RLlib reference
runner (RLlibSamplingLDPA3CEnvRunner), in the same run; the ratio is the result.

Examples::

    python benchmarks/pgc_a3c.py --help
    python benchmarks/pgc_a3c.py --trials 20 --cap 90000 --speed --write-results
    python benchmarks/pgc_a3c.py --preset paper --write-results --json /tmp/pgc_a3c.json
    python benchmarks/pgc_a3c.py --speed-only --runner-counts 1,2
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS_MD = REPO_ROOT / "benchmarks" / "RESULTS.md"
MECHANISMS = ("laplace", "prs")
PRESETS = ("tuned", "paper")
INF = math.inf

#: Submissions within which the paper counts a success (its FST cap), and its trials.
PAPER_CAP = 90_000
PAPER_TRIALS = 20
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

SECTION_START = "<!-- pgc_a3c:start -->"
SECTION_END = "<!-- pgc_a3c:end -->"


class BenchmarkError(RuntimeError):
    """A benchmark run that must not be reported (a trial failed, a bad input)."""


# --------------------------------------------------------------------------------------
# Statistics (pure; unit-tested in tests/test_benchmark_pgc_a3c.py).
# --------------------------------------------------------------------------------------


def censor(fsts: Iterable[float], cap: float) -> list[float]:
    """FSTs with every value above ``cap`` (or missing, None) replaced by ∞."""
    return [INF if f is None or not f <= cap else float(f) for f in fsts]


def median_fst(fsts: Sequence[float]) -> float:
    """Median first success time; failed trials (∞) sort last.

    The result is ∞ when half or more of the trials failed (the middle value, or one of
    the two middle values, is ∞) and NaN for an empty list.
    """
    if not fsts:
        return math.nan
    ordered = sorted(float(f) for f in fsts)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    low, high = ordered[mid - 1], ordered[mid]
    return INF if math.isinf(high) else (low + high) / 2.0


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
# Settings and results.
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Setting:
    """One row of the tables: a mechanism at one ε (``none``/∞ = non-private)."""

    mechanism: str
    epsilon: float

    @property
    def key(self) -> tuple[str, float]:
        return (self.mechanism, self.epsilon)

    @property
    def label(self) -> str:
        if self.mechanism == "none":
            return "non-private (ε=∞)"
        return f"{self.mechanism} ε={format_number(self.epsilon)}"


@dataclasses.dataclass
class TrialResult:
    """One trial: its seed, FST (∞ if none) and how far it ran."""

    seed: int
    fst: float
    submissions: int
    env_steps: int
    wall_s: float
    trial_id: str
    diverged: bool = False


@dataclasses.dataclass
class SettingResult:
    """All trials of one setting plus the statistics over them."""

    setting: Setting
    trials: list[TrialResult]
    cap: int
    median_fst: float = math.nan
    success_ratio: float = math.nan
    auc: float = math.nan
    relative_auc: float = math.nan

    @property
    def fsts(self) -> list[float]:
        return censor((t.fst for t in self.trials), self.cap)


@dataclasses.dataclass
class PresetResult:
    """The sample-efficiency part for one preset (tuned or paper settings)."""

    preset: str
    cap: int
    trials_per_setting: int
    base_configs: dict[str, dict[str, Any]]
    config_sources: dict[str, str]
    settings: list[SettingResult]
    wall_s: float
    command: str
    machine: dict[str, Any]
    date: str


@dataclasses.dataclass
class SpeedResult:
    """Throughput of one EnvRunner class with one number of remote runners."""

    runner: str
    num_env_runners: int
    cpus_per_runner: float
    num_envs_per_env_runner: int
    submissions_per_request: int
    submissions: int
    env_steps: int
    wall_s: float

    @property
    def submissions_per_s(self) -> float:
        return self.submissions / self.wall_s if self.wall_s > 0 else math.nan

    @property
    def env_steps_per_s(self) -> float:
        return self.env_steps / self.wall_s if self.wall_s > 0 else math.nan

    @property
    def mean_episode_length(self) -> float:
        return self.env_steps / self.submissions if self.submissions else math.nan


def compute_statistics(results: list[SettingResult], baseline_key: tuple[str, float]) -> None:
    """Fills in every setting's median FST, success ratio and (relative) AUC."""
    baseline = next((r for r in results if r.setting.key == baseline_key), None)
    for result in results:
        fsts = result.fsts
        result.median_fst = median_fst(fsts)
        result.success_ratio = success_ratio(fsts, result.cap)
        result.auc = success_auc(fsts, result.cap)
        if baseline is not None:
            result.relative_auc = relative_auc(fsts, baseline.fsts, result.cap)


# --------------------------------------------------------------------------------------
# Configs.
# --------------------------------------------------------------------------------------


def load_base_config(path: str) -> dict[str, Any]:
    """The first experiment's ``config:`` of a YAML experiment file (env folded in).

    Uses ``rllib_privacy.experiments.load_experiments`` (validation, legacy-key
    translation) when the package has it, else plain ``yaml.safe_load``.
    """
    if not os.path.isfile(path) and not os.path.isabs(path) and (REPO_ROOT / path).is_file():
        path = str(REPO_ROOT / path)
    if not os.path.isfile(path):
        raise BenchmarkError(f"experiment file {path!r} not found")
    try:
        from rllib_privacy.experiments import load_experiments
    except ImportError:
        load_experiments = None
    if load_experiments is not None:
        try:
            experiments = load_experiments(path, has_gpus=False).experiments
        except Exception as e:  # ExperimentFileError and friends: report, don't trace.
            raise BenchmarkError(f"cannot load {path}: {e}") from None
        config = dict(experiments[0].param_space)
    else:
        import yaml

        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
        if not isinstance(data, dict) or not data:
            raise BenchmarkError(f"{path}: expected a mapping of experiment names to experiments")
        experiment = next(iter(data.values()))
        config = dict(experiment.get("config") or {})
        if "env" in experiment and "env" not in config:
            config["env"] = experiment["env"]
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


def trial_param_space(
    base: Mapping[str, Any],
    *,
    mechanism: str,
    epsilons: Sequence[float],
    seeds: Sequence[int],
    submissions_per_iteration: int,
) -> dict[str, Any]:
    """Tune param space: ``base`` with mechanism, an ε × seed grid, and 0 remote runners."""
    from ray import tune

    space = dict(base)
    space.update(
        mechanism=mechanism,
        epsilon=tune.grid_search([float(e) for e in epsilons]),
        seed=tune.grid_search([int(s) for s in seeds]),
        num_env_runners=0,
        submissions_per_iteration=int(submissions_per_iteration),
    )
    return space


# --------------------------------------------------------------------------------------
# Sample efficiency (Tune).
# --------------------------------------------------------------------------------------


#: What LDPA3C raises when θ or a gradient has become non-finite (a learning outcome of
#: unstable settings, e.g. the paper's unclipped non-private baseline, not a crash).
DIVERGENCE_MESSAGE = "GradientSubmission.gradient must be finite"


def is_divergence(error: BaseException) -> bool:
    """True if a trial failed because training diverged (non-finite gradient)."""
    return DIVERGENCE_MESSAGE in str(error)


def _make_stopper(cap: int) -> Any:
    from ray import tune

    class FSTOrCapStopper(tune.Stopper):
        """Stops a trial at its first success (``fst`` reported) or at ``cap``."""

        def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
            return result.get("fst") is not None or result.get("submissions", 0) >= cap

        def stop_all(self) -> bool:
            return False

    return FSTOrCapStopper()


def run_tune_group(
    param_space: dict[str, Any],
    *,
    cap: int,
    storage_path: str,
    name: str,
    verbose: int,
) -> tuple[list[tuple[float, TrialResult]], float]:
    """Runs one Tuner (an ε × seed grid); returns (ε, trial) pairs and the wall time.

    Raises:
        BenchmarkError: A trial errored or stopped before its FST or the cap.

    """
    from ray import tune

    tuner = tune.Tuner(
        "LDPA3C",
        param_space=param_space,
        tune_config=tune.TuneConfig(num_samples=1, reuse_actors=False),
        run_config=tune.RunConfig(
            name=name,
            stop=_make_stopper(cap),
            storage_path=storage_path,
            verbose=verbose,
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=False),
            failure_config=tune.FailureConfig(max_failures=0),
        ),
    )
    start = time.perf_counter()
    grid = tuner.fit()
    wall = time.perf_counter() - start
    failures = []
    out: list[tuple[float, TrialResult]] = []
    for result in grid:
        config = result.config or {}
        if config:
            where = f"{name}: mechanism={config.get('mechanism')} "
            where += f"epsilon={config.get('epsilon')} seed={config.get('seed')}"
        else:  # died before its first result: the trial directory names its parameters
            where = f"{name}: trial {os.path.basename(str(result.path or '?'))}"
        metrics = result.metrics or {}
        submissions = int(metrics.get("submissions", 0))
        fst = metrics.get("fst")
        diverged = result.error is not None and is_divergence(result.error) and bool(config)
        if result.error is not None and not diverged:
            failures.append(f"{where}: {type(result.error).__name__}: {result.error}")
            continue
        if diverged:
            print(f"  note: {where} diverged (non-finite gradient): counted as failed")
        elif fst is None and submissions < cap:
            failures.append(
                f"{where}: stopped after {submissions} submissions without FST or reaching "
                f"the cap {cap}"
            )
            continue
        out.append(
            (
                float(config["epsilon"]),
                TrialResult(
                    seed=int(config["seed"]),
                    fst=INF if fst is None else float(fst),
                    submissions=submissions,
                    env_steps=int(metrics.get("num_env_steps_sampled_lifetime", 0)),
                    wall_s=float(metrics.get("time_total_s", math.nan)),
                    trial_id=str(metrics.get("trial_id", "")),
                    diverged=diverged,
                ),
            )
        )
    if failures:
        raise BenchmarkError(
            f"{len(failures)} trial(s) failed (the trial's traceback is above); no results "
            "are reported:\n  " + "\n  ".join(failures)
        )
    return out, wall


def run_sample_efficiency(args: argparse.Namespace, preset: str) -> PresetResult:
    """All settings of one preset: one Tuner per base config (mechanism)."""
    seeds = [args.seed + k for k in range(args.trials)]
    finite = [e for e in args.epsilons if math.isfinite(e)]
    with_baseline = any(math.isinf(e) for e in args.epsilons)
    spi = max(1, min(args.iteration_submissions, args.cap))
    base_configs: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    mechanisms = list(args.mechanisms)
    groups: list[tuple[str, list[float]]] = [(m, list(finite)) for m in mechanisms]
    if with_baseline:
        # ε = ∞ runs once, with the Laplace base config (no noise, no clipping).
        if "laplace" in mechanisms:
            groups[mechanisms.index("laplace")][1].append(INF)
        else:
            groups.append(("laplace", [INF]))
    for mechanism, _ in groups:
        if preset == "paper":
            base_configs[mechanism] = paper_base_config()
            sources[mechanism] = "LDPA3CConfig defaults (the paper's settings)"
        else:
            path = args.laplace_config if mechanism == "laplace" else args.prs_config
            base_configs[mechanism] = load_base_config(path)
            sources[mechanism] = path
    storage = args.storage_path or tempfile.mkdtemp(prefix="pgc_a3c_bench_")
    by_setting: dict[tuple[str, float], list[TrialResult]] = {}
    start = time.perf_counter()
    try:
        for mechanism, epsilons in groups:
            if not epsilons:
                continue
            space = trial_param_space(
                base_configs[mechanism],
                mechanism=mechanism,
                epsilons=epsilons,
                seeds=seeds,
                submissions_per_iteration=spi,
            )
            print(
                f"[{preset}] {mechanism}: ε ∈ {[format_number(e) for e in epsilons]} × "
                f"{len(seeds)} seeds = {len(epsilons) * len(seeds)} trials (cap {args.cap})...",
                flush=True,
            )
            pairs, wall = run_tune_group(
                space,
                cap=args.cap,
                storage_path=storage,
                name=f"pgc_a3c_{preset}_{mechanism}",
                verbose=args.tune_verbose,
            )
            print(f"[{preset}] {mechanism}: done in {wall:.0f} s", flush=True)
            for epsilon, trial in pairs:
                key = ("none", INF) if math.isinf(epsilon) else (mechanism, epsilon)
                by_setting.setdefault(key, []).append(trial)
    finally:
        if args.storage_path is None and not args.keep_tune_dir:
            shutil.rmtree(storage, ignore_errors=True)
    wall_total = time.perf_counter() - start
    results: list[SettingResult] = []
    for mechanism in mechanisms:
        for epsilon in finite:
            trials = by_setting.get((mechanism, epsilon), [])
            results.append(SettingResult(Setting(mechanism, epsilon), _by_seed(trials), args.cap))
    if with_baseline:
        trials = by_setting.get(("none", INF), [])
        results.append(SettingResult(Setting("none", INF), _by_seed(trials), args.cap))
    compute_statistics(results, baseline_key=("none", INF))
    return PresetResult(
        preset=preset,
        cap=args.cap,
        trials_per_setting=args.trials,
        base_configs=base_configs,
        config_sources=sources,
        settings=results,
        wall_s=wall_total,
        command=args.command_line,
        machine=machine_info(),
        date=now(),
    )


def _by_seed(trials: list[TrialResult]) -> list[TrialResult]:
    return sorted(trials, key=lambda t: t.seed)


# --------------------------------------------------------------------------------------
# Speed.
# --------------------------------------------------------------------------------------


def cpus_per_runner(total_cpus: float, num_runners: int) -> float:
    """CPUs to reserve per remote runner so that runners + the main process fit."""
    spare = total_cpus - 1.0 if total_cpus > 1.0 else total_cpus / 2.0
    return max(0.01, min(1.0, spare / max(1, num_runners)))


def run_speed(args: argparse.Namespace) -> list[SpeedResult]:
    """Submissions/s of the fast and the reference EnvRunner, 1..n remote runners."""
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
    from rllib_privacy.algorithms.ldp_a3c.reference_env_runner import (
        RLlibSamplingLDPA3CEnvRunner,
    )

    base = load_base_config(args.laplace_config)
    iteration = max(1, min(args.speed_iteration, args.speed_submissions))
    runners: list[tuple[str, type | None]] = [
        ("LDPA3CEnvRunner", None),
        ("RLlibSamplingLDPA3CEnvRunner (reference)", RLlibSamplingLDPA3CEnvRunner),
    ]
    out: list[SpeedResult] = []
    for count in args.runner_counts:
        for label, runner_cls in runners:
            cpus = args.cpus_per_runner or cpus_per_runner(args.num_cpus, count)
            config = LDPA3CConfig().update_from_dict(dict(base))
            config.env_runners(num_env_runners=count, num_cpus_per_env_runner=cpus)
            config.training(submissions_per_iteration=iteration)
            config.debugging(seed=args.seed, log_level="ERROR")
            if runner_cls is not None:
                # A plain runner: one environment, one episode and gradient per call.
                config.env_runners(env_runner_cls=runner_cls, num_envs_per_env_runner=1)
                config.training(submissions_per_request=1)
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
                submissions_per_request=int(config.submissions_per_request),
                submissions=int(result["submissions"]) - sub0,
                env_steps=int(result["num_env_steps_sampled_lifetime"]) - steps0,
                wall_s=wall,
            )
            print(
                f"[speed]   {speed.submissions_per_s:.1f} submissions/s, "
                f"{speed.env_steps_per_s:.0f} env steps/s, "
                f"mean episode length {speed.mean_episode_length:.1f}",
                flush=True,
            )
            out.append(speed)
    return out


# --------------------------------------------------------------------------------------
# Formatting.
# --------------------------------------------------------------------------------------


def format_number(value: float | None, digits: int = 1) -> str:
    """``∞`` for infinity, ``—`` for None/NaN, integers without decimals."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def format_ratio(value: float | None) -> str:
    """Two or three decimals; ``—`` for None/NaN."""
    if value is None or math.isnan(value):
        return "—"
    return f"{value:.3f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def sample_efficiency_table(result: PresetResult) -> str:
    """Tables 1-3 side by side with the paper's values."""
    header = [
        "setting",
        "trials",
        "median FST",
        "paper",
        f"success ≤ {result.cap}",
        f"paper (≤ {PAPER_CAP})",
        "rel. AUC",
        "paper",
        "wall s/trial",
    ]
    rows = []
    for r in result.settings:
        key = r.setting.key
        walls = [t.wall_s for t in r.trials if math.isfinite(t.wall_s)]
        diverged = sum(t.diverged for t in r.trials)
        rows.append(
            [
                r.setting.label,
                str(len(r.trials)) + (f" ({diverged} diverged)" if diverged else ""),
                format_number(r.median_fst),
                format_number(PAPER_MEDIAN_FST.get(key)),
                format_ratio(r.success_ratio),
                format_ratio(PAPER_SUCCESS_RATIO.get(key)),
                format_ratio(r.relative_auc),
                format_ratio(PAPER_RELATIVE_AUC.get(key)),
                format_number(statistics.mean(walls)) if walls else "—",
            ]
        )
    return markdown_table(header, rows)


def raw_fst_table(result: PresetResult) -> str:
    """Every trial's seed and FST (∞ = none within the cap)."""
    rows = []
    for r in result.settings:
        fsts = ", ".join(
            f"{t.seed}: {format_number(t.fst if t.fst <= result.cap else INF)}"
            + (" (diverged)" if t.diverged else "")
            for t in r.trials
        )
        rows.append([r.setting.label, fsts or "—"])
    return markdown_table(["setting", "seed: FST"], rows)


def speed_table(speeds: list[SpeedResult]) -> str:
    """Throughput per runner class and runner count, with fast/reference ratios."""
    header = [
        "EnvRunner",
        "remote runners",
        "CPU/runner",
        "envs/runner",
        "episodes/request",
        "submissions",
        "submissions/s",
        "env steps/s",
        "mean episode length",
        "fast/ref (subm./s)",
        "fast/ref (steps/s)",
    ]
    reference = {s.num_env_runners: s for s in speeds if "reference" in s.runner}
    rows = []
    for s in speeds:
        ref = reference.get(s.num_env_runners)
        is_fast = "reference" not in s.runner and ref is not None
        rows.append(
            [
                s.runner,
                str(s.num_env_runners),
                f"{s.cpus_per_runner:g}",
                str(s.num_envs_per_env_runner),
                str(s.submissions_per_request),
                str(s.submissions),
                f"{s.submissions_per_s:.1f}",
                f"{s.env_steps_per_s:.0f}",
                f"{s.mean_episode_length:.1f}",
                f"{s.submissions_per_s / ref.submissions_per_s:.1f}×" if is_fast else "",
                f"{s.env_steps_per_s / ref.env_steps_per_s:.1f}×" if is_fast else "",
            ]
        )
    return markdown_table(header, rows)


#: Base-config keys the benchmark sets itself, or boilerplate; not repeated in the notes.
_NOT_SHOWN_KEYS = frozenset(
    {
        "env",
        "mechanism",
        "epsilon",
        "seed",
        "num_env_runners",
        "submissions_per_iteration",
        "enable_rl_module_and_learner",
        "enable_env_runner_and_connector_v2",
        "framework",
    }
)


def preset_notes(result: PresetResult) -> str:
    """What was run, and how it differs from the paper's protocol."""
    lines = [
        f"- Preset `{result.preset}`; {result.trials_per_setting} trials per setting "
        f"(paper: {PAPER_TRIALS}); cap {result.cap} submissions (paper: {PAPER_CAP}). "
        "Success ratio and relative AUC are within our cap, the paper's within 90,000; "
        "a trial without FST within the cap counts as ∞, and so does a trial that diverged "
        "(θ or a gradient became non-finite; the run stops there).",
        "- Relative AUC: area under success(n) = fraction of trials with FST ≤ n over "
        "n ∈ [0, cap], divided by the same for ε = ∞.",
        "- ε = ∞ (non-private) runs once, with the Laplace base config and no noise.",
        f"- Sample-efficiency wall time: {result.wall_s:.0f} s in total.",
    ]
    for mechanism, source in result.config_sources.items():
        config = {
            k: v for k, v in result.base_configs[mechanism].items() if k not in _NOT_SHOWN_KEYS
        }
        lines.append(
            f"- Base config `{mechanism}` from {source} (keys set by the benchmark omitted): "
            f"`{json.dumps(config)}`"
        )
    lines.append(
        "- Per trial: `num_env_runners: 0` (one process per trial), `seed` = trial seed, "
        "`submissions_per_iteration` = min(--iteration-submissions, --cap); FST is exact."
    )
    return "\n".join(lines)


def machine_info() -> dict[str, Any]:
    """CPU count and model, RAM, Python/Ray/torch versions."""
    import ray
    import torch

    model = platform.processor() or "unknown"
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        match = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
        if match:
            model = match.group(1).strip()
    except OSError:
        pass
    ram_gib = math.nan
    try:
        meminfo = Path("/proc/meminfo").read_text()
        match = re.search(r"^MemTotal:\s*(\d+)\s*kB", meminfo, re.MULTILINE)
        if match:
            ram_gib = int(match.group(1)) / 2**20
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "nproc": usable,
        "cpu_model": model,
        "ram_gib": round(ram_gib, 1),
        "python": platform.python_version(),
        "ray": ray.__version__,
        "torch": torch.__version__,
        "platform": platform.platform(),
    }


def machine_line(info: Mapping[str, Any]) -> str:
    """One line for RESULTS.md."""
    return (
        f"{info['nproc']} CPUs ({info['cpu_model']}), {info['ram_gib']} GiB RAM; "
        f"Python {info['python']}, ray {info['ray']}, torch {info['torch']}"
    )


def now() -> str:
    """UTC time stamp, seconds precision."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def render_preset_section(result: PresetResult) -> str:
    """RESULTS.md block of one preset's sample-efficiency results."""
    return "\n".join(
        [
            f"### Sample efficiency, preset `{result.preset}`",
            "",
            f"- Command: `{result.command}`",
            f"- Machine: {machine_line(result.machine)}",
            f"- Date: {result.date}",
            preset_notes(result),
            "",
            sample_efficiency_table(result),
            "",
            "Raw per-trial FSTs (seed: FST):",
            "",
            raw_fst_table(result),
        ]
    )


def render_speed_section(speeds: list[SpeedResult], args: argparse.Namespace) -> str:
    """RESULTS.md block of the speed comparison."""
    return "\n".join(
        [
            "### Speed: submissions per second",
            "",
            f"- Command: `{args.command_line}`",
            f"- Machine: {machine_line(machine_info())}",
            f"- Date: {now()}",
            f"- Config: {args.laplace_config}; {args.speed_submissions} submissions measured "
            f"after one warm-up iteration of {min(args.speed_iteration, args.speed_submissions)}"
            " (iterations of the same size; wall time includes `Algorithm.train()`).",
            "- Reference = `RLlibSamplingLDPA3CEnvRunner`: RLlib's `sample(num_episodes=1)` and "
            "learner connector pipeline, one environment and one gradient per remote call; "
            "its actions are sampled from π (no α schedule), so episode lengths can differ: "
            "compare env steps/s too.",
            "",
            speed_table(speeds),
        ]
    )


def update_results_md(path: Path, parts: Mapping[str, str]) -> None:
    """Replaces this benchmark's parts in ``path``, keeping everything else intact.

    The whole benchmark lives between ``<!-- pgc_a3c:start -->`` and
    ``<!-- pgc_a3c:end -->``; inside, each part (a preset, speed) has its own
    ``<!-- pgc_a3c:PART:start/end -->`` markers, so a run replaces only what it ran.
    """
    if path.exists():
        text = path.read_text(encoding="utf-8")
    else:
        text = (
            "# Benchmark results\n\n"
            "Numbers written by the scripts in `benchmarks/`; each section records its "
            "command, machine and date.\n"
        )
    if SECTION_START not in text or SECTION_END not in text:
        text = text.rstrip("\n") + f"\n\n{SECTION_START}\n## PGC-A3C (`benchmarks/pgc_a3c.py`)\n"
        text += f"\n{SECTION_END}\n"
    head, rest = text.split(SECTION_START, 1)
    body, tail = rest.split(SECTION_END, 1)
    for name, content in parts.items():
        start, end = f"<!-- pgc_a3c:{name}:start -->", f"<!-- pgc_a3c:{name}:end -->"
        block = f"{start}\n{content.rstrip()}\n{end}"
        if start in body and end in body:
            before, after = body.split(start, 1)
            body = before + block + after.split(end, 1)[1]
        else:
            body = body.rstrip("\n") + f"\n\n{block}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{head}{SECTION_START}{body.rstrip()}\n{SECTION_END}{tail}", encoding="utf-8")


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def results_json(
    presets: list[PresetResult], speeds: list[SpeedResult], args: argparse.Namespace
) -> dict[str, Any]:
    """Everything measured, with ∞ written as the string ``"inf"``."""
    out: dict[str, Any] = {
        "command": args.command_line,
        "date": now(),
        "machine": machine_info(),
        "sample_efficiency": [],
        "speed": [],
    }
    for preset in presets:
        settings = []
        for r in preset.settings:
            settings.append(
                {
                    "mechanism": r.setting.mechanism,
                    "epsilon": r.setting.epsilon,
                    "median_fst": r.median_fst,
                    "success_ratio": r.success_ratio,
                    "auc": r.auc,
                    "relative_auc": r.relative_auc,
                    "paper": {
                        "median_fst": PAPER_MEDIAN_FST.get(r.setting.key),
                        "success_ratio": PAPER_SUCCESS_RATIO.get(r.setting.key),
                        "relative_auc": PAPER_RELATIVE_AUC.get(r.setting.key),
                    },
                    "trials": [dataclasses.asdict(t) for t in r.trials],
                }
            )
        out["sample_efficiency"].append(
            {
                "preset": preset.preset,
                "cap": preset.cap,
                "trials_per_setting": preset.trials_per_setting,
                "base_configs": preset.base_configs,
                "config_sources": preset.config_sources,
                "wall_s": preset.wall_s,
                "settings": settings,
            }
        )
    for s in speeds:
        out["speed"].append(
            {
                **dataclasses.asdict(s),
                "submissions_per_s": s.submissions_per_s,
                "env_steps_per_s": s.env_steps_per_s,
                "mean_episode_length": s.mean_episode_length,
            }
        )
    return _jsonable(out)


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


def _mechanism(text: str) -> str:
    if text not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {list(MECHANISMS)}, got {text!r}")
    return text


def _preset(text: str) -> str:
    if text not in PRESETS:
        raise ValueError(f"preset must be one of {list(PRESETS)}, got {text!r}")
    return text


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _default_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog="pgc_a3c.py",
        description=(
            "PGC-A3C (LDPA3C) benchmark. Sample efficiency: median first success time "
            "(FST), success ratio and relative AUC per mechanism and ε, next to Ono & "
            "Takahashi's Tables 1-3. Speed (--speed): submissions/s of LDPA3CEnvRunner vs. "
            "a plain-RLlib reference EnvRunner."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    g = parser.add_argument_group("sample efficiency")
    g.add_argument(
        "--mechanisms",
        type=_csv(_mechanism, "mechanisms"),
        default="laplace,prs",
        help="comma-separated mechanisms (laplace, prs)",
    )
    g.add_argument(
        "--epsilons",
        type=_csv(_epsilon, "epsilons"),
        default="1,2,5,10,inf",
        help="comma-separated ε values; 'inf' = the non-private baseline (run once)",
    )
    g.add_argument("--trials", type=_positive_int, default=5, help="trials (seeds) per setting")
    g.add_argument(
        "--cap",
        type=_positive_int,
        default=20_000,
        help="submissions per trial without success before it counts as failed (paper: 90000)",
    )
    g.add_argument(
        "--preset",
        type=_csv(_preset, "presets"),
        default="tuned",
        help=(
            "'tuned' = base configs from --laplace-config/--prs-config; 'paper' = "
            "LDPA3CConfig defaults (the paper's clip, |B|, lr 0.5, summed loss, argmax "
            "with the α schedule); 'tuned,paper' runs both"
        ),
    )
    g.add_argument(
        "--laplace-config",
        default="tuned_configs/ldp_a3c.yaml",
        help="YAML experiment file whose first experiment's config is the Laplace base "
        "config (also ε=∞ and the speed part)",
    )
    g.add_argument(
        "--prs-config",
        default="tuned_configs/ldp_a3c_prs.yaml",
        help="YAML experiment file whose first experiment's config is the PRS base config",
    )
    g.add_argument(
        "--iteration-submissions",
        type=_positive_int,
        default=500,
        help="submissions_per_iteration of each trial (coarse stop checks; FST is exact)",
    )
    g.add_argument("--seed", type=int, default=0, help="trial k uses seed SEED + k")
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
        type=_csv(_positive_int, "runner counts"),
        default="1,2",
        help="comma-separated numbers of remote EnvRunners",
    )
    s.add_argument(
        "--speed-submissions",
        type=_positive_int,
        default=2000,
        help="submissions measured per speed setting (after a warm-up iteration)",
    )
    s.add_argument(
        "--speed-iteration",
        type=_positive_int,
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
        default=_default_cpus(),
        help="CPUs for ray.init (one trial per CPU runs in parallel)",
    )
    o.add_argument(
        "--write-results",
        action="store_true",
        help=f"write this run's sections into {DEFAULT_RESULTS_MD.relative_to(REPO_ROOT)}",
    )
    o.add_argument(
        "--results-md", type=Path, default=DEFAULT_RESULTS_MD, help="the RESULTS.md to update"
    )
    o.add_argument("--json", type=Path, default=None, help="also write raw results as JSON")
    return parser


def _quiet() -> None:
    # Tune's legacy reporter honours verbose=0 (the new one prints a header box), and
    # its default TensorBoard/CSV/JSON loggers are not needed: results come from the
    # ResultGrid (they also warn about the ε = ∞ scalars).
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    for name in ("ray", "ray.rllib", "ray.tune"):
        logging.getLogger(name).setLevel(logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the requested parts, prints the tables, writes results; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    words = list(sys.argv[1:] if argv is None else argv)
    args.command_line = shlex.join(["python", "benchmarks/pgc_a3c.py", *words])
    if args.num_cpus < 1:
        parser.error("--num-cpus must be >= 1")
    run_speed_part = args.speed or args.speed_only
    _quiet()
    try:  # Fail fast, before Ray starts, on a missing or invalid experiment file.
        needed = {args.laplace_config} if run_speed_part else set()
        if not args.speed_only and "tuned" in args.preset:
            needed.add(args.laplace_config)
            if "prs" in args.mechanisms:
                needed.add(args.prs_config)
        for path in sorted(needed):
            load_base_config(path)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    import ray

    import rllib_privacy  # noqa: F401  (registers LDPA3C and the env)

    presets: list[PresetResult] = []
    speeds: list[SpeedResult] = []
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=args.tune_verbose > 0)
    try:
        if not args.speed_only:
            for preset in args.preset:
                result = run_sample_efficiency(args, preset)
                presets.append(result)
                print(f"\n## Sample efficiency, preset {preset}\n")
                print(sample_efficiency_table(result))
                print()
                print(preset_notes(result))
                print("\nRaw per-trial FSTs (seed: FST):\n")
                print(raw_fst_table(result), flush=True)
        if run_speed_part:
            speeds = run_speed(args)
            print("\n## Speed: submissions per second\n")
            print(speed_table(speeds), flush=True)
    except BenchmarkError as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
    finally:
        ray.shutdown()
    if args.write_results:
        parts = {p.preset: render_preset_section(p) for p in presets}
        if speeds:
            parts["speed"] = render_speed_section(speeds, args)
        update_results_md(args.results_md, parts)
        print(f"\nwrote {args.results_md}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results_json(presets, speeds, args), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
