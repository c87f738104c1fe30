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
as :class:`~rllib_privacy.errors.ExperimentFileError` whose message starts with the file
and the experiment name. Tune's own variant generator expands ``grid_search`` so that
every variant's config is built and validated by the algorithm's own config class.

One job per module (dependencies point down this list; an import-linter contract in
``pyproject.toml`` keeps it so):

* ``loading``: :func:`load_experiments` and :func:`normalize_experiments`, one experiment
  after the other through the steps below.
* ``validation``: experiment keys, checkpoint settings, config keys, every grid variant.
* ``resolution``: the algorithm and env a name refers to; Tune's registry.
* ``stop``: stop criteria.
* ``legacy``: old API stack and old Tune keys and what they are now.
* ``parsing`` (YAML/JSON) and ``spec`` (:class:`Experiment`, :class:`ExperimentFile`,
  :class:`Overrides`, grid-search helpers).

Algorithm config classes can take part in validation through these optional hooks:

* ``normalize_config_dict(d) -> d`` (a classmethod or staticmethod on the config class):
  called once with the experiment's config dict (before grid variants are expanded) to
  rewrite values that must be fixed before Ray starts, e.g. relative paths made absolute
  because Tune runs every trial in its own working directory.
* ``validate_config_dict(d)`` (a classmethod or staticmethod on the config class): called
  with every resolved variant's config dict; raises
  :class:`~rllib_privacy.errors.PrivacyConfigError` naming the key that is wrong.
* ``config_dict_keys`` (a class attribute mapping a config key whose value is a nested
  dict, e.g. ``"learner_config_dict"``, to the names allowed inside it): nested dicts are
  free-form unless declared here.
* ``legacy_config_keys()`` (a classmethod or staticmethod returning key names): extra
  top-level keys the config class accepts, e.g. old names its ``update_from_dict``
  translates (see :func:`~rllib_privacy.utils.config_keys.allowed_config_keys`).
"""

from __future__ import annotations

from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError
from rllib_privacy.experiments.legacy import (
    CONFIG_KEY_ALIASES,
    LEGACY_CONFIG_KEYS,
    LEGACY_EXPERIMENT_KEY_HINTS,
    LEGACY_METRIC_KEYS,
    translate_config_keys,
    translate_metric_key,
)
from rllib_privacy.experiments.loading import load_experiments, normalize_experiments
from rllib_privacy.experiments.parsing import load_experiment_file, parse_json_mapping
from rllib_privacy.experiments.resolution import (
    ensure_package_registered,
    make_env_from_path,
    register_class_path_envs,
    registered_algorithms,
    registered_envs,
    resolve_algorithm,
    resolve_env,
)
from rllib_privacy.experiments.spec import Experiment, ExperimentFile, Overrides, deep_merge
from rllib_privacy.experiments.stop import TOP_LEVEL_RESULT_KEYS, translate_stop
from rllib_privacy.experiments.validation import (
    API_STACK_KEYS,
    DEFAULT_CHECKPOINT_CONFIG,
    DEFAULT_STORAGE_PATH,
    EXPERIMENT_KEYS,
    MAX_VALIDATED_VARIANTS,
    quiet_rllib,
)
from rllib_privacy.utils.config_keys import UPDATE_FROM_DICT_SPECIAL_KEYS, allowed_config_keys

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
    "UPDATE_FROM_DICT_SPECIAL_KEYS",
    "Experiment",
    "ExperimentFile",
    "ExperimentFileError",
    "Overrides",
    "PrivacyConfigError",
    "allowed_config_keys",
    "deep_merge",
    "did_you_mean",
    "ensure_package_registered",
    "load_experiment_file",
    "load_experiments",
    "make_env_from_path",
    "normalize_experiments",
    "parse_json_mapping",
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
