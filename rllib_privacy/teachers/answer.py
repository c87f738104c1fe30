"""What crosses from the teacher's trust domain to the student's: ``TeacherAnswer``.

User guide: docs/components/kickstarting.md#what-it-protects.

An answer holds privatized policies only (or a refusal), the k they were drawn with and which
rows were answered: never the teacher's weights or its raw policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TeacherAnswer:
    """What the student side receives for one request.

    Attributes:
        policies: (N, m) float32 privatized policies, or None when the teacher refused.
        k: Concentration used (``inf`` for mechanism none, 0 when refused): one number, or
            (N,) per row when the answer cache served rows drawn at different k.
        mask: (N,) bool, which rows were answered (None: all of them, or none if
            ``policies`` is None). Set when the answer cache answers part of a request.

    """

    policies: np.ndarray | None
    k: float | np.ndarray
    mask: np.ndarray | None = None

    @property
    def answered(self) -> bool:
        """Whether any row was answered."""
        if self.policies is None:
            return False
        return self.mask is None or bool(np.any(self.mask))

    def row_mask(self, count: int) -> np.ndarray:
        """(N,) float32: 1 for each answered row."""
        if self.policies is None:
            return np.zeros(count, dtype=np.float32)
        if self.mask is None:
            return np.ones(count, dtype=np.float32)
        return np.asarray(self.mask, dtype=np.float32)

    def row_k(self, count: int) -> np.ndarray:
        """(N,) float32: the k each row's answer was drawn with (0 where unanswered)."""
        k = np.broadcast_to(np.asarray(self.k, dtype=np.float32), (count,))
        return np.where(self.row_mask(count) > 0, k, 0.0).astype(np.float32)
