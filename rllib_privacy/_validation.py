"""Checks and error-message helpers every layer may import; imports nothing of ours.

The bottom of the layer order (see ``[tool.importlinter]`` in ``pyproject.toml``): the
pure mechanisms and ledgers, the environments, the plug-ins and the experiment-file
loader all check their arguments and word their errors with these. Every check raises
``ValueError``, or the ``error`` class passed in (a ``ValueError`` subclass such as
[`PrivacyConfigError`][rllib_privacy.errors.PrivacyConfigError]), with a message that
names the argument and says what is allowed, e.g.
``"epsilon must be a finite number > 0, got inf"``.

- Messages: [`did_you_mean`][rllib_privacy._validation.did_you_mean] (and
  [`closest`][rllib_privacy._validation.closest]), [`describe`][rllib_privacy._validation.describe].
- Checks: [`check_choice`][rllib_privacy._validation.check_choice],
  [`check_finite_positive`][rllib_privacy._validation.check_finite_positive],
  [`check_int_in_range`][rllib_privacy._validation.check_int_in_range],
  [`check_bool`][rllib_privacy._validation.check_bool],
  [`check_generator`][rllib_privacy._validation.check_generator].
- Arrays: [`as_float64_array`][rllib_privacy._validation.as_float64_array],
  [`restore_kind`][rllib_privacy._validation.restore_kind].
- JSON: [`encode_inf`][rllib_privacy._validation.encode_inf] and
  [`decode_inf`][rllib_privacy._validation.decode_inf], the one ∞ codec (JSON has no
  infinity).

No Ray and no torch import: a torch tensor is recognized only if torch was imported.
"""

from __future__ import annotations

import difflib
import math
import numbers
import sys
from collections.abc import Collection, Mapping
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "SMALLEST_NORMAL_EPSILON",
    "as_float64_array",
    "check_bool",
    "check_choice",
    "check_finite_positive",
    "check_generator",
    "check_int_in_range",
    "check_normal_epsilon",
    "closest",
    "needs_normal_float",
    "decode_inf",
    "describe",
    "did_you_mean",
    "encode_inf",
    "is_torch_tensor",
    "required",
    "restore_kind",
]


def closest(
    word: str, candidates: Collection[str], renamed: Mapping[str, str] | None = None
) -> str | None:
    """The candidate closest to ``word``, or None when nothing is close.

    A candidate that differs only in case wins; otherwise difflib's closest match.

    Args:
        word: What the user wrote.
        candidates: The allowed names.
        renamed: Old names mapped to their new ones: an old name close to ``word``
            suggests its new name (also when the old name is among ``candidates``).

    Returns:
        The suggestion, or None.

    """
    pool = {str(c).lower(): str(c) for c in candidates}
    # An old name that is also a candidate (still accepted) suggests its new name.
    pool.update({str(old).lower(): str(new) for old, new in (renamed or {}).items()})
    if word.lower() in pool and pool[word.lower()] != word:
        return pool[word.lower()]
    matches = difflib.get_close_matches(word.lower(), list(pool), n=1, cutoff=0.6)
    return pool[matches[0]] if matches else None


def did_you_mean(
    word: str, candidates: Collection[str], renamed: Mapping[str, str] | None = None
) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest candidate, or ``""``.

    Args:
        word: What the user wrote.
        candidates: The allowed names.
        renamed: Old names mapped to their new ones (see
            [`closest`][rllib_privacy._validation.closest]).

    Returns:
        The hint to append to an error message, or ``""`` when nothing is close.

    """
    suggestion = closest(word, candidates, renamed)
    return f"; did you mean {suggestion!r}?" if suggestion is not None else ""


def describe(value: Any) -> str:
    """Return the type and a short repr of ``value`` for an error message.

    Example: ``describe([1, 2])`` is ``"list [1, 2]"``; reprs longer than 60 characters
    are cut with ``...``.
    """
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def check_choice(
    name: str, value: Any, allowed: Collection[Any], *, error: type[ValueError] = ValueError
) -> Any:
    """Check that ``value`` is one of ``allowed``.

    Args:
        name: What the value is, for the message (e.g. ``"config key 'x'"``).
        value: The value to check.
        allowed: The allowed values, listed in the message in this order.
        error: Exception class to raise (a ``ValueError`` subclass).

    Returns:
        ``value``.

    Raises:
        ValueError: (or ``error``) ``"NAME must be one of [...], got VALUE"``.

    """
    if value not in allowed:
        raise error(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def encode_inf(value: Any) -> Any:
    """``value`` for JSON: ``math.inf`` as ``"inf"`` (``-math.inf`` as ``"-inf"``).

    Anything else (finite numbers, None, strings) is returned as it is.
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isinf(value):
        return "inf" if float(value) > 0 else "-inf"
    return value


def decode_inf(name: str, value: Any) -> Any:
    """Undo [`encode_inf`][rllib_privacy._validation.encode_inf].

    Args:
        name: What the value is, for the message.
        value: A value read from JSON.

    Returns:
        ``math.inf`` for ``"inf"``, ``-math.inf`` for ``"-inf"``, anything else as is.

    Raises:
        ValueError: If ``value`` is another string.

    """
    if value == "inf":
        return math.inf
    if value == "-inf":
        return -math.inf
    if isinstance(value, str):
        raise ValueError(f"{name} must be a number or the string 'inf', got {value!r}")
    return value


def check_finite_positive(
    name: str, value: Any, *, allow_inf: bool = False, error: type[ValueError] = ValueError
) -> float:
    """Check that ``value`` is a real number > 0 (finite unless ``allow_inf``).

    Args:
        name: Argument name used in the error message.
        value: The value to check. ``bool`` is rejected even though it is an ``int``.
        allow_inf: Whether ``math.inf`` is allowed.
        error: Exception class to raise (a ``ValueError`` subclass).

    Returns:
        ``value`` as a Python float.

    Raises:
        ValueError: If the value is not a number, is NaN, is <= 0, or is infinite while
            ``allow_inf`` is False.

    """
    allowed = "a number > 0 (math.inf allowed)" if allow_inf else "a finite number > 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise error(f"{name} must be {allowed}, got {value!r}")
    as_float = float(value)
    if math.isnan(as_float) or as_float <= 0.0 or (math.isinf(as_float) and not allow_inf):
        raise error(f"{name} must be {allowed}, got {as_float!r}")
    return as_float


def check_bool(name: str, value: Any, *, error: type[ValueError] = ValueError) -> bool:
    """Check that ``value`` is a bool (Python or numpy), e.g. a ``secure_mode`` flag.

    Raises:
        ValueError: (or ``error``) naming ``name`` if it is anything else (0/1 included).

    """
    if not isinstance(value, bool | np.bool_):
        raise error(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_int_in_range(
    name: str,
    value: Any,
    *,
    low: int,
    high: int | None = None,
    error: type[ValueError] = ValueError,
) -> int:
    """Check that ``value`` is an integer with ``low <= value <= high``.

    Args:
        name: Argument name used in the error message.
        value: The value to check; Python and numpy integers are accepted, ``bool`` and
            floats (even integral ones such as ``2.0``) are not.
        low: Smallest allowed value.
        high: Largest allowed value, or None for no upper bound.
        error: Exception class to raise (a ``ValueError`` subclass).

    Returns:
        ``value`` as a Python int.

    Raises:
        ValueError: If the value is not an integer or lies outside the range.

    """
    allowed = f"an int >= {low}" if high is None else f"an int in [{low}, {high}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise error(f"{name} must be {allowed}, got {value!r}")
    as_int = int(value)
    if as_int < low or (high is not None and as_int > high):
        raise error(f"{name} must be {allowed}, got {as_int!r}")
    return as_int


def check_generator(rng: Any) -> np.random.Generator:
    """Return ``rng`` if it is a numpy Generator, a fresh unseeded one if it is None.

    Args:
        rng: A ``numpy.random.Generator`` or None.

    Returns:
        The generator to draw from.

    Raises:
        ValueError: If ``rng`` is anything else (e.g. an int seed or a legacy RandomState).

    """
    if rng is None:
        return np.random.default_rng()
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            "rng must be a numpy.random.Generator or None (use np.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


_T = TypeVar("_T")


def required(name: str, value: _T | None) -> _T:
    """``value``, a setting the caller's mode needs, as not None (else ValueError)."""
    if value is None:
        raise ValueError(f"{name} is required here, got None")
    return value


def is_torch_tensor(value: Any) -> bool:
    """Whether ``value`` is a torch tensor, without importing torch if nobody else did."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def as_float64_array(name: str, value: Any) -> np.ndarray:
    """Convert a numpy array, torch tensor or array-like to a validated float64 copy.

    Args:
        name: Argument name used in error messages.
        value: Numeric, real-valued data (any shape, at least one entry).

    Returns:
        A new float64 numpy array with the same shape (never a view of ``value``).

    Raises:
        ValueError: If ``value`` is empty, not real-valued, or has a NaN or infinite entry.

    """
    if is_torch_tensor(value):
        if value.is_complex():
            raise ValueError(f"{name} must be real-valued, got dtype {value.dtype}")
        array = value.detach().to(device="cpu", dtype=_torch_float64()).numpy().copy()
    else:
        if np.iscomplexobj(value):
            raise ValueError(f"{name} must be real-valued, got a complex array")
        try:
            array = np.array(value, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} must be a real-valued numpy array or torch tensor, got {type(value)}"
            ) from exc
    if array.size == 0:
        raise ValueError(f"{name} must have at least one entry, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        bad = int(array.size - np.count_nonzero(np.isfinite(array)))
        raise ValueError(
            f"{name} must contain only finite values, got {bad} NaN/inf entries "
            "(nothing was released)"
        )
    return array


def restore_kind(result: np.ndarray, like: Any) -> Any:
    """Return ``result`` as the same kind of container as ``like``.

    Torch tensors come back as tensors with ``like``'s dtype and device (non-floating
    tensors come back in torch's default float dtype); numpy arrays keep a floating dtype
    and anything else (integer arrays, lists, scalars) comes back as a float64 array.

    Args:
        result: The float64 numpy result, same shape as ``like``.
        like: The original input.

    Returns:
        The converted result.

    """
    if is_torch_tensor(like):
        torch = sys.modules["torch"]
        dtype = like.dtype if like.is_floating_point() else torch.get_default_dtype()
        return torch.from_numpy(result).to(device=like.device, dtype=dtype)
    if isinstance(like, np.ndarray) and np.issubdtype(like.dtype, np.floating):
        return result.astype(like.dtype, copy=False)
    return result


def _torch_float64() -> Any:
    return sys.modules["torch"].float64


#: The smallest normal float64 (``sys.float_info.min``): a smaller ε > 0 is subnormal.
SMALLEST_NORMAL_EPSILON = sys.float_info.min

#: Privacy parameters besides the ``*epsilon*`` keys that must not be subnormal: the
#: Dirichlet mechanism's concentration k (``k = 1e-320`` makes every sample NaN) and PATE's
#: Gaussian noise σ (its ε ~ 1/σ² overflows).
NORMAL_FLOAT_KEYS = ("teacher_k", "teacher_min_k", "pate_gnmax_sigma", "pate_confident_sigma")


def needs_normal_float(key: str) -> bool:
    """Whether config key ``key`` is an ε or another parameter `check_normal_epsilon` covers."""
    return "epsilon" in key or key in NORMAL_FLOAT_KEYS


def check_normal_epsilon(name: str, value: float) -> None:
    """Raise if ``value`` is a finite ε in (0, ``SMALLEST_NORMAL_EPSILON``).

    Such an ε passes "a number > 0" but no mechanism can be computed with it in float64:
    ε/T underflows to 0 and noise scales overflow (``rllib_privacy.mechanisms.floors``
    gives each gradient mechanism's own, larger, floor).

    Args:
        name: What the value is, for the message (e.g. ``"config key 'privacy_epsilon'"``).
        value: The ε (other problems are left to the caller's checks).

    Raises:
        ValueError: Naming the value and the smallest meaningful one.
    """
    if 0.0 < value < SMALLEST_NORMAL_EPSILON:
        raise ValueError(
            f"{name} is {value!r}, a subnormal float: no mechanism can be computed with it "
            f"in float64 (its shares underflow to 0 or its noise scale overflows); the "
            f"smallest meaningful value is {SMALLEST_NORMAL_EPSILON:.3g}"
        )
