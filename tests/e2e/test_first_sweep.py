"""A first sweep that is a first sweep: its size, its time estimate, an interrupt, one TensorBoard.

The first sweep of Getting started is ``tuned_configs/ldp_a3c_first_sweep.yaml``: one
experiment, at most 10 trials, about 10 minutes on 2 cores at most. ``rllib train`` prints
each experiment's trial count and estimate (``--dry-run`` and at the start of a run), from
the rates measured in ``benchmarks/RESULTS.md``; an interrupted sweep ends with its summary,
without one traceback per pending trial; a run prints one TensorBoard command.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import statistics
from pathlib import Path
from types import SimpleNamespace

import pytest

from rllib_privacy.cli import estimate, rllib_main
from rllib_privacy.cli.summary import tensorboard_command

REPO = Path(__file__).resolve().parents[2]
FIRST_SWEEP = REPO / "tuned_configs" / "ldp_a3c_first_sweep.yaml"
RESULTS_MD = REPO / "benchmarks" / "RESULTS.md"


def _first_sweep():  # noqa: ANN202 (an exps.Experiment)
    from rllib_privacy.experiments import load_experiments

    (experiment,) = load_experiments(FIRST_SWEEP).experiments
    return experiment


def test_first_sweep_is_one_experiment_of_at_most_10_trials_and_10_minutes() -> None:
    experiment = _first_sweep()
    assert experiment.num_variants * experiment.num_samples <= 10
    line = estimate.estimate_line(experiment, cpus=2)
    assert line.startswith("experiment 'ldp-a3c-first-sweep': 9 trials"), line
    assert "2 at a time on 2 CPUs" in line
    minutes = int(re.search(r"at most about (\d+) min", line).group(1))  # type: ignore[union-attr]  # the line has an estimate (asserted by the match)
    assert minutes <= 10
    # The file's comment, Getting started and the command-line page quote the same estimate
    # (refreshing a rate in estimate.py then fails here until they are updated).
    assert f"at most about {minutes} min" in FIRST_SWEEP.read_text()
    getting_started = (REPO / "docs" / "getting-started.md").read_text()
    assert f"at most about {minutes} minutes on 2 CPU cores" in getting_started
    for page in ("getting-started.md", "cli.md"):
        assert (
            f"# {line}\n" in (REPO / "docs" / page).read_text()
            or f"\n{line}\n" in (REPO / "docs" / page).read_text()
        ), f"docs/{page} shows another estimate than: {line}"


def test_getting_started_calls_the_small_file_the_first_sweep() -> None:
    text = (REPO / "docs" / "getting-started.md").read_text()
    first = text.split("## A first sweep", 1)[1].split("\n## ", 1)[0]
    assert "rllib train -f tuned_configs/ldp_a3c_first_sweep.yaml" in first
    # The full grid stays documented, as the full grid.
    assert "tuned_configs/ldp_a3c_sweep.yaml" in first


def _results_rows(arm: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in RESULTS_MD.read_text().splitlines()
        if line.startswith(f"| {arm} |")
    ]


def test_ldpa3c_rate_is_the_slowest_capped_trial_of_results() -> None:
    # privunitg_tuned rows where most trials never solve ran (mostly) to the 90,000 cap:
    # their wall time per trial is about the time of 90,000 submissions. The constant is
    # the slowest such row's, rounded up.
    # The per-arm table: its 13 columns end with "solved" (k/n), ..., "wall s/trial".
    rows = [r for r in _results_rows("privunitg_tuned") if len(r) == 13]
    assert rows, "RESULTS.md has no per-arm privunitg_tuned rows"
    solved = [r[8].split("/") for r in rows]
    capped = [float(r[-1]) for r, (k, n) in zip(rows, solved, strict=True) if 2 * int(k) < int(n)]
    assert capped, "RESULTS.md has no privunitg_tuned row whose trials ran to the cap"
    assert "Cap 90000 submissions" in RESULTS_MD.read_text()
    expected = -(-max(capped) / 90 // 0.01) * 0.01  # seconds per 1,000, rounded up
    assert estimate.LDPA3C_SECONDS_PER_1000_SUBMISSIONS == pytest.approx(expected)


def test_startup_is_the_quick_start_wall_minus_training_time() -> None:
    section = RESULTS_MD.read_text().split("<!-- quick_start:start -->", 1)[1]
    section = section.split("<!-- quick_start:end -->", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if re.match(r"\| \d", line)]
    startup = statistics.median(float(r[3]) - float(r[4]) for r in rows)
    assert abs(estimate.STARTUP_SECONDS - startup) <= 1, startup


def test_dry_run_prints_trials_and_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    code = rllib_main(["train", "-f", str(FIRST_SWEEP), "--dry-run", "--ray-num-cpus", "4"])
    out = capsys.readouterr().out
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.startswith("# experiment ")]
    assert line.startswith("# experiment 'ldp-a3c-first-sweep': 9 trials (3 variant(s) x 3")
    # 4 CPUs: 4 trials at a time, so 3 rounds of 150,000 submissions after the start-up.
    assert "4 at a time on 4 CPUs" in line and "at most about 3 min" in line, line


def test_no_estimate_without_a_measured_rate() -> None:
    from rllib_privacy.experiments import load_experiments

    (experiment,) = load_experiments(REPO / "tuned_configs" / "ldp_ppo_cartpole.yaml").experiments
    line = estimate.estimate_line(experiment, cpus=2)
    assert re.match(r"experiment '[^']+': 1 trial \(1 variant", line), line
    assert "no measured time per trial" in line and "min" not in line


@pytest.mark.parametrize(
    ("seconds", "text"), [(40, "40 s"), (91, "2 min"), (600, "10 min"), (9000, "2.5 h")]
)
def test_format_duration(seconds: float, text: str) -> None:
    assert estimate.format_duration(seconds) == text


# ---- an interrupted sweep: no tracebacks for trials that never wrote a result -------------


def _analysis_warnings(tmp_path: Path, trials: list) -> str:
    """What Tune's ExperimentAnalysis logs reading these trials, in tune_output_configured."""
    from ray.tune.analysis.experiment_analysis import ExperimentAnalysis

    from rllib_privacy.cli.tune_output import TUNE_ANALYSIS_LOGGER, tune_output_configured

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    tune_logger = logging.getLogger(TUNE_ANALYSIS_LOGGER)
    tune_logger.addHandler(handler)
    # Another test in the same process may have quietened Tune's loggers (rllib train sets
    # their level while it runs): this test is about the filter, so it sets the level itself.
    saved = (tune_logger.level, tune_logger.disabled, logging.root.manager.disable)
    tune_logger.setLevel(logging.WARNING)
    tune_logger.disabled = False
    logging.disable(logging.NOTSET)
    try:
        with tune_output_configured():
            analysis = ExperimentAnalysis.__new__(ExperimentAnalysis)
            analysis.trials = trials
            analysis._fetch_trial_dataframes()
    finally:
        tune_logger.removeHandler(handler)
        tune_logger.setLevel(saved[0])
        tune_logger.disabled = saved[1]
        logging.disable(saved[2])
    assert not tune_logger.filters  # Removed again on exit.
    return stream.getvalue()


def _trial(folder: Path, name: str) -> _FakeTrial:
    """What ExperimentAnalysis reads of a Trial: its name, last result and storage."""
    import pyarrow.fs

    storage = SimpleNamespace(
        trial_fs_path=str(folder / name), storage_filesystem=pyarrow.fs.LocalFileSystem()
    )
    return _FakeTrial(trial_id=name, last_result={}, storage=storage)


class _FakeTrial(SimpleNamespace):
    def __str__(self) -> str:  # Tune's Trial prints as its name, e.g. LDPA3C_5c8a1_00003.
        return str(self.trial_id)


def test_pending_trials_of_an_interrupted_sweep_log_nothing(tmp_path: Path) -> None:
    # Tune's pending trials have an empty (not None) last result and no files: each was one
    # `FileNotFoundError('Could not fetch metrics ...')` line before the summary.
    trials = [_trial(tmp_path, f"LDPA3C_{i:05d}") for i in range(3)]
    assert _analysis_warnings(tmp_path, trials) == ""


def test_other_failures_to_read_results_are_still_logged(tmp_path: Path) -> None:
    broken = _trial(tmp_path, "broken")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "result.json").write_text("{not json\n")
    logged = _analysis_warnings(tmp_path, [_trial(tmp_path, "pending"), broken])
    assert "Failed to fetch metrics for 2 trial(s)" in logged and "JSONDecodeError" in logged


def test_tune_output_turns_off_tunes_own_loggers(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray.tune.logger import TBXLoggerCallback
    from ray.tune.utils.callback import _create_default_callbacks

    from rllib_privacy.cli.tune_output import tune_callbacks, tune_output_configured

    monkeypatch.delenv("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", raising=False)
    with tune_output_configured():
        callbacks = _create_default_callbacks(tune_callbacks())
    # No TBXLoggerCallback: Tune prints its TensorBoard hint (naming its staging folder)
    # exactly when one is present; ours writes the same events.
    assert not any(isinstance(c, TBXLoggerCallback) for c in callbacks)
    names = [type(c).__name__ for c in callbacks]
    assert names.count("TensorBoardLogger") == 1 and names.count("JsonLoggerCallback") == 1
    # Afterwards, Tune's defaults again (a Tuner later in the same process).
    assert "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS" not in os.environ
    defaults = [type(c).__name__ for c in _create_default_callbacks([])]
    assert "TBXLoggerCallback" in defaults


# ---- one TensorBoard command ------------------------------------------------------------------


def test_one_tensorboard_command_for_one_or_several_experiments() -> None:
    assert tensorboard_command(["/r/exp"]) == "  tensorboard --logdir /r/exp"
    assert tensorboard_command(["/r/a", "/r/b", "/r/a"]) == "  tensorboard --logdir /r"
    assert tensorboard_command(["/r/my exp"]) == "  tensorboard --logdir '/r/my exp'"


def test_report_prints_one_tensorboard_line_for_several_experiments(tmp_path: Path) -> None:
    from rllib_privacy.cli.summary import Outcome, report

    experiments = [SimpleNamespace(name=n, path=str(tmp_path / n)) for n in ("a", "b")]
    outcomes = [Outcome(experiment=e, grid=[]) for e in experiments]  # type: ignore[arg-type]  # the summary reads only name and path
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report(outcomes, SimpleNamespace(path="f.yaml"), SimpleNamespace(storage_path=None))  # type: ignore[arg-type]  # report reads path and storage_path
    lines = [ln for ln in out.getvalue().splitlines() if "tensorboard --logdir" in ln]
    assert lines == [f"  tensorboard --logdir {tmp_path}"]
    # Under it, once: where the privacy-first layout is (TensorBoard opens on time series).
    after = out.getvalue().splitlines()
    index = after.index(lines[0])
    assert after[index + 1] == (
        "  privacy first: its Custom scalars tab, http://localhost:6006/#custom_scalars"
    )
    assert out.getvalue().count("#custom_scalars") == 1


@pytest.mark.ray
@pytest.mark.slow
def test_interrupted_first_sweep_prints_the_summary_and_how_to_resume(tmp_path: Path) -> None:
    # Ctrl-C while 2 of the 9 trials run: 7 never started. Before, each of those was a
    # `FileNotFoundError('Could not fetch metrics ...')` line above the summary.
    import json
    import signal
    import subprocess
    import sys
    import time

    small = {"aggregator_submissions_per_iteration": 256, "aggregator_max_buffer": 64}
    process = subprocess.Popen(
        [sys.executable, "-m", "rllib_privacy.cli", "train", "-f", str(FIRST_SWEEP)]
        + ["--stop", json.dumps({"training_iteration": 10_000}), "--config", json.dumps(small)]
        + ["--storage-path", str(tmp_path), "--ray-num-cpus", "2"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    deadline = time.monotonic() + 300
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if "] iter 2 |" in line or time.monotonic() > deadline:
            break
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=300)
    output = "".join(lines) + rest
    assert process.returncode == 130, output[-3000:]
    assert "experiment 'ldp-a3c-first-sweep': 9 trials" in output
    assert "Could not fetch metrics" not in output and "Traceback" not in output, output[-3000:]
    assert re.search(r"trials: \d+ finished, 0 errored, [1-9]\d* unfinished", output), output
    assert "Resume with:" in output and "--resume" in output
    assert len(re.findall("tensorboard --logdir", output)) == 1, output[-3000:]
