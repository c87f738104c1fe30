"""PATEPPO on Ray: one global budget over 2 EnvRunners, labels once per sample, masked loss
after the budget, the ledger in checkpoints, and the shipped YAMLs for one iteration."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import ray
from cli_helpers import scalar_tags as _scalar_tags
from cli_helpers import train_one_iteration
from ray.rllib.utils.metrics import LEARNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME
from test_pate_ppo_units import save_teacher

from rllib_privacy.algorithms.pate_ppo import PATEPPOConfig

REPO = Path(__file__).resolve().parents[2]
TINY_PPO = {"minibatch_size": 50, "num_epochs": 3, "model_config": {"fcnet_hiddens": [8]}}


@pytest.fixture(scope="module")
def teachers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("teachers")
    return [str(save_teacher(root / f"t{i}", seed=i)) for i in range(3)]


def _config(teachers: list[str], num_env_runners: int) -> PATEPPOConfig:
    config = (
        PATEPPOConfig()
        .environment("rllib_privacy/CartPoleGravity-v0")
        .rl_module(model_config=TINY_PPO["model_config"])
    )
    config.update_from_dict(
        {
            "minibatch_size": TINY_PPO["minibatch_size"],
            "num_epochs": TINY_PPO["num_epochs"],
            "teacher_checkpoints": teachers,
            "pate_gamma": 0.5,
            "pate_epsilon_budget": float("inf"),
            # Each test's trial has its own budget: the module's tests share one ensemble.
            "pate_budget_scope": "trial",
            "pate_max_queries": 150,
            "pate_query_selection": "all",
            "pate_queries_per_sample": None,
            "pate_log_data_dependent_epsilon": True,
            "train_batch_size_per_learner": 200,
            "num_env_runners": num_env_runners,
            "num_cpus_per_env_runner": 0.5,
            "seed": 0,
        }
    )
    return config


@pytest.mark.ray
@pytest.mark.slow
def test_global_budget_labels_once_masked_loss_and_restore(
    ray_session: object, teachers: list[str], tmp_path: Path
) -> None:
    algo = _config(teachers, num_env_runners=2).build_algo()
    try:
        first = algo.train()
        learner = first[LEARNER_RESULTS]["default_policy"]
        # Two EnvRunners sent 100 states each; ONE ledger answered 150 in all.
        assert first["pate_queries"] == 150 and first["pate"]["budget_exhausted"] == 1.0
        labeler = ray.get(algo._labeler.metrics.remote())
        # Each collected state was sent once, not once per epoch or minibatch (3 x 4).
        assert labeler["requested"] == first[NUM_ENV_STEPS_SAMPLED_LIFETIME] == 200
        assert 0.5 < learner["pate_labeled_fraction"] < 0.75  # 150 of 200 + padding
        assert learner["pate_label_loss"] > 0.0
        assert list(first)[:4] == [
            "episode_return_mean",
            "pate_epsilon",
            "pate_epsilon_data_independent",
            "pate_queries",
        ]
        assert first["privacy"]["epsilon_spent"] == first["pate_epsilon_data_independent"]
        assert first["pate_epsilon"] == first["pate_epsilon_data_independent"]
        # Turned on here: the un-noised data-dependent ε (a non-private diagnostic).
        assert 0 < first["pate"]["epsilon_data_dependent"] <= first["pate_epsilon"]
        assert "label_agreement" not in first["pate"]

        # Label replay: the 150 labels are remembered once each (not once per epoch).
        assert learner["pate_label_set_size"] == 150

        second = algo.train()
        learner = second[LEARNER_RESULTS]["default_policy"]
        assert second["pate_queries"] == 150  # the budget stopped the queries
        assert learner["pate_labeled_fraction"] == 0.0
        # No new label, but the remembered ones still train the student.
        assert learner["pate_label_loss"] > 0.0 and learner["pate_label_set_size"] == 150
        algo.save_to_path(str(tmp_path / "checkpoint"))
        saved = ray.get(algo._labeler.state_dict.remote())
    finally:
        algo.stop()

    restored = _config(teachers, num_env_runners=0).build_algo()
    try:
        assert ray.get(restored._labeler.metrics.remote())["queries"] == 0
        restored.restore_from_path(str(tmp_path / "checkpoint"))
        assert ray.get(restored._labeler.state_dict.remote()) == saved
        again = restored.train()
        assert again["pate_queries"] == 150 and again["pate_epsilon"] == second["pate_epsilon"]
        # The remembered labels are part of the learner's checkpoint state.
        assert again[LEARNER_RESULTS]["default_policy"]["pate_label_set_size"] == 150
    finally:
        restored.stop()


def _label_set_cross_entropy(algo: object) -> float:
    """Mean cross-entropy of the learner's module on its remembered labels."""
    import numpy as np
    import torch
    from ray.rllib.core.columns import Columns

    def measure(learner: object) -> float:
        entries = learner.pate_label_set("default_policy")
        observations = torch.from_numpy(np.stack([row for row, _ in entries]))
        labels = torch.tensor([label for _, label in entries])
        with torch.no_grad():
            logits = learner.module["default_policy"].forward_train({Columns.OBS: observations})[
                Columns.ACTION_DIST_INPUTS
            ]
        return float(torch.nn.functional.cross_entropy(logits, labels))

    (result,) = algo.learner_group.foreach_learner(measure)
    return result.get()


@pytest.mark.ray
@pytest.mark.slow
def test_label_sgd_steps_fit_the_remembered_labels(
    ray_session: object, teachers: list[str]
) -> None:
    losses = {}
    for steps in (0, 150):
        config = _config(teachers, num_env_runners=0)
        config.lr, config.pate_label_sgd_steps = 1e-3, steps
        config.pate_gamma = 50.0  # near-noiseless labels: a function of the state to fit
        algo = config.build_algo()
        try:
            algo.train()
            losses[steps] = _label_set_cross_entropy(algo)
        finally:
            algo.stop()
    # Same seed, same first sample: only the extra label-only steps differ.
    assert losses[150] < 0.8 * losses[0], losses


@pytest.mark.ray
@pytest.mark.slow
def test_without_replay_only_the_batch_labels_count(
    ray_session: object, teachers: list[str]
) -> None:
    config = _config(teachers, num_env_runners=0)
    config.pate_label_replay_size = 0
    algo = config.build_algo()
    try:
        assert algo.train()[LEARNER_RESULTS]["default_policy"]["pate_label_loss"] > 0.0
        learner = algo.train()[LEARNER_RESULTS]["default_policy"]
        assert learner["pate_labeled_fraction"] == 0.0 and learner["pate_label_loss"] == 0.0
        assert learner["pate_label_set_size"] == 0
    finally:
        algo.stop()


@pytest.mark.ray
@pytest.mark.slow
def test_labeler_actor_rejects_a_teacher_for_another_env(
    ray_session: object, teachers: list[str], tmp_path: Path
) -> None:
    import gymnasium as gym

    from rllib_privacy.accounting import PATELedger
    from rllib_privacy.errors import PrivacyConfigError
    from rllib_privacy.pate.labeler import create_labeler_actor

    odd = save_teacher(tmp_path / "odd", 0, action_space=gym.spaces.Discrete(3))
    env = gym.make("rllib_privacy/CartPoleGravity-v0")
    with pytest.raises(
        PrivacyConfigError, match=r"has action space Discrete\(3\), but the student"
    ):
        create_labeler_actor(
            teacher_dirs=[teachers[0], str(odd)],
            observation_space=env.observation_space,
            action_space=env.action_space,
            ledger=PATELedger(gamma=0.1, delta=1e-5),
        )


def _one_iteration(path: str, storage: Path, config: dict) -> subprocess.CompletedProcess:
    return train_one_iteration(path, storage, config, num_samples=1)


@pytest.mark.ray
@pytest.mark.slow
def test_shipped_pate_yamls_run_one_iteration(teachers: list[str], tmp_path: Path) -> None:
    tiny = {**TINY_PPO, "train_batch_size_per_learner": 100, "num_env_runners": 0}
    result = _one_iteration(
        "tuned_configs/pate_teachers_cartpole.yaml",
        tmp_path / "teachers",
        {**tiny, "env_config": {"gravity_choices": [9.0]}},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    experiment = tmp_path / "teachers" / "pate-teachers-cartpole"
    assert list(experiment.rglob("checkpoint_000000")), "teacher run wrote no checkpoint"

    # A real Algorithm checkpoint (the teacher experiment folder) plus a saved RLModule.
    student = {**tiny, "teacher_checkpoints": [str(experiment), teachers[0]]}
    result = _one_iteration("tuned_configs/pate_ppo_cartpole.yaml", tmp_path / "student", student)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    tags = _scalar_tags(tmp_path / "student")
    for tag in (
        "pate/queries",
        "pate/epsilon",
        "pate/epsilon_data_independent",
        "pate_epsilon",
        "privacy/epsilon_spent",
    ):
        assert f"ray/tune/{tag}" in tags, tag
    # Nothing computed from the raw votes is logged by default.
    assert "ray/tune/pate/label_agreement" not in tags
    assert "ray/tune/pate/epsilon_data_dependent" not in tags
    last = json.loads(
        next((tmp_path / "student").rglob("result.json")).read_text().splitlines()[-1]
    )
    assert 0 < last["pate_queries"] <= 50 and last["pate"]["num_teachers"] == 2

    sweep = {**student, "teacher_checkpoints": teachers, "pate_gamma": 0.5, "pate_num_teachers": 2}
    result = _one_iteration("tuned_configs/pate_ppo_sweep.yaml", tmp_path / "sweep", sweep)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "ray/tune/pate/epsilon" in _scalar_tags(tmp_path / "sweep")


def test_missing_teachers_pass_validation_and_fail_at_run_time(tmp_path: Path) -> None:
    """Validation passes (``--dry-run`` of every shipped YAML is in test_cli_run); the run
    resolves the teachers and names the key."""
    from rllib_privacy.pate.ensemble import resolve_teacher_checkpoints

    config = PATEPPOConfig().environment("rllib_privacy/CartPoleGravity-v0")
    config.update_from_dict({"teacher_checkpoints": str(tmp_path / "none")})
    config.validate()
    with pytest.raises(ValueError, match="'pate_teacher_checkpoints': .* does not exist"):
        resolve_teacher_checkpoints(config.pate_teacher_checkpoints)
