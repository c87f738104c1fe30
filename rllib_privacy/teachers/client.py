"""The student side's view of a teacher: a handle that can only ask for answers."""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_privacy.teachers.answer import TeacherAnswer
from rllib_privacy.teachers.dirichlet_teacher import DirichletTeacher


class TeacherClient:
    """Calls a teacher that is either a Ray actor handle or an in-process object.

    Student-side code (the learner connector, the algorithm) only ever holds this
    client, whose methods return privatized answers and bookkeeping, never weights.

    Args:
        teacher: A ``TeacherServer`` actor handle or a ``DirichletTeacher``.

    """

    def __init__(self, teacher: Any) -> None:
        self._teacher = teacher
        self._remote = not isinstance(teacher, DirichletTeacher)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._remote:
            import ray

            return ray.get(getattr(self._teacher, method).remote(*args, **kwargs))
        return getattr(self._teacher, method)(*args, **kwargs)

    def answer(self, observations: np.ndarray) -> TeacherAnswer:
        """Privatized policies for ``observations`` (one release per row), or a refusal."""
        return self._call("answer", observations)

    def start_rollout(self, *, expected_states: int) -> dict[str, Any]:
        """Decay k and decide whether the coming rollout is shared."""
        return self._call("start_rollout", expected_states=expected_states)

    def stats(self) -> dict[str, float]:
        """Budget and sharing figures."""
        return self._call("stats")

    def spaces(self) -> tuple[Any, Any]:
        """(observation space, action space) of the teacher."""
        return self._call("spaces")

    def get_state(self) -> dict[str, Any]:
        """The teacher's checkpointable state (ledger, k, counts, noise stream)."""
        return self._call("get_state")

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore the teacher's state."""
        self._call("set_state", state)

    def shutdown(self) -> None:
        """Kill the teacher actor (no-op for an in-process teacher)."""
        if self._remote:
            import ray

            ray.kill(self._teacher, no_restart=True)
