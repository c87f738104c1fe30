"""User-supplied hash codes (the paper's SmartHash, Tang et al. 2017 §3.4).

SmartHash counts states by a hand-picked integer key, e.g. Montezuma's Revenge's room
number, agent (x, y) and object flags read from RAM (indices 3, 42, 43, 27, 67), with
coordinates binned on a grid. ``ram_grid_key`` is that key for any RAM game;
``KeyFunctionHash`` wraps any function of a state batch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["KeyFunctionHash", "import_key_function", "ram_grid_key"]


def ram_grid_key(
    states: Any, *, indices: Sequence[int], grid: Sequence[int] | int = 1
) -> np.ndarray:
    """Selected state entries (e.g. RAM bytes) divided by a grid size: ⌊s[:, idx]/grid⌋.

    Args:
        states: (N, D) states (RAM bytes 0..255 for ``ALE/<Game>-ram-v5``).
        indices: Which entries form the key.
        grid: Bin width per selected entry (or one for all); 1 keeps exact values.

    Returns:
        (N, len(indices)) int64 keys.

    """
    x = np.asarray(states).reshape(np.shape(states)[0], -1)
    idx = np.asarray(indices, dtype=np.int64)
    if idx.ndim != 1 or idx.size == 0 or idx.min() < 0 or idx.max() >= x.shape[1]:
        raise ValueError(
            f"indices must be a non-empty list of entries in [0, {x.shape[1]}), got {list(indices)}"
        )
    g = np.broadcast_to(np.asarray(grid, dtype=np.float64), idx.shape)
    if np.any(g <= 0):
        raise ValueError(f"grid must be > 0, got {grid}")
    return np.floor(x[:, idx] / g).astype(np.int64)


def import_key_function(path: str) -> Callable[..., Any]:
    """Imports ``"package.module:function"`` (importable on every worker, not ``__main__``)."""
    module_name, sep, attr = str(path).partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"key_function must look like 'package.module:function', got {path!r}")
    try:
        function = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"key_function {path!r} cannot be imported: {e}") from None
    if not callable(function):
        raise ValueError(f"key_function {path!r} is not callable")
    return function


class KeyFunctionHash:
    """Codes from a user function: ``function(states, **kwargs) -> (N, m)`` integers.

    Args:
        function: The key function, or its ``"module:function"`` import path.
        kwargs: Extra keyword arguments for the function (e.g. ``indices``, ``grid``).

    """

    def __init__(self, function: Callable[..., Any] | str, **kwargs: Any) -> None:
        self.function = import_key_function(function) if isinstance(function, str) else function
        self.kwargs = kwargs

    def codes(self, batch: Any) -> np.ndarray:
        """The (N, m) int64 keys of a batch of states."""
        keys = np.asarray(self.function(batch, **self.kwargs))
        if keys.ndim == 1:
            keys = keys[:, None]
        if keys.ndim != 2 or not (
            np.issubdtype(keys.dtype, np.integer) or np.all(keys == np.round(keys))
        ):
            raise ValueError(
                f"the key function must return (N, m) integers, got {keys.dtype} {keys.shape}"
            )
        return keys.astype(np.int64)

    def state_dict(self) -> dict[str, Any]:
        """Nothing to save: the key is a fixed function."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Nothing to restore."""
