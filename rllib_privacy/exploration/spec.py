"""Count-based exploration settings and the object that applies them.

``ExplorationSpec`` is the ``count_exploration_config`` config dict;
``CountBasedExploration`` hashes a batch of states, counts it, returns the bonuses.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rllib_privacy._validation import check_choice, closest
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.exploration.autoencoder import AE_ARCHITECTURES, AutoencoderHash
from rllib_privacy.exploration.bass import BASS
from rllib_privacy.exploration.bonus import BONUS_KINDS, count_bonus
from rllib_privacy.exploration.counters import PAPER_PRIMES, CountMinSketch, ExactCounter
from rllib_privacy.exploration.key_function import KeyFunctionHash, import_key_function
from rllib_privacy.exploration.simhash import BoxNormalizer, OneHot, SimHash

__all__ = [
    "COUNTER_KINDS",
    "HASH_KINDS",
    "PREPROCESSORS",
    "CountBasedExploration",
    "ExplorationSpec",
    "ObservationInfo",
]

HASH_KINDS: tuple[str, ...] = ("simhash", "autoencoder", "bass", "key_function")
COUNTER_KINDS: tuple[str, ...] = ("exact", "count_min")
PREPROCESSORS: tuple[str, ...] = ("auto", "none", "box", "one_hot")


@dataclasses.dataclass(frozen=True)
class ObservationInfo:
    """What the hashers need to know about the observation space (no gymnasium here).

    Attributes:
        shape: Shape of one observation.
        low: Box lower bounds (flattened) or None.
        high: Box upper bounds (flattened) or None.
        discrete_n: n of a Discrete(n) space, else None.

    """

    shape: tuple[int, ...]
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    discrete_n: int | None = None

    @property
    def size(self) -> int:
        """Number of entries of one flattened observation."""
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def is_bounded_box(self) -> bool:
        """Whether low/high are known and finite."""
        return (
            self.low is not None
            and self.high is not None
            and bool(np.all(np.isfinite(self.low)) and np.all(np.isfinite(self.high)))
        )


@dataclasses.dataclass(frozen=True)
class ExplorationSpec:
    """The ``count_exploration_config`` settings (keys table: docs/components/count-exploration.md).

    Attributes mirror the dict keys; see ``from_dict``.
    """

    hash: str = "simhash"
    num_bits: int = 32
    beta: float = 0.01
    bonus: str = "inverse_sqrt"
    counter: str = "exact"
    primes: tuple[int, ...] = PAPER_PRIMES
    count_actions: bool = False
    preprocessor: str = "auto"
    seed: int = 0
    bass_cell_size: int = 20
    bass_bins: int = 20
    ae_architecture: str = "auto"
    ae_code_bits: int = 512
    ae_noise: float = 0.3
    ae_lambda: float = 10.0
    ae_update_every: int = 3
    ae_pool_size: int = 100_000
    ae_train_steps: int = 200
    ae_batch_size: int = 256
    ae_lr: float = 1e-3
    ae_hidden: tuple[int, ...] = (256,)
    key_function: str | None = None
    key_function_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """Every allowed key."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_dict(
        cls,
        spec: ExplorationSpec | Mapping[str, Any] | None,
        *,
        prefix: str = "count_exploration_config",
    ) -> ExplorationSpec:
        """Builds and validates a spec; unknown keys and bad values raise PrivacyConfigError.

        Args:
            spec: The dict from the YAML (None or {} = all defaults); a spec is returned as is.
            prefix: Name of the dict in messages (``count_exploration_config.beta must ...``).

        """
        if spec is None:
            spec = {}
        if isinstance(spec, ExplorationSpec):
            return spec
        if not isinstance(spec, Mapping):
            raise PrivacyConfigError(f"{prefix} must be a dict of settings, got {spec!r}")
        allowed = cls.keys()
        for key in spec:
            if key not in allowed:
                close = closest(str(key), allowed)
                hint = f" (did you mean {close!r}?)" if close else ""
                raise PrivacyConfigError(
                    f"{prefix} key {key!r} is not known{hint}; allowed: {', '.join(allowed)}"
                )
        values = dict(spec)
        for key in ("primes", "ae_hidden"):
            if key not in values:
                continue
            # A string is a Sequence too: "" would silently mean "no hidden layers".
            if not isinstance(values[key], Sequence) or isinstance(values[key], str | bytes):
                raise PrivacyConfigError(
                    f"{prefix}.{key} must be a list of integers, got {values[key]!r}"
                )
            values[key] = tuple(values[key])
        out = cls(**values)
        out.validate(prefix)
        return out

    def validate(self, prefix: str = "count_exploration_config") -> None:
        """Raises PrivacyConfigError naming the first bad key."""
        check_choice(f"{prefix}.hash", self.hash, HASH_KINDS, error=PrivacyConfigError)
        check_choice(f"{prefix}.bonus", self.bonus, BONUS_KINDS, error=PrivacyConfigError)
        check_choice(f"{prefix}.counter", self.counter, COUNTER_KINDS, error=PrivacyConfigError)
        check_choice(
            f"{prefix}.preprocessor", self.preprocessor, PREPROCESSORS, error=PrivacyConfigError
        )
        check_choice(
            f"{prefix}.ae_architecture",
            self.ae_architecture,
            ("auto", *AE_ARCHITECTURES),
            error=PrivacyConfigError,
        )
        for key in (
            "num_bits",
            "bass_cell_size",
            "bass_bins",
            "ae_code_bits",
            "ae_update_every",
            "ae_pool_size",
            "ae_train_steps",
            "ae_batch_size",
        ):
            _integer(prefix, key, getattr(self, key), low=1)
        _integer(prefix, "seed", self.seed, low=0)
        _number(prefix, "beta", self.beta, low=0.0, low_open=True)
        _number(prefix, "ae_lr", self.ae_lr, low=0.0, low_open=True)
        _number(prefix, "ae_lambda", self.ae_lambda, low=0.0)
        _number(prefix, "ae_noise", self.ae_noise, low=0.0)
        if self.ae_noise >= 1.0:
            raise PrivacyConfigError(f"{prefix}.ae_noise must be in [0, 1), got {self.ae_noise}")
        if not isinstance(self.count_actions, bool):
            raise PrivacyConfigError(
                f"{prefix}.count_actions must be true or false, got {self.count_actions!r}"
            )
        if (
            not self.primes
            or any(isinstance(p, bool) or not isinstance(p, int) or p < 2 for p in self.primes)
            or len(set(self.primes)) != len(self.primes)
        ):
            raise PrivacyConfigError(
                f"{prefix}.primes must be distinct integers >= 2, got {list(self.primes)}"
            )
        for width in self.ae_hidden:
            _integer(prefix, "ae_hidden[]", width, low=1)
        if self.key_function is not None and not isinstance(self.key_function, str):
            raise PrivacyConfigError(
                f"{prefix}.key_function must be a 'package.module:function' string, "
                f"got {self.key_function!r}"
            )
        if self.key_function is not None and self.hash != "key_function":
            raise PrivacyConfigError(
                f"{prefix}.key_function is only used with hash: key_function, but hash is "
                f"{self.hash!r}; remove it or set hash: key_function"
            )
        if self.key_function_kwargs and self.hash != "key_function":
            raise PrivacyConfigError(
                f"{prefix}.key_function_kwargs is only used with hash: key_function, but "
                f"hash is {self.hash!r}"
            )
        if self.hash == "key_function":
            if self.key_function is None:
                raise PrivacyConfigError(
                    f"{prefix}.key_function is required with hash: "
                    "key_function ('package.module:function')"
                )
            try:
                import_key_function(self.key_function)
            except ValueError as e:
                raise PrivacyConfigError(f"{prefix}.{e}") from None
        if not isinstance(self.key_function_kwargs, Mapping):
            raise PrivacyConfigError(
                f"{prefix}.key_function_kwargs must be a dict, got {self.key_function_kwargs!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON/YAML-friendly dict (lists instead of tuples)."""
        out = dataclasses.asdict(self)
        out["primes"] = list(self.primes)
        out["ae_hidden"] = list(self.ae_hidden)
        out["key_function_kwargs"] = dict(self.key_function_kwargs)
        return out


def _integer(prefix: str, key: str, value: Any, *, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise PrivacyConfigError(f"{prefix}.{key} must be an integer >= {low}, got {value!r}")


def _number(prefix: str, key: str, value: Any, *, low: float, low_open: bool = False) -> None:
    ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    if not ok or value < low or (low_open and value == low):
        bound = f"> {low}" if low_open else f">= {low}"
        raise PrivacyConfigError(f"{prefix}.{key} must be a finite number {bound}, got {value!r}")


class CountBasedExploration:
    """Hasher + counter + bonus: one global table of visit counts (Tang et al. 2017, Alg. 1/2).

    Args:
        spec: The settings.
        observation: The observation space's shape and bounds.

    """

    def __init__(self, spec: ExplorationSpec, observation: ObservationInfo) -> None:
        self.spec = spec
        self.observation = observation
        self.hasher = _make_hasher(spec, observation)
        self.counter = (
            CountMinSketch(spec.primes) if spec.counter == "count_min" else ExactCounter()
        )
        self.num_updates = 0
        self.last_ae_metrics: dict[str, float] = {}

    @property
    def is_learned(self) -> bool:
        """Whether the hash is an autoencoder that needs ``before_update``."""
        return isinstance(self.hasher, AutoencoderHash)

    def before_update(self, observations: np.ndarray) -> dict[str, float]:
        """Alg. 2 lines 6-8: pool the new states; retrain the AE every ``ae_update_every``."""
        self.num_updates += 1
        if not isinstance(self.hasher, AutoencoderHash) or observations.shape[0] == 0:
            return {}
        self.hasher.observe(observations)
        if (self.num_updates - 1) % self.spec.ae_update_every == 0:
            self.last_ae_metrics = self.hasher.train()
        return self.last_ae_metrics

    def increment_and_bonus(
        self, observations: Any, actions: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Counts the whole batch, then returns (bonuses, counts), each (N,)."""
        codes = self.hasher.codes(observations)
        counts = self.counter.increment_and_count(
            codes, np.asarray(actions, dtype=np.int64) if self.spec.count_actions else None
        )
        return count_bonus(counts, self.spec.beta, self.spec.bonus), counts

    def state_dict(self) -> dict[str, Any]:
        """Counter, hasher and update count (checkpointed with the algorithm)."""
        return {
            "spec": self.spec.to_dict(),
            "counter": self.counter.state_dict(),
            "hasher": self.hasher.state_dict(),
            "num_updates": self.num_updates,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores what ``state_dict`` returned."""
        self.counter.load_state_dict(state["counter"])
        self.hasher.load_state_dict(state["hasher"])
        self.num_updates = int(state["num_updates"])


def _make_hasher(
    spec: ExplorationSpec, obs: ObservationInfo
) -> SimHash | AutoencoderHash | KeyFunctionHash:
    if spec.hash == "key_function":
        return KeyFunctionHash(spec.key_function or "", **dict(spec.key_function_kwargs))
    if spec.hash == "bass":
        intensity = (0.0, 255.0)
        if obs.is_bounded_box and obs.low is not None and obs.high is not None:
            intensity = (float(np.min(obs.low)), float(np.max(obs.high)))
        bass = BASS(
            obs.shape,
            cell_size=spec.bass_cell_size,
            bins=spec.bass_bins,
            intensity_range=intensity,
        )
        return SimHash(bass.output_dim, spec.num_bits, seed=spec.seed, preprocessor=bass)
    preprocessor: BoxNormalizer | OneHot | None = None
    kind = spec.preprocessor
    if kind == "auto":
        kind = "one_hot" if obs.discrete_n else ("box" if obs.is_bounded_box else "none")
    if kind == "one_hot":
        if not obs.discrete_n:
            raise PrivacyConfigError(
                "count_exploration_config.preprocessor one_hot needs a Discrete observation space"
            )
        preprocessor = OneHot(obs.discrete_n)
    elif kind == "box":
        if not obs.is_bounded_box or obs.low is None or obs.high is None:
            raise PrivacyConfigError(
                "count_exploration_config.preprocessor box needs a Box "
                "observation space with finite bounds"
            )
        preprocessor = BoxNormalizer(obs.low, obs.high)
    dim = preprocessor.output_dim if preprocessor is not None else obs.size
    if spec.hash == "simhash":
        return SimHash(dim, spec.num_bits, seed=spec.seed, preprocessor=preprocessor)
    architecture = spec.ae_architecture
    if architecture == "auto":
        architecture = "conv" if len(obs.shape) >= 2 else "mlp"
    return AutoencoderHash(
        dim,
        spec.num_bits,
        seed=spec.seed,
        code_bits=spec.ae_code_bits,
        noise=spec.ae_noise,
        lam=spec.ae_lambda,
        architecture=architecture,
        hidden=spec.ae_hidden,
        pool_size=spec.ae_pool_size,
        train_steps=spec.ae_train_steps,
        batch_size=spec.ae_batch_size,
        lr=spec.ae_lr,
        preprocessor=preprocessor if architecture == "mlp" else None,
    )
