"""Ledger of shuffled batches: the central (ε, δ) an aggregator behind a shuffler gets (no Ray).

An aggregator that receives only shuffled, anonymous batches
([ShuffledBatch][rllib_privacy.accounting.events.ShuffledBatch]) cannot tell which agent sent
which report, so each batch is, for each agent in it, a post-processing of the clone pair of
amplification by shuffling (Feldman, McMillan & Talwar, FOCS 2021 and SODA 2023). The
shuffler puts at most one report of an agent in a batch and an agent sends at most
``rounds`` reports, so an agent is in at most ``min(batches, rounds)`` batches; their
composition at the ledger's δ is
[shuffled_rounds_epsilon][rllib_privacy.accounting.shuffle.shuffled_rounds_epsilon] (PLD
composition of the dominating pairs, adaptive composition included). With batches of
different ε₀ or size the largest ε₀ and the smallest batch are used for all of them: the
bound grows with ε₀ and shrinks with n, so that pair dominates every batch.

The agent ids stay with the shuffler (which keeps the per-agent
[LDPLedger][rllib_privacy.accounting.ldp_ledger.LDPLedger]); this ledger never needs them.
"""

from __future__ import annotations

import math
from typing import Any

from rllib_privacy._validation import (
    check_finite_positive,
    check_int_in_range,
    decode_inf,
    encode_inf,
)
from rllib_privacy.accounting._state import check_state_header
from rllib_privacy.accounting.events import PrivacyEvent, ShuffledBatch
from rllib_privacy.accounting.ledger import Ledger
from rllib_privacy.accounting.shuffle import shuffled_rounds_epsilon

__all__ = ["ShuffleLedger"]

_FORMAT = "rllib_privacy.ShuffleLedger"
_VERSION = 1
_STATE_KEYS = frozenset({"format", "version", "rounds", "delta", "epsilon_budget", "batches"})
# Relative slack for the budget check (ε₀ was chosen to meet the target up to ~1e-6).
_BUDGET_RTOL = 1e-9

_Kind = tuple[float, int]


class ShuffleLedger(Ledger[ShuffledBatch]):
    """Central (ε, δ) of the shuffled batches an aggregator received, for any one agent.

    Privacy unit: one agent's data, against the aggregator (everyone behind the shuffler).
    ``spent`` is ``(shuffled_rounds_epsilon(ε₀, n, δ, rounds=min(batches, rounds)), δ)``
    with ε₀ the largest and n the smallest of the recorded batches; (0, 0) before the first.

    Args:
        rounds: T, the most batches one agent's reports can be in (its number of reports).
        delta: δ of the central guarantee over the T batches, in (0, 1).
        epsilon_budget: The central ε no agent may exceed; ``math.inf`` = no limit.
        ledger_id: Identity (see ``Ledger``); None draws a fresh one.

    Raises:
        ValueError: If an argument is out of range.

    Example:
        >>> ledger = ShuffleLedger(rounds=1, delta=1e-6)
        >>> eps = ledger.record(ShuffledBatch(epsilon0=4.0, num_reports=4096))
        >>> eps < 1.0
        True

    """

    privacy_unit = "one agent's data, against the aggregator behind the shuffler"

    def __init__(
        self,
        *,
        rounds: int = 1,
        delta: float = 1e-6,
        epsilon_budget: float = math.inf,
        ledger_id: str | None = None,
    ) -> None:
        super().__init__(ledger_id=ledger_id)
        self._rounds = check_int_in_range("rounds", rounds, low=1)
        self._delta = _check_delta(delta)
        self._epsilon_budget = check_finite_positive(
            "epsilon_budget", epsilon_budget, allow_inf=True
        )
        self._batches: dict[_Kind, int] = {}

    # ------------------------------------------------------------------ queries

    @property
    def rounds(self) -> int:
        """T: the most batches one agent can appear in."""
        return self._rounds

    def _composed(self, batches: dict[_Kind, int]) -> tuple[float, float]:
        if not batches:
            return 0.0, 0.0
        epsilon0 = max(kind[0] for kind in batches)
        num_reports = min(kind[1] for kind in batches)
        rounds = min(sum(batches.values()), self._rounds)
        epsilon = shuffled_rounds_epsilon(epsilon0, num_reports, self._delta, rounds=rounds)
        return epsilon, self._delta

    @property
    def spent(self) -> tuple[float, float]:
        """The central ``(ε, δ)`` of any one agent so far; (0, 0) before the first batch."""
        return self._composed(self._batches)

    @property
    def budget(self) -> tuple[float, float]:
        """``(epsilon_budget, delta)``."""
        return self._epsilon_budget, self._delta

    @property
    def releases(self) -> int:
        """Number of batches recorded."""
        return sum(self._batches.values())

    @property
    def reports(self) -> int:
        """Number of reports in the recorded batches."""
        return sum(kind[1] * count for kind, count in self._batches.items())

    @property
    def event_types(self) -> tuple[type[PrivacyEvent], ...]:
        """``(ShuffledBatch,)``."""
        return (ShuffledBatch,)

    # ------------------------------------------------------------------ recording

    def _with(self, event: ShuffledBatch) -> dict[_Kind, int]:
        batches = dict(self._batches)
        kind = (event.epsilon0, event.num_reports)
        batches[kind] = batches.get(kind, 0) + event.count
        return batches

    def _affords(self, event: ShuffledBatch) -> bool:
        epsilon, _ = self._composed(self._with(event))
        return epsilon <= self._epsilon_budget + _BUDGET_RTOL * max(1.0, self._epsilon_budget)

    def _refusal(self, event: ShuffledBatch) -> str:
        epsilon, _ = self._composed(self._with(event))
        return (
            f"a shuffled batch of {event.num_reports} reports at epsilon0={event.epsilon0!r} "
            f"would bring the central epsilon of an agent to {epsilon!r} (delta="
            f"{self._delta!r}, over up to {self._rounds} batch(es)), above the budget "
            f"{self._epsilon_budget!r}"
        )

    def _add(self, event: ShuffledBatch) -> float:
        self._batches = self._with(event)
        return self.spent[0]

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """The batches, T, δ and the budget as JSON-safe types.

        Format::

            {"format": "rllib_privacy.ShuffleLedger", "version": 1, "rounds": T,
             "delta": float, "epsilon_budget": float | "inf",
             "batches": [[epsilon0, num_reports, count], ...]}

        """
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "rounds": self._rounds,
            "delta": self._delta,
            "epsilon_budget": encode_inf(self._epsilon_budget),
            "batches": [[*kind, count] for kind, count in self._batches.items()],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the batches, T, δ and the budget with a ``state_dict()``; keep ``ledger_id``.

        Raises:
            ValueError: If ``state`` is not in that format (nothing is changed then).

        """
        check_state_header(
            state, keys=_STATE_KEYS, format_name=_FORMAT, version=_VERSION, owner="ShuffleLedger"
        )
        rounds = check_int_in_range("state['rounds']", state["rounds"], low=1)
        delta = _check_delta(state["delta"])
        epsilon_budget = check_finite_positive(
            "state['epsilon_budget']",
            decode_inf("state['epsilon_budget']", state["epsilon_budget"]),
            allow_inf=True,
        )
        raw = state["batches"]
        if not isinstance(raw, list):
            raise ValueError(f"state['batches'] must be a list, got {type(raw).__name__}")
        batches: dict[_Kind, int] = {}
        for position, entry in enumerate(raw):
            where = f"state['batches'][{position}]"
            if not isinstance(entry, list | tuple) or len(entry) != 3:
                raise ValueError(f"{where} must be [epsilon0, num_reports, count]")
            event = ShuffledBatch(
                epsilon0=entry[0],
                num_reports=entry[1],
                count=check_int_in_range(f"{where} count", entry[2], low=1),
            )
            kind = (event.epsilon0, event.num_reports)
            batches[kind] = batches.get(kind, 0) + event.count
        self._rounds, self._delta, self._epsilon_budget = rounds, delta, epsilon_budget
        self._batches = batches

    def __repr__(self) -> str:
        return (
            f"ShuffleLedger(rounds={self._rounds}, delta={self._delta!r}, "
            f"epsilon_budget={self._epsilon_budget!r}, batches={self.releases}, "
            f"spent={self.spent!r})"
        )


def _check_delta(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise ValueError(f"delta must be a number in (0, 1), got {value!r}")
    return float(value)
