"""The pure layers (mechanisms/, accounting/) must import and work without Ray (DESIGN §2)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ("mechanisms", "accounting", "exploration", "audit")
ALLOWED_THIRD_PARTY = {"numpy", "scipy", "torch"}
ALLOWED_OWN = (
    "rllib_privacy.errors",
    "rllib_privacy.mechanisms",
    "rllib_privacy.accounting",
    "rllib_privacy.exploration",
    "rllib_privacy.audit",
)
# opendp: the floating-point-safe samplers behind the mechanisms' secure_mode.
ALLOWED_THIRD_PARTY = ALLOWED_THIRD_PARTY | {"opendp"}


def pure_modules() -> list[Path]:
    paths = sorted(
        path
        for package in PURE_PACKAGES
        for path in (REPO_ROOT / "rllib_privacy" / package).rglob("*.py")
    )
    assert paths, "no modules found under the pure layer"
    return paths


def imported_modules(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: use absolute imports"
            names.append(node.module or "")
    return names


@pytest.mark.parametrize("path", pure_modules(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_pure_module_imports_no_ray(path: Path) -> None:
    for name in imported_modules(path):
        root = name.split(".")[0]
        assert root != "ray", f"{path} imports {name}"
        if root == "rllib_privacy":
            assert name.startswith(ALLOWED_OWN), f"{path} imports plug-in module {name}"
        else:
            allowed = root in ALLOWED_THIRD_PARTY or root in sys.stdlib_module_names
            assert allowed, f"{path} imports {name} (allowed: stdlib, numpy, scipy, torch, opendp)"


def test_pure_layer_works_with_ray_blocked() -> None:
    script = """
import sys
sys.modules["ray"] = None  # any `import ray` now raises ImportError
import numpy as np
import rllib_privacy.mechanisms as m
import rllib_privacy.accounting as a
import rllib_privacy.exploration as x
import rllib_privacy.audit as audit
assert x.ExactCounter().increment_and_count(x.SimHash(2, 8, seed=0).codes(np.ones((3, 2))))[0] == 3
rng = np.random.default_rng(0)
mechanism = m.GradientMechanism("prs", 5.0, 1.0)
out = mechanism.privatize(np.ones(8), rng)
m.laplace_gradient(np.ones(8), epsilon=1.0, clip=0.01, rng=rng)
ledger = a.LDPLedger(1.0)
ledger.record("agent-0", 1.0, mechanism.name)
assert out.shape == (8,) and ledger.max_epsilon_spent == 1.0
verdict = audit.audit_mechanism(
    lambda v, g: v + g.laplace(), 0.0, 1.0, epsilon=1.0, num_samples=100, rng=rng
)
assert verdict.num_samples == 100 and verdict.supported_epsilon >= 0.0
assert sys.modules["ray"] is None
assert not [name for name in sys.modules if name.startswith("ray.")]
print("ok")
"""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")
