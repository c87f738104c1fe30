"""Validation shared by the ledgers' ``load_state_dict`` (no Ray import)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


def check_state_header(
    state: Any, *, keys: Collection[str], format_name: str, version: int, owner: str
) -> None:
    """Raise ValueError unless ``state`` is a dict with exactly ``keys`` and this format.

    Args:
        state: What was passed to ``load_state_dict``.
        keys: The keys a ``state_dict()`` of this ledger has.
        format_name: The ``"format"`` entry it must carry.
        version: The ``"version"`` entry it must carry.
        owner: The ledger class name, for the message.

    """
    if not isinstance(state, dict) or set(state) != set(keys):
        got = sorted(state, key=str) if isinstance(state, dict) else type(state).__name__
        raise ValueError(
            f"state must be a dict with keys {sorted(keys)} (from {owner}.state_dict()), got {got}"
        )
    if state["format"] != format_name or state["version"] != version:
        raise ValueError(
            f"state format/version must be {format_name!r}/{version}, "
            f"got {state['format']!r}/{state['version']!r}"
        )
