"""Message helpers every layer may import: it imports nothing of ``rllib_privacy``.

The bottom of the layer order (see ``[tool.importlinter]`` in ``pyproject.toml``): the
pure mechanisms, the environments, the plug-ins and the experiment-file loader all word
their "unknown key" errors with :func:`did_you_mean`. Argument checks of the pure
mechanisms (``check_finite_positive`` and friends) live in ``rllib_privacy.mechanisms``.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from typing import Any

__all__ = ["describe", "did_you_mean"]


def did_you_mean(word: str, candidates: Collection[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest candidate, or ``""``.

    A candidate that differs only in case wins; otherwise difflib's closest match.

    Args:
        word: What the user wrote.
        candidates: The allowed names.

    Returns:
        The hint to append to an error message, or ``""`` when nothing is close.

    """
    by_lower = {str(c).lower(): str(c) for c in candidates}
    if word.lower() in by_lower and by_lower[word.lower()] != word:
        return f"; did you mean {by_lower[word.lower()]!r}?"
    matches = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean {by_lower[matches[0]]!r}?" if matches else ""


def describe(value: Any) -> str:
    """Return the type and a short repr of ``value`` for an error message.

    Example: ``describe([1, 2])`` is ``"list [1, 2]"``; reprs longer than 60 characters
    are cut with ``...``.
    """
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"
