"""Framework-agnostic parts of the LDPA3C learner."""

from __future__ import annotations

import numpy as np
import scipy.signal
from ray.rllib.core.learner.learner import Learner

#: Train-batch column with the n-step value targets V̂_t.
VALUE_TARGETS = "value_targets"

LOSS_REDUCTIONS = ("sum", "mean")


def discounted_value_targets(
    rewards: np.ndarray, *, bootstrap_value: float, gamma: float
) -> np.ndarray:
    """Returns V̂_t = Σ_{j=t}^{T−1} γ^{j−t} r_j + γ^{T−t}·V(s_T) for t = 0..T−1.

    This is docs/components/ldp-a3c.md's corrected form of the paper's eq. 18 (which drops the
    γ^{T−t} factor). ``bootstrap_value`` is V(s_T): 0 at a terminal state, the value
    estimate of the last observation when the episode was truncated.
    """
    extended = np.append(np.asarray(rewards, dtype=np.float64), float(bootstrap_value))
    # lfilter computes y[t] = x[t] + γ·y[t+1] on the reversed sequence.
    returns = scipy.signal.lfilter([1.0], [1.0, -gamma], extended[::-1])[::-1]
    return returns[:-1].astype(np.float32)


class LDPA3CLearner(Learner):
    """Base class of LDPA3C learners (the loss lives in the framework subclass).

    In LDPA3C a learner exists in two places: every local agent (EnvRunner)
    builds one to compute and privatize its gradient; the aggregator (the
    Algorithm's LearnerGroup) only applies the mean of buffered noisy gradients.
    """
