#!/usr/bin/env python
"""Instance-wise Laplace benchmark: KL ratio of DQN's scales vs uniform Laplace, per ε.

For every ε, RLlib's DQN is trained on ``rllib_privacy/InstanceWiseLaplace-v0`` with the
settings of ``tuned_configs/ilm_dqn.yaml`` for ``--steps`` env steps (in this process, no
Tune), then its RLModule assigns a scale to every instance greedily (dataset order). In the
same run, on the same data and bins, it reports:

- KL(data ‖ output) of the DQN's scales, of uniform Laplace at Δf/ε, and of the best single
  scale of the action set that satisfies every instance's pDP (the analytic baseline);
- the ratios to uniform Laplace (paper, NBA heights, ε = 0.011: 0.883 / 1.968 ≈ 0.45);
- the exact pDP check of the DQN's scales (violations, largest loss) and its scale histogram.

DQN's ε-greedy exploration decays from 1 to 0.02 over the first half of ``--steps``.

Examples::

    python benchmarks/ilm.py --help
    python benchmarks/ilm.py --epsilons 0.011,0.1,1 --steps 20000 --write-results
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from harness import (
    REPO_ROOT,
    RESULTS_MD,
    Progress,
    ResultsSection,
    command_line,
    dump_json,
    machine_line,
)

DEFAULT_YAML = REPO_ROOT / "tuned_configs" / "ilm_dqn.yaml"
RESULTS = ResultsSection("ilm")
#: Ryu et al. (NBA heights, ε = 0.011): KL of ILM-DQN and of the Laplace mechanism.
PAPER_KL_ILM, PAPER_KL_LAPLACE = 0.883, 1.968


@dataclasses.dataclass
class Row:
    """One ε's results."""

    epsilon: float
    env_steps: int
    train_seconds: float
    summary: dict[str, Any]
    train_kl_ratio: float | None


def load_config(path: Path) -> dict[str, Any]:
    """The ``config`` of the single experiment in the YAML file."""
    spec = yaml.safe_load(path.read_text())
    (experiment,) = spec.values()
    return copy.deepcopy(experiment["config"])


def train_and_evaluate(config: dict[str, Any], epsilon: float, steps: int) -> Row:
    """Train DQN for ``steps`` env steps at ``epsilon``; evaluate its greedy scales."""
    from ray.rllib.algorithms.dqn import DQNConfig

    from rllib_privacy.envs import INSTANCE_LAPLACE_ENV_ID, InstanceWiseLaplaceEnv
    from rllib_privacy.ilm_evaluate import assess, greedy_scales

    config = copy.deepcopy(config)
    config["env_config"]["epsilon"] = epsilon
    # Short runs: ε-greedy decays over the first half of the steps (the YAML's 10,000
    # would leave a short benchmark exploring throughout).
    config["epsilon"] = [[0, 1.0], [steps // 2, 0.02]]
    # update_from_dict has no setter for model_config (the CLI translates it the same way).
    config["_model_config"] = config.pop("model_config", {})
    algo_config = DQNConfig().update_from_dict(
        {
            **config,
            "env": INSTANCE_LAPLACE_ENV_ID,
            "enable_rl_module_and_learner": True,
            "enable_env_runner_and_connector_v2": True,
        }
    )
    algo = algo_config.build_algo()
    start = time.perf_counter()
    sampled, kl_ratio = 0, None
    try:
        while sampled < steps:
            result = algo.train()
            sampled = int(result.get("num_env_steps_sampled_lifetime", 0))
            kl_ratio = result.get("kl_ratio", kl_ratio)
        seconds = time.perf_counter() - start
        module = algo.get_module()
        env = InstanceWiseLaplaceEnv({**config["env_config"], "shuffle": False})
        evaluation = assess(env, greedy_scales(module, env))
    finally:
        algo.stop()
    return Row(epsilon, sampled, seconds, evaluation.summary(), kl_ratio)


def fmt(value: Any, digits: int = 3) -> str:
    """Numbers with ``digits`` significant places; strings as they are."""
    if isinstance(value, str) or value is None:
        return str(value)
    return f"{value:.{digits}g}" if math.isfinite(value) else "inf"


def table(rows: list[Row]) -> str:
    """Markdown table of the results."""
    header = (
        "| ε | KL Laplace | KL DQN | ratio DQN/Laplace | best single scale (×Δf) | "
        "ratio best single/Laplace | DQN pDP violations (max loss) | DQN scale counts | "
        "env steps | train s |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for row in rows:
        s = row.summary
        delta_f_units = (
            "none" if s["best_single_scale"] is None else fmt(s["best_single_scale"] / s["delta_f"])
        )
        lines.append(
            f"| {fmt(row.epsilon)} | {fmt(s['kl_laplace'])} | {fmt(s['kl_policy'])} | "
            f"**{fmt(s['kl_ratio_policy'])}** | {delta_f_units} | "
            f"{fmt(s['kl_ratio_best_single'])} | {s['pdp_violations']} of {s['n']} "
            f"({fmt(s['max_loss'])}) | {s['action_counts']} | {row.env_steps} | "
            f"{row.train_seconds:.0f} |"
        )
    lines.append(
        f"| 0.011 (paper, NBA heights) | {PAPER_KL_LAPLACE} | {PAPER_KL_ILM} | "
        f"{PAPER_KL_ILM / PAPER_KL_LAPLACE:.3g} | - | - | - (not reported) | - | - | - |"
    )
    return "\n".join(lines)


def render_section(rows: list[Row], command: str, notes: str) -> str:
    """This benchmark's RESULTS.md section."""
    return "\n".join(
        [
            "## Instance-wise Laplace mechanism (`benchmarks/ilm.py`)",
            "",
            f"- Command: `{command}`",
            f"- Machine: {machine_line()}",
            "- Data: diabetes `age` (scikit-learn, 442 patients, 58 distinct ages), 50 bins; "
            "the paper's five actions; pDP under the mixture reading "
            "(`docs/components/instance-laplace.md`).",
            notes,
            "",
            table(rows),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epsilons", default="0.011,0.1,1", help="comma-separated ε values")
    parser.add_argument("--steps", type=int, default=20000, help="DQN env steps per ε")
    parser.add_argument("--yaml", default=str(DEFAULT_YAML), help="the DQN settings")
    parser.add_argument("--max-instances", type=int, help="subsample the dataset")
    parser.add_argument(
        "--unassigned", choices=("uniform", "same"), help="env_config unassigned (YAML's)"
    )
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    parser.add_argument("--results-md", default=str(RESULTS_MD))
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument(
        "--notes",
        default="",
        help="a line for RESULTS.md (the machine line, load included, is automatic)",
    )
    args = parser.parse_args(argv)

    import ray

    import rllib_privacy

    rllib_privacy.register()  # Registers the env

    config = load_config(Path(args.yaml))
    if args.max_instances:
        config["env_config"]["max_instances"] = args.max_instances
    if args.unassigned:
        config["env_config"]["unassigned"] = args.unassigned
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    rows = []
    epsilons = [float(e) for e in args.epsilons.split(",")]
    progress = Progress(len(epsilons))
    try:
        for epsilon in epsilons:
            rows.append(train_and_evaluate(config, epsilon, args.steps))
            progress.advance(f"ε = {epsilon:g}: {json.dumps(rows[-1].summary)}")
    finally:
        ray.shutdown()
    print(table(rows))
    if args.json:
        dump_json(args.json, [dataclasses.asdict(r) for r in rows], indent=2)
    if args.write_results:
        RESULTS.write(
            args.results_md, render_section(rows, command_line(__file__, argv), args.notes)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
