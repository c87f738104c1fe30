"""benchmarks/journal_overhead.py without starting Ray: arguments, appends, RESULTS.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmark_modules import benchmark_fixture

bench = benchmark_fixture("journal_overhead")


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
    bench.RESULTS.write(results, "first")
    bench.RESULTS.write(results, "second")
    text = results.read_text()
    assert text.startswith("# Results\n\nother text\n")
    assert text.count(bench.RESULTS.start) == 1 and "first" not in text
    assert f"{bench.RESULTS.start}\nsecond\n{bench.RESULTS.end}" in text


def test_missing_experiment_file_is_a_clear_error_before_ray(bench, tmp_path, capsys) -> None:
    assert bench.main(["--config", str(tmp_path / "absent.yaml"), "--no-write"]) == 2
    assert "absent.yaml" in capsys.readouterr().err
