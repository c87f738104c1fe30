"""Helpers for the resume-after-kill tests: run `rllib train -f` and SIGKILL it mid-run."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from cli_helpers import run_rllib

REPO = Path(__file__).resolve().parents[1]


_rllib = run_rllib


def _train_args(experiment: Path, storage: Path) -> list[str]:
    return [
        "train",
        "-f",
        str(experiment),
        "--storage-path",
        str(storage),
        "--ray-num-cpus",
        "2",
    ]


def run_cli(experiment: Path, storage: Path, *extra: str) -> subprocess.CompletedProcess:
    """Run `rllib train -f EXPERIMENT --storage-path STORAGE EXTRA...` to the end."""
    return _rllib(*_train_args(experiment, storage), *extra)


def read_rows(storage: Path) -> list[dict]:
    """The complete rows of the (single) trial's result.json, [] before the first."""
    files = list(storage.rglob("result.json"))
    if not files:
        return []
    rows = []
    for line in files[0].read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:  # the driver was writing this line
            break
    return rows


def checkpoints(storage: Path) -> int:
    """Number of checkpoint folders the run has written so far."""
    return sum(1 for path in storage.rglob("checkpoint_*") if path.is_dir())


def journal_records(storage: Path, component: str) -> list[dict]:
    """The complete records of a component's privacy journal, read without opening it.

    (``PrivacyJournal`` would truncate a torn last line of a file that is still being written.)
    Tune buffers result.json, so while a run is going the journal (fsync'd per record) is the
    way to watch its progress.
    """
    files = list(storage.rglob(f"privacy_journal/{component}.jsonl"))
    if not files:
        return []
    records = []
    for line in files[0].read_bytes().split(b"\n")[:-1]:
        records.append(json.loads(line))
    return records


def resumed_rows(storage: Path) -> list[dict]:
    """The result rows written by the last process (Tune puts the trainable's pid in each)."""
    rows = read_rows(storage)
    return [row for row in rows if row["pid"] == rows[-1]["pid"]] if rows else []


def kill_when(
    experiment: Path, storage: Path, ready: Callable[[], bool], *, timeout: float = 240
) -> None:
    """Start a run and SIGKILL its whole process group as soon as ``ready()`` is true."""
    log = storage.parent / f"{storage.name}-killed-run.log"
    storage.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as output:
        # A new session: the driver and every process Ray starts for it share one session,
        # which is all this kills.
        process = subprocess.Popen(
            [sys.executable, "-m", "rllib_privacy.cli", *_train_args(experiment, storage)],
            cwd=REPO,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            if process.poll() is not None:
                raise AssertionError(f"the run ended before it was killed:\n{log.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"not ready within {timeout} s:\n{log.read_text()}")
            time.sleep(0.05)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)
        kill_session(process.pid)


def kill_session(session: int) -> None:
    """SIGKILL what is left of the session ``session`` started, and wait until it is gone.

    Ray's workers (the trial actor among them) get process groups of their own, so killing
    the driver's group leaves them running until they notice their raylet died; until
    then the trial actor may still append to the journal (and a test reading it "at the
    kill" would miss those releases).
    """
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        table = subprocess.run(
            ["ps", "-e", "-o", "pid=,sid=,stat="], capture_output=True, text=True, check=True
        ).stdout
        alive = [
            int(pid)
            for pid, sid, stat in (line.split()[:3] for line in table.splitlines())
            if int(sid) == session and not stat.startswith("Z")
        ]
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    raise AssertionError(f"processes of session {session} still alive after 60 s")


@dataclasses.dataclass(frozen=True)
class KilledAndResumed:
    """What a kill-and-resume cycle saw.

    Attributes:
        journal_at_kill: The privacy journal's records when the run was killed.
        spent_at_kill: Releases in them.
        rows: Result rows of the resumed run.
        restored_iteration: The checkpoint Tune resumed from (0: it restarted from scratch).

    """

    journal_at_kill: list[dict]
    spent_at_kill: int
    rows: list[dict]
    restored_iteration: int


def kill_past_checkpoint_then_resume(
    experiments: dict,
    folder: Path,
    *,
    component: str,
    spent: Callable[[list[dict]], int],
    per_iteration: int,
) -> KilledAndResumed:
    """Kill a run once it spent budget after its latest checkpoint, then ``--resume`` it.

    Args:
        experiments: The experiment file's content: one experiment of one trial, with
            ``stop: {training_iteration: N}`` and ``checkpoint_config.checkpoint_frequency``.
        folder: Where the file and the results (``folder/results``) go.
        component: The privacy journal to watch.
        spent: Releases recorded in a list of journal records.
        per_iteration: Releases per training iteration while the budget lasts.

    """
    (spec,) = experiments.values()
    every = spec["checkpoint_config"]["checkpoint_frequency"]
    experiment, storage = folder / "experiment.yaml", folder / "results"
    experiment.write_text(yaml.safe_dump(experiments))

    def past_a_checkpoint() -> bool:
        # Kill once an iteration after the latest checkpoint has spent budget: its releases
        # are then in the journal only.
        done = checkpoints(storage)
        released = spent(journal_records(storage, component))
        return done > 0 and released > done * every * per_iteration

    kill_when(experiment, storage, past_a_checkpoint)
    at_kill = journal_records(storage, component)
    result = run_cli(experiment, storage, "--resume")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = resumed_rows(storage)
    restored = rows[0]["training_iteration"] - 1  # Tune's latest registered checkpoint
    assert rows[-1]["training_iteration"] == spec["stop"]["training_iteration"]
    assert len(rows) == rows[-1]["training_iteration"] - restored
    return KilledAndResumed(at_kill, spent(at_kill), rows, restored)


def build_in_folder(config_class: type, env: str, settings: dict, journal_dir: Path) -> Any:
    """Build an algorithm from an experiment's ``config:`` with its journal in ``journal_dir``."""
    values = {**settings, "privacy_journal_dir": str(journal_dir)}
    config = config_class().environment(env)
    config.rl_module(model_config=values.pop("model_config"))
    return config.update_from_dict(values).build_algo()


def restore_in_another_folder(
    build: Callable[[Path], Any], tmp_path: Path
) -> tuple[str, dict, dict]:
    """Train twice in ``run_1`` (checkpoint after the first), restore it in ``run_2``, train.

    Returns:
        (checkpoint path, run_1's second result, run_2's first result).

    """
    first = build(tmp_path / "run_1")
    try:
        first.train()
        checkpoint = first.save_to_path(str(tmp_path / "checkpoint"))
        before = first.train()  # releases after the checkpoint
    finally:
        first.stop()
    second = build(tmp_path / "run_2")
    try:
        second.restore_from_path(checkpoint)
        after = second.train()
    finally:
        second.stop()
    return checkpoint, before, after
