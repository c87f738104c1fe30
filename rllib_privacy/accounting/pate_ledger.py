"""PATE's budgeted ledger of label queries; ε recomputed from the recorded votes (no Ray import).

LNMax queries compose by the moments accountant of
[pate_moments][rllib_privacy.accounting.pate_moments] (PATE 2017); GNMax and Confident-GNMax
queries by Rényi DP ([gnmax][rllib_privacy.accounting.gnmax], PATE 2018).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rllib_privacy._validation import (
    check_finite_positive,
    check_int_in_range,
    decode_inf,
    encode_inf,
    required,
)
from rllib_privacy.accounting.events import PATE_AGGREGATORS, PATEQueries, PrivacyEvent
from rllib_privacy.accounting.gnmax import (
    GNMAX_ORDERS,
    gnmax_data_independent_rdp,
    gnmax_rdp,
    rdp_epsilon_rows,
    threshold_data_independent_rdp,
    threshold_rdp,
)
from rllib_privacy.accounting.ledger import Ledger
from rllib_privacy.accounting.pate_moments import (
    PATEEpsilon,
    check_delta,
    data_dependent_log_moments,
    data_independent_log_moments,
    moment_orders,
)
from rllib_privacy.mechanisms.noisy_max import validate_votes

__all__ = ["AGGREGATORS", "BUDGET_BASES", "PATELedger"]

#: Which ε a ``PATELedger`` budget is checked against.
BUDGET_BASES = ("data_independent", "data_dependent")
#: Vote aggregators a ``PATELedger`` accounts for: Laplacian noisy max (2017,
#: moments accountant), GNMax and Confident-GNMax (2018, Rényi DP).
AGGREGATORS = PATE_AGGREGATORS

_FORMAT = "rllib_privacy.PATELedger"
_VERSION = 2
_STATE_KEYS_V1 = frozenset(
    {
        "format",
        "version",
        "gamma",
        "delta",
        "max_order",
        "epsilon_budget",
        "max_queries",
        "budget_basis",
        "histograms",
        "counts",
    }
)
_STATE_KEYS = _STATE_KEYS_V1 | {
    "aggregator",
    "sigma",
    "threshold",
    "sigma_threshold",
    "orders",
    "answered",
}
# Relative slack for the budget check (floating-point sums of moments).
_BUDGET_RTOL = 1e-9


def _histogram_key(row: np.ndarray) -> tuple[float | int, ...]:
    return tuple(int(v) if float(v).is_integer() else float(v) for v in row)


class PATELedger(Ledger[PATEQueries]):
    """Budgeted record of PATE queries; ε recomputed from the recorded votes.

    Privacy unit: one record of one teacher's partition (the teachers' training sets are
    disjoint, so changing one record changes at most one teacher's vote by one).

    ``aggregator`` says how each query was answered:

    * ``"lnmax"`` (default): Laplacian noisy max with inverse scale ``gamma`` (PATE 2017),
      composed by the moments accountant (orders ``1..max_order``);
    * ``"gnmax"``: Gaussian noisy max with ``sigma`` (PATE 2018), composed as Rényi DP at
      ``orders`` (``rllib_privacy.accounting.gnmax``);
    * ``"confident_gnmax"``: every query pays the threshold step (``threshold``,
      ``sigma_threshold``); the queries it answered also pay GNMax (``sigma``). Record each
      query with ``answered`` (whether it passed the threshold).

    Every query is recorded with its vote histogram (identical events are stored once with a
    count, so a run with few teachers and actions stays small). Both the data-dependent ε
    (``epsilon``) and the data-independent one (``epsilon_data_independent``) are
    derived from these events. The data-dependent one is a function of the private votes:
    publish it only through a private release
    (``rllib_privacy.accounting.release_data_dependent_epsilon``).

    The budget applies to ``budget_basis``: ``"data_independent"`` (default) makes the
    stopping time independent of the private votes, so the run's guarantee is exactly
    the data-independent ε; ``"data_dependent"`` stops on the (un-noised, hence not
    itself private) data-dependent ε, as the papers do. With Confident-GNMax and the
    data-independent basis, ``affordable(num_queries=N)`` assumes every query is answered
    (its worst case), so the budget holds whatever the threshold decides.

    Args:
        gamma: LNMax's inverse Laplace noise scale γ, a finite number > 0 (LNMax only).
        delta: δ in (0, 1).
        max_order: Largest moment order, an int >= 1 (LNMax only; ignored otherwise).
        epsilon_budget: Largest allowed ε, a number > 0 (``math.inf``: no ε limit).
        max_queries: Largest number of queries, an int >= 0, or None (no limit).
        budget_basis: ``"data_independent"`` or ``"data_dependent"``.
        aggregator: ``"lnmax"``, ``"gnmax"`` or ``"confident_gnmax"``.
        sigma: GNMax's σ (σ₂ of Confident-GNMax), a finite number > 0.
        threshold: Confident-GNMax's threshold T.
        sigma_threshold: Confident-GNMax's σ₁, a finite number > 0.
        orders: Rényi orders of the GNMax ledgers (None: ``GNMAX_ORDERS``).
        ledger_id: Identity (see ``Ledger``); None
            draws a fresh one.

    Raises:
        ValueError: If an argument is invalid or does not belong to the aggregator.

    Example:
        >>> ledger = PATELedger(gamma=0.05, delta=1e-5, epsilon_budget=5.3027)
        >>> ledger.affordable(np.tile([250, 0], (200, 1)))
        100

    """

    privacy_unit = (
        "one record of one teacher's partition (disjoint partitions: it changes one vote by one)"
    )

    def __init__(
        self,
        *,
        gamma: float | None = None,
        delta: float,
        max_order: int = 8,
        epsilon_budget: float = math.inf,
        max_queries: int | None = None,
        budget_basis: str = "data_independent",
        aggregator: str = "lnmax",
        sigma: float | None = None,
        threshold: float | None = None,
        sigma_threshold: float | None = None,
        orders: Any = None,
        ledger_id: str | None = None,
    ) -> None:
        super().__init__(ledger_id=ledger_id)
        if aggregator not in AGGREGATORS:
            raise ValueError(f"aggregator must be one of {list(AGGREGATORS)}, got {aggregator!r}")
        self._aggregator = aggregator
        given = {"gamma": gamma, "sigma": sigma, "threshold": threshold}
        given["sigma_threshold"] = sigma_threshold
        needed = {
            "lnmax": ("gamma",),
            "gnmax": ("sigma",),
            "confident_gnmax": ("sigma", "threshold", "sigma_threshold"),
        }[aggregator]
        for name, value in given.items():
            if name in needed and value is None:
                raise ValueError(f"{name} is required with aggregator={aggregator!r}")
            if name not in needed and value is not None:
                raise ValueError(f"{name} does not apply to aggregator={aggregator!r}")
        self._gamma = None if gamma is None else check_finite_positive("gamma", gamma)
        self._sigma = None if sigma is None else check_finite_positive("sigma", sigma)
        self._threshold = None
        if threshold is not None:
            if isinstance(threshold, bool) or not math.isfinite(float(threshold)):
                raise ValueError(f"threshold must be a finite number, got {threshold!r}")
            self._threshold = float(threshold)
        self._sigma_threshold = (
            None
            if sigma_threshold is None
            else check_finite_positive("sigma_threshold", sigma_threshold)
        )
        self._delta = check_delta(delta)
        self._max_order = check_int_in_range("max_order", max_order, low=1)
        self._budget = check_finite_positive("epsilon_budget", epsilon_budget, allow_inf=True)
        self._max_queries = (
            None if max_queries is None else check_int_in_range("max_queries", max_queries, low=0)
        )
        if budget_basis not in BUDGET_BASES:
            raise ValueError(
                f"budget_basis must be one of {list(BUDGET_BASES)}, got {budget_basis!r}"
            )
        self._basis = budget_basis
        if self._rdp:
            self._orders = np.array(GNMAX_ORDERS if orders is None else orders, dtype=np.float64)
            gnmax_data_independent_rdp(1.0, self._orders)  # validates the orders
            self._answered_cost = gnmax_data_independent_rdp(
                required("sigma", self._sigma), self._orders
            )
            self._asked_cost = (
                threshold_data_independent_rdp(
                    required("sigma_threshold", self._sigma_threshold), self._orders
                )
                if aggregator == "confident_gnmax"
                else np.zeros(self._orders.size)
            )
        else:
            if orders is not None:
                raise ValueError("orders does not apply to aggregator='lnmax' (use max_order)")
            self._orders = moment_orders(self._max_order)
            self._answered_cost = data_independent_log_moments(
                required("gamma", self._gamma), max_order=self._max_order
            )
            self._asked_cost = np.zeros(self._max_order)
        # Events: (answered, histogram) -> count, in recording order. Derived (rebuilt by
        # load_state_dict): per-event costs, their count-weighted sums, the counts.
        self._events: dict[tuple[bool, tuple[float | int, ...]], int] = {}
        self._costs: dict[tuple[bool, tuple[float | int, ...]], np.ndarray] = {}
        self._num_queries = 0
        self._num_answered = 0
        self._dependent_total = np.zeros(self._orders.size)

    # ------------------------------------------------------------------ queries

    @property
    def _rdp(self) -> bool:
        return self._aggregator != "lnmax"

    @property
    def aggregator(self) -> str:
        """``"lnmax"``, ``"gnmax"`` or ``"confident_gnmax"``."""
        return self._aggregator

    @property
    def gamma(self) -> float | None:
        """γ of every LNMax query (None for the GNMax aggregators)."""
        return self._gamma

    @property
    def sigma(self) -> float | None:
        """GNMax's σ (None for LNMax)."""
        return self._sigma

    @property
    def threshold(self) -> float | None:
        """Confident-GNMax's threshold T (None otherwise)."""
        return self._threshold

    @property
    def sigma_threshold(self) -> float | None:
        """Confident-GNMax's σ₁ (None otherwise)."""
        return self._sigma_threshold

    @property
    def orders(self) -> np.ndarray:
        """Moment orders ``1..max_order`` (LNMax) or Rényi orders (GNMax), a copy."""
        return self._orders.copy()

    def mechanism(self) -> dict[str, Any]:
        """The settings every recorded query's cost depends on (journaled with the votes)."""
        if not self._rdp:
            return {"aggregator": "lnmax", "gamma": self._gamma}
        settings: dict[str, Any] = {"aggregator": self._aggregator, "sigma": self._sigma}
        if self._aggregator == "confident_gnmax":
            settings.update(threshold=self._threshold, sigma_threshold=self._sigma_threshold)
        return settings

    @property
    def delta(self) -> float:
        """δ of the reported (ε, δ)."""
        return self._delta

    @property
    def epsilon_budget(self) -> float:
        """The ε budget (``math.inf`` when unlimited)."""
        return self._budget

    @property
    def max_queries(self) -> int | None:
        """The query cap, or None."""
        return self._max_queries

    @property
    def budget_basis(self) -> str:
        """Which ε the budget is checked against."""
        return self._basis

    @property
    def num_queries(self) -> int:
        """Number of recorded queries (with Confident-GNMax, also the unanswered ones)."""
        return self._num_queries

    @property
    def num_answered(self) -> int:
        """Number of recorded queries that were answered (labelled)."""
        return self._num_answered

    @property
    def spent(self) -> tuple[float, float]:
        """``(ε on the budget basis, δ)``; ``(0.0, 0.0)`` before the first query."""
        if not self._num_queries:
            return 0.0, 0.0
        data_dependent = self._basis == "data_dependent"
        return self.result(data_dependent=data_dependent).epsilon, self._delta

    @property
    def budget(self) -> tuple[float, float]:
        """``(epsilon_budget, delta)``."""
        return self._budget, self._delta

    @property
    def releases(self) -> int:
        """Number of recorded queries: ``num_queries``, PATE's name for them."""
        return self._num_queries

    @property
    def epsilon(self) -> float:
        """Data-dependent ε so far (un-noised: not itself a private release; 0 if empty)."""
        return self.result(data_dependent=True).epsilon if self._num_queries else 0.0

    @property
    def epsilon_data_independent(self) -> float:
        """Data-independent ε so far (0 if empty)."""
        return self.result(data_dependent=False).epsilon if self._num_queries else 0.0

    def _independent_total(self) -> np.ndarray:
        return self._num_queries * self._asked_cost + self._num_answered * self._answered_cost

    def _epsilons(self, totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """ε and best order of each row of composed costs."""
        if self._rdp:
            return rdp_epsilon_rows(self._orders, totals, self._delta)
        candidates = (totals + math.log(1.0 / self._delta)) / self._orders
        best = np.argmin(candidates, axis=-1)
        chosen = np.take_along_axis(candidates, best[..., None], axis=-1)[..., 0]
        return chosen, self._orders[best]

    def result(self, *, data_dependent: bool = True) -> PATEEpsilon:
        """Return ε, best order and composed log-moments (or RDP) of the recorded queries."""
        totals = self._dependent_total if data_dependent else self._independent_total()
        epsilon, order = self._epsilons(totals)
        return PATEEpsilon(
            epsilon=float(epsilon),
            order=float(order) if self._rdp else int(order),
            delta=self._delta,
            num_queries=self._num_queries,
            data_dependent=data_dependent,
            log_moments=tuple(float(m) for m in totals),
        )

    def _check_answered(self, answered: Any, count: int) -> np.ndarray:
        if answered is None:
            return np.ones(count, dtype=bool)
        if self._aggregator != "confident_gnmax":
            raise ValueError("answered applies to aggregator='confident_gnmax' only")
        flags = np.asarray(answered)
        if flags.dtype != bool or flags.shape != (count,):
            raise ValueError(f"answered must be {count} bools (one per query), got {answered!r}")
        return flags

    def _event_costs(self, rows: np.ndarray, answered: np.ndarray) -> np.ndarray:
        """Data-dependent cost of each query, shape ``(N, orders)``."""
        if not self._rdp:
            return data_dependent_log_moments(
                rows, gamma=required("gamma", self._gamma), max_order=self._max_order
            )
        costs = np.zeros((rows.shape[0], self._orders.size))
        if answered.any():
            costs[answered] = gnmax_rdp(
                rows[answered], sigma=required("sigma", self._sigma), orders=self._orders
            )
        if self._aggregator == "confident_gnmax":
            costs += threshold_rdp(
                rows,
                threshold=required("threshold", self._threshold),
                sigma=required("sigma_threshold", self._sigma_threshold),
                orders=self._orders,
            )
        return costs

    def affordable(
        self, votes: Any = None, *, num_queries: int | None = None, answered: Any = None
    ) -> int:
        """Return how many of the next queries (in order) fit the budget and the query cap.

        Args:
            votes: The next queries' vote histograms, shape ``(N, m)`` (or ``(m,)``);
                required with the data-dependent basis.
            num_queries: With the data-independent basis, the number N of next queries
                instead of ``votes`` (Confident-GNMax: each assumed answered).
            answered: Confident-GNMax only, with ``votes``: which of them passed the
                threshold (None: all, the worst case).

        Returns:
            The largest ``k <= N`` such that answering the first k keeps ε within budget.

        Raises:
            ValueError: If neither or both of ``votes`` and ``num_queries`` are given, if
                only ``num_queries`` is given with the data-dependent basis, or for bad votes.

        """
        if (votes is None) == (num_queries is None):
            raise ValueError("give exactly one of votes and num_queries")
        if votes is None:
            if self._basis == "data_dependent":
                raise ValueError("the data-dependent budget needs the votes, not num_queries")
            wanted = check_int_in_range("num_queries", num_queries, low=0)
            rows, flags = None, np.ones(wanted, dtype=bool)
        else:
            rows = np.atleast_2d(validate_votes(votes))
            wanted = rows.shape[0]
            flags = self._check_answered(answered, wanted)
        if self._max_queries is not None:
            wanted = min(wanted, self._max_queries - self._num_queries)
        if wanted <= 0:
            return 0
        if math.isinf(self._budget):
            return wanted
        flags = flags[:wanted]
        if self._basis == "data_independent":
            per_query = self._asked_cost + flags[:, None] * self._answered_cost
            totals = self._independent_total() + np.cumsum(per_query, axis=0)
        else:
            assert rows is not None  # the data-dependent basis needs the votes (checked above)
            per_query = self._event_costs(rows[:wanted], flags)
            totals = self._dependent_total + np.cumsum(per_query, axis=0)
        epsilons, _ = self._epsilons(totals)
        # Costs are >= 0, so ε never falls along the prefix: count the ones that fit.
        limit = self._budget + _BUDGET_RTOL * max(1.0, self._budget)
        return int(np.count_nonzero(epsilons <= limit))

    def queries(self, votes: Any, *, answered: Any = None) -> PATEQueries:
        """The event of answering ``votes`` with this ledger's aggregator and noise.

        Args:
            votes: Vote histograms, shape ``(m,)`` for one query or ``(N, m)``.
            answered: Confident-GNMax only: bools ``(N,)``, which queries passed the
                threshold (None: all).

        Raises:
            ValueError: For bad votes or ``answered``.

        """
        rows = np.atleast_2d(validate_votes(votes))
        flags = None if answered is None else self._check_answered(answered, rows.shape[0])
        return PATEQueries(
            votes=tuple(_histogram_key(row) for row in rows),
            answered=None if flags is None else tuple(bool(f) for f in flags),
            **self.mechanism(),
        )

    # ------------------------------------------------------------------ recording

    @property
    def event_types(self) -> tuple[type[PrivacyEvent], ...]:
        """``(PATEQueries,)``."""
        return (PATEQueries,)

    def _check_settings(self, event: PrivacyEvent) -> None:
        assert isinstance(event, PATEQueries)
        if event.settings != self.mechanism():
            # Each query's cost depends on these settings: composing votes answered under
            # other ones would misstate the spent ε.
            raise ValueError(
                f"the queries were answered with {_describe(event.settings)}, but this "
                f"ledger accounts for {_describe(self.mechanism())}"
            )

    @staticmethod
    def _rows(event: PATEQueries) -> tuple[np.ndarray, np.ndarray | None]:
        rows = np.asarray(event.votes, dtype=np.float64).reshape(event.count, -1)
        flags = None if event.answered is None else np.asarray(event.answered, dtype=bool)
        return rows, flags

    def _affords(self, event: PATEQueries) -> bool:
        rows, flags = self._rows(event)
        return self.affordable(rows, answered=flags) == event.count

    def _refusal(self, event: PATEQueries) -> str:
        rows, flags = self._rows(event)
        fits = self.affordable(rows, answered=flags)
        return (
            f"PATE budget exhausted: {self._num_queries} queries answered "
            f"(epsilon_budget={self._budget!r} on the {self._basis} epsilon, "
            f"max_queries={self._max_queries!r}); only {fits} of {event.count} more fit"
        )

    def _add(self, event: PATEQueries) -> float:
        rows, flags = self._rows(event)
        if event.count:
            self._add_rows(rows, np.ones(event.count, dtype=bool) if flags is None else flags)
        return self.spent[0]

    def _add_rows(self, rows: np.ndarray, answered: np.ndarray) -> None:
        costs = self._event_costs(rows, answered)
        for row, flag, row_costs in zip(rows, answered, costs, strict=True):
            key = (bool(flag), _histogram_key(row))
            if key not in self._events:
                self._costs[key] = row_costs
            self._events[key] = self._events.get(key, 0) + 1
        self._num_queries += rows.shape[0]
        self._num_answered += int(np.count_nonzero(answered))
        self._recompute_total()

    def _recompute_total(self) -> None:
        """Σ over recorded events of count × cost, always in recording order.

        Summing the events in one fixed order makes a restored ledger's ε bit-identical.
        """
        if not self._events:
            self._dependent_total = np.zeros(self._orders.size)
            return
        counts = np.fromiter(self._events.values(), dtype=np.float64)
        stacked = np.stack([self._costs[key] for key in self._events])
        self._dependent_total = counts @ stacked

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """Return the ledger as plain JSON-able types (an infinite budget becomes ``"inf"``).

        Format (version 2; version 1, LNMax only without the GNMax keys, still loads)::

            {"format": "rllib_privacy.PATELedger", "version": 2, "aggregator": str,
             "gamma": float | None, "sigma": float | None, "threshold": float | None,
             "sigma_threshold": float | None, "orders": [float, ...] | None,
             "delta": float, "max_order": int, "epsilon_budget": float | "inf",
             "max_queries": int | None, "budget_basis": str,
             "histograms": [[votes...], ...], "answered": [bool, ...], "counts": [int, ...]}

        """
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "aggregator": self._aggregator,
            "gamma": self._gamma,
            "sigma": self._sigma,
            "threshold": self._threshold,
            "sigma_threshold": self._sigma_threshold,
            "orders": [float(a) for a in self._orders] if self._rdp else None,
            "delta": self._delta,
            "max_order": self._max_order,
            "epsilon_budget": encode_inf(self._budget),
            "max_queries": self._max_queries,
            "budget_basis": self._basis,
            "histograms": [list(key[1]) for key in self._events],
            "answered": [key[0] for key in self._events],
            "counts": list(self._events.values()),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace this ledger's contents and settings with a ``state_dict``.

        Everything is validated before anything changes; the recorded queries are loaded
        even if they exceed the stored budget (a restored run must keep what it spent),
        in which case no further query is affordable. ``ledger_id`` is kept. A
        version-1 state (LNMax, before GNMax) loads as an LNMax ledger.

        Args:
            state: A dict produced by ``state_dict`` (possibly through JSON).

        Raises:
            ValueError: If ``state`` is not in that format.

        """
        if isinstance(state, dict) and state.get("version") == 1 and set(state) == _STATE_KEYS_V1:
            state = {
                **state,
                "version": _VERSION,
                "aggregator": "lnmax",
                "sigma": None,
                "threshold": None,
                "sigma_threshold": None,
                "orders": None,
                "answered": [True] * len(state["counts"])
                if isinstance(state["counts"], list)
                else state["counts"],
            }
        if not isinstance(state, dict) or set(state) != _STATE_KEYS:
            keys = sorted(state, key=str) if isinstance(state, dict) else type(state).__name__
            raise ValueError(
                f"state must be a dict with keys {sorted(_STATE_KEYS)} (from "
                f"PATELedger.state_dict()), got {keys}"
            )
        if state["format"] != _FORMAT or state["version"] != _VERSION:
            raise ValueError(
                f"state format/version must be {_FORMAT!r}/{_VERSION} (or 1), "
                f"got {state['format']!r}/{state['version']!r}"
            )
        budget = decode_inf("state['epsilon_budget']", state["epsilon_budget"])
        fresh = PATELedger(
            gamma=state["gamma"],
            delta=state["delta"],
            max_order=state["max_order"],
            epsilon_budget=budget,
            max_queries=state["max_queries"],
            budget_basis=state["budget_basis"],
            aggregator=state["aggregator"],
            sigma=state["sigma"],
            threshold=state["threshold"],
            sigma_threshold=state["sigma_threshold"],
            orders=state["orders"],
        )
        histograms, answered, counts = state["histograms"], state["answered"], state["counts"]
        if not all(isinstance(x, list) for x in (histograms, answered, counts)):
            raise ValueError("state['histograms'], ['answered'] and ['counts'] must be lists")
        if not len(histograms) == len(answered) == len(counts):
            raise ValueError(
                "state['histograms'], ['answered'] and ['counts'] must have equal lengths"
            )
        rows, flags, weights = [], [], []
        for position, (histogram, flag, count) in enumerate(
            zip(histograms, answered, counts, strict=True)
        ):
            count = check_int_in_range(f"state['counts'][{position}]", count, low=1)
            if not isinstance(flag, bool):
                raise ValueError(f"state['answered'][{position}] must be a bool, got {flag!r}")
            if not flag and fresh._aggregator != "confident_gnmax":
                raise ValueError(f"state['answered'][{position}] is false, but only "
                                 "confident_gnmax leaves queries unanswered")  # fmt: skip
            row = validate_votes(histogram, name=f"state['histograms'][{position}]")
            if row.ndim != 1:
                raise ValueError(f"state['histograms'][{position}] must be one histogram")
            key = (flag, _histogram_key(row))
            if key in fresh._events:
                raise ValueError(f"state['histograms'][{position}] is listed twice")
            fresh._events[key] = count
            rows.append(row)
            flags.append(flag)
            weights.append(count)
        if rows:
            costs = fresh._event_costs(np.stack(rows), np.asarray(flags, dtype=bool))
            for key, row_costs in zip(fresh._events, costs, strict=True):
                fresh._costs[key] = row_costs
            fresh._num_queries = int(sum(weights))
            fresh._num_answered = int(sum(w for w, f in zip(weights, flags, strict=True) if f))
        fresh._recompute_total()
        fresh._ledger_id = self._ledger_id  # identity stays with this ledger's journal
        self.__dict__.update(fresh.__dict__)

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> PATELedger:
        """Build a ledger from a ``state_dict`` (see ``load_state_dict``)."""
        ledger = cls(gamma=1.0, delta=0.5)
        ledger.load_state_dict(state)
        return ledger

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in self.mechanism().items())
        return (
            f"PATELedger({settings}, delta={self._delta!r}, "
            f"queries={self._num_queries}, epsilon={self.epsilon!r}, "
            f"epsilon_data_independent={self.epsilon_data_independent!r}, "
            f"epsilon_budget={self._budget!r}, budget_basis={self._basis!r})"
        )


def _describe(settings: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in settings.items())
