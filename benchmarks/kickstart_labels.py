"""What a teacher's ε buys as argmax labels: releases, label accuracy and information per (η, k).

For each teacher (a checkpoint: its Lipschitz bound and action count are read from it) and
each (η, k) of a grid near η = 1/m, prints:

- the releases the budget buys: the largest N with ε(N releases) ≤ the budget (Rényi DP of the
  Dirichlet mechanism composed N times, converted at δ), for every budget asked;
- the accuracy of an argmax label for a confident teacher (π one-hot), from
  ``argmax_label_distribution`` (exact, no sampling);
- the information of one label: the mutual information between the teacher's action (uniform
  over the m actions) and the label, ln m − H(label | action), in nats;
- releases × information: what the budget buys in all.

Near η = 1/m the last column changes little with k: a smaller k buys more, noisier labels.
Light: a few seconds of CPU per teacher. With ``--write-results`` the tables replace the
``kickstart_labels`` section of benchmarks/RESULTS.md.

Usage: ``python benchmarks/kickstart_labels.py --teacher cartpole=PATH [--teacher ...]``
(PATH: a teacher checkpoint or Tune trial folder, as ``teacher_checkpoint`` takes).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from harness import RESULTS_MD, command_line, machine_line, markdown_table, write_results_section
from scipy import stats

from rllib_privacy.accounting.dirichlet_renyi import (
    DEFAULT_ORDERS,
    dirichlet_rdp,
    rdp_to_epsilon,
)
from rllib_privacy.mechanisms import argmax_label_distribution

#: 1 − mη: the share of π̃ = (1 − mη)·π + η that comes from the teacher.
SIGNAL_SHARES = (0.04, 0.1, 0.2)
KS = (10.0, 30.0, 100.0, 300.0, 1000.0)
BUDGETS = (10.0, 1.0)
DELTA = 1e-5
ADJACENCY = 0.001  # the shipped YAMLs' teacher_adjacency b


def releases_within(budget: float, curve: np.ndarray, orders: np.ndarray) -> int:
    """The largest N with ε(N·curve) ≤ budget at δ (0 if one release exceeds it)."""

    def spent(count: int) -> float:
        return rdp_to_epsilon(orders, count * curve, DELTA)

    if spent(1) > budget:
        return 0
    low, high = 1, 2
    while spent(high) <= budget:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if spent(middle) <= budget else (low, middle)
    return low


def label_information(accuracy: float, num_actions: int) -> float:
    """ln m − H(label | action) for a label that is right w.p. ``accuracy``, else uniform."""
    wrong = (1.0 - accuracy) / (num_actions - 1)
    return math.log(num_actions) - float(stats.entropy([accuracy, *[wrong] * (num_actions - 1)]))


def teacher_table(name: str, path: str) -> str:
    from rllib_privacy.teachers.dirichlet_teacher import _module_lipschitz
    from rllib_privacy.teachers.loading import load_teacher_module, resolve_teacher_checkpoint

    module = load_teacher_module(resolve_teacher_checkpoint(path))
    lipschitz = _module_lipschitz(module)
    num_actions = int(module.action_space.n)
    orders = np.asarray(DEFAULT_ORDERS)
    confident = np.eye(num_actions)[0]
    rows = []
    for share in SIGNAL_SHARES:
        eta = (1.0 - share) / num_actions
        radius = share * lipschitz * ADJACENCY
        for k in KS:
            accuracy = float(argmax_label_distribution(confident, k=k, eta=eta)[0])
            information = label_information(accuracy, num_actions)
            curve = dirichlet_rdp(orders, k=k, eta=eta, radius=radius, num_actions=num_actions)
            counts = [releases_within(budget, curve, orders) for budget in BUDGETS]
            rows.append(
                [
                    f"{eta:.4g}",
                    f"{k:g}",
                    f"{accuracy:.3f}",
                    f"{information:.3f}",
                    *[f"{count:,}" for count in counts],
                    *[f"{count * information:,.0f}" for count in counts],
                ]
            )
    header = [
        "η",
        "k",
        "label accuracy (confident teacher)",
        "information per label (nats)",
        *[f"releases at ε {budget:g}" for budget in BUDGETS],
        *[f"releases × information at ε {budget:g}" for budget in BUDGETS],
    ]
    return "\n\n".join(
        [
            f"#### {name}: m = {num_actions}, L = {lipschitz:.4g} "
            f"(`policy_lipschitz_upper_bound`), b = {ADJACENCY:g}, radius = (1 − mη)·L·b",
            markdown_table(header, rows),
        ]
    )


def parse_teacher(text: str) -> tuple[str, str]:
    name, separator, path = text.partition("=")
    if not separator or not name or not path:
        raise argparse.ArgumentTypeError(f"--teacher takes NAME=PATH, got {text!r}")
    return name, path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--teacher",
        type=parse_teacher,
        action="append",
        required=True,
        help="NAME=PATH of a teacher checkpoint (repeatable)",
    )
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args(argv)
    text = "\n\n".join(
        [
            "### What a teacher's ε buys as argmax labels",
            f"Command: `{command_line(__file__, argv)}`; {machine_line()}.",
            f"Releases: the largest N whose composed Rényi DP converts to at most the budget at "
            f"δ = {DELTA:g} (``dirichlet_rdp``, exact for m = 2, a safe bound for m > 2). Label "
            "accuracy: P(the answer's largest entry is the teacher's action) for a one-hot "
            "teacher policy (``argmax_label_distribution``, exact). Information: ln m − "
            "H(label | action) with the action uniform, in nats.",
            *[teacher_table(name, path) for name, path in args.teacher],
        ]
    )
    print(text)
    if args.write_results:
        write_results_section(RESULTS_MD, "kickstart_labels", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
