#!/usr/bin/env python
"""The AirRaid-ram teacher's learning curve beside random play, from its Tune folder.

The teacher is trained by the shipped YAML, as a user trains it::

    rllib train -f tuned_configs/kickstart_teacher_airraid.yaml --storage-path DIR

and this script reads ``DIR/kickstart-teacher-airraid`` (``--experiment``), measures a
uniformly random policy on the same environment settings (the YAML's ``env_config``:
frameskip drawn from {2, 3, 4}, sticky actions 0.25) in the same run, and writes one table:
the teacher's mean episode return per window of env steps next to the random policy's, their
ratio, the teacher's final return (mean over the last ``--final-window`` env steps) and its
wall time, plus a plot. Students find the teacher by name: the student YAML's
``teacher_checkpoint: kickstart-teacher-airraid`` is that folder in the storage path.

Return = RLlib's ``env_runners/episode_return_mean`` per iteration (episodes that ended in
it); iterations in which no episode ended carry no value and are skipped.

Example::

    python benchmarks/airraid_teacher.py --experiment /work/airraid/kickstart-teacher-airraid \\
        --write-results
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from harness import (
    BENCH_DIR,
    REPO_ROOT,
    RESULTS_MD,
    BenchmarkError,
    ResultsSection,
    command_line,
    format_duration,
    load_average,
    load_experiment_config,
    machine_line,
    markdown_table,
    positive_int,
)

RESULTS = ResultsSection("airraid_teacher")
TEACHER_YAML = REPO_ROOT / "tuned_configs" / "kickstart_teacher_airraid.yaml"
RETURN_KEY = ("env_runners", "episode_return_mean")
PLOT = BENCH_DIR / "kickstart_airraid_teacher.png"


def trainable_of(experiment: Path) -> str:
    """The algorithm that trained the teacher: the prefix of Tune's trial folder name."""
    results = sorted(experiment.rglob("result.json"))
    return results[0].parent.name.split("_", 1)[0] if results else "?"


#: PipelinedPPO's keys that change what trained the teacher when they are off.
SWITCHES = ("pipeline_sampling", "pipeline_decoupled_objective")


def trial_settings(experiment: Path) -> str:
    """The algorithm, the switches turned off and the seed, from the trial's ``params.json``.

    A ``--config`` override (e.g. another seed) is in the trial's parameters, not the YAML.
    """
    params_files = sorted(experiment.rglob("params.json"))
    params = json.loads(params_files[0].read_text()) if params_files else {}
    name = trainable_of(experiment)
    off = [f"{key}: false" for key in SWITCHES if params.get(key) is False]
    if off:
        name += " with " + ", ".join(off)
    return f"{name}, (64, 64), 4,000,000 env steps, seed {params.get('seed', '?')}"


def read_curve(experiment: Path) -> tuple[list[tuple[float, float]], dict[str, Any]]:
    """((env steps, return) of every iteration that reported a return, the last result)."""
    results = sorted(experiment.rglob("result.json"))
    if not results:
        raise BenchmarkError(f"no result.json under {experiment}")
    if len(results) > 1:
        raise BenchmarkError(f"{experiment} holds {len(results)} trials; expected the teacher's")
    rows = [json.loads(line) for line in results[0].read_text().splitlines() if line.strip()]
    curve = []
    for row in rows:
        value = row.get(RETURN_KEY[0], {}).get(RETURN_KEY[1])
        if value is not None and math.isfinite(float(value)):
            curve.append((float(row["num_env_steps_sampled_lifetime"]), float(value)))
    if not curve:
        raise BenchmarkError(f"{results[0]} reports no episode return")
    return curve, rows[-1]


def random_play(env_config: dict[str, Any], episodes: int, seed: int) -> list[float]:
    """Episode returns of a uniformly random policy (a vector of 8 games, fixed seeds)."""
    import numpy as np

    from rllib_privacy.envs.atari_ram import AtariRamVectorEnv

    env = AtariRamVectorEnv(8, game="air_raid", repeat_action_probability=0.25, **env_config)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    totals, finished = np.zeros(env.num_envs), []
    while len(finished) < episodes:
        _, rewards, terminated, truncated, _ = env.step(rng.integers(0, 6, env.num_envs))
        totals += rewards
        for index in np.flatnonzero(terminated | truncated):
            finished.append(float(totals[index]))
            totals[index] = 0.0
    env.close()
    return finished[:episodes]


def window_means(curve: list[tuple[float, float]], window: float) -> list[tuple[float, float, int]]:
    """(window end, mean return, iterations) per ``window`` env steps."""
    out = []
    end = window
    # A trailing window less than half covered (a run's last iteration past a round
    # number) would be one noisy point; it is left out.
    while curve and end - window / 2 <= curve[-1][0]:
        values = [ret for steps, ret in curve if end - window < steps <= end]
        if values:
            out.append((end, statistics.mean(values), len(values)))
        end += window
    return out


def first_reaching(
    curve: list[tuple[float, float]], level: float, iterations: int = 20
) -> float | None:
    """Env steps at which the mean of the last ``iterations`` returns first reached ``level``."""
    returns = [ret for _, ret in curve]
    for index, (steps, _) in enumerate(curve):
        if statistics.mean(returns[max(0, index - iterations + 1) : index + 1]) >= level:
            return steps
    return None


def plot(
    curve: list[tuple[float, float]], random_mean: float, path: Path, trainable: str = "PPO"
) -> None:
    """The teacher's per-iteration return with a running mean, and random play."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [s / 1e6 for s, _ in curve]
    returns = [r for _, r in curve]
    smooth = [statistics.mean(returns[max(0, i - 19) : i + 1]) for i in range(len(returns))]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, returns, color="tab:blue", alpha=0.25, lw=0.8, label="per iteration")
    ax.plot(steps, smooth, color="tab:blue", lw=2, label="mean of the last 20 iterations")
    ax.axhline(random_mean, color="tab:gray", ls="--", label="uniformly random policy")
    ax.set_xlabel("env steps (millions)")
    ax.set_ylabel("episode return")
    ax.set_title(f"AirRaid-ram teacher, {trainable} (64, 64): one seed")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", type=Path, required=True, help="the teacher's folder")
    parser.add_argument("--random-episodes", type=positive_int, default=64)
    parser.add_argument("--window", type=float, default=250_000, help="env steps per row")
    parser.add_argument("--final-window", type=float, default=200_000)
    parser.add_argument(
        "--takeoff",
        type=float,
        default=1500.0,
        help="report when the mean of 20 iterations' returns first reached this",
    )
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    try:
        curve, last = read_curve(args.experiment)
        env_config = dict(load_experiment_config(TEACHER_YAML).get("env_config") or {})
        load_before = load_average()
        random_returns = random_play(env_config, args.random_episodes, seed=0)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    random_mean = statistics.mean(random_returns)
    final_from = curve[-1][0] - args.final_window
    final = statistics.mean(r for s, r in curve if s > final_from)
    takeoff = first_reaching(curve, args.takeoff)
    rows = [
        [f"{end:,.0f}", f"{mean:,.0f}", f"{mean / random_mean:.2f}×", str(count)]
        for end, mean, count in window_means(curve, args.window)
    ]
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    plot_path = PLOT if args.write_results else args.experiment / PLOT.name
    plot(curve, random_mean, plot_path, trainable_of(args.experiment))
    text = "\n".join(
        [
            "## AirRaid-ram teacher (`benchmarks/airraid_teacher.py`)",
            "",
            "- Teacher: `rllib train -f tuned_configs/kickstart_teacher_airraid.yaml` "
            f"({trial_settings(args.experiment)}); table "
            "and plot: "
            f"`{command_line('benchmarks/airraid_teacher.py', argv)}`",
            f"- Machine: {machine_line()}",
            "- Environment: `ALE/AirRaid-ram-v5` (ale-py 0.12) with `frameskip: [2, 5]`: the "
            "128-byte RAM observation (scaled to [0, 1]), 6 actions, sticky actions 0.25 and a "
            "frameskip drawn from {2, 3, 4} of gym's `AirRaid-ram-v0`; what differs from v0: "
            "ale-py's current emulator, and v5's episode limit of 108,000 frames (about 31,000 "
            "agent steps) where gym registered v0 with `max_episode_steps=10000`; a teacher "
            "that survives long plays longer episodes here (set `max_episode_steps: 10000` "
            "in `env_config` for v0's limit).",
            f"- Teacher's final return (mean over its last {args.final_window:,.0f} env steps): "
            f"**{final:,.0f}**, {final / random_mean:.1f}× random play; "
            f"{last['num_env_steps_sampled_lifetime']:,.0f} env steps in "
            f"{format_duration(float(last['time_total_s']))} of training "
            f"({last['num_env_steps_sampled_lifetime'] / last['time_total_s']:,.0f} env steps/s).",
            f"- Take-off: the mean of 20 iterations' returns first reached {args.takeoff:,.0f} "
            + ("never." if takeoff is None else f"after {takeoff:,.0f} env steps."),
            f"- Random play, same run: {len(random_returns)} episodes, mean "
            f"{random_mean:,.0f} (sd {statistics.stdev(random_returns):,.0f}); load "
            f"{load_before:.2f} → {load_average():.2f}.",
            "",
            markdown_table(
                [
                    f"env steps (window of {args.window:,.0f})",
                    "teacher return (mean of iterations)",
                    "÷ random play",
                    "iterations with a return",
                ],
                rows,
            ),
            "",
            f"![AirRaid-ram teacher]({PLOT.name})",
            "",
        ]
    )
    print(text)
    print(json.dumps({"final_return": final, "random_mean": random_mean}))
    if args.write_results:
        RESULTS.write(RESULTS_MD, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
