"""Write the shuffling-amplification test fixtures from the authors' own code.

Two kinds (``--kind``), each from a checkout or git directory of the authors' repository:

``fmt21`` (default), tests/fixtures/shuffle_amplification.json. Runs Feldman, McMillan &
Talwar's reference implementation (``computeamplification.py``
of github.com/apple/ml-shuffling-amplification, "Hiding Among the Clones", FOCS 2021) on a
grid of (ε₀, n, δ), in a temporary directory, and records for each point:

* ``reference_upper``: ``numericalanalysis(n, ε₀, δ, ITERATIONS, step, True)``, the
  reference's numerical upper bound on ε, with ``step = max(1, n // 100)``;
* ``reference_upper_patched``: the same with the reference's one-line typo in
  ``deltacomp`` fixed (``max(deltaq_upperc, deltaq_upperc)`` -> ``max(deltaq_upperc,
  deltaq_lowerc)``); ``rllib_privacy`` reproduces this one with the reference's stopping
  rule;
* ``reference_lower``: ``numericalanalysis(..., False)``, the reference's *lower* bound on
  the ε of the same analysis (no correct upper bound may fall below it);
* ``exact``: the analysis's δ(ε) summed over every clone count c = 0..n-1 exactly (no
  blocks, no early stop), with the reference's own ``onestep`` (vectorized over c) and
  ``binarysearch`` (bracket [0, ε₀]); ``rllib_privacy.accounting.shuffle_epsilon``
  computes this up to a tail of 1e-6·δ;
* ``reference_closed_form``: the reference's ``closedformanalysis`` (a slightly looser
  variant of the paper's closed form).

``unified``, tests/fixtures/shuffle_stronger_clone.json. Runs ``unifiedamplification.py``
of github.com/wangsw/PrivacyAmplification (Wang et al., "Privacy Amplification via
Shuffling: Unified, Simplified, and Tightened", VLDB 2024), at ``UNIFIED_POINTS``, with
``UNIFIED_ITERATIONS`` bisection steps in [0, ε₀], and records:

* ``variation_ratio_upper``: ``amplificationUB(p, β, q, q, n, δ, T)`` with the parameters
  of a generic ε₀-LDP randomizer (``computeUBParameters(ε₀, None, None)``: p = q = e^ε₀,
  β = (e^ε₀-1)/(e^ε₀+1)), an upper bound on ε (δ padded by its summation tolerance);
* ``variation_ratio_lower``: ``amplificationLB(...)``, the same analysis's lower bound on
  its ε (no correct evaluation of the analysis may fall below it);
* ``strong_clone_upper``: ``amplificationUBCore(e^ε₀, 1/(e^ε₀+1), 1/(e^ε₀+1),
  1/(e^ε₀+1), n, δ, T)``, the script's own evaluation of Feldman, McMillan & Talwar's
  stronger clone (SODA 2023), the analysis ``rllib_privacy`` uses by default.

The reference code is read from a checkout (a directory holding ``computeamplification.py``)
or a git directory of the repository (e.g. the one a mirror/fetch tool made), copied into a
temporary directory and imported from there; nothing of it is kept. This script is not
imported by the package or the tests.

Usage::

    python benchmarks/shuffle_fixtures.py PATH_TO_ml-shuffling-amplification [--output F]
    python benchmarks/shuffle_fixtures.py --kind unified PATH_TO_PrivacyAmplification
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import scipy
import scipy.stats as stats
from harness import REPO_ROOT, command_line, dump_json, import_path

DEFAULT_OUTPUT = REPO_ROOT / "tests" / "fixtures" / "shuffle_amplification.json"
REFERENCE_FILE = "computeamplification.py"
UNIFIED_OUTPUT = REPO_ROOT / "tests" / "fixtures" / "shuffle_stronger_clone.json"
UNIFIED_FILE = "unifiedamplification.py"
# The reference sums over every clone count in Python (about a minute per bound at
# n = 1000 on a loaded machine), so the larger n are sampled: every (ε₀, δ) at n = 100,
# two points at n = 1000 and the headline point ε₀ = 1, n = 2048, δ = 1e-6.
UNIFIED_POINTS = (
    *((epsilon0, 100, delta) for epsilon0 in (0.5, 1.0, 2.0, 4.0) for delta in (1e-6, 1e-8)),
    (1.0, 1000, 1e-6),
    (4.0, 1000, 1e-8),
    (1.0, 2048, 1e-6),
)
UNIFIED_ITERATIONS = 30
EPSILON0S = (0.5, 1.0, 2.0, 4.0, 8.0)
NUM_REPORTS = (100, 1000, 10000)
DELTAS = (1e-6, 1e-8)
ITERATIONS = 30
TYPO = "deltaqadd = max(deltaq_upperc, deltaq_upperc)"
TYPO_FIXED = "deltaqadd = max(deltaq_upperc, deltaq_lowerc)"


def reference_source(path: Path, name: str = REFERENCE_FILE) -> tuple[str, str | None]:
    """Return the reference file's text and, for a git directory, its commit."""
    candidate = path / name
    if candidate.is_file():
        return candidate.read_text(encoding="utf-8"), None
    git = ["git", f"--git-dir={path}"]
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    text = subprocess.run(
        [*git, "show", f"{commit}:{name}"], check=True, capture_output=True, text=True
    ).stdout
    return text, commit


def load_module(directory: Path, name: str, text: str) -> ModuleType:
    file = directory / f"{name}.py"
    file.write_text(text, encoding="utf-8")
    return import_path(name, file)


def exact_epsilon(ref: ModuleType, epsilon0: float, n: int, delta: float) -> float:
    """Binary-search ε with δ(ε) summed exactly over C ~ Bin(n-1, e^-ε₀), via ``onestep``."""
    c = np.arange(n, dtype=np.float64)
    weights = stats.binom.pmf(c, n - 1, math.exp(-epsilon0))

    def delta_of(eps: float, _delta: float) -> float:
        p_side = float(np.sum(weights * ref.onestep(c, eps, epsilon0, True)))
        q_side = float(np.sum(weights * ref.onestep(c, eps, epsilon0, False)))
        return max(p_side, q_side)

    return float(ref.binarysearch(delta_of, delta, ITERATIONS, epsilon0))


def fixture_rows(ref: ModuleType, patched: ModuleType | None) -> list[dict[str, Any]]:
    rows = []
    for n in NUM_REPORTS:
        step = max(1, n // 100)
        for epsilon0 in EPSILON0S:
            for delta in DELTAS:
                start = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):  # "not a valid regime" notes
                    row = {
                        "epsilon0": epsilon0,
                        "num_reports": n,
                        "delta": delta,
                        "step": step,
                        "num_iterations": ITERATIONS,
                        "reference_upper": ref.numericalanalysis(
                            n, epsilon0, delta, ITERATIONS, step, True
                        ),
                        "reference_upper_patched": (
                            None
                            if patched is None
                            else patched.numericalanalysis(
                                n, epsilon0, delta, ITERATIONS, step, True
                            )
                        ),
                        "reference_lower": ref.numericalanalysis(
                            n, epsilon0, delta, ITERATIONS, step, False
                        ),
                        "exact": exact_epsilon(ref, epsilon0, n, delta),
                        "reference_closed_form": ref.closedformanalysis(n, epsilon0, delta),
                    }
                rows.append(
                    {key: float(v) if isinstance(v, float) else v for key, v in row.items()}
                )
                print(
                    f"n={n:6d} eps0={epsilon0:4.1f} delta={delta:.0e}: "
                    f"upper {row['reference_upper']:.6f} exact {row['exact']:.6f} "
                    f"lower {row['reference_lower']:.6f} ({time.perf_counter() - start:.1f} s)",
                    file=sys.stderr,
                )
    return rows


def unified_rows(ref: ModuleType) -> list[dict[str, Any]]:
    rows = []
    for epsilon0, n, delta in UNIFIED_POINTS:
        start = time.perf_counter()
        p, beta, q0, q1 = ref.computeUBParameters(epsilon0, None, None)
        r = 1.0 / (math.exp(epsilon0) + 1.0)
        rows.append(
            {
                "epsilon0": epsilon0,
                "num_reports": n,
                "delta": delta,
                "num_iterations": UNIFIED_ITERATIONS,
                "variation_ratio_upper": float(
                    ref.amplificationUB(p, beta, q0, q1, n, delta, UNIFIED_ITERATIONS)
                ),
                "variation_ratio_lower": float(
                    ref.amplificationLB(p, beta, q0, q1, n, delta, UNIFIED_ITERATIONS)
                ),
                "strong_clone_upper": float(
                    ref.amplificationUBCore(
                        math.exp(epsilon0), r, r, r, n, delta, UNIFIED_ITERATIONS
                    )
                ),
            }
        )
        print(
            f"n={n:6d} eps0={epsilon0:4.1f} delta={delta:.0e}: "
            f"upper {rows[-1]['variation_ratio_upper']:.6f} "
            f"lower {rows[-1]['variation_ratio_lower']:.6f} "
            f"({time.perf_counter() - start:.1f} s)",
            file=sys.stderr,
        )
    return rows


def main_unified(reference: Path, output: Path, argv: list[str] | None) -> int:
    text, commit = reference_source(reference, UNIFIED_FILE)
    with tempfile.TemporaryDirectory(prefix="shuffle_unified_") as tmp:
        rows = unified_rows(load_module(Path(tmp), "reference_unifiedamplification", text))
    document = {
        "header": {
            "description": (
                "Wang et al. (VLDB 2024) variation-ratio and stronger-clone (Feldman, McMillan "
                "& Talwar, SODA 2023) shuffling amplification for a generic eps0-LDP "
                "randomizer: values from wangsw/PrivacyAmplification; see "
                "benchmarks/shuffle_fixtures.py for each field."
            ),
            "command": command_line(__file__, argv),
            "reference_repository": "https://github.com/wangsw/PrivacyAmplification",
            "reference_file": UNIFIED_FILE,
            "reference_commit": commit,
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "points": rows,
    }
    dump_json(output, document)
    print(f"wrote {len(rows)} points to {output}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "reference",
        type=Path,
        help=(
            "checkout or git directory of apple/ml-shuffling-amplification (--kind fmt21) "
            "or wangsw/PrivacyAmplification (--kind unified)"
        ),
    )
    parser.add_argument("--kind", choices=("fmt21", "unified"), default="fmt21")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.kind == "unified":
        return main_unified(args.reference, args.output or UNIFIED_OUTPUT, argv)
    args.output = args.output or DEFAULT_OUTPUT

    text, commit = reference_source(args.reference)
    with tempfile.TemporaryDirectory(prefix="shuffle_reference_") as tmp:
        ref = load_module(Path(tmp), "reference_computeamplification", text)
        patched = None
        if text.count(TYPO) == 1:
            patched = load_module(
                Path(tmp), "reference_computeamplification_patched", text.replace(TYPO, TYPO_FIXED)
            )
        rows = fixture_rows(ref, patched)

    command = command_line(__file__, argv)
    document = {
        "header": {
            "description": (
                "Feldman-McMillan-Talwar (FOCS 2021) shuffling amplification: values from the "
                "authors' reference code; see benchmarks/shuffle_fixtures.py for each field."
            ),
            "command": command,
            "reference_repository": "https://github.com/apple/ml-shuffling-amplification",
            "reference_file": REFERENCE_FILE,
            "reference_commit": commit,
            "typo_patched": patched is not None,
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "points": rows,
    }
    dump_json(args.output, document)
    print(f"wrote {len(rows)} points to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
