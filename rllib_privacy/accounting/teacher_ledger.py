"""The kickstarting teacher's privacy ledger: releases at (k, ε, δ), composed, within a budget.

docs/privacy-journal.md: the teacher owns its budget and every answered state is one release of the
Dirichlet mechanism at the current concentration k, with the (ε, δ) of Theorem 1
([dirichlet_privacy][rllib_privacy.accounting.dirichlet.dirichlet_privacy]). The ledger
records one event per batch of answered states and always recomputes the spent (ε, δ)
from them, through the accountant its composition names
(``rllib_privacy.accounting.accountants``).

Composition:

* ``"rdp"``: Rényi DP (docs/components/kickstarting.md#privacy-accounting). Each batch is a
  [DirichletAnswer][rllib_privacy.accounting.events.DirichletAnswer] (k, η,
  radius = (1 − mη)·L·b, m, count); the RDP curve is Σ count·ε_RDP(a) at every order a and
  the spent pair is (ε of that curve at δ_target, δ_target) with δ_target =
  ``delta_budget``. The per-release (ε, δ) of Theorem 1 play no part (no per-release δ, no
  ln(1/τ) term).
* ``"basic"``: each batch is an
  [EpsilonDeltaRelease][rllib_privacy.accounting.events.EpsilonDeltaRelease] carrying
  Theorem 1's per-release pair; (Σ count·ε_i, Σ count·δ_i) (Dwork & Roth, Thm 3.16).
* ``"advanced"``: the same events; the heterogeneous bound of Kairouz, Oh & Viswanath
  (2015, Thm 3.5), with a slack δ' (``advanced_delta_slack``): ε = min{Σε_i, Σε_i·tanh(ε_i/2) +
  sqrt(2·Σε_i²·ln(e + sqrt(Σε_i²)/δ')), Σε_i·tanh(ε_i/2) + sqrt(2·Σε_i²·ln(1/δ'))} at
  δ = 1 − (1 − δ')·Π(1 − δ_i) (note ε(e^ε − 1)/(e^ε + 1) = ε·tanh(ε/2)). Both this pair and
  the basic pair are valid guarantees, so the ledger reports whichever has the smaller ε
  among those within the budgets. For equal ε it is never worse than Dwork & Roth Thm 3.20.

Note that with the paper's per-state δ ≈ 0.05, basic composition exceeds δ = 1 after 20
answered states: δ budgets are only meaningful with a much smaller per-release δ (smaller τ).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rllib_privacy._validation import (
    check_finite_positive,
    check_int_in_range,
    decode_inf,
    encode_inf,
)
from rllib_privacy.accounting._state import check_state_header
from rllib_privacy.accounting.accountants import (
    DEFAULT_DELTA_SLACK,
    Accountant,
    RDPAccountant,
    create_accountant,
)
from rllib_privacy.accounting.accountants.advanced import check_delta_slack
from rllib_privacy.accounting.dirichlet_renyi import DEFAULT_ORDERS, _check_orders
from rllib_privacy.accounting.events import (
    DirichletAnswer,
    EpsilonDeltaRelease,
    PrivacyEvent,
    check_probability,
    event_to_dict,
)
from rllib_privacy.accounting.ldp_ledger import _within_budget
from rllib_privacy.accounting.ledger import Ledger

__all__ = ["COMPOSITIONS", "TeacherEvent", "TeacherLedger"]

COMPOSITIONS = ("rdp", "basic", "advanced")
#: The events a teacher ledger records: which one depends on its composition.
TeacherEvent = DirichletAnswer | EpsilonDeltaRelease

_FORMAT = "rllib_privacy.TeacherLedger"
_VERSION = 3
_SETTINGS_KEYS = frozenset(
    {"format", "version", "epsilon_budget", "delta_budget", "composition", "advanced_delta_slack"}
)
_STATE_KEYS = {
    1: _SETTINGS_KEYS | {"events"},
    2: _SETTINGS_KEYS | {"events", "orders", "rdp_releases"},
    3: _SETTINGS_KEYS | {"orders", "accountant"},
}


def _legacy_history(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The accountant history of a version 1 or 2 state (rows of numbers, before events).

    Their basic/advanced rows ``[k, epsilon, delta, count]`` become (ε, δ) releases: k took
    no part in that composition. Their RDP rows ``[k, eta, radius, num_actions, count]``
    become Dirichlet answers.
    """
    history: list[dict[str, Any]] = []
    raw_events = state["events"]
    if not isinstance(raw_events, list):
        raise ValueError(f"state['events'] must be a list, got {type(raw_events).__name__}")
    for position, raw in enumerate(raw_events):
        where = f"state['events'][{position}]"
        if not isinstance(raw, list | tuple) or len(raw) != 4:
            raise ValueError(f"{where} must be [k, epsilon, delta, count]")
        check_finite_positive(f"{where} k", decode_inf(f"{where} k", raw[0]), allow_inf=True)
        release = EpsilonDeltaRelease(
            epsilon=decode_inf(f"{where} epsilon", raw[1]),
            delta=raw[2],
            count=check_int_in_range(f"{where} count", raw[3], low=1),
        )
        history.append(event_to_dict(release))
    raw_rdp = state.get("rdp_releases", [])
    if not isinstance(raw_rdp, list):
        raise ValueError(f"state['rdp_releases'] must be a list, got {type(raw_rdp).__name__}")
    for position, raw in enumerate(raw_rdp):
        where = f"state['rdp_releases'][{position}]"
        if not isinstance(raw, list | tuple) or len(raw) != 5:
            raise ValueError(f"{where} must be [k, eta, radius, num_actions, count]")
        k, eta, radius, num_actions, count = raw
        count = check_int_in_range(f"{where} count", count, low=1)
        answer = DirichletAnswer(k=k, eta=eta, radius=radius, num_actions=num_actions, count=count)
        history.append(event_to_dict(answer))
    return history


class TeacherLedger(Ledger[TeacherEvent]):
    """Composed (ε, δ) of a teacher's Dirichlet releases, refusing releases beyond its budget.

    Privacy unit: one teacher answer under observation adjacency b (two observations within
    L2 distance b are neighbours; Gohari et al., Definition 1).

    Args:
        epsilon_budget: The most ε the teacher may spend, a number > 0 (``math.inf``: no
            ε limit).
        delta_budget: The most δ it may spend, in [0, 1] (default 1.0: no δ limit beyond
            the meaningful range). Under ``"rdp"`` it is δ_target, the δ at which the RDP
            curve is converted to ε, and must be in (0, 1).
        composition: ``"rdp"``, ``"basic"`` or ``"advanced"`` (see the module docstring):
            the name of the accountant. ``"rdp"`` records
            [DirichletAnswer][rllib_privacy.accounting.events.DirichletAnswer] events, the
            others [EpsilonDeltaRelease][rllib_privacy.accounting.events.EpsilonDeltaRelease].
        advanced_delta_slack: δ' of advanced composition, in (0, 1); it counts towards
            ``delta_budget``. Ignored for ``"basic"`` and ``"rdp"``.
        orders: Rényi orders of the ``"rdp"`` curve (default
            ``rllib_privacy.accounting.dirichlet_renyi.DEFAULT_ORDERS``).
        ledger_id: Identity (see [Ledger][rllib_privacy.accounting.ledger.Ledger]); None
            draws a fresh one.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    Example:
        >>> ledger = TeacherLedger(epsilon_budget=10.0)
        >>> ledger.record(EpsilonDeltaRelease(epsilon=4.0, delta=1e-3, count=2))
        8.0
        >>> ledger.can_afford(EpsilonDeltaRelease(epsilon=4.0, delta=1e-3))
        False

    """

    privacy_unit = (
        "one teacher answer: the Dirichlet release for one state, with states within L2 "
        "distance b (the adjacency radius) as neighbours"
    )

    def __init__(
        self,
        *,
        epsilon_budget: float,
        delta_budget: float = 1.0,
        composition: str = "basic",
        advanced_delta_slack: float = DEFAULT_DELTA_SLACK,
        orders: Sequence[float] | None = None,
        ledger_id: str | None = None,
    ) -> None:
        super().__init__(ledger_id=ledger_id)
        self._epsilon_budget = check_finite_positive(
            "epsilon_budget", epsilon_budget, allow_inf=True
        )
        self._delta_budget = check_probability("delta_budget", delta_budget)
        if composition not in COMPOSITIONS:
            raise ValueError(
                f"composition must be one of {list(COMPOSITIONS)}, got {composition!r}"
            )
        if composition == "rdp" and not 0.0 < self._delta_budget < 1.0:
            raise ValueError(
                "delta_budget must be in (0, 1) under rdp composition (it is the δ the RDP "
                f"curve is converted at), got {delta_budget!r}"
            )
        self._composition = composition
        try:
            self._slack: float = check_delta_slack(advanced_delta_slack)
        except ValueError:
            raise ValueError(
                f"advanced_delta_slack must be a number in (0, 1), got {advanced_delta_slack!r}"
            ) from None
        self._orders: tuple[float, ...] = tuple(
            float(a) for a in _check_orders(DEFAULT_ORDERS if orders is None else orders)
        )
        self._accountant: Accountant = self._new_accountant()

    def _new_accountant(self) -> Accountant:
        if self._composition == "rdp":
            return create_accountant("rdp", delta=self._delta_budget, orders=self._orders)
        if self._composition == "advanced":
            return create_accountant("advanced", delta_slack=self._slack)
        return create_accountant("basic")

    # ------------------------------------------------------------------ composition

    def _pair(self, pending: Sequence[PrivacyEvent] = ()) -> tuple[float, float]:
        """The reported (ε, δ) of the history plus ``pending``."""
        candidates = self._accountant.guarantees(pending)
        affordable = [pair for pair in candidates if self._fits(pair)]
        # Every candidate is a valid guarantee: report the tightest ε among those in budget.
        return min(affordable or candidates)

    def _fits(self, pair: tuple[float, float]) -> bool:
        epsilon, delta = pair
        return _within_budget(epsilon, self._epsilon_budget) and _within_budget(
            delta, self._delta_budget
        )

    # ------------------------------------------------------------------ queries

    @property
    def epsilon_budget(self) -> float:
        """The ε budget (``math.inf`` when unlimited)."""
        return self._epsilon_budget

    @property
    def delta_budget(self) -> float:
        """The δ budget."""
        return self._delta_budget

    @property
    def composition(self) -> str:
        """``"rdp"``, ``"basic"`` or ``"advanced"``: the accountant's name."""
        return self._composition

    @property
    def accountant(self) -> Accountant:
        """The accountant composing the recorded events."""
        return self._accountant

    @property
    def event_types(self) -> tuple[type[PrivacyEvent], ...]:
        """``(DirichletAnswer,)`` under ``"rdp"``, else ``(EpsilonDeltaRelease,)``."""
        return self._accountant.event_types

    @property
    def orders(self) -> tuple[float, ...]:
        """Rényi orders of the ``"rdp"`` curve."""
        return self._orders

    @property
    def history(self) -> tuple[PrivacyEvent, ...]:
        """The recorded events, oldest first (repeated releases merged into one count)."""
        return self._accountant.history

    def rdp_curve(self) -> np.ndarray:
        """The composed RDP ε at each of ``orders`` (zeros without ``"rdp"`` releases)."""
        if isinstance(self._accountant, RDPAccountant):
            return self._accountant.curve()
        return np.zeros(len(self._orders))

    @property
    def advanced_delta_slack(self) -> float:
        """δ' used by advanced composition."""
        return self._slack

    @property
    def budget(self) -> tuple[float, float]:
        """``(epsilon_budget, delta_budget)``."""
        return self._epsilon_budget, self._delta_budget

    @property
    def spent(self) -> tuple[float, float]:
        """The composed ``(epsilon, delta)`` of all recorded releases, (0.0, 0.0) if none.

        Under ``"rdp"``: (ε at δ_target, δ_target), δ_target being ``delta_budget``.
        """
        if not self._accountant.releases:
            return 0.0, 0.0
        return self._pair()

    @property
    def epsilon_spent(self) -> float:
        """Composed ε of all recorded releases (recomputed from the events)."""
        return self.spent[0]

    @property
    def delta_spent(self) -> float:
        """Composed δ of all recorded releases (recomputed from the events)."""
        return self.spent[1]

    @property
    def releases(self) -> int:
        """Number of answered states (releases) recorded."""
        return self._accountant.releases

    # ------------------------------------------------------------------ recording

    def _check_settings(self, event: PrivacyEvent) -> None:
        self._accountant.check(event)

    def _affords(self, event: TeacherEvent) -> bool:
        return self._fits(self._pair([event]))

    def _refusal(self, event: TeacherEvent) -> str:
        spent_eps, spent_delta = self.spent
        after_eps, after_delta = self._pair([event])
        return (
            f"teacher has spent (epsilon={spent_eps!r}, delta={spent_delta!r}) of its budget "
            f"(epsilon={self._epsilon_budget!r}, delta={self._delta_budget!r}); {event!r} would "
            f"reach (epsilon={after_eps!r}, delta={after_delta!r}) under {self._composition} "
            "composition"
        )

    def _add(self, event: TeacherEvent) -> float:
        self._accountant.step(event)
        return self.epsilon_spent

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """Return the ledger as plain JSON-safe types (infinite values become ``"inf"``).

        Format::

            {"format": "rllib_privacy.TeacherLedger", "version": 3,
             "epsilon_budget": float | "inf", "delta_budget": float,
             "composition": "rdp" | "basic" | "advanced", "advanced_delta_slack": float,
             "orders": [float, ...],
             "accountant": {"name": composition, "history": [event dict, ...]}}

        Versions 1 and 2 (rows of numbers instead of events) still load.

        """
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "epsilon_budget": encode_inf(self._epsilon_budget),
            "delta_budget": self._delta_budget,
            "composition": self._composition,
            "advanced_delta_slack": self._slack,
            "orders": list(self._orders),
            "accountant": self._accountant.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace this ledger's contents (budgets and settings included) with a state.

        The state is fully validated before anything changes. Releases beyond the state's
        budget (replayed from a journal) are loaded as they are; nothing more is affordable
        then. ``ledger_id`` is kept.

        Args:
            state: A dict produced by ``state_dict`` (possibly through JSON), of this
                version or an earlier one.

        Raises:
            ValueError: If ``state`` is not in such a format.

        """
        version = state.get("version") if isinstance(state, dict) else None
        version = version if version in _STATE_KEYS else _VERSION
        check_state_header(
            state,
            keys=_STATE_KEYS[version],
            format_name=_FORMAT,
            version=version,
            owner="TeacherLedger",
        )
        restored = TeacherLedger(
            epsilon_budget=decode_inf("state['epsilon_budget']", state["epsilon_budget"]),
            delta_budget=state["delta_budget"],
            composition=state["composition"],
            advanced_delta_slack=state["advanced_delta_slack"],
            orders=state.get("orders"),
        )
        if version == _VERSION:
            accountant_state = state["accountant"]
        else:
            accountant_state = {"name": restored.composition, "history": _legacy_history(state)}
        # Releases beyond the budget (replayed from a journal) load as they are: the spend
        # happened, and refusing it would make the checkpoint unrestorable. Nothing more is
        # affordable then.
        restored._accountant.load_state_dict(accountant_state)
        restored._ledger_id = self._ledger_id  # identity stays with this ledger's journal
        self.__dict__.update(restored.__dict__)

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> TeacherLedger:
        """Build a ledger from a ``state_dict`` (see ``load_state_dict``)."""
        ledger = cls(epsilon_budget=math.inf)
        ledger.load_state_dict(state)
        return ledger

    def __repr__(self) -> str:
        epsilon, delta = self.spent
        return (
            f"TeacherLedger(epsilon_budget={self._epsilon_budget!r}, "
            f"delta_budget={self._delta_budget!r}, composition={self._composition!r}, "
            f"releases={self.releases}, epsilon_spent={epsilon!r}, delta_spent={delta!r})"
        )
