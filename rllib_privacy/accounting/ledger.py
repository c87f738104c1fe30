"""The one accounting interface every privacy ledger implements (no Ray import).

Modelled on Opacus's accountants and Google dp-accounting's events: a ledger records typed
*events* (``rllib_privacy.accounting.events``: what was released, through which
mechanism) and recomputes the spent (ε, δ) from them on every query; a spent ε is never
stored on its own (docs/privacy-journal.md).

Every ledger

* names the **privacy unit** it protects (``Ledger.privacy_unit``): the neighbouring
  relation its ε is stated for;
* has a stable **identity** (``Ledger.ledger_id``): the id written in the header of its
  write-ahead journal
  ([ReplayJournal][rllib_privacy.accounting.journal.ReplayJournal]), which is how a
  checkpoint restored anywhere finds the releases made after it;
* takes events through one interface: ``record(event)`` (refused beyond the budget with
  ``BudgetExhaustedError``), ``can_afford(event)``, and ``replay(events)`` for releases
  read back from a journal (counted even beyond the budget: they may have left);
* counts its **releases** (``Ledger.releases``) and answers ``spent``, ``remaining`` and
  ``budget``;
* round-trips through JSON-safe ``state_dict`` / ``load_state_dict``.

Identity is not part of the state: ``load_state_dict`` replaces what was spent and the
budget, never the ledger's own ``ledger_id`` (the id belongs to the journal the ledger
writes to; two ledgers with equal spend compare equal). A component restoring a
checkpoint compares the checkpoint's journal marker with its own journal instead.
"""

from __future__ import annotations

import abc
import math
import uuid
from collections.abc import Iterable
from typing import Any, ClassVar, Generic, TypeVar, cast

from rllib_privacy.accounting.events import PrivacyEvent
from rllib_privacy.errors import BudgetExhaustedError

__all__ = ["EventT", "Ledger", "new_ledger_id"]

#: The event type(s) a ledger records.
EventT = TypeVar("EventT", bound=PrivacyEvent)


def new_ledger_id() -> str:
    """A fresh random ledger id (32 hex digits)."""
    return uuid.uuid4().hex


def check_ledger_id(value: Any) -> str:
    """Return ``value`` if it is a usable ledger id: a non-empty string of [0-9a-zA-Z_-].

    Raises:
        ValueError: Otherwise (it becomes part of file names and messages).

    """
    if (
        not isinstance(value, str)
        or not value
        or not all(ch.isascii() and (ch.isalnum() or ch in "-_") for ch in value)
    ):
        raise ValueError(f"ledger_id must be a non-empty string of [0-9a-zA-Z_-], got {value!r}")
    return value


class Ledger(abc.ABC, Generic[EventT]):
    """Base class of the privacy ledgers (teacher, LDP, PATE): see the module docstring.

    Subclasses set ``privacy_unit``, call ``Ledger.__init__(self, ledger_id=...)`` and
    implement the abstract members; ``record``, ``can_afford`` and ``replay`` are written
    once, here, in terms of them.

    Args:
        ledger_id: The ledger's identity; None draws a fresh random one.

    Raises:
        ValueError: If ``ledger_id`` is not a usable id.

    """

    #: The unit of privacy: what two neighbouring datasets differ in, for this ledger's ε.
    privacy_unit: ClassVar[str] = ""

    def __init__(self, *, ledger_id: str | None = None) -> None:
        self._ledger_id = new_ledger_id() if ledger_id is None else check_ledger_id(ledger_id)

    # ------------------------------------------------------------------ identity

    @property
    def ledger_id(self) -> str:
        """Stable identity: the id in the header of the journal this ledger writes to."""
        return self._ledger_id

    def adopt_ledger_id(self, ledger_id: str) -> None:
        """Take the identity of an existing journal (a component reopening its journal).

        Raises:
            ValueError: If ``ledger_id`` is not a usable id.

        """
        self._ledger_id = check_ledger_id(ledger_id)

    # ------------------------------------------------------------------ accounting

    @property
    @abc.abstractmethod
    def spent(self) -> tuple[float, float]:
        """The ``(epsilon, delta)`` spent so far, recomputed from the events; (0, 0) if none."""

    @property
    @abc.abstractmethod
    def budget(self) -> tuple[float, float]:
        """The ``(epsilon, delta)`` budget (``math.inf`` when unlimited)."""

    @property
    def remaining(self) -> tuple[float, float]:
        """``budget − spent`` per coordinate, never below 0."""
        (eps_budget, delta_budget), (eps, delta) = self.budget, self.spent
        return _left(eps_budget, eps), _left(delta_budget, delta)

    @property
    @abc.abstractmethod
    def releases(self) -> int:
        """Number of releases recorded (answered states, reports, queries)."""

    @property
    @abc.abstractmethod
    def event_types(self) -> tuple[type[PrivacyEvent], ...]:
        """The event classes this ledger records (may depend on its composition)."""

    def accepts(self, event: PrivacyEvent) -> bool:
        """Whether ``event`` is of a kind, and has the settings, this ledger records."""
        try:
            self._check(event)
        except ValueError:
            return False
        return True

    def can_afford(self, event: EventT) -> bool:
        """Whether ``record(event)`` would be accepted (an event of count 0 always is).

        Raises:
            ValueError: If the ledger does not record events of this kind or settings.

        """
        event = self._check(event)
        return event.count == 0 or self._affords(event)

    def record(self, event: EventT) -> float:
        """Record a release, refusing it (recording nothing) if it does not fit the budget.

        Args:
            event: The release.

        Returns:
            The ε this ledger reports after the release (for a per-agent ledger, the
            reporting agent's).

        Raises:
            ValueError: If the ledger does not record events of this kind or settings.
            BudgetExhaustedError: If the release would exceed the budget.

        """
        event = self._check(event)
        if event.count and not self._affords(event):
            raise BudgetExhaustedError(self._refusal(event))
        return self._add(event)

    def replay(self, events: Iterable[EventT]) -> None:
        """Re-record releases read back from a privacy journal, even beyond the budget.

        A journaled release may have left before a crash: it counts whatever the budget
        says now, and afterwards ``can_afford`` refuses. Events are added in order, exactly
        as ``record`` adds them, so replaying a journal reproduces the uninterrupted run's ε.

        Raises:
            ValueError: If the ledger does not record events of this kind or settings
                (nothing of that event is recorded; earlier ones stay).

        """
        for event in events:
            self._add(self._check(event))

    def _check(self, event: PrivacyEvent) -> EventT:
        """``event`` if this ledger records it; ValueError naming what it records otherwise."""
        if not isinstance(event, self.event_types):
            kinds = ", ".join(cls.__name__ for cls in self.event_types)
            raise ValueError(
                f"{type(self).__name__} records {kinds} events here, got {type(event).__name__}"
            )
        self._check_settings(event)
        return cast(EventT, event)

    def _check_settings(self, event: PrivacyEvent) -> None:  # noqa: B027  # optional hook
        """Raise ValueError if ``event`` was released under settings this ledger cannot compose."""

    @abc.abstractmethod
    def _affords(self, event: EventT) -> bool:
        """Whether the (checked, count > 0) ``event`` fits the budget."""

    @abc.abstractmethod
    def _refusal(self, event: EventT) -> str:
        """Why ``event`` does not fit: the message of the ``BudgetExhaustedError``."""

    @abc.abstractmethod
    def _add(self, event: EventT) -> float:
        """Add the (checked) ``event`` whatever the budget; return ε as ``record`` does."""

    # ------------------------------------------------------------------ state

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """The recorded events and budget as JSON-safe types (no identity)."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace events and budget with a ``state_dict()``; keep ``ledger_id``."""

    def __eq__(self, other: object) -> bool:
        # Two ledgers of one kind are equal when their spend and budget are (not their id).
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Ledger)
        return self.state_dict() == other.state_dict()

    __hash__ = None  # type: ignore[assignment]  # unhashable: mutable, compared by state

    # ------------------------------------------------------------------ reporting

    def privacy_metrics(self) -> dict[str, float]:
        """``privacy/epsilon_spent``, ``privacy/delta_spent`` and ``privacy/releases``."""
        epsilon, delta = self.spent
        return {
            "privacy/epsilon_spent": epsilon,
            "privacy/delta_spent": delta,
            "privacy/releases": self.releases,
        }


def _left(budget: float, spent: float) -> float:
    if math.isinf(budget):
        return math.inf
    return max(0.0, budget - spent)
