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
from rllib_privacy.mechanisms import clip_l1


class LDPA3CTorchLearner(LDPGradientPrivatizerMixin, LDPA3CLearner, TorchLearner):
    """A3C loss (Ono & Takahashi eq. 15-18) with gradient privatization.

    L = Σ_t [−log π(a_t|s_t)·A_t − β·H(π(·|s_t))] + λ·Σ_t (V̂_t − V(s_t))²,
    A_t = V̂_t − V(s_t) (V detached in the policy term); β = ``entropy_coeff``,
    λ = ``vf_loss_coeff``; Σ becomes a mean when ``loss_reduction="mean"``.
    The optimizer is plain SGD (θ ← θ − lr·g, the aggregator's eq. 22) unless
    ``aggregator_optimizer="adam"``.

    With ``policy_clip_share=ρ`` the gradients of the policy part (policy loss and
    entropy) and of the value part are clipped separately before the mechanism, to
    L1 norms ρ·C/2 and (1−ρ)·C/2. Their sum still has L1 norm ≤ C/2, so the
    mechanism's sensitivity and ε are unchanged; what changes is that the value
    gradient can no longer crowd the policy gradient out of the joint clip.
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
        policy_part = policy_loss - config.entropy_coeff * entropy
        value_part = config.vf_loss_coeff * vf_loss
        if config.policy_clip_share is not None:
            # compute_gradients() differentiates the two parts separately.
            self._loss_parts[module_id] = (policy_part, value_part)
        return policy_part + value_part

    @override(TorchLearner)
    def build(self) -> None:
        """Builds the learner and the per-module store of loss parts."""
        super().build()
        self._loss_parts: dict[ModuleID, tuple[torch.Tensor, torch.Tensor]] = {}

    @override(TorchLearner)
    def compute_gradients(self, loss_per_module: dict[ModuleID, TensorType], **kwargs: Any) -> Any:
        """Plain backward pass, or separately pre-clipped policy and value gradients."""
        share = self.config.policy_clip_share
        if share is None:
            return super().compute_gradients(loss_per_module, **kwargs)
        half_clip = self.config.effective_clip / 2.0
        grads = {}
        for module_id in loss_per_module:
            policy_part, value_part = self._loss_parts.pop(module_id)
            params = [p for p in self.module[module_id].parameters() if p.requires_grad]
            parts = []
            for loss, bound in (
                (policy_part, share * half_clip),
                (value_part, (1 - share) * half_clip),
            ):
                part = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
                flat = torch.cat(
                    [
                        (torch.zeros_like(p) if g is None else g).reshape(-1)
                        for p, g in zip(params, part, strict=True)
                    ]
                )
                parts.append(clip_l1(flat, bound=bound) if bound > 0 else torch.zeros_like(flat))
            flat_sum, offset = parts[0] + parts[1], 0
            for param in params:
                grads[self.get_param_ref(param)] = flat_sum[
                    offset : offset + param.numel()
                ].view_as(param)
                offset += param.numel()
        return grads
