"""Rényi-DP composition of Dirichlet answers, converted to (ε, δ) at a target δ."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from rllib_privacy.accounting.accountants.base import Accountant, register_accountant
from rllib_privacy.accounting.dirichlet_renyi import (
    DEFAULT_ORDERS,
    _check_orders,
    dirichlet_rdp,
    rdp_to_epsilon,
)
from rllib_privacy.accounting.events import DirichletAnswer, PrivacyEvent

__all__ = ["RDPAccountant"]


# Cached because every can_afford/spent query needs each curve again, and the m > 2 bound
# costs ~0.5 s per distinct k (a run has about one distinct k per rollout).
@functools.lru_cache(maxsize=1024)
def release_curve(
    orders: tuple[float, ...], k: float, eta: float, radius: float, num_actions: int
) -> np.ndarray:
    """The RDP curve of one Dirichlet release (read-only array, one entry per order)."""
    curve = dirichlet_rdp(orders, k=k, eta=eta, radius=radius, num_actions=num_actions)
    curve.setflags(write=False)
    return curve


@register_accountant
class RDPAccountant(Accountant):
    """Adds the RDP curves of the answers, order by order; ε at δ by the standard conversion.

    The history keeps one entry per distinct mechanism (k, η, radius, m) with its count, in
    order of first use; the composed curve is Σ count·ε_RDP(a) at every order a, and the
    guarantee is ([rdp_to_epsilon][rllib_privacy.accounting.dirichlet_renyi.rdp_to_epsilon]
    of that curve at δ, δ).

    Args:
        delta: The δ the curve is converted at, in (0, 1).
        orders: Rényi orders (default
            ``rllib_privacy.accounting.dirichlet_renyi.DEFAULT_ORDERS``).

    Raises:
        ValueError: If ``delta`` is not in (0, 1) or the orders are invalid.

    """

    name = "rdp"
    event_types = (DirichletAnswer,)

    def __init__(self, *, delta: float, orders: Sequence[float] | None = None) -> None:
        super().__init__()
        if isinstance(delta, bool) or not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1) for RDP, got {delta!r}")
        self.delta = float(delta)
        self.orders = tuple(
            float(a) for a in _check_orders(DEFAULT_ORDERS if orders is None else orders)
        )

    def check(self, event: PrivacyEvent) -> PrivacyEvent:
        """As the base class; also computes (and caches) the answer's curve, which validates it."""
        super().check(event)
        assert isinstance(event, DirichletAnswer)
        release_curve(self.orders, *event.mechanism)
        return event

    def _merge(self, history: list[PrivacyEvent], event: PrivacyEvent) -> list[PrivacyEvent]:
        # One entry per mechanism wherever it was used before: the curve is a sum, so the
        # order of the releases does not matter, and a run repeats few mechanisms.
        for position, earlier in enumerate(history):
            if earlier.with_count(event.count) == event:
                merged = earlier.with_count(earlier.count + event.count)
                return [*history[:position], merged, *history[position + 1 :]]
        return [*history, event]

    def _restored(self, history: list[PrivacyEvent]) -> list[PrivacyEvent]:
        mechanisms = [event.with_count(1) for event in history]
        if len(set(mechanisms)) != len(mechanisms):
            raise ValueError("an RDP accountant's history lists a mechanism twice")
        return history

    def curve(self, pending: Sequence[PrivacyEvent] = ()) -> np.ndarray:
        """The composed RDP ε at each of ``orders`` (zeros when nothing was released)."""
        curve = np.zeros(len(self.orders))
        for event in self._with(pending):
            assert isinstance(event, DirichletAnswer)
            curve += event.count * release_curve(self.orders, *event.mechanism)
        return curve

    def guarantees(self, pending: Sequence[PrivacyEvent] = ()) -> list[tuple[float, float]]:
        """``[(ε at δ, δ)]``, or ``[(0.0, 0.0)]`` when nothing was released."""
        history = self._with(pending)
        if not history:
            return [(0.0, 0.0)]
        return [(rdp_to_epsilon(self.orders, self.curve(pending), self.delta), self.delta)]
