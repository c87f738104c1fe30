"""PATE for RL without a Ray cluster: teachers, selection, the labeler's budget, config checks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.algorithms.ppo import PPOConfig

import rllib_privacy  # noqa: F401  (registers the env)
from rllib_privacy.accounting import PATELedger
from rllib_privacy.algorithms.pate_ppo import PATEPPOConfig
from rllib_privacy.callbacks import select_query_states
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.pate.ensemble import (
    MODULE_SUBPATH,
    TeacherEnsemble,
    resolve_teacher_checkpoints,
)
from rllib_privacy.pate.labeler import UNLABELED, PATELabeler

ENV = gym.make("rllib_privacy/CartPoleGravity-v0")


def save_teacher(
    path: Path,
    seed: int,
    *,
    observation_space: gym.Space = ENV.observation_space,
    action_space: gym.Space = ENV.action_space,
) -> Path:
    """A small, randomly initialized PPO RLModule saved like a trained teacher."""
    torch.manual_seed(seed)
    spec = PPOConfig().get_default_rl_module_spec()
    spec.observation_space, spec.action_space = observation_space, action_space
    spec.model_config = {"fcnet_hiddens": [8]}
    spec.build().save_to_path(str(path))
    return path


@pytest.fixture(scope="module")
def teachers(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("teachers")
    return [save_teacher(root / f"t{i}", seed=i) for i in range(3)]


def test_resolves_module_dirs_checkpoints_and_experiment_folders(
    teachers: list[Path], tmp_path: Path
) -> None:
    experiment = tmp_path / "exp"
    for trial, numbers in (("trial_b", (0, 2)), ("trial_a", (1,))):
        for number in numbers:
            target = experiment / trial / f"checkpoint_{number:06d}" / MODULE_SUBPATH
            target.parent.mkdir(parents=True)
            target.symlink_to(teachers[number % 3], target_is_directory=True)
    found = resolve_teacher_checkpoints(str(experiment))
    assert found == [
        (experiment / "trial_a/checkpoint_000001" / MODULE_SUBPATH).resolve(),
        (experiment / "trial_b/checkpoint_000002" / MODULE_SUBPATH).resolve(),
    ]
    checkpoint = experiment / "trial_a/checkpoint_000001"
    # Algorithm checkpoints pickle the Algorithm class at their root, like RLModules do.
    (checkpoint / "class_and_ctor_args.pkl").write_bytes(b"")
    assert resolve_teacher_checkpoints([str(checkpoint), str(teachers[0])]) == [
        found[0],
        teachers[0].resolve(),
    ]
    assert len(resolve_teacher_checkpoints([str(t) for t in teachers], num_teachers=2)) == 2


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("/does/not/exist", "does not exist; train teachers first"),
        ("EMPTY", "no RLModule or Algorithm checkpoint"),
        ("ONE", "at least 2 teachers"),
        ("TWICE", "names a teacher twice"),
    ],
)
def test_bad_teacher_checkpoints_are_named(
    spec: str, message: str, teachers: list[Path], tmp_path: Path
) -> None:
    paths = {
        "EMPTY": str(tmp_path),
        "ONE": [str(teachers[0])],
        "TWICE": [str(teachers[0]), str(teachers[0])],
    }.get(spec, spec)
    with pytest.raises(PrivacyConfigError, match="teacher_checkpoints") as info:
        resolve_teacher_checkpoints(paths)
    assert message in str(info.value)
    with pytest.raises(PrivacyConfigError, match="pate_num_teachers' is 5 but only 3"):
        resolve_teacher_checkpoints([str(t) for t in teachers], num_teachers=5)


def test_ensemble_counts_one_vote_per_teacher(teachers: list[Path]) -> None:
    ensemble = TeacherEnsemble(
        teachers, observation_space=ENV.observation_space, action_space=ENV.action_space
    )
    observations = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    votes = ensemble.votes(observations)
    assert votes.shape == (50, 2) and np.all(votes.sum(axis=1) == 3)
    assert len(np.unique(votes[:, 0])) > 1  # different teachers, different states


@pytest.mark.parametrize("which", ["observation", "action"])
def test_teacher_with_other_spaces_is_rejected(which: str, tmp_path: Path) -> None:
    if which == "observation":
        odd = save_teacher(
            tmp_path / "odd", 0, observation_space=gym.spaces.Box(-1, 1, (6,), np.float32)
        )
    else:
        odd = save_teacher(tmp_path / "odd", 0, action_space=gym.spaces.Discrete(3))
    with pytest.raises(PrivacyConfigError, match=f"has {which} space .* but the student's env"):
        TeacherEnsemble(
            [odd], observation_space=ENV.observation_space, action_space=ENV.action_space
        )


def test_query_selection() -> None:
    rng = np.random.default_rng(0)
    assert select_query_states(5, selection="all", limit=None, rng=rng).tolist() == [0, 1, 2, 3, 4]
    assert select_query_states(5, selection="all", limit=2, rng=rng).tolist() == [0, 1]
    chosen = select_query_states(100, selection="random", limit=10, rng=rng)
    assert len(set(chosen.tolist())) == 10 and chosen.max() < 100
    logits = np.array([[5.0, 0.0], [0.1, 0.0], [2.0, 0.0], [0.0, 0.0]])
    least = select_query_states(4, selection="least_confident", limit=3, rng=rng, logits=logits)
    assert least.tolist() == [3, 1, 2]
    with pytest.raises(ValueError, match="logits"):
        select_query_states(4, selection="least_confident", limit=3, rng=rng)


def _labeler(
    teachers: list[Path], *, diagnostics: bool = False, **ledger_kwargs: object
) -> PATELabeler:
    settings = {"delta": 1e-5, **ledger_kwargs}
    if settings.get("aggregator", "lnmax") == "lnmax":
        settings["gamma"] = 0.5
    return PATELabeler(
        teachers,
        observation_space=ENV.observation_space,
        action_space=ENV.action_space,
        ledger=PATELedger(**settings),  # type: ignore[arg-type]
        seed=0,
        track_label_agreement=diagnostics,
        report_data_dependent_epsilon=diagnostics,
    )


def test_labeler_answers_until_the_budget_then_unlabeled(teachers: list[Path]) -> None:
    labeler = _labeler(teachers, max_queries=30, diagnostics=True)
    observations = np.random.default_rng(1).normal(size=(20, 4)).astype(np.float32)
    labels, exhausted = labeler.label(observations)
    assert np.all(np.isin(labels, [0, 1])) and not exhausted
    labels, exhausted = labeler.label(observations)  # another EnvRunner's sample
    assert np.all(labels[:10] >= 0) and np.all(labels[10:] == UNLABELED) and exhausted
    labels, _ = labeler.label(observations)
    assert np.all(labels == UNLABELED)
    metrics = labeler.metrics()
    assert metrics["queries"] == 30 and metrics["requested"] == 60
    assert metrics["budget_exhausted"] == 1.0 and 0.0 <= metrics["label_agreement"] <= 1.0
    assert metrics["epsilon_data_dependent"] <= metrics["epsilon"]
    assert metrics["epsilon"] == metrics["epsilon_data_independent"]

    restored = _labeler(teachers, diagnostics=True)
    restored.load_state_dict(json.loads(json.dumps(labeler.state_dict())))
    assert restored.metrics() == metrics
    assert np.all(restored.label(observations)[0] == UNLABELED)


def test_labeler_epsilon_budget_and_data_dependent_basis(teachers: list[Path]) -> None:
    budget = 12.0
    labeler = _labeler(
        teachers, epsilon_budget=budget, budget_basis="data_dependent", diagnostics=True
    )
    observations = np.random.default_rng(2).normal(size=(200, 4)).astype(np.float32)
    labels, exhausted = labeler.label(observations)
    answered = int(np.sum(labels != UNLABELED))
    assert 0 < answered < 200 and exhausted
    assert labeler.metrics()["epsilon_data_dependent"] <= budget + 1e-9


def test_labeler_publishes_no_vote_dependent_number_by_default(teachers: list[Path]) -> None:
    labeler = _labeler(teachers, max_queries=30)
    labeler.label(np.random.default_rng(1).normal(size=(20, 4)).astype(np.float32))
    metrics = labeler.metrics()
    assert "label_agreement" not in metrics and "epsilon_data_dependent" not in metrics
    assert metrics["epsilon"] == metrics["epsilon_data_independent"] > 0


def test_labeler_with_gnmax_and_confident_gnmax(teachers: list[Path]) -> None:
    observations = np.random.default_rng(3).normal(size=(40, 4)).astype(np.float32)
    gnmax = _labeler(teachers, aggregator="gnmax", sigma=0.5, max_queries=30)
    labels, exhausted = gnmax.label(observations)
    assert np.all(np.isin(labels[:30], [0, 1])) and np.all(labels[30:] == UNLABELED)
    assert exhausted and gnmax.metrics()["answered"] == 30
    # A threshold above the number of teachers with tiny noise: nothing is answered, yet
    # every query pays the threshold step.
    teachers_count = len(teachers)
    confident = _labeler(
        teachers, aggregator="confident_gnmax", sigma=0.5, threshold=teachers_count + 50.0,
        sigma_threshold=1.0, max_queries=30,
    )  # fmt: skip
    labels, _ = confident.label(observations[:10])
    metrics = confident.metrics()
    assert np.all(labels == UNLABELED) and metrics["queries"] == 10 and metrics["answered"] == 0
    assert metrics["epsilon_data_independent"] > 0
    easy = _labeler(
        teachers, aggregator="confident_gnmax", sigma=0.5, threshold=-50.0, sigma_threshold=1.0
    )
    labels, _ = easy.label(observations[:10])
    assert np.all(np.isin(labels, [0, 1])) and easy.metrics()["answered"] == 10
    restored = _labeler(teachers, aggregator="gnmax", sigma=0.5)
    restored.load_state_dict(json.loads(json.dumps(gnmax.state_dict())))
    assert restored.metrics() == gnmax.metrics()


def test_config_rejects_bad_pate_settings_by_key() -> None:
    base = {"pate_teacher_checkpoints": "~/teachers"}
    cases = [
        ({}, "config key 'pate_teacher_checkpoints' is required"),
        ({"pate_teacher_checkpoints": []}, "config key 'pate_teacher_checkpoints' must be a path"),
        ({"pate_gamma": 0}, "config key 'pate_gamma' must be a finite number > 0.0"),
        ({"pate_delta": 1.5}, "config key 'pate_delta' must be < 1"),
        ({"pate_epsilon_budget": -1.0}, "config key 'pate_epsilon_budget'"),
        ({"pate_query_selection": "best"}, "config key 'pate_query_selection' must be one of"),
        ({"pate_budget_basis": "both"}, "config key 'pate_budget_basis' must be one of"),
        ({"pate_num_teachers": 1}, "config key 'pate_num_teachers' must be an integer >= 2"),
        ({"pate_queries_per_sample": 0}, "config key 'pate_queries_per_sample'"),
        ({"pate_label_loss_coeff": math.nan}, "config key 'pate_label_loss_coeff'"),
        ({"pate_label_replay_size": -1}, "config key 'pate_label_replay_size' must be an integer"),
        ({"pate_label_sgd_steps": 1.5}, "config key 'pate_label_sgd_steps' must be an integer"),
        (
            {"pate_label_sgd_steps": 5, "pate_label_replay_size": 0},
            "config key 'pate_label_sgd_steps' needs label replay",
        ),
        ({"callbacks_class": None}, "config key 'callbacks_class' must include"),
        ({"pate_aggregator": "rnmax"}, "config key 'pate_aggregator' must be one of"),
        ({"pate_aggregator": "gnmax"}, "config key 'pate_gnmax_sigma' is required"),
        (
            {"pate_aggregator": "confident_gnmax", "pate_gnmax_sigma": 40.0},
            "config key 'pate_confident_threshold' is required",
        ),
        (
            {"pate_aggregator": "gnmax", "pate_gnmax_sigma": 40.0, "pate_confident_sigma": 1.0},
            "config key 'pate_confident_sigma' applies to pate_aggregator confident_gnmax",
        ),
        ({"pate_gnmax_sigma": 4.0}, "config key 'pate_gnmax_sigma' applies to"),
        (
            {"pate_aggregator": "gnmax", "pate_gnmax_sigma": -1.0},
            "config key 'pate_gnmax_sigma' must be a finite number > 0.0",
        ),
        ({"pate_log_data_dependent_epsilon": "yes"}, "'pate_log_data_dependent_epsilon' must be"),
    ]
    for change, message in cases:
        config = PATEPPOConfig().environment("rllib_privacy/CartPoleGravity-v0")
        needs_base = change and "pate_teacher_checkpoints" not in change
        settings = {**base, **change} if needs_base else change
        for key, value in settings.items():
            setattr(config, key, value)
        with pytest.raises(PrivacyConfigError) as info:
            config.validate()
        assert message in str(info.value), (change, str(info.value))
    good = PATEPPOConfig().environment("rllib_privacy/CartPoleGravity-v0")
    good.update_from_dict({**base, "pate_delta": "1e-5", "pate_epsilon_budget": math.inf})
    good.validate()
    assert good.build_pate_ledger().delta == 1e-5
    assert good.pate_log_label_agreement is False  # the non-private diagnostics are off
    confident = PATEPPOConfig().environment("rllib_privacy/CartPoleGravity-v0")
    confident.update_from_dict(
        {**base, "pate_aggregator": "confident_gnmax", "pate_gnmax_sigma": 40,
         "pate_confident_threshold": 200, "pate_confident_sigma": "150"}
    )  # fmt: skip
    confident.validate()
    ledger = confident.build_pate_ledger()
    assert ledger.mechanism() == {
        "aggregator": "confident_gnmax", "sigma": 40.0, "threshold": 200.0,
        "sigma_threshold": 150.0,
    }  # fmt: skip
    with pytest.raises(PrivacyConfigError, match="did you mean 'pate_gamma'"):
        PATEPPOConfig().update_from_dict({"pate_gama": 0.1})
