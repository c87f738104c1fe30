"""PPO's torch learner with the PATE label cross-entropy (PATELabelLossMixin)."""

from __future__ import annotations

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

from rllib_privacy.learners.pate_label_loss import PATELabelLossMixin


class PATEPPOTorchLearner(PATELabelLossMixin, PPOTorchLearner):
    """PPOTorchLearner whose loss adds ``pate_label_loss_coeff`` × label cross-entropy."""
