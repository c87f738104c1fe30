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
    """One privatized gradient and the public scalars that go with it.

    This is the ONLY object that leaves a local agent (docs/components/ldp-a3c.md#what-it-protects):
    the noisy gradient and the scalar score, which the paper treats as public. Raw
    observations, rewards, episodes, losses and the raw gradient never do.
    ``__post_init__`` enforces the shape so that nothing else can be smuggled in.

    Attributes:
        agent_id: Opaque id of the local agent (for per-agent accounting).
        gradient: The privatized flat gradient, float32, shape ``(d,)``.
        epsilon: The ε this release spends (``inf`` for the non-private baseline).
        mechanism: Name of the mechanism that privatized ``gradient``.
        score: The episode's score (episode length on CartPole), public.
        env_steps: The episode's length, public (it is the score on CartPole).
        weights_version: Version of the global θ the gradient was computed from
            (chosen by the aggregator, so it carries no private information).
        agent_sequence: The agent's own submission number, 1 for its first (public:
            it only counts releases). With ``agent_id`` it identifies the submission,
            so that the aggregator never applies a gradient twice.

    """

    agent_id: str = dataclasses.field(metadata={IDENTIFYING: True})
    gradient: np.ndarray
    epsilon: float
    mechanism: str
    score: float
    env_steps: int
    weights_version: int
    agent_sequence: int = dataclasses.field(metadata={IDENTIFYING: True})

    @property
    def total_epsilon(self) -> float:
        """ε₀: the TOTAL ε this report spends, its gradient and everything released with it.

        What the per-agent budget and the shuffle bound count. A field added for another
        private release (e.g. a privatized score) must add its ε here.
        """
        return self.epsilon

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
        for name in ("epsilon", "score"):
            value = getattr(self, name)
            if not isinstance(value, float) or math.isnan(value):
                raise TypeError(f"GradientSubmission.{name} must be a float, got {value!r}")
        if not isinstance(self.agent_id, str) or not isinstance(self.mechanism, str):
            raise TypeError("GradientSubmission.agent_id and .mechanism must be str")
        for name in ("env_steps", "weights_version", "agent_sequence"):
            if not isinstance(getattr(self, name), int):
                raise TypeError(f"GradientSubmission.{name} must be an int")
        if self.agent_sequence < 1:
            raise ValueError(
                f"GradientSubmission.agent_sequence must be >= 1, got {self.agent_sequence}"
            )
