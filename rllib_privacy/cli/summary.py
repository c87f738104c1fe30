"""What ``rllib train`` prints after Tune returns: one summary per experiment, then ε.

Each experiment gets its trial counts, errored trials, the best trial's headline metrics
and checkpoint; then one TensorBoard command for the whole run; the run's last lines are
the privacy each experiment spent (the largest over its trials) and, after a Ctrl-C, the
command that resumes it.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import shlex
import sys
import time
from typing import TYPE_CHECKING, Any

from rllib_privacy.cli.common import EXIT_INTERRUPTED, EXIT_OK, EXIT_TRIAL_ERROR
from rllib_privacy.utils import metrics as metric_keys

if TYPE_CHECKING:
    from rllib_privacy import experiments as exps

#: The metric by which the summary picks the best trial (maximized).
BEST_TRIAL_METRIC = "env_runners/episode_return_mean"


#: Result keys shown for the best trial in the summary, when present.
HEADLINE_METRICS = (
    "training_iteration",
    "num_env_steps_sampled_lifetime",
    "env_runners/episode_return_mean",
    "evaluation/env_runners/episode_return_mean",
    metric_keys.PRIVACY_EPSILON_SPENT,
    metric_keys.PRIVACY_DELTA_SPENT,
    # LDPA3C behind the shuffler: the central guarantee and ε₀ (never without a shuffler:
    # `privacy/epsilon_central_if_shuffled` is hypothetical and not shown).
    metric_keys.PRIVACY_EPSILON_CENTRAL,
    metric_keys.PRIVACY_DELTA_CENTRAL,
    metric_keys.PRIVACY_EPSILON_PER_REPORT,
    metric_keys.LDP_SOLVED_AT,
    # The solved criterion's value when it fired and its window (LDPA3C).
    metric_keys.LDP_SOLVED_SCORE,
    metric_keys.LDP_SCORE_WINDOW,
    metric_keys.LDP_EVAL_RETURN_MEAN,
    # Reports refused by LDPA3C's output-set check: shown only when some were.
    metric_keys.LDP_REJECTED_SUBMISSIONS,
    metric_keys.KICKSTART_TEACHER_STOPPED_AT,
    metric_keys.PATE_QUERIES,
    metric_keys.PATE_EPSILON,
    # Instance-wise Laplace (ILMMetricsCallback): KL against uniform Laplace and pDP.
    metric_keys.ILM_KL_RATIO,
    metric_keys.ILM_PDP_VIOLATIONS,
    metric_keys.ILM_PDP_PASS_RATE,
    # Count-based exploration: the return without bonus is the performance.
    metric_keys.EXPLORATION_EXTRINSIC_RETURN_MEAN,
    metric_keys.EXPLORATION_UNIQUE_CODES,
    metric_keys.EXPLORATION_BONUS_MEAN,
    "time_total_s",
)
#: Headline metrics left out of the summary while they are 0 (nothing happened).
SHOWN_WHEN_NONZERO = frozenset({metric_keys.LDP_REJECTED_SUBMISSIONS})


@dataclasses.dataclass
class Outcome:
    """What became of one experiment.

    Attributes:
        experiment: The experiment.
        grid: Tune's ``ResultGrid``; None when interrupted before it returned.
        interrupted: Whether Ctrl-C stopped it (some trial did not finish).
        failure: Why Tune itself failed (``Type: message``) before returning results,
            or None.
    """

    experiment: exps.Experiment
    grid: Any = None
    interrupted: bool = False
    failure: str | None = None


def trial_counts(grid: Any) -> tuple[int, int, int]:
    """Count (finished, errored, unfinished) trials of a ResultGrid.

    Tune marks the trials it stops on Ctrl-C as TERMINATED in the returned grid (the
    saved experiment state still says RUNNING, so that they resume); only a trial that
    met its stop criteria has ``done`` set in its last result.
    """
    errored = sum(1 for result in grid if result.error is not None)
    finished = sum(1 for r in grid if r.error is None and (r.metrics or {}).get("done"))
    return finished, errored, len(grid) - finished - errored


def report(
    outcomes: list[Outcome], experiment_file: exps.ExperimentFile, args: argparse.Namespace
) -> int:
    """Print every experiment's summary, then the privacy lines and how to resume.

    Args:
        outcomes: One per experiment that ran.
        experiment_file: The experiments' file.
        args: The parsed ``rllib train`` arguments (``storage_path`` is used).

    Returns:
        The exit code: interrupted, a trial errored, or success.
    """
    errored = False
    for outcome in outcomes:
        errored |= print_summary(outcome)
    if outcomes:
        print(tensorboard_command([outcome.experiment.path for outcome in outcomes]))
        print(TENSORBOARD_HINT)
    privacy = [line for outcome in outcomes if (line := privacy_line(outcome))]
    if privacy:
        # Last, so that the privacy spent is the run's last word (and what `tail -1` shows).
        print("\n" + "\n".join(privacy))
    if outcomes and outcomes[-1].interrupted:
        command = ["rllib", "train", "-f", experiment_file.path, "--resume"]
        if args.storage_path:
            command += ["--storage-path", args.storage_path]
        print(
            "\nInterrupted; Tune saved the experiment state. Resume with:\n  "
            + shlex.join(command)
            + "\n(trials continue from their latest checkpoint; "
            "checkpoint_config.checkpoint_frequency sets how often one is written)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return EXIT_TRIAL_ERROR if errored else EXIT_OK


def print_summary(outcome: Outcome) -> bool:
    """Print one experiment's summary; return whether any of its trials errored.

    A journal repaired during the run is named whatever became of the experiment: a run
    that Tune failed or that was interrupted is just the one after which the user must know
    that a torn release was dropped (the worker's own warning shows only with ``-v``).
    """
    print(f"\nExperiment {outcome.experiment.name!r}: {outcome.experiment.path}")
    errored = _print_trials(outcome)
    for notice in journal_repairs(outcome.experiment.path):
        print(f"  notice: {notice}")
    return errored


def _print_trials(outcome: Outcome) -> bool:
    """The summary's trial lines (counts, errors, best trial); whether a trial errored."""
    exp, grid = outcome.experiment, outcome.grid
    if grid is None and outcome.failure is not None:
        print(f"  Tune failed before returning its results: {outcome.failure}")
        for trial_dir, error in trial_errors(exp.path):
            print(f"  errored: {trial_dir}: {error} (see error.txt there)")
        return True
    if grid is None:
        print("  interrupted before Tune returned its results")
        return False
    finished, errored, unfinished = trial_counts(grid)
    print(f"  trials: {finished} finished, {errored} errored, {unfinished} unfinished")
    for result in grid:
        if result.error is not None:
            print(f"  errored: {result.path}: {last_line(result.error)} (see error.txt there)")
    idle = [(result, why) for result in grid if (why := did_nothing(result))]
    for result, why in idle:
        print(
            f"  did nothing: {result.path}: finished with {why}; its workers failed (their "
            "logs show with -v)"
        )
    errored += len(idle)
    best = best_result(grid)
    if best is not None:
        values = headline_values(best.metrics)
        shown = ", ".join(f"{k}={format_number(v)}" for k, v in values.items())
        print(f"  best trial: {os.path.basename(best.path)}" + (f": {shown}" if shown else ""))
        note = score_note(best.metrics)
        if note:
            print(f"  {note}")
        if best.checkpoint is not None:
            print(f"  checkpoint: {best.checkpoint.path}")
    return errored > 0


#: When this command started: journal repairs noted earlier belong to earlier runs.
_STARTED = time.time()


def journal_repairs(experiment_path: str, since: float | None = None) -> list[str]:
    """One notice per privacy journal of the experiment repaired since ``since``.

    A journal opened after a crash drops its torn last line (a release that was being
    written, never applied) and notes it beside itself
    (``rllib_privacy.accounting.journal.REPAIRED_SUFFIX``); the worker's own warning is
    only shown with ``-v``.

    Args:
        experiment_path: The experiment's folder (trial folders below it).
        since: Oldest repair to report (default: when this command started).
    """
    from rllib_privacy.accounting.journal import JOURNAL_DIR_NAME, REPAIRED_SUFFIX

    if "://" in experiment_path:
        return []
    since = _STARTED if since is None else since
    pattern = os.path.join(glob.escape(experiment_path), "*", JOURNAL_DIR_NAME, "*")
    notices = []
    for marker in sorted(glob.glob(pattern + REPAIRED_SUFFIX)):
        try:
            with open(marker, encoding="utf-8") as f:
                notes = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError):
            continue
        for note in notes:
            if note.get("time", 0) >= since:
                notices.append(
                    f"privacy journal {marker[: -len(REPAIRED_SUFFIX)]} ended in a torn line "
                    f"(a crash mid-append): {note.get('dropped_bytes')} bytes dropped, "
                    f"{note.get('records')} records kept"
                )
    return notices


#: Counters of work done: a finished trial reporting 0 for one of them did nothing.
WORK_COUNTERS = (metric_keys.LDP_SUBMISSIONS, "num_env_steps_sampled_lifetime")


def did_nothing(result: Any) -> str:
    """``"<counter> = 0"`` for a finished trial that did no work, else ``""``.

    A trial whose every worker failed (e.g. an update that overflowed in each) can still
    reach its stop criterion and finish without an error: it must not count as a success.
    """
    from ray.tune.utils import flatten_dict

    metrics = result.metrics or {}
    if result.error is not None or not metrics.get("done"):
        return ""
    flat = flatten_dict(metrics, delimiter="/")
    for key in WORK_COUNTERS:
        if key in flat:
            return f"{key} = 0" if flat[key] == 0 else ""
    return ""


def trial_errors(experiment_path: str) -> list[tuple[str, str]]:
    """``(trial folder, last line of its error.txt)`` for each trial that wrote one.

    Read from the files, not Tune's results: used when Tune could not return those (a
    full disk leaves its pickled errors empty, the text ones still name the cause).
    """
    if "://" in experiment_path or not os.path.isdir(experiment_path):
        return []
    found = []
    for name in sorted(os.listdir(experiment_path)):
        path = os.path.join(experiment_path, name, "error.txt")
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        found.append((os.path.join(experiment_path, name), last_line(RuntimeError(text))))
    return found


#: Printed under the TensorBoard command: TensorBoard opens on its time-series page (dozens
#: of RLlib cards) and cannot be told to open elsewhere; the privacy-first layout every trial
#: writes (``rllib_privacy.utils.tensorboard_layout``) is on the Custom scalars tab.
TENSORBOARD_HINT = "  privacy first: its Custom scalars tab, http://localhost:6006/#custom_scalars"


def tensorboard_command(experiment_paths: list[str]) -> str:
    """The run's one TensorBoard command: its experiment folder, or the folder holding all.

    Several experiments of one file share a storage path, so their common folder shows
    them side by side (and any other experiment stored there).
    """
    paths = list(dict.fromkeys(experiment_paths))
    if len(paths) == 1 or "://" in paths[0]:
        logdir = paths[0]
    else:
        try:
            logdir = os.path.commonpath(paths)
        except ValueError:  # Different drives: fall back to the first experiment.
            logdir = paths[0]
    return f"  tensorboard --logdir {shlex.quote(logdir)}"


def privacy_line(outcome: Outcome) -> str | None:
    """``privacy: '<exp>' spent ε = … at δ = …``, the largest over its trials, or None.

    The largest, not the best trial's. With a data owner's budget (``*_budget_scope:
    owner``, docs/privacy-journal.md#owner-ledgers) each trial reports the owner's ε over
    every trial and run so far, so the largest is the owner's latest total; with
    ``*_budget_scope: trial`` each trial spent its own budget and the line says "per trial".
    """
    from ray.tune.utils import flatten_dict

    spent = []
    scopes = set()
    for result in outcome.grid or []:
        flat = flatten_dict(result.metrics or {}, delimiter="/")
        epsilon = flat.get(metric_keys.PRIVACY_EPSILON_SPENT)
        if isinstance(epsilon, int | float) and not isinstance(epsilon, bool):
            spent.append((float(epsilon), flat.get(metric_keys.PRIVACY_DELTA_SPENT)))
            scopes.add(flat.get(metric_keys.PRIVACY_BUDGET_PER_TRIAL))
    if not spent:
        return None
    epsilon, delta = max(spent, key=lambda pair: pair[0])
    at_delta = f" at δ = {format_number(float(delta))}" if isinstance(delta, int | float) else ""
    largest = f"largest of {len(spent)} trials" if len(spent) > 1 else ""
    if 1.0 in scopes:
        notes = ["each trial spends its own budget", largest]
        where = " per trial"
    elif 0.0 in scopes:
        notes = ["the data owner's ledger: every trial and run of its data together", largest]
        where = ""
    else:
        notes, where = [largest], ""
    note = "; ".join(n for n in notes if n)
    return (
        f"privacy: {outcome.experiment.name!r} spent ε = {format_number(epsilon)}{at_delta}"
        f"{where}" + (f" ({note})" if note else "") + central_clause(outcome)
    )


def central_clause(outcome: Outcome) -> str:
    """``; central ε = … at δ = … behind the shuffler (ε₀ = … per report)``, or "".

    Only for trials that ran the shuffler (``privacy/epsilon_central``): the largest over
    them. A run without one gets nothing here, whatever a shuffler would have given.
    """
    from ray.tune.utils import flatten_dict

    central = []
    for result in outcome.grid or []:
        flat = flatten_dict(result.metrics or {}, delimiter="/")
        epsilon = flat.get(metric_keys.PRIVACY_EPSILON_CENTRAL)
        if isinstance(epsilon, int | float) and not isinstance(epsilon, bool):
            central.append(
                (
                    float(epsilon),
                    flat.get(metric_keys.PRIVACY_DELTA_CENTRAL),
                    flat.get(metric_keys.PRIVACY_EPSILON_PER_REPORT),
                )
            )
    if not central:
        return ""
    epsilon, delta, epsilon0 = max(central, key=lambda row: row[0])
    text = f"; central ε = {format_number(epsilon)}"
    if isinstance(delta, int | float):
        text += f" at δ = {format_number(float(delta))}"
    text += " behind the shuffler"
    if isinstance(epsilon0, int | float):
        text += f" (ε₀ = {format_number(float(epsilon0))} per report)"
    return text


def best_result(grid: Any) -> Any:
    """Pick the result with the highest BEST_TRIAL_METRIC, else the first with metrics."""
    from ray.tune.utils import flatten_dict

    with_metrics = [r for r in grid if r.metrics and r.error is None]
    scored = [
        (flatten_dict(r.metrics, delimiter="/").get(BEST_TRIAL_METRIC), r) for r in with_metrics
    ]
    scored = [(v, r) for v, r in scored if isinstance(v, int | float) and v == v]
    if scored:
        return max(scored, key=lambda pair: pair[0])[1]
    return with_metrics[0] if with_metrics else None


def score_note(result_metrics: dict[str, Any]) -> str | None:
    """What an LDPA3C result's scores are: private (in ε) or public (the paper's), or None.

    ``episode_return_mean`` is the mean of the last ``ldp/score_window`` scores when the
    run ended; ``ldp/solved_score`` the mean of the window that met the solved criterion.
    """
    from ray.tune.utils import flatten_dict

    flat = flatten_dict(result_metrics, delimiter="/")
    private = flat.get(metric_keys.LDP_SCORE_PRIVATE)
    if not isinstance(private, int | float) or isinstance(private, bool):
        return None
    window = flat.get(metric_keys.LDP_SCORE_WINDOW)
    last = f"the last {int(window):,}" if isinstance(window, int | float) else "the last"
    if private:
        what = "private (one bit per submission, debiased; counted in ε per agent)"
    else:
        what = "PUBLIC (the paper's setting: sent in the clear, not counted in ε)"
    return (
        f"scores: {what}; episode_return_mean = mean of {last} scores at the end, "
        "ldp/solved_score = mean of the window that solved"
    )


def headline_values(result_metrics: dict[str, Any]) -> dict[str, Any]:
    """The ``HEADLINE_METRICS`` a result has (the shortest matching nested key of each)."""
    from ray.tune.utils import flatten_dict

    flat = flatten_dict(result_metrics, delimiter="/")
    values = {}
    for key in HEADLINE_METRICS:
        matches = [k for k in flat if k == key or k.endswith("/" + key)]
        if matches and isinstance(flat[min(matches, key=len)], int | float):
            if key in SHOWN_WHEN_NONZERO and not flat[min(matches, key=len)]:
                continue
            values[key] = flat[min(matches, key=len)]
    return values


def last_line(error: BaseException) -> str:
    """The last non-empty line of an error's text, at most 200 characters."""
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    text = lines[-1].strip() if lines else type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def format_number(value: float) -> str:
    """Four significant digits for a float, anything else as is."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)
