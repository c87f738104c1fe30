"""PATE benchmark: the accountant against the paper, supervised PATE on digits, PATE-PPO.

    python benchmarks/pate.py                        # everything, prints tables
    python benchmarks/pate.py --parts accountant,digits --write-results
    python benchmarks/pate.py --parts rl --seeds 2 --write-results

Parts:

* ``accountant``: our moments accountant next to the paper's numbers (MNIST setting
  T = 100, γ = 0.05, δ = 1e-5; SVHN setting T = 1000, δ = 1e-6) and dp-accounting 0.6.
* ``digits``: the supervised pipeline on scikit-learn's digits: student test accuracy
  against γ, the number of teachers and the number of labels Q, with both ε values; the
  non-private baselines (a model on all private data; the student on Q TRUE labels) come
  from the same run.
* ``rl``: PATE-PPO students on CartPole (gravity 9.8) labeled by 5 PPO teachers trained on
  disjoint gravity sets, against plain PPO with the same settings (the no-teacher
  baseline) in the same run; return against ε.

``--write-results`` replaces the parts it ran between ``<!-- pate:PART:start/end -->``
markers inside ``<!-- pate:start -->``/``<!-- pate:end -->`` of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from harness import (
    RESULTS_MD,
    Progress,
    ResultsSection,
    command_line,
    dump_json,
    load_json,
    machine_line,
    markdown_table,
)

from rllib_privacy.accounting import (
    advanced_composition_epsilon,
    pate_epsilon,
)
from rllib_privacy.pate.supervised import (
    load_digits_split,
    run_supervised_pate,
    teacher_votes,
    train_teachers,
)

PARTS = ("accountant", "digits", "rl")
#: This benchmark's RESULTS.md section, one part per measured part.
RESULTS = ResultsSection("pate", title="## PATE (`benchmarks/pate.py`)", parts=PARTS)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table; floats with 3 decimals, NaN as n/a."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return "n/a" if math.isnan(value) else f"{value:.3f}"
        return str(value)

    return markdown_table(header, [[cell(v) for v in row] for row in rows])


# --------------------------------------------------------------------------- accountant


def run_accountant(args: argparse.Namespace) -> str:
    import dp_accounting
    from dp_accounting import pld, rdp

    rows = []
    for label, queries, gamma, delta, paper in (
        ("MNIST setting", 100, 0.05, 1e-5, {"di": "5.30", "ac": "5.80"}),
        ("SVHN setting", 1000, 0.05, 1e-6, {"di": "—", "ac": "≈ 26"}),
    ):
        independent = pate_epsilon(queries, gamma=gamma, delta=delta)
        event = dp_accounting.LaplaceDpEvent(1 / (2 * gamma))
        rdp_acc, pld_acc = rdp.RdpAccountant(), pld.PLDAccountant()
        rdp_acc.compose(event, queries)
        pld_acc.compose(event, queries)
        rows.append(
            [
                f"{label}: T={queries}, γ={gamma}, δ={delta:g}",
                f"{independent.epsilon:.2f} (order {independent.order}); paper {paper['di']}",
                f"{advanced_composition_epsilon(queries, gamma=gamma, delta=delta):.2f}"
                f" (exact theorem {advanced_composition_epsilon(queries, gamma=gamma, delta=delta, exact=True):.2f});"  # noqa: E501
                f" paper {paper['ac']}",
                f"{rdp_acc.get_epsilon(delta):.2f}",
                f"{pld_acc.get_epsilon(delta):.2f}",
            ]
        )
    accountant = table(
        [
            "setting",
            "moments accountant, data-independent",
            "advanced composition",
            "dp-accounting RDP (Laplace)",
            "dp-accounting PLD (Laplace)",
        ],
        rows,
    )
    # Data-dependent ε from real votes: 50 logistic-regression teachers on digits.
    data = load_digits_split(seed=0)
    teachers = train_teachers(
        data["x_private"], data["y_private"], num_teachers=50, rng=np.random.default_rng(0)
    )
    votes = teacher_votes(teachers, data["x_public"][:100], 10)
    gap = np.sort(votes, axis=1)
    dependent_rows = []
    for gamma in (0.05, 0.1, 0.2):
        dd = pate_epsilon(votes, gamma=gamma, delta=1e-5)
        di = pate_epsilon(len(votes), gamma=gamma, delta=1e-5)
        dependent_rows.append([gamma, dd.epsilon, dd.order, di.epsilon, di.order])
    dependent = table(
        ["γ", "data-dependent ε", "order", "data-independent ε", "order"], dependent_rows
    )
    return (
        f"{accountant}\n\nData-dependent ε for 100 digits queries answered by 50 teachers "
        f"(mean top-two vote gap {float(np.mean(gap[:, -1] - gap[:, -2])):.1f} of 50), "
        f"δ = 1e-5 (the paper's MNIST 2.04 needs its own 250 teachers' votes):\n\n{dependent}"
    )


# --------------------------------------------------------------------------- digits


def run_digits(args: argparse.Namespace) -> str:
    from sklearn.linear_model import LogisticRegression

    rows = []
    baselines = []
    progress = Progress(
        args.seeds * len(args.digits_teachers) * len(args.digits_gammas) * len(args.digits_queries)
    )
    for seed in range(args.seeds):
        data = load_digits_split(seed=seed)
        full = LogisticRegression(max_iter=500).fit(data["x_private"], data["y_private"])
        full_acc = float(np.mean(full.predict(data["x_test"]) == data["y_test"]))
        for queries in args.digits_queries:
            order = np.random.default_rng(seed).permutation(len(data["y_public"]))[:queries]
            true = LogisticRegression(max_iter=500).fit(
                data["x_public"][order], data["y_public"][order]
            )
            baselines.append(
                (
                    seed,
                    queries,
                    full_acc,
                    float(np.mean(true.predict(data["x_test"]) == data["y_test"])),
                )
            )
        for num_teachers in args.digits_teachers:
            teachers = train_teachers(
                data["x_private"],
                data["y_private"],
                num_teachers=num_teachers,
                rng=np.random.default_rng(seed),
            )
            for gamma in args.digits_gammas:
                for queries in args.digits_queries:
                    result = run_supervised_pate(
                        data,
                        num_teachers=num_teachers,
                        gamma=gamma,
                        max_queries=queries,
                        selection="least_confident",
                        seed=seed,
                        teachers=teachers,
                    )
                    rows.append(result)
                    progress.advance(f"digits seed={seed} n={num_teachers} γ={gamma} Q={queries}: "
                                     f"acc={result.student_accuracy:.3f} ε={result.epsilon:.2f}/"
                                     f"{result.epsilon_data_independent:.2f}")  # fmt: skip
    grouped: dict[tuple[int, float, int], list[Any]] = {}
    for r in rows:
        grouped.setdefault((r.num_teachers, r.gamma, r.num_queries), []).append(r)
    lines = []
    for (n, gamma, q), results in sorted(grouped.items()):
        lines.append(
            [
                n,
                gamma,
                q,
                float(np.mean([r.teacher_accuracy for r in results])),
                float(np.mean([r.ensemble_accuracy for r in results])),
                float(np.mean([r.label_accuracy for r in results])),
                float(np.mean([r.student_accuracy for r in results])),
                float(np.mean([r.epsilon for r in results])),
                float(np.mean([r.epsilon_data_independent for r in results])),
            ]
        )
    main = table(
        [
            "teachers n",
            "γ",
            "labels Q",
            "teacher acc",
            "plurality acc",
            "noisy-label acc",
            "student acc",
            "ε data-dep.",
            "ε data-indep.",
        ],
        lines,
    )
    base_rows = []
    for q in args.digits_queries:
        sel = [b for b in baselines if b[1] == q]
        base_rows.append(
            [q, float(np.mean([b[3] for b in sel])), float(np.mean([b[2] for b in sel]))]
        )
    base = table(
        ["labels Q", "student on Q true labels", "one model on all private data"], base_rows
    )
    return (
        f"Means over {args.seeds} seed(s) (data split, partitions, query order, noise); "
        "logistic-regression teachers and student; least-confident-first queries (half "
        f"random, then the student's least confident); δ = 1e-5.\n\n{main}\n\n"
        f"Non-private baselines (same splits):\n\n{base}"
    )


# --------------------------------------------------------------------------- RL


RL_PPO = {
    "lr": 0.0003,
    "gamma": 0.99,
    "train_batch_size_per_learner": 2000,
    "minibatch_size": 250,
    "num_epochs": 10,
    "vf_loss_coeff": 0.01,
}
TEACHER_GRAVITIES = [
    [8.0, 8.2, 8.4],
    [9.0, 9.2, 9.4],
    [10.0, 10.2, 10.4],
    [11.0, 11.2, 11.4],
    [12.0, 12.2, 12.4],
]


def _ppo(config: Any, seed: int, gravities: list[float]) -> Any:
    return (
        config.environment(
            "rllib_privacy/CartPoleGravity-v0", env_config={"gravity_choices": gravities}
        )
        # Sampling in the algorithm's process: on a busy 2-core machine a remote EnvRunner
        # can miss RLlib's sample timeout; the labeling callback works the same there.
        .env_runners(num_env_runners=0, sample_timeout_s=600)
        .training(**RL_PPO)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=seed)
    )


def _train(algo: Any, steps: int) -> list[tuple[int, float, dict[str, Any]]]:
    curve = []
    while True:
        result = algo.train()
        sampled = int(result["num_env_steps_sampled_lifetime"])
        episode_return = result.get("env_runners", {}).get("episode_return_mean", math.nan)
        curve.append((sampled, float(episode_return), result))
        if sampled >= steps:
            return curve


def run_rl(args: argparse.Namespace) -> str:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig

    from rllib_privacy.algorithms.pate_ppo import PATEPPOConfig

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    if args.rl_teacher_dir is not None:
        # Teachers of an earlier run of this script (teacher_<i>/ and returns.json).
        work = args.rl_teacher_dir
        teacher_dirs = [str(work / f"teacher_{i}") for i in range(len(TEACHER_GRAVITIES))]
        teacher_returns = load_json(work / "returns.json")
        print(f"  reusing teachers in {work}", flush=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="pate_bench_"))
        teacher_dirs, teacher_returns = [], []
        for i, gravities in enumerate(TEACHER_GRAVITIES):
            algo = _ppo(PPOConfig(), seed=100 + i, gravities=gravities).build_algo()
            curve = _train(algo, args.rl_teacher_steps)
            teacher_returns.append(curve[-1][1])
            path = work / f"teacher_{i}"
            algo.save_to_path(str(path))
            algo.stop()
            teacher_dirs.append(str(path))
            print(f"  teacher {i} gravities {gravities}: return {curve[-1][1]:.1f}", flush=True)
        dump_json(work / "returns.json", teacher_returns, indent=None)
        print(f"  teachers saved in {work} (reuse: --rl-teacher-dir {work})", flush=True)

    variants: list[tuple[str, dict[str, Any] | None]] = [("PPO, no teachers (baseline)", None)]
    for gamma, budget, cap in args.rl_variants:
        variants.append(
            (
                f"PATE-PPO γ={gamma}, ε budget {budget:g}, ≤{cap} labels",
                {
                    "pate_teacher_checkpoints": teacher_dirs,
                    "pate_gamma": gamma,
                    "pate_epsilon_budget": budget,
                    "pate_max_queries": cap,
                    "pate_query_selection": "least_confident",
                    "pate_queries_per_sample": 200,
                },
            )
        )
    rows = []
    progress = Progress(len(variants) * args.seeds)
    for name, pate in variants:
        finals, aucs, eps_dd, eps_di, queries, agreement = [], [], [], [], [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            config = PPOConfig() if pate is None else PATEPPOConfig().pate(**pate)
            algo = _ppo(config, seed=seed, gravities=[9.8]).build_algo()
            curve = _train(algo, args.rl_student_steps)
            algo.stop()
            returns = [c[1] for c in curve]
            finals.append(float(np.nanmean(returns[-2:])))
            aucs.append(float(np.nanmean(returns)))
            last = curve[-1][2]
            if pate is not None:
                eps_dd.append(last["pate_epsilon"])
                eps_di.append(last["pate_epsilon_data_independent"])
                queries.append(last["pate_queries"])
                agreement.append(last["pate"]["label_agreement"])
            progress.advance(f"{name} seed {seed}: final {finals[-1]:.1f}, mean "
                             f"{aucs[-1]:.1f} ({time.perf_counter() - start:.0f} s)")  # fmt: skip
        rows.append(
            [
                name,
                float(np.mean(finals)),
                float(np.mean(aucs)),
                float(np.mean(queries)) if queries else 0.0,
                float(np.mean(eps_dd)) if eps_dd else 0.0,
                float(np.mean(eps_di)) if eps_di else 0.0,
                float(np.mean(agreement)) if agreement else math.nan,
            ]
        )
    ray.shutdown()
    result = table(
        [
            "student",
            "final return",
            "mean return over run",
            "labels",
            "ε data-dep.",
            "ε data-indep.",
            "label agreement*",
        ],
        rows,
    )
    return (
        f"5 PPO teachers, each {args.rl_teacher_steps} env steps on its own gravity set "
        f"{TEACHER_GRAVITIES} (final returns {', '.join(f'{r:.0f}' for r in teacher_returns)}); "
        f"students on gravity 9.8 for {args.rl_student_steps} env steps, mean of "
        f"{args.seeds} seed(s); same PPO settings for all (batch 2000, 10 epochs, lr 3e-4, "
        f"MLP 32×32); δ = 1e-5. Final return = mean of the last two iterations (max 200). "
        f"*label agreement: non-private diagnostic.\n\n{result}"
    )


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def _variants(text: str) -> list[tuple[float, float, int]]:
    out = []
    for item in text.split(";"):
        gamma, budget, cap = item.split(":")
        out.append((float(gamma), float(budget), int(cap)))
    return out


def build_parser() -> argparse.ArgumentParser:
    """Command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma list of {PARTS}")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per setting")
    parser.add_argument("--digits-teachers", type=_ints, default=[10, 25, 50])
    parser.add_argument("--digits-gammas", type=_floats, default=[0.05, 0.2, 1.0])
    parser.add_argument("--digits-queries", type=_ints, default=[50, 100, 200])
    parser.add_argument("--rl-teacher-steps", type=int, default=40000)
    parser.add_argument("--rl-student-steps", type=int, default=20000)
    parser.add_argument(
        "--rl-teacher-dir",
        type=Path,
        help="reuse the teachers an earlier run saved there (it prints the folder)",
    )
    parser.add_argument(
        "--rl-variants",
        type=_variants,
        default=_variants("1.0:inf:2000;0.2:20:2000"),
        help="PATE students as 'gamma:epsilon_budget:max_labels;...'",
    )
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    parser.add_argument("--results-md", type=Path, default=RESULTS_MD)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts, print them, optionally write them to RESULTS.md."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        print(f"error: unknown parts {sorted(unknown)}; choose from {PARTS}", file=sys.stderr)
        return 2
    runners = {"accountant": run_accountant, "digits": run_digits, "rl": run_rl}
    command = command_line(__file__, argv)
    written = {}
    for part in parts:
        start = time.perf_counter()
        print(f"== {part}", flush=True)
        body = runners[part](args)
        took = time.perf_counter() - start
        print(body, flush=True)
        written[part] = (
            f"### PATE: {part}\n\n`{command}` — {machine_line()}, {took:.0f} s wall "
            f"(shared machine: other jobs were running).\n\n{body}\n"
        )
    if args.write_results:
        RESULTS.write(args.results_md, written)
        print(f"wrote {', '.join(written)} to {args.results_md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
