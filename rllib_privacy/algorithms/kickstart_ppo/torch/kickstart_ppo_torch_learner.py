"""PPO's torch learner with the (privacy-aware) kickstart term."""

from __future__ import annotations

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

from rllib_privacy.learners.kickstart_loss import KickstartLossMixin


class KickstartPPOTorchLearner(KickstartLossMixin, PPOTorchLearner):
    """PPOTorchLearner whose loss adds ``kickstart_coeff · mean φ_λ``.

    User guide: docs/components/kickstarting.md.

    The teacher connector is appended after PPO's GAE piece, so the teacher is asked
    once per collected sample, before the batch is split into epochs and minibatches.
    """
