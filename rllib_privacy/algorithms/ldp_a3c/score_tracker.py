"""The score of each submission: the paper's moving mean, FST and the solved criterion.

FST (Ono & Takahashi, eq. 26) is the first submission n whose moving mean μ_n over
``SCORE_WINDOW`` submissions reaches the target; it is kept only for public scores (with
private scores a 10-report mean is noise). ``solved_at`` is the sustained criterion: the
mean of a window of ``window`` (debiased) scores reaches the target. With public scores the
window slides and is checked after every submission (the paper's "last 100" reading); with
private scores it is checked once per ``check_every`` = ``window`` submissions, on disjoint
windows, so that every check is an independent test whose false-fire rate is known
(docs/components/ldp-a3c.md#private-scores).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from scipy import stats

from rllib_privacy.mechanisms import OneBitMechanism

#: Moving-mean window and success threshold of the paper's FST metric (eq. 26).
SCORE_WINDOW = 10
#: Default window of the sustained criterion with public scores (a random walk of the
#: weights can pass the paper's 10-submission window; see docs/components/ldp-a3c.md).
SOLVED_WINDOW = 100


class ScoreTracker:
    """Scores in submission order: moving mean μ_n, first success time and ``solved_at``.

    Args:
        target: Θ, the score the means must reach.
        window: Scores in the solved criterion's window.
        check_every: The criterion is checked when the submission count is a multiple of
            this (1: after every submission, a sliding window; ``window``: disjoint windows).
        fst: Whether to track the paper's FST (public scores only).
        mechanism: The score mechanism whose releases ``add_release`` debiases (None:
            public scores only).
        episodes_per_score: Episodes behind one score (their mean): the env steps a
            debiased score stands for are this times the score (CartPole: length = score).

    Attributes:
        target: Θ.
        submissions: Submissions scored so far.
        env_steps: Environment steps those submissions took, an int (estimated from the
            debiased scores when the scores are private: the largest rounded sum of them so
            far, so that the count, RLlib's lifetime counter, never goes down).
        fst: First success time (a submission number), or None until reached.
        solved_at: Submission count at which the window mean first reached the target.
        solved_score: That window mean (the criterion's value when it fired), or None.
        window: The last ``SCORE_WINDOW`` scores.
        recent: The last ``window`` scores.

    """

    def __init__(
        self,
        target: float,
        *,
        window: int = SOLVED_WINDOW,
        check_every: int = 1,
        fst: bool = True,
        mechanism: OneBitMechanism | None = None,
        episodes_per_score: int = 1,
    ) -> None:
        self.target = float(target)
        self.mechanism = mechanism
        self.episodes_per_score = int(episodes_per_score)
        self._debiased = (
            () if mechanism is None else tuple(float(v) for v in mechanism.debias([0, 1]))
        )
        self.solved_window = int(window)
        self.check_every = int(check_every)
        self.track_fst = fst
        self.submissions = 0
        self._env_steps = 0.0
        self._env_steps_counted = 0
        self.fst: int | None = None
        self.solved_at: int | None = None
        self.solved_score: float | None = None
        self.window: deque[float] = deque(maxlen=SCORE_WINDOW)
        self.recent: deque[float] = deque(maxlen=self.solved_window)
        # Running sum of ``recent``: score_mean costs O(1) with windows of 10^5 scores.
        self._recent_sum = 0.0

    @classmethod
    def for_config(cls, config: Any) -> ScoreTracker:
        """The tracker an ``LDPA3CConfig`` asks for (window, checks, FST, mechanism).

        Args:
            config: The LDPA3CConfig.

        Returns:
            A tracker with no submissions.

        """
        mechanism = config.get_score_mechanism()
        window = config.effective_solved_window
        return cls(
            config.scoring_fst_target_score,
            window=window,
            # Private: disjoint windows, one independent test per check.
            check_every=1 if mechanism is None else window,
            fst=mechanism is None,
            mechanism=mechanism,
            episodes_per_score=config.agents_episodes_per_submission,
        )

    def add_release(self, score: float, env_steps: int, score_mechanism: str) -> None:
        """Scores a submission as it arrived: debiases a private score first.

        Args:
            score: The submission's ``score`` field (a mechanism output if private).
            env_steps: Its ``env_steps`` field (0 if the score is private).
            score_mechanism: Its ``score_mechanism`` field (``"public"``: in the clear).

        Raises:
            ValueError: If the release is not of this tracker's mechanism or not in its
                output set.

        """
        if score_mechanism == "public":
            self.add(score, env_steps)
            return
        if self.mechanism is None or score_mechanism != self.mechanism.name:
            expected = "public" if self.mechanism is None else self.mechanism.name
            raise ValueError(
                f"a score released by {score_mechanism!r} cannot be scored: this run's "
                f"scores are {expected!r} (privacy_score_mechanism)"
            )
        if score not in (0.0, 1.0):
            self.mechanism.validate(score)  # raises, naming the output set
        # The two debiased values, looked up: debias() per scalar costs more than the rest.
        estimate = self._debiased[int(score)]
        self.add(estimate, estimate * self.episodes_per_score)

    def add(self, score: float, env_steps: float) -> None:
        """Scores the next submission.

        Args:
            score: The submission's score (its episode return), debiased if private.
            env_steps: Environment steps the submission took (an estimate if private).
        """
        self.submissions += 1
        self._env_steps += env_steps
        if self._env_steps > self._env_steps_counted:
            self._env_steps_counted = round(self._env_steps)
        if len(self.recent) == self.solved_window:
            self._recent_sum -= self.recent[0]
        self.recent.append(score)
        self._recent_sum += score
        if self.track_fst:
            self.window.append(score)
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
            and len(self.recent) == self.solved_window
            and self.submissions % self.check_every == 0
        ):
            # The exact sum (no running-sum drift) decides: O(window) once per check.
            mean = math.fsum(self.recent) / self.solved_window
            self._recent_sum = mean * self.solved_window
            if mean >= self.target:
                # Unlike the FST, the submission count at which the window is complete.
                self.solved_at = self.submissions
                self.solved_score = mean

    @property
    def env_steps(self) -> int:
        """Environment steps so far (an estimate with private scores), never decreasing."""
        return self._env_steps_counted

    @property
    def score_mean(self) -> float:
        """Mean of the last ``window`` scores (fewer at the start; NaN before the first)."""
        return self._recent_sum / len(self.recent) if self.recent else math.nan

    @property
    def moving_mean(self) -> float:
        """μ over the last ``SCORE_WINDOW`` scores (NaN before the first, or without FST)."""
        return sum(self.window) / len(self.window) if self.window else math.nan

    def state_dict(self) -> dict[str, Any]:
        """The tracker's state, JSON-serializable, for checkpoints and journal snapshots."""
        return {
            "submissions": self.submissions,
            "env_steps": int(self._env_steps)
            if float(self._env_steps).is_integer()
            else self._env_steps,
            "env_steps_counted": self._env_steps_counted,
            "fst": self.fst,
            "solved_at": self.solved_at,
            "solved_score": self.solved_score,
            "window": list(self.window),
            "recent": list(self.recent),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores a state that `state_dict` returned (also one of an older version).

        Args:
            state: A dict that ``state_dict`` returned.
        """
        self.submissions = int(state["submissions"])
        self._env_steps = float(state["env_steps"])
        # Absent before scores could be private (then the count is the exact sum).
        self._env_steps_counted = int(state.get("env_steps_counted", round(self._env_steps)))
        self.fst = None if state["fst"] is None else int(state["fst"])
        solved_at = state.get("solved_at")  # absent in older checkpoints
        self.solved_at = None if solved_at is None else int(solved_at)
        solved_score = state.get("solved_score")  # absent before scores could be private
        self.solved_score = None if solved_score is None else float(solved_score)
        self.window = deque((float(s) for s in state["window"]), maxlen=SCORE_WINDOW)
        self.recent = deque((float(s) for s in state["recent"]), maxlen=self.solved_window)
        self._recent_sum = math.fsum(self.recent)


#: The solved criterion with private scores is sized so that a policy this far below the
#: target fires a check with probability at most ``SOLVED_FALSE_FIRE_RATE``.
SOLVED_MARGIN = 10.0
#: Per-check false-fire rate the default private window is sized for.
SOLVED_FALSE_FIRE_RATE = 0.01


def private_solved_window(
    mechanism: OneBitMechanism,
    *,
    margin: float = SOLVED_MARGIN,
    rate: float = SOLVED_FALSE_FIRE_RATE,
    multiple_of: int = 1,
) -> int:
    """The smallest window n whose check fires at most ``rate`` when μ ≤ target − margin.

    n = ⌈(z_{1−rate} · σ / margin)²⌉ with σ = ``mechanism.max_std``, the bound on the std of
    one debiased report (the normal approximation of the window mean; the reports are
    independent bits), rounded up to a multiple of ``multiple_of``.

    Args:
        mechanism: The score mechanism.
        margin: How far below the target a policy must be for the rate to hold.
        rate: The per-check false-fire rate.
        multiple_of: Round n up to a multiple of this (e.g. the submissions of one
            iteration, so that checks fall on iteration ends).

    Returns:
        The window n.

    """
    z = float(stats.norm.isf(rate))
    n = math.ceil((z * mechanism.max_std / margin) ** 2)
    return -(-n // multiple_of) * multiple_of


def solved_fire_probability(
    mechanism: OneBitMechanism, *, window: int, true_score: float, target: float
) -> float:
    """Exact probability that one check of a window of constant true scores fires.

    With every score equal to ``true_score`` the window holds ``window`` independent bits
    of P(1) = ``mechanism.one_probability(true_score)``; the debiased mean reaches
    ``target`` iff the number of ones reaches k = ⌈window·(q + (p − q)·t*)⌉, t* the target
    mapped to [0, 1]. Scores that vary around the same mean give a Poisson-binomial count
    with a smaller variance, so for μ below the target this is (up to the normal
    approximation) an upper bound for them too.

    Args:
        mechanism: The score mechanism.
        window: n, reports per check.
        true_score: The true (clipped) score of every report.
        target: Θ.

    Returns:
        P(debiased window mean ≥ target).

    """
    threshold = float(mechanism.one_probability(target)) * window
    # Floating-point guard: a threshold that is an integer up to rounding stays one.
    k = math.ceil(threshold - 1e-9)
    probability = float(mechanism.one_probability(true_score))
    return float(stats.binom.sf(k - 1, window, probability))
