"""PPO's torch learner, with the decoupled objective when the config asks for it."""

from __future__ import annotations

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override

from rllib_privacy.connectors.proximal_policy import AddProximalPolicyToBatch


class PipelinedPPOTorchLearner(PPOTorchLearner):
    """PPOTorchLearner whose pipeline can end with ``AddProximalPolicyToBatch``.

    User guide: docs/components/pipelined-ppo.md. With ``pipeline_sampling`` and
    ``pipeline_decoupled_objective``, PPO's clip is centred on the learner's policy at the
    start of each update rather than on the (one update older) policy that sampled the
    batch, and every sample is weighted by the ratio of the two (Hilton, Cobbe & Schulman
    2021). The loss itself is PPO's. Without pipelining the two policies are the same and
    the learner is PPO's.
    """

    @override(Learner)
    def build(self) -> None:
        """Builds PPO's learner; appends the proximal-policy piece after PPO's GAE piece."""
        super().build()
        decoupled = self.config.pipeline_sampling and self.config.pipeline_decoupled_objective
        if self._learner_connector is not None and decoupled:
            self._learner_connector.append(AddProximalPolicyToBatch())
