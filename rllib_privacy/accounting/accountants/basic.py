"""Basic composition of (ε, δ) releases: (Σ ε_i, Σ δ_i) (Dwork & Roth, Theorem 3.16)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from rllib_privacy.accounting.accountants.base import Accountant, register_accountant
from rllib_privacy.accounting.events import EpsilonDeltaRelease, PrivacyEvent

__all__ = ["BasicAccountant", "compose_basic", "epsilon_delta_triples"]


def compose_basic(events: Iterable[tuple[float, float, int]]) -> tuple[float, float]:
    """Basic composition of ``(epsilon, delta, count)`` releases: (Σ count·ε, Σ count·δ).

    Args:
        events: Iterable of ``(epsilon, delta, count)``.

    Returns:
        ``(epsilon, delta)`` (δ is not capped at 1).

    """
    # Skip empty events: 0·inf would be NaN.
    events = [event for event in events if event[2]]
    epsilon = math.fsum(count * eps for eps, _, count in events)
    delta = math.fsum(count * dlt for _, dlt, count in events)
    return epsilon, delta


def epsilon_delta_triples(events: Iterable[PrivacyEvent]) -> list[tuple[float, float, int]]:
    """``(epsilon, delta, count)`` of each (ε, δ) release, for the composition functions."""
    triples = []
    for event in events:
        assert isinstance(event, EpsilonDeltaRelease)  # checked by the accountant on entry
        triples.append((event.epsilon, event.delta, event.count))
    return triples


@register_accountant
class BasicAccountant(Accountant):
    """Sums ε and δ over (ε, δ) releases; valid for any mechanisms, adaptively chosen."""

    name = "basic"
    event_types = (EpsilonDeltaRelease,)

    def guarantees(self, pending: Sequence[PrivacyEvent] = ()) -> list[tuple[float, float]]:
        """``[(Σ ε, Σ δ)]`` over the history plus ``pending``."""
        return [compose_basic(epsilon_delta_triples(self._with(pending)))]
