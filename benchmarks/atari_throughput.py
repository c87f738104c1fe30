#!/usr/bin/env python
"""PPO's env steps per second on an Atari RAM YAML against the emulator's single-env rate.

The reference is what one core does with nothing but the game: one environment of the
YAML's id and ``env_config``, uniformly random actions, no learning (measured before and after
the training runs; the table uses their mean). Each variant then trains with
``rllib train -f CONFIG --config VARIANT --stop {"num_env_steps_sampled_lifetime": STEPS}``,
exactly as a user runs the YAML (Tune, checkpoints and all), and its rate is

    (env steps at the last iteration − at iteration W) / (time_total_s difference)

over the iterations after ``--warmup-iterations`` W (start-up excluded). The machine's speed
drifts (15-30% within minutes on the 2-core development host), so the emulator is measured
before the first run and after every run, the variants run ``--repeats`` times in turn, and
each run's ratio is to the mean of the emulator measurements just before and after it. The
table prints every run: both rates and their ratio, the median seconds per iteration spent
waiting for samples and in the learner (each iteration's own value, recovered from RLlib's
EMA-smoothed timers), and the 1-minute load average around the run: on a shared 2-core
machine a figure taken under load is not a figure.

Examples::

    python benchmarks/atari_throughput.py                        # the shipped AirRaid teacher
    python benchmarks/atari_throughput.py --write-results
    python benchmarks/atari_throughput.py --variant 'one runner=\
{"num_env_runners": 1, "num_cpus_per_env_runner": 1, "num_envs_per_env_runner": 4}'
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
    BenchmarkError,
    ResultsSection,
    command_line,
    load_average,
    load_experiment_config,
    machine_line,
    markdown_table,
    positive_int,
)

RESULTS = ResultsSection("atari_throughput")
DEFAULT_CONFIG = "tuned_configs/kickstart_teacher_airraid.yaml"
#: What was tried on the way to the shipped settings (``--variant`` adds more).
STANDARD_VARIANTS: dict[str, dict[str, Any]] = {
    "shipped YAML": {},
    # PipelinedPPO without the decoupled objective's extra forward pass per batch.
    "shipped YAML, pipeline_decoupled_objective: false": {"pipeline_decoupled_objective": False},
    "shipped YAML, run: PPO (RLlib's PPO step)": {"run": "PPO"},
    "RLlib's PPO defaults: 1 EnvRunner x 4 envs, sync vector env, minibatch 500": {
        "run": "PPO",
        "num_env_runners": 1,
        "num_cpus_per_env_runner": 1,
        "num_envs_per_env_runner": 4,
        "gym_env_vectorize_mode": "sync",
        "minibatch_size": 500,
    },
}
#: RLlib's timers are exponential moving averages with this coefficient
#: (``ray.rllib.utils.metrics.stats.ema``): reading k is (1 - c)·reading k-1 + c·value k.
TIMER_EMA_COEFF = 0.01


def per_iteration_values(readings: list[float], coeff: float = TIMER_EMA_COEFF) -> list[float]:
    """Each iteration's own timer value from RLlib's EMA readings (from the second on)."""
    pairs = zip(readings, readings[1:], strict=False)
    return [(now - (1.0 - coeff) * before) / coeff for before, now in pairs]


def emulator_rate(env_id: str, env_config: dict[str, Any], seconds: float) -> float:
    """Steps per second of one environment with random actions, in a fresh process."""
    code = (
        "import json, sys, time\n"
        "import gymnasium as gym\n"
        "import rllib_privacy  # registers the ALE RAM ids\n"
        "env_id, env_config, seconds = json.loads(sys.argv[1])\n"
        "env = gym.make(env_id, **env_config)\n"
        "env.reset(seed=0)\n"
        "env.action_space.seed(0)\n"
        "steps, start = 0, time.perf_counter()\n"
        "while time.perf_counter() - start < seconds:\n"
        "    *_, terminated, truncated, _ = env.step(env.action_space.sample())\n"
        "    steps += 1\n"
        "    if terminated or truncated:\n"
        "        env.reset()\n"
        "print(steps / (time.perf_counter() - start))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps([env_id, env_config, seconds])],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        raise BenchmarkError(f"emulator measurement failed: {proc.stderr[-1500:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def training_rate(
    config_file: Path, overrides: dict[str, Any], steps: int, warmup: int
) -> dict[str, Any]:
    """Train the YAML with ``overrides`` for ``steps`` env steps; its steady env steps/s.

    An override ``"run"`` names another algorithm: the YAML is copied with that ``run:``.
    """
    overrides = dict(overrides)
    run = overrides.pop("run", None)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="atari_throughput_") as storage:
        if run is not None:
            config_file = with_run(config_file, str(run), Path(storage))
        command = [
            "rllib",
            "train",
            "-f",
            str(config_file),
            "--stop",
            json.dumps({"num_env_steps_sampled_lifetime": steps}),
            "--config",
            json.dumps(overrides),
            "--storage-path",
            storage,
        ]
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        results = sorted(Path(storage).rglob("result.json"))
        rows = (
            [json.loads(line) for line in results[0].read_text().splitlines() if line.strip()]
            if results
            else []
        )
    if proc.returncode or len(rows) <= warmup + 1:
        raise BenchmarkError(
            f"training run failed or too short ({len(rows)} iterations; raise --steps): "
            f"{proc.stderr[-1500:]}"
        )
    first, last = rows[warmup], rows[-1]
    measured = rows[warmup + 1 :]

    def timer(key: str) -> float:
        readings = [float(row["timers"][key]) for row in rows[warmup:]]
        return statistics.median(per_iteration_values(readings))

    return {
        "env_steps_per_s": (
            (last["num_env_steps_sampled_lifetime"] - first["num_env_steps_sampled_lifetime"])
            / (last["time_total_s"] - first["time_total_s"])
        ),
        "iterations": len(rows),
        "iteration_s": (last["time_total_s"] - first["time_total_s"]) / len(measured),
        "sampling_s": timer("env_runner_sampling_timer"),
        "learner_s": timer("learner_update_timer"),
        "steps_per_iteration": statistics.mean(
            b["num_env_steps_sampled_lifetime"] - a["num_env_steps_sampled_lifetime"]
            for a, b in zip(rows[warmup:], measured, strict=False)
        ),
        "wall_s": wall,
        "load_before": load_before,
        "load_after": load_average(),
    }


def with_run(config_file: Path, run: str, folder: Path) -> Path:
    """A copy of the experiment file in ``folder`` whose experiments all have ``run: run``."""
    import yaml

    experiments = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    for experiment in experiments.values():
        experiment["run"] = run
    copy = folder / config_file.name
    copy.write_text(yaml.safe_dump(experiments, sort_keys=False), encoding="utf-8")
    return copy


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME=JSON`` → (name, overrides)."""
    name, sep, overrides = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=JSON, got {text!r}")
    try:
        value = json.loads(overrides)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"variant {name!r}: invalid JSON ({e})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"variant {name!r}: JSON must be an object")
    return name.strip(), value


def report(config_file: str, runs: list[tuple[str, dict[str, Any]]], argv: list[str]) -> str:
    """The RESULTS.md section: one row per run, then each variant's median ratio."""
    table = markdown_table(
        [
            "variant",
            "env steps/s",
            "emulator around it",
            "÷ emulator (one env, one core)",
            "s/iteration",
            "waiting for samples s/iteration",
            "learner s/iteration",
            "env steps/iteration",
            "load before → after",
        ],
        [
            [
                name,
                f"{row['env_steps_per_s']:,.0f}",
                f"{row['emulator']:,.0f}",
                f"{row['ratio']:.2f}×",
                f"{row['iteration_s']:.2f}",
                f"{row['sampling_s']:.2f}",
                f"{row['learner_s']:.2f}",
                f"{row['steps_per_iteration']:,.0f}",
                f"{row['load_before']:.2f} → {row['load_after']:.2f}",
            ]
            for name, row in runs
        ],
    )
    ratios: dict[str, list[float]] = {}
    for name, row in runs:
        ratios.setdefault(name, []).append(row["ratio"])
    summary = [
        f"- {name}: median {statistics.median(values):.2f}× the emulator over {len(values)} "
        f"run{'s' if len(values) > 1 else ''} (range {min(values):.2f}-{max(values):.2f}×)"
        for name, values in ratios.items()
    ]
    return "\n".join(
        [
            "## Atari RAM throughput (`benchmarks/atari_throughput.py`)",
            "",
            f"- Command: `{command_line('benchmarks/atari_throughput.py', argv)}`",
            f"- Machine: {machine_line()}",
            f"- Config: `{config_file}`; emulator reference: one env of the YAML's id and "
            "env_config, random actions, one process alone, measured before the first run "
            "and after every run; each run's ratio is to the mean of the two measurements "
            "around it.",
            "- Rate = env steps ÷ Tune's `time_total_s` after the warm-up iterations; seconds "
            "per iteration are medians of each iteration's own value (RLlib's timers are "
            "EMAs; the script recovers the values).",
            "",
            table,
            "",
            *summary,
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config-file", default=DEFAULT_CONFIG, help="an Atari RAM YAML")
    parser.add_argument("--steps", type=positive_int, default=120_000, help="env steps per run")
    parser.add_argument("--warmup-iterations", type=positive_int, default=3)
    parser.add_argument("--emulator-seconds", type=float, default=20.0)
    parser.add_argument(
        "--repeats", type=positive_int, default=2, help="runs of each variant, in turn"
    )
    parser.add_argument(
        "--variant",
        type=parse_variant,
        action="append",
        default=[],
        metavar="NAME=JSON",
        help='config overrides to measure besides the standard variants ("run" names another '
        "algorithm)",
    )
    parser.add_argument("--only-shipped", action="store_true", help="measure the YAML alone")
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    config_file = Path(args.config_file)
    if not config_file.is_absolute():
        config_file = REPO_ROOT / config_file
    try:
        config = load_experiment_config(config_file)
        env_id = str(config["env"])
        env_config = dict(config.get("env_config") or {})
        variants = {"shipped YAML": {}} if args.only_shipped else dict(STANDARD_VARIANTS)
        variants.update(dict(args.variant))
        plan = [item for _ in range(args.repeats) for item in variants.items()]
        emulator = emulator_rate(env_id, env_config, args.emulator_seconds)
        print(f"emulator, one env: {emulator:,.0f} steps/s (load {load_average():.2f})")
        runs: list[tuple[str, dict[str, Any]]] = []
        start = time.perf_counter()
        for index, (name, overrides) in enumerate(plan, start=1):
            row = training_rate(config_file, overrides, args.steps, args.warmup_iterations)
            after = emulator_rate(env_id, env_config, args.emulator_seconds)
            row["emulator"] = (emulator + after) / 2
            row["ratio"] = row["env_steps_per_s"] / row["emulator"]
            emulator = after
            runs.append((name, row))
            elapsed = time.perf_counter() - start
            print(
                f"[{index}/{len(plan)}] {name}: {row['env_steps_per_s']:,.0f} env steps/s, "
                f"{row['ratio']:.2f}× the emulator ({row['emulator']:,.0f}); waiting "
                f"{row['sampling_s']:.2f} s, learner {row['learner_s']:.2f} s per iteration; "
                f"load {row['load_after']:.2f}; emulator now {after:,.0f}; "
                f"ETA {elapsed / index * (len(plan) - index) / 60:.0f} min",
                flush=True,
            )
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = report(args.config_file, runs, argv)
    print(text)
    if args.write_results:
        RESULTS.write(RESULTS_MD, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
