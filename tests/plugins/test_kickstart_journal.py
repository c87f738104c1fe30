"""The kickstart teacher's write-ahead privacy journal: replay, restore, budget across crashes.

The restart and restore scenarios every journaled component shares run through
``JournaledComponentContract``; the rest is the teacher's own. Unit tests use an in-process
``DirichletTeacher``; the ``ray`` test kills a real
``rllib train -f`` run mid-way (SIGKILL) and resumes it with ``--resume``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
import torch
from journaled_component_contract import JournaledComponentContract
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
    PrivacyJournal,
)
from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.teachers import JOURNAL_COMPONENT, DirichletTeacher, TeacherSettings
from rllib_privacy.utils.journaling import algorithm_journal_path

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
    assert [r["kind"] for r in records] == ["header", "update", "release"]
    event = records[-1]["event"]
    assert event["type"] == "DirichletAnswer" and records[-1]["k"] == 50.0
    assert event["count"] == BATCH and event["k"] == 50.0
    # The mechanism RDP needs is journaled with the release.
    assert event["eta"] == 0.1 and event["num_actions"] == 2
    assert event["radius"] == teacher.radius
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
    # Rewrite the journal as 0.1.0 wrote it before RDP: a "schedule" record per k change,
    # and release records with k, Theorem 1's (ε, δ) and count only.
    lines = journal.read_text().splitlines()
    old_lines = []
    for line in lines:
        record = json.loads(line)
        if record.get("kind") == "update":
            record = {**record, **record.pop("fields"), "kind": "schedule"}
        elif record.get("kind") == "release":
            k, count = record["k"], record.pop("event")["count"]
            epsilon, delta = teacher.release_privacy(k)
            record.update(k=k, epsilon=epsilon, delta=delta, count=count)
        old_lines.append(json.dumps(record))
    old_journal = tmp_path / "old" / "kickstart_teacher.jsonl"
    old_journal.parent.mkdir()
    old_journal.write_text("\n".join(old_lines) + "\n")
    restarted = _teacher(old_journal, composition=composition, delta_budget=delta_budget)
    assert restarted.stats()["replayed_releases"] == 2 * BATCH
    assert _privacy_stats(restarted) == _privacy_stats(teacher)


class TestTeacherJournal(JournaledComponentContract):
    """The journaled-component contract for the kickstart teacher (RDP composition)."""

    component = JOURNAL_COMPONENT
    composition: ClassVar[dict[str, Any]] = {"composition": "rdp"}

    def build(self, folder: Path, *, budget_spends: int | None) -> DirichletTeacher:
        overrides = dict(self.composition)
        if budget_spends is not None:
            # Basic composition of Theorem 1's pairs at a fixed k: the budget is n·ε.
            epsilon, _ = DirichletTeacher(_module(), _settings(**BASIC)).release_privacy(50.0)
            budget = (budget_spends + 0.5) * BATCH * epsilon
            overrides = {**BASIC, "vanishing_coefficient": 1.0, "epsilon_budget": budget}
        return _teacher(self.journal(folder), **overrides)

    def spend(self, component: DirichletTeacher, seed: int) -> int:
        component.start_rollout(expected_states=BATCH)
        return BATCH if component.answer(_obs(BATCH, seed=seed)).answered else 0

    def checkpoint(self, component: DirichletTeacher, where: Path) -> dict[str, Any]:
        return json.loads(json.dumps(component.get_state()))

    def restore(self, component: DirichletTeacher, checkpoint: dict[str, Any]) -> None:
        component.set_state(checkpoint)

    def releases(self, component: DirichletTeacher) -> int:
        return int(component.stats()["releases"])

    def replayed(self, component: DirichletTeacher) -> int:
        return int(component.stats()["replayed_releases"])

    def privacy(self, component: DirichletTeacher) -> dict[str, float]:
        return _privacy_stats(component)

    def exhausted(self, component: DirichletTeacher) -> bool:
        return component.stats()["sharing"] == 0.0


class TestTeacherJournalAdvanced(TestTeacherJournal):
    """The same contract under advanced composition of Theorem 1's pairs."""

    composition: ClassVar[dict[str, Any]] = {"composition": "advanced", "delta_budget": 1.0}


@pytest.mark.parametrize(
    "composition", [{"composition": "advanced", "delta_budget": 1.0}, {"composition": "rdp"}]
)
def test_restart_continues_the_k_schedule(tmp_path: Path, composition: dict[str, Any]) -> None:
    journal = tmp_path / "journal" / "kickstart_teacher.jsonl"
    teacher = _teacher(journal, **composition)
    for _ in range(3):
        _rollout(teacher)
    restarted = _teacher(journal, **composition)
    assert restarted.stats()["k"] == 12.5  # k₀·c² after three rollouts: the schedule continues
    # The next rollout decays k once more, exactly as the uninterrupted teacher would.
    _rollout(teacher)
    _rollout(restarted)
    assert _privacy_stats(restarted) == _privacy_stats(teacher)


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
                # The trial's own journal is under test.
                "teacher_budget_scope": "trial",
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
    return sum(r["event"]["count"] for r in records if r["kind"] == "release")


def _journaled_epsilon(records: list[dict[str, Any]]) -> float:
    """Basic composition of the journaled answers' (ε, δ) releases: Σ count·ε."""
    events = [r["event"] for r in records if r["kind"] == "release"]
    return math.fsum(event["count"] * event["epsilon"] for event in events)


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
    epsilon_at_kill = _journaled_epsilon(cycle.journal_at_kill)
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
    assert _journaled_epsilon(records) <= budget


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
