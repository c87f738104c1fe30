"""The kickstart teacher's write-ahead privacy journal: replay, restore, budget across crashes.

Unit tests use an in-process ``DirichletTeacher``; the ``ray`` test kills a real
``rllib train -f`` run mid-way (SIGKILL) and resumes it with ``--resume``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from kill_resume_helpers import (
    build_in_folder,
    journal_records,
    kill_past_checkpoint_then_resume,
    restore_in_another_folder,
)
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from rllib_privacy.accounting import DEFAULT_ORDERS, dirichlet_rdp, rdp_to_epsilon
from rllib_privacy.accounting.journal import (
    ACCEPT_JOURNAL_LOSS_ENV,
    JournalNotFoundError,
    PrivacyJournal,
)
from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.teachers import JOURNAL_COMPONENT, DirichletTeacher, TeacherSettings
from rllib_privacy.teachers.journaling import algorithm_journal_path

ENV = gym.make("CartPole-v1")
BATCH = 50
#: Monte Carlo samples of δ (the default 100,000 costs seconds per k on a busy machine).
DELTA_SAMPLES = 1000
#: Iterations of the CLI run (killed after 4-5 or 7-8 of them, then resumed to the end).
ITERATIONS = 13
#: Checkpoint frequency of the CLI run.
EVERY = 3


def _module(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    spec = PPOConfig().get_default_rl_module_spec()
    spec.observation_space, spec.action_space = ENV.observation_space, ENV.action_space
    spec.model_config = DefaultModelConfig(fcnet_hiddens=[8])
    return spec.build()


#: Basic composition of Theorem 1's per-release (ε, δ), with no δ limit: for tests whose
#: budget arithmetic is n·ε.
BASIC = {"composition": "basic", "delta_budget": 1.0}


def _settings(**overrides: Any) -> TeacherSettings:
    values = {"k": 50.0, "eta": 0.1, "tau": 1e-3, "vanishing_coefficient": 0.5, "seed": 0}
    values["delta_samples"] = DELTA_SAMPLES
    # No ε limit unless a test sets one: the default budget (10) would refuse these batches.
    values["epsilon_budget"] = math.inf
    values.update(overrides)
    return TeacherSettings(**values)


def _obs(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.1, 0.1, (n, 4)).astype(np.float32)


def _teacher(journal: Path, **overrides: Any) -> DirichletTeacher:
    return DirichletTeacher(_module(), _settings(**overrides), journal_path=str(journal))


def _rollout(teacher: DirichletTeacher, n: int = BATCH) -> None:
    teacher.start_rollout(expected_states=n)
    teacher.answer(_obs(n, seed=teacher.stats()["rollouts"]))


PRIVACY_STATS = ("epsilon_spent", "delta_spent", "releases", "k", "rollouts", "sharing")


def _privacy_stats(teacher: DirichletTeacher) -> dict[str, float]:
    stats = teacher.stats()
    return {key: stats[key] for key in PRIVACY_STATS}


def test_release_is_journaled_before_the_answer_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = tmp_path / "kickstart_teacher.jsonl"
    teacher = _teacher(journal)
    teacher.start_rollout(expected_states=BATCH)

    def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("killed while privatizing")

    # A crash after the journal write but before the answer is returned: the restarted
    # teacher counts the release (over-counting is allowed, under-counting never).
    monkeypatch.setattr("rllib_privacy.mechanisms.dirichlet.dirichlet_mechanism", crash)
    # Also where the teacher module holds it, if it imports it at module level.
    monkeypatch.setattr(
        "rllib_privacy.teachers.dirichlet_teacher.dirichlet_mechanism", crash, raising=False
    )
    with pytest.raises(RuntimeError, match="killed"):
        teacher.answer(_obs(BATCH))
    assert teacher.stats()["releases"] == 0
    records = PrivacyJournal(journal, component=JOURNAL_COMPONENT).records()
    assert [r["kind"] for r in records] == ["header", "schedule", "release"]
    assert records[-1]["count"] == BATCH and records[-1]["k"] == 50.0
    # The mechanism RDP needs is journaled with the release (and Theorem 1's (ε, δ)).
    assert records[-1]["eta"] == 0.1 and records[-1]["num_actions"] == 2
    assert records[-1]["radius"] == teacher.radius and records[-1]["epsilon"] > 0
    restarted = _teacher(journal)
    assert restarted.stats()["releases"] == BATCH
    one = dirichlet_rdp(DEFAULT_ORDERS, k=50.0, eta=0.1, radius=teacher.radius, num_actions=2)
    assert restarted.stats()["epsilon_spent"] == pytest.approx(
        rdp_to_epsilon(DEFAULT_ORDERS, BATCH * one, 1e-5), rel=1e-12
    )


@pytest.mark.parametrize("composition", ["rdp", "basic"])
def test_journals_written_before_rdp_still_replay(tmp_path: Path, composition: str) -> None:
    journal = tmp_path / "kickstart_teacher.jsonl"
    delta_budget = 1e-5 if composition == "rdp" else 1.0
    teacher = _teacher(journal, composition=composition, delta_budget=delta_budget)
    _rollout(teacher)
    _rollout(teacher)
    # Rewrite the release records as before RDP: k, epsilon, delta and count only.
    lines = journal.read_text().splitlines()
    old_lines = []
    for line in lines:
        record = json.loads(line)
        if record.get("kind") == "release":
            for key in ("eta", "radius", "num_actions"):
                del record[key]
        old_lines.append(json.dumps(record))
    old_journal = tmp_path / "old" / "kickstart_teacher.jsonl"
    old_journal.parent.mkdir()
    old_journal.write_text("\n".join(old_lines) + "\n")
    restarted = _teacher(old_journal, composition=composition, delta_budget=delta_budget)
    assert restarted.stats()["replayed_releases"] == 2 * BATCH
    assert _privacy_stats(restarted) == _privacy_stats(teacher)


@pytest.mark.parametrize(
    "composition", [{"composition": "advanced", "delta_budget": 1.0}, {"composition": "rdp"}]
)
def test_restart_without_checkpoint_replays_everything(
    tmp_path: Path, composition: dict[str, Any]
) -> None:
    journal = tmp_path / "journal" / "kickstart_teacher.jsonl"
    teacher = _teacher(journal, **composition)
    for _ in range(3):
        _rollout(teacher)
    restarted = _teacher(journal, **composition)
    assert _privacy_stats(restarted) == _privacy_stats(teacher)
    assert restarted.stats()["k"] == 12.5  # k₀·c² after three rollouts: the schedule continues
    assert restarted.stats()["replayed_releases"] == 3 * BATCH
    # The next rollout decays k once more, exactly as the uninterrupted teacher would.
    _rollout(teacher)
    _rollout(restarted)
    assert _privacy_stats(restarted) == _privacy_stats(teacher)


def test_restore_replays_the_releases_after_the_checkpoint(tmp_path: Path) -> None:
    journal = tmp_path / "kickstart_teacher.jsonl"
    teacher = _teacher(journal)
    _rollout(teacher)
    checkpoint = json.loads(json.dumps(teacher.get_state()))
    _rollout(teacher)
    _rollout(teacher)  # two rollouts after the checkpoint, then the process dies
    restarted = _teacher(journal)  # what Algorithm.setup does on a resumed trial
    restarted.set_state(checkpoint)  # then Tune restores the checkpoint
    assert _privacy_stats(restarted) == _privacy_stats(teacher)
    assert restarted.stats()["replayed_releases"] == 2 * BATCH
    # A later checkpoint carries the count; restoring it replays nothing more.
    again = _teacher(journal)
    again.set_state(restarted.get_state())
    assert again.stats()["replayed_releases"] == 2 * BATCH
    assert _privacy_stats(again) == _privacy_stats(teacher)


def test_checkpoint_restored_into_a_new_journal_is_snapshotted(tmp_path: Path) -> None:
    old = _teacher(tmp_path / "old.jsonl")
    _rollout(old)
    _rollout(old)
    fresh_journal = tmp_path / "new" / "kickstart_teacher.jsonl"
    moved = _teacher(fresh_journal)  # e.g. Algorithm.from_checkpoint in another folder
    moved.set_state(old.get_state())
    assert moved.stats()["replayed_releases"] == 0
    records = PrivacyJournal(fresh_journal, component=JOURNAL_COMPONENT).records()
    kinds = [r["kind"] for r in records]
    assert kinds == ["header", "snapshot"]
    _rollout(moved)
    _rollout(old)
    # The new journal alone reproduces the totals, snapshot included.
    assert _privacy_stats(_teacher(fresh_journal)) == _privacy_stats(old) == _privacy_stats(moved)


def _answered_70_checkpointed_at_40(
    tmp_path: Path,
) -> tuple[DirichletTeacher, dict[str, Any], DirichletTeacher, Path]:
    """The reported run, and its checkpoint restored by a teacher in a new folder."""
    old = _teacher(tmp_path / "run_1" / "kickstart_teacher.jsonl")
    old.start_rollout(expected_states=100)
    old.answer(_obs(40))
    checkpoint = json.loads(json.dumps(old.get_state()))
    old.answer(_obs(30, seed=2))
    new_journal = tmp_path / "run_2" / "kickstart_teacher.jsonl"
    moved = _teacher(new_journal)
    moved.set_state(checkpoint)
    return old, checkpoint, moved, new_journal


def test_restore_into_a_new_folder_counts_the_releases_after_the_checkpoint(
    tmp_path: Path,
) -> None:
    # The reported case: the teacher answered 70 states, the checkpoint was taken at 40; restored
    # into a new folder it reported 40. The checkpoint's journal is found by its ledger id.
    old, checkpoint, moved, new_journal = _answered_70_checkpointed_at_40(tmp_path)
    assert moved.stats()["releases"] == old.stats()["releases"] == 70
    assert moved.stats()["replayed_releases"] == 30
    assert _privacy_stats(moved) == _privacy_stats(old)
    # The new folder's journal alone reproduces the total (its snapshot names the source).
    records = PrivacyJournal(new_journal, component=JOURNAL_COMPONENT).records()
    assert records[-1]["restored_from"]["ledger_id"] == checkpoint["journal"]["ledger_id"]
    assert _teacher(new_journal).stats()["releases"] == 70


def test_restoring_the_same_checkpoint_again_keeps_the_new_folders_releases(
    tmp_path: Path,
) -> None:
    # A trial restored from another run's checkpoint restarts (before its own first
    # checkpoint) and restores that checkpoint again: its releases since then still count.
    old, checkpoint, moved, new_journal = _answered_70_checkpointed_at_40(tmp_path)
    moved.answer(_obs(10, seed=3))
    assert moved.stats()["releases"] == 80
    restarted = _teacher(new_journal)
    restarted.set_state(checkpoint)
    assert restarted.stats()["releases"] == 80
    old.answer(_obs(5, seed=4))  # the first run went on meanwhile
    again = _teacher(new_journal)
    again.set_state(checkpoint)
    assert again.stats()["releases"] == 85
    assert _teacher(new_journal).stats()["releases"] == 85


def test_restore_finds_a_journal_copied_beside_the_new_one(tmp_path: Path) -> None:
    # A run folder moved to another machine: the marker's path is stale, the copy is found.
    old_journal = tmp_path / "run_1" / "kickstart_teacher.jsonl"
    old = _teacher(old_journal)
    _rollout(old)
    checkpoint = old.get_state()
    _rollout(old)
    moved = _teacher(tmp_path / "run_2" / "kickstart_teacher.jsonl")
    ledger_id = checkpoint["journal"]["ledger_id"]
    old_journal.rename(tmp_path / "run_2" / f"kickstart_teacher.{ledger_id}.jsonl")
    moved.set_state(checkpoint)
    assert moved.stats()["releases"] == 2 * BATCH


def test_restore_without_the_checkpoints_journal_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    old_journal = tmp_path / "run_1" / "kickstart_teacher.jsonl"
    old = _teacher(old_journal)
    _rollout(old)
    checkpoint = old.get_state()
    ledger_id = checkpoint["journal"]["ledger_id"]
    old_journal.unlink()
    monkeypatch.delenv(ACCEPT_JOURNAL_LOSS_ENV, raising=False)
    moved = _teacher(tmp_path / "run_2" / "kickstart_teacher.jsonl")
    with pytest.raises(JournalNotFoundError, match=ledger_id) as error:
        moved.set_state(checkpoint)
    assert str(old_journal) in str(error.value) and ACCEPT_JOURNAL_LOSS_ENV in str(error.value)
    # The explicit opt-out restores the checkpoint's own total, loudly.
    monkeypatch.setenv(ACCEPT_JOURNAL_LOSS_ENV, ledger_id)
    moved.set_state(checkpoint)
    assert moved.stats()["releases"] == BATCH
    assert "WITHOUT its privacy journal" in caplog.text


def test_budget_refusal_holds_across_any_number_of_restarts(tmp_path: Path) -> None:
    journal = tmp_path / "kickstart_teacher.jsonl"
    probe = DirichletTeacher(_module(), _settings(**BASIC))
    epsilon, _ = probe.release_privacy(50.0)
    budget = 2.5 * BATCH * epsilon  # two rollouts fit, the third does not
    settings = {"vanishing_coefficient": 1.0, "epsilon_budget": budget, **BASIC}
    answered = 0
    for restart in range(4):
        teacher = _teacher(journal, **settings)  # killed and restarted from scratch each time
        teacher.start_rollout(expected_states=BATCH)
        answered += teacher.answer(_obs(BATCH, seed=restart)).answered
        assert teacher.stats()["epsilon_spent"] <= budget
    assert answered == 2
    final = _teacher(journal, **settings)
    assert final.stats()["sharing"] == 0.0 and final.stats()["releases"] == 2 * BATCH
    assert not final.answer(_obs(3)).answered


def test_mechanism_none_writes_no_journal(tmp_path: Path) -> None:
    journal = tmp_path / "kickstart_teacher.jsonl"
    teacher = _teacher(journal, mechanism="none")
    _rollout(teacher)
    assert not journal.exists() and "journal" in teacher.get_state()


@pytest.mark.parametrize("value", [False, "off", "", "  ", 3, ["a"], "relative/journal"])
def test_privacy_journal_dir_cannot_be_switched_off(value: Any) -> None:
    config = KickstartPPOConfig()
    config.update_from_dict({"privacy_journal_dir": value})
    with pytest.raises(PrivacyConfigError, match="privacy_journal_dir"):
        config.validate_kickstart_settings()


def test_journal_goes_to_the_trial_folder_that_resume_reuses(tmp_path: Path) -> None:
    import pyarrow.fs

    storage = SimpleNamespace(
        storage_filesystem=pyarrow.fs.LocalFileSystem(),
        trial_fs_path=str(tmp_path / "exp" / "trial_0"),
        trial_dir_name="trial_0",
    )
    # Under Tune: the trial folder in the storage path, never the per-session logdir.
    tuned = SimpleNamespace(_storage=storage, logdir="/tmp/ray/session_x/working_dirs/trial_0")
    assert algorithm_journal_path(tuned, None, component="c") == (
        tmp_path / "exp" / "trial_0" / "privacy_journal" / "c.jsonl"
    )
    # A configured folder gets one journal per trial (trials share their config).
    assert algorithm_journal_path(tuned, str(tmp_path / "j"), component="c") == (
        tmp_path / "j" / "trial_0" / "c.jsonl"
    )
    plain = SimpleNamespace(logdir=str(tmp_path / "logdir"))  # Algorithm built by hand
    assert algorithm_journal_path(plain, None, component="c") == (
        tmp_path / "logdir" / "privacy_journal" / "c.jsonl"
    )
    with pytest.raises(PrivacyConfigError, match="privacy_journal_dir"):
        algorithm_journal_path(plain, "off", component="c")


# ---- resume after SIGKILL through the CLI ------------------------------------------------


def _experiment(teacher: Path, budget: float) -> dict[str, Any]:
    return {
        "kickstart-journal": {
            "run": "KickstartPPO",
            "env": "CartPole-v1",
            "stop": {"training_iteration": ITERATIONS},
            "checkpoint_config": {"checkpoint_frequency": EVERY, "num_to_keep": None},
            "config": {
                "teacher_checkpoint": str(teacher),
                "teacher_k": 50.0,
                "teacher_eta": 0.1,
                "teacher_tau": 0.001,
                "teacher_vanishing_coefficient": 1.0,
                "teacher_epsilon_budget": budget,
                # The test's budget arithmetic is n·ε (Theorem 1 per release).
                "teacher_composition": "basic",
                "teacher_delta_budget": 1.0,
                "teacher_delta_samples": DELTA_SAMPLES,
                "train_batch_size_per_learner": BATCH,
                "minibatch_size": BATCH,
                "num_epochs": 1,
                "num_env_runners": 0,
                "model_config": {"fcnet_hiddens": [8]},
            },
        }
    }


def _released(records: list[dict[str, Any]]) -> int:
    return sum(r["count"] for r in records if r["kind"] == "release")


@pytest.mark.ray
@pytest.mark.slow
def test_killed_run_resumes_with_its_spent_budget(tmp_path: Path) -> None:
    teacher_dir = tmp_path / "teacher_module"
    _module().save_to_path(str(teacher_dir))
    epsilon, _ = DirichletTeacher(_module(), _settings(**BASIC)).release_privacy(50.0)
    rollouts = 9  # the budget lasts 9 rollouts of BATCH states, across the kill
    budget = (rollouts + 0.5) * BATCH * epsilon
    cycle = kill_past_checkpoint_then_resume(
        _experiment(teacher_dir, budget),
        tmp_path,
        component=JOURNAL_COMPONENT,
        spent=_released,
        per_iteration=BATCH,
    )
    spent_at_kill, rows, first = cycle.spent_at_kill, cycle.rows, cycle.rows[0]
    assert EVERY * BATCH < spent_at_kill < rollouts * BATCH
    # Nothing resets: the resumed run starts from every release journaled before the kill,
    # including those after the checkpoint, whose effect on the model was lost (replayed).
    assert first["privacy"]["releases"] == spent_at_kill + BATCH
    epsilon_at_kill = math.fsum(
        r["count"] * r["epsilon"] for r in cycle.journal_at_kill if r["kind"] == "release"
    )
    assert first["teacher_epsilon_spent"] >= epsilon_at_kill
    replayed = first["privacy"]["releases_replayed_from_journal"]
    assert replayed == spent_at_kill - cycle.restored_iteration * BATCH
    assert first["teacher_k"] == 50.0 and first["teacher_sharing"] == 1.0
    for row in rows:
        assert row["teacher_epsilon_spent"] <= budget
    assert rows[-1]["teacher_sharing"] == 0.0
    assert rows[-1]["privacy"]["releases"] == rollouts * BATCH
    assert rows[-1]["teacher_epsilon_spent"] == pytest.approx(rollouts * BATCH * epsilon)
    # The journal is the ground truth: the teacher answered no more than the budget allows.
    records = journal_records(tmp_path / "results", JOURNAL_COMPONENT)
    assert _released(records) == rollouts * BATCH
    assert math.fsum(r["count"] * r["epsilon"] for r in records if r["kind"] == "release") <= budget


# ---- KickstartPPO restored into another folder ---------------------------------------------


@pytest.mark.ray
@pytest.mark.slow
def test_algorithm_restored_into_a_new_folder_keeps_every_release(
    ray_session, tmp_path: Path
) -> None:
    teacher_dir = tmp_path / "teacher_module"
    _module().save_to_path(str(teacher_dir))
    settings = _experiment(teacher_dir, 1.0e6)["kickstart-journal"]["config"]
    _, before, after = restore_in_another_folder(
        lambda folder: build_in_folder(KickstartPPOConfig, "CartPole-v1", settings, folder),
        tmp_path,
    )
    made, privacy = before["privacy"]["releases"], after["privacy"]
    assert made == 2 * BATCH
    # Algorithm.from_checkpoint elsewhere: the journal is found by the ledger id.
    assert privacy["releases"] == made + BATCH
    assert privacy["releases_replayed_from_journal"] == BATCH
