"""Learner mixin: adds coeff · cross-entropy on PATE-labeled states to any TorchLearner loss."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.connectors.common import AddObservationsFromEpisodesToBatch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.annotations import override

from rllib_privacy.connectors.pate_labels import PATE_LABEL_MASK, PATE_LABELS, AddPATELabelsToBatch

__all__ = ["DEFAULT_LABEL_LOSS_COEFF", "PATELabelLossMixin"]

#: Used when neither the config attribute nor ``learner_config_dict`` sets the coefficient.
DEFAULT_LABEL_LOSS_COEFF = 1.0


class PATELabelLossMixin(TorchLearner):
    """Loss = base loss + coeff · mean cross-entropy(π_θ(·|s), noisy label) over labeled s.

    Put it before the learner class: ``class L(PATELabelLossMixin, PPOTorchLearner)``.
    ``build()`` inserts :class:`AddPATELabelsToBatch` into the learner connector (right
    after the observations are added), so labels written by the labeling callback reach
    the batch. States without a label are masked out; with no label in a batch the
    extra term is 0. The coefficient is ``config.pate_label_loss_coeff`` if the config has
    it, else ``learner_config_dict["pate_label_loss_coeff"]``, else 1.0.

    Metrics (per module, under ``learners/<module>/``): ``pate_label_loss`` and
    ``pate_labeled_fraction``.
    """

    @override(Learner)
    def build(self) -> None:
        """Builds the learner, then adds the PATE label columns to its connector."""
        super().build()
        if self._learner_connector is not None:
            self._learner_connector.insert_after(
                AddObservationsFromEpisodesToBatch, AddPATELabelsToBatch()
            )

    def _pate_label_loss_coeff(self, config: Any) -> float:
        coeff = getattr(config, "pate_label_loss_coeff", None)
        if coeff is None:
            coeff = (config.learner_config_dict or {}).get(
                "pate_label_loss_coeff", DEFAULT_LABEL_LOSS_COEFF
            )
        return float(coeff)

    @override(TorchLearner)
    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        """Adds the masked label cross-entropy to the wrapped learner's loss."""
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        if PATE_LABEL_MASK not in batch:
            return loss
        mask = batch[PATE_LABEL_MASK].float()
        cross_entropy = torch.nn.functional.cross_entropy(
            fwd_out[Columns.ACTION_DIST_INPUTS], batch[PATE_LABELS].long(), reduction="none"
        )
        labeled = mask.sum()
        label_loss = (cross_entropy * mask).sum() / labeled.clamp(min=1.0)
        self.metrics.log_dict(
            {
                "pate_label_loss": label_loss.detach(),
                "pate_labeled_fraction": (labeled / mask.numel()).detach(),
            },
            key=module_id,
            window=1,
        )
        return loss + self._pate_label_loss_coeff(config) * label_loss
