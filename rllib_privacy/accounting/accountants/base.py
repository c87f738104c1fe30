"""The accountant interface and the registry of accountants by name (no Ray import).

An accountant composes a sequence of privacy events into one (ε, δ) guarantee, the way
Opacus's accountants do for DP-SGD steps: it keeps the history of the events it was given
(``step``), recomputes the guarantee from that history on every question,
and round-trips the history through ``state_dict``. A ledger holds one accountant,
chosen by name
([create_accountant][rllib_privacy.accounting.accountants.base.create_accountant]), and
adds the budget, the privacy unit and the identity.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from rllib_privacy.accounting.events import PrivacyEvent, event_from_dict, event_to_dict

__all__ = ["ACCOUNTANTS", "Accountant", "create_accountant", "register_accountant"]

#: Accountant classes by ``name``.
ACCOUNTANTS: dict[str, type[Accountant]] = {}


def register_accountant(cls: type[Accountant]) -> type[Accountant]:
    """Class decorator: make ``cls`` available to ``create_accountant`` by its name.

    Raises:
        ValueError: If another class already has that name.

    """
    if ACCOUNTANTS.get(cls.name, cls) is not cls:
        raise ValueError(f"an accountant named {cls.name!r} is already registered")
    ACCOUNTANTS[cls.name] = cls
    return cls


def create_accountant(name: str, **options: Any) -> Accountant:
    """A new, empty accountant of the registered kind ``name`` (e.g. ``"rdp"``).

    Args:
        name: A key of ``rllib_privacy.accounting.accountants.base.ACCOUNTANTS``.
        **options: That accountant's constructor arguments (e.g. ``orders``).

    Raises:
        ValueError: For an unknown name.

    """
    if name not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {sorted(ACCOUNTANTS)}, got {name!r}")
    return ACCOUNTANTS[name](**options)


class Accountant(abc.ABC):
    """Composition over a history of events; see the module docstring.

    Subclasses set ``name`` and ``event_types`` and implement ``guarantees``;
    they may override ``_merge`` to store repeated events compactly.
    """

    #: The registry key.
    name: ClassVar[str] = ""
    #: The event classes this accountant can compose.
    event_types: ClassVar[tuple[type[PrivacyEvent], ...]] = ()

    def __init__(self) -> None:
        self._history: list[PrivacyEvent] = []

    # ------------------------------------------------------------------ events

    def check(self, event: PrivacyEvent) -> PrivacyEvent:
        """Return ``event`` if this accountant can compose it.

        Raises:
            ValueError: Naming the event types it composes.

        """
        if not isinstance(event, self.event_types):
            kinds = ", ".join(cls.__name__ for cls in self.event_types)
            raise ValueError(
                f"the {self.name} accountant composes {kinds} events, got {type(event).__name__}"
            )
        return event

    def step(self, event: PrivacyEvent) -> None:
        """Compose one more event (an event of count 0 changes nothing)."""
        self.check(event)
        if event.count:
            self._history = self._merge(self._history, event)

    def _merge(self, history: list[PrivacyEvent], event: PrivacyEvent) -> list[PrivacyEvent]:
        """``history`` with ``event`` added; consecutive equal releases share one entry."""
        last = history[-1] if history else None
        if last is not None and last.with_count(event.count) == event:
            return [*history[:-1], last.with_count(last.count + event.count)]
        return [*history, event]

    @property
    def history(self) -> tuple[PrivacyEvent, ...]:
        """The composed events, oldest first (repeated releases merged into one count)."""
        return tuple(self._history)

    @property
    def releases(self) -> int:
        """Number of releases composed (the sum of the events' counts)."""
        return sum(event.count for event in self._history)

    # ------------------------------------------------------------------ guarantees

    @abc.abstractmethod
    def guarantees(self, pending: Sequence[PrivacyEvent] = ()) -> list[tuple[float, float]]:
        """Every (ε, δ) this accountant can prove for the history plus ``pending``.

        Each pair holds on its own; a ledger reports the one with the smallest ε within its
        budget. (0.0, 0.0) when nothing was released.
        """

    def _with(self, pending: Iterable[PrivacyEvent]) -> list[PrivacyEvent]:
        history = self._history
        for event in pending:
            self.check(event)
            if event.count:
                history = self._merge(history, event)
        return history

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """``{"name": ..., "history": [event_to_dict(event), ...]}``: JSON-safe."""
        return {"name": self.name, "history": [event_to_dict(e) for e in self._history]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the history with a ``state_dict``'s, validated before anything changes.

        Raises:
            ValueError: If ``state`` is another accountant's or an event is malformed.

        """
        if not isinstance(state, dict) or set(state) != {"name", "history"}:
            raise ValueError(
                f"accountant state must be a dict with name and history, got {state!r}"
            )
        if state["name"] != self.name:
            raise ValueError(
                f"state of accountant {state['name']!r} cannot load into {self.name!r}"
            )
        if not isinstance(state["history"], list):
            raise ValueError("accountant state['history'] must be a list")
        history = [self.check(event_from_dict(row)) for row in state["history"]]
        if any(event.count == 0 for event in history):
            raise ValueError("accountant state['history'] holds an event of count 0")
        self._history = self._restored(history)

    def _restored(self, history: list[PrivacyEvent]) -> list[PrivacyEvent]:
        """The history to keep for a loaded one (as it is: merging could change rounding)."""
        return history

    def __repr__(self) -> str:
        return f"{type(self).__name__}(releases={self.releases})"
