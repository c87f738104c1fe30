"""The public score of each submission: the paper's moving mean and first success time.

FST (Ono & Takahashi, eq. 26) is the first submission n whose moving mean μ_n over
``SCORE_WINDOW`` submissions reaches the target; ``solved_at`` is a sustained criterion
over ``SOLVED_WINDOW`` submissions.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

#: Moving-mean window and success threshold of the paper's FST metric (eq. 26).
SCORE_WINDOW = 10
#: Window of the sustained criterion ``ldp/solved_at`` (a random walk of the weights can
#: pass the paper's 10-submission window; see docs/components/ldp-a3c.md).
SOLVED_WINDOW = 100


class ScoreTracker:
    """Scores in submission order: moving mean μ_n and first success time (eq. 26).

    Attributes:
        target: Θ, the score the moving means must reach.
        submissions: Submissions scored so far.
        env_steps: Environment steps those submissions took.
        fst: First success time (a submission number), or None until reached.
        solved_at: Submission count at which the ``SOLVED_WINDOW`` mean first reached
            the target, or None.
        window: The last ``SCORE_WINDOW`` scores.
        recent: The last ``SOLVED_WINDOW`` scores.
    """

    def __init__(self, target: float) -> None:
        """Starts with no submissions.

        Args:
            target: Θ of the first-success-time metric.
        """
        self.target = float(target)
        self.submissions = 0
        self.env_steps = 0
        self.fst: int | None = None
        self.solved_at: int | None = None
        self.window: deque[float] = deque(maxlen=SCORE_WINDOW)
        self.recent: deque[float] = deque(maxlen=SOLVED_WINDOW)

    def add(self, score: float, env_steps: int) -> None:
        """Scores the next submission.

        Args:
            score: The submission's public score (its episode return).
            env_steps: Environment steps the submission took.
        """
        self.submissions += 1
        self.env_steps += env_steps
        self.window.append(score)
        self.recent.append(score)
        if (
            self.fst is None
            and len(self.window) == SCORE_WINDOW
            # Plain sums: np.mean costs more than the rest of a submission's bookkeeping.
            and sum(self.window) / SCORE_WINDOW >= self.target
        ):
            # μ_n covers submissions n..n+9, so it is complete at submission n+9.
            self.fst = self.submissions - SCORE_WINDOW + 1
        if (
            self.solved_at is None
            and len(self.recent) == SOLVED_WINDOW
            and sum(self.recent) / SOLVED_WINDOW >= self.target
        ):
            # Unlike the FST, the submission count at which the window is complete.
            self.solved_at = self.submissions

    @property
    def moving_mean(self) -> float:
        """μ over the last ``SCORE_WINDOW`` scores (NaN before the first)."""
        return float(np.mean(self.window)) if self.window else math.nan

    def state_dict(self) -> dict[str, Any]:
        """The tracker's state, JSON-serializable, for checkpoints and journal snapshots."""
        return {
            "submissions": self.submissions,
            "env_steps": self.env_steps,
            "fst": self.fst,
            "solved_at": self.solved_at,
            "window": list(self.window),
            "recent": list(self.recent),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores a state that `state_dict` returned.

        Args:
            state: A dict that ``state_dict`` returned.
        """
        self.submissions = int(state["submissions"])
        self.env_steps = int(state["env_steps"])
        self.fst = None if state["fst"] is None else int(state["fst"])
        solved_at = state.get("solved_at")  # absent in older checkpoints
        self.solved_at = None if solved_at is None else int(solved_at)
        self.window = deque((float(s) for s in state["window"]), maxlen=SCORE_WINDOW)
        self.recent = deque((float(s) for s in state["recent"]), maxlen=SOLVED_WINDOW)
