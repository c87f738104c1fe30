"""LDPGradientPrivatizerMixin on a stock RLlib learner (PPO)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core import DEFAULT_MODULE_ID

from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.learners import LDPPPOTorchLearner, gradient_mechanism_from_config


def _learner(ldp_gradient: dict | None):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .learners(
            learner_class=LDPPPOTorchLearner,
            learner_config_dict={} if ldp_gradient is None else {"ldp_gradient": ldp_gradient},
        )
    )
    env = gym.make("CartPole-v1")
    learner = config.build_learner(env=env)
    learner.set_privatizer_rng(np.random.default_rng(0))
    return learner


def _gradients(learner, scale: float) -> dict:
    generator = torch.Generator().manual_seed(0)
    return {
        ref: scale * torch.randn(param.shape, generator=generator)
        for ref, param in learner._params.items()
    }


def _flat(grads: dict) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in grads.values()])


def test_without_a_mechanism_the_learner_is_unchanged() -> None:
    learner = _learner(None)
    grads = _gradients(learner, 1.0)
    out = learner.postprocess_gradients(dict(grads))
    torch.testing.assert_close(_flat(out), _flat(grads))


def test_whole_gradient_is_clipped_jointly_then_noised() -> None:
    clip = 0.5
    # ε so large that the noise (scale C/ε) is negligible: the output is the clipped gradient.
    learner = _learner({"name": "laplace", "epsilon": 1e9, "clip": clip})
    grads = _gradients(learner, 1.0)
    out = _flat(learner.postprocess_gradients(dict(grads)))
    raw = _flat(grads)
    assert out.abs().sum().item() == pytest.approx(clip / 2, rel=1e-4)
    cosine = torch.nn.functional.cosine_similarity(out, raw, dim=0).item()
    assert cosine > 0.999999


def test_noise_has_the_laplace_scale() -> None:
    epsilon, clip = 2.0, 0.01
    learner = _learner({"name": "laplace", "epsilon": epsilon, "clip": clip})
    grads = _gradients(learner, 0.0)  # zero gradient: the output is pure noise
    noise = _flat(learner.postprocess_gradients(dict(grads))).numpy().astype(np.float64)
    b = clip / epsilon
    # E|X| = b and Var|X| = b² for X ~ Laplace(0, b); 6-sigma band over the coordinates.
    tolerance = 6 * b / np.sqrt(noise.size)
    assert abs(np.abs(noise).mean() - b) < tolerance
    assert noise.size > 1000


def test_every_release_is_recorded_in_a_checkpointed_ledger() -> None:
    # LDPPPO once reported no epsilon at all.
    spec = {"name": "laplace", "epsilon": 0.5, "clip": 0.01}
    learner = _learner(spec)
    for scale in (1.0, 2.0, 3.0):
        learner.postprocess_gradients(_gradients(learner, scale))
    ledger = learner.privacy_ledger(DEFAULT_MODULE_ID)
    assert ledger.spent == (1.5, 0.0) and ledger.releases == 3
    assert learner.metrics.peek((DEFAULT_MODULE_ID, "privacy", "epsilon_spent")) == 1.5
    assert learner.metrics.peek((DEFAULT_MODULE_ID, "privacy", "releases")) == 3
    assert learner.metrics.peek((DEFAULT_MODULE_ID, "privacy", "delta_spent")) == 0.0
    # A restored learner continues the spent budget; a fresh one starts at 0.
    restored = _learner(spec)
    assert restored.privacy_ledger(DEFAULT_MODULE_ID).releases == 0
    restored.set_state(learner.get_state())
    restored.postprocess_gradients(_gradients(restored, 1.0))
    assert restored.privacy_ledger(DEFAULT_MODULE_ID).spent == (2.0, 0.0)
    assert restored.metrics.peek((DEFAULT_MODULE_ID, "privacy", "epsilon_spent")) == 2.0


def test_bad_mechanism_settings_are_named() -> None:
    config = PPOConfig().learners(
        learner_config_dict={"ldp_gradient": {"name": "laplace", "epsilon": -1.0, "clip": 0.01}}
    )
    with pytest.raises(PrivacyConfigError, match="epsilon"):
        gradient_mechanism_from_config(config)
    config = PPOConfig().learners(learner_config_dict={"ldp_gradient": "laplace"})
    with pytest.raises(PrivacyConfigError, match="ldp_gradient"):
        gradient_mechanism_from_config(config)


@pytest.mark.ray
def test_ppo_trains_with_the_mixin_and_reports_the_noise(ray_session, tmp_path) -> None:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .learners(
            learner_class=LDPPPOTorchLearner,
            learner_config_dict={"ldp_gradient": {"name": "laplace", "epsilon": 4.0, "clip": 0.1}},
        )
    )
    algo = config.build_algo()
    try:
        learner_results = algo.train()["learners"]["default_policy"]
        checkpoint = algo.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    assert learner_results["ldp"]["noise_scale"] == pytest.approx(0.1 / 4.0)
    privacy = learner_results["privacy"]
    assert privacy["releases"] >= 2  # 128 / 64 minibatches
    assert privacy["epsilon_spent"] == pytest.approx(4.0 * privacy["releases"])
    assert privacy["delta_spent"] == 0.0
    # The ledger is checkpointed with the learner: a restored run continues it.
    algo = config.build_algo()
    try:
        algo.restore_from_path(checkpoint)
        again = algo.train()["learners"]["default_policy"]["privacy"]
    finally:
        algo.stop()
    assert again["releases"] == 2 * privacy["releases"]
    assert again["epsilon_spent"] == pytest.approx(4.0 * again["releases"])


def test_several_ddp_learners_are_refused_before_any_noise() -> None:
    # Stock PPO with the learner class bypasses LDPPPOConfig's check: the mixin refuses too.
    learner = _learner({"name": "laplace", "epsilon": 1.0, "clip": 0.01})
    # As RLlib builds each of several DDP learners (building two here would need a process
    # group): the same learner, its config saying num_learners=2.
    config = learner.config.copy(copy_frozen=False)
    config.learners(num_learners=2)
    learner.config = config
    with pytest.raises(PrivacyConfigError, match="'num_learners' is 2"):
        learner.postprocess_gradients(_gradients(learner, 1.0))
    assert learner.privacy_ledger(DEFAULT_MODULE_ID).releases == 0
