"""Learner mixin: adds coeff · cross-entropy on PATE-labeled states to any TorchLearner loss."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.connectors.common import AddObservationsFromEpisodesToBatch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.annotations import override

from rllib_privacy.connectors.pate_labels import PATE_LABEL_MASK, PATE_LABELS, AddPATELabelsToBatch

__all__ = ["DEFAULT_LABEL_LOSS_COEFF", "DEFAULT_LABEL_REPLAY_SIZE", "PATELabelLossMixin"]

#: Used when neither the config attribute nor ``learner_config_dict`` sets the coefficient.
DEFAULT_LABEL_LOSS_COEFF = 1.0
#: Labeled states replayed per minibatch when the config does not say (0: no replay).
DEFAULT_LABEL_REPLAY_SIZE = 256
#: Learner-state key of the remembered labels (part of every Algorithm checkpoint).
_LABEL_SET_STATE = "pate_label_set"


class PATELabelLossMixin(TorchLearner):
    """Loss = base loss + coeff · mean cross-entropy(π_θ(·|s), noisy label) over labeled s.

    Put it before the learner class: ``class L(PATELabelLossMixin, PPOTorchLearner)``.
    ``build()`` inserts ``AddPATELabelsToBatch`` into the learner connector (right
    after the observations are added), so labels written by the labeling callback reach
    the batch.

    **Label replay** (``pate_label_replay_size`` > 0, the default): every label that reaches
    a module's batch is remembered for that module (one entry per distinct state), and each
    minibatch's label term is the cross-entropy over up to ``pate_label_replay_size``
    remembered labels (all of them while there are fewer, else a uniform sample). A PATE
    budget buys tens to hundreds of labels; without replay each is used in the one batch it
    arrived in, and the student forgets it. Re-using released labels is post-processing: it
    costs no privacy. The sets are part of the learner's state, so a restored run keeps them.
    ``pate_label_sgd_steps`` adds that many label-only gradient steps after each update. With
    ``pate_label_replay_size: 0`` the term is over the batch's own labeled states only (0
    when the batch has none).

    The coefficient is ``config.pate_label_loss_coeff`` if the config has it, else
    ``learner_config_dict["pate_label_loss_coeff"]``, else 1.0 (the replay size likewise).

    Metrics (per module, under ``learners/<module>/``): ``pate_label_loss``,
    ``pate_labeled_fraction`` (of the batch) and ``pate_label_set_size``.
    """

    @override(Learner)
    def build(self) -> None:
        """Builds the learner, then adds the PATE label columns to its connector."""
        super().build()
        if self._learner_connector is not None:
            self._learner_connector.insert_after(
                AddObservationsFromEpisodesToBatch, AddPATELabelsToBatch()
            )
        # Per module, one entry per distinct labeled state (its bytes): every SGD epoch sees
        # the same batch again, and must not add its labels twice.
        self._pate_label_sets: dict[str, dict[bytes, tuple[np.ndarray, int]]] = {}
        self._pate_replay_generator = torch.Generator().manual_seed(int(self.config.seed or 0))

    def _pate_setting(self, config: Any, key: str, default: float) -> float:
        value = getattr(config, key, None)
        if value is None:
            value = (config.learner_config_dict or {}).get(key, default)
        return value

    def pate_label_set(self, module_id: str) -> list[tuple[np.ndarray, int]]:
        """The (state, label) pairs remembered for ``module_id``, oldest first."""
        return list(self._pate_label_sets.get(module_id, {}).values())

    def _remember_labels(
        self, module_id: str, observations: torch.Tensor, labels: torch.Tensor
    ) -> None:
        """Adds the labeled states of a (mini)batch to the module's label set."""
        remembered = self._pate_label_sets.setdefault(module_id, {})
        rows = observations.detach().cpu().numpy()
        for row, label in zip(rows, labels.detach().cpu().numpy(), strict=True):
            remembered.setdefault(row.tobytes(), (row.copy(), int(label)))

    def _replayed_labels(
        self, module_id: str, size: int
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Up to ``size`` remembered (states, labels) of the module, on this learner's device."""
        entries = self.pate_label_set(module_id)
        if not entries:
            return None
        if len(entries) > size:
            picked = torch.randperm(len(entries), generator=self._pate_replay_generator)[:size]
            entries = [entries[i] for i in picked.tolist()]
        observations = torch.from_numpy(np.stack([row for row, _ in entries]))
        labels = torch.tensor([label for _, label in entries], dtype=torch.long)
        return observations.to(self._device), labels.to(self._device)

    @override(TorchLearner)
    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        """Adds the label cross-entropy (replayed, or the batch's own) to the base loss."""
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        if PATE_LABEL_MASK not in batch:
            return loss
        mask = batch[PATE_LABEL_MASK].float()
        labeled = mask.sum()
        replay_size = int(
            self._pate_setting(config, "pate_label_replay_size", DEFAULT_LABEL_REPLAY_SIZE)
        )
        if replay_size > 0:
            chosen = mask > 0
            self._remember_labels(module_id, batch[Columns.OBS][chosen], batch[PATE_LABELS][chosen])
            replayed = self._replayed_labels(module_id, replay_size)
            if replayed is None:
                label_loss = torch.zeros((), device=loss.device)
            else:
                observations, labels = replayed
                logits = self.module[module_id].forward_train({Columns.OBS: observations})[
                    Columns.ACTION_DIST_INPUTS
                ]
                label_loss = torch.nn.functional.cross_entropy(logits, labels)
        else:
            cross_entropy = torch.nn.functional.cross_entropy(
                fwd_out[Columns.ACTION_DIST_INPUTS], batch[PATE_LABELS].long(), reduction="none"
            )
            label_loss = (cross_entropy * mask).sum() / labeled.clamp(min=1.0)
        self.metrics.log_dict(
            {
                "pate_label_loss": label_loss.detach(),
                "pate_labeled_fraction": (labeled / mask.numel()).detach(),
                "pate_label_set_size": float(len(self._pate_label_sets.get(module_id, {}))),
            },
            key=module_id,
            window=1,
        )
        coeff = float(self._pate_setting(config, "pate_label_loss_coeff", DEFAULT_LABEL_LOSS_COEFF))
        return loss + coeff * label_loss

    @override(Learner)
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """Extra label-only SGD steps (``pate_label_sgd_steps``) after each update."""
        super().after_gradient_based_update(timesteps=timesteps)
        for module_id in list(self._pate_label_sets):
            config = self.config.get_config_for_module(module_id)
            steps = int(self._pate_setting(config, "pate_label_sgd_steps", 0))
            size = int(
                self._pate_setting(config, "pate_label_replay_size", DEFAULT_LABEL_REPLAY_SIZE)
            )
            coeff = float(
                self._pate_setting(config, "pate_label_loss_coeff", DEFAULT_LABEL_LOSS_COEFF)
            )
            if size <= 0 or coeff <= 0.0 or not self._pate_label_sets[module_id]:
                continue
            for _ in range(steps):
                replayed = self._replayed_labels(module_id, size)
                assert replayed is not None  # the module has remembered labels (checked above)
                observations, labels = replayed
                logits = self.module[module_id].forward_train({Columns.OBS: observations})[
                    Columns.ACTION_DIST_INPUTS
                ]
                loss = coeff * torch.nn.functional.cross_entropy(logits, labels)
                gradients = self.compute_gradients({module_id: loss})
                self.apply_gradients(self.postprocess_gradients(gradients))

    @override(Learner)
    def get_state(self, components: Any = None, *, not_components: Any = None, **kwargs: Any):
        """RLlib's learner state plus the remembered labels."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        if not self._check_component(_LABEL_SET_STATE, components, not_components):
            return state  # e.g. the weights-only states of every weight sync
        state[_LABEL_SET_STATE] = {
            module_id: {
                "observations": np.stack([row for row, _ in entries]),
                "labels": np.asarray([label for _, label in entries], dtype=np.int64),
            }
            for module_id in self._pate_label_sets
            if (entries := self.pate_label_set(module_id))
        }
        return state

    @override(Learner)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores RLlib's learner state and the remembered labels."""
        super().set_state(state)
        saved = state.get(_LABEL_SET_STATE)
        if saved is None:
            return
        self._pate_label_sets = {}
        for module_id, saved_set in saved.items():
            rows = np.asarray(saved_set["observations"])
            self._pate_label_sets[module_id] = {
                row.tobytes(): (row.copy(), int(label))
                for row, label in zip(rows, np.asarray(saved_set["labels"]), strict=True)
            }
