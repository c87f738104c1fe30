"""Write tests/fixtures/pate_2018.json from the authors' own PATE 2018 analysis code.

Runs the reference functions of Papernot et al., "Scalable Private Learning with PATE"
(ICLR 2018), ``research/pate_2018/core.py`` and ``smooth_sensitivity.py`` of
github.com/tensorflow/privacy, on seeded random vote histograms, and records per histogram:

* ``log_q``: ``core.compute_logq_gaussian(votes, sigma)`` (Prop. 7);
* ``rdp``: ``core.rdp_gaussian(log_q, sigma, ORDERS)`` (Theorem 6, data-dependent GNMax);
* ``log_pr_answered`` and ``threshold_rdp``: ``core.compute_logpr_answered`` and
  ``core.compute_rdp_threshold`` (Confident-GNMax's threshold step);
* ``ls_gnmax`` and ``ls_threshold``: ``smooth_sensitivity.compute_local_sensitivity_bounds_gnmax``
  and ``..._threshold`` at ``SS_ORDER`` (local sensitivity at every distance);
* ``laplace_log_q`` and ``laplace_rdp``: ``core.compute_logq_laplace`` (Lemma 4 of PATE 2017)
  and ``core.rdp_pure_eps`` (Theorem 3 of PATE 2017) for LNMax at the same γ;

and per setting the data-independent curve, ``log_q0`` (``compute_logq0_gnmax``), the GNSS cost
(``compute_rdp_of_smooth_sensitivity_gaussian``) and ``compute_eps_from_delta`` of the summed
curve. The reference code is read from a checkout or a git directory of the repository (e.g.
the one a mirror/fetch tool made), copied into a temporary directory and imported from there
(``absl``, which it imports for its ``main``, is stubbed if missing); nothing of it is kept.
This script is not imported by the package or the tests.

Usage::

    python benchmarks/pate_2018_fixtures.py PATH_TO_tensorflow-privacy [--output F]
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import numpy as np
import scipy

REFERENCE_DIR = "research/pate_2018"
REFERENCE_FILES = ("core.py", "smooth_sensitivity.py")
OUTPUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pate_2018.json"
ORDERS = [1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0, 32.0, 50.0, 100.0, 200.0]
SS_ORDER = 20.0
DELTA = 1e-5
#: (classes m, teachers n, GNMax σ, threshold T, σ₁, LNMax γ, histograms).
SETTINGS = [
    (10, 250, 40.0, 200.0, 150.0, 0.05, 12),
    (10, 100, 5.0, 60.0, 20.0, 0.5, 12),
    (2, 24, 2.0, 16.0, 4.0, 2.0, 8),
    (5, 50, 10.0, 35.0, 15.0, 0.2, 10),
]


def reference_sources(path: Path) -> tuple[dict[str, str], str | None]:
    """Return the reference files' texts and, for a git directory, the commit."""
    if (path / REFERENCE_DIR / "core.py").exists():
        return {f: (path / REFERENCE_DIR / f).read_text() for f in REFERENCE_FILES}, None
    git = ["git", f"--git-dir={path}"]
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    texts = {
        f: subprocess.run(
            [*git, "show", f"{commit}:{REFERENCE_DIR}/{f}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        for f in REFERENCE_FILES
    }
    return texts, commit


def import_reference(directory: Path, texts: dict[str, str]) -> tuple[Any, Any]:
    """Write the files to ``directory`` and import ``core`` and ``smooth_sensitivity``."""
    for name, text in texts.items():
        (directory / name).write_text(text)
    try:
        importlib.import_module("absl.app")
    except ImportError:  # Only the scripts' main() uses it.
        absl = types.ModuleType("absl")
        absl.app = types.ModuleType("absl.app")  # type: ignore[attr-defined]
        sys.modules["absl"], sys.modules["absl.app"] = absl, absl.app  # type: ignore[attr-defined]
    sys.path.insert(0, str(directory))
    return importlib.import_module("core"), importlib.import_module("smooth_sensitivity")


def histograms(rng: np.random.Generator, m: int, n: int, count: int) -> list[np.ndarray]:
    """Vote histograms from unanimous to near-uniform (Dirichlet-multinomial draws)."""
    out = [np.array([n] + [0] * (m - 1))]
    for concentration in np.geomspace(0.05, 20.0, count - 1):
        out.append(rng.multinomial(n, rng.dirichlet(np.full(m, concentration))))
    return out


def fixture_rows(core: Any, ss: Any) -> list[dict[str, Any]]:
    rng = np.random.default_rng(2018)
    orders = np.array(ORDERS)
    settings = []
    for m, n, sigma, threshold, sigma1, gamma, count in SETTINGS:
        rows = []
        for votes in histograms(rng, m, n, count):
            log_q = float(core.compute_logq_gaussian(votes, sigma))
            log_p = float(core.compute_logpr_answered(threshold, sigma1, votes))
            lap_log_q = float(core.compute_logq_laplace(votes, 1.0 / gamma))
            rows.append(
                {
                    "votes": votes.tolist(),
                    "log_q": log_q,
                    "rdp": core.rdp_gaussian(log_q, sigma, orders).tolist(),
                    "log_pr_answered": log_p,
                    "threshold_rdp": core.compute_rdp_threshold(log_p, sigma1, orders).tolist(),
                    "ls_gnmax": ss.compute_local_sensitivity_bounds_gnmax(
                        votes, n, sigma, SS_ORDER
                    ).tolist(),
                    "ls_threshold": ss.compute_local_sensitivity_bounds_threshold(
                        votes, n, threshold, sigma1, SS_ORDER
                    ).tolist(),
                    "laplace_log_q": lap_log_q,
                    "laplace_rdp": core.rdp_pure_eps(lap_log_q, 2.0 * gamma, orders).tolist(),
                }
            )
        total = np.sum([r["rdp"] for r in rows], axis=0)
        eps, order = core.compute_eps_from_delta(orders, total, DELTA)
        beta = 0.4 / SS_ORDER
        settings.append(
            {
                "num_classes": m,
                "num_teachers": n,
                "sigma": sigma,
                "threshold": threshold,
                "sigma_threshold": sigma1,
                "gamma": gamma,
                "data_independent_rdp": core.rdp_data_independent_gaussian(sigma, orders).tolist(),
                "threshold_data_independent_rdp": core.compute_rdp_data_independent_threshold(
                    sigma1, orders
                ).tolist(),
                "log_q0": ss.compute_logq0_gnmax(sigma, SS_ORDER),
                "gnss_beta": beta,
                "gnss_rdp": ss.compute_rdp_of_smooth_sensitivity_gaussian(beta, 20.0, SS_ORDER),
                "summed_epsilon": float(eps),
                "summed_order": float(order),
                "histograms": rows,
            }
        )
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "reference", type=Path, help="checkout or git directory of tensorflow/privacy"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    texts, commit = reference_sources(args.reference)
    with tempfile.TemporaryDirectory(prefix="pate_2018_reference_") as tmp:
        core, ss = import_reference(Path(tmp), texts)
        settings = fixture_rows(core, ss)
    fixture = {
        "header": {
            "description": "PATE 2018 (GNMax, Confident-GNMax, smooth sensitivity) values from "
            "the authors' reference functions; see benchmarks/pate_2018_fixtures.py.",
            "command": f"python benchmarks/pate_2018_fixtures.py {args.reference}",
            "reference_repository": "https://github.com/tensorflow/privacy",
            "reference_files": [f"{REFERENCE_DIR}/{f}" for f in REFERENCE_FILES],
            "reference_commit": commit,
            "orders": ORDERS,
            "ss_order": SS_ORDER,
            "delta": DELTA,
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "settings": settings,
    }
    text = json.dumps(fixture, allow_nan=False, default=_finite)
    args.output.write_text(text + "\n")
    print(f"wrote {args.output}")
    return 0


def _finite(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"non-finite value {value!r} in the fixtures")
    return value


if __name__ == "__main__":
    sys.exit(main())
