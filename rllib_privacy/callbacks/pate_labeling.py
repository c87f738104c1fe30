"""Labeling callback: collected samples → PATE labels from the one global teacher service.

At the end of every ``EnvRunner.sample()`` (training runners only, never evaluation),
``PATELabelingCallback`` picks which of the freshly collected states to label (all,
a random subset, or the student's least-confident first: paper App. B.2), sends them to
the algorithm's single ``PATELabeler`` actor and stores
the answers in ``episode.custom_data["pate_label"]`` (one int per timestep, ``-1`` =
unlabeled). The labels are therefore computed once per collected sample; the learner
connector ``AddPATELabelsToBatch`` copies them into the
train batch, where every SGD epoch and minibatch reuses them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override

from rllib_privacy.pate.labeler import UNLABELED

__all__ = ["PATE_LABEL_KEY", "QUERY_SELECTIONS", "PATELabelingCallback", "select_query_states"]

#: ``episode.custom_data`` key of the per-timestep labels.
PATE_LABEL_KEY = "pate_label"
#: Which collected states are sent to the teachers.
QUERY_SELECTIONS = ("all", "random", "least_confident")
#: EnvRunner attribute holding the labeler actor handle (set by PATEPPO).
LABELER_ATTR = "_pate_labeler"


def _softmax_max(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    probs = np.exp(shifted)
    return probs.max(axis=-1) / probs.sum(axis=-1)


def select_query_states(
    num_states: int,
    *,
    selection: str,
    limit: int | None,
    rng: np.random.Generator,
    logits: np.ndarray | None = None,
) -> np.ndarray:
    """Indices of the states to query, in the order they should be answered.

    Args:
        num_states: Number of collected states.
        selection: ``"all"`` (in collection order), ``"random"`` (a random subset) or
            ``"least_confident"`` (ascending max softmax probability of ``logits``).
        limit: Most states to select (None: all).
        rng: Generator for ``"random"``.
        logits: The student's action logits per state (``"least_confident"`` only).

    Returns:
        int64 indices into the collected states.

    Raises:
        ValueError: For an unknown selection, or missing logits for least_confident.

    """
    count = num_states if limit is None else min(limit, num_states)
    if selection == "all":
        return np.arange(count, dtype=np.int64)
    if selection == "random":
        return np.sort(rng.choice(num_states, size=count, replace=False)).astype(np.int64)
    if selection == "least_confident":
        if logits is None or len(logits) != num_states:
            raise ValueError("least_confident needs the student's logits for every state")
        confidence = _softmax_max(np.asarray(logits, dtype=np.float64))
        return np.argsort(confidence, kind="stable")[:count].astype(np.int64)
    raise ValueError(f"selection must be one of {list(QUERY_SELECTIONS)}, got {selection!r}")


class PATELabelingCallback(RLlibCallback):
    """Asks the PATE teacher service for labels on each training sample (see module doc).

    Reads ``pate_query_selection`` and ``pate_queries_per_sample`` from the algorithm
    config and the labeler actor handle from the EnvRunner (set by ``PATEPPO``).
    """

    def __init__(self) -> None:
        super().__init__()
        self._rng = np.random.default_rng()
        self._exhausted = False

    @override(RLlibCallback)
    def on_sample_end(
        self,
        *,
        env_runner: Any = None,
        metrics_logger: Any = None,
        samples: Any,
        **kwargs: Any,
    ) -> None:
        """Labels the chosen states of ``samples`` (episodes) in place."""
        config = env_runner.config
        if config.in_evaluation:
            return  # Evaluation must not spend the teachers' budget.
        episodes = list(samples)
        lengths = [len(episode) for episode in episodes]
        for episode, length in zip(episodes, lengths, strict=True):
            episode.custom_data[PATE_LABEL_KEY] = np.full(length, UNLABELED, dtype=np.int64)
        total = sum(lengths)
        labeler = getattr(env_runner, LABELER_ATTR, None)
        if total == 0 or self._exhausted:
            return
        if labeler is None:
            raise RuntimeError(
                "PATELabelingCallback found no PATE labeler on this EnvRunner: use it with "
                "PATEPPO (which starts the labeler and hands it to every EnvRunner)"
            )
        import ray

        slices = [slice(0, n) for n in lengths]
        observations = np.concatenate(
            [np.asarray(ep.get_observations(sl)) for ep, sl in zip(episodes, slices, strict=True)]
        )
        logits = None
        if config.pate_query_selection == "least_confident":
            logits = np.concatenate(
                [
                    np.asarray(ep.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS, sl))
                    for ep, sl in zip(episodes, slices, strict=True)
                ]
            )
        chosen = select_query_states(
            total,
            selection=config.pate_query_selection,
            limit=config.pate_queries_per_sample,
            rng=self._rng,
            logits=logits,
        )
        labels, self._exhausted = ray.get(labeler.label.remote(observations[chosen]))
        flat = np.full(total, UNLABELED, dtype=np.int64)
        flat[chosen] = labels
        offsets = np.cumsum([0, *lengths])
        for i, episode in enumerate(episodes):
            episode.custom_data[PATE_LABEL_KEY] = flat[offsets[i] : offsets[i + 1]]
        metrics_logger.log_value(
            ("pate", "labeled_states"), int(np.sum(labels != UNLABELED)), reduce="sum"
        )
