"""benchmarks/harness.py: RESULTS.md sections, machine line, progress, JSON, statistics; and
the rule that the scripts share it instead of carrying copies (an AST scan)."""

from __future__ import annotations

import ast
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from benchmark_modules import BENCH_DIR, benchmark_fixture, import_benchmark

INF = math.inf
harness = benchmark_fixture("harness", name="harness")
SCRIPTS = sorted(p for p in BENCH_DIR.glob("*.py") if p.name != "harness.py")

OTHERS = (
    "# Benchmark results\n\nintro\n\n"
    "<!-- pgc_a3c:start -->\n## PGC\n\n<!-- pgc_a3c:speed:start -->\nfast\n"
    "<!-- pgc_a3c:speed:end -->\n<!-- pgc_a3c:end -->\n\n"
    "<!-- soak:start -->\nsoak text  \n\n<!-- soak:end -->\ntrailing text without newline"
)


# --------------------------------------------------------------------------------------
# RESULTS.md writer.
# --------------------------------------------------------------------------------------


def test_writer_replaces_only_its_own_section_and_is_idempotent(harness, tmp_path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text(OTHERS)
    harness.write_results_section(path, "soak", "new soak\n\n")
    text = path.read_text()
    assert text == OTHERS.replace("soak text  \n\n", "new soak\n")
    harness.write_results_section(path, "soak", "new soak\n\n")
    assert path.read_text() == text  # idempotent
    # A name that is a prefix of a nested part's marker finds its own pair only.
    harness.write_results_section(path, "pgc_a3c:speed", "faster")
    assert path.read_text() == text.replace("\nfast\n", "\nfaster\n")


def test_writer_creates_a_missing_section_at_the_end(harness, tmp_path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text(OTHERS)
    harness.write_results_section(path, "ilm", "ILM table")
    text = path.read_text()
    assert text == OTHERS + "\n\n<!-- ilm:start -->\nILM table\n<!-- ilm:end -->\n"
    harness.write_results_section(path, "ilm", "ILM table")
    assert path.read_text() == text
    fresh = tmp_path / "new" / "RESULTS.md"
    harness.write_results_section(fresh, "ilm", "x")
    assert (
        fresh.read_text() == harness.RESULTS_HEADER + "\n<!-- ilm:start -->\nx\n<!-- ilm:end -->\n"
    )


def test_writer_leaves_every_other_marker_of_the_real_file_byte_identical(harness, tmp_path):
    real = (BENCH_DIR / "RESULTS.md").read_text(encoding="utf-8")
    names = sorted(set(re.findall(r"<!-- ([\w:-]+):start -->", real)))
    assert "pgc_a3c" in names and "kickstart:overhead" in names
    for name in names:
        start, end = harness.markers(name)
        path = tmp_path / "RESULTS.md"
        path.write_text(real, encoding="utf-8")
        harness.write_results_section(path, name, f"replaced {name}")
        text = path.read_text(encoding="utf-8")
        head, _, rest = real.partition(start)
        tail = rest.partition(end)[2]
        assert text == f"{head}{start}\nreplaced {name}\n{end}{tail}", name


def test_a_damaged_section_is_refused_and_the_file_kept(harness, tmp_path) -> None:
    path = tmp_path / "RESULTS.md"
    broken = "# R\n\n<!-- soak:start -->\nno end marker\n"
    path.write_text(broken)
    with pytest.raises(ValueError, match="soak:end"):
        harness.write_results_section(path, "soak", "new")
    path.write_text("# R\n\n<!-- soak:end -->\n")
    with pytest.raises(ValueError, match="soak:start"):
        harness.write_results_section(path, "soak", "new")
    path.write_text(broken)
    with pytest.raises(ValueError, match="soak:end"):
        harness.write_results_parts(path, "soak", {"a": "new"}, title="## Soak")
    assert path.read_text() == broken


def test_parts_keep_their_order_title_and_the_text_between_them(harness, tmp_path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text(OTHERS)
    section = harness.ResultsSection("kick", title="## Kick", parts=("a", "b", "c"))
    section.write(path, {"c": "C1"})
    section.write(path, {"a": "A1"})  # goes before c
    section.write(path, {"zz": "Z1"})  # unknown part: at the end
    section.write(path, {"b": "B1", "c": "C2"})  # b between a and c; c in place
    text = path.read_text()
    assert text.startswith(OTHERS)  # appended after everything else, which is unchanged
    body = text[len(OTHERS) :]
    assert body == (
        "\n\n<!-- kick:start -->\n## Kick\n\n"
        "<!-- kick:a:start -->\nA1\n<!-- kick:a:end -->\n\n"
        "<!-- kick:b:start -->\nB1\n<!-- kick:b:end -->\n\n"
        "<!-- kick:c:start -->\nC2\n<!-- kick:c:end -->\n\n"
        "<!-- kick:zz:start -->\nZ1\n<!-- kick:zz:end -->\n<!-- kick:end -->\n"
    )
    # Hand-written text between parts survives a rewrite of a part.
    path.write_text(text.replace("<!-- kick:b:end -->\n", "<!-- kick:b:end -->\nReading.\n"))
    section.write(path, {"b": "B2"})
    assert "<!-- kick:b:end -->\nReading.\n" in path.read_text()
    assert section.part_markers("b") == ("<!-- kick:b:start -->", "<!-- kick:b:end -->")


# --------------------------------------------------------------------------------------
# Machine line, progress, JSON, statistics.
# --------------------------------------------------------------------------------------


def test_machine_line_has_date_cpus_and_the_load_average(harness) -> None:
    info = harness.machine_info()
    assert info["nproc"] >= 1 and math.isfinite(info["load_1min"])
    line = harness.machine_line(info)
    assert line.startswith(info["date"]) and f"{info['nproc']} CPUs" in line
    assert f"1-min load average {info['load_1min']:.2f}" in line
    bare = harness.machine_line(info, date=False, load=False)
    assert info["date"] not in bare and "load average" not in bare
    assert "1-min load average" in harness.machine_line()
    # A machine dict stored by an older run (no date, no load) still renders.
    old = {k: v for k, v in info.items() if k not in ("date", "load_1min")}
    assert harness.machine_line(old) == bare


def test_progress_line_counts_elapsed_and_eta(harness) -> None:
    now = [100.0]
    lines: list[str] = []
    progress = harness.Progress(4, echo=lines.append, clock=lambda: now[0])
    assert progress.line("starting") == "[0/4] starting (elapsed 0 s, ETA ?)"
    now[0] += 10.0
    assert progress.advance("first") == "[1/4] first (elapsed 10 s, ETA 30 s)"
    now[0] += 110.0
    progress.update(2, "second")
    assert lines == [
        "[1/4] first (elapsed 10 s, ETA 30 s)",
        "[2/4] second (elapsed 2 min 00 s, ETA 2 min 00 s)",
    ]
    assert harness.format_duration(7325) == "2 h 02 min"
    assert harness.format_duration(math.nan) == "?"


def test_progress_eta_counts_only_this_runs_steps(harness) -> None:
    now = [0.0]
    lines: list[str] = []
    progress = harness.Progress(10, echo=lines.append, clock=lambda: now[0])
    progress.skip(4, "4 reused")  # done before this run: no pace yet
    now[0] += 30.0
    progress.advance("fifth")  # 1 step in 30 s, 5 left
    assert lines == [
        "[4/10] 4 reused (elapsed 0 s, ETA ?)",
        "[5/10] fifth (elapsed 30 s, ETA 2 min 30 s)",
    ]


def test_trial_store_reuses_a_trial_only_with_the_same_spec(harness, tmp_path) -> None:
    path = tmp_path / "run" / "trials.json"
    store = harness.TrialStore(path)
    assert len(store) == 0 and not path.exists()
    spec = {"env": "CartPole-v1", "seed": 0, "stop": (450.0, INF)}
    store.put("a/seed=0", spec, {"path": "x", "steps": INF})
    again = harness.TrialStore(path)  # read back from the file
    assert "a/seed=0" in again and again.get("a/seed=0", spec) == {"path": "x", "steps": "inf"}
    assert again.get("a/seed=0", {**spec, "seed": 1}) is None  # changed setting: rerun
    assert again.recorded() == {"a/seed=0": {"path": "x", "steps": "inf"}}
    done, todo = again.split({"a/seed=0": spec, "a/seed=1": spec})
    assert list(done) == ["a/seed=0"] and todo == ["a/seed=1"]
    _, todo = again.split({"a/seed=0": spec}, reusable=lambda result: False)
    assert todo == ["a/seed=0"]  # recorded, but its files are gone
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    with pytest.raises(harness.BenchmarkError, match="other.json"):
        harness.TrialStore(tmp_path / "other.json")


def test_run_resumable_runs_only_the_trials_not_recorded(harness, tmp_path) -> None:
    store = harness.TrialStore(tmp_path / "trials.json")
    store.put("t1", {"k": 1}, {"value": 1})
    lines: list[str] = []
    calls: list[list[str]] = []

    def run(keys, finished):
        calls.append(list(keys))
        for key in keys:
            finished(key, {"value": int(key[1:])})
        return "ran"

    planned = {"t1": {"k": 1}, "t2": {"k": 2}, "t3": {"k": 3}}
    progress = harness.Progress(3, echo=lines.append)
    results, outcome = harness.run_resumable(planned, store, run, progress=progress)
    assert calls == [["t2", "t3"]] and outcome == "ran"
    assert results == {"t1": {"value": 1}, "t2": {"value": 2}, "t3": {"value": 3}}
    assert lines[0].startswith("[1/3] 1 finished trial(s) reused") and lines[-1].startswith("[3/3]")
    # Everything recorded now: a rerun calls nothing.
    results, outcome = harness.run_resumable(
        planned, harness.TrialStore(tmp_path / "trials.json"), run, progress=progress
    )
    assert calls == [["t2", "t3"]] and outcome is None and len(results) == 3


def test_json_dump_load_and_merge(harness, tmp_path) -> None:
    path = tmp_path / "sub" / "run.json"
    data = {"x": [1.5, INF, math.nan], "path": Path("/a")}
    harness.dump_json(path, harness.jsonable(data))
    assert json.loads(path.read_text()) == {"x": [1.5, "inf", None], "path": "/a"}
    assert not list(path.parent.glob("*.tmp"))
    assert harness.load_json(path)["x"][1] == "inf"
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(harness.BenchmarkError, match="bad.json"):
        harness.load_json(tmp_path / "bad.json")
    with pytest.raises(harness.BenchmarkError, match="absent.json"):
        harness.load_json(tmp_path / "absent.json")
    merged = harness.merge_json(
        [{"runs": [1, 2], "speed": {"a": 1}}, {"runs": [3], "speed": {"b": 2}, "new": [4]}]
    )
    assert merged == {"runs": [1, 2, 3], "speed": {"b": 2}, "new": [4]}


def test_seed_statistics(harness) -> None:
    assert harness.median_or_inf([30.0, INF, 10.0]) == 30.0
    assert harness.median_or_inf([INF, 10.0]) == INF  # half not reached
    assert math.isnan(harness.median_or_inf([]))
    assert harness.finite_median([None, INF, 3.0, 1.0, math.nan]) == 2.0
    assert harness.known_median([None, INF, INF, 1.0, math.nan]) == INF
    assert math.isnan(harness.known_median([None, math.nan]))
    assert harness.spread([3.0, INF, 1.0]) == (1.0, INF)
    assert harness.count_finite([1.0, INF, math.nan, 2.0]) == 2


def test_command_line_is_shell_quoted(harness) -> None:
    assert (
        harness.command_line("/x/benchmarks/ilm.py", ["--notes", "a b"])
        == "python benchmarks/ilm.py --notes 'a b'"
    )


# --------------------------------------------------------------------------------------
# The scripts share the harness instead of carrying copies.
# --------------------------------------------------------------------------------------

WRITER_NAME = re.compile(r"(write|update)_?(results|section)|results_md", re.IGNORECASE)


def _docstrings(tree: ast.Module) -> set[int]:
    nodes = [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    return {
        id(n.body[0].value)
        for n in nodes
        if n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
    }


def _copies(path: Path) -> list[str]:
    """What in ``path`` duplicates the harness: its own writer, markers, importlib, sys.path."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            found += [f"imports {n}" for n in names if n and n.split(".")[0] == "importlib"]
        elif isinstance(node, ast.FunctionDef) and WRITER_NAME.search(node.name):
            found.append(f"defines {node.name}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "<!--" in node.value and id(node) not in docstrings:
                found.append(f"writes a marker by hand at line {node.lineno}")
        elif isinstance(node, ast.Attribute) and node.attr == "path":
            if isinstance(node.value, ast.Name) and node.value.id == "sys":
                found.append(f"touches sys.path at line {node.lineno}")
    return found


#: Scripts that must import code from outside the repository, and why.
IMPORTS_REFERENCE_CODE = {
    # It imports tensorflow/privacy's research/pate_2018 files, fetched into a temp dir, to
    # generate test fixtures (the reference code is never vendored).
    "pate_2018_fixtures.py": ("imports importlib", "touches sys.path"),
}


def test_no_script_carries_its_own_results_writer_importlib_or_path_hack() -> None:
    assert len(SCRIPTS) >= 10
    problems = {
        p.name: [
            found
            for found in _copies(p)
            if not found.startswith(IMPORTS_REFERENCE_CODE.get(p.name, ()))
        ]
        for p in SCRIPTS
    }
    assert {name: found for name, found in problems.items() if found} == {}


def test_the_scan_catches_what_it_forbids(tmp_path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        '"""Docstring may name <!-- x:start -->."""\n'
        "import importlib.util\nimport sys\n\n"
        "sys.path.insert(0, 'x')\nEND = '<!-- x:end -->'\n\n"
        "def update_results_md(path):\n    pass\n"
    )
    assert sorted(_copies(bad)) == [
        "defines update_results_md()",
        "imports importlib.util",
        "touches sys.path at line 5",
        "writes a marker by hand at line 6",
    ]


def test_every_section_of_the_scripts_is_in_results_md() -> None:
    """The writers keep the marker format of RESULTS.md, so they find today's sections."""
    text = (BENCH_DIR / "RESULTS.md").read_text(encoding="utf-8")
    sections = {}
    for path in SCRIPTS:
        module = import_benchmark(path.stem)
        if hasattr(module, "RESULTS"):
            sections[path.stem] = module.RESULTS
        sys.modules.pop(path.stem, None)
    assert set(sections) >= {"pgc_a3c", "kickstart", "pate", "soak", "quick_start", "ilm"}
    for name, section in sections.items():
        assert section.start in text and section.end in text, name
        for part in section.parts:
            start, end = section.part_markers(part)
            assert (start in text) == (end in text), (name, part)


def test_every_script_runs_as_a_script_with_help() -> None:
    """``python benchmarks/<name>.py --help`` imports the harness from the script's folder."""
    for path in SCRIPTS:
        out = subprocess.run(
            [sys.executable, str(path), "--help"],
            capture_output=True,
            text=True,
            cwd=BENCH_DIR.parent,
            check=False,
        )
        assert out.returncode == 0 and "usage:" in out.stdout, (path.name, out.stderr[-2000:])


def test_harness_imports_no_ray_or_torch() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH_DIR)!r})\n"
        "import harness\n"
        "print(sorted(n for n in ('ray', 'torch', 'rllib_privacy') if n in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
