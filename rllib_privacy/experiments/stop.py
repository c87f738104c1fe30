"""Stop criteria: validated, old API stack keys renamed, typos caught before Ray starts."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from rllib_privacy._validation import describe, did_you_mean
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.experiments.legacy import translate_metric_key

__all__ = ["TOP_LEVEL_RESULT_KEYS", "translate_stop"]

#: Top-level (unnested) numeric result keys of RLlib 2.60 algorithms under Tune.
TOP_LEVEL_RESULT_KEYS = (
    "training_iteration",
    "time_total_s",
    "time_this_iter_s",
    "time_since_restore",
    "iterations_since_restore",
    "num_env_steps_sampled_lifetime",
    "num_training_step_calls_per_iteration",
    "timestamp",
)


def translate_stop(
    stop: Any,
    notices: list[str],
    extra_result_keys: Collection[str] = (),
    *,
    typo_is_error: bool = True,
) -> dict[str, float]:
    """Validate stop criteria and rename old API stack keys.

    Args:
        stop: The ``stop`` mapping (result key to threshold).
        notices: Receives one line per translated or suspicious key.
        extra_result_keys: Top-level result keys the algorithm adds to RLlib's
            (an Algorithm class may list them in ``TOP_LEVEL_RESULT_KEYS``).
        typo_is_error: Raise for an unknown top-level key close to a known one (Tune
            only logs a warning for a stop key its results lack and runs on forever);
            False when the algorithm, and so its result keys, is not known yet.

    Returns:
        The stop criteria with new API stack keys.

    Raises:
        PrivacyConfigError: ``stop`` is not a mapping, a value is not a number, or two
            keys mean the same metric.

    """
    if not isinstance(stop, Mapping):
        raise PrivacyConfigError(
            f"'stop' must be a mapping of result keys to numbers, got {describe(stop)}"
        )
    out: dict[str, float] = {}
    for key, value in stop.items():
        key = str(key)
        new_key = translate_metric_key(key)
        if new_key != key:
            notices.append(f"stop key {key!r} is an old API stack key; using {new_key!r}")
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise PrivacyConfigError(f"stop value of {key!r} must be a number, got {value!r}")
        if new_key in out:
            raise PrivacyConfigError(f"stop key {new_key!r} is given twice (as {key!r})")
        known = (*TOP_LEVEL_RESULT_KEYS, *extra_result_keys)
        if "/" not in new_key and new_key not in known:
            if typo_is_error and did_you_mean(new_key, known):
                raise PrivacyConfigError(
                    f"stop key {new_key!r} is not a top-level result key"
                    f"{did_you_mean(new_key, known)}; a trial never stops on a key that "
                    "its results lack"
                )
            notices.append(
                f"stop key {new_key!r} is not a top-level result key of RLlib algorithms"
                f"{did_you_mean(new_key, known)}; a trial never stops on a "
                "key that its results lack"
            )
        out[new_key] = value
    return out
