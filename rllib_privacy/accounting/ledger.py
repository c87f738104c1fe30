"""The one accounting interface every privacy ledger implements (no Ray import).

Modelled on Opacus's ``IAccountant`` and Google dp-accounting's ledgers: a ledger records
*events* (what was released, through which mechanism, at which ε/δ) and recomputes the spent
(ε, δ) from them on every query; a spent ε is never stored on its own (docs/privacy-journal.md).

Every ledger

* names the **privacy unit** it protects (``Ledger.privacy_unit``): the neighbouring
  relation its ε is stated for;
* has a stable **identity** (``Ledger.ledger_id``): the id written in the header of its
  write-ahead journal (``ReplayJournal``), which is how a
  checkpoint restored anywhere finds the releases made after it;
* counts its **releases** (``Ledger.releases``);
* answers ``spent``, ``remaining`` and ``can_afford``,
  and refuses a ``record`` beyond its budget (``BudgetExhaustedError``);
* round-trips through JSON-safe ``state_dict`` / ``load_state_dict``.

Identity is not part of the state: ``load_state_dict`` replaces what was spent and the
budget, never the ledger's own ``ledger_id`` (the id belongs to the journal the
ledger writes to; two ledgers with equal spend compare equal). A component restoring a
checkpoint compares the checkpoint's journal marker with its own journal instead.
"""

from __future__ import annotations

import abc
import math
import uuid
from typing import Any, ClassVar

__all__ = ["Ledger", "new_ledger_id"]


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


class Ledger(abc.ABC):
    """Base class of the privacy ledgers (teacher, LDP, PATE): see the module docstring.

    Subclasses set ``privacy_unit``, call ``Ledger.__init__(self, ledger_id=...)`` and
    implement the abstract members. Their ``record`` and ``can_afford`` take the arguments of
    their mechanism (a release's (k, ε, δ, count), an agent's release, vote histograms).

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
        """Number of releases recorded (answered states, submissions, queries)."""

    @abc.abstractmethod
    def can_afford(self, *args: Any, **kwargs: Any) -> bool:
        """Whether ``record`` with the same arguments would be accepted."""

    @abc.abstractmethod
    def record(self, *args: Any, **kwargs: Any) -> Any:
        """Record releases; raise ``BudgetExhaustedError`` (recording nothing) over budget."""

    # ------------------------------------------------------------------ state

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """The recorded events and budget as JSON-safe types (no identity)."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace events and budget with a ``state_dict``; keep ``ledger_id``."""

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
