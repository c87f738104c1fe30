"""AddProximalPolicyToBatch: the batch that makes PPO's loss the decoupled objective.

After the piece, each module's batch must hold the proximal policy's (the module's own)
log-probabilities and distribution inputs, and advantages multiplied by
w = π_prox(a|s) / π_behav(a|s), computed here independently with numpy's softmax.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rllib_privacy.connectors.proximal_policy import (
    BEHAVIOUR_WEIGHT_MAX,
    BEHAVIOUR_WEIGHT_MEAN,
    AddProximalPolicyToBatch,
)

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
ACT_SPACE = gym.spaces.Discrete(4)
ROWS = 64


def _module(seed: int) -> Any:
    torch.manual_seed(seed)
    spec = PPOConfig().get_default_rl_module_spec()
    spec.observation_space, spec.action_space = OBS_SPACE, ACT_SPACE
    spec.model_config = DefaultModelConfig(fcnet_hiddens=[16])
    module = spec.build()
    module.eval()
    return module


def _probabilities(module: Any, obs: torch.Tensor) -> np.ndarray:
    """The module's action probabilities, by numpy's softmax of its logits."""
    with torch.no_grad():
        logits = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
    logits = logits.numpy().astype(np.float64)
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _batch(behaviour: Any, seed: int = 0) -> dict[str, torch.Tensor]:
    """A PPO train batch sampled by ``behaviour``; the last 8 rows are masked out."""
    rng = np.random.default_rng(seed)
    obs = torch.as_tensor(rng.uniform(-1, 1, (ROWS, 6)), dtype=torch.float32)
    probs = _probabilities(behaviour, obs)
    actions = np.array([rng.choice(4, p=p / p.sum()) for p in probs])
    mask = np.ones(ROWS, dtype=bool)
    mask[-8:] = False
    return {
        Columns.OBS: obs,
        Columns.ACTIONS: torch.as_tensor(actions),
        Columns.ACTION_LOGP: torch.as_tensor(
            np.log(probs[np.arange(ROWS), actions]), dtype=torch.float32
        ),
        Columns.ACTION_DIST_INPUTS: torch.zeros(ROWS, 4),
        Columns.LOSS_MASK: torch.as_tensor(mask),
        Postprocessing.ADVANTAGES: torch.as_tensor(rng.normal(size=ROWS), dtype=torch.float32),
        Postprocessing.VALUE_TARGETS: torch.as_tensor(rng.normal(size=ROWS), dtype=torch.float32),
    }


def _run(modules: dict[str, Any], batch: dict[str, Any]) -> tuple[dict[str, Any], MetricsLogger]:
    metrics = MetricsLogger()
    out = AddProximalPolicyToBatch()(rl_module=modules, batch=batch, episodes=[], metrics=metrics)
    return out, metrics


def test_advantages_are_weighted_by_the_proximal_over_the_behaviour_probability() -> None:
    behaviour, proximal = _module(seed=1), _module(seed=2)
    batch = _batch(behaviour)
    original = {key: value.clone() for key, value in batch.items()}
    out, metrics = _run({"p0": proximal}, {"p0": batch})
    rows = np.arange(ROWS)
    actions = original[Columns.ACTIONS].numpy()
    prox = _probabilities(proximal, original[Columns.OBS])[rows, actions]
    behav = _probabilities(behaviour, original[Columns.OBS])[rows, actions]
    weight = prox / behav
    # The two random networks differ, so this is not the trivial w = 1.
    assert np.abs(weight - 1).max() > 0.05
    column = out["p0"]
    np.testing.assert_allclose(
        column[Postprocessing.ADVANTAGES].numpy(),
        original[Postprocessing.ADVANTAGES].numpy() * weight,
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_allclose(column[Columns.ACTION_LOGP].numpy(), np.log(prox), atol=1e-5)
    with torch.no_grad():
        logits = proximal.forward_train({Columns.OBS: original[Columns.OBS]})
    torch.testing.assert_close(
        column[Columns.ACTION_DIST_INPUTS], logits[Columns.ACTION_DIST_INPUTS]
    )
    # Value targets are not reweighted.
    torch.testing.assert_close(
        column[Postprocessing.VALUE_TARGETS], original[Postprocessing.VALUE_TARGETS]
    )
    # The reported mean and maximum cover the rows the loss uses (mask true) only.
    real = original[Columns.LOSS_MASK].numpy()
    assert metrics.peek(("p0", BEHAVIOUR_WEIGHT_MEAN)) == pytest.approx(
        weight[real].mean(), rel=1e-5
    )
    assert metrics.peek(("p0", BEHAVIOUR_WEIGHT_MAX)) == pytest.approx(weight[real].max(), rel=1e-5)


def test_a_batch_sampled_by_the_proximal_policy_keeps_ppos_objective() -> None:
    module = _module(seed=3)
    batch = _batch(module, seed=1)
    advantages = batch[Postprocessing.ADVANTAGES].clone()
    out, metrics = _run({"p0": module}, {"p0": batch})
    torch.testing.assert_close(out["p0"][Postprocessing.ADVANTAGES], advantages)
    assert metrics.peek(("p0", BEHAVIOUR_WEIGHT_MAX)) == pytest.approx(1.0, abs=1e-5)


def test_the_proximal_columns_carry_no_gradient() -> None:
    out, _ = _run({"p0": _module(seed=4)}, {"p0": _batch(_module(seed=5))})
    for column in (Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS, Postprocessing.ADVANTAGES):
        assert not out["p0"][column].requires_grad, column


def test_each_module_is_its_own_proximal_policy() -> None:
    behaviour = _module(seed=6)
    first, second = _module(seed=7), _module(seed=8)
    batch = _batch(behaviour)
    out, _ = _run(
        {"a": first, "b": second},
        {"a": {k: v.clone() for k, v in batch.items()}, "b": batch},
    )
    actions = batch[Columns.ACTIONS].numpy()
    for module_id, module in (("a", first), ("b", second)):
        expected = np.log(_probabilities(module, batch[Columns.OBS])[np.arange(ROWS), actions])
        np.testing.assert_allclose(out[module_id][Columns.ACTION_LOGP].numpy(), expected, atol=1e-5)


@pytest.mark.parametrize("column", [Columns.ACTION_LOGP, Postprocessing.ADVANTAGES])
def test_a_batch_without_the_needed_columns_is_refused_naming_them(column: str) -> None:
    batch = _batch(_module(seed=9))
    del batch[column]
    with pytest.raises(ValueError, match=f"missing \\['{column}'\\]"):
        _run({"p0": _module(seed=9)}, {"p0": batch})
