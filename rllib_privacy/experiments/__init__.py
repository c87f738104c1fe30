"""Load, validate and normalize classic RLlib experiment files (YAML or JSON).

An experiment file maps experiment names to experiments in the shape of RLlib's old
``tuned_examples``::

    cartpole-ppo:
      run: PPO                      # algorithm name registered with Tune
      env: CartPole-v1              # or config.env
      stop: {training_iteration: 10}
      checkpoint_config: {checkpoint_frequency: 5}
      num_samples: 1
      storage_path: ~/ray_results
      config:                       # AlgorithmConfig.update_from_dict() keys
        lr: {grid_search: [0.001, 0.0003]}
      gpu_config:                   # merged into config only when the cluster has GPUs
        num_gpus_per_learner: 0.25

Everything here runs before Ray starts and never calls ``ray.init``: problems surface
as [`ExperimentFileError`][rllib_privacy.errors.ExperimentFileError] whose message starts
with the file and the experiment name. Tune's own variant generator expands
``grid_search`` so that every variant's config is built and validated by the
algorithm's own config class.

A file goes through a pipeline of stages, each an independent module that sees an
experiment once ([rllib_privacy.experiments.pipeline][] runs them, in this order; an
import-linter contract in ``pyproject.toml`` keeps the stages from calling each other):

1. ``parse``: the YAML/JSON text, each experiment's shape, the algorithm ``run`` names.
2. ``translate``: old Tune, old API stack and renamed algorithm keys to the new ones;
   ``config``, ``env``, ``gpu_config`` and ``--config`` merged.
3. ``resolve``: the config made concrete: new API stack and torch, the env, the
   storage path.
4. ``validate``: config keys, every grid variant, checkpoint settings, ``num_samples``.
5. ``finalize``: the frozen [`Experiment`][rllib_privacy.experiments.spec.Experiment].

The stages share ``spec`` (the data classes and grid-search helpers) and ``registry``
(Tune's registry, looked up before Ray starts).

Before the pipeline (which imports Ray, RLlib and torch: seconds),
[rllib_privacy.experiments.precheck][] checks the parsed file against a generated table of
config keys ([rllib_privacy.experiments.key_table][]) in well under a second.

Algorithm config classes can take part in validation through these optional hooks:

* ``normalize_config_dict(d) -> d`` (a classmethod or staticmethod on the config class):
  called once with the experiment's config dict (before grid variants are expanded) to
  rewrite values that must be fixed before Ray starts, e.g. relative paths made absolute
  because Tune runs every trial in its own working directory.
* ``validate_config_dict(d)`` (a classmethod or staticmethod on the config class): called
  with every resolved variant's config dict; raises
  [`PrivacyConfigError`][rllib_privacy.errors.PrivacyConfigError] naming the key that is
  wrong.
* ``config_dict_keys`` (a class attribute mapping a config key whose value is a nested
  dict, e.g. ``"learner_config_dict"``, to the names allowed inside it): nested dicts are
  free-form unless declared here.
* ``legacy_config_keys()`` (a classmethod or staticmethod returning key names): extra
  top-level keys the config class accepts, e.g. old names its ``update_from_dict``
  translates (see
  [`allowed_config_keys`][rllib_privacy.algorithms.config_keys.allowed_config_keys]).
"""

from __future__ import annotations

from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError
from rllib_privacy.experiments.parse import (
    EXPERIMENT_KEYS,
    LEGACY_EXPERIMENT_KEY_HINTS,
    load_experiment_file,
    parse_json_mapping,
)
from rllib_privacy.experiments.pipeline import load_experiments, normalize_experiments
from rllib_privacy.experiments.precheck import precheck_experiments
from rllib_privacy.experiments.registry import (
    ensure_package_registered,
    quiet_rllib,
    registered_algorithms,
    registered_envs,
    resolve_algorithm,
)
from rllib_privacy.experiments.resolve import (
    API_STACK_KEYS,
    DEFAULT_STORAGE_PATH,
    make_env_from_path,
    register_class_path_envs,
    resolve_env,
)
from rllib_privacy.experiments.spec import Experiment, ExperimentFile, Overrides, deep_merge
from rllib_privacy.experiments.translate import (
    CONFIG_KEY_ALIASES,
    LEGACY_CONFIG_KEYS,
    LEGACY_METRIC_KEYS,
    TOP_LEVEL_RESULT_KEYS,
    translate_config_keys,
    translate_metric_key,
    translate_stop,
)
from rllib_privacy.experiments.validate import DEFAULT_CHECKPOINT_CONFIG, MAX_VALIDATED_VARIANTS

__all__ = [
    "API_STACK_KEYS",
    "CONFIG_KEY_ALIASES",
    "DEFAULT_CHECKPOINT_CONFIG",
    "DEFAULT_STORAGE_PATH",
    "EXPERIMENT_KEYS",
    "LEGACY_CONFIG_KEYS",
    "LEGACY_EXPERIMENT_KEY_HINTS",
    "LEGACY_METRIC_KEYS",
    "MAX_VALIDATED_VARIANTS",
    "TOP_LEVEL_RESULT_KEYS",
    "Experiment",
    "ExperimentFile",
    "ExperimentFileError",
    "Overrides",
    "PrivacyConfigError",
    "deep_merge",
    "did_you_mean",
    "ensure_package_registered",
    "load_experiment_file",
    "load_experiments",
    "make_env_from_path",
    "normalize_experiments",
    "parse_json_mapping",
    "precheck_experiments",
    "quiet_rllib",
    "register_class_path_envs",
    "registered_algorithms",
    "registered_envs",
    "resolve_algorithm",
    "resolve_env",
    "translate_config_keys",
    "translate_metric_key",
    "translate_stop",
]
