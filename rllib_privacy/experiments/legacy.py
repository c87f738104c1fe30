"""Keys of older Tune/RLlib versions and the old API stack, and what they are now.

Experiment files written for RLlib's old ``tuned_examples`` still load: renamed keys are
translated with a notice, removed ones are rejected with what to write instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rllib_privacy.errors import PrivacyConfigError

__all__ = [
    "CONFIG_KEY_ALIASES",
    "LEGACY_CONFIG_KEYS",
    "LEGACY_EXPERIMENT_KEY_HINTS",
    "LEGACY_METRIC_KEYS",
    "translate_config_keys",
    "translate_metric_key",
]

#: Experiment keys of older Tune/RLlib versions and what to write instead.
LEGACY_EXPERIMENT_KEY_HINTS = {
    "local_dir": "use 'storage_path'",
    "checkpoint_freq": "use 'checkpoint_config: {checkpoint_frequency: N}'",
    "checkpoint_at_end": "use 'checkpoint_config: {checkpoint_at_end: true}'",
    "keep_checkpoints_num": "use 'checkpoint_config: {num_to_keep: N}'",
    "checkpoint_score_attr": "use 'checkpoint_config: {checkpoint_score_attribute: KEY}'",
    "resources_per_trial": (
        "RLlib derives trial resources from config (num_env_runners, num_learners, "
        "num_gpus_per_learner, ...)"
    ),
}

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
