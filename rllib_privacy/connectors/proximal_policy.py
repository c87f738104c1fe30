"""Learner connector: PPO's decoupled objective for a batch sampled by an older policy.

Hilton, Cobbe & Schulman, "Batch size-invariance for policy optimization" (2021,
arXiv:2110.00641; NeurIPS 2022): PPO's clipped objective uses the behaviour policy π_behav
(the one that acted) twice, as the centre of the clip and as the importance-sampling
denominator. The decoupled objective keeps the importance weight against π_behav but clips around a
*proximal* policy π_prox, here the learner's policy at the start of the update::

    L(θ) = E_behav[ w · min(r_θ A, clip(r_θ, 1 − ε, 1 + ε) A) ],
    w = π_prox(a|s) / π_behav(a|s),   r_θ = π_θ(a|s) / π_prox(a|s).

Since w > 0 it factors out of the ``min``, so PPO's own loss computes L unchanged once the
batch carries π_prox's log-probabilities and action-distribution inputs (the KL term then
also measures the distance from π_prox) and advantages multiplied by w. When π_prox = π_behav
(RLlib's PPO step, no lag) w = 1 and the objective is PPO's.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override

__all__ = [
    "BEHAVIOUR_WEIGHT_MAX",
    "BEHAVIOUR_WEIGHT_MEAN",
    "AddProximalPolicyToBatch",
]

#: Learner result (per module): the mean of w = π_prox/π_behav over the batch.
BEHAVIOUR_WEIGHT_MEAN = "decoupled_behaviour_weight_mean"
#: Learner result (per module): the largest w in the batch.
BEHAVIOUR_WEIGHT_MAX = "decoupled_behaviour_weight_max"

_NEEDED_COLUMNS = (Columns.ACTIONS, Columns.ACTION_LOGP, Postprocessing.ADVANTAGES)


class AddProximalPolicyToBatch(ConnectorV2):
    """Rewrites a PPO train batch so that PPO's loss is the decoupled objective.

    Append it after the piece that computes the advantages (PPO's GAE); every column it
    reads must already be a tensor. Per module it runs one ``forward_train`` without
    gradients, with the learner's weights before the update (π_prox), and:

    - stores π_prox's ``action_dist_inputs`` and ``action_logp`` in place of the behaviour
      policy's;
    - multiplies ``advantages`` by w = exp(log π_prox − log π_behav), unclipped as in the
      paper (with one update of lag, w stays near 1: the learner results report its mean
      and maximum).

    Value targets are left as they are. Stateless.
    """

    @override(ConnectorV2)
    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Replaces the behaviour policy's columns with π_prox's in every module's batch."""
        for module_id, module_batch in batch.items():
            missing = [column for column in _NEEDED_COLUMNS if column not in module_batch]
            if missing:
                raise ValueError(
                    f"the decoupled objective needs the columns {list(_NEEDED_COLUMNS)} in "
                    f"module {module_id!r}'s train batch, missing {missing}: append "
                    "AddProximalPolicyToBatch after the advantages are computed"
                )
            module = rl_module[module_id]
            with torch.no_grad():
                dist_inputs = module.forward_train(module_batch)[Columns.ACTION_DIST_INPUTS]
                proximal_logp = (
                    module.get_train_action_dist_cls()
                    .from_logits(dist_inputs)
                    .logp(module_batch[Columns.ACTIONS])
                )
            weight = torch.exp(proximal_logp - module_batch[Columns.ACTION_LOGP])
            module_batch[Postprocessing.ADVANTAGES] *= weight
            module_batch[Columns.ACTION_LOGP] = proximal_logp
            module_batch[Columns.ACTION_DIST_INPUTS] = dist_inputs
            if metrics is not None:
                real = module_batch.get(Columns.LOSS_MASK)
                counted = weight if real is None else weight[real.bool()]
                if counted.numel():
                    metrics.log_value(
                        (module_id, BEHAVIOUR_WEIGHT_MEAN), counted.mean().item(), window=1
                    )
                    metrics.log_value(
                        (module_id, BEHAVIOUR_WEIGHT_MAX), counted.max().item(), window=1
                    )
        return batch
