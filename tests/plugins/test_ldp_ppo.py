"""LDPPPO: the LDP learner as an algorithm with ``.privacy()`` keys and top-level ε.

LDPPPO once reported no ε at the top level and could not run from a YAML file.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from cli_helpers import scalar_tags, train_one_iteration
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core import DEFAULT_MODULE_ID

from rllib_privacy.algorithms.ldp_ppo import LDPPPO, LDPPPOConfig
from rllib_privacy.errors import BudgetExhaustedError, PrivacyConfigError
from rllib_privacy.learners import LDPPPOTorchLearner
from rllib_privacy.mechanisms import GradientMechanism

REPO = Path(__file__).resolve().parents[2]
YAML = "tuned_configs/ldp_ppo_cartpole.yaml"
#: One tiny iteration: 200 env steps, minibatches of 100, one epoch, no remote EnvRunner.
TINY = {
    "train_batch_size_per_learner": 200,
    "minibatch_size": 100,
    "num_epochs": 1,
    "num_env_runners": 0,
}


def _config(**privacy: Any) -> LDPPPOConfig:
    return LDPPPOConfig().environment("CartPole-v1").privacy(**privacy)


# --- the config -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("privacy", "key"),
    [
        ({"privacy_mechanism": "gauss"}, "privacy_mechanism"),
        ({"privacy_epsilon": 0}, "privacy_epsilon"),
        ({"privacy_epsilon": -1.0}, "privacy_epsilon"),
        ({"privacy_epsilon": math.nan}, "privacy_epsilon"),
        ({"privacy_epsilon": "5"}, "privacy_epsilon"),
        ({"privacy_epsilon": True}, "privacy_epsilon"),
        ({"privacy_mechanism": "none"}, "privacy_epsilon"),  # none needs ε = inf
        ({"privacy_clip": 0.0}, "privacy_clip"),
        ({"privacy_clip": math.inf}, "privacy_clip"),
        ({"privacy_reduced_dim": 3}, "privacy_reduced_dim"),  # PRS only
        ({"privacy_mechanism": "prs", "privacy_reduced_dim": 0}, "privacy_reduced_dim"),
        ({"privacy_debias": True}, "privacy_debias"),  # PRS only
        ({"privacy_mechanism": "prs", "privacy_debias": 1}, "privacy_debias"),
        ({"privacy_secure_mode": "yes"}, "privacy_secure_mode"),
        ({"privacy_epsilon_budget": 0.0}, "privacy_epsilon_budget"),
        ({"privacy_epsilon_budget": -math.inf}, "privacy_epsilon_budget"),
    ],
)
def test_bad_privacy_value_is_rejected_naming_the_key(privacy: dict, key: str) -> None:
    config = _config(**privacy)
    with pytest.raises(PrivacyConfigError) as info:
        config.validate()
    assert re.search(rf"config key '{key}'", str(info.value)), str(info.value)


def test_settings_that_would_bypass_the_noise_are_rejected() -> None:
    with pytest.raises(PrivacyConfigError, match="'num_learners'"):
        _config().learners(num_learners=2).validate()
    with pytest.raises(PrivacyConfigError, match="'learner_config_dict'.*privacy_"):
        _config().learners(
            learner_config_dict={"ldp_gradient": {"name": "laplace", "epsilon": 1, "clip": 1}}
        ).validate()
    with pytest.raises(PrivacyConfigError, match="'learner_class'.*no gradient noise"):
        _config().learners(learner_class=PPOTorchLearner).validate()


def test_privacy_builder_sets_what_it_documents() -> None:
    config = LDPPPOConfig()
    doc = inspect.getdoc(LDPPPOConfig.privacy) or ""
    given = {
        "privacy_mechanism": "prs",
        "privacy_epsilon": 3.0,
        "privacy_clip": 0.5,
        "privacy_reduced_dim": 2,
        "privacy_debias": True,
        "privacy_secure_mode": True,
        "privacy_epsilon_budget": 60.0,
    }
    assert set(inspect.signature(LDPPPOConfig.privacy).parameters) - {"self"} == set(given)
    assert config.privacy(**given) is config
    for key, value in given.items():
        assert f"{key}:" in doc, key
        assert getattr(config, key) == value, key
    config.environment("CartPole-v1").validate()
    assert config.get_gradient_mechanism() == GradientMechanism(
        name="prs", epsilon=3.0, clip=0.5, reduced_dim=2, debias=True, secure_mode=True
    )


def test_defaults_are_laplace_with_the_papers_clip_and_no_budget() -> None:
    config = LDPPPOConfig()
    assert config.algo_class is LDPPPO
    assert config.learner_class is LDPPPOTorchLearner
    assert config.get_gradient_mechanism() == GradientMechanism(
        name="laplace", epsilon=1.0, clip=0.01
    )
    assert config.privacy_epsilon_budget == math.inf
    assert _config(privacy_mechanism="privunitg").effective_clip == 1.0


def test_yaml_config_keys_reach_the_mechanism_and_typos_are_named() -> None:
    config = LDPPPOConfig()
    config.update_from_dict({"privacy_mechanism": "privunit2", "privacy_epsilon": 2.0})
    assert config.get_gradient_mechanism().name == "privunit2"
    assert config.get_gradient_mechanism().epsilon == 2.0
    with pytest.raises(PrivacyConfigError, match="did you mean 'privacy_epsilon'"):
        LDPPPOConfig().update_from_dict({"privacy_epsilom": 2.0})


def test_the_bare_learner_class_still_reads_learner_config_dict() -> None:
    config = PPOConfig().learners(
        learner_class=LDPPPOTorchLearner,
        learner_config_dict={"ldp_gradient": {"name": "laplace", "epsilon": 4.0, "clip": 0.1}},
    )
    learner = config.build_learner(env=gym.make("CartPole-v1"))
    assert learner.gradient_mechanism_for_module(DEFAULT_MODULE_ID, config).epsilon == 4.0


# --- the learner it builds --------------------------------------------------------------------


def _learner(config: LDPPPOConfig) -> LDPPPOTorchLearner:
    learner = config.build_learner(env=gym.make("CartPole-v1"))
    learner.set_privatizer_rng(np.random.default_rng(0))
    return learner


def _zero_gradients(learner: LDPPPOTorchLearner) -> dict:
    return {ref: torch.zeros_like(param) for ref, param in learner._params.items()}


def test_learner_uses_the_configs_privacy_keys() -> None:
    learner = _learner(_config(privacy_epsilon=2.0, privacy_clip=0.1))
    learner.postprocess_gradients(_zero_gradients(learner))
    ledger = learner.privacy_ledger(DEFAULT_MODULE_ID)
    assert ledger.spent == (2.0, 0.0) and ledger.releases == 1
    assert learner.metrics.peek((DEFAULT_MODULE_ID, "ldp", "noise_scale")) == pytest.approx(0.05)


def test_an_update_beyond_the_budget_is_refused_before_it_is_noised() -> None:
    learner = _learner(_config(privacy_epsilon=1.0, privacy_epsilon_budget=2.5))
    for _ in range(2):
        learner.postprocess_gradients(_zero_gradients(learner))
    with pytest.raises(BudgetExhaustedError, match="privacy_epsilon_budget 2.5"):
        learner.postprocess_gradients(_zero_gradients(learner))
    assert learner.privacy_ledger(DEFAULT_MODULE_ID).releases == 2
    # Releases that exactly fill the budget are allowed (the ledger's own slack).
    exact = _learner(_config(privacy_epsilon=1.0 / 3.0, privacy_epsilon_budget=1.0))
    for _ in range(3):
        exact.postprocess_gradients(_zero_gradients(exact))
    assert exact.privacy_ledger(DEFAULT_MODULE_ID).releases == 3


class _Metrics:
    def __init__(self, learners: dict) -> None:
        self.learners = learners

    def peek(self, key: Any, default: Any = None) -> Any:
        return self.learners


class _Algo:
    def __init__(self, learners: dict, mechanism: str = "laplace") -> None:
        self.metrics = _Metrics(learners)
        self.config = LDPPPOConfig().privacy(privacy_mechanism=mechanism)


def test_several_modules_report_the_max_epsilon_and_the_sum_of_releases() -> None:
    learners = {
        "a": {"privacy": {"epsilon_spent": 3.0, "delta_spent": 0.0, "releases": 3}},
        "b": {"privacy": {"epsilon_spent": 5.0, "delta_spent": 1e-6, "releases": 10}},
        "__all_modules__": {"num_trainable_parameters": 4},
    }
    figures = LDPPPO._privacy_figures(_Algo(learners))  # type: ignore[arg-type]
    assert figures == {"epsilon_spent": 5.0, "delta_spent": 1e-6, "releases": 13}
    none = LDPPPO._privacy_figures(_Algo({}, mechanism="none"))  # type: ignore[arg-type]
    assert none["epsilon_spent"] == math.inf and none["releases"] == 0


# --- runs -------------------------------------------------------------------------------------


@pytest.mark.ray
def test_one_iteration_reports_top_level_epsilon_and_a_restore_continues_it(
    ray_session, tmp_path: Path
) -> None:
    epsilon = 2.0
    config = (
        _config(privacy_epsilon=epsilon, privacy_clip=0.1)
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
    )
    algo = config.build_algo()
    try:
        result = algo.train()
        checkpoint = algo.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    assert list(result)[:3] == ["episode_return_mean", "epsilon_spent", "releases"]
    privacy = result["privacy"]
    releases = int(privacy["releases"])
    assert releases >= 2  # 200 steps in minibatches of 100
    assert privacy["epsilon_spent"] > 0
    assert privacy["epsilon_spent"] == pytest.approx(epsilon * releases)
    assert privacy["delta_spent"] == 0.0
    assert result["epsilon_spent"] == privacy["epsilon_spent"]
    assert result["releases"] == releases
    assert result["privacy"] == pytest.approx(result["learners"][DEFAULT_MODULE_ID]["privacy"])
    assert result["timesteps_total"] >= 200
    # A restored algorithm continues the spent ε; it never starts again from 0.
    algo = config.build_algo()
    try:
        algo.restore_from_path(checkpoint)
        again = algo.train()["privacy"]
    finally:
        algo.stop()
    # At least 2 updates in this iteration on top of the restored count (a reset would
    # report this iteration's updates alone, about as many as the first).
    assert again["releases"] >= releases + 2
    assert again["epsilon_spent"] == pytest.approx(epsilon * again["releases"])


@pytest.mark.ray
@pytest.mark.slow
def test_shipped_yaml_runs_one_iteration_through_rllib_train(tmp_path: Path) -> None:
    result = train_one_iteration(YAML, tmp_path, TINY)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    tags = scalar_tags(tmp_path)
    for tag in ("privacy/epsilon_spent", "privacy/releases", "epsilon_spent", "releases"):
        assert f"ray/tune/{tag}" in tags, tag
    rows = [
        json.loads(line) for line in next(tmp_path.rglob("result.json")).read_text().splitlines()
    ]
    assert rows[-1]["privacy"]["epsilon_spent"] == pytest.approx(5.0 * rows[-1]["releases"])
