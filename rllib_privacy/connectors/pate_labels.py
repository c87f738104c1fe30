"""Learner connector: copies the PATE labels stored on episodes into the train batch."""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.utils.annotations import override

from rllib_privacy.callbacks.pate_labeling import PATE_LABEL_KEY
from rllib_privacy.pate.labeler import UNLABELED

__all__ = ["PATE_LABELS", "PATE_LABEL_MASK", "AddPATELabelsToBatch"]

#: Train-batch column of the teachers' noisy-max labels (0 where unlabeled).
PATE_LABELS = "pate_labels"
#: Train-batch column: 1.0 where a label was answered, 0.0 elsewhere.
PATE_LABEL_MASK = "pate_label_mask"


class AddPATELabelsToBatch(ConnectorV2):
    """Adds ``pate_labels`` and ``pate_label_mask`` per timestep from ``episode.custom_data``.

    Stateless, and reads what the labeling callback stored once per collected sample: no
    teacher is asked here. Episodes without labels (e.g. sampled before the callback was
    configured) get an all-zero mask. PPO's learner extends every episode by one
    artificial timestep (``AddOneTsToEpisodesAndTruncate``); that step is unlabeled.
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
        **kwargs: Any,
    ) -> Any:
        """Adds both columns for every single-agent episode in ``episodes``."""
        for episode in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False):
            length = len(episode)
            stored = episode.custom_data.get(PATE_LABEL_KEY)
            labels = np.full(length, UNLABELED, dtype=np.int64)
            if stored is not None:
                stored = np.asarray(stored, dtype=np.int64)
                if len(stored) not in (length, length - 1):
                    raise ValueError(
                        f"episode {episode.id_!r} has {len(stored)} PATE labels for "
                        f"{length} timesteps"
                    )
                labels[: len(stored)] = stored
            mask = (labels != UNLABELED).astype(np.float32)
            for column, values in (
                (PATE_LABELS, np.maximum(labels, 0)),
                (PATE_LABEL_MASK, mask),
            ):
                self.add_n_batch_items(
                    batch,
                    column,
                    items_to_add=values,
                    num_items=length,
                    single_agent_episode=episode,
                )
        return batch
