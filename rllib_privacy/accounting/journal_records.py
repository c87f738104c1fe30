"""What a privacy-journal record holds: its kind, its fields, and 0.1.0's record kinds (no Ray).

Today's records are ``"header"``, ``"release"`` (a privacy event, see
``rllib_privacy.accounting.events``), ``"update"`` and ``"snapshot"``. Journals written
by 0.1.0 used a record kind per component with the fields at the top level;
``rllib_privacy.accounting.journal_records.legacy_release`` and
``LEGACY_UPDATES`` translate them, so that
[ReplayJournal][rllib_privacy.accounting.journal.ReplayJournal] replays every journal one way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from rllib_privacy._validation import decode_inf
from rllib_privacy.accounting.events import (
    DirichletAnswer,
    EpsilonDeltaRelease,
    LDPReport,
    PATEQueries,
    PrivacyEvent,
)

__all__ = [
    "HEADER",
    "LEGACY_UPDATES",
    "RELEASE",
    "RESERVED_KEYS",
    "SNAPSHOT",
    "UPDATE",
    "legacy_release",
    "record_extras",
    "record_kind",
]

#: Keys the journal writes itself; a record must not set them.
RESERVED_KEYS = frozenset({"seq", "component", "time"})
#: Record kind that replaces a component's totals by the state it holds.
SNAPSHOT = "snapshot"
#: Record kind of a release: ``{"kind": "release", "event": <event dict>, **extras}``.
RELEASE = "release"
#: Record kind of a change of a component's own schedule or flags (no privacy spent):
#: ``{"kind": "update", "fields": {...}}``.
UPDATE = "update"
#: Record kind of the first record: ``{"kind": "header", "ledger_id": ...}``.
HEADER = "header"


def record_kind(record: Mapping[str, Any]) -> Any:
    """The kind of a journal record (``"type"`` in journals of LDPA3C's first versions)."""
    return record.get("kind", record.get("type"))


#: Fields of a record that are the journal's or the record kind's, not a component's.
_RECORD_KEYS = RESERVED_KEYS | {"kind", "type", "event"}


def record_extras(record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a component wrote in a record (not the journal's, the kind or the event)."""
    return {key: value for key, value in record.items() if key not in _RECORD_KEYS}


def _number(value: Any) -> Any:
    """A number of a 0.1.0 record (``"inf"`` for infinity)."""
    return decode_inf("record field", value)


#: 0.1.0's record kinds that changed a component's own state, as ``"update"`` fields.
LEGACY_UPDATES: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "schedule": record_extras,  # the kickstart teacher's k schedule
    "stop": lambda record: {"stopped": True},  # the PATE labeler stopped answering
}


def legacy_release(
    record: Mapping[str, Any], defaults: Mapping[str, Any]
) -> list[PrivacyEvent] | None:
    """The events a 0.1.0 release record stood for, most specific first; None if not one.

    0.1.0 wrote one record kind per component, its fields at the top level:

    * ``"release"`` (kickstart teacher): ``k, epsilon, delta, count`` and, since RDP,
      ``eta, radius, num_actions``: a Dirichlet answer (mechanism missing before RDP: taken
      from ``defaults``, the teacher's own η, radius and m, fixed for a run) and its
      Theorem 1 (ε, δ) pair; the ledger takes whichever its composition records;
    * ``"queries"`` (PATE labeler): ``votes``, ``gamma``, ``mechanism`` and, for
      Confident-GNMax, ``answered``;
    * ``"submission"`` (LDPA3C, also as ``"type"``): ``agent_id, epsilon, mechanism``.

    Args:
        record: A journal record without an ``"event"`` field.
        defaults: Mechanism fields for records that lack them.

    """
    kind = record_kind(record)
    if kind == "release":
        count = int(record["count"])
        events: list[PrivacyEvent] = []
        mechanism = {
            key: record.get(key, defaults.get(key)) for key in ("eta", "radius", "num_actions")
        }
        if None not in mechanism.values() and math.isfinite(_number(record["k"])):
            events.append(DirichletAnswer(k=record["k"], count=count, **mechanism))
        events.append(
            EpsilonDeltaRelease(
                epsilon=_number(record["epsilon"]), delta=record["delta"], count=count
            )
        )
        return events
    if kind == "queries":
        settings = dict(
            record.get("mechanism") or {"aggregator": "lnmax", "gamma": record["gamma"]}
        )
        answered = record.get("answered")
        return [
            PATEQueries(
                votes=record["votes"],
                answered=None if answered is None else tuple(answered),
                **settings,
            )
        ]
    if kind == "submission":
        return [
            LDPReport(
                agent_id=record["agent_id"],
                epsilon=_number(record["epsilon"]),
                mechanism=record["mechanism"],
            )
        ]
    return None
