"""benchmarks/poisoning.py without starting Ray: its grid, resume, table and RESULTS.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmark_modules import BENCH_DIR, benchmark_fixture

bench = benchmark_fixture("poisoning")


def _result(solved_at: float | None, submissions: int, filtered: int = 0) -> dict[str, Any]:
    return {
        "returncode": 0,
        "wall_s": 60.0,
        "solved_at": solved_at,
        "submissions": submissions,
        "eval_return_mean": 150.0 if solved_at else 20.0,
        "filtered": filtered,
        "rejected": 0,
        "load_before": 1.5,
        "load_after": 2.0,
    }


def test_script_imports_no_ray_or_torch_at_module_level() -> None:
    text = (BENCH_DIR / "poisoning.py").read_text()
    top = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    assert not any("ray" in line or "torch" in line for line in top), top


def test_grid_resumes_and_reports_each_cell(bench, tmp_path: Path, monkeypatch, capsys) -> None:
    ran: list[dict[str, Any]] = []

    def fake_run(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
        ran.append(dict(spec))
        attacked = spec["fraction"] > 0 and spec["robust"] == "none"
        filtered = 100 if spec["robust"] == "projection_filter" else 0
        return _result(None if attacked else 200_000, 300_000, filtered)

    monkeypatch.setattr(bench, "run_trial", fake_run)
    argv = ["--runs", "2", "--fractions", "0", "0.1", "--storage", str(tmp_path)]
    assert bench.main(argv) == 0
    # The baseline runs first, in the same grid: 2 fractions x 2 aggregations x 2 runs.
    assert len(ran) == 8 and ran[0]["fraction"] == 0.0
    out = capsys.readouterr().out
    assert "[8/8]" in out and "ETA" in out
    assert "| 0% | none | 2/2 | 200,000 |" in out
    assert "| 10% | none | 0/2 | — |" in out
    # Left out per 1000 reports: 100 of 300,000 per run.
    assert "| 10% | projection_filter | 2/2 | 200,000 | 150.0 | 0.3 | 0 |" in out
    # The same command again runs nothing: every trial is reused.
    ran.clear()
    assert bench.main(argv) == 0
    assert not ran and "reused" in capsys.readouterr().out


def test_results_section_is_written_between_its_markers(bench, tmp_path, monkeypatch) -> None:
    results_md = tmp_path / "RESULTS.md"
    results_md.write_text("# Benchmark results\n\nother text\n")
    monkeypatch.setattr(bench, "RESULTS_MD", results_md)
    monkeypatch.setattr(bench, "run_trial", lambda spec, timeout: _result(100_000, 100_000))
    argv = ["--runs", "1", "--fractions", "0", "--storage", str(tmp_path), "--write-results"]
    for _ in range(2):
        assert bench.main(argv) == 0
    text = results_md.read_text()
    assert text.count("<!-- poisoning:start -->") == 1 and "other text" in text
    assert "python benchmarks/poisoning.py --runs 1" in text and "1-min load" in text
