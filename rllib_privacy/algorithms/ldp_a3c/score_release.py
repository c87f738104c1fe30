"""The score fields of a local agent's submissions: privatized before they leave it.

On CartPole the episode length is the score (one reward per step), so ONE release of the
score covers both: with a private score mechanism a submission carries the mechanism's
output bit as ``score`` and 0 as ``env_steps``; the aggregator debiases the bit and
estimates the environment steps from it (docs/components/ldp-a3c.md#private-scores).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rllib_privacy.mechanisms import OneBitMechanism

#: ``GradientSubmission.score_mechanism`` of a score sent in the clear (the paper's setting).
PUBLIC = "public"


def score_fields(
    mechanism: OneBitMechanism | None,
    scores: np.ndarray,
    env_steps: np.ndarray,
    rng: np.random.Generator | None,
) -> list[dict[str, Any]]:
    """The ``GradientSubmission`` keyword arguments of each agent's score, one per agent.

    Args:
        mechanism: The score mechanism (None: the score is public).
        scores: Each agent's score (its mean episode return), shape ``(agents,)``.
        env_steps: Each agent's environment steps, shape ``(agents,)``.
        rng: The agents' noise generator (one stream, one independent draw per agent).

    Returns:
        ``{"score", "env_steps", "score_mechanism", "score_epsilon"}`` per agent.

    """
    if mechanism is None:
        return [
            {
                "score": float(score),
                "env_steps": int(steps),
                "score_mechanism": PUBLIC,
                "score_epsilon": math.inf,
            }
            for score, steps in zip(scores, env_steps, strict=True)
        ]
    bits = mechanism.privatize(np.asarray(scores, dtype=np.float64), rng)
    epsilon = float(mechanism.epsilon)
    return [
        {
            "score": float(bit),
            "env_steps": 0,
            "score_mechanism": mechanism.name,
            "score_epsilon": epsilon,
        }
        for bit in bits
    ]
