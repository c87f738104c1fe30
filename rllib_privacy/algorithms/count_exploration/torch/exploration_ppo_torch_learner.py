"""PPO's torch learner with the count-based exploration bonus."""

from __future__ import annotations

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

from rllib_privacy.learners.count_exploration import CountExplorationLearnerMixin


class ExplorationPPOTorchLearner(CountExplorationLearnerMixin, PPOTorchLearner):
    """PPOTorchLearner whose learner connector adds r⁺ = β·f(n(φ(s))) to the rewards."""
