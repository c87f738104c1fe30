"""The PATE labeler's write-ahead privacy journal: replay, restore, budget across crashes.

The restart and restore scenarios every journaled component shares run through
``JournaledComponentContract``; the rest is the labeler's own.

Unit tests use an in-process ``PATELabeler``; the ``ray`` test kills a real
``rllib train -f`` run mid-way (SIGKILL) and resumes it with ``--resume``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from journaled_component_contract import JournaledComponentContract
from kill_resume_helpers import (
    build_in_folder,
    journal_records,
    kill_past_checkpoint_then_resume,
    restore_in_another_folder,
)
from test_pate_ppo_units import ENV, save_teacher

from rllib_privacy.accounting import PATELedger, event_from_dict
from rllib_privacy.accounting.journal import (
    JournalNotFoundError,
    PrivacyJournal,
)
from rllib_privacy.algorithms.pate_ppo import PATEPPOConfig
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.pate.labeler import JOURNAL_COMPONENT, UNLABELED, PATELabeler

GAMMA, DELTA = 0.05, 1e-5
#: Queries per EnvRunner sample in the CLI run (one sample per iteration).
QUERIES = 20


@pytest.fixture(scope="module")
def teachers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("teachers")
    return [str(save_teacher(root / f"t{i}", seed=i)) for i in range(3)]


def _labeler(teachers: list[str], journal: Path, **ledger: Any) -> PATELabeler:
    return PATELabeler(
        teachers,
        observation_space=ENV.observation_space,
        action_space=ENV.action_space,
        ledger=PATELedger(gamma=GAMMA, delta=DELTA, **ledger),
        seed=0,
        journal_path=str(journal),
    )


def _obs(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.2, 0.2, (n, 4)).astype(np.float32)


PRIVACY_METRICS = ("queries", "epsilon", "epsilon_data_independent", "budget_exhausted")


def _privacy(labeler: PATELabeler) -> dict[str, float]:
    metrics = labeler.metrics()
    return {key: metrics[key] for key in PRIVACY_METRICS}


def _budget_for(queries: int) -> float:
    """The data-independent ε of exactly ``queries`` queries (one more does not fit)."""
    ledger = PATELedger(gamma=GAMMA, delta=DELTA)
    ledger.replay([ledger.queries(np.tile([3, 0], (queries, 1)))])
    budget = ledger.epsilon_data_independent
    ledger.replay([ledger.queries([3, 0])])
    assert ledger.epsilon_data_independent > budget * (1 + 1e-6)
    return budget


def test_votes_are_journaled_before_labels_leave(
    teachers: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = tmp_path / "pate_labeler.jsonl"
    labeler = _labeler(teachers, journal)

    def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("killed while labeling")

    monkeypatch.setattr("rllib_privacy.pate.labeler.noisy_max", crash)
    with pytest.raises(RuntimeError, match="killed"):
        labeler.label(_obs(7, seed=0))
    records = PrivacyJournal(journal, component=JOURNAL_COMPONENT).records()
    assert [r["kind"] for r in records] == ["header", "release"]
    votes = np.asarray(records[-1]["event"]["votes"])
    assert votes.shape == (7, 2) and (votes.sum(axis=1) == len(teachers)).all()
    # The restarted labeler counts the 7 queries although no label left (over-count only).
    assert _labeler(teachers, journal).metrics()["queries"] == 7


def test_journal_of_another_gamma_is_refused(teachers: list[str], tmp_path: Path) -> None:
    journal = tmp_path / "pate_labeler.jsonl"
    _labeler(teachers, journal).label(_obs(5, seed=0))
    labeler = PATELabeler(
        teachers,
        observation_space=ENV.observation_space,
        action_space=ENV.action_space,
        ledger=PATELedger(gamma=2 * GAMMA, delta=DELTA),
        journal_path=str(journal),
    )
    with pytest.raises(PrivacyConfigError, match="gamma=0.05, but this ledger .*gamma=0.1"):
        labeler.ping()


class TestLabelerJournal(JournaledComponentContract):
    """The journaled-component contract for the PATE labeler (LNMax)."""

    component = JOURNAL_COMPONENT

    @pytest.fixture(autouse=True)
    def _teacher_dirs(self, teachers: list[str]) -> None:
        self.teacher_dirs = teachers

    def build(self, folder: Path, *, budget_spends: int | None) -> PATELabeler:
        ledger = (
            {} if budget_spends is None else {"epsilon_budget": _budget_for(10 * budget_spends)}
        )
        return _labeler(self.teacher_dirs, self.journal(folder), **ledger)

    def spend(self, component: PATELabeler, seed: int) -> int:
        labels, _ = component.label(_obs(10, seed))
        return int(np.sum(labels != UNLABELED))

    def checkpoint(self, component: PATELabeler, where: Path) -> list[Any]:
        return json.loads(json.dumps(component.checkpoint()))

    def restore(self, component: PATELabeler, checkpoint: list[Any]) -> None:
        state, marker = checkpoint
        component.load_state_dict(state, journal_marker=marker)

    def releases(self, component: PATELabeler) -> int:
        return int(component.metrics()["queries"])

    def replayed(self, component: PATELabeler) -> int:
        return int(component.metrics()["replayed_queries"])

    def privacy(self, component: PATELabeler) -> dict[str, float]:
        # The data-dependent ε too: the same votes in the same order give the same bits.
        return _privacy(component)

    def exhausted(self, component: PATELabeler) -> bool:
        return component.metrics()["budget_exhausted"] == 1.0


@pytest.mark.parametrize("value", [False, "off", "", 0, {"path": "x"}])
def test_privacy_journal_dir_cannot_be_switched_off(value: Any) -> None:
    config = PATEPPOConfig()
    config.update_from_dict({"teacher_checkpoints": "teachers", "privacy_journal_dir": value})
    with pytest.raises(PrivacyConfigError, match="privacy_journal_dir"):
        config.validate_pate_settings()


# ---- resume after SIGKILL through the CLI ------------------------------------------------

ITERATIONS = 12
EVERY = 3
#: The budget lasts this many iterations' queries, across the kill.
BUDGET_ITERATIONS = 8


def _experiment(teachers: list[str], budget: float) -> dict[str, Any]:
    return {
        "pate-journal": {
            "run": "PATEPPO",
            "env": "rllib_privacy/CartPoleGravity-v0",
            "stop": {"training_iteration": ITERATIONS},
            "checkpoint_config": {"checkpoint_frequency": EVERY, "num_to_keep": None},
            "config": {
                "teacher_checkpoints": teachers,
                "pate_gamma": GAMMA,
                "pate_delta": DELTA,
                "pate_epsilon_budget": budget,
                # The trial's own journal is under test (the module's tests share teachers).
                "pate_budget_scope": "trial",
                "pate_query_selection": "all",
                "pate_queries_per_sample": QUERIES,
                "train_batch_size_per_learner": 50,
                "minibatch_size": 50,
                "num_epochs": 1,
                "num_env_runners": 0,
                "model_config": {"fcnet_hiddens": [8]},
            },
        }
    }


def _queried(records: list[dict[str, Any]]) -> int:
    return sum(r["event"]["count"] for r in records if r["kind"] == "release")


@pytest.mark.ray
@pytest.mark.slow
def test_killed_run_resumes_with_its_spent_budget(teachers: list[str], tmp_path: Path) -> None:
    budget = _budget_for(BUDGET_ITERATIONS * QUERIES)
    cycle = kill_past_checkpoint_then_resume(
        _experiment(teachers, budget),
        tmp_path,
        component=JOURNAL_COMPONENT,
        spent=_queried,
        per_iteration=QUERIES,
    )
    queried_at_kill, rows, first = cycle.spent_at_kill, cycle.rows, cycle.rows[0]
    assert EVERY * QUERIES < queried_at_kill < BUDGET_ITERATIONS * QUERIES
    # Nothing resets: the resumed run starts from every query journaled before the kill.
    assert first["pate_queries"] == queried_at_kill + QUERIES
    at_kill = PATELedger(gamma=GAMMA, delta=DELTA)
    for record in cycle.journal_at_kill:
        if record["kind"] == "release":
            at_kill.replay([event_from_dict(record["event"])])
    assert first["pate_epsilon"] >= at_kill.epsilon > 0
    assert first["pate_epsilon_data_independent"] > at_kill.epsilon_data_independent
    replayed = first["privacy"]["releases_replayed_from_journal"]
    assert replayed == queried_at_kill - cycle.restored_iteration * QUERIES
    for row in rows:
        assert row["pate_epsilon_data_independent"] <= budget
    assert rows[-1]["pate"]["budget_exhausted"] == 1.0
    assert rows[-1]["pate_queries"] == BUDGET_ITERATIONS * QUERIES
    # The journal is the ground truth: no more queries were answered than the budget allows.
    final = journal_records(tmp_path / "results", JOURNAL_COMPONENT)
    assert _queried(final) == BUDGET_ITERATIONS * QUERIES


# ---- PATEPPO restored into another folder --------------------------------------------------


@pytest.mark.ray
@pytest.mark.slow
def test_algorithm_restored_into_a_new_folder_keeps_every_query(
    ray_session, teachers: list[str], tmp_path: Path
) -> None:
    settings = _experiment(teachers, 1.0e6)["pate-journal"]["config"]
    env = "rllib_privacy/CartPoleGravity-v0"

    def build(folder: Path) -> Any:
        return build_in_folder(PATEPPOConfig, env, settings, folder)

    checkpoint, before, result = restore_in_another_folder(build, tmp_path)
    made = before["pate_queries"]  # two iterations, one after the checkpoint
    assert made == 2 * QUERIES
    assert result["pate_queries"] == result["privacy"]["releases"] == made + QUERIES
    assert result["privacy"]["releases_replayed_from_journal"] == QUERIES
    # Without the checkpoint's journal the restore stops, naming the ledger.
    for journal in (tmp_path / "run_1").rglob("*.jsonl"):
        journal.unlink()
    third = build(tmp_path / "run_3")
    try:
        with pytest.raises(JournalNotFoundError, match="pate_labeler: the checkpoint"):
            third.restore_from_path(checkpoint)
    finally:
        third.stop()


def test_gnmax_journal_replays_answered_flags_and_refuses_other_settings(
    teachers: list[str], tmp_path: Path
) -> None:
    journal = tmp_path / "pate_labeler.jsonl"
    settings = {"aggregator": "confident_gnmax", "sigma": 1.0, "sigma_threshold": 1.0}

    def confident(threshold: float) -> PATELabeler:
        return PATELabeler(
            teachers,
            observation_space=ENV.observation_space,
            action_space=ENV.action_space,
            ledger=PATELedger(delta=DELTA, threshold=threshold, **settings),
            seed=0,
            journal_path=str(journal),
        )

    # Threshold 2 of 3 teachers, noise 1: some queries pass, some do not.
    labeler = confident(2.0)
    for seed in range(3):
        labeler.label(_obs(10, seed))
    answered = labeler.metrics()["answered"]
    assert 0 < answered < 30
    restarted = confident(2.0)
    assert restarted.metrics()["answered"] == answered
    assert restarted.metrics()["epsilon"] == labeler.metrics()["epsilon"]
    other = confident(3.0)
    with pytest.raises(PrivacyConfigError, match="threshold=2.0, .* ledger .*threshold=3.0"):
        other.ping()
