"""A bounded store of released teacher answers, replayed in the student's kickstart term."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["AnswerReplay"]


class AnswerReplay:
    """The last ``capacity`` (state, privatized teacher policy, k) triples, oldest dropped first.

    What it holds was already released to the student, so drawing from it again is
    post-processing and spends no privacy budget. Arrays are allocated on the first ``add``
    (the observation shape is known then).

    Args:
        capacity: How many answers are kept (≥ 1).

    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = int(capacity)
        self._observations: np.ndarray | None = None
        self._policies: np.ndarray | None = None
        self._k: np.ndarray | None = None
        self._size = 0
        self._next = 0

    def __len__(self) -> int:
        return self._size

    def add(self, observations: np.ndarray, policies: np.ndarray, k: np.ndarray) -> None:
        """Remember answered rows: ``observations[i]`` got ``policies[i]``, drawn at ``k[i]``."""
        observations = np.asarray(observations, dtype=np.float32)
        policies = np.asarray(policies, dtype=np.float32)
        k = np.asarray(k, dtype=np.float32).reshape(-1)
        if not len(k):
            return
        if self._observations is None:
            self._observations = np.zeros((self.capacity, *observations.shape[1:]), np.float32)
            self._policies = np.zeros((self.capacity, policies.shape[1]), np.float32)
            self._k = np.zeros(self.capacity, np.float32)
        assert self._policies is not None and self._k is not None
        if len(k) > self.capacity:  # only the newest fit
            observations, policies, k = (
                observations[-self.capacity :],
                policies[-self.capacity :],
                k[-self.capacity :],
            )
        slots = (self._next + np.arange(len(k))) % self.capacity
        self._observations[slots] = observations
        self._policies[slots] = policies
        self._k[slots] = k
        self._next = int((self._next + len(k)) % self.capacity)
        self._size = min(self.capacity, self._size + len(k))

    def sample(
        self, size: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Up to ``size`` remembered answers drawn uniformly without replacement."""
        if self._size == 0 or size <= 0:
            raise ValueError("nothing to sample: the replay is empty or size <= 0")
        assert self._observations is not None and self._policies is not None
        assert self._k is not None
        picked = rng.choice(self._size, size=min(size, self._size), replace=False)
        return self._observations[picked], self._policies[picked], self._k[picked]

    def state_dict(self) -> dict[str, Any]:
        """The remembered answers, oldest first (part of the learner's checkpoint)."""
        if self._observations is None or self._size == 0:
            return {"observations": None, "policies": None, "k": None}
        assert self._policies is not None and self._k is not None
        order = (self._next - self._size + np.arange(self._size)) % self.capacity
        return {
            "observations": self._observations[order].copy(),
            "policies": self._policies[order].copy(),
            "k": self._k[order].copy(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the contents with a ``state_dict`` (the newest ``capacity`` rows)."""
        self._observations = self._policies = self._k = None
        self._size = self._next = 0
        if state.get("k") is not None:
            self.add(state["observations"], state["policies"], state["k"])
