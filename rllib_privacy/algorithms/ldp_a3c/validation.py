"""The aggregator's check of a report from an untrusted local agent, before it is applied.

A malicious agent does not run our code: ``GradientSubmission.__post_init__`` runs on
the sender's side only, so whatever arrives may have any field of any type. The check reads
only the fields a report keeps behind a shuffler (no ``agent_id`` needed) plus, when present,
the identifying ones; the gradient must lie in the configured mechanism's output set
(``GradientMechanism.check_output``). User guide: docs/components/ldp-a3c.md#untrusted-agents.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

import numpy as np

from rllib_privacy.accounting.events import LDPReport
from rllib_privacy.accounting.ldp_ledger import LDPLedger
from rllib_privacy.mechanisms import GradientMechanism
from rllib_privacy.mechanisms.output_checks import DEFAULT_FALSE_REJECTION_RATE

__all__ = ["PUBLIC_SCORE", "check_report", "configured_score_mechanism", "rejected_charges"]

#: ``score_mechanism`` of a score sent in the clear (the paper's setting).
PUBLIC_SCORE = "public"

_MISSING = object()


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def configured_score_mechanism(config: Any) -> Any:
    """The config's private-score mechanism (None: scores are public or not configurable)."""
    get = getattr(config, "get_score_mechanism", None)
    return None if get is None else get()


def _check_score(report: Any, score_mechanism: Any) -> str | None:
    """The score: public and finite, or the configured score mechanism's output."""
    score = getattr(report, "score", _MISSING)
    if not isinstance(score, float) or not math.isfinite(score):
        return f"score {score!r} is not a finite float"
    name = getattr(report, "score_mechanism", PUBLIC_SCORE)
    expected = PUBLIC_SCORE if score_mechanism is None else score_mechanism.name
    if name != expected:
        return f"score_mechanism {name!r}, the aggregator expects {expected!r}"
    if score_mechanism is None:
        return None
    epsilon = getattr(report, "score_epsilon", _MISSING)
    if not isinstance(epsilon, float) or epsilon != score_mechanism.epsilon:
        return f"score_epsilon {epsilon!r}, the aggregator expects {score_mechanism.epsilon!r}"
    if score not in score_mechanism.output_set:
        return f"score {score!r} not in the score mechanism's output set"
    if getattr(report, "env_steps", _MISSING) != 0:
        # A private score is the only release of the episode's length.
        return "env_steps must be 0 with a private score"
    return None


def _check_scalars(report: Any, *, max_weights_version: int) -> str | None:
    """The public scalars: types and ranges a local agent's real episode gives."""
    env_steps = getattr(report, "env_steps", _MISSING)
    if not _is_int(env_steps) or env_steps < 0:
        return f"env_steps {env_steps!r} is not an int >= 0"
    version = getattr(report, "weights_version", _MISSING)
    if not _is_int(version) or not 0 <= version <= max_weights_version:
        return f"weights_version {version!r} is not an int in [0, {max_weights_version}]"
    agent_id = getattr(report, "agent_id", _MISSING)
    if agent_id is not _MISSING and not isinstance(agent_id, str):
        return f"agent_id {agent_id!r} is not a str"
    sequence = getattr(report, "agent_sequence", _MISSING)
    if sequence is not _MISSING and (not _is_int(sequence) or sequence < 1):
        return f"agent_sequence {sequence!r} is not an int >= 1"
    return None


def check_report(
    report: Any,
    *,
    mechanism: GradientMechanism,
    dim: int,
    max_weights_version: int,
    score_mechanism: Any = None,
    false_rejection_rate: float = DEFAULT_FALSE_REJECTION_RATE,
) -> str | None:
    """Why ``report`` must not be applied, or None if it may be.

    Checked, in order: the mechanism name and ε it claims are the configured ones (so the
    ledger charges what the release really cost); the score (with a private score: the
    configured score mechanism's name, ε and output set, and ``env_steps`` 0; else a
    finite float); the other scalars (``env_steps`` an int >= 0, ``weights_version`` an int in
    ``[0, max_weights_version]``, and ``agent_id`` a str and ``agent_sequence`` an int >= 1
    when the report carries them); the gradient is in ``mechanism``'s output set
    (shape ``(dim,)``, float32, finite, and the mechanism's own set:
    ``GradientMechanism.check_output``).

    Args:
        report: A ``GradientSubmission`` (or a report without ids) as received: any object.
        mechanism: The configured mechanism (``LDPA3CConfig.get_gradient_mechanism``).
        dim: Number of parameters of the model.
        max_weights_version: The newest θ version sent so far.
        score_mechanism: The configured private-score mechanism (with ``name``,
            ``epsilon`` and ``output_set``), or None when scores are public.
        false_rejection_rate: Passed to ``check_output`` (PrivUnitG, Laplace).

    Returns:
        None, or a one-line reason naming the field.

    """
    name = getattr(report, "mechanism", _MISSING)
    if name != mechanism.name:
        return f"mechanism {name!r}, the aggregator expects {mechanism.name!r}"
    epsilon = getattr(report, "epsilon", _MISSING)
    if (
        not isinstance(epsilon, float)
        or isinstance(epsilon, bool)
        or epsilon != mechanism.epsilon_per_release
    ):
        return f"epsilon {epsilon!r}, the aggregator expects {mechanism.epsilon_per_release!r}"
    reason = _check_score(report, score_mechanism) or _check_scalars(
        report, max_weights_version=max_weights_version
    )
    if reason is not None:
        return reason
    gradient = getattr(report, "gradient", None)
    if isinstance(gradient, np.ndarray) and gradient.dtype == np.float64:
        # Agents send float32 (GradientSubmission); float64 is not what they are built to send.
        return "gradient: dtype float64, expected float32"
    reason = mechanism.check_output(gradient, dim=dim, false_rejection_rate=false_rejection_rate)
    return None if reason is None else f"gradient: {reason}"


def rejected_charges(
    report: Any, *, mechanism: GradientMechanism, score_mechanism: Any, ledger: LDPLedger
) -> list[LDPReport]:
    """The releases a refused report is charged as: what an honest one would cost.

    A refused report still left its sender's device: an honest agent's report refused by
    a statistical check (at the false-rejection rate) spent its ε all the same. So it is
    charged the configured ε of one release (the gradient's, and the score's when scores
    are private), never what it claims. Nothing is charged when it names no well-formed
    agent and sequence number (no one to charge), when its number is already recorded (a
    duplicate, or a forged id of an honest agent: charging it would let anyone exhaust
    another agent's budget), or when the agent cannot afford it (the ledger never goes
    above the budget; that agent's guarantee is already the whole budget).

    Args:
        report: The refused report, as received.
        mechanism: The configured gradient mechanism.
        score_mechanism: The configured private-score mechanism, or None.
        ledger: The aggregator's per-agent ledger (only read here).

    Returns:
        The events to journal and record (empty: charge nothing).

    """
    agent = getattr(report, "agent_id", None)
    sequence = getattr(report, "agent_sequence", None)
    if not isinstance(agent, str) or not _is_int(sequence):
        return []
    if sequence <= ledger.releases_of(agent, mechanism.name):
        return []
    events = [
        LDPReport(agent_id=agent, epsilon=mechanism.epsilon_per_release, mechanism=mechanism.name)
    ]
    if score_mechanism is not None:
        events.append(
            LDPReport(
                agent_id=agent,
                epsilon=float(score_mechanism.epsilon),
                mechanism=score_mechanism.name,
            )
        )
    total = LDPReport(
        agent_id=agent, epsilon=sum(e.epsilon for e in events), mechanism=mechanism.name
    )
    return events if ledger.can_afford(total) else []
