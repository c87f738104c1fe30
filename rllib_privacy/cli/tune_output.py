"""What Tune writes and prints during ``rllib train``: one results folder, no stray hints.

Tune writes each trial's files in a staging folder of the Ray session
(``/tmp/ray/session_*/artifacts/.../driver_artifacts``) and copies them to the storage path
(``~/ray_results/<experiment>`` by default, ``--storage-path``). Its own TensorBoard hint
names the staging folder, which disappears with the session, while the summary of
``rllib train`` names the storage folder: two commands, one of them short-lived. Tune
prints that hint exactly when one of the run's callbacks is a ``TBXLoggerCallback``
(``ray.tune.tune.run``), so ``tune_callbacks`` writes the TensorBoard events through a
logger that delegates to one instead, and turns off Tune's automatic loggers
(``TUNE_DISABLE_AUTO_CALLBACK_LOGGERS``, see
https://docs.ray.io/en/latest/tune/api/env.html), which would add another.

It imports Ray: [rllib_privacy.cli.launch][] imports it when a run starts.

After a Ctrl-C, Tune's ``ExperimentAnalysis`` logs one ``FileNotFoundError('Could not fetch
metrics ...')`` line per trial that never wrote a result file (a sweep's pending trials).
The summary of ``rllib train`` counts those trials as unfinished and says how to resume;
``tune_output_configured`` drops that warning (and only it: any other failure to read a
trial's results is still logged).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from typing import Any

from ray.tune import Callback
from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback, LoggerCallback, TBXLoggerCallback

#: The logger of Tune's ``ExperimentAnalysis`` (``ray/tune/analysis/experiment_analysis.py``).
TUNE_ANALYSIS_LOGGER = "ray.tune.analysis.experiment_analysis"

#: With "1", Tune adds no CSV, JSON and TensorBoard loggers of its own.
_AUTO_LOGGERS = "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"


class TensorBoardLogger(LoggerCallback):
    """Tune's ``TBXLoggerCallback`` behind a class that is not one (no hint from Tune).

    Same event files and tags (``ray/tune/<key>``), in the same trial folders.
    """

    # Tune syncs the files a logger names here from its staging folder to the storage path.
    _SAVED_FILE_TEMPLATES = TBXLoggerCallback._SAVED_FILE_TEMPLATES

    def __init__(self) -> None:
        self._tbx = TBXLoggerCallback()

    def log_trial_start(self, trial: Any) -> None:
        """Open the trial's event file."""
        self._tbx.log_trial_start(trial)

    def log_trial_result(self, iteration: int, trial: Any, result: dict) -> None:
        """Write the result's numbers as scalars."""
        self._tbx.log_trial_result(iteration, trial, result)

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        """Write the hyperparameters and close the event file."""
        self._tbx.log_trial_end(trial, failed=failed)


def tune_callbacks() -> list[Callback]:
    """Tune's CSV, JSON and TensorBoard loggers, without Tune's TensorBoard hint.

    Tune must not add its own (``tune_output_configured``). Without tensorboardX, the
    TensorBoard logger is left out with a warning, as Tune does.

    Returns:
        The logger callbacks for ``RunConfig(callbacks=...)``; they write ``progress.csv``,
        ``result.json``, ``params.json`` and TensorBoard events into each trial's folder.
    """
    callbacks: list[Callback] = [CSVLoggerCallback(), JsonLoggerCallback()]
    try:
        callbacks.append(TensorBoardLogger())
    except ImportError as e:
        logging.getLogger("rllib_privacy").warning(
            "no TensorBoard events: tensorboardX cannot be imported (%s)", e
        )
    return callbacks


#: One failure line of Tune's warning for a trial without result files (the repr quotes
#: the message with " when it contains a ').
_MISSING_FILES = re.compile(r"""FileNotFoundError\(["']Could not fetch metrics for """)


class _MissingMetricsFilter(logging.Filter):
    """Drops Tune's "Failed to fetch metrics" warning when every failure is a missing file."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether to log ``record``: not when it only lists trials without result files."""
        message = record.getMessage()
        if not message.startswith("Failed to fetch metrics"):
            return True
        failures = [line for line in message.splitlines()[1:] if line.strip()]
        return not failures or not all(_MISSING_FILES.search(line) for line in failures)


@contextlib.contextmanager
def tune_output_configured() -> Iterator[None]:
    """While Tune runs (also a restored Tuner): no automatic loggers, quiet analysis.

    Sets ``TUNE_DISABLE_AUTO_CALLBACK_LOGGERS=1`` in this (the driver's) process, where
    Tune reads it, and drops Tune's warning about trials that never wrote a result file;
    both are undone on exit, so that a Tuner run later in the same process (a notebook, a
    test) gets Tune's defaults again.
    """
    previous = os.environ.get(_AUTO_LOGGERS)
    os.environ[_AUTO_LOGGERS] = "1"
    tune_logger = logging.getLogger(TUNE_ANALYSIS_LOGGER)
    missing_metrics = _MissingMetricsFilter()
    tune_logger.addFilter(missing_metrics)
    try:
        yield
    finally:
        tune_logger.removeFilter(missing_metrics)
        if previous is None:
            os.environ.pop(_AUTO_LOGGERS, None)
        else:
            os.environ[_AUTO_LOGGERS] = previous
