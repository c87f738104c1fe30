"""What an LDPA3C local agent is allowed to send to the aggregator."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

#: Field metadata flag of a field that identifies the sender or orders its reports. The
#: shuffler strips every such field (``anonymous.AnonymousReport``); every other field,
#: including ones added later, passes through to the aggregator.
IDENTIFYING = "identifying"


@dataclass(frozen=True)
class GradientSubmission:
    """One privatized gradient and the privatized (or, as in the paper, public) score.

    This is the ONLY object that leaves a local agent (docs/components/ldp-a3c.md#what-it-protects):
    the noisy gradient and the score. With a private score (``score_mechanism`` not
    ``"public"``) ``score`` is the mechanism's output (one bit, debiased at the aggregator)
    and ``env_steps`` is 0: on CartPole the episode length is the score, so the one score
    release covers both. Raw observations, rewards, episodes, losses and the raw gradient
    never leave. ``__post_init__`` enforces the shape so that nothing else can be smuggled in.

    Attributes:
        agent_id: Opaque id of the local agent (for per-agent accounting).
        gradient: The privatized flat gradient, float32, shape ``(d,)``.
        epsilon: The ε this release spends (``inf`` for the non-private baseline).
        mechanism: Name of the mechanism that privatized ``gradient``.
        score: The episode's score (episode length on CartPole): in the clear with
            ``score_mechanism == "public"``, else the score mechanism's output.
        env_steps: The episode's length with a public score; 0 with a private one (the
            aggregator estimates it from the debiased score).
        weights_version: Version of the global θ the gradient was computed from
            (chosen by the aggregator, so it carries no private information).
        agent_sequence: The agent's own submission number, 1 for its first (public:
            it only counts releases). With ``agent_id`` it identifies the submission,
            so that the aggregator never applies a gradient twice.
        score_mechanism: Name of the mechanism that privatized ``score``, or ``"public"``.
        score_epsilon: The ε the score release spends (``inf`` when public: it is not
            private and the ledger records no release for it).

    """

    agent_id: str = dataclasses.field(metadata={IDENTIFYING: True})
    gradient: np.ndarray
    epsilon: float
    mechanism: str
    score: float
    env_steps: int
    weights_version: int
    agent_sequence: int = dataclasses.field(metadata={IDENTIFYING: True})
    score_mechanism: str = "public"
    score_epsilon: float = math.inf

    @property
    def score_is_private(self) -> bool:
        """Whether ``score`` is a private release (then the ledger counts it too)."""
        return self.score_mechanism != "public"

    @property
    def total_epsilon(self) -> float:
        """ε₀: the TOTAL ε this report spends, its gradient and everything released with it.

        What the per-agent budget and the shuffle bound count. A field added for another
        private release (e.g. a privatized score) must add its ε here.
        """
        return self.epsilon + (self.score_epsilon if self.score_is_private else 0.0)

    @property
    def submission_id(self) -> str:
        """Unique id of this release: ``"<agent_id>#<agent_sequence>"``."""
        return f"{self.agent_id}#{self.agent_sequence}"

    def __post_init__(self) -> None:
        if not isinstance(self.gradient, np.ndarray) or self.gradient.ndim != 1:
            raise TypeError("GradientSubmission.gradient must be a 1-D numpy array")
        if self.gradient.dtype != np.float32:
            raise TypeError("GradientSubmission.gradient must be float32")
        if not np.all(np.isfinite(self.gradient)):
            raise ValueError(
                "GradientSubmission.gradient must be finite: the local agent's gradient "
                "overflowed (training diverged; lower `lr`, or keep a mechanism's clipping "
                "by using a finite `epsilon`)"
            )
        for name in ("epsilon", "score", "score_epsilon"):
            value = getattr(self, name)
            if not isinstance(value, float) or math.isnan(value):
                raise TypeError(f"GradientSubmission.{name} must be a float, got {value!r}")
        if not all(
            isinstance(v, str) for v in (self.agent_id, self.mechanism, self.score_mechanism)
        ):
            raise TypeError(
                "GradientSubmission.agent_id, .mechanism and .score_mechanism must be str"
            )
        if self.score_is_private and (self.env_steps != 0 or not 0 < self.score_epsilon < math.inf):
            # The episode length is the score on CartPole: sending it would undo the release.
            raise ValueError(
                "GradientSubmission with a private score must have env_steps 0 and a finite "
                f"score_epsilon > 0, got env_steps={self.env_steps!r}, "
                f"score_epsilon={self.score_epsilon!r}"
            )
        for name in ("env_steps", "weights_version", "agent_sequence"):
            if not isinstance(getattr(self, name), int):
                raise TypeError(f"GradientSubmission.{name} must be an int")
        if self.agent_sequence < 1:
            raise ValueError(
                f"GradientSubmission.agent_sequence must be >= 1, got {self.agent_sequence}"
            )
