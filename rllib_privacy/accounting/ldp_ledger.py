"""Ledger of local-DP releases with pure-ε sequential composition per agent.

In the style of Google's dp-accounting: the ledger records *events* (which agent released
what, through which mechanism, at which ε) and the spent ε is always recomputed from them,
never stored on its own. Under local DP each agent's guarantee composes only over that
agent's own releases (basic sequential composition of pure ε-LDP mechanisms); the run's LDP
guarantee is the worst agent's total, ``LDPLedger.max_epsilon_spent``.

Storage is compact because LDPA3C may see 100k agents with one release each: release kinds
``(mechanism, epsilon)`` are interned once, and each agent maps to a kind index (exactly one
release) or to a ``{kind index: count}`` dict.
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
from rllib_privacy.accounting.events import LDPReport, PrivacyEvent
from rllib_privacy.accounting.ledger import Ledger

__all__ = ["LDPLedger", "per_submission_epsilon"]

_FORMAT = "rllib_privacy.LDPLedger"
_VERSION = 1
_STATE_KEYS = frozenset({"format", "version", "epsilon_budget_per_agent", "kinds", "agents"})
# Relative slack for the budget check, so that e.g. 3 releases of 1/3 fit a budget of 1.
_BUDGET_RTOL = 1e-9


def per_submission_epsilon(total_epsilon: float, submissions_per_agent: int) -> float:
    """Return the ε of each submission when an agent submits T times (paper §3.2.1).

    By sequential composition, T releases of ``total_epsilon / T`` each cost
    ``total_epsilon`` in all.

    Args:
        total_epsilon: The agent's total ε, a number > 0 (``math.inf`` gives ``math.inf``).
        submissions_per_agent: T, an int >= 1.

    Returns:
        ``total_epsilon / submissions_per_agent``.

    Raises:
        ValueError: If ``total_epsilon`` is not a number > 0 or ``submissions_per_agent`` is
            not an int >= 1.

    """
    total_epsilon = check_finite_positive("total_epsilon", total_epsilon, allow_inf=True)
    submissions_per_agent = check_int_in_range(
        "submissions_per_agent", submissions_per_agent, low=1
    )
    return total_epsilon / submissions_per_agent


def _decode_epsilon(name: str, value: Any) -> float:
    value = decode_inf(name, value)
    return value if value == math.inf else check_finite_positive(name, value)


def _within_budget(total: float, budget: float) -> bool:
    return total <= budget + _BUDGET_RTOL * max(1.0, budget)


def _compose(kinds: list[tuple[str, float]], entry: int | dict[int, int]) -> float:
    """Sequential composition of one agent's releases: Σ count · ε."""
    if isinstance(entry, int):
        return kinds[entry][1]
    return math.fsum(count * kinds[kind][1] for kind, count in entry.items())


class LDPLedger(Ledger[LDPReport]):
    """Releases of ε-LDP mechanisms per agent, with a per-agent budget.

    Privacy unit: one agent's data (everything a local agent holds: its environment, its
    episodes). The ledger's ``spent`` is the worst agent's composed ε, with δ = 0
    (pure ε-LDP); ``budget`` is the per-agent budget.

    Records [LDPReport][rllib_privacy.accounting.events.LDPReport] events. Per-agent
    entries are kept (not just counts per (mechanism, ε)): the per-agent budget check and
    duplicate detection (``releases_of``) need them.

    Args:
        epsilon_budget_per_agent: The most ε any one agent may spend (sequential
            composition); ``math.inf`` (default) records without limit.
        ledger_id: Identity (see ``Ledger``); None
            draws a fresh one.

    Raises:
        ValueError: If ``epsilon_budget_per_agent`` is not a number > 0.

    Example:
        >>> ledger = LDPLedger(epsilon_budget_per_agent=1.0)
        >>> ledger.record(LDPReport(agent_id="agent-0", epsilon=0.5, mechanism="laplace"))
        0.5
        >>> ledger.can_afford(LDPReport(agent_id="agent-0", epsilon=0.75, mechanism="laplace"))
        False

    """

    privacy_unit = "one agent's data (a local agent's environment and episodes)"

    def __init__(
        self, epsilon_budget_per_agent: float = math.inf, *, ledger_id: str | None = None
    ) -> None:
        super().__init__(ledger_id=ledger_id)
        self._budget = check_finite_positive(
            "epsilon_budget_per_agent", epsilon_budget_per_agent, allow_inf=True
        )
        self._kinds: list[tuple[str, float]] = []
        self._kind_index: dict[tuple[str, float], int] = {}
        # agent id -> kind index (exactly one release) or {kind index: count}.
        self._agents: dict[str, int | dict[int, int]] = {}
        # Derived from _agents (rebuilt by load_state_dict), kept to answer in O(1):
        self._kind_totals: list[int] = []
        self._max_spent = 0.0

    # ------------------------------------------------------------------ queries

    @property
    def epsilon_budget_per_agent(self) -> float:
        """The per-agent ε budget (``math.inf`` when unlimited)."""
        return self._budget

    def epsilon_spent(self, agent_id: str) -> float:
        """Return the ε an agent has spent so far (0.0 for an unknown agent)."""
        entry = self._agents.get(agent_id)
        return 0.0 if entry is None else _compose(self._kinds, entry)

    def releases_of(self, agent_id: str, mechanism: str | None = None) -> int:
        """Return how many releases an agent has recorded (0 for an unknown agent).

        LDPA3C numbers each agent's submissions 1, 2, ...; a submission whose number is
        not above its count of gradient releases was already recorded (a duplicate
        delivery). A submission with a private score is two releases (gradient and
        score), hence the ``mechanism`` filter.

        Args:
            agent_id: The agent.
            mechanism: Count only releases of this mechanism (None: all of them).

        """
        entry = self._agents.get(agent_id)
        if entry is None:
            return 0
        counts = {entry: 1} if isinstance(entry, int) else entry
        return sum(
            count
            for kind, count in counts.items()
            if mechanism is None or self._kinds[kind][0] == mechanism
        )

    @property
    def max_epsilon_spent(self) -> float:
        """The worst agent's composed ε: the LDP guarantee of the run so far (0.0 if empty)."""
        return self._max_spent

    @property
    def spent(self) -> tuple[float, float]:
        """``(max_epsilon_spent, 0.0)``: the worst agent's ε; pure ε-LDP has δ = 0."""
        return self._max_spent, 0.0

    @property
    def budget(self) -> tuple[float, float]:
        """``(epsilon_budget_per_agent, 0.0)``."""
        return self._budget, 0.0

    @property
    def releases(self) -> int:
        """Total number of recorded releases over all agents."""
        return sum(self._kind_totals)

    @property
    def event_types(self) -> tuple[type[PrivacyEvent], ...]:
        """``(LDPReport,)``."""
        return (LDPReport,)

    @property
    def num_agents(self) -> int:
        """Number of agents with at least one release."""
        return len(self._agents)

    @property
    def releases_by_mechanism(self) -> dict[str, int]:
        """Number of recorded releases per mechanism name."""
        totals: dict[str, int] = {}
        for (mechanism, _), count in zip(self._kinds, self._kind_totals, strict=True):
            totals[mechanism] = totals.get(mechanism, 0) + count
        return totals

    # ------------------------------------------------------------------ recording

    def _affords(self, event: LDPReport) -> bool:
        return _within_budget(self.epsilon_spent(event.agent_id) + event.epsilon, self._budget)

    def _refusal(self, event: LDPReport) -> str:
        return (
            f"agent {event.agent_id!r} has spent epsilon={self.epsilon_spent(event.agent_id)!r} "
            f"of its budget {self._budget!r}; a {event.mechanism!r} release of "
            f"epsilon={event.epsilon!r} would exceed it"
        )

    def _add(self, event: LDPReport) -> float:
        agent_id, epsilon, mechanism = event.agent_id, event.epsilon, event.mechanism
        kind = self._kind_index.get((mechanism, epsilon))
        if kind is None:
            kind = len(self._kinds)
            self._kinds.append((mechanism, epsilon))
            self._kind_index[(mechanism, epsilon)] = kind
            self._kind_totals.append(0)
        entry = self._agents.get(agent_id)
        if entry is None:
            self._agents[agent_id] = kind
        else:
            if isinstance(entry, int):
                entry = {entry: 1}
                self._agents[agent_id] = entry
            entry[kind] = entry.get(kind, 0) + 1
        self._kind_totals[kind] += 1
        new_spent = _compose(self._kinds, self._agents[agent_id])
        self._max_spent = max(self._max_spent, new_spent)
        return new_spent

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """Return the ledger as plain JSON-able types (infinite values become ``"inf"``).

        Format::

            {"format": "rllib_privacy.LDPLedger", "version": 1,
             "epsilon_budget_per_agent": float | "inf",
             "kinds": [[mechanism, epsilon], ...],
             "agents": {agent_id: [[kind_index, count], ...], ...}}

        """
        agents: dict[str, list[list[int]]] = {}
        for agent_id, entry in self._agents.items():
            if isinstance(entry, int):
                agents[agent_id] = [[entry, 1]]
            else:
                agents[agent_id] = [[kind, count] for kind, count in entry.items()]
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "epsilon_budget_per_agent": encode_inf(self._budget),
            "kinds": [[mechanism, encode_inf(eps)] for mechanism, eps in self._kinds],
            "agents": agents,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace this ledger's contents (budget included) with a ``state_dict``.

        The state is fully validated before anything is changed. Agents over the budget
        (replayed from a journal) load as they are. ``ledger_id`` is kept.

        Args:
            state: A dict produced by ``state_dict`` (possibly through JSON).

        Raises:
            ValueError: If ``state`` is not in that format or is inconsistent.

        """
        check_state_header(
            state, keys=_STATE_KEYS, format_name=_FORMAT, version=_VERSION, owner="LDPLedger"
        )
        budget = _decode_epsilon(
            "state['epsilon_budget_per_agent']", state["epsilon_budget_per_agent"]
        )

        raw_kinds = state["kinds"]
        if not isinstance(raw_kinds, list):
            raise ValueError(f"state['kinds'] must be a list, got {type(raw_kinds).__name__}")
        kinds: list[tuple[str, float]] = []
        kind_index: dict[tuple[str, float], int] = {}
        for position, raw in enumerate(raw_kinds):
            if not isinstance(raw, list | tuple) or len(raw) != 2:
                raise ValueError(f"state['kinds'][{position}] must be [mechanism, epsilon]")
            mechanism, raw_eps = raw
            if not isinstance(mechanism, str) or not mechanism:
                raise ValueError(f"state['kinds'][{position}] mechanism must be a non-empty string")
            epsilon = _decode_epsilon(f"state['kinds'][{position}] epsilon", raw_eps)
            release_kind = (mechanism, epsilon)
            if release_kind in kind_index:
                raise ValueError(f"state['kinds'][{position}] duplicates {release_kind!r}")
            kind_index[release_kind] = len(kinds)
            kinds.append(release_kind)

        raw_agents = state["agents"]
        if not isinstance(raw_agents, dict):
            raise ValueError(f"state['agents'] must be a dict, got {type(raw_agents).__name__}")
        agents: dict[str, int | dict[int, int]] = {}
        kind_totals = [0] * len(kinds)
        max_spent = 0.0
        for agent_id, raw_entry in raw_agents.items():
            where = f"state['agents'][{agent_id!r}]"
            if not isinstance(agent_id, str) or not agent_id:
                raise ValueError(
                    f"state['agents'] keys must be non-empty strings, got {agent_id!r}"
                )
            if not isinstance(raw_entry, list) or not raw_entry:
                raise ValueError(f"{where} must be a non-empty list of [kind_index, count]")
            entry: dict[int, int] = {}
            for pair in raw_entry:
                if not isinstance(pair, list | tuple) or len(pair) != 2:
                    raise ValueError(f"{where} must be a non-empty list of [kind_index, count]")
                kind = check_int_in_range(
                    f"{where} kind_index", pair[0], low=0, high=len(kinds) - 1
                )
                count = check_int_in_range(f"{where} count", pair[1], low=1)
                if kind in entry:
                    raise ValueError(f"{where} lists kind_index {kind} twice")
                entry[kind] = count
                kind_totals[kind] += count
            packed: int | dict[int, int] = (
                next(iter(entry)) if len(entry) == 1 and next(iter(entry.values())) == 1 else entry
            )
            # An agent over the budget (replayed from a journal) loads as it is: the spend
            # happened; it can release nothing more.
            spent = _compose(kinds, packed)
            agents[agent_id] = packed
            max_spent = max(max_spent, spent)

        self._budget = budget
        self._kinds = kinds
        self._kind_index = kind_index
        self._agents = agents
        self._kind_totals = kind_totals
        self._max_spent = max_spent

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> LDPLedger:
        """Build a ledger from a ``state_dict`` (see ``load_state_dict``)."""
        ledger = cls()
        ledger.load_state_dict(state)
        return ledger

    def __repr__(self) -> str:
        return (
            f"LDPLedger(epsilon_budget_per_agent={self._budget!r}, agents={self.num_agents}, "
            f"releases={self.releases}, max_epsilon_spent={self._max_spent!r})"
        )
