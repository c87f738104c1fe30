"""Reading Tune's result folders, one ``TrialResults`` per trial folder.

Rows come from ``result.json``; ``progress.csv`` only when a trial has no ``result.json``
results (see [rllib_privacy.plotting][] for why).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rllib_privacy.errors import PrivacyConfigError

_PARAMS_FILE = "params.json"


_RESULT_FILE = "result.json"


_PROGRESS_FILE = "progress.csv"


_ITERATION_KEY = "training_iteration"


class PlotWarning(UserWarning):
    """Something was left out of a plot or may be misread (a trial without data, ...)."""


@dataclasses.dataclass(frozen=True)
class TrialResults:
    """One Tune trial folder, read.

    Attributes:
        path: The trial folder.
        config: The trial's config from ``params.json`` (nested mappings), or from the
            ``config`` entry of its last ``result.json`` line when ``params.json`` is
            missing; None when neither exists.
        rows: The trial's results in iteration order, each flattened to ``/``-joined
            keys (without ``config``). When a ``training_iteration`` occurs twice (a
            trial resumed from an earlier checkpoint re-reports the iterations after it),
            the later row is kept.
        source: The file the rows were read from (``result.json`` or ``progress.csv``),
            or None when the trial has no results yet.

    """

    path: Path
    config: Mapping[str, Any] | None
    rows: tuple[Mapping[str, Any], ...]
    source: str | None


def find_trial_dirs(results_dirs: Sequence[str | os.PathLike]) -> list[Path]:
    """Find the trial folders in or below the given folders.

    A trial folder is one holding ``result.json`` or ``progress.csv``. Each argument may be
    a trial folder, an experiment folder (with trial folders inside) or any folder above
    experiment folders (e.g. ``~/ray_results``). Trial folders are not searched further
    (their ``checkpoint_*`` folders are skipped) and hidden folders are ignored.

    Args:
        results_dirs: The folders.

    Returns:
        The trial folders, sorted, each once.

    Raises:
        PrivacyConfigError: No folders were given, one does not exist or is not a folder,
            or none holds a trial folder.

    """
    if not results_dirs:
        raise PrivacyConfigError("RESULTS_DIR: give at least one Tune results folder")
    found: dict[Path, None] = {}
    for given in results_dirs:
        root = Path(given).expanduser()
        if not root.exists():
            raise PrivacyConfigError(f"RESULTS_DIR: {str(given)!r} does not exist")
        if not root.is_dir():
            raise PrivacyConfigError(f"RESULTS_DIR: {str(given)!r} is not a folder")
        in_root = 0
        # Links are followed (a comparison folder may link experiments from elsewhere);
        # the visited set stops link cycles.
        visited: set[Path] = set()
        for folder, subfolders, files in os.walk(root, followlinks=True):
            resolved = Path(folder).resolve()
            if resolved in visited:
                subfolders.clear()
                continue
            visited.add(resolved)
            if _RESULT_FILE in files or _PROGRESS_FILE in files:
                found[resolved] = None
                in_root += 1
                subfolders.clear()
            else:
                subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        if not in_root:
            raise PrivacyConfigError(
                f"RESULTS_DIR: no Tune trial folders (with {_RESULT_FILE} or {_PROGRESS_FILE}) "
                f"in or below {str(given)!r}"
            )
    return sorted(found)


def load_trials(results_dirs: Sequence[str | os.PathLike]) -> list[TrialResults]:
    """Read every trial folder in or below ``results_dirs`` (see ``find_trial_dirs``).

    Args:
        results_dirs: Trial, experiment, or parent folders of experiment folders.

    Returns:
        One ``TrialResults`` per trial folder, sorted by path. Trials that have not
        reported a result yet are included with no rows.

    Raises:
        PrivacyConfigError: See ``find_trial_dirs``; also a ``params.json`` or a
            ``result.json`` line (other than a last, partly written one) that is not
            valid JSON.

    """
    return [_load_trial(path) for path in find_trial_dirs(results_dirs)]


def _load_trial(path: Path) -> TrialResults:
    rows: list[dict[str, Any]] = []
    config: Mapping[str, Any] | None = None
    source = None
    result_file = path / _RESULT_FILE
    if result_file.is_file():
        for result in _read_json_lines(result_file):
            config = result.pop("config", config)
            rows.append(flatten(result))
        source = _RESULT_FILE if rows else None
    if not rows and (path / _PROGRESS_FILE).is_file():
        rows = _read_progress_csv(path / _PROGRESS_FILE)
        source = _PROGRESS_FILE if rows else None
    params_file = path / _PARAMS_FILE
    if params_file.is_file():
        try:
            config = json.loads(params_file.read_text())
        except json.JSONDecodeError as e:
            raise PrivacyConfigError(f"{params_file}: not valid JSON ({e})") from None
    if config is not None and not isinstance(config, Mapping):
        raise PrivacyConfigError(f"{params_file}: expected a JSON object (the trial config)")
    return TrialResults(path, config, tuple(_latest_per_iteration(rows)), source)


def _read_json_lines(path: Path) -> list[dict[str, Any]]:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    results = []
    for number, line in enumerate(lines, start=1):
        try:
            result = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines):  # A running trial may be writing its last line.
                break
            raise PrivacyConfigError(f"{path}:{number}: not valid JSON ({e})") from None
        if isinstance(result, dict):
            results.append(result)
    return results


def _read_progress_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(newline="") as f:
        return [
            {key: _parse_csv_cell(value) for key, value in row.items() if key is not None}
            for row in csv.DictReader(f)
        ]


def _parse_csv_cell(text: Any) -> Any:
    if not isinstance(text, str) or text == "":
        return None
    try:
        return float(text)
    except ValueError:
        return text


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested mappings to ``/``-joined keys, as Tune's ``progress.csv`` does."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}/"))
        else:
            flat[name] = value
    return flat


def _latest_per_iteration(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the last row of every training_iteration, ordered by iteration.

    A trial resumed from a checkpoint older than its last result reports those
    iterations again; Tune appends them to the same files.
    """
    latest: dict[float, dict[str, Any]] = {}
    for row in rows:
        iteration = _number(row.get(_ITERATION_KEY))
        if iteration is None:
            return rows
        latest[iteration] = row
    return [latest[i] for i in sorted(latest)]


def _number(value: Any) -> float | None:
    """The value as a finite-or-infinite float, None for NaN and non-numbers.

    Tune's JSON encoder writes numpy NaNs as the string ``"null"`` and objects it cannot
    encode as their ``str()``; those are not numbers here.
    """
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and not math.isnan(value):
        return float(value)
    return None


def config_value(config: Mapping[str, Any], key: str) -> Any:
    """Look up a config key; nested keys are written with ``/`` (``env_config/gravity``).

    ``model_config/...`` also finds ``_model_config/...`` (``rllib train`` passes
    ``model_config`` to RLlib as ``_model_config``, and ``params.json`` shows that name), and
    a leading ``config/`` (the column prefix of Tune's result DataFrames) is ignored.

    Args:
        config: A trial config.
        key: The key.

    Returns:
        The value.

    Raises:
        KeyError: The key is not in the config.

    """
    for candidate in _key_candidates(key):
        node: Any = config
        for part in candidate.split("/"):
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
        else:
            return node
    raise KeyError(key)


def _key_candidates(key: str) -> list[str]:
    candidates = [key]
    if key.startswith("config/"):
        candidates.append(key.removeprefix("config/"))
    for candidate in list(candidates):
        if candidate == "model_config" or candidate.startswith("model_config/"):
            candidates.append("_" + candidate)
    return candidates
