"""Diagnostic probe of the FrozenLake collapse: per-iteration PPO state on the FrozenLake 8x8 arms.

Runs one arm of ``benchmarks/exploration.py``'s FrozenLake comparison (its
``FROZENLAKE_ARMS``: ``simhash`` is our ExplorationPPO YAML as shipped, with the 14-step
limit terminal; ``simhash_truncated`` the same with the limit truncated, RLlib's setting;
``rllib`` / ``rllib_terminal`` stock PPO with RLlib's ``CountBasedCuriosity``) and writes
one JSON line per iteration: extrinsic return, bonus, value loss, entropy, KL, the value
V(s) of the start cell and of the two cells next to the goal (from the learner's module)
and the greedy action of every cell.

    python benchmarks/frozenlake_probe.py --arm simhash_truncated --seed 0 --budget 130000 \
        --out /tmp/fl4/probe_simhash.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import exploration as bx

#: Cells (row·8 + col) above and left of the goal (7, 7).
NEAR_GOAL = (55, 62)


def _module_probe(algo: Any) -> dict[str, Any]:
    """V(s) and greedy actions of the learner's module on the 64 one-hot cells."""
    import torch
    from ray.rllib.core.models.base import CRITIC, ENCODER_OUT

    module = algo.learner_group._learner.module["default_policy"]
    cells = torch.eye(64)
    with torch.no_grad():
        emb = module.encoder({"obs": cells})[ENCODER_OUT]
        # A shared encoder (vf_share_layers) returns only the actor's embedding.
        emb = emb.get(CRITIC, emb.get("actor")) if isinstance(emb, dict) else emb
        values = module.vf(emb).squeeze(-1).numpy()
        probs = torch.softmax(module.forward_inference({"obs": cells})["action_dist_inputs"], -1)
    return {
        "V_start": round(float(values[0]), 3),
        "V_near_goal": [round(float(values[c]), 3) for c in NEAR_GOAL],
        "pi_max_mean": round(float(probs.max(-1).values.mean()), 3),
        "greedy": "".join("LDRU"[a] for a in probs.argmax(-1).tolist()),
    }


def main() -> None:
    """Parses the flags, trains one arm and writes the JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", choices=tuple(bx.FROZENLAKE_ARMS), default="simhash")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=130_000)
    parser.add_argument("--wall-cap", type=float, default=1_500.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    import rllib_privacy

    rllib_privacy.register()  # Registers the envs

    algo = bx.frozenlake_algo(args.arm, args.seed)
    start = time.time()
    with args.out.open("w") as out:
        while True:
            result = algo.train()
            learner = result["learners"]["default_policy"]
            section = result.get("exploration", {})
            record = {
                "steps": int(result["num_env_steps_sampled_lifetime"]),
                "ret": result["env_runners"].get("episode_return_mean"),
                "len": result["env_runners"].get("episode_len_mean"),
                "bonus": section.get("bonus_mean"),
                "vf_loss": learner.get("vf_loss"),
                "entropy": learner.get("entropy"),
                "kl": learner.get("mean_kl_loss"),
                "kl_coeff": learner.get("curr_kl_coeff"),
                "wall": round(time.time() - start, 1),
                **_module_probe(algo),
            }
            out.write(json.dumps(record) + "\n")
            out.flush()
            ret = record["ret"] or 0.0
            if record["steps"] >= args.budget or ret >= bx.FROZENLAKE_RETURN:
                break
            if time.time() - start > args.wall_cap:
                break
    algo.stop()


if __name__ == "__main__":
    main()
