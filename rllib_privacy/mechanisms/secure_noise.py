"""Secure noise: floating-point-safe samplers, OS-entropy generators, per-agent streams.

What ``secure_mode=True`` means for every mechanism of the package (docs/secure-noise.md):

- **Laplace and Gaussian noise** come from OpenDP's samplers (``opendp.measurements``
  ``make_laplace`` / ``make_gaussian``), never from ``loc + scale·ln(U)`` on floats.
  Mironov (2012, "On significance of the least significant bits for differential privacy")
  showed that the naive float sampler leaks its input: the set of floats it can output
  depends on the input, so one output can rule an input out. OpenDP samples the discrete
  Laplace / Gaussian exactly (arbitrary-precision arithmetic; random bits from a CSPRNG
  seeded by the OS: OpenSSL's ``RAND_bytes``, or ``rand``'s ``thread_rng``) on the
  lattice ``2^k·Z``; with the default ``k`` on float domains (``k = -1074``, the spacing of
  the smallest subnormal) every float input lies on the lattice, so nothing is rounded on
  the way in, and the only float step is rounding the exact lattice result to the nearest
  float on the way out, which is post-processing. OpenDP's own privacy map certifies
  ``ε = Δ₁/scale`` (Laplace) and ``ρ = Δ₂²/(2σ²)`` (Gaussian) exactly, so the package's
  accountants stay valid unchanged.
- **Integer inputs** (vote counts) can use the integer domains: exact discrete Laplace
  (Ghosh, Roughgarden, Sundararajan 2012) and discrete Gaussian (Canonne, Kamath, Steinke
  2020, "The Discrete Gaussian for Differential Privacy"), whose guarantees for integer
  sensitivity Δ are the same as the continuous ones (``Δ₁/scale``-DP; ``Δ₂²/(2σ²)``-zCDP).
- **Everything else** (PRS's projection and sign flips, the Dirichlet mechanism's Gamma
  draws) has no OpenDP sampler: it draws from ``os_entropy_generator``, a numpy
  Generator seeded per release with 128 fresh bits from the OS (``secrets``), or, for PRS's
  ±C bits, from ``secure_bernoulli`` (exact Bernoulli from OS bits).

In secure mode a ``rng`` argument never drives the noise (OpenDP uses its own generator):
seeded runs are not reproducible, by design.

Outside secure mode, ``NoiseStreams`` still gives every local agent its own stream that
is never shared or repeated across process restarts, and ``warn_fixed_seed`` warns when
a fixed seed drives privacy noise outside tests.
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from rllib_privacy._validation import check_finite_positive

__all__ = [
    "DETERMINISTIC_NOISE_ENV_VAR",
    "TESTING_ENV_VAR",
    "NoiseStreams",
    "PrivacyWarning",
    "deterministic_noise_requested",
    "noise_generator",
    "os_entropy_generator",
    "running_tests",
    "secure_bernoulli",
    "secure_discrete_gaussian",
    "secure_discrete_laplace",
    "secure_gaussian",
    "secure_laplace",
    "warn_fixed_seed",
]

logger = logging.getLogger(__name__)

#: Set to ``1`` by ``tests/conftest.py``: fixed seeds are expected there, no warning.
TESTING_ENV_VAR = "RLLIB_PRIVACY_TESTING"
#: Test-only: ``1`` makes seeded noise streams reproducible across processes (no
#: per-incarnation nonce). Never set it for a real run: a restarted process repeats noise.
DETERMINISTIC_NOISE_ENV_VAR = "RLLIB_PRIVACY_DETERMINISTIC_NOISE"

# OpenDP's integer domains use i64: counts beyond this are rejected rather than wrapped.
_I64_LIMIT = 2**62


class PrivacyWarning(UserWarning):
    """A setting weakens a privacy guarantee in practice (e.g. a fixed noise seed)."""


def running_tests() -> bool:
    """Whether the process runs under the test suite (``RLLIB_PRIVACY_TESTING=1`` or pytest)."""
    return os.environ.get(TESTING_ENV_VAR) == "1" or "PYTEST_CURRENT_TEST" in os.environ


def deterministic_noise_requested() -> bool:
    """Whether the test-only flag ``DETERMINISTIC_NOISE_ENV_VAR`` is ``1``."""
    return os.environ.get(DETERMINISTIC_NOISE_ENV_VAR) == "1"


_warned: set[str] = set()


def warn_fixed_seed(setting: str, *, secure_mode: bool = False) -> bool:
    """Warn (once per ``setting`` and process) that a fixed seed is set for privacy noise.

    Outside secure mode the package's noise streams mix a fresh OS-entropy nonce into the
    seed per process (``NoiseStreams``), so the seed alone does not reproduce the
    noise, unless the test-only flag ``DETERMINISTIC_NOISE_ENV_VAR`` is set: then
    whoever knows the seed can regenerate the noise and remove it, and the message says so.
    Either way a fixed seed in a private run belongs to experiments, not deployments.
    Silent under tests (``running_tests``). With ``secure_mode`` the seed never drives
    the noise (OpenDP and OS entropy do), so only an INFO log line says so.

    Args:
        setting: The config key (or argument) that holds the seed, named in the message.
        secure_mode: Whether the component runs in secure mode.

    Returns:
        Whether a ``PrivacyWarning`` was emitted.

    """
    if secure_mode:
        logger.info("%s is fixed but secure_mode is on: it does not drive the noise", setting)
        return False
    if running_tests() or setting in _warned:
        return False
    _warned.add(setting)
    if deterministic_noise_requested():
        effect = (
            f"{DETERMINISTIC_NOISE_ENV_VAR}=1 is set, so the seed alone drives the privacy "
            "noise: whoever knows it can regenerate the noise and remove it, which voids the "
            "privacy guarantee (that flag is for tests only)"
        )
    else:
        effect = (
            "the privacy noise mixes in fresh OS entropy per process, so it does not follow "
            "the seed, but a fixed seed in a private run is for experiments only"
        )
    message = (
        f"{setting} is a fixed seed in a run that releases privacy noise: {effect}. For a "
        "deployment leave the seed unset (null) or set secure_mode: true (OpenDP noise from "
        "OS entropy; the seed then never drives the noise)."
    )
    warnings.warn(message, PrivacyWarning, stacklevel=2)
    logger.warning(message)
    return True


def os_entropy_generator() -> np.random.Generator:
    """A numpy Generator seeded with 128 fresh bits from the OS (``secrets.randbits``).

    Why a fresh generator per release rather than one long-lived one: no generator state
    outlives a release, so there is nothing to checkpoint, restore or leak (a PCG64 state
    can be run backwards to recover earlier noise), and a restarted process can never
    repeat a stream. 128 bits is PCG64's full seed width.
    """
    return np.random.Generator(np.random.PCG64(secrets.randbits(128)))


def noise_generator(
    seed: int | Sequence[int] | np.random.SeedSequence | None, *, secure_mode: bool = False
) -> np.random.Generator:
    """The generator a component should draw privacy noise from.

    Args:
        seed: A seed (int, sequence of ints or SeedSequence) for reproducible experiments,
            or None. Ignored in secure mode.
        secure_mode: Draw from OS entropy whatever ``seed`` is.

    Returns:
        ``np.random.default_rng(seed)`` for a seed outside secure mode (deterministic, for
        tests), else ``os_entropy_generator``.

    """
    if secure_mode or seed is None:
        return os_entropy_generator()
    return np.random.default_rng(seed)


class NoiseStreams:
    """Independent noise generators for the local agents of one process.

    The root is ``SeedSequence([*seed_key, nonce])`` where ``nonce`` is 128 OS-entropy
    bits drawn once per instance (per process incarnation), so two instances with the same
    seed and key, e.g. an EnvRunner restarted by RLlib with the same ``worker_index``, or a
    resumed run, never repeat each other's noise. Every ``spawn`` returns a child stream
    that no other agent gets (``SeedSequence.spawn`` children are independent).

    Without a seed the root is pure OS entropy. The nonce is left out only when the
    test-only flag ``DETERMINISTIC_NOISE_ENV_VAR`` is set (or ``deterministic=True``)
    and a seed is given: then the streams are reproducible.

    Args:
        seed: The run's seed, or None.
        key: Further ints that separate streams of different processes (e.g. the
            worker index).
        deterministic: Override ``deterministic_noise_requested``.

    """

    def __init__(
        self, seed: int | None, *, key: Sequence[int] = (), deterministic: bool | None = None
    ) -> None:
        if deterministic is None:
            deterministic = deterministic_noise_requested()
        self.deterministic = bool(deterministic) and seed is not None
        entropy = [int(k) for k in key]
        if seed is not None:
            entropy.insert(0, int(seed))
        if not self.deterministic:
            entropy.append(secrets.randbits(128))
        self._root = np.random.SeedSequence(entropy)

    def spawn(self) -> np.random.Generator:
        """A new generator, independent of every other one this instance returned."""
        return np.random.default_rng(self._root.spawn(1)[0])


# --------------------------------------------------------------------------------------
# OpenDP samplers. Measurements are cached per (kind, scale): building one costs more than
# a small release, and they are immutable.


@functools.lru_cache(maxsize=1)
def _opendp() -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


@functools.lru_cache(maxsize=256)
def _float_measurement(kind: str, scale: float) -> Any:
    dp = _opendp()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    if kind == "laplace":
        return dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale)
    return dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale)


@functools.lru_cache(maxsize=256)
def _int_measurement(kind: str, scale: float) -> Any:
    dp = _opendp()
    domain = dp.vector_domain(dp.atom_domain(T="i64"))
    if kind == "laplace":
        return dp.m.make_laplace(domain, dp.l1_distance(T="i64"), scale=scale)
    return dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale)


def _float_release(kind: str, values: Any, scale: float) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError("values must contain only finite values (nothing was released)")
    measurement = _float_measurement(kind, scale)
    noisy = measurement(array.reshape(-1).tolist())
    return np.asarray(noisy, dtype=np.float64).reshape(array.shape)


def _int_release(kind: str, counts: Any, scale: float) -> np.ndarray:
    array = np.asarray(counts)
    if array.dtype.kind not in "iu" and not (
        array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array))
    ):
        raise ValueError(f"counts must be integers, got dtype {array.dtype}")
    if array.size and float(np.max(np.abs(array))) >= _I64_LIMIT:
        raise ValueError(f"counts must be smaller than 2**62 in magnitude for {kind} noise")
    measurement = _int_measurement(kind, scale)
    noisy = measurement([int(v) for v in array.reshape(-1)])
    return np.asarray(noisy, dtype=np.int64).reshape(array.shape)


def secure_laplace(values: Any, scale: float) -> np.ndarray:
    """``values + Lap(scale)`` per entry, floating-point safe (OpenDP ``make_laplace``).

    The noise is the discrete Laplace on ``2^-1074·Z`` sampled exactly, then rounded to the
    nearest float (post-processing). OpenDP's privacy map gives exactly ``Δ₁/scale`` for
    L1 sensitivity Δ₁: the same ε as continuous Laplace noise of that scale.

    Args:
        values: Finite floats, any shape.
        scale: Laplace scale b > 0 (variance 2b²).

    Returns:
        float64 array of ``values``' shape.

    Raises:
        ValueError: If ``scale`` is not a finite number > 0 or a value is not finite.

    """
    scale = check_finite_positive("scale", scale)
    return _float_release("laplace", values, scale)


def secure_gaussian(values: Any, sigma: float) -> np.ndarray:
    """``values + N(0, σ²)`` per entry, floating-point safe (OpenDP ``make_gaussian``).

    Exact discrete Gaussian on ``2^-1074·Z`` rounded to floats; OpenDP certifies
    ``ρ = Δ₂²/(2σ²)``-zCDP, the continuous Gaussian's guarantee.

    Args:
        values: Finite floats, any shape.
        sigma: Standard deviation σ > 0.

    Returns:
        float64 array of ``values``' shape.

    Raises:
        ValueError: If ``sigma`` is not a finite number > 0 or a value is not finite.

    """
    sigma = check_finite_positive("sigma", sigma)
    return _float_release("gaussian", values, sigma)


def secure_discrete_laplace(counts: Any, scale: float) -> np.ndarray:
    """``counts + Z``, Z ~ discrete Laplace: ``P(Z = z) ∝ exp(-|z|/scale)`` on the integers.

    Exact sampler (OpenDP, Canonne-Kamath-Steinke 2020 §5.2). For integer L1 sensitivity Δ
    it is ``Δ/scale``-DP, as continuous Laplace. Variance
    ``2·e^{-1/scale} / (1 - e^{-1/scale})²``.

    Args:
        counts: Integers (or integral floats), any shape, ``|count| < 2**62``.
        scale: Scale > 0.

    Returns:
        int64 array of ``counts``' shape.

    Raises:
        ValueError: If ``scale`` is not a finite number > 0 or ``counts`` are not integers.

    """
    scale = check_finite_positive("scale", scale)
    return _int_release("laplace", counts, scale)


def secure_discrete_gaussian(counts: Any, sigma: float) -> np.ndarray:
    """``counts + Z``, Z ~ discrete Gaussian: ``P(Z = z) ∝ exp(-z²/(2σ²))`` on the integers.

    Exact sampler (OpenDP; Canonne, Kamath, Steinke 2020). For integer L2 sensitivity Δ it
    is ``Δ²/(2σ²)``-zCDP (their Thm. 4), the same as the continuous Gaussian, hence the
    same RDP curve ``α·Δ²/(2σ²)``; its variance is at most σ².

    Args:
        counts: Integers (or integral floats), any shape, ``|count| < 2**62``.
        sigma: σ > 0.

    Returns:
        int64 array of ``counts``' shape.

    Raises:
        ValueError: If ``sigma`` is not a finite number > 0 or ``counts`` are not integers.

    """
    sigma = check_finite_positive("sigma", sigma)
    return _int_release("gaussian", counts, sigma)


def secure_bernoulli(probabilities: Any) -> np.ndarray:
    """One exact Bernoulli(p) draw per entry, from OS entropy (``secrets``).

    A float64 ``p`` is the dyadic rational ``num/2^e`` (``float.as_integer_ratio``), so
    ``secrets.randbelow(2^e) < num`` has probability exactly ``p``: no float rounding of
    a uniform variate is involved. Hand-written because numpy has no exact sampler and
    OpenDP exposes none for arbitrary ``p`` in Python.

    Args:
        probabilities: Numbers in [0, 1], any shape.

    Returns:
        bool array of the same shape.

    Raises:
        ValueError: If a probability is not in [0, 1].

    """
    p = np.asarray(probabilities, dtype=np.float64)
    if not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError("probabilities must all be in [0, 1]")
    flat = p.reshape(-1)
    out = np.empty(flat.size, dtype=bool)
    for i, value in enumerate(flat.tolist()):
        numerator, denominator = value.as_integer_ratio()
        out[i] = secrets.randbelow(denominator) < numerator
    return out.reshape(p.shape)
