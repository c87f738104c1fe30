"""What the aggregator behind a shuffler receives: anonymous reports in anonymous batches.

An ``AnonymousReport`` is a ``GradientSubmission`` with every identifying field removed:
the fields whose dataclass metadata flags them
(``submission.IDENTIFYING``: ``agent_id`` and ``agent_sequence``). The list is derived
from ``GradientSubmission``'s fields, so a field added there later (e.g. a privatized score)
passes through without an edit here, and an id field added later only needs the flag. The
types carry no id and no arrival order, so code that holds only these types cannot learn
who sent what (docs/components/ldp-a3c.md#shuffler).
"""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from rllib_privacy.algorithms.ldp_a3c.submission import IDENTIFYING, GradientSubmission

__all__ = [
    "ANONYMOUS_FIELDS",
    "IDENTIFYING_FIELDS",
    "AnonymousBatch",
    "AnonymousReport",
    "anonymize",
]

#: ``GradientSubmission``'s fields that identify the sender or order its reports.
IDENTIFYING_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(GradientSubmission) if f.metadata.get(IDENTIFYING)
)
#: ``GradientSubmission``'s other fields: what an ``AnonymousReport`` holds.
ANONYMOUS_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(GradientSubmission) if not f.metadata.get(IDENTIFYING)
)


class AnonymousReport:
    """One report without its sender: the ``ANONYMOUS_FIELDS`` of a ``GradientSubmission``.

    Read-only; its attributes are exactly ``ANONYMOUS_FIELDS`` (``report.gradient``,
    ``report.score``, ...). Asking for an identifying field raises ``AttributeError``.

    Args:
        **values: One value per name in ``ANONYMOUS_FIELDS``, nothing else.

    Raises:
        TypeError: If a field is missing, unknown, or identifying.

    """

    __slots__ = ("_values",)

    def __init__(self, **values: Any) -> None:
        names = set(values)
        if names != set(ANONYMOUS_FIELDS):
            raise TypeError(
                f"an AnonymousReport holds exactly the fields {list(ANONYMOUS_FIELDS)}; got "
                f"{sorted(names)} (identifying fields {list(IDENTIFYING_FIELDS)} never)"
            )
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "_values")[name]
        except KeyError:
            raise AttributeError(
                f"AnonymousReport has no attribute {name!r} (fields: {list(ANONYMOUS_FIELDS)})"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("AnonymousReport is read-only")

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its values, so that Ray can send it between processes.
        return (_rebuild_report, (self._values,))

    def as_dict(self) -> dict[str, Any]:
        """The fields and their values (a copy)."""
        return dict(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AnonymousReport):
            return NotImplemented
        mine, theirs = self._values, other._values
        return all(
            np.array_equal(mine[k], theirs[k])
            if isinstance(mine[k], np.ndarray)
            else mine[k] == theirs[k]
            for k in ANONYMOUS_FIELDS
        )

    __hash__ = None  # type: ignore[assignment]  # holds an array: compared by value

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}=<{v.shape[0]} floats>" if isinstance(v, np.ndarray) else f"{k}={v!r}"
            for k, v in self._values.items()
        )
        return f"AnonymousReport({shown})"

    # ------------------------------------------------------------------ JSON (journal)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe fields: arrays as base64 of their little-endian bytes, inf as a tag."""
        return {key: _encode(value) for key, value in self._values.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AnonymousReport:
        """Undo ``to_json`` (the array is bit-exact)."""
        return cls(**{key: _decode(value) for key, value in data.items()})


def _rebuild_report(values: dict[str, Any]) -> AnonymousReport:
    return AnonymousReport(**values)


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
        return {"__array__": str(value.dtype), "data": base64.b64encode(data.tobytes()).decode()}
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no inf/nan (e.g. score_epsilon of a public score is inf).
        return {"__float__": repr(value)}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and "__array__" in value:
        dtype = np.dtype(value["__array__"])
        array = np.frombuffer(base64.b64decode(value["data"]), dtype=dtype.newbyteorder("<"))
        return array.astype(dtype, copy=True)
    if isinstance(value, dict) and "__float__" in value:
        return float(value["__float__"])
    return value


def anonymize(submission: GradientSubmission) -> AnonymousReport:
    """The submission without its identifying fields.

    Raises:
        TypeError: If ``submission`` is not a ``GradientSubmission``.

    """
    if not isinstance(submission, GradientSubmission):
        raise TypeError(f"anonymize takes a GradientSubmission, got {type(submission).__name__}")
    return AnonymousReport(**{name: getattr(submission, name) for name in ANONYMOUS_FIELDS})


@dataclasses.dataclass(frozen=True)
class AnonymousBatch:
    """|B| reports of distinct agents in a uniformly random order: what the aggregator gets.

    Attributes:
        batch_seq: The shuffler's number of this batch, 1, 2, ... (it numbers batches,
            not agents: the aggregator acknowledges a batch by it and never applies one
            twice).
        reports: The reports, in the shuffler's random order.
        epsilon0: ε₀, the largest total ε any report of the batch spends (each report
            is then ε₀-LDP, which the shuffle bound needs).

    """

    batch_seq: int
    reports: tuple[AnonymousReport, ...]
    epsilon0: float

    def __post_init__(self) -> None:
        if not isinstance(self.batch_seq, int) or self.batch_seq < 1:
            raise ValueError(f"batch_seq must be an int >= 1, got {self.batch_seq!r}")
        if not self.reports or not all(isinstance(r, AnonymousReport) for r in self.reports):
            raise TypeError("AnonymousBatch.reports must be a non-empty tuple of AnonymousReport")

    def __len__(self) -> int:
        return len(self.reports)

    def __iter__(self) -> Iterator[AnonymousReport]:
        return iter(self.reports)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe form (the reports through ``AnonymousReport.to_json``)."""
        return {
            "batch_seq": self.batch_seq,
            "epsilon0": self.epsilon0,
            "reports": [report.to_json() for report in self.reports],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AnonymousBatch:
        """Undo ``to_json``."""
        return cls(
            batch_seq=int(data["batch_seq"]),
            reports=tuple(AnonymousReport.from_json(r) for r in data["reports"]),
            epsilon0=float(data["epsilon0"]),
        )
