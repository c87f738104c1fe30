"""PipelinedPPO: the runners sample the next batch while the learner updates.

What the pipelining must keep from PPO: every batch is sampled by one known policy (the
learner's weights from before the previous update, never a mix), a restored algorithm never
trains on a batch sampled before the restore, and ``pipeline_sampling: false`` is PPO's step.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns

from rllib_privacy.algorithms.pipelined_ppo import PipelinedPPO, PipelinedPPOConfig
from rllib_privacy.algorithms.pipelined_ppo.pipelined_ppo import PIPELINED_METRIC
from rllib_privacy.connectors.proximal_policy import (
    BEHAVIOUR_WEIGHT_MAX,
    BEHAVIOUR_WEIGHT_MEAN,
    AddProximalPolicyToBatch,
)
from rllib_privacy.errors import PrivacyConfigError

#: Small iterations on CartPole: two remote runners, 128 env steps, two minibatches, two
#: epochs (the weights move every update), tiny networks, a fixed seed.
SMALL = {
    "num_env_runners": 2,
    "num_envs_per_env_runner": 2,
    "train_batch_size_per_learner": 128,
    "minibatch_size": 64,
    "num_epochs": 2,
    "lr": 0.01,
    "seed": 0,
}


def _configure(config: Any, **overrides: Any) -> Any:
    config.environment("CartPole-v1").rl_module(model_config={"fcnet_hiddens": [8]})
    config.update_from_dict({**SMALL, **overrides})
    return config


def _learner_module(algo: Any) -> Any:
    return algo.learner_group._learner.module[DEFAULT_MODULE_ID]


def _weights(algo: Any) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in _learner_module(algo).state_dict().items()}


def _behaviour_gap(module: Any, weights: dict[str, torch.Tensor], episodes: list[Any]) -> float:
    """Largest |stored action log-prob − log-prob of the same action under ``weights``|.

    An ended episode's last step is left out: RLlib 2.60's episodes hold the terminal
    observation in its place (the policy acted on the one before), in PPO's runners as here.
    """
    probe = copy.deepcopy(module)
    probe.load_state_dict(weights)
    gap = 0.0
    for episode in episodes:
        steps = len(episode) - int(episode.is_done)
        if steps <= 0:
            continue
        obs = np.asarray(episode.get_observations(slice(0, steps)), dtype=np.float32)
        actions = torch.as_tensor(np.asarray(episode.get_actions(slice(0, steps))))
        stored = np.asarray(episode.get_extra_model_outputs(Columns.ACTION_LOGP, slice(0, steps)))
        with torch.no_grad():
            logits = probe.forward_inference({Columns.OBS: torch.from_numpy(obs)})[
                Columns.ACTION_DIST_INPUTS
            ]
        logp = torch.log_softmax(logits, dim=-1).gather(1, actions.long()[:, None])[:, 0].numpy()
        gap = max(gap, float(np.max(np.abs(logp - stored))))
    return gap


class _RecordingPPO(PipelinedPPO):
    """Keeps the learner's weights at the start of each step and each collected batch."""

    def setup(self, config: Any) -> None:
        super().setup(config)
        self.start_weights: list[dict[str, torch.Tensor]] = []
        self.batches: list[list[Any]] = []

    def training_step(self) -> None:
        self.start_weights.append(_weights(self))
        super().training_step()

    def _collect_batch(self) -> Any:
        episodes, states, metrics = super()._collect_batch()
        self.batches.append(episodes)
        return episodes, states, metrics


# --- the config (no Ray) ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["yes", 1, None, 0.0])
def test_pipeline_sampling_must_be_a_bool(value: Any) -> None:
    config = _configure(PipelinedPPOConfig(), pipeline_sampling=value)
    with pytest.raises(PrivacyConfigError, match="'pipeline_sampling' must be true or false"):
        config.validate()


@pytest.mark.parametrize("value", ["true", 1, None])
def test_decoupled_objective_must_be_a_bool(value: Any) -> None:
    config = _configure(PipelinedPPOConfig(), pipeline_decoupled_objective=value)
    with pytest.raises(
        PrivacyConfigError, match="'pipeline_decoupled_objective' must be true or false"
    ):
        config.validate()


def test_pipelining_without_remote_runners_is_refused_naming_the_way_out() -> None:
    config = _configure(PipelinedPPOConfig(), num_env_runners=0)
    with pytest.raises(PrivacyConfigError) as info:
        config.validate()
    message = str(info.value)
    assert "'pipeline_sampling'" in message and "num_env_runners=0" in message
    assert "pipeline_sampling: false" in message
    # Without pipelining the main process samples, as PPO's does.
    _configure(PipelinedPPOConfig(), num_env_runners=0, pipeline_sampling=False).validate()


def test_the_builder_sets_the_key_and_only_pipelining_skips_rllibs_blocking_sync() -> None:
    config = _configure(PipelinedPPOConfig())
    assert config.pipeline_sampling is True
    config.validate()
    assert config._dont_auto_sync_env_runner_states is True
    config = _configure(PipelinedPPOConfig()).pipeline(pipeline_sampling=False)
    assert config.pipeline_sampling is False
    config.validate()
    assert config._dont_auto_sync_env_runner_states is False


# --- on Ray -----------------------------------------------------------------------------------


@pytest.mark.ray
def test_each_batch_is_sampled_by_the_weights_from_before_the_previous_update(
    ray_session: Any,
) -> None:
    algo = _configure(PipelinedPPOConfig(algo_class=_RecordingPPO)).build_algo()
    try:
        results = [algo.train() for _ in range(4)]
        module = _learner_module(algo)
        for index, episodes in enumerate(algo.batches):
            assert sum(len(e) for e in episodes) >= SMALL["train_batch_size_per_learner"]
            # Iteration i (from 0) trains on what the runners sampled while iteration i-1
            # updated: with the weights iteration i-1 started from (the first, W0's).
            behaviour = algo.start_weights[max(index - 1, 0)]
            assert _behaviour_gap(module, behaviour, episodes) < 1e-5, index
            if index >= 2:
                # ... and not with the weights the learner holds when it trains on it.
                newest = algo.start_weights[index]
                assert _behaviour_gap(module, newest, episodes) > 1e-3, index
    finally:
        algo.stop()
    assert all(result[PIPELINED_METRIC] == 1.0 for result in results)
    steps = [result["num_env_steps_sampled_lifetime"] for result in results]
    gains = [b - a for a, b in zip(steps, steps[1:], strict=False)]
    assert all(gain >= SMALL["train_batch_size_per_learner"] for gain in gains), gains


@pytest.mark.ray
def test_a_restore_discards_the_batch_sampled_before_it(ray_session: Any, tmp_path: Path) -> None:
    algo = _configure(PipelinedPPOConfig(algo_class=_RecordingPPO)).build_algo()
    try:
        algo.train()
        algo.save_to_path(str(tmp_path / "checkpoint"))
        saved = _weights(algo)
        for _ in range(2):
            algo.train()  # the weights move on; a batch from them is in flight
        assert any(not torch.equal(saved[k], v) for k, v in _weights(algo).items())
        algo.restore_from_path(str(tmp_path / "checkpoint"))
        algo.train()
        # The first batch after the restore comes from the restored weights only.
        assert _behaviour_gap(_learner_module(algo), saved, algo.batches[-1]) < 1e-5
    finally:
        algo.stop()


@pytest.mark.ray
def test_without_pipelining_it_is_rllibs_ppo_step(ray_session: Any) -> None:
    def train_twice(config: Any) -> dict[str, torch.Tensor]:
        algo = config.build_algo()
        try:
            algo.train()
            result = algo.train()
            assert PIPELINED_METRIC not in result
            return _weights(algo)
        finally:
            algo.stop()

    plain = train_twice(_configure(PPOConfig()))
    off = train_twice(_configure(PipelinedPPOConfig(), pipeline_sampling=False))
    for key, tensor in plain.items():
        torch.testing.assert_close(off[key], tensor, rtol=0, atol=0, msg=key)


def _pipeline_pieces(algo: Any) -> list[str]:
    return [type(piece).__name__ for piece in algo.learner_group._learner._learner_connector]


@pytest.mark.ray
def test_the_decoupled_objective_weights_samples_by_the_learners_over_the_sampling_policy(
    ray_session: Any,
) -> None:
    algo = _configure(PipelinedPPOConfig()).build_algo()  # the objective is on by default
    try:
        pieces = _pipeline_pieces(algo)
        # Last, after PPO's GAE piece: it reads the advantages GAE writes.
        assert pieces[-2:] == ["GeneralAdvantageEstimation", AddProximalPolicyToBatch.__name__]
        learner = [algo.train()["learners"][DEFAULT_MODULE_ID] for _ in range(3)]
    finally:
        algo.stop()
    largest = [result[BEHAVIOUR_WEIGHT_MAX] for result in learner]
    means = [result[BEHAVIOUR_WEIGHT_MEAN] for result in learner]
    # The first batch was sampled by the initial weights, the learner's at its first update:
    # w = 1 there checks that π_prox is the learner's policy before the update.
    assert largest[0] == pytest.approx(1.0, abs=1e-4)
    # Later batches come from one update back: the learner's policy has moved since.
    assert max(largest[1:]) > 1.0 + 1e-3, largest
    assert all(0.5 < mean < 2.0 for mean in means), means


@pytest.mark.ray
@pytest.mark.parametrize(
    "settings",
    [
        {"pipeline_sampling": False},  # no lag: the two objectives are one
        {"pipeline_decoupled_objective": False},
    ],
)
def test_the_learner_pipeline_is_ppos_without_lag_or_without_the_key(
    ray_session: Any, settings: dict[str, bool]
) -> None:
    algo = _configure(PipelinedPPOConfig(), **settings).build_algo()
    try:
        assert _pipeline_pieces(algo)[-1] == "GeneralAdvantageEstimation"
        assert AddProximalPolicyToBatch.__name__ not in _pipeline_pieces(algo)
    finally:
        algo.stop()
