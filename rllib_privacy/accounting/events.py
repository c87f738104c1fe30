"""Typed privacy events: one frozen dataclass per kind of release (no Ray import).

A ledger records events and recomputes its spent (ε, δ) from them; a journal writes them
and reads them back. An event says what was released and through which mechanism, never
what the composed ε is: that is the accountant's job
(``rllib_privacy.accounting.accountants``).

Every event validates its fields when it is built (a ``ValueError`` names the field), so
a ledger never sees a malformed release. The JSON codec
([event_to_dict][rllib_privacy.accounting.events.event_to_dict],
[event_from_dict][rllib_privacy.accounting.events.event_from_dict]) lets a journal store
every kind the same way: ``{"type": <class name>, <field>: <value>, ...}``
with an infinite number written ``"inf"`` (JSON has no infinity) and tuples as lists.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import types
import typing
from collections.abc import Mapping
from typing import Any

from rllib_privacy._validation import (
    check_finite_positive,
    check_int_in_range,
    decode_inf,
    encode_inf,
)

__all__ = [
    "PATE_AGGREGATORS",
    "DirichletAnswer",
    "EpsilonDeltaRelease",
    "LDPReport",
    "PATEQueries",
    "PrivacyEvent",
    "ShuffledBatch",
    "event_from_dict",
    "event_to_dict",
]

#: Vote aggregators of PATE: Laplacian noisy max (2017), GNMax and Confident-GNMax (2018).
PATE_AGGREGATORS = ("lnmax", "gnmax", "confident_gnmax")

_EVENT_TYPES: dict[str, type[PrivacyEvent]] = {}


def check_probability(name: str, value: Any) -> float:
    """``value`` as a float if it is a number in [0, 1]; ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _epsilon(name: str, value: Any) -> float:
    """ε of one release: a number >= 0, ``math.inf`` allowed (a release without noise)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ValueError(f"{name} must be a number >= 0 (math.inf allowed), got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a number >= 0 (math.inf allowed), got {value!r}")
    return float(value)


def _name(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True, kw_only=True)
class PrivacyEvent:
    """Base class of the events; a subclass is registered for the codec by its class name."""

    #: How many releases one event stands for (events of a batch are recorded together).
    count: int = 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _EVENT_TYPES[cls.__name__] = cls

    def _set(self, name: str, value: Any) -> None:
        # Frozen: normalizing a field in __post_init__ has to bypass __setattr__.
        object.__setattr__(self, name, value)

    def __post_init__(self) -> None:
        self._set("count", check_int_in_range("count", self.count, low=0))

    def with_count(self, count: int) -> PrivacyEvent:
        """The same release repeated ``count`` times."""
        return dataclasses.replace(self, count=count)


@dataclasses.dataclass(frozen=True, kw_only=True)
class EpsilonDeltaRelease(PrivacyEvent):
    """``count`` releases, each (ε, δ)-DP, known only by that pair.

    Composed by the basic accountant as (Σ ε_i, Σ δ_i) (Dwork & Roth, Theorem 3.16) and by
    the advanced one with Kairouz, Oh & Viswanath's heterogeneous bound. The kickstarting
    teacher records its answers so under basic or advanced composition: each answered state
    is (ε, δ)-DP by Theorem 1 of Gohari et al. (ε of eq. 12, δ of eq. 6).

    Attributes:
        epsilon: ε of each release, >= 0 (``math.inf``: no privacy).
        delta: δ of each release, in [0, 1].
        count: Number of releases, >= 0.

    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set("epsilon", _epsilon("epsilon", self.epsilon))
        self._set("delta", check_probability("delta", self.delta))


@dataclasses.dataclass(frozen=True, kw_only=True)
class DirichletAnswer(PrivacyEvent):
    """``count`` answered states, each a draw x ~ Dir(k·π̃(s)) from the restricted simplex.

    The teacher's policy is first restricted to Δ_{m,η} = {x : Σx = 1, x_i ≥ η} by mixing
    with the uniform policy, π̃ = (1 − mη)·π + η, so two states within the adjacency radius
    b give policies at most ``radius`` = (1 − mη)·L·b apart in L2 (L: the teacher network's
    Lipschitz constant). One answer is then (a, ε(a))-RDP with
    ε(a) = sup D_a(Dir(k·x) ‖ Dir(k·x')) over x, x' in Δ_{m,η} with ‖x − x'‖₂ ≤ radius
    ([dirichlet_rdp][rllib_privacy.accounting.dirichlet_renyi.dirichlet_rdp]), and answers
    compose by adding their curves.

    Attributes:
        k: Concentration k > 0.
        eta: Restriction η in (0, 1/m).
        radius: L2 distance allowed between adjacent restricted policies, >= 0.
        num_actions: m, an int >= 2.
        count: Number of answered states, >= 0.

    """

    k: float
    eta: float
    radius: float
    num_actions: int

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set("k", check_finite_positive("k", self.k))
        self._set("num_actions", check_int_in_range("num_actions", self.num_actions, low=2))
        eta = check_finite_positive("eta", self.eta)
        if eta >= 1.0 / self.num_actions:
            raise ValueError(f"eta must be below 1/num_actions = {1 / self.num_actions}, got {eta}")
        self._set("eta", eta)
        radius = self.radius
        if isinstance(radius, bool) or not isinstance(radius, numbers.Real) or not radius >= 0:
            raise ValueError(f"radius must be a finite number >= 0, got {radius!r}")
        if math.isinf(radius):
            raise ValueError(f"radius must be a finite number >= 0, got {radius!r}")
        self._set("radius", float(radius))

    @property
    def mechanism(self) -> tuple[float, float, float, int]:
        """``(k, eta, radius, num_actions)``: what the RDP curve of one answer depends on."""
        return self.k, self.eta, self.radius, self.num_actions


@dataclasses.dataclass(frozen=True, kw_only=True)
class LDPReport(PrivacyEvent):
    """One agent's report through a pure ε-LDP mechanism (a privatized gradient).

    Under local DP each agent's guarantee composes over its own reports only (sequential
    composition: Σ ε over the agent's reports); the run's guarantee is the worst agent's.

    Attributes:
        agent_id: The reporting agent, a non-empty string.
        epsilon: ε of the report, > 0 (``math.inf``: no privacy).
        mechanism: Name of the mechanism (``"laplace"``, ``"prs"``, ...), non-empty.
        count: Always 1: an agent's reports are numbered one by one.

    """

    agent_id: str
    epsilon: float
    mechanism: str

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.count != 1:
            raise ValueError(f"an LDPReport is one report (count 1), got count={self.count!r}")
        _name("agent_id", self.agent_id)
        self._set("epsilon", check_finite_positive("epsilon", self.epsilon, allow_inf=True))
        _name("mechanism", self.mechanism)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ShuffledBatch(PrivacyEvent):
    """A batch of ``num_reports`` ε₀-LDP reports from distinct agents, shuffled, no sender ids.

    What an aggregator behind a shuffler receives: the reports of ``num_reports`` distinct
    agents, each from a pure ``epsilon0``-LDP randomizer (ε₀ is the TOTAL ε a report
    spends: its gradient and anything released with it), in a uniformly random order and
    without sender ids. By amplification by shuffling (Feldman, McMillan & Talwar, FOCS
    2021 and SODA 2023) the batch is then (ε_b, δ)-DP for each agent in it
    ([shuffle_epsilon][rllib_privacy.accounting.shuffle.shuffle_epsilon]); an agent that
    appears in several batches composes them
    ([ShuffleLedger][rllib_privacy.accounting.shuffle_ledger.ShuffleLedger]).

    Attributes:
        epsilon0: ε₀ of each report in the batch (the largest, if they differ), > 0 finite.
        num_reports: n, the number of shuffled reports, an int >= 1.
        count: Number of such batches, >= 0.

    """

    epsilon0: float
    num_reports: int

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set("epsilon0", check_finite_positive("epsilon0", self.epsilon0))
        self._set("num_reports", check_int_in_range("num_reports", self.num_reports, low=1))


@dataclasses.dataclass(frozen=True, kw_only=True)
class PATEQueries(PrivacyEvent):
    """Label queries answered together by a PATE teacher ensemble, with their votes.

    Each row of ``votes`` is one query's histogram n_j(x) of teacher votes. LNMax answers
    argmax_j (n_j + Lap(1/γ)): (2γ, 0)-DP, with log-moments bounded by Theorems 2-3 of
    Papernot et al. (2017). GNMax answers argmax_j (n_j + N(0, σ²)): (λ, λ/σ²)-RDP, tighter
    data-dependently (Papernot et al. 2018, Theorem 6). Confident-GNMax answers only when
    max_j n_j + N(0, σ₁²) ≥ T: every query pays the threshold step, the ``answered`` ones
    GNMax too. The votes are private: the data-dependent ε derived from them is itself not
    publishable without a private release.

    Attributes:
        votes: One vote histogram per query (counts >= 0), all of one length m >= 2.
        answered: Confident-GNMax: which queries passed the threshold (None: all).
        aggregator: ``"lnmax"``, ``"gnmax"`` or ``"confident_gnmax"``.
        gamma: LNMax's inverse noise scale γ (None otherwise).
        sigma: GNMax's σ (σ₂ of Confident-GNMax; None for LNMax).
        threshold: Confident-GNMax's threshold T (None otherwise).
        sigma_threshold: Confident-GNMax's σ₁ (None otherwise).
        count: Number of queries: ``len(votes)``, set from it.

    """

    votes: tuple[tuple[float, ...], ...]
    #: Set from ``votes``; another value given here is refused.
    count: int = -1
    answered: tuple[bool, ...] | None = None
    aggregator: str
    gamma: float | None = None
    sigma: float | None = None
    threshold: float | None = None
    sigma_threshold: float | None = None

    def __post_init__(self) -> None:
        votes = tuple(tuple(_vote(v) for v in row) for row in self.votes)
        if len({len(row) for row in votes}) > 1 or any(len(row) < 2 for row in votes):
            raise ValueError("votes must be histograms of one length m >= 2")
        self._set("votes", votes)
        if self.count not in (-1, len(votes)):
            raise ValueError(f"count must be len(votes) = {len(votes)}, got {self.count!r}")
        self._set("count", len(votes))
        super().__post_init__()
        if self.aggregator not in PATE_AGGREGATORS:
            raise ValueError(
                f"aggregator must be one of {list(PATE_AGGREGATORS)}, got {self.aggregator!r}"
            )
        needed = {
            "lnmax": ("gamma",),
            "gnmax": ("sigma",),
            "confident_gnmax": ("sigma", "threshold", "sigma_threshold"),
        }[self.aggregator]
        for name in ("gamma", "sigma", "threshold", "sigma_threshold"):
            value = getattr(self, name)
            if name in needed and value is None:
                raise ValueError(f"{name} is required with aggregator={self.aggregator!r}")
            if name not in needed and value is not None:
                raise ValueError(f"{name} does not apply to aggregator={self.aggregator!r}")
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, numbers.Real):
                    raise ValueError(f"{name} must be a number, got {value!r}")
                self._set(name, float(value))
        if self.answered is not None:
            flags = tuple(self.answered)
            if self.aggregator != "confident_gnmax":
                raise ValueError("answered applies to aggregator='confident_gnmax' only")
            if len(flags) != len(votes) or not all(isinstance(f, bool) for f in flags):
                raise ValueError(f"answered must be {len(votes)} bools (one per query)")
            self._set("answered", flags)

    @property
    def settings(self) -> dict[str, Any]:
        """The aggregator and its noise: what each query's cost depends on besides the votes."""
        settings: dict[str, Any] = {"aggregator": self.aggregator}
        for name in ("gamma", "sigma", "threshold", "sigma_threshold"):
            if getattr(self, name) is not None:
                settings[name] = getattr(self, name)
        return settings


def _vote(value: Any) -> float | int:
    # Integral counts stay ints so that a histogram reads back exactly as it was recorded.
    if hasattr(value, "item"):
        value = value.item()  # numpy scalar
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"votes must be finite counts >= 0, got {value!r}")
    count = float(value)
    if not 0.0 <= count < math.inf:
        raise ValueError(f"votes must be finite counts >= 0, got {value!r}")
    return int(count) if count.is_integer() else count


# ---------------------------------------------------------------------- codec


def _encode(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_encode(item) for item in value]
    return encode_inf(value)


def event_to_dict(event: PrivacyEvent) -> dict[str, Any]:
    """The event as JSON-safe types: ``{"type": <class name>, <field>: <value>, ...}``."""
    fields = {
        field.name: _encode(getattr(event, field.name)) for field in dataclasses.fields(event)
    }
    return {"type": type(event).__name__, **fields}


def _decode(value: Any, annotation: Any) -> Any:
    """Undo ``_encode`` for a field of type ``annotation``."""
    options = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    if value is None:
        return None
    if float in options and value in ("inf", "-inf"):
        return decode_inf("value", value)
    tuple_type = next((o for o in options if typing.get_origin(o) is tuple), None)
    if tuple_type is not None and isinstance(value, list):
        item_type = typing.get_args(tuple_type)[0]
        return tuple(_decode(item, item_type) for item in value)
    return value


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def event_from_dict(data: Mapping[str, Any]) -> PrivacyEvent:
    """Build the event an [event_to_dict][rllib_privacy.accounting.events.event_to_dict] wrote.

    Raises:
        ValueError: If ``data`` names no known event type, has other fields than that
            type's, or a field is out of range.

    """
    if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
        raise ValueError(f"a privacy event must be a mapping with a 'type', got {data!r}")
    cls = _EVENT_TYPES.get(data["type"])
    if cls is None:
        raise ValueError(
            f"unknown privacy event type {data['type']!r}; known: {sorted(_EVENT_TYPES)}"
        )
    hints = typing.get_type_hints(cls)
    names = {field.name for field in dataclasses.fields(cls)}
    extra = set(data) - names - {"type"}
    if extra:
        raise ValueError(f"{data['type']} has no fields {sorted(extra)}")
    kwargs = {name: _decode(data[name], hints[name]) for name in names if name in data}
    try:
        return cls(**kwargs)
    except TypeError as error:
        raise ValueError(f"{data['type']}: {error}") from None
