"""A run's JSON document: every trial with its learning curve; loading and merging runs.

``--json`` rewrites the document after each finished trial, so an interrupted run keeps
what finished; ``--merge-json`` joins the documents of several invocations (passes).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import (
    BenchmarkError,
    dump_json,
    format_number,
    jsonable,
    load_json,
)

from pgc_a3c_bench.plan import PROTOCOL_TRIALS, Row
from pgc_a3c_bench.results import RowResult, TrialRecord, compute_rows, json_float

JSON_FORMAT = "pgc_a3c/2"


def new_document(
    *,
    cap: int,
    trials: int,
    arms: Mapping[str, Mapping[str, Any]],
    rows: Sequence[Row],
    run: Mapping[str, Any],
) -> dict[str, Any]:
    """A run's JSON document (before any trial finished).

    ``arms``: name → {mechanism, family, base, ..., config}; ``rows``: the planned rows;
    ``run``: command, dates, machine, load averages, settings of this invocation.
    """
    return {
        "format": JSON_FORMAT,
        "cap": int(cap),
        "trials_requested": int(trials),
        "arms": {name: dict(meta) for name, meta in arms.items()},
        "rows": [[row.arm, row.epsilon] for row in rows],
        "runs": [dict(run)],
        "trials": [],
        "speed": [],
    }


def document_records(doc: Mapping[str, Any]) -> list[TrialRecord]:
    return [TrialRecord.from_json(t) for t in doc.get("trials", [])]


def document_rows(doc: Mapping[str, Any]) -> list[Row]:
    return [Row(str(arm), json_float(eps)) for arm, eps in doc.get("rows", [])]


def document_families(doc: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(meta.get("family", "")) for name, meta in doc.get("arms", {}).items()}


def document_results(doc: Mapping[str, Any]) -> list[RowResult]:
    """The rows of a document with their statistics."""
    required = max(PROTOCOL_TRIALS, int(doc.get("trials_requested", PROTOCOL_TRIALS)))
    return compute_rows(
        document_records(doc),
        cap=int(doc["cap"]),
        required=required,
        families=document_families(doc),
        rows=document_rows(doc),
    )


def load_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON file written by ``--json`` (format ``JSON_FORMAT``)."""
    try:
        doc = load_json(path)
    except BenchmarkError as e:
        raise BenchmarkError(f"--merge-json: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != JSON_FORMAT:
        raise BenchmarkError(
            f"--merge-json: {str(path)!r} is not a {JSON_FORMAT} file of this benchmark "
            "(written with --json by this version)"
        )
    return doc


def _comparable(meta: Mapping[str, Any]) -> str:
    return json.dumps(
        {k: meta.get(k) for k in ("mechanism", "family", "zero_signal_control", "config")},
        sort_keys=True,
        default=str,
    )


def merge_documents(
    docs: Sequence[Mapping[str, Any]],
    names: Sequence[str] | None = None,
    *,
    warn: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> dict[str, Any]:
    """Joins the runs of several invocations into one document.

    All documents must have the same cap, and an arm that several of them ran must have
    the same config in each (else its trials are not seeds of one setting). Trials are
    joined; a trial (arm, ε, seed) that occurs again is kept from the first document
    (with a warning). Planned rows and runs are joined; the speed part is the last
    document's that has one.

    Raises:
        BenchmarkError: No documents, different caps, or one arm with different configs.

    """
    if not docs:
        raise BenchmarkError("--merge-json: no files given")
    names = list(names) if names is not None else [f"#{k + 1}" for k in range(len(docs))]
    caps = {int(doc["cap"]) for doc in docs}
    if len(caps) > 1:
        raise BenchmarkError(
            f"--merge-json: the files have different caps {sorted(caps)}; FST statistics "
            "of different caps cannot be pooled"
        )
    arms: dict[str, dict[str, Any]] = {}
    arm_source: dict[str, str] = {}
    rows: dict[tuple[str, float], None] = {}
    runs: list[dict[str, Any]] = []
    trials: list[dict[str, Any]] = []
    seen: dict[tuple[str, float, int], str] = {}
    speed: list[Any] = []
    for name, doc in zip(names, docs, strict=True):
        for arm, meta in doc.get("arms", {}).items():
            if arm in arms and _comparable(arms[arm]) != _comparable(meta):
                raise BenchmarkError(
                    f"--merge-json: arm {arm!r} has a different config in {name} than in "
                    f"{arm_source[arm]}; run it under one config (or rename it) to pool"
                )
            arms.setdefault(arm, dict(meta))
            arm_source.setdefault(arm, name)
        for arm, eps in doc.get("rows", []):
            rows.setdefault((str(arm), json_float(eps)), None)
        runs.extend({**run, "file": name} for run in doc.get("runs", []))
        for trial in doc.get("trials", []):
            key = (str(trial["arm"]), json_float(trial["epsilon"]), int(trial["seed"]))
            if key in seen:
                warn(
                    f"--merge-json: {key[0]} ε={format_number(key[1])} seed={key[2]} is in "
                    f"{seen[key]} and {name}: kept {seen[key]}'s"
                )
                continue
            seen[key] = name
            trials.append(dict(trial))
        if doc.get("speed"):
            speed = list(doc["speed"])
    return {
        "format": JSON_FORMAT,
        "cap": caps.pop(),
        "trials_requested": max(int(doc.get("trials_requested", 0)) for doc in docs),
        "arms": arms,
        "rows": [[arm, eps] for arm, eps in rows],
        "runs": runs,
        "trials": trials,
        "speed": speed,
    }


def write_document(path: Path, doc: Mapping[str, Any]) -> None:
    """Writes the document atomically (a reader never sees half a file)."""
    dump_json(path, jsonable(doc))
