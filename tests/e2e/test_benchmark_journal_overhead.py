"""benchmarks/journal_overhead.py without starting Ray: arguments, appends, RESULTS.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "journal_overhead.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("journal_overhead_benchmark", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_bad_arguments_are_rejected(bench, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--repeats", "0"])
    with pytest.raises(SystemExit):
        bench.parse_args(["--disk-dir", str(tmp_path / "missing")])
    args = bench.parse_args(["--disk-dir", str(tmp_path), "--iterations", "2"])
    assert args.command_line.endswith(f"--disk-dir {tmp_path} --iterations 2")


def test_appends_are_measured_and_cleaned_up(bench, tmp_path: Path) -> None:
    assert bench.appends_per_second(str(tmp_path), 20) > 0
    assert list(tmp_path.iterdir()) == []


def test_section_is_inserted_then_replaced(bench, tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("# Results\n\nother text\n")
    bench.write_section(results, "first")
    bench.write_section(results, "second")
    text = results.read_text()
    assert text.startswith("# Results\n\nother text\n")
    assert text.count(bench.SECTION_START) == 1 and "first" not in text
    assert f"{bench.SECTION_START}\nsecond\n{bench.SECTION_END}" in text
