"""The teacher's answer cache: one privatized answer per state code, reused for free.

User guide: docs/components/kickstarting.md#answer-cache-and-query-rule.

A state's code is its SimHash φ(s) = sgn(A·g(s)) (Tang et al. 2017, eq. 2; the hasher of
``rllib_privacy.exploration.SimHash``) with ``bits`` bits, a Gaussian projection A drawn
from a fixed seed and g(s) = [s scaled to [−1, 1] on every bounded coordinate (unbounded ones
as they are), 1]: the constant input makes the hyperplanes affine, so they cut the box into
cells instead of cones through the origin. ``bits`` sets the granularity: more bits, smaller
cells, answers closer to each state's own policy, and more distinct releases.

The first state of a code is answered with a fresh release x ~ Dir(k·π̃(s)); every later state
with that code gets the same x (and the k it was drawn with). Handing out an answer already
released is post-processing: it spends nothing. The code is computed from the student's state
alone (public to both sides), never from the teacher's network.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.exploration import BoxNormalizer, SimHash

#: Seed of the cache's SimHash projection (fixed: the codes must not change across restarts).
CACHE_PROJECTION_SEED = 0
#: Largest code length accepted.
MAX_CACHE_BITS = 256


class AnswerCache:
    """Privatized answers keyed by the SimHash code of the state they were released for.

    Args:
        observation_space: The teacher's (Box) observation space.
        bits: Code length k of the SimHash (1 ≤ bits ≤ ``MAX_CACHE_BITS``).

    """

    def __init__(self, observation_space: Any, *, bits: int) -> None:
        if not (hasattr(observation_space, "low") and hasattr(observation_space, "high")):
            raise PrivacyConfigError(
                "teacher_cache_bits needs a Box observation space to hash states, "
                f"got {observation_space}"
            )
        low = np.asarray(observation_space.low, dtype=np.float64).reshape(-1)
        high = np.asarray(observation_space.high, dtype=np.float64).reshape(-1)
        # Unbounded coordinates keep their own scale: [−1, 1] maps a value to itself.
        bounded = np.isfinite(low) & np.isfinite(high) & (high > low)
        low = np.where(bounded, low, -1.0)
        high = np.where(bounded, high, 1.0)
        self.bits = int(bits)
        self._hasher = SimHash(
            low.size + 1,
            self.bits,
            seed=CACHE_PROJECTION_SEED,
            preprocessor=BoxNormalizer(low, high, append_bias=True),
        )
        self._answers: dict[bytes, tuple[np.ndarray, float]] = {}

    def __len__(self) -> int:
        """Number of cached answers (distinct codes answered so far)."""
        return len(self._answers)

    def keys(self, observations: np.ndarray) -> list[bytes]:
        """The code of every row as bytes (the bits packed), in row order."""
        codes = self._hasher.codes(np.asarray(observations, dtype=np.float64)) > 0
        packed = np.packbits(codes, axis=1)
        return [row.tobytes() for row in packed]

    def get(self, key: bytes) -> tuple[np.ndarray, float] | None:
        """The cached (answer, k) for a code, or None."""
        return self._answers.get(key)

    def put(self, key: bytes, answer: np.ndarray, k: float) -> None:
        """Cache a released answer; a code keeps its first answer (it was released first)."""
        if key not in self._answers:
            self._answers[key] = (np.asarray(answer, dtype=np.float32).copy(), float(k))

    def put_encoded(self, codes: list[str], answers: list[list[float]], k: float) -> None:
        """Cache answers given as JSON values (hex codes), as journal records hold them."""
        for code, answer in zip(codes, answers, strict=True):
            self.put(bytes.fromhex(code), np.asarray(answer, dtype=np.float32), k)

    def state_dict(self) -> dict[str, Any]:
        """JSON-safe state: codes (hex), answers and their k."""
        keys = list(self._answers)
        return {
            "bits": self.bits,
            "codes": [key.hex() for key in keys],
            "answers": [self._answers[key][0].tolist() for key in keys],
            "k": [self._answers[key][1] for key in keys],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the cache with ``state_dict()``'s content.

        Raises:
            PrivacyConfigError: The state was cached with another code length (its codes
                would never match this hasher's).

        """
        if int(state["bits"]) != self.bits:
            raise PrivacyConfigError(
                f"the checkpoint's teacher answer cache uses {state['bits']}-bit codes, but "
                f"teacher_cache_bits is {self.bits}: restore with the same teacher_cache_bits"
            )
        self._answers = {}
        for code, answer, k in zip(state["codes"], state["answers"], state["k"], strict=True):
            self.put(bytes.fromhex(code), np.asarray(answer, dtype=np.float32), float(k))
