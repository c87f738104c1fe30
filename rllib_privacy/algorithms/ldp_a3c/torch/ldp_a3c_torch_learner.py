"""PGC-A3C's loss and optimizer in torch."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.typing import ModuleID, TensorType

from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_learner import VALUE_TARGETS, LDPA3CLearner
from rllib_privacy.learners.gradient_privatizer import LDPGradientPrivatizerMixin


class LDPA3CTorchLearner(LDPGradientPrivatizerMixin, LDPA3CLearner, TorchLearner):
    """A3C loss (Ono & Takahashi eq. 15-18) with gradient privatization.

    L = Σ_t [−log π(a_t|s_t)·A_t − β·H(π(·|s_t))] + λ·Σ_t (V̂_t − V(s_t))²,
    A_t = V̂_t − V(s_t) (V detached in the policy term); β = ``entropy_coeff``,
    λ = ``vf_loss_coeff``; Σ becomes a mean when ``loss_reduction="mean"``.
    The optimizer is plain SGD (θ ← θ − lr·g, the aggregator's eq. 22) unless
    ``optimizer="adam"``.
    """

    @override(TorchLearner)
    def configure_optimizers_for_module(self, module_id: ModuleID, config: Any = None) -> None:
        """Registers SGD (paper) or Adam for the module."""
        params = self.get_parameters(self._module[module_id])
        if config.aggregator_optimizer == "adam":
            optimizer: torch.optim.Optimizer = torch.optim.Adam(params)
        else:
            optimizer = torch.optim.SGD(params)
        self.register_optimizer(
            module_id=module_id, optimizer=optimizer, params=params, lr_or_lr_schedule=config.lr
        )

    @override(Learner)
    def compute_loss_for_module(
        self,
        *,
        module_id: ModuleID,
        config: Any,
        batch: dict[str, Any],
        fwd_out: dict[str, TensorType],
    ) -> TensorType:
        """Returns the A3C loss of one local episode."""
        module = self.module[module_id].unwrapped()
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        targets = batch[VALUE_TARGETS]
        advantages = targets - values.detach()
        reduce = torch.sum if config.loss_reduction == "sum" else torch.mean
        policy_loss = -reduce(dist.logp(batch[Columns.ACTIONS]) * advantages)
        entropy = reduce(dist.entropy())
        vf_loss = reduce(torch.square(targets - values))
        total = policy_loss - config.entropy_coeff * entropy + config.vf_loss_coeff * vf_loss
        return total
