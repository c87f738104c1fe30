"""Shuffling amplification: FMT21 vs the default (stronger clone) vs the binary-RR limit.

Prints, for a few (ε₀, n, δ), the central ε of n shuffled ε₀-LDP reports by
``shuffle_epsilon(..., analysis="fmt21")`` (Feldman, McMillan & Talwar, FOCS 2021),
``shuffle_epsilon(...)`` (the default, their stronger clone, SODA 2023) and the exact ε of
n shuffled binary randomized responses (``binary_rr_shuffle_epsilon``, the lower limit of
any bound valid for every ε₀-LDP randomizer), then the composition over T rounds (basic
vs PLD) and ``local_epsilon_for_central`` for a few targets, with the CPU seconds of each
call. Light: about 10 s of CPU. With ``--write-results`` the tables replace the
``shuffle_bounds`` section of benchmarks/RESULTS.md.

Usage: ``python benchmarks/shuffle_bounds.py [--write-results]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from harness import RESULTS_MD, command_line, machine_line, markdown_table, write_results_section

from rllib_privacy.accounting import (
    binary_rr_shuffle_epsilon,
    local_epsilon_for_central,
    shuffle_epsilon,
    shuffled_rounds_epsilon,
)

POINTS = (
    (1.0, 2048, 1e-6),
    (0.5, 2048, 1e-6),
    (2.0, 2048, 1e-6),
    (4.0, 2048, 1e-6),
    (1.0, 1000, 1e-6),
    (1.0, 10_000, 1e-6),
    (1.0, 100_000, 1e-8),
    (2.0, 1_000_000, 1e-6),
)
ROUNDS = (1, 10, 100)
TARGETS = ((1.0, 2048, 1e-6, 1), (1.0, 2048, 1e-6, 10), (4.0, 2048, 1e-6, 100))


def timed(function: Callable[..., float], *args: Any, **kwargs: Any) -> tuple[float, float]:
    """``(value, CPU seconds)`` of one call."""
    start = time.process_time()
    value = function(*args, **kwargs)
    return value, time.process_time() - start


def bounds_table() -> str:
    rows = []
    for epsilon0, n, delta in POINTS:
        fmt21, _ = timed(shuffle_epsilon, epsilon0, n, delta, analysis="fmt21")
        ours, seconds = timed(shuffle_epsilon, epsilon0, n, delta)
        rr, _ = timed(binary_rr_shuffle_epsilon, epsilon0, n, delta)
        rows.append(
            [
                f"{epsilon0:g}",
                f"{n:,}",
                f"{delta:.0e}",
                f"{fmt21:.4f}",
                f"**{ours:.4f}**",
                f"{rr:.4f}",
                f"{ours / fmt21:.3f}",
                f"{seconds:.3f}",
            ]
        )
    header = [
        "ε₀",
        "n",
        "δ",
        "FMT21",
        "stronger clone (default)",
        "binary-RR lower limit",
        "default / FMT21",
        "CPU s (default)",
    ]
    return markdown_table(header, rows)


def rounds_table() -> str:
    rows = []
    epsilon0, n, delta = POINTS[0]
    for rounds in ROUNDS:
        basic, _ = timed(
            shuffled_rounds_epsilon, epsilon0, n, delta, rounds=rounds, composition="basic"
        )
        pld, seconds = timed(shuffled_rounds_epsilon, epsilon0, n, delta, rounds=rounds)
        rows.append([str(rounds), f"{basic:.4f}", f"**{pld:.4f}**", f"{seconds:.3f}"])
    header = [
        f"rounds T (ε₀ = {epsilon0:g}, n = {n}, total δ = {delta:.0e})",
        "basic composition",
        "PLD composition (default)",
        "CPU s (PLD)",
    ]
    return markdown_table(header, rows)


def targets_table() -> str:
    rows = []
    for central, n, delta, rounds in TARGETS:
        epsilon0, seconds = timed(local_epsilon_for_central, central, n, delta, rounds=rounds)
        fmt21, _ = timed(
            local_epsilon_for_central, central, n, delta, rounds=rounds, analysis="fmt21"
        )
        rows.append(
            [
                f"{central:g}",
                str(n),
                f"{delta:.0e}",
                str(rounds),
                f"**{epsilon0:.4f}**",
                f"{fmt21:.4f}",
                f"{seconds:.2f}",
            ]
        )
    header = ["central ε", "n", "total δ", "rounds", "local ε₀ (default)", "with FMT21", "CPU s"]
    return markdown_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args(argv)
    text = "\n\n".join(
        [
            "### Shuffle bound: FMT21 / stronger clone (default) / binary-RR lower limit",
            f"Command: `{command_line(__file__, argv)}`; {machine_line()}.",
            "All three use nothing but ε₀. FMT21: Feldman, McMillan & Talwar, FOCS 2021; "
            "stronger clone: their SODA 2023 bound (= Wang et al.'s VLDB 2024 variation-ratio "
            "bound for a generic ε₀-LDP randomizer; tests match the authors' code), valid for "
            "any ε₀-LDP randomizer; binary-RR lower limit: the exact ε of n shuffled binary "
            "randomized responses, which is ε₀-LDP, so no bound valid for every ε₀-LDP "
            "randomizer can be below it. Composition over T rounds: privacy loss distributions "
            "of the clone pair (dp-accounting), total δ.",
            bounds_table(),
            rounds_table(),
            targets_table(),
        ]
    )
    print(text)
    if args.write_results:
        write_results_section(RESULTS_MD, "shuffle_bounds", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
