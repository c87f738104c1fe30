"""Advanced composition of (ε, δ) releases (Kairouz, Oh & Viswanath 2015, Theorem 3.5)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

from rllib_privacy.accounting.accountants.base import register_accountant
from rllib_privacy.accounting.accountants.basic import (
    BasicAccountant,
    compose_basic,
    epsilon_delta_triples,
)
from rllib_privacy.accounting.events import PrivacyEvent

__all__ = ["DEFAULT_DELTA_SLACK", "AdvancedAccountant", "compose_advanced"]

#: δ' of advanced composition when none is given.
DEFAULT_DELTA_SLACK = 1e-6


def check_delta_slack(value: Any) -> float:
    """δ' in (0, 1), as a float.

    Raises:
        ValueError: Naming ``delta_slack`` otherwise.

    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
        raise ValueError(f"delta_slack must be a number in (0, 1), got {value!r}")
    return float(value)


def compose_advanced(
    events: Iterable[tuple[float, float, int]], *, delta_slack: float
) -> tuple[float, float]:
    """Heterogeneous advanced composition (Kairouz, Oh & Viswanath 2015, Theorem 3.5).

    ε = min{Σε_i, A + sqrt(2S·ln(e + sqrt(S)/δ')), A + sqrt(2S·ln(1/δ'))} with
    A = Σ ε_i·tanh(ε_i/2) = Σ ε_i(e^{ε_i} − 1)/(e^{ε_i} + 1) and S = Σ ε_i², at
    δ = 1 − (1 − δ')·Π(1 − δ_i), every sum and product over all releases (an event with
    ``count`` c contributes c times).

    Args:
        events: Iterable of ``(epsilon, delta, count)``.
        delta_slack: δ' in (0, 1).

    Returns:
        ``(epsilon, delta)``.

    Raises:
        ValueError: If ``delta_slack`` is not in (0, 1).

    """
    delta_slack = check_delta_slack(delta_slack)
    events = [event for event in events if event[2]]
    basic_epsilon = math.fsum(count * eps for eps, _, count in events)
    if math.isinf(basic_epsilon):
        epsilon = math.inf
    else:
        drift = math.fsum(count * eps * math.tanh(eps / 2.0) for eps, _, count in events)
        squares = math.fsum(count * eps * eps for eps, _, count in events)
        bound_2 = drift + math.sqrt(
            2.0 * squares * math.log(math.e + math.sqrt(squares) / delta_slack)
        )
        bound_3 = drift + math.sqrt(2.0 * squares * math.log(1.0 / delta_slack))
        epsilon = min(basic_epsilon, bound_2, bound_3)
    if any(dlt >= 1.0 for _, dlt, _ in events):
        return epsilon, 1.0
    # 1 − (1 − δ')Π(1 − δ_i)^c in log space: exact for thousands of tiny δ_i.
    log_kept = math.log1p(-delta_slack) + math.fsum(
        count * math.log1p(-dlt) for _, dlt, count in events
    )
    return epsilon, -math.expm1(log_kept)


@register_accountant
class AdvancedAccountant(BasicAccountant):
    """Basic and advanced composition side by side: both pairs are valid guarantees.

    For many small ε_i the advanced pair has the smaller ε at the price of δ' more δ; for
    few or large ones the basic pair wins. For equal ε_i it is never worse than Dwork &
    Roth's Theorem 3.20.

    Args:
        delta_slack: δ' in (0, 1); it counts towards the reported δ.

    """

    name = "advanced"

    def __init__(self, *, delta_slack: float = DEFAULT_DELTA_SLACK) -> None:
        super().__init__()
        self.delta_slack = check_delta_slack(delta_slack)

    def guarantees(self, pending: Sequence[PrivacyEvent] = ()) -> list[tuple[float, float]]:
        """``[basic pair, advanced pair]`` over the history plus ``pending``."""
        triples = epsilon_delta_triples(self._with(pending))
        return [compose_basic(triples), compose_advanced(triples, delta_slack=self.delta_slack)]
