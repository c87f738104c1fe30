#!/usr/bin/env python
"""Count-based exploration benchmark: sparse MountainCar success, counting speed, overhead.

Three parts, each comparing against a baseline measured in the same run (the machine may
be shared with other jobs, so only same-run ratios are meaningful):

* ``success``: ``--seeds`` PPO runs with the SimHash bonus (tuned_configs/
  simhash_ppo_mountaincar.yaml's settings) and as many without it (stock PPO, same
  settings) on rllib_privacy/SparseMountainCar-v0, each for ``--budget`` env steps. A run
  succeeds when the extrinsic ``episode_return_mean`` of an iteration reaches 0.9 (nine in
  ten episodes reach the goal); also reported: the first env step at which any episode
  reached the goal.
* ``speed``: states hashed and counted per second for batches of 4k-64k states (SimHash
  k = 64 and 256 on 128-dim states, exact table and Count-Min sketch), all-distinct and
  repeated (1,024 distinct states) batches, through our ``AddCountBonusToRewards`` connector piece
  and through RLlib's ``CountBasedCuriosity`` example piece (a Python loop per state) on
  the same episodes; plus the pure hash+count throughput and, for Count-Min, the time of
  the sketch's six random table increments alone (its memory-access floor).
* ``overhead``: wall time of a PPO iteration with and without the bonus (same config,
  iterations interleaved), median over ``--overhead-iters``.

Examples::

    python benchmarks/exploration.py --help
    python benchmarks/exploration.py --parts speed
    python benchmarks/exploration.py --seeds 3 --budget 150000 --write-results
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from harness import (
    REPO_ROOT,
    RESULTS_MD,
    ResultsSection,
    command_line,
    dump_json,
    load_json,
    log_algorithms_into_a_temporary_folder,
    machine_line,
    merge_json,
    run_json_processes,
)

RESULTS = ResultsSection("exploration")
MOUNTAINCAR_YAML = REPO_ROOT / "tuned_configs" / "simhash_ppo_mountaincar.yaml"
SOLVED_RETURN = 0.9


# ----------------------------------------------------------------------------- success


def mountaincar_settings() -> tuple[str, dict[str, Any]]:
    """(env id, config dict) of the shipped MountainCar YAML."""
    import yaml

    spec = next(iter(yaml.safe_load(MOUNTAINCAR_YAML.read_text()).values()))
    return spec["env"], dict(spec["config"])


def build_algo(config_cls: type, env: str, config: dict[str, Any]) -> Any:
    """An Algorithm from a YAML config dict (``model_config`` has no setter in 2.60)."""
    config = dict(config)
    model_config = config.pop("model_config", {})
    log_algorithms_into_a_temporary_folder("exploration_benchmark_")
    return (
        config_cls()
        .environment(env)
        .update_from_dict(config)
        .rl_module(model_config=model_config)
        .build_algo()
    )


def mountaincar_trial(seed: int, bonus: bool, budget: int) -> dict[str, Any]:
    """One run; returns its success, first goal step and learning curve."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from rllib_privacy.algorithms.count_exploration import ExplorationPPOConfig

    env, config = mountaincar_settings()
    config = {**config, "seed": seed, "num_env_runners": 0}
    if not bonus:
        config.pop("count_exploration_config", None)
    config_cls = ExplorationPPOConfig if bonus else PPOConfig
    algo = build_algo(config_cls, env, config)
    curve, first_goal, solved_at = [], None, None
    start = time.perf_counter()
    try:
        while True:
            result = algo.train()
            steps = int(result["num_env_steps_sampled_lifetime"])
            runners = result["env_runners"]
            mean = float(runners.get("episode_return_mean", float("nan")))
            if first_goal is None and float(runners.get("episode_return_max", 0.0)) > 0:
                first_goal = steps
            if solved_at is None and mean >= SOLVED_RETURN:
                solved_at = steps
            curve.append((steps, mean))
            if solved_at is not None or steps >= budget:
                break
    finally:
        algo.stop()
    return _run_record(
        curve, start, seed=seed, bonus=bonus, solved_at=solved_at, first_goal=first_goal
    )


def _run_record(curve: list[tuple[int, float]], start: float, **fields: Any) -> dict[str, Any]:
    """A run's JSON record: ``fields``, env steps run, wall seconds and the curve."""
    return {
        **fields,
        "env_steps": curve[-1][0],
        "wall_s": time.perf_counter() - start,
        "curve": curve,
    }


def _without_curve(result: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in result.items() if k != "curve"})


def run_success(args: argparse.Namespace) -> list[dict[str, Any]]:
    """All seeds with and without the bonus, ``--parallel`` runs at a time, each in its own
    process (``--trial``) with its own small Ray instance."""
    jobs = [(s, b) for s in range(args.seed, args.seed + args.seeds) for b in (True, False)]
    with tempfile.TemporaryDirectory() as tmp:
        commands = [
            (
                [sys.executable, __file__, "--trial", f"{seed},{int(bonus)},{args.budget}"]
                + ["--json", str(Path(tmp) / f"trial{i}.json")],
                Path(tmp) / f"trial{i}.json",
            )
            for i, (seed, bonus) in enumerate(jobs)
        ]
        results = run_json_processes(commands, parallel=args.parallel, summary=_without_curve)
    return sorted(results, key=lambda r: (not r["bonus"], r["seed"]))


def success_table(results: list[dict[str, Any]], budget: int) -> str:
    """Markdown table: success fraction and median steps per arm, then each run."""
    lines = [
        f"| arm | solved (return ≥ {SOLVED_RETURN}) within {budget:,} steps | "
        "median steps to solve | runs reaching the goal at least once |",
        "|---|---|---|---|",
    ]
    for bonus in (True, False):
        runs = [r for r in results if r["bonus"] == bonus]
        solved = [r["solved_at"] for r in runs if r["solved_at"] is not None]
        median = f"{statistics.median(solved):,.0f}" if len(solved) * 2 > len(runs) else "—"
        goal = sum(r["first_goal"] is not None for r in runs)
        name = "PPO + SimHash bonus" if bonus else "PPO (no bonus)"
        lines.append(f"| {name} | {len(solved)}/{len(runs)} | {median} | {goal}/{len(runs)} |")
    lines += [
        "",
        "| arm | seed | solved at | first goal at | env steps run | wall s |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {'bonus' if r['bonus'] else 'none'} | {r['seed']} | "
            f"{r['solved_at'] if r['solved_at'] is not None else '—'} | "
            f"{r['first_goal'] if r['first_goal'] is not None else '—'} | "
            f"{r['env_steps']:,} | {r['wall_s']:.0f} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- frozenlake

FROZENLAKE_YAML = REPO_ROOT / "tuned_configs" / "simhash_ppo_frozenlake.yaml"
FROZENLAKE_RETURN = 0.99

#: FrozenLake arms: name -> (bonus piece, the 14-step limit is terminal), table label.
FROZENLAKE_ARMS: dict[str, tuple[str, bool, str]] = {
    "simhash": ("simhash", True, "PPO + SimHash (simhash_ppo_frozenlake.yaml, limit terminal)"),
    "rllib_terminal": ("rllib", True, "PPO + RLlib CountBasedCuriosity, limit terminal"),
    "rllib": ("rllib", False, "PPO + RLlib CountBasedCuriosity (RLlib's example as is)"),
    "simhash_truncated": ("simhash", False, "PPO + SimHash, limit truncated (RLlib's setting)"),
}


def frozenlake_algo(arm: str, seed: int) -> Any:
    """PPO on the FrozenLake 8x8 YAML's settings, with our bonus or RLlib's example piece.

    The bonus is ours (tuned_configs/simhash_ppo_frozenlake.yaml's ExplorationPPO) or, for
    the ``rllib*`` arms, stock PPO with the same settings (those of RLlib's
    examples/curiosity/count_based_curiosity.py: 8x8 map, 14-step limit, 5 envs per
    runner, 10 epochs, vf_loss_coeff 0.01, shared value layers, one-hot observations) and
    RLlib's ``CountBasedCuriosity`` learner connector (β/n, β = 1) instead of ours. The
    14-step limit is terminal (``rllib_privacy/TimeLimitAsTerminal-v0``, the shipped
    YAML) or truncated (plain ``FrozenLake-v1``, RLlib's example), see FROZENLAKE_ARMS.
    """
    import yaml
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module import FlattenObservations
    from ray.rllib.examples.connectors.classes.count_based_curiosity import CountBasedCuriosity

    from rllib_privacy.algorithms.count_exploration import ExplorationPPOConfig

    if arm not in FROZENLAKE_ARMS:
        raise ValueError(f"unknown FrozenLake arm {arm!r}; allowed: {', '.join(FROZENLAKE_ARMS)}")
    bonus, terminal, _ = FROZENLAKE_ARMS[arm]
    spec = next(iter(yaml.safe_load(FROZENLAKE_YAML.read_text()).values()))
    # One process per arm, learner and sampling in it: all arms sample the same way.
    config = {**spec["config"], "seed": seed, "num_env_runners": 0}
    env = spec["env"]
    if not terminal:  # the wrapped gymnasium env itself: the limit truncates
        env_config = dict(config["env_config"])
        env = env_config.pop("env_id")
        config["env_config"] = env_config
    if bonus == "simhash":
        return build_algo(ExplorationPPOConfig, env, config)
    config.pop("count_exploration_config")
    config.pop("count_exploration_flatten_observations")
    model_config = config.pop("model_config", {})
    log_algorithms_into_a_temporary_folder("exploration_benchmark_")
    return (
        PPOConfig()
        .environment(env)
        .update_from_dict(config)
        .env_runners(
            env_to_module_connector=lambda env, spaces=None, device=None: FlattenObservations()
        )
        .learners(learner_connector=lambda *a, **k: CountBasedCuriosity())
        .rl_module(model_config=model_config)
        .build_algo()
    )


def frozenlake_trial(
    arm: str, seed: int, budget: int, wall_cap: float, progress: Path | None = None
) -> dict[str, Any]:
    """One FrozenLake run until return ≥ 0.99, ``budget`` env steps or ``wall_cap`` s.

    ``progress``, if given, gets a JSON line (env steps, return) per iteration as it runs.
    """
    algo = frozenlake_algo(arm, seed)
    curve, reached_at, best = [], None, float("-inf")
    start = time.perf_counter()
    try:
        while True:
            result = algo.train()
            steps = int(result["num_env_steps_sampled_lifetime"])
            mean = float(result["env_runners"].get("episode_return_mean", float("nan")))
            if not np.isnan(mean):
                best = max(best, mean)
            curve.append((steps, mean))
            if progress is not None:
                with progress.open("a") as out:
                    out.write(json.dumps({"steps": steps, "return": mean}) + "\n")
            if mean >= FROZENLAKE_RETURN:
                reached_at = steps
            if reached_at is not None or steps >= budget:
                break
            if time.perf_counter() - start >= wall_cap:
                break
    finally:
        algo.stop()
    return _run_record(curve, start, arm=arm, seed=seed, reached_at=reached_at, best_return=best)


def run_frozenlake(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every arm × seed, ``--parallel`` at a time, each in its own one-CPU Ray process.

    Runs are started seed-major and arm-interleaved, so that arms share the machine's load
    alike.
    """
    arms = [a.strip() for a in args.frozenlake_arms.split(",") if a.strip()]
    unknown = sorted(set(arms) - set(FROZENLAKE_ARMS))
    if unknown or not arms:
        raise SystemExit(
            f"--frozenlake-arms: unknown {unknown}; allowed: {', '.join(FROZENLAKE_ARMS)}"
        )
    with tempfile.TemporaryDirectory() as tmp:
        commands = []
        for seed in range(args.seed, args.seed + args.seeds):
            for arm in arms:
                out = Path(tmp) / f"frozenlake_{arm}_{seed}.json"
                spec = f"{arm},{seed},{args.frozenlake_budget},{args.frozenlake_wall_cap}"
                cmd = [sys.executable, __file__, "--frozenlake-trial", spec, "--json", str(out)]
                commands.append((cmd, out))
        results = run_json_processes(commands, parallel=args.parallel, summary=_without_curve)
    return results  # frozenlake_table orders them by arm and seed


def frozenlake_table(results: list[dict[str, Any]]) -> str:
    """Markdown tables: per arm (runs reaching 0.99, median steps), then per run."""
    order = list(FROZENLAKE_ARMS)
    results = sorted(results, key=lambda r: (order.index(r["arm"]), r["seed"]))
    arms = [a for a in FROZENLAKE_ARMS if any(r["arm"] == a for r in results)]
    lines = [
        f"| arm | runs reaching return ≥ {FROZENLAKE_RETURN} | median env steps to it "
        "(runs that reached it) | env steps of each run (— : not reached) |",
        "|---|---|---|---|",
    ]
    for arm in arms:
        runs = [r for r in results if r["arm"] == arm]
        reached = sorted(r["reached_at"] for r in runs if r["reached_at"] is not None)
        median = f"{statistics.median(reached):,.0f}" if reached else "—"
        each = ", ".join(
            f"{r['reached_at']:,}" if r["reached_at"] is not None else "—" for r in runs
        )
        lines.append(
            f"| {FROZENLAKE_ARMS[arm][2]} | {len(reached)}/{len(runs)} | {median} | {each} |"
        )
    lines += [
        "",
        f"| arm | seed | env steps to return ≥ {FROZENLAKE_RETURN} | best return | "
        "env steps run | wall s |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        reached = f"{r['reached_at']:,}" if r["reached_at"] is not None else "not reached"
        lines.append(
            f"| {FROZENLAKE_ARMS[r['arm']][2]} | {r['seed']} | {reached} | "
            f"{r['best_return']:.3f} | {r['env_steps']:,} | {r['wall_s']:.0f} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- speed


def _episodes(states: np.ndarray, episode_len: int) -> list[Any]:
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    episodes = []
    for start in range(0, len(states), episode_len):
        obs = states[start : start + episode_len + 1]
        n = len(obs) - 1
        if n < 1:
            break
        episode = SingleAgentEpisode(
            observations=list(obs), actions=[0] * n, rewards=[0.0] * n, len_lookback_buffer=0
        )
        episodes.append(episode.to_numpy())
    return episodes


def _time(fn: Any, repeats: int, setup: Any = None) -> float:
    """Best wall time of ``fn(setup())`` (setup, e.g. building empty tables, not timed)."""
    best = float("inf")
    for _ in range(repeats):
        arg = setup() if setup is not None else None
        start = time.perf_counter()
        fn(arg)
        best = min(best, time.perf_counter() - start)
    return best


def run_speed(args: argparse.Namespace) -> list[dict[str, Any]]:
    """States per second of our piece, RLlib's loop, the pure layer and Count-Min's floor."""
    import gymnasium as gym
    from ray.rllib.examples.connectors.classes.count_based_curiosity import CountBasedCuriosity

    from rllib_privacy.connectors import AddCountBonusToRewards
    from rllib_privacy.exploration import CountMinSketch

    space = gym.spaces.Box(-1.0, 1.0, (128,), np.float32)
    rng = np.random.default_rng(0)
    rows = []
    for n in args.batch_sizes:
        for data in ("distinct", "repeated"):
            if data == "distinct":
                states = rng.uniform(-1, 1, size=(n + 1, 128)).astype(np.float32)
            else:
                pool = rng.uniform(-1, 1, size=(1024, 128)).astype(np.float32)
                states = pool[rng.integers(0, 1024, size=n + 1)]
            episodes = _episodes(states, 1000)
            total = sum(len(e) for e in episodes)

            def rllib_loop(piece: Any, eps=episodes) -> None:
                piece(rl_module=None, batch={}, episodes=eps)

            baseline = total / _time(rllib_loop, args.repeats, CountBasedCuriosity)
            for k in args.bits:
                for counter in ("exact", "count_min"):
                    spec = {"num_bits": k, "counter": counter, "preprocessor": "none"}

                    def make(spec=spec) -> Any:
                        return AddCountBonusToRewards(space, None, spec=spec)

                    def ours(piece: Any, eps=episodes) -> None:
                        piece.apply(eps)

                    def pure(piece: Any, x=states[:total]) -> None:
                        piece.exploration.increment_and_bonus(x)

                    row = {
                        "batch": total,
                        "data": data,
                        "k": k,
                        "counter": counter,
                        "ours_per_s": total / _time(ours, args.repeats, make),
                        "pure_per_s": total / _time(pure, args.repeats, make),
                        "rllib_per_s": baseline,
                    }
                    if counter == "count_min":
                        sketch = CountMinSketch()
                        index = sketch.table_indices(
                            np.where(rng.random((total, k)) < 0.5, 1, -1).astype(np.int8)
                        ).reshape(-1)
                        row["floor_per_s"] = total / _time(
                            lambda _, s=sketch, i=index: np.add.at(s._table, i, 1), args.repeats
                        )
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    return rows


def speed_table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of the speed rows."""
    lines = [
        "| batch | states | k | counter | ours (connector) states/s | pure hash+count states/s "
        "| RLlib CountBasedCuriosity states/s | speed-up (connector vs RLlib) | "
        "Count-Min increments alone states/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        floor = f"{r['floor_per_s']:,.0f}" if "floor_per_s" in r else "—"
        lines.append(
            f"| {r['batch']:,} | {r['data']} | {r['k']} | {r['counter']} | "
            f"{r['ours_per_s']:,.0f} | {r['pure_per_s']:,.0f} | {r['rllib_per_s']:,.0f} | "
            f"{r['ours_per_s'] / r['rllib_per_s']:.1f}× | {floor} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- overhead


def run_overhead(args: argparse.Namespace) -> dict[str, Any]:
    """Median iteration wall time of PPO with and without the bonus, interleaved."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from rllib_privacy.algorithms.count_exploration import ExplorationPPOConfig

    env, config = mountaincar_settings()
    config = {**config, "num_env_runners": 0, "seed": 0}
    plain = {k: v for k, v in config.items() if k != "count_exploration_config"}
    with_bonus = build_algo(ExplorationPPOConfig, env, config)
    without = build_algo(PPOConfig, env, plain)
    times: dict[str, list[float]] = {"bonus": [], "plain": []}
    try:
        with_bonus.train(), without.train()  # warm-up (first iteration builds things)
        for _ in range(args.overhead_iters):
            for name, algo in (("bonus", with_bonus), ("plain", without)):
                start = time.perf_counter()
                algo.train()
                times[name].append(time.perf_counter() - start)
    finally:
        with_bonus.stop()
        without.stop()
    bonus, plain_s = statistics.median(times["bonus"]), statistics.median(times["plain"])
    return {
        "bonus_s": bonus,
        "plain_s": plain_s,
        "overhead": bonus / plain_s - 1.0,
        "iterations": args.overhead_iters,
        "batch": config.get("train_batch_size_per_learner"),
    }


# ----------------------------------------------------------------------------- output


def render(args: argparse.Namespace, parts: dict[str, Any], command: str) -> str:
    """The RESULTS.md section."""
    out = [
        "## Count-based exploration (`benchmarks/exploration.py`)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine_line()}. Shared with other jobs while it ran: "
        "compare only the ratios within this run.",
    ]
    if "success" in parts:
        out += [
            "",
            "### Sparse MountainCar: success within a fixed env-step budget",
            "",
            success_table(parts["success"], args.budget),
        ]
    if "speed" in parts:
        out += ["", "### Hashing + counting speed", "", speed_table(parts["speed"])]
    if "frozenlake" in parts:
        out += [
            "",
            "### FrozenLake 8x8: env steps to return 0.99 against RLlib's example",
            "",
            frozenlake_table(parts["frozenlake"]),
        ]
    if "overhead" in parts:
        o = parts["overhead"]
        out += [
            "",
            "### Bonus overhead per PPO iteration",
            "",
            f"Median over {o['iterations']} interleaved iterations of "
            f"{o['batch']} env steps: {o['bonus_s']:.2f} s with the bonus, "
            f"{o['plain_s']:.2f} s without: {100 * o['overhead']:+.1f}%.",
        ]
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    """Command-line options."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--parts",
        default="success,speed,overhead",
        help="comma-separated: success, speed, overhead, frozenlake",
    )
    parser.add_argument(
        "--frozenlake-budget", type=int, default=400_000, help="env-step cap (frozenlake)"
    )
    parser.add_argument(
        "--frozenlake-wall-cap", type=float, default=3600.0, help="seconds per run (frozenlake)"
    )
    parser.add_argument(
        "--frozenlake-arms",
        default=",".join(FROZENLAKE_ARMS),
        help=f"comma-separated FrozenLake arms: {', '.join(FROZENLAKE_ARMS)}",
    )
    parser.add_argument("--seeds", type=int, default=3, help="seeds per arm (success, frozenlake)")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--budget", type=int, default=150_000, help="env steps per run")
    parser.add_argument("--parallel", type=int, default=2, help="runs at a time (1 CPU each)")
    parser.add_argument(
        "--batch-sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[4096, 16384, 65536],
        help="speed batch sizes",
    )
    parser.add_argument(
        "--bits",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[64, 256],
        help="SimHash k values (speed)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats (best kept)")
    parser.add_argument("--overhead-iters", type=int, default=8, help="iterations per arm")
    parser.add_argument("--ray-num-cpus", type=int, default=2)
    parser.add_argument(
        "--write-results",
        action="store_true",
        help=f"write the section into {RESULTS_MD.name}",
    )
    parser.add_argument("--results-md", type=Path, default=RESULTS_MD)
    parser.add_argument("--json", type=Path, help="also write everything measured here")
    parser.add_argument("--trial", help=argparse.SUPPRESS)  # "seed,bonus,budget": one run
    # "arm,seed,budget,wall_cap": one FrozenLake run
    parser.add_argument("--frozenlake-trial", help=argparse.SUPPRESS)
    parser.add_argument(
        "--merge-json",
        type=Path,
        nargs="+",
        help="render (and write) parts measured by earlier runs' --json (run lists are joined)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the selected parts, prints the tables, optionally writes RESULTS.md."""
    args = build_parser().parse_args(argv)
    wanted = [p.strip() for p in args.parts.split(",") if p.strip()]
    allowed = ("success", "speed", "overhead", "frozenlake")
    unknown = set(wanted) - set(allowed)
    if unknown:
        raise SystemExit(f"--parts: unknown {sorted(unknown)}; allowed: {', '.join(allowed)}")
    import ray

    import rllib_privacy

    rllib_privacy.register()  # Registers the algorithms and envs

    if args.trial:
        seed, bonus, budget = (int(x) for x in args.trial.split(","))
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
        dump_json(args.json, mountaincar_trial(seed, bool(bonus), budget), indent=None)
        return 0
    if args.frozenlake_trial:
        import torch

        # --parallel runs share the cores: one thread each, no oversubscribed spin-waits.
        torch.set_num_threads(1)
        arm, seed, budget, wall_cap = args.frozenlake_trial.split(",")
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
        progress = args.json.with_suffix(".progress.jsonl")
        result = frozenlake_trial(arm, int(seed), int(budget), float(wall_cap), progress)
        dump_json(args.json, result, indent=None)
        return 0
    parts: dict[str, Any] = {}
    if args.merge_json:
        parts = merge_json(load_json(path) for path in args.merge_json)
        wanted = []
    else:
        ray.init(num_cpus=args.ray_num_cpus, include_dashboard=False, log_to_driver=False)
    if "success" in wanted:
        parts["success"] = run_success(args)
    if "speed" in wanted:
        parts["speed"] = run_speed(args)
    if "overhead" in wanted:
        parts["overhead"] = run_overhead(args)
    if "frozenlake" in wanted:
        parts["frozenlake"] = run_frozenlake(args)
    section = render(args, parts, command_line(__file__, argv))
    print(section)
    if args.json:
        dump_json(args.json, parts)
    if args.write_results:
        RESULTS.write(args.results_md, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
