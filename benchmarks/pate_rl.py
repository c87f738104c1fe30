#!/usr/bin/env python
"""PATE in RL: does a PATE-PPO student reach CartPole's target faster than plain PPO?

One run of this script trains, on the same PPO settings:

1. **Teachers** (private): ``--teachers`` PPO policies, teacher i on its own CartPole
   gravity set (three gravities in the i-th slice of ``--gravity-range``), each until its
   mean return reaches ``--target`` or ``--teacher-cap`` env steps. Each is then checked
   greedily on its own set (``--check-episodes`` episodes per gravity): a competent
   teacher's greedy return is ≥ the target there.
2. **Students** on gravity 9.8 (public), ``--seeds`` seeds each, to ``--cap`` env steps:
   - ``ppo``: plain PPO (the baseline);
   - ``pate``: PATE-PPO with the competent teachers (the aggregator of ``--aggregator``,
     least-confident-first queries, label replay), stopped by the ε budget ``--budget``
     (data-independent, the published ε; δ = 1e-5);
   - ``pate-untrained``: the same, with untrained (randomly initialised) teachers: labels
     that carry no knowledge of the task (the no-signal control: any gain of ``pate`` over
     it comes from what the teachers know, not from the extra loss).

Reported: env steps until the mean return of the last ``--window`` episodes first reaches
``--target`` (RLlib's default window, 100 episodes, spans ten 2,000-step iterations once
episodes last 200 steps, and would hide when a student became good)
(median over seeds; a seed that never does counts as ∞), the ratio PATE / PPO (the goal:
≤ 0.5), the spent ε and the number of labels, and a plot of the learning curves.

Examples::

    python benchmarks/pate_rl.py --quick                 # smoke run, a few minutes
    python benchmarks/pate_rl.py --seeds 5 --write-results
    python benchmarks/pate_rl.py --teacher-dir /tmp/pate_rl_x --seeds 5   # reuse teachers
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from harness import (
    RESULTS_MD,
    ResultsSection,
    command_line,
    count_finite,
    dump_json,
    load_json,
    machine_line,
    markdown_table,
    median_or_inf,
    positive_int,
    quiet_ray,
    steps_to_threshold,
)

RESULTS = ResultsSection(
    "pate", title="## PATE (`benchmarks/pate.py`, `benchmarks/pate_rl.py`)",
    parts=("accountant", "digits", "rl"),
)  # fmt: skip
ENV = "rllib_privacy/CartPoleGravity-v0"
STUDENT_GRAVITY = 9.8
RETURN_KEY = "env_runners/episode_return_mean"
STEPS_KEY = "num_env_steps_sampled_lifetime"
#: PPO settings of every policy here (teachers and students): tuned_configs/pate_ppo_cartpole.yaml.
PPO_SETTINGS: dict[str, Any] = {
    "lr": 3e-4,
    "gamma": 0.99,
    "train_batch_size_per_learner": 2000,
    "minibatch_size": 250,
    "num_epochs": 10,
    "vf_loss_coeff": 0.01,
}
MODEL = {"fcnet_hiddens": [32, 32]}
ARMS = ("ppo", "pate", "pate-untrained")
QUICK = {"teachers": 4, "teacher_cap": 4000, "seeds": 1, "cap": 4000, "check_episodes": 1}


def teacher_gravities(count: int, low: float, high: float) -> list[list[float]]:
    """Disjoint gravity sets: teacher i gets three gravities inside slice i of [low, high)."""
    width = (high - low) / count
    return [[round(low + width * (i + (j + 0.5) / 3), 4) for j in range(3)] for i in range(count)]


def _base_space(seed_grid: list[int] | None) -> dict[str, Any]:
    from ray import tune

    space: dict[str, Any] = {
        "env": ENV,
        **PPO_SETTINGS,
        "_model_config": MODEL,
        # Sampling in the trial's own process: one CPU per trial, two trials at a time.
        "num_env_runners": 0,
        "sample_timeout_s": 600,
    }
    if seed_grid is not None:
        space["seed"] = tune.grid_search(seed_grid)
    return space


def _progress_callback(name: str) -> Any:
    """A Tune callback printing one line per finished trial (Tune itself runs at verbose=0)."""
    from ray import tune

    class Progress(tune.Callback):
        def __init__(self) -> None:
            self.done = 0
            self.start = time.perf_counter()

        def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            self.done += 1
            result = trial.last_result or {}
            final = result.get("env_runners", {}).get("episode_return_mean")
            print(f"[{name}] {self.done}/{len(trials)} done ({time.perf_counter() - self.start:.0f}"
                  f" s): {trial.config.get('env_config')} seed {trial.config.get('seed')}: "
                  f"{result.get(STEPS_KEY)} steps, return {final}", flush=True)  # fmt: skip

    return Progress()


def _fit(trainable: str, space: dict[str, Any], *, name: str, storage: Path, stop: Any,
         checkpoint: bool) -> Any:  # fmt: skip
    from ray import tune

    tuner = tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(reuse_actors=False),
        run_config=tune.RunConfig(
            name=name,
            stop=stop,
            callbacks=[_progress_callback(name)],
            storage_path=str(storage),
            verbose=0,
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=checkpoint),
            failure_config=tune.FailureConfig(max_failures=0),
        ),
    )
    grid = tuner.fit()
    failed = [r for r in grid if r.error is not None]
    if failed:
        raise RuntimeError("trial(s) failed: " + "; ".join(f"{r.path}: {r.error}" for r in failed))
    return grid


def _curve(result: Any) -> tuple[list[int], list[float]]:
    frame = result.metrics_dataframe
    steps = [int(v) for v in frame[STEPS_KEY]]
    returns = [float(v) for v in frame[RETURN_KEY]]
    return steps, returns


def greedy_return(module_dir: str, gravities: list[float], episodes: int, seed: int) -> float:
    """Mean greedy return of a saved RLModule on its own gravity set."""
    import gymnasium as gym
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModule

    module = RLModule.from_checkpoint(module_dir)
    returns = []
    for g_index, gravity in enumerate(gravities):
        env = gym.make(ENV, gravity_choices=[gravity])
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + 1000 * g_index + episode)
            total, done = 0.0, False
            while not done:
                with torch.no_grad():
                    logits = module.forward_inference(
                        {Columns.OBS: torch.as_tensor(obs, dtype=torch.float32)[None]}
                    )[Columns.ACTION_DIST_INPUTS]
                obs, reward, terminated, truncated, _ = env.step(int(logits.argmax()))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    return float(np.mean(returns))


def train_teachers(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Competent teachers (Tune, one trial per gravity set) and untrained ones; their check."""
    import torch
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig

    from rllib_privacy.pate.ensemble import resolve_teacher_checkpoints

    sets = teacher_gravities(args.teachers, *args.gravity_range)
    space = _base_space(None)
    space["seed"] = tune.sample_from(
        lambda spec: 100 + sets.index(list(spec.config.env_config["gravity_choices"]))
    )
    space["env_config"] = tune.grid_search([{"gravity_choices": s} for s in sets])
    start = time.perf_counter()
    print(f"[teachers] {args.teachers} PPO teachers to return {args.target} "
          f"(cap {args.teacher_cap} steps)", flush=True)  # fmt: skip
    grid = _fit(
        "PPO",
        space,
        name="teachers",
        storage=work,
        stop={RETURN_KEY: args.target, STEPS_KEY: args.teacher_cap},
        checkpoint=True,
    )
    trained = []
    for result in grid:
        index = sets.index(list(result.config["env_config"]["gravity_choices"]))
        steps, returns = _curve(result)
        trained.append({"index": index, "gravities": sets[index], "steps": steps[-1],
                        "return": returns[-1], "path": str(result.path)})  # fmt: skip
    trained.sort(key=lambda t: t["index"])
    dirs = [str(p) for p in resolve_teacher_checkpoints([t["path"] for t in trained])]
    for teacher, module_dir in zip(trained, dirs, strict=True):
        teacher["module_dir"] = module_dir
        teacher["greedy_return"] = greedy_return(
            module_dir, teacher["gravities"], args.check_episodes, seed=teacher["index"]
        )
        print(f"[teachers] {teacher['index']}: g {teacher['gravities']} steps {teacher['steps']}"
              f" return {teacher['return']:.1f} greedy {teacher['greedy_return']:.1f}",
              flush=True)  # fmt: skip
    untrained = []
    spec = PPOConfig().get_default_rl_module_spec()
    import gymnasium as gym

    probe = gym.make(ENV)
    spec.observation_space, spec.action_space = probe.observation_space, probe.action_space
    spec.model_config = MODEL
    for i in range(args.teachers):
        torch.manual_seed(10_000 + i)
        path = work / "untrained" / f"teacher_{i:03d}"
        spec.build().save_to_path(str(path))
        untrained.append(str(path))
    info = {"trained": trained, "untrained": untrained, "wall_s": time.perf_counter() - start}
    dump_json(work / "teachers.json", info, indent=1)
    return info


def run_students(args: argparse.Namespace, work: Path, teachers: dict[str, Any]) -> dict[str, Any]:
    """The three arms × seeds; returns per-arm curves and PATE figures."""
    from ray import tune

    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    stop = {STEPS_KEY: args.cap}
    arms: dict[str, list[dict[str, Any]]] = {}
    space = _base_space(seeds)
    space["env_config"] = {"gravity_choices": [STUDENT_GRAVITY]}
    space["metrics_num_episodes_for_smoothing"] = args.window
    if "ppo" in args.arms:
        print(f"[students] ppo: {len(seeds)} seeds to {args.cap} steps", flush=True)
        start = time.perf_counter()
        for result in _fit("PPO", space, name="ppo", storage=work, stop=stop, checkpoint=False):
            steps, returns = _curve(result)
            arms.setdefault("ppo", []).append(
                {"seed": result.config["seed"], "steps": steps, "returns": returns}
            )
        print(f"[students] ppo done in {time.perf_counter() - start:.0f} s", flush=True)
    pate = _pate_settings(args)
    space = _base_space(seeds)
    space["env_config"] = {"gravity_choices": [STUDENT_GRAVITY]}
    space["metrics_num_episodes_for_smoothing"] = args.window
    space.update(pate)
    # Each seed stands for an independent deployment of the ensemble (a simulation): every
    # trial spends its own budget, not one owner budget shared by the whole sweep.
    space["pate_budget_scope"] = "trial"
    teacher_sets = {
        "pate": [t["module_dir"] for t in teachers["trained"]],
        "pate-untrained": teachers["untrained"],
    }
    wanted = [arm for arm in teacher_sets if arm in args.arms]
    if not wanted:
        return _finish(args, arms)
    space["pate_teacher_checkpoints"] = tune.grid_search([teacher_sets[arm] for arm in wanted])
    print(f"[students] {', '.join(wanted)}: {len(seeds)} seeds each", flush=True)
    start = time.perf_counter()
    grid = _fit("PATEPPO", space, name="pate", storage=work, stop=stop, checkpoint=False)
    untrained = teachers["untrained"]
    for result in grid:
        steps, returns = _curve(result)
        frame = result.metrics_dataframe
        arm = "pate-untrained" if result.config["pate_teacher_checkpoints"] == untrained else "pate"
        arms.setdefault(arm, []).append(
            {
                "seed": result.config["seed"],
                "steps": steps,
                "returns": returns,
                "epsilon": float(frame["pate_epsilon_data_independent"].iloc[-1]),
                "queries": int(frame["pate_queries"].iloc[-1]),
                "answered": int(frame["pate/answered"].iloc[-1]),
            }
        )
    print(f"[students] pate done in {time.perf_counter() - start:.0f} s", flush=True)
    return _finish(args, arms)


def _finish(args: argparse.Namespace, arms: dict[str, Any]) -> dict[str, Any]:
    for runs in arms.values():
        runs.sort(key=lambda run: run["seed"])
        for run in runs:
            run["to_target"] = steps_to_threshold(run["steps"], run["returns"], args.target)
    return arms


def _pate_settings(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "pate_aggregator": args.aggregator,
        "pate_epsilon_budget": args.budget,
        "pate_delta": 1e-5,
        "pate_query_selection": args.selection,
        "pate_queries_per_sample": args.queries_per_sample,
        "pate_label_loss_coeff": args.label_coeff,
        "pate_label_replay_size": args.replay,
        "pate_label_sgd_steps": args.label_steps,
    }
    if args.aggregator == "lnmax":
        settings["pate_gamma"] = args.gamma
    else:
        settings["pate_gnmax_sigma"] = args.sigma
    return settings


def _steps(value: float) -> str:
    return "not reached" if math.isinf(value) else f"{value:,.0f}"


def render(args: argparse.Namespace, teachers: dict[str, Any], arms: dict[str, Any],
           plot: Path | None, argv: list[str]) -> str:  # fmt: skip
    trained = teachers["trained"]
    competent = sum(t["greedy_return"] >= args.target for t in trained)
    baseline = median_or_inf([run["to_target"] for run in arms.get("ppo", [])] or [math.inf])
    names = {
        "ppo": "PPO (no teachers)",
        "pate": "PATE-PPO, competent teachers",
        "pate-untrained": "PATE-PPO, untrained teachers (control)",
    }
    rows = []
    for arm in (a for a in ARMS if a in arms):
        runs = arms[arm]
        to_target = [run["to_target"] for run in runs]
        median = median_or_inf(to_target)
        ratio = median / baseline if math.isfinite(baseline) and math.isfinite(median) else math.nan
        finals = [float(np.nanmean(run["returns"][-2:])) for run in runs]
        eps = [run["epsilon"] for run in runs] if arm != "ppo" else []
        labels = [run["answered"] for run in runs] if arm != "ppo" else []
        rows.append(
            [
                names[arm],
                _steps(median),
                " / ".join(_steps(v) for v in to_target),
                f"{count_finite(to_target)}/{len(runs)}",
                "—" if arm == "ppo" else ("—" if math.isnan(ratio) else f"{ratio:.2f}"),
                f"{statistics.mean(finals):.1f}",
                f"{max(eps):.2f}" if eps else "—",
                f"{statistics.mean(labels):.0f}" if labels else "—",
            ]
        )
    table = markdown_table(
        ["student", f"env steps to {args.target:g} (median)", "per seed", "reached",
         "÷ PPO", "final return (mean)", "ε spent (max over seeds)", "labels (mean)"],
        rows,
    )  # fmt: skip
    noise = f"γ = {args.gamma}" if args.aggregator == "lnmax" else f"σ = {args.sigma}"
    teacher_rows = markdown_table(
        ["teacher", "gravities (private)", "env steps", "return at stop", "greedy return, own set"],
        [[str(t["index"]), ", ".join(f"{g:g}" for g in t["gravities"]), f"{t['steps']:,}",
          f"{t['return']:.1f}", f"{t['greedy_return']:.1f}"] for t in trained],
    )  # fmt: skip
    pate_row = next((row for row in rows if row[0] == names["pate"]), None)
    verdict = (
        "Goal (≤ 0.5 × PPO's env steps at ε ≤ 10): "
        + ("no PATE arm" if pate_row is None else
           f"PATE-PPO / PPO = {pate_row[4]} at ε ≤ {pate_row[6]}.")
    )  # fmt: skip
    lines = [
        "### PATE: rl (`benchmarks/pate_rl.py`)",
        "",
        f"`{command_line('benchmarks/pate_rl.py', argv)}` — {machine_line()}",
        "",
        f"{len(trained)} PPO teachers on disjoint gravity sets over "
        f"[{args.gravity_range[0]:g}, {args.gravity_range[1]:g}), each trained to a mean return "
        f"of {args.target:g} or {args.teacher_cap:,} env steps ({teachers['wall_s']:.0f} s); "
        f"{competent}/{len(trained)} competent (greedy return ≥ {args.target:g} on their own set, "
        f"{args.check_episodes} episodes per gravity). Students on gravity {STUDENT_GRAVITY}, "
        f"{args.seeds} seeds per arm ({args.first_seed}-{args.first_seed + args.seeds - 1}), "
        f"{args.cap:,} env steps; same PPO settings for all "
        f"(batch 2000, minibatch 250, 10 epochs, lr 3e-4, MLP 32×32). PATE: {args.aggregator} "
        f"({noise}), ε budget {args.budget:g} (data-independent, the published ε; δ = 1e-5), "
        f"{args.selection.replace('_', '-')} queries, ≤ {args.queries_per_sample} per sample, "
        f"label loss × {args.label_coeff:g}, label replay {args.replay}, "
        f"{args.label_steps} label-only steps per update. Steps to target: first iteration "
        f"whose mean return over the last {args.window} episodes is ≥ {args.target:g}.",
        "",
        table,
        "",
        verdict,
    ]
    if plot is not None:
        lines += ["", f"![PATE-PPO learning curves]({plot.name})"]
    lines += ["", "<details><summary>Teachers</summary>", "", teacher_rows, "", "</details>"]
    return "\n".join(lines)


def draw(args: argparse.Namespace, arms: dict[str, Any], output: Path) -> Path:
    """Mean return against env steps per arm: median over seeds and the min-max band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(7, 4.2))
    for arm, runs in arms.items():
        grid = np.arange(args.batch, args.cap + 1, args.batch)
        values = np.array([np.interp(grid, run["steps"], np.nan_to_num(run["returns"]))
                           for run in runs])  # fmt: skip
        line = axis.plot(grid, np.median(values, axis=0), label=f"{arm} ({len(runs)} seeds)")
        axis.fill_between(grid, values.min(axis=0), values.max(axis=0), alpha=0.15,
                          color=line[0].get_color())  # fmt: skip
    axis.axhline(args.target, color="grey", linestyle="--", linewidth=0.8)
    axis.set_xlabel("env steps")
    axis.set_ylabel("mean episode return")
    axis.set_title(f"CartPole (gravity {STUDENT_GRAVITY}): median, min–max over seeds")
    axis.legend()
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teachers", type=positive_int, default=24)
    parser.add_argument("--gravity-range", type=float, nargs=2, default=[5.0, 15.0])
    parser.add_argument("--teacher-cap", type=positive_int, default=150_000)
    parser.add_argument("--check-episodes", type=positive_int, default=5)
    parser.add_argument("--target", type=float, default=195.0)
    parser.add_argument(
        "--window",
        type=positive_int,
        default=20,
        help="students' return = mean of the last N episodes (metrics_num_episodes_for_smoothing)",
    )
    parser.add_argument("--seeds", type=positive_int, default=5)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds are first, first+1, …")
    parser.add_argument("--cap", type=positive_int, default=40_000, help="student env steps")
    parser.add_argument("--aggregator", choices=("lnmax", "gnmax"), default="gnmax")
    parser.add_argument("--sigma", type=float, default=7.0, help="GNMax σ")
    parser.add_argument("--gamma", type=float, default=0.05, help="LNMax γ")
    parser.add_argument("--budget", type=float, default=10.0, help="ε budget (δ = 1e-5)")
    parser.add_argument("--queries-per-sample", type=positive_int, default=12)
    parser.add_argument(
        "--selection", choices=("least_confident", "random", "all"), default="least_confident"
    )
    parser.add_argument("--label-coeff", type=float, default=10.0)
    parser.add_argument("--replay", type=int, default=256, help="pate_label_replay_size")
    parser.add_argument("--label-steps", type=int, default=200, help="pate_label_sgd_steps")
    parser.add_argument(
        "--arms",
        type=lambda text: text.split(","),
        default=list(ARMS),
        help=f"comma list of {', '.join(ARMS)} (the table needs all three)",
    )
    parser.add_argument("--teacher-dir", type=Path, help="reuse the teachers of an earlier run")
    parser.add_argument("--work-dir", type=Path, help="where Tune writes (default: a temp dir)")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK}")
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    parser.add_argument("--results-md", type=Path, default=RESULTS_MD)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = sorted(set(args.arms) - set(ARMS))
    if unknown:
        parser.error(f"--arms: unknown {unknown}; allowed: {', '.join(ARMS)}")
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    args.batch = PPO_SETTINGS["train_batch_size_per_learner"]
    import ray

    from rllib_privacy._registration import register_all

    quiet_ray()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="pate_rl_"))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    register_all()  # PATEPPO and the env, with this Ray session's Tune registry
    try:
        if args.teacher_dir is not None:
            teachers = load_json(args.teacher_dir / "teachers.json")
            print(f"[teachers] reusing {args.teacher_dir}", flush=True)
        else:
            teachers = train_teachers(args, work)
            print(f"[teachers] saved; reuse with --teacher-dir {work}", flush=True)
        arms = run_students(args, work, teachers)
    finally:
        ray.shutdown()
    if args.json:
        dump_json(args.json, {"teachers": teachers, "arms": arms}, indent=1)
    plot = None
    if args.write_results:
        plot = draw(args, arms, args.results_md.parent / "pate_rl_cartpole.png")
    text = render(args, teachers, arms, plot, argv)
    print(text, flush=True)
    if args.write_results:
        RESULTS.write(args.results_md, {"rl": text})
    return 0


if __name__ == "__main__":
    sys.exit(main())
