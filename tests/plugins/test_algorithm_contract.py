"""The checkpoint contract of every algorithm the package registers with Tune.

Like Stable-Baselines3's save/load tests: one tiny iteration, ``save_to_path``, a freshly
built instance ``restore_from_path``, then the same RLModule weights, the same ε spent
(where the algorithm keeps a ledger) and the same greedy actions for a fixed batch of
observations. A newly registered algorithm fails here until it has a case in ``CASES``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import ray
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from test_pate_ppo_units import save_teacher

from rllib_privacy import _registration
from rllib_privacy.algorithms.count_exploration import ExplorationDQNConfig, ExplorationPPOConfig
from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig
from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
from rllib_privacy.algorithms.ldp_ppo import LDPPPOConfig
from rllib_privacy.algorithms.pate_ppo import PATEPPOConfig
from rllib_privacy.algorithms.pipelined_ppo import PipelinedPPOConfig

pytestmark = pytest.mark.ray

CARTPOLE = "CartPole-v1"
#: Every case: no remote EnvRunner, a fixed seed.
LOCAL = {"num_env_runners": 0, "seed": 0}
#: One small PPO iteration: 64 env steps, 2 minibatches, 1 epoch, tiny networks.
TINY_PPO = {
    "train_batch_size_per_learner": 64,
    "minibatch_size": 32,
    "num_epochs": 1,
    **LOCAL,
}
COUNTS = {"count_exploration_config": {"num_bits": 16, "beta": 0.5}}


def _config(config: Any, env: str, settings: dict[str, Any], *, tiny_model: bool = True) -> Any:
    config.environment(env)
    if tiny_model:
        config.rl_module(model_config={"fcnet_hiddens": [8]})
    config.update_from_dict(settings)
    return config


def _ldp_a3c(teachers: list[str]) -> Any:
    settings = {
        **LOCAL,
        "privacy_epsilon": 1.0,
        # 6 submissions, an update every 2: θ moves three times.
        "aggregator_submissions_per_iteration": 6,
        "aggregator_max_buffer": 2,
        "scoring_eval_episodes": 0,
    }
    # The paper's own small network (d = 112), not an fcnet.
    return _config(LDPA3CConfig(), "rllib_privacy/CartPoleGravity-v0", settings, tiny_model=False)


def _ldp_ppo(teachers: list[str]) -> Any:
    settings = {**TINY_PPO, "privacy_epsilon": 2.0, "privacy_clip": 0.1}
    return _config(LDPPPOConfig(), CARTPOLE, settings)


def _kickstart_ppo(teachers: list[str]) -> Any:
    teacher = {
        "teacher_checkpoint": teachers[0],
        "teacher_k": 50.0,
        "teacher_eta": 0.1,
        "teacher_tau": 1e-3,
        "teacher_seed": 0,
        "teacher_epsilon_budget": math.inf,
    }
    return _config(KickstartPPOConfig(), CARTPOLE, {**TINY_PPO, **teacher})


def _pate_ppo(teachers: list[str]) -> Any:
    pate = {
        "pate_teacher_checkpoints": teachers,
        "pate_gamma": 0.5,
        "pate_epsilon_budget": math.inf,
        "pate_max_queries": 40,
        "pate_query_selection": "all",
        "pate_queries_per_sample": None,
    }
    return _config(PATEPPOConfig(), "rllib_privacy/CartPoleGravity-v0", {**TINY_PPO, **pate})


def _pipelined_ppo(teachers: list[str]) -> Any:
    # Pipelining needs a remote EnvRunner: a request is in flight when the checkpoint is taken.
    settings = {**TINY_PPO, "num_env_runners": 1}
    return _config(PipelinedPPOConfig(), CARTPOLE, settings)


def _exploration_ppo(teachers: list[str]) -> Any:
    return _config(ExplorationPPOConfig(), CARTPOLE, {**TINY_PPO, **COUNTS})


def _exploration_dqn(teachers: list[str]) -> Any:
    settings = {
        "train_batch_size_per_learner": 16,
        "num_steps_sampled_before_learning_starts": 0,
        "min_sample_timesteps_per_iteration": 32,
        "rollout_fragment_length": 8,
        **LOCAL,
        **COUNTS,
    }
    return _config(ExplorationDQNConfig(), CARTPOLE, settings)


def _local_learner(algo: Any) -> Any:
    return algo.learner_group._learner


@dataclass(frozen=True)
class Case:
    """How to build one algorithm small, and where it keeps its ε (None: no ledger)."""

    config: Callable[[list[str]], Any]
    epsilon_spent: Callable[[Any], float] | None


CASES: dict[str, Case] = {
    "LDPA3C": Case(_ldp_a3c, lambda algo: algo._ledger.max_epsilon_spent),
    "LDPPPO": Case(
        _ldp_ppo, lambda algo: _local_learner(algo).privacy_ledger(DEFAULT_MODULE_ID).spent[0]
    ),
    # The teacher runs as a Ray actor; stats() asks it.
    "KickstartPPO": Case(_kickstart_ppo, lambda algo: algo._teacher.stats()["epsilon_spent"]),
    # So does the PATE labeler; its publishable ε is the data-independent one.
    "PATEPPO": Case(
        _pate_ppo,
        lambda algo: ray.get(algo._labeler.metrics.remote())["epsilon_data_independent"],
    ),
    "PipelinedPPO": Case(_pipelined_ppo, None),
    "ExplorationPPO": Case(_exploration_ppo, None),
    "ExplorationDQN": Case(_exploration_dqn, None),
}


def _registered_algorithms(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The names ``register_all`` hands to Tune's ``register_trainable``, recorded."""
    import ray.tune.registry

    names: set[str] = set()
    monkeypatch.setattr(ray.tune.registry, "register_env", lambda *args, **kwargs: None)
    monkeypatch.setattr(
        ray.tune.registry, "register_trainable", lambda name, *args, **kwargs: names.add(name)
    )
    # Both restored afterwards: the real registrations stay as they were.
    monkeypatch.setattr(_registration, "_registered", False)
    monkeypatch.setattr(_registration, "_registered_in", None)
    _registration.register_all()
    return names


def test_every_registered_algorithm_has_a_contract_case(monkeypatch: pytest.MonkeyPatch) -> None:
    registered = _registered_algorithms(monkeypatch)
    assert registered == set(CASES), "add a case to CASES for each registered algorithm"
    assert set(_registration.ALGORITHM_NAMES) == registered


@pytest.fixture(scope="module")
def teachers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Three random CartPole PPO RLModules: PATE's ensemble, and KickstartPPO's teacher."""
    root = tmp_path_factory.mktemp("teachers")
    return [str(save_teacher(root / f"t{i}", seed=i)) for i in range(3)]


def _learner_weights(algo: Any) -> dict[str, dict[str, torch.Tensor]]:
    """Every RLModule's state dict in the (local) learner, the trained and saved copy."""
    multi = _local_learner(algo).module
    return {
        mid: {k: v.detach().clone() for k, v in multi[mid].state_dict().items()}
        for mid in multi.keys()
    }


def _greedy_actions(algo: Any, observations: np.ndarray) -> np.ndarray:
    """The learner module's greedy actions: forward_inference, argmax of its logits or Q-values."""
    module = _local_learner(algo).module[DEFAULT_MODULE_ID]
    with torch.no_grad():
        out = module.forward_inference({Columns.OBS: torch.from_numpy(observations)})
    if Columns.ACTION_DIST_INPUTS in out:
        return out[Columns.ACTION_DIST_INPUTS].argmax(dim=-1).numpy()
    return np.asarray(out[Columns.ACTIONS])  # DQN: argmax of the Q-values already


@pytest.mark.parametrize("name", _registration.ALGORITHM_NAMES)
def test_save_restore_round_trip(
    name: str, ray_session: Any, teachers: list[str], tmp_path: Path
) -> None:
    assert name in CASES, f"{name} is registered but has no contract case"
    case = CASES[name]
    config = case.config(teachers)
    algo = config.build_algo()
    try:
        result = algo.train()
        algo.save_to_path(str(tmp_path / "checkpoint"))
        weights = _learner_weights(algo)
        space = _local_learner(algo).module[DEFAULT_MODULE_ID].observation_space
        rng = np.random.default_rng(0)
        observations = rng.uniform(-0.5, 0.5, (32, *space.shape)).astype(np.float32)
        actions = _greedy_actions(algo, observations)
        spent = None if case.epsilon_spent is None else case.epsilon_spent(algo)
    finally:
        algo.stop()
    if spent is None:
        assert "privacy" not in result, f"{name} reports ε: give its case an epsilon_spent"
    else:
        assert 0 < spent == result["privacy"]["epsilon_spent"]

    restored = config.build_algo()
    try:
        # Same seed, same initial θ: the iteration must have moved it, or equality proves nothing.
        fresh = _learner_weights(restored)[DEFAULT_MODULE_ID]
        state = weights[DEFAULT_MODULE_ID]
        assert any(not torch.equal(fresh[key], state[key]) for key in state), "θ did not move"
        restored.restore_from_path(str(tmp_path / "checkpoint"))
        after = _learner_weights(restored)
        assert after.keys() == weights.keys()
        for mid, saved in weights.items():
            assert after[mid].keys() == saved.keys(), mid
            for key, tensor in saved.items():
                assert torch.equal(after[mid][key], tensor), f"{mid}/{key} differs after restore"
        if case.epsilon_spent is not None:
            assert case.epsilon_spent(restored) == spent
        np.testing.assert_array_equal(_greedy_actions(restored, observations), actions)
    finally:
        restored.stop()
