"""LDPA3C's loss and optimizer in torch."""

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


def _clip(flat: torch.Tensor, *, bound: float, norm: str) -> torch.Tensor:
    """``flat`` scaled to L1 or L2 norm at most ``bound`` (zeros for a bound of 0)."""
    if bound <= 0:
        return torch.zeros_like(flat)
    if norm == "l1":
        return clip_l1(flat, bound=bound)
    return flat / torch.clamp(flat.norm() / bound, min=1.0)


def a3c_loss_parts(
    *,
    logp: torch.Tensor,
    entropy: torch.Tensor,
    values: torch.Tensor,
    targets: torch.Tensor,
    config: Any,
    mask: torch.Tensor | None = None,
    num_episodes: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The policy part and the value part of the A3C loss of one local agent.

    policy = Σ_t [−log π(a_t|s_t)·A_t − β·H(π(·|s_t))], value = λ·Σ_t (V̂_t − V(s_t))²
    with A_t = V̂_t − V(s_t) (V detached in the policy term). Σ is a sum over the steps
    divided by ``num_episodes`` (``agents_loss_reduction: sum``, the paper's, per episode) or a
    mean over the steps (``mean``). ``mask`` (1 = a real step, 0 = padding) lets a fleet
    of agents with episodes of different lengths share one padded tensor. With
    ``agents_normalize_advantages`` the A_t of the agent's own steps are shifted and scaled to
    zero mean and unit variance (this agent's data only, so the release stays its own).
    """
    advantages = targets - values.detach()
    if mask is None:
        mask = torch.ones_like(values)
    if config.agents_normalize_advantages:
        # Over this agent's own steps only: zero mean, unit variance.
        steps = mask.sum()
        mean = (advantages * mask).sum() / steps
        std = torch.sqrt((torch.square(advantages - mean) * mask).sum() / steps)
        advantages = (advantages - mean) / (std + 1e-6)
    denominator = mask.sum() if config.agents_loss_reduction == "mean" else float(num_episodes)

    def reduce(x: torch.Tensor) -> torch.Tensor:
        return (x * mask).sum() / denominator

    policy_part = -reduce(logp * advantages) - config.entropy_coeff * reduce(entropy)
    value_part = config.vf_loss_coeff * reduce(torch.square(targets - values))
    return policy_part, value_part


class LDPA3CTorchLearner(LDPGradientPrivatizerMixin, LDPA3CLearner, TorchLearner):
    """A3C loss (Ono & Takahashi eq. 15-18) with gradient privatization.

    L = Σ_t [−log π(a_t|s_t)·A_t − β·H(π(·|s_t))] + λ·Σ_t (V̂_t − V(s_t))²,
    A_t = V̂_t − V(s_t) (V detached in the policy term); β = ``entropy_coeff``,
    λ = ``vf_loss_coeff``; Σ becomes a mean when ``agents_loss_reduction="mean"``.
    The optimizer is plain SGD (θ ← θ − lr·g, the aggregator's eq. 22) unless
    ``aggregator_optimizer="adam"``.

    With ``privacy_policy_clip_share=ρ`` the gradients of the policy part (policy loss and
    entropy) and of the value part are clipped separately before the mechanism, to
    L1 norms ρ·C/2 and (1−ρ)·C/2 (L2 norms ρ·C and (1−ρ)·C for the PrivUnit mechanisms,
    whose C bounds the L2 norm). Their sum still has norm ≤ C/2 (C), so the
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
        policy_part, value_part = a3c_loss_parts(
            logp=dist.logp(batch[Columns.ACTIONS]),
            entropy=dist.entropy(),
            values=values,
            targets=batch[VALUE_TARGETS],
            config=config,
        )
        if config.privacy_policy_clip_share is not None:
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
        share = self.config.privacy_policy_clip_share
        if share is None:
            grads = super().compute_gradients(loss_per_module, **kwargs)
        else:
            grads = self._part_clipped_gradients(loss_per_module, share)
        if self.config.privacy_zero_signal_control:
            # The no-signal control: the mechanism then privatizes zeros.
            grads = {ref: torch.zeros_like(g) for ref, g in grads.items()}
        return grads

    def _part_clipped_gradients(
        self, loss_per_module: dict[ModuleID, TensorType], share: float
    ) -> dict[Any, torch.Tensor]:
        bound, norm = self.config.policy_clip
        grads = {}
        for module_id in loss_per_module:
            policy_part, value_part = self._loss_parts.pop(module_id)
            params = [p for p in self.module[module_id].parameters() if p.requires_grad]
            parts = []
            for loss, part_bound in (
                (policy_part, share * bound),
                (value_part, (1 - share) * bound),
            ):
                part = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
                flat = torch.cat(
                    [
                        (torch.zeros_like(p) if g is None else g).reshape(-1)
                        for p, g in zip(params, part, strict=True)
                    ]
                )
                parts.append(_clip(flat, bound=part_bound, norm=norm))
            flat_sum, offset = parts[0] + parts[1], 0
            for param in params:
                grads[self.get_param_ref(param)] = flat_sum[
                    offset : offset + param.numel()
                ].view_as(param)
                offset += param.numel()
        return grads
