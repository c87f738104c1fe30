"""LDPA3C under faults: an EnvRunner that dies, duplicates, and a driver killed mid-run."""

from __future__ import annotations

import math
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest
from journaled_component_contract import JournaledComponentContract
from kill_resume_helpers import checkpoints, journal_records, kill_session, read_rows

from rllib_privacy.accounting import (
    LDPLedger,
    LDPReport,
    PrivacyJournal,
    default_journal_dir,
    journal_file,
)
from rllib_privacy.algorithms.ldp_a3c import LDPA3C, GradientSubmission, LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c import JOURNAL_COMPONENT
from rllib_privacy.algorithms.ldp_a3c.testing import (
    CRASH_MARKER_KEY,
    CRASH_ON_CALL_KEY,
    CrashOnceLDPA3CEnvRunner,
)
from rllib_privacy.errors import PrivacyConfigError

# Long Ray/CLI runs (see the --durations report): run with -m slow; CI does.
pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parents[2]
MAX_BUFFER = 4
LAST_ITERATION = 60


class VersionLoggingLDPA3C(LDPA3C):
    """LDPA3C that remembers every θ version it produced, in order."""

    def _receive(self, submissions: list[Any]) -> None:
        super()._receive(submissions)
        versions = self.__dict__.setdefault("versions", [0])
        if self._weights_version != versions[-1]:
            versions.append(self._weights_version)


@pytest.mark.parametrize("value", [False, "off", "", "None"])
def test_journal_cannot_be_switched_off(value: Any) -> None:
    config = LDPA3CConfig().training(privacy_journal_dir=value)
    with pytest.raises(PrivacyConfigError, match="'privacy_journal_dir' cannot switch"):
        config.validate_ldp_settings()


def test_journal_dir_must_be_a_path() -> None:
    config = LDPA3CConfig().training(privacy_journal_dir=3)
    with pytest.raises(PrivacyConfigError, match="'privacy_journal_dir' must be null or a folder"):
        config.validate_ldp_settings()


def test_journal_dir_must_be_absolute() -> None:
    config = LDPA3CConfig().training(privacy_journal_dir="journal")
    with pytest.raises(PrivacyConfigError, match="'privacy_journal_dir' must be an absolute"):
        config.validate_ldp_settings()
    LDPA3CConfig().training(privacy_journal_dir="~/journal").validate_ldp_settings()


def test_submission_sequence_must_be_positive() -> None:
    with pytest.raises(ValueError, match="agent_sequence must be >= 1"):
        _submission("a", 0, dim=3)


def test_ledger_counts_releases_per_agent() -> None:
    ledger = LDPLedger()
    assert ledger.releases_of("a") == 0
    ledger.record(LDPReport(agent_id="a", epsilon=0.5, mechanism="laplace"))
    assert ledger.releases_of("a") == 1
    ledger.record(LDPReport(agent_id="a", epsilon=0.25, mechanism="prs"))
    ledger.record(LDPReport(agent_id="a", epsilon=0.25, mechanism="prs"))
    ledger.record(LDPReport(agent_id="b", epsilon=1.0, mechanism="laplace"))
    assert (ledger.releases_of("a"), ledger.releases_of("b")) == (3, 1)
    restored = LDPLedger.from_state_dict(ledger.state_dict())
    assert restored.releases_of("a") == 3


def _submission(agent_id: str, sequence: int, *, dim: int) -> GradientSubmission:
    return GradientSubmission(
        agent_id=agent_id,
        gradient=np.zeros(dim, dtype=np.float32),
        epsilon=1.0,
        mechanism="laplace",
        score=10.0,
        env_steps=10,
        weights_version=0,
        agent_sequence=sequence,
    )


@pytest.mark.ray
def test_env_runner_crash_loses_no_update_and_applies_nothing_twice(
    ray_session, tmp_path: pathlib.Path
) -> None:
    marker = tmp_path / "crashed"
    config = (
        LDPA3CConfig(algo_class=VersionLoggingLDPA3C)
        .environment(env_config={CRASH_MARKER_KEY: str(marker), CRASH_ON_CALL_KEY: 3})
        .env_runners(num_env_runners=2, env_runner_cls=CrashOnceLDPA3CEnvRunner)
        .fault_tolerance(restart_failed_env_runners=True)
        .training(
            mechanism="laplace",
            epsilon=1.0,
            max_buffer=MAX_BUFFER,
            submissions_per_iteration=10,
            privacy_journal_dir=str(tmp_path / "journal"),
        )
        # One release per submission (public score): the crash accounting below.
        .privacy(privacy_score_mechanism="public")
    )
    algo = config.build_algo()
    try:
        results = [algo.train() for _ in range(3)]
        # The dead runner's request fails only once Ray has restarted the actor (seconds),
        # which can come after the third iteration: train on until it did (bounded).
        deadline = time.monotonic() + 60
        while results[-1]["ldp"]["lost_requests"] == 0 and time.monotonic() < deadline:
            results.append(algo.train())
        ldp = results[-1]["ldp"]
        assert marker.exists(), "the runner was expected to crash"
        assert ldp["lost_requests"] >= 1
        # Training continued past the crash.
        assert [r["submissions"] for r in results] == sorted({r["submissions"] for r in results})
        assert results[-1]["submissions"] >= 10 * len(results)
        # Every recorded release was applied exactly once, and no update was lost.
        assert ldp["submissions"] == results[-1]["privacy"]["releases"]
        assert ldp["applied_submissions"] == ldp["submissions"]
        assert ldp["submissions_dropped"] == 0 and ldp["duplicate_submissions"] == 0
        assert ldp["updates"] == ldp["applied_submissions"] // MAX_BUFFER
        # The buffer lives on the aggregator: what it held at the crash is still counted.
        assert ldp["buffer_size"] == ldp["applied_submissions"] % MAX_BUFFER
        assert algo.versions == list(range(int(ldp["updates"]) + 1))
        # The journal holds every release, each id once.
        records = PrivacyJournal(
            journal_file(tmp_path / "journal", JOURNAL_COMPONENT), component=JOURNAL_COMPONENT
        ).records()
        ids = [r["id"] for r in records if r["kind"] == "release"]
        assert len(ids) == len(set(ids)) == ldp["submissions"]

        # A submission delivered twice is rejected, never applied twice.
        agent = next(iter(algo._ledger.state_dict()["agents"]))
        before = (algo._applied, algo._ledger.releases, len(algo._journal))
        algo._receive([_submission(agent, 1, dim=algo._weights.size)] * 2)
        assert (algo._applied, algo._ledger.releases, len(algo._journal)) == before
        assert algo._duplicates == 2
        # A new agent's first submission counts once, however often it arrives.
        algo._receive([_submission("new-agent", 1, dim=algo._weights.size)] * 2)
        assert algo._applied == before[0] + 1 and algo._duplicates == 3
        # A release over the agent's budget is refused (counted, never journaled or applied)
        # and the trial goes on: one agent cannot stop it by sending past its budget.
        rejected = algo._rejected
        algo._receive([_submission("new-agent", 2, dim=algo._weights.size)])
        assert algo._applied == before[0] + 1 and len(algo._journal) == before[2] + 1
        assert algo._rejected == rejected + 1
    finally:
        algo.stop()


def _tiny_yaml(path: pathlib.Path) -> None:
    path.write_text(
        "ldp-a3c-resume:\n"
        "  run: LDPA3C\n"
        "  env: rllib_privacy/CartPoleGravity-v0\n"
        # Tuner.restore (--resume) keeps the first run's stop criteria.
        f"  stop:\n    training_iteration: {LAST_ITERATION}\n"
        "  checkpoint_config:\n"
        "    checkpoint_frequency: 3\n"
        # Tune's --resume trips over checkpoints that num_to_keep deleted after its last
        # experiment snapshot (FileNotFoundError, then the trial never stops): keep them.
        "    num_to_keep: 1000\n"
        "  config:\n"
        "    mechanism: laplace\n"
        "    epsilon: 1.0\n"
        "    max_buffer: 3\n"
        "    num_env_runners: 0\n"
        "    submissions_per_iteration: 5\n"
        # One release per submission (public score): the exact accounting below.
        "    privacy_score_mechanism: public\n"
        "    seed: 0\n"
    )


@pytest.mark.ray
@pytest.mark.slow
def test_resume_after_kill_keeps_releases_made_after_the_last_checkpoint(
    tmp_path: pathlib.Path,
) -> None:
    yaml_path, storage = tmp_path / "x.yaml", tmp_path / "results"
    _tiny_yaml(yaml_path)
    command = [
        sys.executable,
        "-m",
        "rllib_privacy.cli",
        "train",
        "-f",
        str(yaml_path),
        "--storage-path",
        str(storage),
        "--ray-num-cpus",
        "2",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_DEDUP_LOGS": "0"}
    # Killed once it wrote a checkpoint and ran iterations after it.
    first = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, so that only it is killed
    )
    # Tune buffers result.json, so its rows can lag the run by many iterations (on a fast
    # machine the whole run used to finish before they showed it had started): watch the
    # journal, which is fsync'd per release, and kill once releases were made after the latest
    # checkpoint (they are then in the journal only).
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            spent = sum(
                1 for r in journal_records(storage, JOURNAL_COMPONENT) if r["kind"] == "release"
            )
            done = checkpoints(storage)  # one every 3 iterations of 5 releases
            if done and spent >= 5 * 4 and spent > done * 3 * 5:
                break
            if first.poll() is not None:
                pytest.fail(f"the first run exited early with code {first.returncode}")
            time.sleep(0.05)
        else:
            pytest.fail("no checkpoint and 4 iterations within 240 s")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
        kill_session(first.pid)
    trial_dirs = [p for p in storage.glob("*/*") if p.is_dir()]
    assert len(trial_dirs) == 1
    journal_path = journal_file(default_journal_dir(trial_dirs[0]), JOURNAL_COMPONENT)
    journaled = [
        r
        for r in PrivacyJournal(journal_path, component=JOURNAL_COMPONENT).records()
        if r["kind"] == "release"
    ]
    # Killed well before the end, so that the resumed run has iterations left to do.
    assert 5 * 4 <= len(journaled) < 5 * (LAST_ITERATION - 2)
    # Every release the first run reported (the rows Tune flushed) is in the journal.
    reported = read_rows(storage)
    assert len(journaled) >= (reported[-1]["privacy"]["releases"] if reported else 0)
    resumed = subprocess.run(
        [*command, "--resume"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        start_new_session=True,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = read_rows(storage)[-1]
    assert after["training_iteration"] == LAST_ITERATION
    # Never reset: every release made before the kill is still counted, the ones after the
    # last checkpoint included (replayed from the journal, their updates dropped).
    journaled_after = [
        r
        for r in PrivacyJournal(journal_path, component=JOURNAL_COMPONENT).records()
        if r["kind"] == "release"
    ]
    assert after["privacy"]["releases"] == len(journaled_after) >= len(journaled) + 10
    assert after["privacy"]["releases"] == after["ldp"]["submissions"]
    replayed = after["privacy"]["releases_replayed_from_journal"]
    assert replayed >= 1
    # Exact accounting: 5 per iteration of the model's history, plus the replayed ones.
    assert after["privacy"]["releases"] == 5 * after["training_iteration"] + replayed
    assert after["ldp"]["submissions_dropped"] == replayed
    assert after["ldp"]["updates"] == after["ldp"]["applied_submissions"] // 3
    # Each agent is fresh and spends ε = 1 once: the per-agent budget is never exceeded.
    assert math.isclose(after["privacy"]["epsilon_spent"], 1.0)


def _journal_config(journal_dir: pathlib.Path) -> LDPA3CConfig:
    return (
        LDPA3CConfig()
        .env_runners(num_env_runners=0)
        .training(
            mechanism="laplace",
            epsilon=1.0,
            max_buffer=4,
            submissions_per_iteration=6,
            privacy_journal_dir=str(journal_dir),
        )
        .debugging(seed=0)
    )


def _totals(algo: LDPA3C) -> tuple[Any, ...]:
    return (
        algo._ledger.state_dict(),
        algo._scores.submissions,
        algo._applied,
        algo._replayed,
    )


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
class TestLDPA3CJournal(JournaledComponentContract):
    """The journaled-component contract for LDPA3C's aggregator.

    One iteration: 6 submissions, 12 releases (each a gradient and a private score).
    """

    component = JOURNAL_COMPONENT
    # Every local agent is fresh: the budget is per agent, and no run-level one runs out.
    has_budget = False

    def build(self, folder: pathlib.Path, *, budget_spends: int | None) -> LDPA3C:
        return _journal_config(folder).build_algo()

    def spend(self, component: LDPA3C, seed: int) -> int:
        before = component._ledger.releases
        component.train()
        return component._ledger.releases - before

    def checkpoint(self, component: LDPA3C, where: pathlib.Path) -> str:
        component.save_to_path(str(where))
        return str(where)

    def restore(self, component: LDPA3C, checkpoint: str) -> None:
        component.restore_from_path(checkpoint)

    def releases(self, component: LDPA3C) -> int:
        return component._ledger.releases

    def replayed(self, component: LDPA3C) -> int:
        return component._replayed

    def privacy(self, component: LDPA3C) -> dict[str, float]:
        ledger = component._ledger
        return {
            "releases": ledger.releases,
            "epsilon_per_agent": ledger.max_epsilon_spent,
            "agents": ledger.num_agents,
            "submissions": component._scores.submissions,
        }

    def exhausted(self, component: LDPA3C) -> bool:
        return False

    def close(self, component: LDPA3C) -> None:
        component.stop()

    def test_replayed_releases_are_counted_never_applied(self, tmp_path: pathlib.Path) -> None:
        checkpoint = tmp_path / "ckpt"
        algo = self.make(tmp_path)
        algo.train()
        algo.save_to_path(str(checkpoint))
        algo.train()  # 6 submissions (12 releases) after the checkpoint, then "the crash"
        ledger_at_crash = algo._ledger.state_dict()
        # Same journal, no checkpoint (a trial restarted from scratch): everything is replayed,
        # gradient and score releases alike; each submission is scored once.
        again = self.make(tmp_path)
        assert _totals(again) == (ledger_at_crash, 12, 0, 24)
        assert again._ledger.releases_by_mechanism == {"laplace": 12, "one_bit": 12}
        # Restoring the checkpoint replays only the 12 releases made after it; their updates
        # rolled back with θ.
        again.restore_from_path(str(checkpoint))
        assert _totals(again) == (ledger_at_crash, 12, 6, 12)
        assert again._weights_version == 6 // 4 and len(again._buffer) == 6 % 4
        result = again.train()
        assert result["privacy"]["releases"] == 36
        assert result["ldp"]["submissions_dropped"] == 6
        assert result["privacy"]["releases_replayed_from_journal"] == 12
        assert result["epsilon_per_agent"] == pytest.approx(1.0)
        # This folder's journal alone reproduces the totals (the updates are not in it).
        replayed = self.make(tmp_path)
        ledger, submissions, applied, count = _totals(replayed)
        assert (ledger, submissions) == _totals(again)[:2]
        assert count == 36 and applied == 0
