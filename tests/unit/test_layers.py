"""The package's layers, enforced by the import-linter contracts in pyproject.toml.

``lint-imports`` reads the imports statically, function-level ones included, so a lazy
import cannot hide an upward dependency or a cycle. The contracts are checked on the real
package, and each kind of contract is shown to fail on a copy of the package with one
violating import added (so that none of them passes vacuously). The pure layers are also
checked to import only numpy/scipy/torch/opendp/dp-accounting and the standard library, and to work
with Ray blocked.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from importlinter import api as importlinter_api

REPO_ROOT = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ("mechanisms", "accounting", "exploration", "audit")
# opendp: the floating-point-safe samplers behind the mechanisms' secure_mode.
# dp_accounting: Google's privacy-loss-distribution composition (the shuffle accountant's
# rounds); pure Python on numpy/scipy, no Ray.
ALLOWED_THIRD_PARTY = {"numpy", "scipy", "torch", "opendp", "dp_accounting"}
ALLOWED_OWN = (
    "rllib_privacy._validation",
    "rllib_privacy.errors",
    "rllib_privacy.mechanisms",
    "rllib_privacy.accounting",
    "rllib_privacy.exploration",
    "rllib_privacy.audit",
)

_LINT = (
    "import sys\n"
    "from importlinter.cli import lint_imports_command\n"
    "sys.argv = ['lint-imports', '--no-cache', '--no-logo', *sys.argv[1:]]\n"
    "lint_imports_command()\n"
)


def run_python(script: str, *args: str, root: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh interpreter with ``root``'s ``rllib_privacy`` first on the path."""
    env = dict(os.environ)
    # A copy under `root` must shadow the installed (editable) package.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def run_lint_imports(root: Path, *contract_ids: str) -> subprocess.CompletedProcess[str]:
    """Run ``lint-imports`` on the ``rllib_privacy`` package and pyproject.toml under ``root``.

    With ``contract_ids``, only those contracts are checked.
    """
    options = [arg for cid in contract_ids for arg in ("--contract", cid)]
    return run_python(_LINT, *options, root=root)


def contracts() -> list[dict]:
    config = importlinter_api.read_configuration(str(REPO_ROOT / "pyproject.toml"))
    return config["contracts_options"]


# --------------------------------------------------------------------------------------
# The contracts.
# --------------------------------------------------------------------------------------


def test_import_contracts_are_kept() -> None:
    result = run_lint_imports(REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    kept = result.stdout.count(" KEPT")
    assert kept == len(contracts()) and "0 broken" in result.stdout, result.stdout


def test_contracts_cover_the_layers_the_design_names() -> None:
    by_id = {c["id"]: c for c in contracts()}
    assert {"layers", "pure-no-ray", "experiments-layers", "no-sibling-cycles"} <= set(by_id)
    layers = [layer.split(" | ") for layer in by_id["layers"]["layers"]]
    flat = [name.strip("()") for layer in layers for name in layer]
    # Down the list: entry points, loader, plug-ins, trust domains, envs, pure, helpers.
    order = ["cli", "experiments", "algorithms", "connectors", "teachers", "envs"]
    order += ["accounting", "mechanisms", "_validation"]
    assert [flat.index(name) for name in order] == sorted(flat.index(name) for name in order)
    assert str(by_id["layers"]["exhaustive"]) == "True"
    assert set(by_id["pure-no-ray"]["forbidden_modules"]) >= {"ray"}
    assert {f"rllib_privacy.{p}" for p in PURE_PACKAGES} <= set(
        by_id["pure-no-ray"]["source_modules"]
    )


#: (contract id, file to change under rllib_privacy/, text appended to it).
VIOLATIONS = [
    # A cycle the package once had: an env asking the loader for did_you_mean, lazily.
    pytest.param(
        "layers",
        "envs/cartpole_gravity.py",
        "\n\ndef _hint(word):\n    from rllib_privacy.experiments import did_you_mean\n\n"
        "    return did_you_mean(word, ())\n",
        id="lazy-upward-import",
    ),
    pytest.param(
        "pure-no-ray",
        "accounting/ledger_probe.py",
        "from rllib_privacy.algorithms.config_keys import GroupedConfigMixin  # noqa\n"
        "from ray.tune import registry  # noqa\n",
        id="ray-in-pure-layer",
    ),
    pytest.param(
        "layers",
        "unplaced_module.py",
        "X = 1\n",
        id="module-without-a-layer",
    ),
    pytest.param(
        "algorithms-independent",
        "algorithms/ldp_a3c/probe.py",
        "from rllib_privacy.algorithms.kickstart_ppo import KickstartPPO  # noqa\n",
        id="algorithm-imports-another",
    ),
    pytest.param(
        "experiments-layers",
        "experiments/parse.py",
        "\nfrom rllib_privacy.experiments import pipeline  # noqa\n",
        id="experiments-upward",
    ),
]


@pytest.mark.parametrize(("contract_id", "relative", "text"), VIOLATIONS)
def test_a_violating_import_breaks_its_contract(
    tmp_path: Path, contract_id: str, relative: str, text: str
) -> None:
    shutil.copytree(
        REPO_ROOT / "rllib_privacy",
        tmp_path / "rllib_privacy",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "rllib_privacy" / relative
    assert run_lint_imports(tmp_path, contract_id).returncode == 0  # The copy is clean.
    with open(target, "a", encoding="utf-8") as f:
        f.write(text)
    result = run_lint_imports(tmp_path, contract_id)
    assert result.returncode != 0, result.stdout
    module = ".".join(target.relative_to(tmp_path).with_suffix("").parts)
    assert module in result.stdout, result.stdout


def test_experiment_loader_imports_light() -> None:
    """``rllib`` imports the loader at start-up: Ray, gymnasium and torch load only later."""
    script = (
        "import sys\n"
        "import rllib_privacy.experiments\n"
        "heavy = {'ray', 'gymnasium', 'torch', 'scipy'} & {m.split('.')[0] for m in sys.modules}\n"
        "print(sorted(heavy))\n"
    )
    result = run_python(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# --------------------------------------------------------------------------------------
# The pure layers (mechanisms/, accounting/, exploration/, audit/).
# --------------------------------------------------------------------------------------


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
            assert allowed, f"{path} imports {name} (allowed: stdlib, {ALLOWED_THIRD_PARTY})"


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
ledger.record(a.LDPReport(agent_id="agent-0", epsilon=1.0, mechanism=mechanism.name))
assert out.shape == (8,) and ledger.max_epsilon_spent == 1.0
verdict = audit.audit_mechanism(
    lambda v, g: v + g.laplace(), 0.0, 1.0, epsilon=1.0, num_samples=100, rng=rng
)
assert verdict.num_samples == 100 and verdict.supported_epsilon >= 0.0
assert sys.modules["ray"] is None
assert not [name for name in sys.modules if name.startswith("ray.")]
print("ok")
"""
    result = run_python(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")
