"""The kickstarting teacher's privacy ledger: releases at (k, ε, δ), composed, within a budget.

docs/privacy-journal.md: the teacher owns its budget and every answered state is one release of the
Dirichlet mechanism at the current concentration k, with the (ε, δ) of Theorem 1
(:func:`rllib_privacy.accounting.dirichlet_privacy`). The ledger records events
``(k, epsilon, delta, count)`` (``count`` states answered at that (ε, δ); consecutive events
with the same (k, ε, δ) are merged, so a run has about one event per rollout) and always
recomputes the spent (ε, δ) from them.

Composition:

* ``"basic"``: (Σ count·ε_i, Σ count·δ_i) (Dwork & Roth, Thm 3.16).
* ``"advanced"``: the heterogeneous bound of Kairouz, Oh & Viswanath (2015, Thm 3.5), with a
  slack δ' (``advanced_delta_slack``): ε = min{Σε_i, Σε_i·tanh(ε_i/2) +
  sqrt(2·Σε_i²·ln(e + sqrt(Σε_i²)/δ')), Σε_i·tanh(ε_i/2) + sqrt(2·Σε_i²·ln(1/δ'))} at
  δ = 1 − (1 − δ')·Π(1 − δ_i) (note ε(e^ε − 1)/(e^ε + 1) = ε·tanh(ε/2)). Both this pair and
  the basic pair are valid guarantees, so the ledger reports whichever has the smaller ε
  among those within the budgets. For equal ε it is never worse than Dwork & Roth Thm 3.20.

Note that with the paper's per-state δ ≈ 0.05, basic composition exceeds δ = 1 after 20
answered states: δ budgets are only meaningful with a much smaller per-release δ (smaller τ).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

from rllib_privacy.accounting._state import check_state_header
from rllib_privacy.accounting.ldp_ledger import _encode_epsilon, _within_budget
from rllib_privacy.accounting.ledger import Ledger
from rllib_privacy.errors import BudgetExhaustedError
from rllib_privacy.mechanisms._validation import check_finite_positive, check_int_in_range

__all__ = ["COMPOSITIONS", "TeacherLedger", "compose_advanced", "compose_basic"]

COMPOSITIONS = ("basic", "advanced")
_FORMAT = "rllib_privacy.TeacherLedger"
_VERSION = 1
_STATE_KEYS = frozenset(
    {
        "format",
        "version",
        "epsilon_budget",
        "delta_budget",
        "composition",
        "advanced_delta_slack",
        "events",
    }
)
_DEFAULT_SLACK = 1e-6

Event = tuple[float, float, float, int]  # (k, epsilon, delta, count)


def _check_unit(name: str, value: Any, *, open_low: bool = False, open_high: bool = False) -> float:
    """Check a probability-like number in [0, 1] (ends optionally open), naming the argument."""
    low, high = ("(" if open_low else "["), (")" if open_high else "]")
    allowed = f"a number in {low}0, 1{high}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    value = float(value)
    too_low = value <= 0.0 if open_low else value < 0.0
    too_high = value >= 1.0 if open_high else value > 1.0
    if too_low or too_high:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return value


def _check_epsilon(name: str, value: Any) -> float:
    """ε of a release: a number >= 0, ``math.inf`` allowed (a non-private release)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ValueError(f"{name} must be a number >= 0 (math.inf allowed), got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a number >= 0 (math.inf allowed), got {value!r}")
    return float(value)


def _decode_number(name: str, value: Any) -> Any:
    """Undo :func:`_encode_epsilon`: ``"inf"`` becomes ``math.inf``; other values pass through."""
    if value == "inf":
        return math.inf
    if isinstance(value, str):
        raise ValueError(f"{name} must be a number or the string 'inf', got {value!r}")
    return value


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
    delta_slack = _check_unit("delta_slack", delta_slack, open_low=True, open_high=True)
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


class TeacherLedger(Ledger):
    """Composed (ε, δ) of a teacher's Dirichlet releases, refusing releases beyond its budget.

    Privacy unit: one teacher answer under observation adjacency b (two observations within
    L2 distance b are neighbours; Gohari et al., Definition 1).

    Args:
        epsilon_budget: The most ε the teacher may spend, a number > 0 (``math.inf``: no
            ε limit).
        delta_budget: The most δ it may spend, in [0, 1] (default 1.0: no δ limit beyond
            the meaningful range).
        composition: ``"basic"`` or ``"advanced"`` (see the module docstring).
        advanced_delta_slack: δ' of advanced composition, in (0, 1); it counts towards
            ``delta_budget``. Ignored for ``"basic"``.
        ledger_id: Identity (see :class:`~rllib_privacy.accounting.ledger.Ledger`); None
            draws a fresh one.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    Example:
        >>> ledger = TeacherLedger(epsilon_budget=10.0)
        >>> ledger.record(k=5.0, epsilon=4.0, delta=1e-3, count=2)
        8.0
        >>> ledger.can_afford(epsilon=4.0, delta=1e-3, count=1)
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
        advanced_delta_slack: float = _DEFAULT_SLACK,
        ledger_id: str | None = None,
    ) -> None:
        super().__init__(ledger_id=ledger_id)
        self._epsilon_budget = check_finite_positive(
            "epsilon_budget", epsilon_budget, allow_inf=True
        )
        self._delta_budget = _check_unit("delta_budget", delta_budget)
        if composition not in COMPOSITIONS:
            raise ValueError(
                f"composition must be one of {list(COMPOSITIONS)}, got {composition!r}"
            )
        self._composition = composition
        self._slack = _check_unit(
            "advanced_delta_slack", advanced_delta_slack, open_low=True, open_high=True
        )
        self._events: list[list[float | int]] = []  # [k, epsilon, delta, count]

    # ------------------------------------------------------------------ composition

    def _compose(self, events: list[tuple[float, float, int]]) -> tuple[float, float]:
        basic = compose_basic(events)
        if self._composition == "basic":
            return basic
        candidates = [basic, compose_advanced(events, delta_slack=self._slack)]
        affordable = [pair for pair in candidates if self._fits(pair)]
        # Both pairs are valid guarantees: report the tighter ε among those within budget.
        return min(affordable or candidates)

    def _fits(self, pair: tuple[float, float]) -> bool:
        epsilon, delta = pair
        return _within_budget(epsilon, self._epsilon_budget) and _within_budget(
            delta, self._delta_budget
        )

    def _triples(self) -> list[tuple[float, float, int]]:
        return [(eps, dlt, count) for _, eps, dlt, count in self._events]

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
        """``"basic"`` or ``"advanced"``."""
        return self._composition

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
        """The composed ``(epsilon, delta)`` of all recorded releases, (0.0, 0.0) if none."""
        if not self._events:
            return 0.0, 0.0
        return self._compose(self._triples())

    @property
    def epsilon_spent(self) -> float:
        """Composed ε of all recorded releases (recomputed from the events)."""
        return self.spent[0]

    @property
    def delta_spent(self) -> float:
        """Composed δ of all recorded releases (recomputed from the events)."""
        return self.spent[1]

    @property
    def remaining_epsilon(self) -> float:
        """``max(0, epsilon_budget − epsilon_spent)``."""
        return max(0.0, self._epsilon_budget - self.epsilon_spent)

    @property
    def remaining_delta(self) -> float:
        """``max(0, delta_budget − delta_spent)``."""
        return max(0.0, self._delta_budget - self.delta_spent)

    @property
    def num_releases(self) -> int:
        """Number of answered states (releases) recorded."""
        return sum(int(event[3]) for event in self._events)

    @property
    def releases(self) -> int:
        """Same as :attr:`num_releases`."""
        return self.num_releases

    @property
    def events(self) -> tuple[Event, ...]:
        """The recorded events ``(k, epsilon, delta, count)``, oldest first."""
        return tuple(
            (float(k), float(eps), float(dlt), int(count)) for k, eps, dlt, count in self._events
        )

    @property
    def last_k(self) -> float | None:
        """The concentration k of the most recent release (None if nothing was recorded)."""
        return float(self._events[-1][0]) if self._events else None

    @staticmethod
    def _check_release(k: Any, epsilon: Any, delta: Any, count: Any) -> Event:
        return (
            check_finite_positive("k", k, allow_inf=True),
            _check_epsilon("epsilon", epsilon),
            _check_unit("delta", delta),
            check_int_in_range("count", count, low=0),
        )

    def can_afford(self, *, epsilon: float, delta: float, count: int) -> bool:
        """Whether ``count`` more releases at (ε, δ) would keep the totals within the budgets.

        Args:
            epsilon: ε of each release, a number >= 0.
            delta: δ of each release, in [0, 1].
            count: Number of releases (answered states), an int >= 0.

        Returns:
            True if :meth:`record` would accept them.

        Raises:
            ValueError: If an argument is out of range.

        """
        _, epsilon, delta, count = self._check_release(1.0, epsilon, delta, count)
        if count == 0:
            return True
        return self._fits(self._compose([*self._triples(), (epsilon, delta, count)]))

    # ------------------------------------------------------------------ recording

    def record(self, *, k: float, epsilon: float, delta: float, count: int) -> float:
        """Record ``count`` releases at concentration k with per-release (ε, δ).

        Args:
            k: The concentration k used, a number > 0 (``math.inf``: no noise).
            epsilon: ε of each release, a number >= 0 (``math.inf`` allowed).
            delta: δ of each release, in [0, 1].
            count: Number of answered states, an int >= 0 (0 records nothing).

        Returns:
            The composed ε after recording.

        Raises:
            ValueError: If an argument is out of range (the message names it).
            BudgetExhaustedError: If the releases would take ε or δ over its budget;
                nothing is recorded then.

        """
        k, epsilon, delta, count = self._check_release(k, epsilon, delta, count)
        if count == 0:
            return self.epsilon_spent
        after = self._compose([*self._triples(), (epsilon, delta, count)])
        if not self._fits(after):
            spent_eps, spent_delta = self.spent
            raise BudgetExhaustedError(
                f"teacher has spent (epsilon={spent_eps!r}, delta={spent_delta!r}) of its budget "
                f"(epsilon={self._epsilon_budget!r}, delta={self._delta_budget!r}); {count} more "
                f"releases at (epsilon={epsilon!r}, delta={delta!r}) would reach "
                f"(epsilon={after[0]!r}, delta={after[1]!r}) under {self._composition} composition"
            )
        self._append_event(k, epsilon, delta, count)
        return after[0]

    def replay(self, *, k: float, epsilon: float, delta: float, count: int) -> None:
        """Re-record releases read back from a privacy journal, even beyond the budget.

        The journal holds releases that may have left the teacher before a crash: they count
        whatever the budget says now (e.g. a smaller budget on resume), and afterwards
        :meth:`can_afford` refuses. Events merge exactly as in :meth:`record`, so replaying a
        journal reproduces the ledger of the uninterrupted run.

        Raises:
            ValueError: If an argument is out of range (the message names it).

        """
        k, epsilon, delta, count = self._check_release(k, epsilon, delta, count)
        if count:
            self._append_event(k, epsilon, delta, count)

    def _append_event(self, k: float, epsilon: float, delta: float, count: int) -> None:
        last = self._events[-1] if self._events else None
        if last is not None and (last[0], last[1], last[2]) == (k, epsilon, delta):
            last[3] = int(last[3]) + count
        else:
            self._events.append([k, epsilon, delta, count])

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """Return the ledger as plain JSON-safe types (infinite values become ``"inf"``).

        Format::

            {"format": "rllib_privacy.TeacherLedger", "version": 1,
             "epsilon_budget": float | "inf", "delta_budget": float,
             "composition": "basic" | "advanced", "advanced_delta_slack": float,
             "events": [[k, epsilon, delta, count], ...]}   # k, epsilon: float | "inf"

        """
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "epsilon_budget": _encode_epsilon(self._epsilon_budget),
            "delta_budget": self._delta_budget,
            "composition": self._composition,
            "advanced_delta_slack": self._slack,
            "events": [
                [_encode_epsilon(float(k)), _encode_epsilon(float(eps)), float(dlt), int(count)]
                for k, eps, dlt, count in self._events
            ],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace this ledger's contents (budgets and settings included) with a state.

        The state is fully validated before anything changes. Releases beyond the state's
        budget (replayed from a journal) are loaded as they are; nothing more is affordable
        then. :attr:`ledger_id` is kept.

        Args:
            state: A dict produced by :meth:`state_dict` (possibly through JSON).

        Raises:
            ValueError: If ``state`` is not in that format.

        """
        check_state_header(
            state, keys=_STATE_KEYS, format_name=_FORMAT, version=_VERSION, owner="TeacherLedger"
        )
        restored = TeacherLedger(
            epsilon_budget=_decode_number("state['epsilon_budget']", state["epsilon_budget"]),
            delta_budget=state["delta_budget"],
            composition=state["composition"],
            advanced_delta_slack=state["advanced_delta_slack"],
        )
        raw_events = state["events"]
        if not isinstance(raw_events, list):
            raise ValueError(f"state['events'] must be a list, got {type(raw_events).__name__}")
        events: list[list[float | int]] = []
        for position, raw in enumerate(raw_events):
            where = f"state['events'][{position}]"
            if not isinstance(raw, list | tuple) or len(raw) != 4:
                raise ValueError(f"{where} must be [k, epsilon, delta, count]")
            k, epsilon, delta, count = self._check_release(
                _decode_number(f"{where} k", raw[0]),
                _decode_number(f"{where} epsilon", raw[1]),
                raw[2],
                raw[3],
            )
            if count == 0:
                raise ValueError(f"{where} count must be >= 1, got 0")
            events.append([k, epsilon, delta, count])
        # Releases beyond the budget (replayed from a journal) load as they are: the spend
        # happened, and refusing it would make the checkpoint unrestorable. Nothing more is
        # affordable then.
        restored._events = events
        restored._ledger_id = self._ledger_id  # identity stays with this ledger's journal
        self.__dict__.update(restored.__dict__)

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> TeacherLedger:
        """Build a ledger from a :meth:`state_dict` (see :meth:`load_state_dict`)."""
        ledger = cls(epsilon_budget=math.inf)
        ledger.load_state_dict(state)
        return ledger

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TeacherLedger):
            return NotImplemented
        return self.state_dict() == other.state_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        epsilon, delta = self.spent
        return (
            f"TeacherLedger(epsilon_budget={self._epsilon_budget!r}, "
            f"delta_budget={self._delta_budget!r}, composition={self._composition!r}, "
            f"releases={self.num_releases}, epsilon_spent={epsilon!r}, delta_spent={delta!r})"
        )
