"""What every benchmark script shares: RESULTS.md sections, machine lines, progress, JSON, stats.

The scripts in ``benchmarks/`` are run as ``python benchmarks/<name>.py``, so this folder is
on ``sys.path`` and they import this module by its plain name (``from harness import ...``);
the tests put the folder on the path in one place (tests/e2e/benchmark_modules.py). Like the
scripts, it imports no Ray or torch at module level: ``--help`` and the table code stay fast.

RESULTS.md layout: each benchmark owns the text between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->``; a benchmark with several independently run parts nests
``<!-- NAME:PART:start -->``/``<!-- NAME:PART:end -->`` pairs inside its section, so a run
that measured one part replaces only that part. Writers touch nothing outside their pair.

Long grids: a ``TrialStore`` under the run's storage folder records every finished
trial, and ``run_resumable`` runs only the trials it does not hold, so rerunning the
same command after an interruption resumes the grid; ``Progress`` prints
``[done/total]`` lines with an ETA from the trials this run finished.

A benchmark too long for one file keeps its parts in a package beside its script, by job
(``kickstart_bench/``, ``pgc_a3c_bench/``: plan, run, report, ...); the script holds the
command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.metadata
import importlib.util
import json
import logging
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO_ROOT / "benchmarks"
RESULTS_MD = BENCH_DIR / "RESULTS.md"
#: What a RESULTS.md that does not exist yet starts with.
RESULTS_HEADER = "# Benchmark results\n"
INF = math.inf


class BenchmarkError(RuntimeError):
    """A benchmark run that must not be reported (a bad input, a missing file, a failed check)."""


# --------------------------------------------------------------------------------------
# RESULTS.md sections.
# --------------------------------------------------------------------------------------


def markers(marker: str) -> tuple[str, str]:
    """The (start, end) HTML comments of a section: ``<!-- MARKER:start -->`` and ``...end``.

    ``marker`` is a benchmark's name (``pgc_a3c``) or, for a part inside its section,
    ``NAME:PART`` (``pgc_a3c:speed``).
    """
    return f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"


def replace_block(text: str, marker: str, content: str, *, before: Sequence[str] = ()) -> str:
    """``text`` with the block of ``marker`` set to ``content`` (markers included).

    An existing block is replaced where it stands; anything outside it is kept byte for
    byte. A missing block goes in front of the first block of ``before`` that ``text``
    has (how a section keeps its parts in order), else at the end after a blank line.

    Raises:
        ValueError: ``text`` has only one of the two markers (a damaged file: writing
            would lose or duplicate text).

    """
    start, end = markers(marker)
    block = f"{start}\n{content.rstrip()}\n{end}"
    at = text.find(start)
    if at >= 0:
        stop = text.find(end, at + len(start))
        if stop < 0:
            raise ValueError(f"{start} has no {end} after it")
        return text[:at] + block + text[stop + len(end) :]
    if end in text:
        raise ValueError(f"{end} has no {start} before it")
    later = [text.find(markers(name)[0]) for name in before]
    later = [position for position in later if position >= 0]
    if later:
        at = min(later)
        return text[:at] + block + "\n\n" + text[at:]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def _read_results(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else RESULTS_HEADER


def _write_results(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_results_section(path: Path | str, marker: str, text: str) -> None:
    """Sets the section of ``marker`` in the RESULTS.md at ``path`` to ``text``.

    Only the text between this marker pair changes (the pair is appended at the end of
    the file when missing; the file is created when absent). Idempotent.
    """
    path = Path(path)
    _write_results(path, replace_block(_read_results(path), marker, text))


def write_results_parts(
    path: Path | str,
    marker: str,
    parts: Mapping[str, str],
    *,
    title: str,
    order: Sequence[str] = (),
) -> None:
    """Sets some parts of the section of ``marker``, keeping its other parts and text.

    Args:
        path: The RESULTS.md file (created when absent).
        marker: The benchmark's section marker (``kickstart``).
        parts: Part name → text; each goes between ``<!-- MARKER:PART:start/end -->``.
        title: The section's first line, written only when the section is created.
        order: Known parts in display order: a new part goes before the first later one
            already there (others go at the end of the section).

    """
    path = Path(path)
    text = _read_results(path)
    start, end = markers(marker)
    if start not in text:
        text = replace_block(text, marker, title)
    body_at = text.index(start) + len(start)
    body_end = text.find(end, body_at)
    if body_end < 0:
        raise ValueError(f"{start} has no {end} after it")
    body = text[body_at:body_end]
    order = list(order)
    for name, content in parts.items():
        later = order[order.index(name) + 1 :] if name in order else []
        body = replace_block(
            body, f"{marker}:{name}", content, before=[f"{marker}:{n}" for n in later]
        )
    _write_results(path, text[:body_at] + body.rstrip() + "\n" + text[body_end:])


@dataclasses.dataclass(frozen=True)
class ResultsSection:
    """A benchmark's section of RESULTS.md: its marker and, for a section of parts, more.

    Attributes:
        marker: The section's name in its markers (``<!-- MARKER:start -->``).
        title: First line of a section of parts, written when the section is created.
        parts: Known parts of a section of parts, in display order.

    """

    marker: str
    title: str = ""
    parts: tuple[str, ...] = ()

    @property
    def start(self) -> str:
        return markers(self.marker)[0]

    @property
    def end(self) -> str:
        return markers(self.marker)[1]

    def part_markers(self, part: str) -> tuple[str, str]:
        """The (start, end) markers of one part of this section."""
        return markers(f"{self.marker}:{part}")

    def write(self, path: Path | str, content: str | Mapping[str, str]) -> None:
        """Writes the whole section (a string) or some of its parts (a mapping)."""
        if isinstance(content, str):
            write_results_section(path, self.marker, content)
        else:
            write_results_parts(path, self.marker, content, title=self.title, order=self.parts)


# --------------------------------------------------------------------------------------
# Machine, date and load: a timing means nothing without them on a shared machine.
# --------------------------------------------------------------------------------------


def now() -> str:
    """UTC time stamp, seconds precision."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def load_averages() -> tuple[float, float, float]:
    """The 1-, 5- and 15-minute load averages (NaN where the platform has none)."""
    try:
        one, five, fifteen = os.getloadavg()
    except (OSError, AttributeError):
        return (math.nan, math.nan, math.nan)
    return (one, five, fifteen)


def load_average() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    return load_averages()[0]


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _proc_field(path: str, pattern: str) -> str | None:
    try:
        match = re.search(pattern, Path(path).read_text(), re.MULTILINE)
    except OSError:
        return None
    return match.group(1).strip() if match else None


def _version(distribution: str) -> str:
    # The installed distribution's metadata: no need to import Ray or torch for a line.
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, Any]:
    """Date, CPUs, CPU model, RAM, Python/Ray/torch versions and the 1-minute load now."""
    model = _proc_field("/proc/cpuinfo", r"^model name\s*:\s*(.+)$") or platform.processor()
    kib = _proc_field("/proc/meminfo", r"^MemTotal:\s*(\d+)\s*kB")
    return {
        "date": now(),
        "nproc": usable_cpus(),
        "cpu_model": model or "unknown",
        "ram_gib": round(int(kib) / 2**20, 1) if kib else math.nan,
        "python": platform.python_version(),
        "ray": _version("ray"),
        "torch": _version("torch"),
        "platform": platform.platform(),
        "load_1min": round(load_average(), 2),
    }


def machine_line(
    info: Mapping[str, Any] | None = None, *, date: bool = True, load: bool = True
) -> str:
    """One line for RESULTS.md: date, CPUs and model, RAM, versions, 1-minute load average.

    Args:
        info: A :func:`machine_info` dict (now's when None). An older dict without
            ``date`` or ``load_1min`` (a JSON file of an earlier run) gives a line without.
        date: Include the date (leave it out where the text states the run's dates).
        load: Include the load average (leave it out where the text states start/end).

    """
    info = machine_info() if info is None else info
    parts = []
    if date and info.get("date"):
        parts.append(str(info["date"]))
    parts.append(f"{info['nproc']} CPUs ({info['cpu_model']}), {info['ram_gib']} GiB RAM")
    parts.append(f"Python {info['python']}, ray {info['ray']}, torch {info['torch']}")
    if load and info.get("load_1min") is not None:
        parts.append(f"1-min load average {float(info['load_1min']):.2f}")
    return "; ".join(parts)


# --------------------------------------------------------------------------------------
# Progress lines for long runs.
# --------------------------------------------------------------------------------------


def format_duration(seconds: float) -> str:
    """``42 s``, ``12 min 03 s``, ``2 h 05 min``; ``?`` when unknown."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """``[done/total] message (elapsed 3 min 10 s, ETA 12 min 40 s)`` lines for a long run.

    The ETA assumes the remaining steps take as long as the finished ones on average. Steps
    an earlier, interrupted run finished (``skip``) count as done but not in that pace.

    Args:
        total: Steps in the run (trials, iterations, ...).
        echo: Where lines go (stdout, flushed, by default).
        clock: Seconds since some origin (tests pass a fake one).

    """

    def __init__(
        self,
        total: int,
        *,
        echo: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = int(total)
        self.done = 0
        self.skipped = 0
        self._clock = clock
        self._start = clock()
        self._echo = echo if echo is not None else lambda line: print(line, flush=True)

    @property
    def elapsed(self) -> float:
        return self._clock() - self._start

    @property
    def eta(self) -> float:
        """Seconds left at the mean pace of this run's steps (NaN before its first)."""
        ran = self.done - self.skipped
        if ran <= 0:
            return math.nan
        return self.elapsed / ran * max(0, self.total - self.done)

    def skip(self, steps: int, message: str) -> str:
        """Counts ``steps`` steps done before this run (reused, not run): prints the line."""
        self.skipped += int(steps)
        return self.update(self.done + steps, message)

    def line(self, message: str) -> str:
        """The line for ``message`` at the current count (not printed)."""
        return (
            f"[{self.done}/{self.total}] {message} (elapsed {format_duration(self.elapsed)}, "
            f"ETA {format_duration(self.eta)})"
        )

    def update(self, done: int, message: str) -> str:
        """Sets the count to ``done``, prints the line and returns it."""
        self.done = int(done)
        line = self.line(message)
        self._echo(line)
        return line

    def advance(self, message: str, steps: int = 1) -> str:
        """Counts ``steps`` more finished steps, prints the line and returns it."""
        return self.update(self.done + steps, message)


# --------------------------------------------------------------------------------------
# JSON.
# --------------------------------------------------------------------------------------


def log_algorithms_into_a_temporary_folder(prefix: str = "benchmark_") -> str:
    """An Algorithm built outside Tune (``build_algo()``) logs into a temporary folder.

    Ray's Trainable makes a timestamped folder in its module's ``DEFAULT_STORAGE_PATH``
    (``~/ray_results``, fixed at import) when no Tune trial owns it; a benchmark must not
    leave folders (some holding privacy journals) in the user's home. Call it in the
    process that builds the Algorithm, before ``build_algo()``.

    Returns:
        The temporary folder.

    """
    import tempfile

    from ray.tune.trainable import trainable

    trainable.DEFAULT_STORAGE_PATH = tempfile.mkdtemp(prefix=prefix)
    return trainable.DEFAULT_STORAGE_PATH


def nested_get(result: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """``result["a"]["b"]`` for ``key = "a/b"`` (or a flat ``"a/b"`` entry)."""
    if key in result:
        return result[key]
    value: Any = result
    for part in key.split("/"):
        if not isinstance(value, Mapping) or part not in value:
            return default
        value = value[part]
    return value


def jsonable(value: Any) -> Any:
    """``value`` with ∞ as ``"inf"``/``"-inf"`` and NaN as null (strict JSON), tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def dump_json(path: Path | str, data: Any, *, indent: int | None = 1) -> None:
    """Writes ``data`` as JSON atomically (a reader never sees half a file).

    Values json cannot write (a Path, a numpy scalar) are written as their ``str``; pass
    the data through :func:`jsonable` first for strict JSON without Infinity/NaN.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=indent, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def load_json(path: Path | str) -> Any:
    """The JSON document at ``path``.

    Raises:
        BenchmarkError: The file cannot be read or is not JSON (the message names it).

    """
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise BenchmarkError(f"cannot read {str(path)!r}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise BenchmarkError(f"{str(path)!r} is not valid JSON ({e})") from None


def merge_json(documents: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Joins the documents of several runs: lists under a key are concatenated (runs of the
    same part: seeds, arms), any other value is taken from the last document that has it."""
    merged: dict[str, Any] = {}
    for document in documents:
        for key, value in document.items():
            if isinstance(value, list) and isinstance(merged.get(key), list):
                merged[key] = merged[key] + value
            else:
                merged[key] = value
    return merged


class TrialStore:
    """The finished trials of a long grid in a JSON file, so that a rerun skips them.

    Each trial has a key (``cartpole/privacy-aware/seed=0``) and a spec: everything that
    makes it (config, seed, stop rule) as JSON-able data. A record is reused only while
    the planned trial's spec equals the recorded one; a changed setting reruns the trial
    (and ``put`` replaces its record). The file is rewritten atomically after every
    ``put``, so an interrupted run keeps every trial recorded before it stopped.

    Args:
        path: The JSON file (read when it exists; created by the first ``put``).

    Raises:
        BenchmarkError: The file exists but is not a store of finished trials.

    """

    FORMAT = "benchmark-trials/1"

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._trials: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            data = load_json(self.path)
            if not isinstance(data, dict) or data.get("format") != self.FORMAT:
                raise BenchmarkError(f"{str(self.path)!r} is not a {self.FORMAT} file")
            self._trials = dict(data.get("trials", {}))

    def __len__(self) -> int:
        return len(self._trials)

    def __contains__(self, key: object) -> bool:
        return key in self._trials

    def recorded(self) -> dict[str, dict[str, Any]]:
        """Key → result of every recorded trial, whatever its spec."""
        return {key: dict(record["result"]) for key, record in self._trials.items()}

    def get(self, key: str, spec: Mapping[str, Any]) -> dict[str, Any] | None:
        """The result recorded for ``key`` if it ran with ``spec``, else None."""
        record = self._trials.get(key)
        if record is None or record.get("spec") != jsonable(dict(spec)):
            return None
        return dict(record["result"])

    def put(self, key: str, spec: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        """Records a finished trial (its spec and what later steps need of its result)."""
        self._trials[key] = {
            "spec": jsonable(dict(spec)),
            "result": jsonable(dict(result)),
            "date": now(),
        }
        dump_json(self.path, {"format": self.FORMAT, "trials": self._trials})

    def split(
        self,
        planned: Mapping[str, Mapping[str, Any]],
        reusable: Callable[[Mapping[str, Any]], bool] = lambda result: True,
    ) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """(key → recorded result of each planned trial already finished, keys still to run).

        Args:
            planned: Key → spec of every trial of the grid, in run order.
            reusable: Whether a recorded result can still be used (e.g. its files exist).

        """
        done: dict[str, dict[str, Any]] = {}
        todo: list[str] = []
        for key, spec in planned.items():
            result = self.get(key, spec)
            if result is None or not reusable(result):
                todo.append(key)
            else:
                done[key] = result
        return done, todo


def run_resumable(
    planned: Mapping[str, Mapping[str, Any]],
    store: TrialStore,
    run: Callable[[list[str], Callable[[str, Mapping[str, Any]], None]], Any],
    *,
    progress: Progress,
    describe: Callable[[str, Mapping[str, Any]], str] = lambda key, result: key,
    reusable: Callable[[Mapping[str, Any]], bool] = lambda result: True,
) -> tuple[dict[str, dict[str, Any]], Any]:
    """Runs the planned trials that ``store`` does not hold as finished; reuses the others.

    Args:
        planned: Key → spec of every trial of this step, in run order.
        store: Where finished trials are recorded (each as soon as it finishes).
        run: Runs the given keys (a Tuner, processes, a fake in tests) and calls its second
            argument with (key, result) for each trial that finished; what it returns is
            passed back. Not called when every trial is reused.
        progress: Counts reused trials as skipped and each finished one as a step.
        describe: The progress message of a finished trial.
        reusable: Whether a recorded result can still be used (else the trial reruns).

    Returns:
        (key → result of every planned trial that has finished, in ``planned`` order; what
        ``run`` returned, None when it was not called).

    """
    results, todo = store.split(planned, reusable)
    if results:
        progress.skip(len(results), f"{len(results)} finished trial(s) reused from {store.path}")

    def finished(key: str, result: Mapping[str, Any]) -> None:
        store.put(key, planned[key], result)
        results[key] = store.get(key, planned[key]) or {}
        progress.advance(describe(key, result))

    outcome = run(todo, finished) if todo else None
    return {key: results[key] for key in planned if key in results}, outcome


# --------------------------------------------------------------------------------------
# Statistics over seeds (a seed that never got there counts as ∞).
# --------------------------------------------------------------------------------------


def steps_to_threshold(
    steps: Sequence[float], returns: Sequence[float | None], target: float
) -> float:
    """Env steps of the first result whose return is ≥ ``target``; ∞ if none is.

    Args:
        steps: Env steps sampled so far, one per training iteration (non-decreasing).
        returns: The return reported with each; None/NaN (no episode finished yet) never
            counts as reaching the target.
        target: T.

    Raises:
        ValueError: The two sequences differ in length.

    """
    if len(steps) != len(returns):
        raise ValueError(
            f"steps and returns must have the same length, got {len(steps)} and {len(returns)}"
        )
    for step, value in zip(steps, returns, strict=True):
        if value is not None and not math.isnan(value) and value >= target:
            return float(step)
    return INF


def median_or_inf(values: Sequence[float]) -> float:
    """Median where ∞ (never reached) sorts last.

    ∞ when half or more of the values are ∞ (the middle value, or one of the two middle
    values, is ∞); NaN for no values.
    """
    if not values:
        return math.nan
    ordered = sorted(float(v) for v in values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    low, high = ordered[mid - 1], ordered[mid]
    return INF if math.isinf(high) else (low + high) / 2.0


def finite_median(values: Iterable[float | None]) -> float:
    """Median of the finite values (None, NaN and ±∞ left out); NaN when none is."""
    kept = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return statistics.median(kept) if kept else math.nan


def known_median(values: Iterable[float | None]) -> float:
    """Median of the known values (None and NaN left out, ∞ kept); NaN when none is."""
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return statistics.median(kept) if kept else math.nan


def spread(values: Sequence[float]) -> tuple[float, float]:
    """(min, max), ∞ included; (NaN, NaN) for no values."""
    if not values:
        return (math.nan, math.nan)
    return (float(min(values)), float(max(values)))


def count_finite(values: Iterable[float]) -> int:
    """How many values are finite (seeds that got there)."""
    return sum(1 for v in values if math.isfinite(v))


# --------------------------------------------------------------------------------------
# Formatting.
# --------------------------------------------------------------------------------------


def format_number(value: float | None, digits: int = 1) -> str:
    """``∞`` for infinity, ``—`` for None/NaN, integers without decimals."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Command line, Ray's noise, experiment files.
# --------------------------------------------------------------------------------------


def command_line(script: str, argv: Sequence[str] | None = None) -> str:
    """``python benchmarks/<script> ARGS`` as typed (``argv`` None: this process's)."""
    words = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["python", f"benchmarks/{Path(script).name}", *words])


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def bounded_number(convert: Callable[[str], float], *, low: float, strict: bool) -> Any:
    """argparse type: a finite number ≥ ``low`` (> ``low`` when ``strict``), read by ``convert``."""
    relation = ">" if strict else ">="

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(
                f"expected a finite number {relation} {low}, got {text!r}"
            )
        return value

    return parse


def choice_list(choices: Sequence[str], what: str) -> Callable[[str], list[str]]:
    """argparse type: a comma-separated list of ``choices`` (repeats dropped, order kept)."""

    def parse(text: str) -> list[str]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}")
        bad = [item for item in items if item not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {bad}; choose from {', '.join(choices)}"
            )
        return list(dict.fromkeys(items))

    return parse


def quiet_ray(*, tune_loggers: bool = True) -> None:
    """Less Ray/Tune console noise: legacy reporter (honours ``verbose=0``), errors only.

    Args:
        tune_loggers: Keep Tune's default TensorBoard/CSV/JSON result files (a script
            that reads results from the ResultGrid or callbacks can switch them off).

    """
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    if not tune_loggers:
        os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    for name in ("ray", "ray.rllib", "ray.tune"):
        logging.getLogger(name).setLevel(logging.ERROR)


def resolve(path: Path | str) -> Path:
    """``path`` as given if it exists, else relative to the repository root if that does."""
    path = Path(path)
    if not path.exists() and not path.is_absolute() and (REPO_ROOT / path).exists():
        return REPO_ROOT / path
    return path


def load_experiment_config(path: Path | str) -> dict[str, Any]:
    """The first experiment's ``config:`` of a YAML experiment file (env folded in), loaded
    and validated as ``rllib train -f`` would (legacy keys translated).

    Raises:
        BenchmarkError: The file is missing or invalid (the message names it).

    """
    path = resolve(path)
    if not path.is_file():
        raise BenchmarkError(f"experiment file {str(path)!r} not found")
    from rllib_privacy.experiments import load_experiments

    try:
        experiments = load_experiments(str(path), has_gpus=False).experiments
    except Exception as e:  # noqa: BLE001 (ExperimentFileError and friends: report, don't trace)
        raise BenchmarkError(f"cannot load {path}: {e}") from None
    return dict(experiments[0].param_space)


# --------------------------------------------------------------------------------------
# Subprocesses and modules.
# --------------------------------------------------------------------------------------


def run_json_processes(
    jobs: Sequence[tuple[Sequence[str], Path]],
    *,
    parallel: int,
    poll_s: float = 2.0,
    summary: Callable[[dict[str, Any]], str] = lambda result: json.dumps(result),
) -> list[dict[str, Any]]:
    """Runs every command, ``parallel`` at a time; each writes its result as JSON to its path.

    Each run in its own process gets its own small Ray instance (Ray starts task workers
    at a lower CPU priority, which on a shared machine starves them). Prints a progress
    line per finished run with ``summary(result)``. Results are in finishing order.

    Raises:
        RuntimeError: A command failed (the others are stopped).

    """
    pending = list(jobs)
    running: list[tuple[subprocess.Popen, Path]] = []
    results: list[dict[str, Any]] = []
    progress = Progress(len(pending))
    try:
        while pending or running:
            while pending and len(running) < max(1, parallel):
                command, out = pending.pop(0)
                running.append((subprocess.Popen(list(command), stdout=subprocess.DEVNULL), out))
            time.sleep(poll_s)
            still = []
            for process, out in running:
                if process.poll() is None:
                    still.append((process, out))
                elif process.returncode == 0:
                    results.append(json.loads(out.read_text(encoding="utf-8")))
                    progress.advance(summary(results[-1]))
                else:
                    raise RuntimeError(f"{process.args} failed with code {process.returncode}")
            running = still
    finally:
        for process, _ in running:
            if process.poll() is None:
                process.kill()
                process.wait()
    return results


def import_path(name: str, path: Path | str) -> ModuleType:
    """The Python file at ``path`` imported as a module called ``name`` (not registered in
    ``sys.modules``): for code that is not on the path, e.g. a paper's reference script."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BenchmarkError(f"cannot import {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
