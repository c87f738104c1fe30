"""`rllib train` on faults: a full disk stops the trial, and the summary still comes.

A full disk is simulated: the journal's fault-injection variable
(``rllib_privacy.accounting.journal.FULL_DISK_AFTER_ENV``) makes every journal write in
every process fail with ENOSPC; Tune itself failing to read its results back (what a
really full disk does to its pickles: ``EOFError: Ran out of input``) is simulated by
making ``Tuner.fit`` raise that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_helpers import PPO_FILE

from rllib_privacy.accounting.journal import FULL_DISK_AFTER_ENV


def test_tune_failing_to_return_results_still_prints_the_summary(tmp_path, monkeypatch, capsys):
    import ray
    from ray import tune

    from rllib_privacy.cli import rllib_main

    path = tmp_path / "ppo.yaml"
    path.write_text(PPO_FILE)
    storage = tmp_path / "results"
    trial_dir = storage / "ppo" / "PPO_CartPole-v1_00000"

    def fit(self):
        trial_dir.mkdir(parents=True)
        (trial_dir / "error.txt").write_text(
            "Traceback (most recent call last):\n  ...\nOSError: [Errno 28] No space left on "
            "device: 'privacy_journal/ldp_a3c.jsonl'\n"
        )
        raise EOFError("Ran out of input")

    monkeypatch.setattr(ray, "init", lambda *a, **k: None)
    monkeypatch.setattr(ray, "shutdown", lambda *a, **k: None)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    monkeypatch.setattr(tune.Tuner, "fit", fit)
    code = rllib_main(["train", "-f", str(path), "--storage-path", str(storage)])
    out = capsys.readouterr().out
    assert code == 1
    assert f"Experiment 'ppo': {storage / 'ppo'}" in out
    assert "Tune failed before returning its results: EOFError: Ran out of input" in out
    assert f"errored: {trial_dir}: OSError: [Errno 28] No space left on device" in out
    assert "tensorboard --logdir" in out


@pytest.mark.slow
def test_full_disk_during_a_run_names_the_error_in_the_summary(tmp_path):
    env = {**os.environ, FULL_DISK_AFTER_ENV: "3"}
    done = subprocess.run(
        [
            sys.executable, "-m", "rllib_privacy.cli", "train", "-f", "ldp_a3c",
            "--stop", json.dumps({"training_iteration": 2}),
            "--storage-path", str(tmp_path), "--ray-num-cpus", "2",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert "trials: 0 finished, 1 errored, 0 unfinished" in done.stdout, done.stdout
    errored = [line for line in done.stdout.splitlines() if "errored: " in line]
    assert errored and "No space left on device" in errored[0], done.stdout
    assert "EOFError" not in done.stdout + done.stderr


def test_a_finished_trial_that_did_nothing_is_a_failure(capsys):
    from types import SimpleNamespace

    from rllib_privacy.cli.summary import Outcome, print_summary

    def result(path: str, submissions: int) -> SimpleNamespace:
        metrics = {"done": True, "training_iteration": 3, "ldp": {"submissions": submissions}}
        return SimpleNamespace(path=path, metrics=metrics, error=None, checkpoint=None)

    exp = SimpleNamespace(name="ldp", path="/results/ldp")
    assert print_summary(Outcome(exp, [result("/results/ldp/a", 0)])) is True
    out = capsys.readouterr().out
    assert "did nothing: /results/ldp/a: finished with ldp/submissions = 0" in out
    assert print_summary(Outcome(exp, [result("/results/ldp/b", 512)])) is False
