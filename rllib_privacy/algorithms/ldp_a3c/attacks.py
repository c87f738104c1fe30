"""Simulated malicious local agents: the manipulation attacks of Cheu, Smith & Ullman (2021).

SIMULATION AND TESTING ONLY (``agents_malicious_fraction``, ``agents_malicious_attack``):
a malicious agent runs its episode like any other but, instead of its privatized gradient,
sends the output of the mechanism's output set that pushes θ furthest one way
(``GradientMechanism.worst_valid_output``). Every such report passes the aggregator's
check (docs/components/ldp-a3c.md#untrusted-agents): this measures the harm that remains
once outputs are validated.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rllib_privacy.mechanisms import GradientMechanism

__all__ = ["ATTACKS", "attack_direction", "poison_rows"]

#: ``flip``: against the agent's own clipped gradient; ``fixed``: all ones, for every agent.
ATTACKS = ("flip", "fixed")


def attack_direction(gradient: np.ndarray, attack: str) -> np.ndarray:
    """The direction a malicious agent pushes along (a non-zero vector).

    Args:
        gradient: The agent's own clipped gradient (a descent step follows ``-gradient``).
        attack: ``flip`` (``-gradient``: the aggregator steps along minus the reports, so
            this report pushes θ up the agent's loss, against the honest step) or
            ``fixed`` (all ones: the same direction for every malicious agent, all-same
            signs).

    Returns:
        The direction, of ``gradient``'s shape; ``fixed``'s when the gradient is zero.

    Raises:
        ValueError: For an unknown attack.

    """
    if attack not in ATTACKS:
        raise ValueError(f"attack must be one of {ATTACKS}, got {attack!r}")
    if attack == "flip" and np.any(gradient):
        # θ ← θ − η·mean(B): a report along -g makes the step go along +g, uphill.
        return -np.asarray(gradient, dtype=np.float64)
    return np.ones(gradient.shape, dtype=np.float64)


def poison_rows(
    gradients: np.ndarray,
    released: np.ndarray,
    malicious: Sequence[bool],
    *,
    mechanism: GradientMechanism,
    attack: str,
) -> np.ndarray:
    """``released`` with every malicious agent's row replaced by its attack report.

    Args:
        gradients: ``(n, d)`` clipped gradients of the agents (before the mechanism).
        released: ``(n, d)`` their honest releases.
        malicious: Whether agent i is malicious, one per row.
        mechanism: The configured mechanism (its output set bounds the attack).
        attack: One of ``ATTACKS``.

    Returns:
        A float32 ``(n, d)`` array (``released`` itself when no agent is malicious).

    """
    rows = np.flatnonzero(np.asarray(malicious, dtype=bool))
    if rows.size == 0:
        return released
    out = np.array(released, dtype=np.float32, copy=True)
    for i in rows:
        # The report the aggregator adds; the step is along minus this.
        out[i] = mechanism.worst_valid_output(attack_direction(gradients[i], attack))
    return out
