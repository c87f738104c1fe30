"""The scripts of benchmarks/ as modules for the tests: the one place that puts that folder
on ``sys.path``.

The scripts run as ``python benchmarks/<name>.py`` (their folder is then on the path) and
import the shared ``harness`` module by its plain name; the tests import them the same way.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))


def import_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` freshly imported as the module ``name``.

    The shared ``harness`` and the script's ``<name>_bench`` package are imported afresh with
    it: a test that re-imported ``harness`` alone would otherwise leave the package raising
    the old module's ``BenchmarkError``, which ``pytest.raises(bench.BenchmarkError)`` does
    not catch.
    """
    for module in list(sys.modules):
        if module in (name, "harness") or module.split(".")[0] == f"{name}_bench":
            sys.modules.pop(module, None)
    return importlib.import_module(name)


def benchmark_fixture(script: str, *, name: str = "bench") -> object:
    """A module-scoped fixture called ``name`` that yields ``benchmarks/<script>.py``."""

    @pytest.fixture(scope="module", name=name)
    def fixture() -> Iterator[ModuleType]:
        yield import_benchmark(script)
        sys.modules.pop(script, None)

    return fixture
