"""Stage 2, translate: old names to new ones, and the pieces of the config merged.

Experiment files written for RLlib's old ``tuned_examples`` still load: keys of older
Tune/RLlib versions and of the old API stack, and the algorithm config's own renamed keys,
are translated with a notice; stop criteria get new API stack result keys (a typo of a
top-level key is caught, since a trial never stops on a key its results lack). The
experiment's ``config``, top-level ``env``, ``gpu_config`` and the ``--config`` override
are then merged into the config to run without and with GPUs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping
from typing import Any

from rllib_privacy._validation import describe, did_you_mean
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.experiments.spec import ExperimentDraft, Overrides, deep_merge

__all__ = [
    "CONFIG_KEY_ALIASES",
    "LEGACY_CONFIG_KEYS",
    "LEGACY_METRIC_KEYS",
    "TOP_LEVEL_RESULT_KEYS",
    "translate_config_keys",
    "translate_experiment",
    "translate_metric_key",
    "translate_overrides",
    "translate_stop",
]

#: Old API stack result keys and their new API stack names (stop criteria, metrics).
LEGACY_METRIC_KEYS = {
    "episode_reward_mean": "env_runners/episode_return_mean",
    "episode_reward_max": "env_runners/episode_return_max",
    "episode_reward_min": "env_runners/episode_return_min",
    "episode_len_mean": "env_runners/episode_len_mean",
    "timesteps_total": "num_env_steps_sampled_lifetime",
    "episodes_total": "env_runners/num_episodes_lifetime",
    "evaluation/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
    "sampler_results/episode_reward_mean": "env_runners/episode_return_mean",
    "env_runners/episode_reward_mean": "env_runners/episode_return_mean",
}

#: Old API stack config keys and their new names (translated with a notice).
LEGACY_CONFIG_KEYS = {"num_workers": "num_env_runners"}

#: Public config names whose attribute has no setter; translated silently.
CONFIG_KEY_ALIASES = {"model_config": "_model_config"}

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


def translate_overrides(overrides: Overrides, notices: list[str]) -> Overrides:
    """Translate the command line's ``--stop`` and ``--config`` once for the whole file.

    The algorithm-specific parts (its renamed keys, its result keys) are translated per
    experiment by
    [`translate_experiment`][rllib_privacy.experiments.translate.translate_experiment].

    Args:
        overrides: The command-line overrides.
        notices: Receives one line per translated key, prefixed by the option.

    Returns:
        The overrides with new key names.

    Raises:
        PrivacyConfigError: A bad stop criterion, or a key given twice.

    """
    stop, config = overrides.stop, overrides.config
    if stop is not None:
        option_notices: list[str] = []
        stop = translate_stop(stop, option_notices, typo_is_error=False)
        notices.extend(f"--stop: {n}" for n in option_notices)
    if config is not None:
        option_notices = []
        config = translate_config_keys(config, option_notices)
        notices.extend(f"--config: {n}" for n in option_notices)
    return dataclasses.replace(overrides, stop=stop, config=config)


def translate_experiment(draft: ExperimentDraft, overrides: Overrides) -> None:
    """Translate ``draft``'s keys and merge its configs, in place.

    Sets ``config`` (``config`` + top-level ``env`` + ``--config``), ``gpu_config``
    (with ``gpu_config`` merged before ``--config``; None without one), ``stop`` and
    ``checkpoint_config`` (its score attribute under its new API stack name).

    Args:
        draft: The parsed experiment.
        overrides: The translated command-line overrides.

    Raises:
        PrivacyConfigError: A config section that is not a mapping, a key given twice,
            ``env`` and ``config.env`` disagreeing, or a bad stop criterion.

    """
    spec, notices = draft.spec, draft.notices
    # The algorithm's own renamed keys (docs/configuration.md), also in --config overrides.
    legacy = getattr(type(draft.algo_cls.get_default_config()), "legacy_config_keys", None)
    names = legacy() if callable(legacy) else {}
    renamed = dict(names) if isinstance(names, Mapping) else {}
    config = translate_config_keys(_mapping(spec, "config"), notices, renamed=renamed)
    gpu_config = translate_config_keys(
        _mapping(spec, "gpu_config"), notices, "gpu_config", renamed=renamed
    )
    override = translate_config_keys(overrides.config or {}, notices, "--config", renamed=renamed)
    config = _with_top_level_env(config, spec.get("env"))
    draft.config = deep_merge(config, override)
    if "gpu_config" in spec:
        draft.gpu_config = deep_merge(deep_merge(config, gpu_config), override)
    result_keys = getattr(draft.algo_cls, "TOP_LEVEL_RESULT_KEYS", ())
    if overrides.stop is not None:
        # Checked again now that the algorithm's own result keys are known (no notices:
        # the override's were given once for the whole file).
        draft.stop = translate_stop(overrides.stop, [], result_keys)
    else:
        draft.stop = translate_stop(spec.get("stop", {}), notices, result_keys)
    draft.checkpoint_config = _translate_checkpoint_config(spec.get("checkpoint_config"), notices)


def _translate_checkpoint_config(value: Any, notices: list[str]) -> Any:
    """``checkpoint_config`` with an old API stack ``checkpoint_score_attribute`` renamed."""
    if not isinstance(value, Mapping):
        return value  # Checked by the validate stage.
    attribute = value.get("checkpoint_score_attribute")
    if not isinstance(attribute, str) or translate_metric_key(attribute) == attribute:
        return value
    notices.append(
        f"checkpoint_score_attribute {attribute!r} is an old API stack key; "
        f"using {translate_metric_key(attribute)!r}"
    )
    return {**value, "checkpoint_score_attribute": translate_metric_key(attribute)}


def translate_metric_key(key: str) -> str:
    """Return the new API stack name of an old API stack result key (else ``key``)."""
    return LEGACY_METRIC_KEYS.get(key, key)


def translate_config_keys(
    config: Mapping[str, Any],
    notices: list[str],
    where: str = "config",
    renamed: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Rename legacy and alias keys (recursing into ``evaluation_config``).

    Args:
        config: A config mapping as written in the file or on the command line.
        notices: Receives one line per legacy key translated.
        where: Where the mapping is, for messages (``config``, ``gpu_config``, ...).
        renamed: The algorithm config's own renamed keys ({old: new}, its
            ``legacy_config_keys()``; docs/configuration.md), translated with a notice too.

    Returns:
        A new mapping with current key names.

    Raises:
        PrivacyConfigError: A key is given both under its old and its new name.

    """
    out: dict[str, Any] = {}
    for key, value in config.items():
        new_key = LEGACY_CONFIG_KEYS.get(key, CONFIG_KEY_ALIASES.get(key, key))
        if key in LEGACY_CONFIG_KEYS:
            notices.append(f"{where} key {key!r} is an old API stack key; using {new_key!r}")
        elif renamed and key in renamed:
            new_key = renamed[key]
            notices.append(f"{where} key {key!r} is deprecated (renamed); using {new_key!r}")
        if new_key in out or (new_key != key and new_key in config):
            raise PrivacyConfigError(f"{where} sets {new_key!r} twice (also as {key!r})")
        if new_key == "evaluation_config" and isinstance(value, Mapping):
            value = translate_config_keys(
                value, notices, where=f"{where}.evaluation_config", renamed=renamed
            )
        out[new_key] = value
    return out


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


def _mapping(spec: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = spec.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PrivacyConfigError(f"{key!r} must be a mapping, got {describe(value)}")
    return dict(value)


def _with_top_level_env(config: dict[str, Any], env: Any) -> dict[str, Any]:
    if env is None:
        return config
    if "env" in config and config["env"] != env:
        raise PrivacyConfigError(
            f"'env' ({env!r}) and 'config.env' ({config['env']!r}) disagree; set only one"
        )
    return {"env": env, **config}
