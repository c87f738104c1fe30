"""How the PGC-A3C benchmark runs: every trial variant in one Tuner, and the speed comparison."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import log_algorithms_into_a_temporary_folder

from pgc_a3c_bench.documents import write_document
from pgc_a3c_bench.plan import VARIANT_KEY, load_base_config, strip_variant
from pgc_a3c_bench.results import SpeedResult, TrialRecord, TrialRecorder, fleet_ratios


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


def _speed_setups(base: dict[str, Any]) -> list[tuple[str, dict[str, Any], type | None]]:
    """(label, config keys, EnvRunner class or None) of each speed setting of ``base``."""
    from rllib_privacy.algorithms.ldp_a3c.reference_env_runner import (
        RLlibSamplingLDPA3CEnvRunner,
    )

    fleet = int(base.get("agents_per_env_runner", 1) or 1)
    request = int(base.get("aggregator_submissions_per_request", fleet if fleet > 1 else 1) or 1)
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
    return setups


def _measure_speed(
    args: argparse.Namespace,
    base: dict[str, Any],
    setup: tuple[str, dict[str, Any], type | None],
    count: int,
) -> SpeedResult:
    """Submissions/s of one setting with ``count`` remote runners, after a warm-up."""
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig

    label, training, runner_cls = setup
    iteration = max(1, min(args.speed_iteration, args.speed_submissions))
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
    log_algorithms_into_a_temporary_folder("pgc_a3c_speed_")
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
    return SpeedResult(
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


def run_speed(args: argparse.Namespace) -> list[SpeedResult]:
    """Submissions/s of the quick start with its fleet, with one agent per runner, and of
    the reference runner, for each number of remote runners (same mechanism and ε)."""
    base = load_base_config(args.tuned_config)
    setups = _speed_setups(base)
    out: list[SpeedResult] = []
    for count in args.runner_counts:
        for setup in setups:
            speed = _measure_speed(args, base, setup, count)
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
