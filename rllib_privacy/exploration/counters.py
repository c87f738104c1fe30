"""Visit counters over hash codes: an exact hash table and the Count-Min sketch.

Both count a whole batch first and then return every code's count (Tang et al. 2017,
Alg. 1 lines 7-8), so two equal codes in one batch both get the count that includes
the other. Both work on the batch as arrays (sort, searchsorted, np.add.at): there is no
Python loop over states.

A code row is turned into a key of bytes by ``code_keys``: SimHash codes (int8 in
{−1, +1}) are packed to one bit per entry, other integer codes (BASS features,
user key functions) use their int64 bytes; for state-action counting the action's int64
bytes are appended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rllib_privacy._validation import check_int_in_range

__all__ = ["PAPER_PRIMES", "CountMinSketch", "ExactCounter", "code_keys"]

#: The paper's "6M" Count-Min primes (Tang et al. 2017, appendix A.6).
PAPER_PRIMES: tuple[int, ...] = (999931, 999953, 999959, 999961, 999979, 999983)


def code_keys(codes: Any, actions: Any = None) -> np.ndarray:
    """Returns each row's key bytes as an (N, W) uint8 array.

    Args:
        codes: (N, m) integer codes; int8 codes must be SimHash codes in {−1, +1} and are
            packed to ⌈m/8⌉ bytes.
        actions: Optional (N,) integer actions for state-action counting.

    Raises:
        ValueError: If ``codes`` is not a 2-D integer array, int8 codes hold values other
            than ±1, or ``actions`` has the wrong size or is not integral.

    """
    codes = np.asarray(codes)
    if codes.ndim != 2 or not np.issubdtype(codes.dtype, np.integer):
        raise ValueError(f"codes must be a 2-D integer array, got {codes.dtype} {codes.shape}")
    if codes.dtype == np.int8:
        # Three allocation-free reductions instead of np.abs(codes) == 1 (two N×k copies).
        if codes.size and (codes.max() > 1 or codes.min() < -1 or not codes.all()):
            raise ValueError("int8 codes must be SimHash codes with entries in {-1, +1}")
        keys = np.packbits(codes > 0, axis=1)
    else:
        keys = np.ascontiguousarray(codes, dtype=np.int64).view(np.uint8)
    if actions is not None:
        actions = np.asarray(actions)
        if actions.shape != (codes.shape[0],) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(
                f"actions must be {codes.shape[0]} integers, got {actions.dtype} {actions.shape}"
            )
        action_bytes = np.ascontiguousarray(actions, dtype=np.int64).view(np.uint8)
        keys = np.concatenate([keys, action_bytes.reshape(-1, 8)], axis=1)
    return np.ascontiguousarray(keys, dtype=np.uint8)


def _sortable(keys: np.ndarray) -> np.ndarray:
    """Views (N, W) key bytes as a 1-D array numpy sorts fast: uint64 for W ≤ 8, else void."""
    n, width = keys.shape
    if width <= 8:
        padded = np.zeros((n, 8), dtype=np.uint8)
        padded[:, :width] = keys
        return padded.view(np.uint64).reshape(n)
    return np.ascontiguousarray(keys).view(np.dtype((np.void, width))).reshape(n)


class ExactCounter:
    """Exact visit counts in a sorted key table (the paper's dict of bytes keys, vectorized).

    Keys and counts live in two sorted numpy arrays; a batch is made unique with
    ``np.unique``, located with ``np.searchsorted`` and new keys are merged in with
    ``np.insert``, so the cost is O(U log M + M) memory moves per batch instead of a
    dictionary operation per state.
    """

    def __init__(self) -> None:
        self._width: int | None = None
        self._keys = np.zeros(0, dtype=np.uint64)
        self._counts = np.zeros(0, dtype=np.int64)
        self.total = 0

    @property
    def num_unique(self) -> int:
        """Number of distinct keys counted so far."""
        return int(self._counts.size)

    @property
    def nbytes(self) -> int:
        """Bytes of the key and count arrays (grows with ``num_unique``)."""
        return int(self._keys.nbytes + self._counts.nbytes)

    def increment_and_count(self, codes: Any, actions: Any = None) -> np.ndarray:
        """Counts every row of ``codes`` (and ``actions``), then returns the (N,) counts."""
        keys = code_keys(codes, actions)
        if keys.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        if self._width is None:
            self._width = keys.shape[1]
            self._keys = _sortable(np.zeros((0, self._width), dtype=np.uint8))
        elif keys.shape[1] != self._width:
            raise ValueError(
                f"codes must have {self._width} key bytes like the earlier ones, "
                f"got {keys.shape[1]}"
            )
        unique, inverse, batch_counts = np.unique(
            _sortable(keys), return_inverse=True, return_counts=True
        )
        pos = np.searchsorted(self._keys, unique)
        found = pos < self._keys.size
        found[found] = self._keys[pos[found]] == unique[found]
        self._counts[pos[found]] += batch_counts[found]
        new = ~found
        self._keys = np.insert(self._keys, pos[new], unique[new])
        self._counts = np.insert(self._counts, pos[new], batch_counts[new])
        # unique is sorted, so key i moves right by the number of new keys before it.
        final = pos + np.cumsum(new) - new
        self.total += int(keys.shape[0])
        return self._counts[final][inverse.reshape(-1)]

    def state_dict(self) -> dict[str, Any]:
        """Keys (as (M, W) bytes), counts and the total, for checkpoints."""
        width = self._width or 0
        raw = np.ascontiguousarray(self._keys).view(np.uint8).reshape(self._keys.size, -1)
        return {
            "kind": "exact",
            "width": width,
            "keys": raw[:, :width].copy() if width <= 8 else raw.copy(),
            "counts": self._counts.copy(),
            "total": self.total,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what ``state_dict`` returned."""
        if state.get("kind") != "exact":
            raise ValueError(f"not an ExactCounter state: kind={state.get('kind')!r}")
        width = int(state["width"])
        self._width = width or None
        keys = np.asarray(state["keys"], dtype=np.uint8).reshape(-1, width or 1)
        self._keys = _sortable(keys) if width else np.zeros(0, dtype=np.uint64)
        self._counts = np.asarray(state["counts"], dtype=np.int64).copy()
        self.total = int(state["total"])

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> ExactCounter:
        """A new counter holding ``state``."""
        counter = cls()
        counter.load_state_dict(state)
        return counter


class CountMinSketch:
    """Count-Min sketch with the paper's hash family (Tang et al. 2017, appendix A.6).

    With key bits b_i, table j uses key_j = (Σ_i b_i·(2^i mod p_j)) mod p_j, i.e. the
    key read as a binary number modulo p_j; a count is min_j table_j[key_j]. Every table
    entry a key maps to was incremented for each of its visits, so the minimum never
    under-counts; it over-counts only when a key collides with others in all tables.

    Args:
        primes: Table sizes p_j (distinct integers ≥ 2; primes make the hash family
            universal). Default: the paper's six primes just below 10^6.

    """

    def __init__(self, primes: Sequence[int] = PAPER_PRIMES) -> None:
        primes = tuple(check_int_in_range("primes[]", p, low=2) for p in primes)
        if not primes or len(set(primes)) != len(primes):
            raise ValueError(
                f"primes must be a non-empty list of distinct integers, got {list(primes)}"
            )
        self.primes = primes
        self._offsets = np.concatenate([[0], np.cumsum(primes)[:-1]]).astype(np.int64)
        self._table = np.zeros(int(sum(primes)), dtype=np.int64)
        # np.zeros maps pages lazily; touching them all now keeps that one-time cost (page
        # faults on 48 MiB) out of the first batches' counting.
        self._table.fill(0)
        self._byte_weights: np.ndarray | None = None
        self.total = 0

    def _byte_table(self, num_bytes: int) -> np.ndarray:
        """T[b, v, j] = Σ_t bit_t(v)·(2^(8b+t) mod p_j) mod p_j for key byte b with value v."""
        if self._byte_weights is None or self._byte_weights.shape[0] != num_bytes:
            primes = np.asarray(self.primes, dtype=np.int64)
            # Bit i of the key is bit i of np.unpackbits(keys) (most significant bit first).
            powers = np.array(
                [[pow(2, i, p) for p in self.primes] for i in range(8 * num_bytes)],
                dtype=np.int64,
            ).reshape(num_bytes, 8, len(self.primes))
            bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1)  # (256, 8)
            weights = np.einsum("vt,btj->bvj", bits.astype(np.int64), powers) % primes
            # The per-row sum of num_bytes entries below max(p) fits int32 for the paper's
            # tables (k = 256: 32·10^6); int32 halves the memory the gathers move.
            fits = num_bytes * int(primes.max()) < np.iinfo(np.int32).max
            self._byte_weights = weights.astype(np.int32 if fits else np.int64)
        return self._byte_weights

    def table_indices(self, codes: Any, actions: Any = None) -> np.ndarray:
        """Returns the (N, L) flat table positions offset_j + key_j of every row."""
        keys = code_keys(codes, actions)
        table = self._byte_table(keys.shape[1])
        hashed = np.zeros((keys.shape[0], len(self.primes)), dtype=table.dtype)
        gathered = np.empty_like(hashed)
        columns = np.ascontiguousarray(keys.T)  # each byte column contiguous for the gathers
        # One lookup per key byte (not per state): Σ_b T[b, byte_b] ≡ Σ_i b_i·2^i (mod p_j).
        for b in range(keys.shape[1]):
            np.take(table[b], columns[b], axis=0, out=gathered)
            np.add(hashed, gathered, out=hashed)
        hashed %= np.asarray(self.primes, dtype=table.dtype)
        return hashed.astype(np.int64) + self._offsets

    def increment_and_count(self, codes: Any, actions: Any = None) -> np.ndarray:
        """Counts every row of ``codes`` (and ``actions``), then returns the (N,) counts."""
        index = self.table_indices(codes, actions)
        np.add.at(self._table, index.reshape(-1), 1)
        self.total += int(index.shape[0])
        return self._table[index].min(axis=1)

    def count(self, codes: Any, actions: Any = None) -> np.ndarray:
        """The current counts of the rows, without counting them."""
        return self._table[self.table_indices(codes, actions)].min(axis=1)

    @property
    def num_unique(self) -> int:
        """A lower bound on the distinct keys: non-zero entries of the fullest table."""
        sizes = [
            np.count_nonzero(self._table[o : o + p])
            for o, p in zip(self._offsets, self.primes, strict=True)
        ]
        return int(max(sizes))

    @property
    def nbytes(self) -> int:
        """Bytes of the tables and the byte-lookup cache: fixed by ``primes``, not by the data."""
        cache = 0 if self._byte_weights is None else self._byte_weights.nbytes
        return int(self._table.nbytes + cache)

    def state_dict(self) -> dict[str, Any]:
        """The primes and the non-zero table entries (sparse, for small checkpoints)."""
        nonzero = np.flatnonzero(self._table)
        return {
            "kind": "count_min",
            "primes": list(self.primes),
            "indices": nonzero,
            "values": self._table[nonzero].copy(),
            "total": self.total,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what ``state_dict`` returned (the primes must match)."""
        if state.get("kind") != "count_min":
            raise ValueError(f"not a CountMinSketch state: kind={state.get('kind')!r}")
        if tuple(int(p) for p in state["primes"]) != self.primes:
            raise ValueError(
                f"state has primes {list(state['primes'])}, this sketch {list(self.primes)}"
            )
        self._table[:] = 0
        self._table[np.asarray(state["indices"], dtype=np.int64)] = state["values"]
        self.total = int(state["total"])

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> CountMinSketch:
        """A new sketch holding ``state``."""
        sketch = cls(primes=state["primes"])
        sketch.load_state_dict(state)
        return sketch
