"""Budgets that belong to the data: one owner ledger per teacher / PATE ensemble.

Every trial, sweep and run that queries the same private data owner spends one budget
(docs/privacy-journal.md#owner-ledgers); ``*_budget_scope: trial`` opts a simulation sweep out;
a trial that starts over without its journal never opens a fresh ledger silently.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import yaml
from kill_resume_helpers import (
    build_in_folder,
    journal_records,
    kill_when,
    resumed_rows,
    run_cli,
)
from test_pate_ppo_units import ENV, save_teacher

from rllib_privacy.accounting import PATELedger, TeacherLedger
from rllib_privacy.accounting.events import EpsilonDeltaRelease
from rllib_privacy.accounting.owner_ledger import (
    OWNER_DIR_NAME,
    OwnerLedger,
    owner_identity,
    owner_journal_path,
)
from rllib_privacy.algorithms.pate_ppo import PATEPPOConfig
from rllib_privacy.cli.common import EXIT_OK, EXIT_TRIAL_ERROR
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.pate.labeler import JOURNAL_COMPONENT as PATE_COMPONENT
from rllib_privacy.pate.labeler import PATELabeler
from rllib_privacy.teachers import JOURNAL_COMPONENT as TEACHER_COMPONENT
from rllib_privacy.teachers import DirichletTeacher, TeacherSettings
from rllib_privacy.utils.journaling import RestartWithoutJournalError, check_restart

GAMMA, DELTA = 0.5, 1e-5
#: PATE queries per training iteration (train batch 50, every state up to this many).
QUERIES = 12


@pytest.fixture(scope="module")
def teachers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("teachers")
    return [str(save_teacher(root / f"t{i}", seed=i)) for i in range(2)]


def _fresh_teachers(tmp_path: Path) -> list[str]:
    """Teachers of the test's own (their owner ledger lands beside them, in tmp_path)."""
    return [str(save_teacher(tmp_path / "teachers" / f"t{i}", seed=i)) for i in range(2)]


def _pate_budget_for(queries: int) -> float:
    """The data-independent ε of exactly ``queries`` LNMax queries (one more does not fit)."""
    ledger = PATELedger(gamma=GAMMA, delta=DELTA)
    ledger.replay([ledger.queries(np.tile([2, 0], (queries, 1)))])
    budget = ledger.epsilon_data_independent
    ledger.replay([ledger.queries([2, 0])])
    assert ledger.epsilon_data_independent > budget * (1 + 1e-6)
    return budget


def _owner_releases(folder: Path, component: str) -> list[dict[str, Any]]:
    (path,) = (folder / OWNER_DIR_NAME).glob(f"{component}-*.jsonl")
    lines = path.read_bytes().split(b"\n")[:-1]
    return [r for r in map(json.loads, lines) if r["kind"] == "release"]


def _count(records: list[dict[str, Any]]) -> int:
    return sum(r["event"]["count"] for r in records if r["kind"] == "release")


# ---- identity ----------------------------------------------------------------------------


def test_owner_identity_follows_the_checkpoint_contents(tmp_path: Path) -> None:
    first = save_teacher(tmp_path / "a", seed=0)
    copy = tmp_path / "copy"
    shutil.copytree(first, copy)
    other = save_teacher(tmp_path / "b", seed=1)
    identity = owner_identity([first])
    # The same weights anywhere are the same owner; other weights are another owner.
    assert owner_identity([copy]) == identity
    assert owner_identity([other]) != identity
    # The owner's own ledger folder (hidden) is not part of what it is.
    (first / OWNER_DIR_NAME).mkdir()
    (first / OWNER_DIR_NAME / "x.jsonl").write_text("{}\n")
    assert owner_identity([first]) == identity
    # Retraining (any byte of a weight file changes) makes a new owner with a fresh ledger.
    weights = max((p for p in first.rglob("*") if p.is_file() and "." not in p.parts[-2]),
                  key=lambda p: p.stat().st_size)  # fmt: skip
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert owner_identity([first]) != identity
    # A PATE ensemble's identity depends on its teachers, their order and its partition facts.
    assert owner_identity([copy, other]) != owner_identity([other, copy])
    assert owner_identity([copy, other], extra={"num_teachers": 2}) != owner_identity(
        [copy, other], extra={"num_teachers": 3}
    )
    path = owner_journal_path(copy, component="kickstart_teacher", identity=identity)
    assert path.parent == copy / OWNER_DIR_NAME and identity[:16] in path.name
    with pytest.raises(PrivacyConfigError, match="holds no file"):
        owner_identity([tmp_path / "missing"])


# ---- the ledger file ---------------------------------------------------------------------


def test_concurrent_spenders_never_exceed_the_owner_budget(tmp_path: Path) -> None:
    path = tmp_path / "owner.jsonl"
    release = EpsilonDeltaRelease(epsilon=1.0, delta=0.0, count=1)

    def spender(name: str, spent: list[int]) -> None:
        owner = OwnerLedger(
            path, component="c", identity="f" * 64, ledger=TeacherLedger(epsilon_budget=50.0)
        )
        for _ in range(40):
            with owner.spending() as ledger:
                if not ledger.can_afford(release):
                    return
                owner.append([release], trial=name)
            spent.append(1)

    counts: list[list[int]] = [[] for _ in range(4)]
    threads = [threading.Thread(target=spender, args=(f"t{i}", counts[i])) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 4 × 40 wanted, 50 affordable: every spender stopped at the one shared budget.
    assert sum(map(len, counts)) == 50
    reread = OwnerLedger(
        path, component="c", identity="f" * 64, ledger=TeacherLedger(epsilon_budget=50.0)
    )
    # ε is recomputed from the journal's typed events.
    assert reread.ledger.epsilon_spent == 50.0 and reread.ledger.releases == 50
    assert sum(reread.releases_by(f"t{i}") for i in range(4)) == 50
    with pytest.raises(PrivacyConfigError, match="epsilon_budget.*50.0.*60.0"):
        OwnerLedger(
            path, component="c", identity="f" * 64, ledger=TeacherLedger(epsilon_budget=60.0)
        )
    with pytest.raises(PrivacyConfigError, match="belongs to owner"):
        OwnerLedger(
            path, component="c", identity="e" * 64, ledger=TeacherLedger(epsilon_budget=50.0)
        )


def test_a_torn_last_append_is_cut_and_the_rest_counts(tmp_path: Path) -> None:
    path = tmp_path / "owner.jsonl"
    owner = OwnerLedger(
        path, component="c", identity="a" * 64, ledger=TeacherLedger(epsilon_budget=9.0)
    )
    with owner.spending():
        owner.append([EpsilonDeltaRelease(epsilon=2.0, delta=0.0, count=2)], trial="t")
    with open(path, "ab") as handle:
        handle.write(b'{"seq":2,"component":"c","kind":"rel')  # killed mid-append
    again = OwnerLedger(
        path, component="c", identity="a" * 64, ledger=TeacherLedger(epsilon_budget=9.0)
    )
    assert again.ledger.epsilon_spent == 4.0
    with again.spending():
        again.append([EpsilonDeltaRelease(epsilon=2.0, delta=0.0)], trial="t")
    assert owner.refreshed().epsilon_spent == 6.0


# ---- the kickstart teacher ---------------------------------------------------------------


def test_teachers_of_two_runs_share_the_owner_budget(tmp_path: Path) -> None:
    teacher_dir = save_teacher(tmp_path / "teacher", seed=0)
    settings = TeacherSettings(
        k=50.0, eta=0.1, composition="basic", delta_budget=1.0, delta_samples=100, seed=0
    )
    probe = DirichletTeacher.from_checkpoint(str(teacher_dir), settings)
    per_release = probe.release_privacy(50.0)[0]
    budget = per_release * 25.5  # 25 releases fit
    settings = TeacherSettings(**{**settings.to_dict(), "epsilon_budget": budget})
    identity = owner_identity([teacher_dir])
    owner = owner_journal_path(teacher_dir, component=TEACHER_COMPONENT, identity=identity)
    obs = np.random.default_rng(0).normal(size=(10, 4)).astype(np.float32) * 0.1

    def run(name: str) -> DirichletTeacher:
        return DirichletTeacher.from_checkpoint(
            str(teacher_dir),
            settings,
            journal_path=str(tmp_path / name / "kickstart_teacher.jsonl"),
            owner_path=str(owner),
            owner_identity=identity,
            trial=name,
        )

    first = run("run_1")
    first.start_rollout(expected_states=10)
    assert first.answer(obs).policies is not None
    assert first.answer(obs).policies is not None
    second = run("run_2")  # a new run, its own fresh trial journal
    second.start_rollout(expected_states=10)
    assert second.answer(obs).policies is None  # 20 spent: 10 more do not fit
    assert second.stats()["sharing"] == 0.0
    stats = second.stats()
    assert stats["releases"] == 0 and stats["owner_releases"] == 20
    assert stats["owner_epsilon_spent"] == pytest.approx(20 * per_release)
    assert first.stats()["owner_scope"] == 1.0


# ---- PATE: two runs, one ensemble ----------------------------------------------------------


def _pate_settings(teachers: list[str], budget: float, **extra: Any) -> dict[str, Any]:
    return {
        "pate_teacher_checkpoints": teachers,
        "pate_gamma": GAMMA,
        "pate_delta": DELTA,
        "pate_epsilon_budget": budget,
        "pate_query_selection": "all",
        "pate_queries_per_sample": QUERIES,
        "train_batch_size_per_learner": 50,
        "minibatch_size": 50,
        "num_epochs": 1,
        "num_env_runners": 0,
        "model_config": {"fcnet_hiddens": [8]},
        **extra,
    }


@pytest.mark.ray
@pytest.mark.slow
def test_two_runs_against_one_pate_ensemble_stop_at_one_budget(
    ray_session: Any, tmp_path: Path
) -> None:
    teachers = _fresh_teachers(tmp_path)
    budget = _pate_budget_for(3 * QUERIES)
    settings = _pate_settings(teachers, budget)
    env = "rllib_privacy/CartPoleGravity-v0"
    first = build_in_folder(PATEPPOConfig, env, settings, tmp_path / "run_1")
    try:
        for _ in range(2):
            result = first.train()
    finally:
        first.stop()
    assert result["pate_queries"] == 2 * QUERIES
    second = build_in_folder(PATEPPOConfig, env, settings, tmp_path / "run_2")
    try:
        results = [second.train() for _ in range(3)]
    finally:
        second.stop()
    # The second run got only what the first left of the ensemble's one budget.
    assert [r["pate_queries"] for r in results] == [QUERIES] * 3
    assert results[-1]["pate"]["budget_exhausted"] == 1.0
    for row in results:
        assert row["privacy"]["epsilon_spent"] <= budget
        assert row["privacy"]["budget_per_trial"] == 0.0
    assert results[-1]["privacy"]["epsilon_spent"] == pytest.approx(budget)
    assert results[-1]["privacy"]["trial_epsilon_spent"] < budget
    records = _owner_releases(Path(teachers[0]), PATE_COMPONENT)
    assert _count(records) == 3 * QUERIES
    assert len({r["trial"] for r in records}) == 2  # one name per run


def test_per_trial_scope_writes_no_owner_ledger(teachers: list[str], tmp_path: Path) -> None:
    labeler = PATELabeler(
        teachers,
        observation_space=ENV.observation_space,
        action_space=ENV.action_space,
        ledger=PATELedger(gamma=GAMMA, delta=DELTA),
        seed=0,
        journal_path=str(tmp_path / "pate_labeler.jsonl"),
    )
    labeler.label(np.zeros((3, 4), np.float32))
    assert labeler.metrics()["owner_scope"] == 0.0
    assert labeler.metrics()["owner_queries"] == 3
    assert not list(Path(teachers[0]).parent.rglob(OWNER_DIR_NAME))  # nor beside any teacher


# ---- resume without the journal ------------------------------------------------------------


def _fake_trial(tmp_path: Path, iterations: int) -> Any:
    """An Algorithm stand-in under Tune whose experiment state records ``iterations``."""
    import pyarrow.fs

    experiment = tmp_path / "exp"
    experiment.mkdir(parents=True)
    trial = {"relative_logdir": "PATEPPO_x_00000", "trial_id": "x_00000"}
    metadata = {"last_result": {"training_iteration": iterations} if iterations else {}}
    state = {"trial_data": [[json.dumps(trial), json.dumps(metadata)]]}
    (experiment / "experiment_state-2026.json").write_text(json.dumps(state))
    storage = SimpleNamespace(
        trial_dir_name="PATEPPO_x_00000",
        experiment_fs_path=str(experiment),
        storage_filesystem=pyarrow.fs.LocalFileSystem(),
    )
    return SimpleNamespace(_storage=storage, logdir=str(tmp_path))


def test_a_trial_without_its_journal_that_ran_before_fails_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("RLLIB_PRIVACY_ACCEPT_JOURNAL_LOSS", raising=False)
    algo = _fake_trial(tmp_path, iterations=4)
    journal = tmp_path / "exp" / "PATEPPO_x_00000" / "privacy_journal" / "ldp_a3c.jsonl"
    check = {"component": "ldp_a3c", "journal": journal}
    with pytest.raises(RestartWithoutJournalError, match="ran 4 iterations before .*journal"):
        check_restart(algo, journal_had_releases=False, **check)
    # Its journal replayed: the ledger continues, nothing to refuse.
    check_restart(algo, journal_had_releases=True, **check)
    # An owner ledger holds every release: the trial composes against it, with a warning.
    with caplog.at_level("WARNING"):
        check_restart(algo, journal_had_releases=False, owner_ledger="/owner.jsonl", **check)
    assert "composes against the data owner's ledger" in caplog.text
    # A first start (Tune has no result of it yet) is no evidence.
    check_restart(_fake_trial(tmp_path / "new", 0), journal_had_releases=False, **check)
    monkeypatch.setenv("RLLIB_PRIVACY_ACCEPT_JOURNAL_LOSS", "PATEPPO_x_00000")
    check_restart(algo, journal_had_releases=False, **check)


def _experiment(teachers: list[str], budget: float, scope: str, iterations: int) -> dict:
    config = _pate_settings(teachers, budget, pate_budget_scope=scope)
    config["teacher_checkpoints"] = config.pop("pate_teacher_checkpoints")
    return {
        "pate-owner": {
            "run": "PATEPPO",
            "env": "rllib_privacy/CartPoleGravity-v0",
            "stop": {"training_iteration": iterations},
            # No checkpoint before the kill: --resume starts the trial over.
            "checkpoint_config": {"checkpoint_frequency": 1000, "checkpoint_at_end": False},
            "config": config,
        }
    }


def _tune_iterations(storage: Path) -> int:
    """The trial's last iteration in Tune's saved experiment state (0 before any)."""
    best = 0
    for state in storage.rglob("experiment_state-*.json"):
        try:
            for _, metadata in json.loads(state.read_text())["trial_data"]:
                last = json.loads(metadata).get("last_result") or {}
                best = max(best, int(last.get("training_iteration") or 0))
        except (ValueError, KeyError, OSError):
            continue
    return best


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize("scope", ["owner", "trial"])
def test_killed_run_whose_trial_journal_was_deleted(
    tmp_path: Path, scope: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kill after some answers, delete the trial's journal, --resume (the outside scenario)."""
    monkeypatch.delenv("RLLIB_PRIVACY_ACCEPT_JOURNAL_LOSS", raising=False)
    # Tune saves its experiment state (the evidence of earlier iterations) every half second,
    # so that the kill can wait for it instead of for Tune's adaptive period (10 s or more).
    monkeypatch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "0.5")
    teachers = _fresh_teachers(tmp_path)
    budget_queries = 6 * QUERIES
    budget = _pate_budget_for(budget_queries)
    iterations = 30
    experiment, storage = tmp_path / "experiment.yaml", tmp_path / "results"
    experiment.write_text(yaml.safe_dump(_experiment(teachers, budget, scope, iterations)))

    def answered_and_recorded() -> bool:
        spent = _count(journal_records(storage, PATE_COMPONENT))
        return spent >= 2 * QUERIES and _tune_iterations(storage) >= 1

    kill_when(experiment, storage, answered_and_recorded)
    spent_at_kill = _count(journal_records(storage, PATE_COMPONENT))
    assert not list(storage.rglob("checkpoint_*"))
    for journal in storage.rglob(f"privacy_journal/{PATE_COMPONENT}.jsonl"):
        journal.unlink()
    result = run_cli(experiment, storage, "--resume")
    output = result.stdout + result.stderr
    if scope == "trial":
        # Nothing silently starts over: the trial fails, naming the evidence and the way out.
        assert result.returncode == EXIT_TRIAL_ERROR, output[-3000:]
        errors = "".join(p.read_text() for p in storage.rglob("error.txt")) + output
        assert "RestartWithoutJournalError" in errors, output[-3000:]
        assert "iterations before" in errors and "RLLIB_PRIVACY_ACCEPT_JOURNAL_LOSS" in errors
        return
    assert result.returncode == EXIT_OK, output[-3000:]
    rows = resumed_rows(storage)
    assert rows[0]["training_iteration"] == 1  # started over: no checkpoint
    owner_total = _count(_owner_releases(Path(teachers[0]), PATE_COMPONENT))
    # At most the budget, across the kill and the deleted journal.
    assert spent_at_kill <= owner_total <= budget_queries
    assert owner_total == budget_queries
    resumed = _count(journal_records(storage, PATE_COMPONENT))
    assert resumed == budget_queries - spent_at_kill
    for row in rows:
        assert row["privacy"]["epsilon_spent"] <= budget * (1 + 1e-12)
    assert rows[-1]["pate"]["budget_exhausted"] == 1.0


# ---- a Tune sweep against one kickstart teacher -------------------------------------------


def _kickstart_sweep(teacher: Path, budget: float, scope: str) -> dict[str, Any]:
    return {
        "kick-sweep": {
            "run": "KickstartPPO",
            "env": "CartPole-v1",
            "stop": {"training_iteration": 3},
            "config": {
                "seed": {"grid_search": [0, 1, 2]},
                "teacher_checkpoint": str(teacher),
                "teacher_k": 50.0,
                "teacher_eta": 0.1,
                "teacher_vanishing_coefficient": 1.0,
                "teacher_composition": "basic",
                "teacher_delta_budget": 1.0,
                "teacher_delta_samples": 100,
                "teacher_epsilon_budget": budget,
                "teacher_budget_scope": scope,
                "train_batch_size_per_learner": 32,
                "minibatch_size": 32,
                "num_epochs": 1,
                "num_env_runners": 0,
                "model_config": {"fcnet_hiddens": [8]},
            },
        }
    }


def _sweep(tmp_path: Path, scope: str) -> tuple[subprocess.CompletedProcess, Path, int, float]:
    teacher = save_teacher(tmp_path / "teacher", seed=0)
    settings = TeacherSettings(
        k=50.0, eta=0.1, composition="basic", delta_budget=1.0, delta_samples=100
    )
    per_release = DirichletTeacher.from_checkpoint(str(teacher), settings).release_privacy(50.0)[0]
    # 32 states per iteration, 3 iterations, 3 trials: 288 wanted; 150 fit one budget (one
    # trial alone wants 96: a second must share what the first left).
    budget = per_release * 150.5
    experiment, storage = tmp_path / "sweep.yaml", tmp_path / "results"
    experiment.write_text(yaml.safe_dump(_kickstart_sweep(teacher, budget, scope)))
    result = run_cli(experiment, storage)
    assert result.returncode == EXIT_OK, (result.stdout + result.stderr)[-3000:]
    return result, teacher, 150, budget


@pytest.mark.ray
@pytest.mark.slow
def test_a_tune_sweep_against_one_kickstart_teacher_shares_its_budget(tmp_path: Path) -> None:
    result, teacher, affordable, budget = _sweep(tmp_path, "owner")
    trials = list((tmp_path / "results").rglob(f"privacy_journal/{TEACHER_COMPONENT}.jsonl"))
    assert len(trials) == 3
    per_trial = [_count(journal_records(t.parents[1], TEACHER_COMPONENT)) for t in trials]
    owner = _owner_releases(teacher, TEACHER_COMPONENT)
    # Three trials, one budget: together they released what one budget affords.
    assert sum(per_trial) == _count(owner) <= affordable
    assert _count(owner) >= affordable - 32  # all-or-nothing batches of 32
    assert len({r["trial"] for r in owner}) >= 2
    last_line = result.stdout.strip().splitlines()[-1]
    assert "per trial" not in last_line and "data owner's ledger" in last_line
    epsilon = float(last_line.split("ε = ")[1].split()[0])
    assert epsilon <= budget


@pytest.mark.ray
@pytest.mark.slow
def test_per_trial_scope_gives_each_trial_its_own_budget(tmp_path: Path) -> None:
    result, teacher, affordable, budget = _sweep(tmp_path, "trial")
    trials = list((tmp_path / "results").rglob(f"privacy_journal/{TEACHER_COMPONENT}.jsonl"))
    per_trial = [_count(journal_records(t.parents[1], TEACHER_COMPONENT)) for t in trials]
    # Each trial spends up to its own budget (3 iterations × 32 = 96 < 100 each).
    assert per_trial == [96, 96, 96]
    assert not (teacher / OWNER_DIR_NAME).exists()
    last_line = result.stdout.strip().splitlines()[-1]
    assert "per trial" in last_line and "largest of 3 trials" in last_line, last_line
    assert math.isfinite(float(last_line.split("ε = ")[1].split()[0]))
