"""The kickstarting teacher's privacy ledger: releases at (k, ε, δ), composed, within a budget.

docs/privacy-journal.md: the teacher owns its budget and every answered state is one release of the
Dirichlet mechanism at the current concentration k, with the (ε, δ) of Theorem 1
(``rllib_privacy.accounting.dirichlet_privacy``). The ledger records events
``(k, epsilon, delta, count)`` (``count`` states answered at that (ε, δ); consecutive events
with the same (k, ε, δ) are merged, so a run has about one event per rollout) and always
recomputes the spent (ε, δ) from them.

Composition:

* ``"rdp"``: Rényi DP (docs/components/kickstarting.md#privacy-accounting). Each release is
  recorded with its k and its mechanism (η, radius = (1 − mη)·L·b, m); the ledger keeps a
  count per distinct (k, η, radius, m), the RDP curve is Σ count·ε_RDP(a) at every order a
  (``rllib_privacy.accounting.dirichlet_renyi.dirichlet_rdp``, cached per distinct
  release) and the spent pair is (``rdp_to_epsilon``
  of that curve at δ_target, δ_target) with δ_target = ``delta_budget``. The per-release
  (ε, δ) of Theorem 1 play no part (no per-release δ, no ln(1/τ) term).
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

import functools
import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from rllib_privacy._validation import check_finite_positive, check_int_in_range
from rllib_privacy.accounting._state import check_state_header
from rllib_privacy.accounting.dirichlet import _check_nonnegative
from rllib_privacy.accounting.dirichlet_renyi import (
    DEFAULT_ORDERS,
    _check_orders,
    dirichlet_rdp,
    rdp_to_epsilon,
)
from rllib_privacy.accounting.ldp_ledger import _encode_epsilon, _within_budget
from rllib_privacy.accounting.ledger import Ledger
from rllib_privacy.errors import BudgetExhaustedError

__all__ = ["COMPOSITIONS", "TeacherLedger", "compose_advanced", "compose_basic"]

COMPOSITIONS = ("rdp", "basic", "advanced")
_FORMAT = "rllib_privacy.TeacherLedger"
_VERSION = 2
_STATE_KEYS_V1 = frozenset(
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
_STATE_KEYS = _STATE_KEYS_V1 | {"orders", "rdp_releases"}
_DEFAULT_SLACK = 1e-6

Event = tuple[float, float, float, int]  # (k, epsilon, delta, count)
#: The mechanism of one RDP release: (k, eta, radius, num_actions).
RDPRelease = tuple[float, float, float, int]


# Cached because every can_afford/spent query needs each curve again, and the m > 2 bound
# costs ~0.5 s per distinct k (a run has about one distinct k per rollout).
@functools.lru_cache(maxsize=1024)
def _release_curve(
    orders: tuple[float, ...], k: float, eta: float, radius: float, num_actions: int
) -> np.ndarray:
    """The RDP curve of one Dirichlet release (read-only array, one entry per order)."""
    curve = dirichlet_rdp(orders, k=k, eta=eta, radius=radius, num_actions=num_actions)
    curve.setflags(write=False)
    return curve


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
    """Undo ``_encode_epsilon``: ``"inf"`` becomes ``math.inf``; other values pass through."""
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
            the meaningful range). Under ``"rdp"`` it is δ_target, the δ at which the RDP
            curve is converted to ε, and must be in (0, 1).
        composition: ``"rdp"``, ``"basic"`` or ``"advanced"`` (see the module docstring).
            ``"rdp"`` releases must carry their mechanism (``eta``, ``radius``,
            ``num_actions``) besides ``k``.
        advanced_delta_slack: δ' of advanced composition, in (0, 1); it counts towards
            ``delta_budget``. Ignored for ``"basic"`` and ``"rdp"``.
        orders: Rényi orders of the ``"rdp"`` curve (default
            ``DEFAULT_ORDERS``).
        ledger_id: Identity (see ``Ledger``); None
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
        orders: Sequence[float] | None = None,
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
        if composition == "rdp" and not 0.0 < self._delta_budget < 1.0:
            raise ValueError(
                "delta_budget must be in (0, 1) under rdp composition (it is the δ the RDP "
                f"curve is converted at), got {delta_budget!r}"
            )
        self._composition = composition
        self._slack = _check_unit(
            "advanced_delta_slack", advanced_delta_slack, open_low=True, open_high=True
        )
        self._orders = tuple(
            float(a) for a in _check_orders(DEFAULT_ORDERS if orders is None else orders)
        )
        self._events: list[list[float | int]] = []  # [k, epsilon, delta, count]
        # "rdp": releases per distinct mechanism, in order of first use.
        self._rdp_counts: dict[RDPRelease, int] = {}

    # ------------------------------------------------------------------ composition

    def _compose(self, events: list[tuple[float, float, int]]) -> tuple[float, float]:
        basic = compose_basic(events)
        if self._composition == "basic":
            return basic
        candidates = [basic, compose_advanced(events, delta_slack=self._slack)]
        affordable = [pair for pair in candidates if self._fits(pair)]
        # Both pairs are valid guarantees: report the tighter ε among those within budget.
        return min(affordable or candidates)

    def _rdp_spent(self, counts: dict[RDPRelease, int]) -> tuple[float, float]:
        if not any(counts.values()):
            return 0.0, 0.0
        curve = np.zeros(len(self._orders))
        for (k, eta, radius, m), count in counts.items():
            curve += count * _release_curve(self._orders, k, eta, radius, m)
        return rdp_to_epsilon(self._orders, curve, self._delta_budget), self._delta_budget

    def _rdp_with(self, release: RDPRelease | None, count: int) -> dict[RDPRelease, int]:
        counts = dict(self._rdp_counts)
        if release is not None and count:
            counts[release] = counts.get(release, 0) + count
        return counts

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
        """``"rdp"``, ``"basic"`` or ``"advanced"``."""
        return self._composition

    @property
    def orders(self) -> tuple[float, ...]:
        """Rényi orders of the ``"rdp"`` curve."""
        return self._orders

    @property
    def rdp_releases(self) -> tuple[tuple[float, float, float, int, int], ...]:
        """``"rdp"`` releases ``(k, eta, radius, num_actions, count)``, by first use."""
        return tuple((*release, count) for release, count in self._rdp_counts.items())

    def rdp_curve(self) -> np.ndarray:
        """The composed RDP ε at each of ``orders`` (zeros without ``"rdp"`` releases)."""
        curve = np.zeros(len(self._orders))
        for (k, eta, radius, m), count in self._rdp_counts.items():
            curve += count * _release_curve(self._orders, k, eta, radius, m)
        return curve

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
        if self._composition == "rdp":
            return self._rdp_spent(self._rdp_counts)
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
        return sum(int(event[3]) for event in self._events) + sum(self._rdp_counts.values())

    @property
    def releases(self) -> int:
        """Same as ``num_releases``."""
        return self.num_releases

    @property
    def events(self) -> tuple[Event, ...]:
        """The recorded events ``(k, epsilon, delta, count)``, oldest first (not ``"rdp"``)."""
        return tuple(
            (float(k), float(eps), float(dlt), int(count)) for k, eps, dlt, count in self._events
        )

    @property
    def last_k(self) -> float | None:
        """The concentration k of the most recent release (None if nothing was recorded)."""
        if self._composition == "rdp":
            # Counts are kept per mechanism: the newest distinct k (k only decays in a run).
            return next(reversed(self._rdp_counts))[0] if self._rdp_counts else None
        return float(self._events[-1][0]) if self._events else None

    @staticmethod
    def _check_release(k: Any, epsilon: Any, delta: Any, count: Any) -> Event:
        return (
            check_finite_positive("k", k, allow_inf=True),
            _check_epsilon("epsilon", epsilon),
            _check_unit("delta", delta),
            check_int_in_range("count", count, low=0),
        )

    def _check_mechanism(self, k: Any, eta: Any, radius: Any, num_actions: Any) -> RDPRelease:
        missing = [
            name
            for name, value in (("eta", eta), ("radius", radius), ("num_actions", num_actions))
            if value is None
        ]
        if missing:
            raise ValueError(
                f"rdp composition needs each release's mechanism: pass {', '.join(missing)}"
            )
        release = (
            check_finite_positive("k", k),
            check_finite_positive("eta", eta),
            _check_nonnegative("radius", radius),
            check_int_in_range("num_actions", num_actions, low=2),
        )
        # Validates η < 1/m and the rest once, and warms the cache.
        _release_curve(self._orders, *release)
        return release

    def _check_args(
        self,
        *,
        count: Any,
        k: Any = None,
        epsilon: Any = None,
        delta: Any = None,
        eta: Any = None,
        radius: Any = None,
        num_actions: Any = None,
    ) -> tuple[Event, RDPRelease | None]:
        """Validate a release; what a composition does not use may be None."""
        count = check_int_in_range("count", count, low=0)
        if self._composition == "rdp":
            release = self._check_mechanism(k, eta, radius, num_actions)
            event = (release[0], math.nan, math.nan, count)
            return event, release
        for name, value in (("epsilon", epsilon), ("delta", delta)):
            if value is None:
                raise ValueError(f"{self._composition} composition needs each release's {name}")
        return self._check_release(1.0 if k is None else k, epsilon, delta, count), None

    def can_afford(self, **release: Any) -> bool:
        """Whether more releases would keep the totals within the budgets.

        ``"basic"``/``"advanced"`` use the per-release (ε, δ); ``"rdp"`` uses the mechanism
        (k, η, radius, m) and compares ε of the curve after the releases, at δ_target, with
        the ε budget.

        Args:
            **release: The keyword arguments of ``record``: ``count``, and ``epsilon``
                and ``delta`` (``"basic"``/``"advanced"``; ``k`` optional) or ``k``,
                ``eta``, ``radius`` and ``num_actions`` (``"rdp"``).

        Returns:
            True if ``record`` would accept them.

        Raises:
            ValueError: If an argument is out of range or one the composition needs is
                missing.

        """
        (_, epsilon, delta, count), mechanism = self._check_args(**release)
        if count == 0:
            return True
        return self._fits(self._after(mechanism, epsilon, delta, count))

    def _after(
        self, release: RDPRelease | None, epsilon: float, delta: float, count: int
    ) -> tuple[float, float]:
        if release is not None:
            return self._rdp_spent(self._rdp_with(release, count))
        return self._compose([*self._triples(), (epsilon, delta, count)])

    # ------------------------------------------------------------------ recording

    def record(
        self,
        *,
        k: float,
        count: int,
        epsilon: float | None = None,
        delta: float | None = None,
        eta: float | None = None,
        radius: float | None = None,
        num_actions: int | None = None,
    ) -> float:
        """Record ``count`` releases at concentration k.

        Args:
            k: The concentration k used, a number > 0 (``math.inf``: no noise; not with
                ``"rdp"``).
            count: Number of answered states, an int >= 0 (0 records nothing).
            epsilon: ε of each release, a number >= 0 (``math.inf`` allowed); needed by
                ``"basic"``/``"advanced"``.
            delta: δ of each release, in [0, 1]; needed by ``"basic"``/``"advanced"``.
            eta: Restriction η in (0, 1/m); needed by ``"rdp"``.
            radius: L2 distance allowed between adjacent restricted policies,
                (1 − mη)·L·b; needed by ``"rdp"``.
            num_actions: m, an int >= 2; needed by ``"rdp"``.

        Returns:
            The composed ε after recording.

        Raises:
            ValueError: If an argument is out of range (the message names it).
            BudgetExhaustedError: If the releases would take ε or δ over its budget;
                nothing is recorded then.

        """
        (k, epsilon, delta, count), release = self._check_args(
            count=count,
            k=k,
            epsilon=epsilon,
            delta=delta,
            eta=eta,
            radius=radius,
            num_actions=num_actions,
        )
        if count == 0:
            return self.epsilon_spent
        after = self._after(release, epsilon, delta, count)
        if not self._fits(after):
            spent_eps, spent_delta = self.spent
            what = (
                f"with mechanism (k, eta, radius, num_actions)={release!r}"
                if release is not None
                else f"at (epsilon={epsilon!r}, delta={delta!r})"
            )
            raise BudgetExhaustedError(
                f"teacher has spent (epsilon={spent_eps!r}, delta={spent_delta!r}) of its budget "
                f"(epsilon={self._epsilon_budget!r}, delta={self._delta_budget!r}); {count} more "
                f"releases {what} would reach "
                f"(epsilon={after[0]!r}, delta={after[1]!r}) under {self._composition} composition"
            )
        self._append(k, epsilon, delta, count, release)
        return after[0]

    def replay(self, **release: Any) -> None:
        """Re-record releases read back from a privacy journal, even beyond the budget.

        The journal holds releases that may have left the teacher before a crash: they count
        whatever the budget says now (e.g. a smaller budget on resume), and afterwards
        ``can_afford`` refuses. Events merge exactly as in ``record``, so replaying a
        journal reproduces the ledger of the uninterrupted run.

        Args:
            **release: The keyword arguments of ``record`` (``k``, ``count`` and what
                the composition needs).

        Raises:
            ValueError: If an argument is out of range (the message names it).

        """
        (k, epsilon, delta, count), mechanism = self._check_args(**release)
        if count:
            self._append(k, epsilon, delta, count, mechanism)

    def _append(
        self, k: float, epsilon: float, delta: float, count: int, release: RDPRelease | None
    ) -> None:
        if release is not None:
            self._rdp_counts[release] = self._rdp_counts.get(release, 0) + count
        else:
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

            {"format": "rllib_privacy.TeacherLedger", "version": 2,
             "epsilon_budget": float | "inf", "delta_budget": float,
             "composition": "rdp" | "basic" | "advanced", "advanced_delta_slack": float,
             "events": [[k, epsilon, delta, count], ...],   # k, epsilon: float | "inf"
             "orders": [float, ...],
             "rdp_releases": [[k, eta, radius, num_actions, count], ...]}

        Version 1 (before ``"rdp"``) had no ``orders`` and ``rdp_releases``; it still loads.

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
            "orders": list(self._orders),
            "rdp_releases": [list(release) for release in self.rdp_releases],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace this ledger's contents (budgets and settings included) with a state.

        The state is fully validated before anything changes. Releases beyond the state's
        budget (replayed from a journal) are loaded as they are; nothing more is affordable
        then. ``ledger_id`` is kept.

        Args:
            state: A dict produced by ``state_dict`` (possibly through JSON).

        Raises:
            ValueError: If ``state`` is not in that format.

        """
        old = isinstance(state, dict) and state.get("version") == 1
        check_state_header(
            state,
            keys=_STATE_KEYS_V1 if old else _STATE_KEYS,
            format_name=_FORMAT,
            version=1 if old else _VERSION,
            owner="TeacherLedger",
        )
        restored = TeacherLedger(
            epsilon_budget=_decode_number("state['epsilon_budget']", state["epsilon_budget"]),
            delta_budget=state["delta_budget"],
            composition=state["composition"],
            advanced_delta_slack=state["advanced_delta_slack"],
            orders=None if old else state["orders"],
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
        raw_rdp = [] if old else state["rdp_releases"]
        if not isinstance(raw_rdp, list):
            raise ValueError(f"state['rdp_releases'] must be a list, got {type(raw_rdp).__name__}")
        if raw_rdp and restored._composition != "rdp":
            raise ValueError(
                f"state['rdp_releases'] must be empty under {restored._composition} composition"
            )
        rdp_counts: dict[RDPRelease, int] = {}
        for position, raw in enumerate(raw_rdp):
            where = f"state['rdp_releases'][{position}]"
            if not isinstance(raw, list | tuple) or len(raw) != 5:
                raise ValueError(f"{where} must be [k, eta, radius, num_actions, count]")
            release = restored._check_mechanism(*raw[:4])
            count = check_int_in_range(f"{where} count", raw[4], low=1)
            if release in rdp_counts:
                raise ValueError(f"{where} repeats the mechanism {release!r}")
            rdp_counts[release] = count
        if events and restored._composition == "rdp":
            raise ValueError("state['events'] must be empty under rdp composition")
        # Releases beyond the budget (replayed from a journal) load as they are: the spend
        # happened, and refusing it would make the checkpoint unrestorable. Nothing more is
        # affordable then.
        restored._events = events
        restored._rdp_counts = rdp_counts
        restored._ledger_id = self._ledger_id  # identity stays with this ledger's journal
        self.__dict__.update(restored.__dict__)

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> TeacherLedger:
        """Build a ledger from a ``state_dict`` (see ``load_state_dict``)."""
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
