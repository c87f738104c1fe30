"""Learner connector piece that asks the kickstarting teacher once per collected sample."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override

#: Train-batch columns this piece adds.
TEACHER_POLICY = "kickstart_teacher_policy"
TEACHER_MASK = "kickstart_teacher_mask"
TEACHER_K = "kickstart_teacher_k"
#: Which states are sent to the teacher: all in the loss, only where the student is unsure, or
#: a uniform random fraction of them.
QUERY_RULES: tuple[str, ...] = ("all", "uncertain", "random")


class AddTeacherAnswersToBatch(ConnectorV2):
    """Adds the teacher's privatized policy, a mask and k to the train batch.

    Runs in the Learner pipeline after RLlib's default pieces (the batch already holds
    tensors), once per ``Learner.update`` call, i.e. once per collected batch and before
    it is split into epochs and minibatches: every sample is asked about once, so the
    teacher's budget is spent once per sample. Only samples in the loss (``loss_mask``;
    PPO adds one masked bootstrap step per episode chunk) are sent to the teacher.

    Rows the teacher refused (budget spent, or before a teacher is attached) get
    mask 0 and a zero policy; the loss mixin ignores them. The teacher may answer part of
    a request (its answer cache serves known state codes and releases new ones up to its
    budget); each row then carries the k its answer was drawn with.

    ``answer_sink``, when set (the kickstart loss mixin sets it for answer replay), receives
    each answered row once: ``answer_sink(observations, policies, k)``.

    With ``query_rule="uncertain"`` only states where the student's current policy is
    unsure (largest action probability below ``query_confidence``) are sent; the others get
    mask 0 and spend nothing. The rule reads only the student's own policy. With
    ``query_rule="random"`` each state in the loss is sent with probability
    ``query_fraction`` (the student's own coin): a small budget is then spread over many
    rollouts, at the states the improving student visits, instead of being spent on the
    first rollout's states.

    Args:
        input_observation_space: Passed to ConnectorV2.
        input_action_space: Passed to ConnectorV2.
        module_id: The RLModule the teacher kickstarts.
        num_actions: m, the number of discrete actions.
        query_rule: ``"all"``, ``"uncertain"`` or ``"random"`` (see above).
        query_confidence: The threshold of ``"uncertain"``, in (1/m, 1].
        query_fraction: The probability of ``"random"``, in (0, 1].
        seed: Seed of the ``"random"`` rule's coins.

    """

    def __init__(
        self,
        input_observation_space: Any = None,
        input_action_space: Any = None,
        *,
        module_id: str = DEFAULT_MODULE_ID,
        num_actions: int,
        query_rule: str = "all",
        query_confidence: float = 0.9,
        query_fraction: float = 1.0,
        seed: int | None = None,
    ) -> None:
        super().__init__(input_observation_space, input_action_space)
        if query_rule not in QUERY_RULES:
            raise ValueError(f"query_rule must be one of {list(QUERY_RULES)}, got {query_rule!r}")
        self.module_id = module_id
        self.num_actions = int(num_actions)
        self.query_rule = query_rule
        self.query_confidence = float(query_confidence)
        self.query_fraction = float(query_fraction)
        self._query_rng = np.random.default_rng(seed)
        self.teacher: Any = None
        self.answer_sink: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None
        self._queries = 0
        self._answered = 0
        self._refused = 0
        self._skipped = 0

    def set_teacher(self, teacher: Any) -> None:
        """Attach a ``TeacherClient`` (the only way this piece reaches the teacher)."""
        self.teacher = teacher

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
        """Ask the teacher about this batch's samples and add its answer as columns."""
        import torch

        module_batch = batch.get(self.module_id)
        if module_batch is None:
            return batch
        obs = module_batch[Columns.OBS]
        size = int(obs.shape[0])
        in_loss = _as_numpy(module_batch.get(Columns.LOSS_MASK, np.ones(size, dtype=bool)))
        in_loss = in_loss.astype(bool)
        policies = np.zeros((size, self.num_actions), dtype=np.float32)
        mask = np.zeros(size, dtype=np.float32)
        k = np.zeros(size, dtype=np.float32)
        ask = in_loss
        if self.query_rule == "uncertain" and in_loss.any():
            ask = in_loss & (self._student_confidence(rl_module, obs) < self.query_confidence)
            self._skipped += int(in_loss.sum() - ask.sum())
        elif self.query_rule == "random" and in_loss.any():
            ask = in_loss & (self._query_rng.random(size) < self.query_fraction)
            self._skipped += int(in_loss.sum() - ask.sum())
        asked = int(ask.sum())
        if asked:
            self._queries += 1
            asked_obs = _as_numpy(obs)[ask]
            answer = self.teacher.answer(asked_obs) if self.teacher else None
            if answer is not None and answer.answered:
                policies[ask] = answer.policies
                mask[ask] = answer.row_mask(asked)
                k[ask] = answer.row_k(asked)
                answered = int(mask[ask].sum())
                self._answered += answered
                self._refused += asked - answered
                if self.answer_sink is not None and answered:
                    kept = mask[ask] > 0
                    self.answer_sink(asked_obs[kept], policies[ask][kept], k[ask][kept])
            else:
                self._refused += asked
        device = obs.device if isinstance(obs, torch.Tensor) else None
        for column, values in ((TEACHER_POLICY, policies), (TEACHER_MASK, mask), (TEACHER_K, k)):
            module_batch[column] = (
                torch.from_numpy(values).to(device) if device is not None else values
            )
        return batch

    def _student_confidence(self, rl_module: Any, obs: Any) -> np.ndarray:
        """Largest action probability of the student's current policy, per row."""
        import torch

        module = rl_module[self.module_id] if self.module_id in rl_module else rl_module
        with torch.no_grad():
            logits = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
            return _as_numpy(torch.softmax(logits.float(), dim=-1).max(dim=-1).values)

    @override(ConnectorV2)
    def get_state(self, components: Any = None, *, not_components: Any = None, **kwargs: Any):
        """Counts of requests, of answered/refused samples and of samples the rule skipped."""
        return {
            "queries": self._queries,
            "answered": self._answered,
            "refused": self._refused,
            "skipped": self._skipped,
        }

    @override(ConnectorV2)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restore the counts."""
        self._queries = int(state.get("queries", 0))
        self._answered = int(state.get("answered", 0))
        self._refused = int(state.get("refused", 0))
        self._skipped = int(state.get("skipped", 0))


def _as_numpy(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):
        return values.detach().cpu().numpy()
    return np.asarray(values)
