"""KickstartPPO end to end on a Ray cluster: queries, budget, checkpoints, CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.teachers import DirichletTeacher, TeacherSettings

REPO = Path(__file__).resolve().parents[2]
BATCH = 200

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def teacher_checkpoint(ray_session: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A (barely) trained PPO teacher, (64, 64) as in the shipped teacher YAML."""
    from ray.rllib.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=BATCH, minibatch_size=100, num_epochs=1)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[64, 64]))
    )
    algo = config.build_algo()
    algo.train()
    path = tmp_path_factory.mktemp("teacher") / "checkpoint_000000"
    algo.save_to_path(str(path))
    algo.stop()
    return path


def _student(teacher: Path, **training: Any) -> KickstartPPOConfig:
    values = {
        "teacher_checkpoint": str(teacher),
        "teacher_k": 50.0,
        "teacher_eta": 0.1,
        "teacher_tau": 1e-3,
        "teacher_seed": 0,
        "teacher_epsilon_budget": math.inf,  # unless a test sets one (the default is 10)
        # Each test's trial has its own budget: the module's tests share one teacher, and
        # owner scope would carry spending (and budget settings) from test to test.
        "teacher_budget_scope": "trial",
        "train_batch_size_per_learner": BATCH,
        "minibatch_size": 50,
        "num_epochs": 3,
    }
    values.update(training)
    return (
        KickstartPPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(**values)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32, 32]))
    )


@pytest.mark.slow
def test_teacher_is_asked_once_per_collected_sample(teacher_checkpoint: Path) -> None:
    algo = _student(teacher_checkpoint, teacher_vanishing_coefficient=0.5).build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        sampled = result["num_env_steps_sampled_lifetime"]
        # 3 epochs × 4 minibatches per iteration, yet each sample was asked about once.
        assert result["kickstart"]["teacher_answered"] == sampled
        assert result["privacy"]["releases"] == sampled
        assert result["kickstart"]["k"] == pytest.approx(25.0)
        assert result["kickstart"]["answered_fraction"] == 1.0
        assert 0.0 < result["kickstart"]["alpha_lambda"] < 1.0
        assert result["teacher_sharing"] == 1.0 and result["timesteps_total"] == sampled
        assert list(result)[:4] == [
            "episode_return_mean",
            "teacher_epsilon_spent",
            "teacher_k",
            "teacher_sharing",
        ]
    finally:
        algo.stop()


def test_budget_stops_the_teacher_and_masks_the_loss(teacher_checkpoint: Path) -> None:
    # Basic composition: the budget arithmetic is n·ε of Theorem 1.
    basic = {"composition": "basic", "delta_budget": 1.0}
    settings = TeacherSettings(k=50.0, eta=0.1, tau=1e-3, vanishing_coefficient=1.0, **basic)
    teacher = DirichletTeacher.from_checkpoint(str(teacher_checkpoint), settings)
    epsilon, _ = teacher.release_privacy(50.0)
    budget = 1.5 * BATCH * epsilon  # one rollout fits, two do not
    config = _student(
        teacher_checkpoint,
        teacher_vanishing_coefficient=1.0,
        teacher_epsilon_budget=budget,
        teacher_composition="basic",
        teacher_delta_budget=1.0,
    )
    algo = config.build_algo()
    try:
        first = algo.train()
        assert first["teacher_sharing"] == 1.0
        second = algo.train()
        assert second["teacher_sharing"] == 0.0
        assert second["kickstart"]["teacher_stopped_at_iteration"] == 2.0
        assert second["kickstart"]["answered_fraction"] == 0.0
        assert second["kickstart"]["loss"] == 0.0
        assert first["kickstart"]["teacher_serving"] == 1.0
        assert second["kickstart"]["teacher_serving"] == 0.0
        assert second["kickstart"]["teacher_refused"] > 0
        assert second["privacy"]["epsilon_spent"] == first["privacy"]["epsilon_spent"] <= budget
    finally:
        algo.stop()


@pytest.mark.slow
def test_answer_cache_releases_each_code_once_and_survives_restore(
    teacher_checkpoint: Path, tmp_path: Path
) -> None:
    config = _student(teacher_checkpoint, teacher_cache_bits=8, teacher_vanishing_coefficient=0.5)
    algo = config.build_algo()
    try:
        for _ in range(2):
            before = algo.train()
        algo.save_to_path(str(tmp_path / "student"))
    finally:
        algo.stop()
    kickstart, privacy = before["kickstart"], before["privacy"]
    sampled = before["num_env_steps_sampled_lifetime"]
    assert kickstart["teacher_asked"] == sampled
    assert kickstart["teacher_answered"] + kickstart["teacher_cached"] == sampled
    assert privacy["releases"] == kickstart["teacher_answered"] == kickstart["teacher_cache_size"]
    assert 0 < privacy["releases"] < sampled / 4  # 8-bit codes: far fewer codes than states
    assert kickstart["answered_fraction"] == 1.0
    assert kickstart["epsilon_basic_composition"] > privacy["epsilon_spent"] > 0
    restored = config.build_algo()
    try:
        restored.restore_from_path(str(tmp_path / "student"))
        stats = restored._teacher.stats()
        assert stats["releases"] == privacy["releases"]
        assert stats["cache_size"] == kickstart["teacher_cache_size"]
        after = restored.train()
        # New releases only for codes never seen: the cached ones are not paid again.
        new_codes = after["kickstart"]["teacher_cache_size"] - kickstart["teacher_cache_size"]
        assert after["privacy"]["releases"] == privacy["releases"] + new_codes
        assert after["kickstart"]["teacher_cached"] > kickstart["teacher_cached"]
    finally:
        restored.stop()


@pytest.mark.slow
def test_ledger_and_counts_survive_checkpoint_and_restore(
    teacher_checkpoint: Path, tmp_path: Path
) -> None:
    config = _student(teacher_checkpoint, teacher_vanishing_coefficient=0.5)
    algo = config.build_algo()
    try:
        before = algo.train()
        algo.save_to_path(str(tmp_path / "student"))
        connector_counts = algo.learner_group._learner.kickstart_counts()
    finally:
        algo.stop()
    restored = config.build_algo()
    try:
        restored.restore_from_path(str(tmp_path / "student"))
        stats = restored._teacher.stats()
        assert stats["epsilon_spent"] == before["privacy"]["epsilon_spent"] > 0
        assert stats["answered"] == before["kickstart"]["teacher_answered"]
        assert stats["k"] == before["kickstart"]["k"]
        assert restored.learner_group._learner.kickstart_counts() == connector_counts
        after = restored.train()
        # The spent budget continues (k halves again), it never resets.
        assert after["privacy"]["epsilon_spent"] > before["privacy"]["epsilon_spent"]
        assert after["kickstart"]["k"] == pytest.approx(before["kickstart"]["k"] / 2)
    finally:
        restored.stop()


def test_teacher_for_another_environment_is_rejected(teacher_checkpoint: Path) -> None:
    config = _student(teacher_checkpoint).environment("Acrobot-v1")
    with pytest.raises(Exception, match="observation space .* but the student's environment"):
        config.build_algo()


def test_missing_teacher_checkpoint_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(PrivacyConfigError, match="teacher_checkpoint .* does not exist"):
        _student(tmp_path / "nothing").validate()
    with pytest.raises(PrivacyConfigError, match="teacher_checkpoint is required"):
        KickstartPPOConfig().environment("CartPole-v1").validate()


def _rllib(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rllib_privacy.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=400,
    )


@pytest.mark.slow
def test_shipped_cartpole_yamls_run_one_iteration_through_the_cli(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing import event_accumulator

    teacher = _rllib(
        "train",
        "-f",
        "tuned_configs/kickstart_teacher_cartpole.yaml",
        "--stop",
        json.dumps({"training_iteration": 1}),
        "--config",
        json.dumps({"train_batch_size_per_learner": BATCH, "minibatch_size": 100}),
        "--storage-path",
        str(tmp_path / "teacher"),
        "--ray-num-cpus",
        "2",
    )
    assert teacher.returncode == 0, teacher.stdout[-2000:] + teacher.stderr[-2000:]
    experiment = tmp_path / "teacher" / "kickstart-teacher-cartpole"
    student_args = [
        "train",
        "-f",
        "tuned_configs/kickstart_dirichlet_cartpole.yaml",
        "--config",
        json.dumps(
            {
                "teacher_checkpoint": str(experiment),
                "train_batch_size_per_learner": BATCH,
                "minibatch_size": 100,
                "num_epochs": 1,
            }
        ),
    ]
    dry = _rllib(*student_args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    student = _rllib(
        *student_args,
        "--stop",
        json.dumps({"training_iteration": 1}),
        "--storage-path",
        str(tmp_path / "student"),
        "--ray-num-cpus",
        "2",
    )
    assert student.returncode == 0, student.stdout[-2000:] + student.stderr[-2000:]
    events = next((tmp_path / "student").rglob("events.out.tfevents*"))
    # The trial folder: Tune's event file and the privacy layout's, one TensorBoard run.
    accumulator = event_accumulator.EventAccumulator(str(events.parent))
    accumulator.Reload()
    tags = set(accumulator.Tags()["scalars"])
    for key in (
        "privacy/epsilon_spent",
        "privacy/delta_spent",
        "kickstart/k",
        "kickstart/alpha_lambda",
        "kickstart/active_fraction",
        "kickstart/loss",
        "kickstart/teacher_answered",
        "kickstart/teacher_refused",
        "kickstart/teacher_sharing",
    ):
        assert f"ray/tune/{key}" in tags, key


@pytest.mark.slow
def test_answer_replay_keeps_teaching_after_sharing_stops_and_survives_restore(
    teacher_checkpoint: Path, tmp_path: Path
) -> None:
    basic = {"composition": "basic", "delta_budget": 1.0}
    settings = TeacherSettings(k=50.0, eta=0.1, tau=1e-3, vanishing_coefficient=1.0, **basic)
    teacher = DirichletTeacher.from_checkpoint(str(teacher_checkpoint), settings)
    epsilon, _ = teacher.release_privacy(50.0)
    config = _student(
        teacher_checkpoint,
        teacher_vanishing_coefficient=1.0,
        teacher_epsilon_budget=1.5 * BATCH * epsilon,  # one rollout fits, two do not
        teacher_composition="basic",
        teacher_delta_budget=1.0,
        kickstart_answer_replay_size=64,
        kickstart_lambda=0.0,
    )
    algo = config.build_algo()
    try:
        first = algo.train()
        second = algo.train()
        algo.save_to_path(str(tmp_path / "student"))
        remembered = algo.learner_group._learner._answer_replay.state_dict()
    finally:
        algo.stop()
    answered = first["kickstart"]["teacher_answered"]
    assert second["teacher_sharing"] == 0.0 and second["kickstart"]["answered_fraction"] == 0.0
    # Nothing new was released, yet the replayed answers still shape the loss.
    assert second["kickstart"]["answers_remembered"] == answered == len(remembered["k"])
    assert second["kickstart"]["loss"] > 0.0
    assert second["privacy"]["epsilon_spent"] == first["privacy"]["epsilon_spent"]
    restored = config.build_algo()
    try:
        restored.restore_from_path(str(tmp_path / "student"))
        state = restored.learner_group._learner._answer_replay.state_dict()
        for key in ("observations", "policies", "k"):
            assert (state[key] == remembered[key]).all(), key
    finally:
        restored.stop()
