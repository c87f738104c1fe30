"""Config and result plumbing shared by ExplorationPPO and ExplorationDQN.

Three config keys, set by ``.count_exploration()`` (the same keys as LDPA3C's), are added
to the stock algorithm's: ``count_exploration_config`` (a dict, see
[ExplorationSpec][rllib_privacy.exploration.ExplorationSpec] and docs/configuration.md),
``count_exploration_scope`` (where the visit counts live: here always ``global``, one table
for every sample) and ``count_exploration_flatten_observations`` (one-hot/flatten Discrete
or nested observations for the RLModule with RLlib's FlattenObservations connector, as
RLlib's FrozenLake demo does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.connectors.env_to_module import FlattenObservations
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)
from typing_extensions import Self

from rllib_privacy.algorithms.config_keys import (
    COUNT_EXPLORATION_KEYS,
    GroupedConfigMixin,
    LegacyCountExplorationMixin,
    check_count_exploration_keys,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.exploration import ExplorationSpec
from rllib_privacy.utils import metrics as keys

#: Result keys copied to the top level, first (Tune's table shows the first few).
HEADLINE_KEYS = ("extrinsic_return_mean", "bonus_mean", "unique_codes")
OWN_KEYS = COUNT_EXPLORATION_KEYS
#: Where the visit counts live: one table, held by the Learner (PPO) or the Algorithm (DQN).
COUNT_EXPLORATION_SCOPES = ("global",)
#: Name of the settings dict in error messages.
SPEC_PREFIX = "count_exploration_config"


def flatten_observations_connector(env: Any = None, spaces: Any = None, device: Any = None):
    """env_to_module_connector factory (module-level so that it pickles to EnvRunners)."""
    return FlattenObservations()


class CountExplorationConfigMixin(GroupedConfigMixin, LegacyCountExplorationMixin):
    """Adds ``.count_exploration()`` and its three keys to an AlgorithmConfig."""

    #: Nested keys checked by ``rllib train -f`` before Ray starts.
    config_dict_keys = {"count_exploration_config": ExplorationSpec.keys()}
    CONFIG_GROUPS = {"count_exploration": OWN_KEYS}
    LEGACY_CONFIG_KEYS = {
        "count_exploration": "count_exploration_config",
        "flatten_observations": "count_exploration_flatten_observations",
    }

    count_exploration_config: dict[str, Any]
    count_exploration_scope: str
    count_exploration_flatten_observations: bool
    # AlgorithmConfig's attribute, which validate_count_exploration may set.
    _env_to_module_connector: Any

    def _init_count_exploration(self) -> None:
        self.count_exploration_config = {}
        self.count_exploration_scope = COUNT_EXPLORATION_SCOPES[0]
        self.count_exploration_flatten_observations = False

    def count_exploration(
        self,
        *,
        count_exploration_config: dict[str, Any] | None = NotProvided,
        count_exploration_scope: str = NotProvided,
        count_exploration_flatten_observations: bool = NotProvided,
    ) -> Self:
        """Sets the exploration bonus (docs/configuration.md, ``.count_exploration()``).

        Args:
            count_exploration_config: Settings of hash, counter and bonus, e.g.
                ``{"hash": "simhash", "num_bits": 32, "beta": 0.01}``; ``{}`` or ``None``
                uses the defaults (SimHash k = 32, β = 0.01, exact counts, β/√n).
            count_exploration_scope: Where the visit counts live; ``global`` (the only
                choice here): one table for all samples, held by the Learner (PPO) or the
                Algorithm (DQN). LDPA3C takes the same key, with per-agent choices.
            count_exploration_flatten_observations: Flatten/one-hot observations for the
                RLModule.

        Returns:
            This updated config.

        """
        if count_exploration_config is not NotProvided:
            self.count_exploration_config = dict(count_exploration_config or {})
        if count_exploration_scope is not NotProvided:
            self.count_exploration_scope = count_exploration_scope
        if count_exploration_flatten_observations is not NotProvided:
            self.count_exploration_flatten_observations = count_exploration_flatten_observations
        return self

    def get_exploration_spec(self) -> ExplorationSpec:
        """The validated ``count_exploration_config`` settings."""
        return ExplorationSpec.from_dict(self.count_exploration_config, prefix=SPEC_PREFIX)

    @override(AlgorithmConfig)
    def update_from_dict(self, config_dict: dict[str, Any]) -> Self:
        """Like RLlib's, but old names are translated and an unknown key is an error."""
        translated = self.translate_legacy_keys(config_dict)
        if "count_exploration_config" in translated:
            ExplorationSpec.from_dict(translated["count_exploration_config"], prefix=SPEC_PREFIX)
        return super().update_from_dict(translated)

    @classmethod
    def validate_config_dict(cls, config: dict[str, Any]) -> None:
        """Checks a YAML variant's exploration keys before Ray starts."""
        config = cls.translate_legacy_keys(config, warn=False)
        ExplorationSpec.from_dict(config.get("count_exploration_config"), prefix=SPEC_PREFIX)
        _check_num_learners(config.get("num_learners", 0))
        _check_keys(
            config.get("count_exploration_scope", COUNT_EXPLORATION_SCOPES[0]),
            config.get("count_exploration_flatten_observations", False),
        )

    def validate_count_exploration(self) -> None:
        """Raises PrivacyConfigError for a bad exploration setting."""
        self.get_exploration_spec()
        _check_num_learners(self.num_learners)
        _check_keys(self.count_exploration_scope, self.count_exploration_flatten_observations)
        if self.count_exploration_flatten_observations and self._env_to_module_connector is None:
            self._env_to_module_connector = flatten_observations_connector


def _check_keys(scope: Any, flatten: Any) -> None:
    check_count_exploration_keys(
        "ExplorationPPO/ExplorationDQN",
        scope=scope,
        flatten=flatten,
        scopes=COUNT_EXPLORATION_SCOPES,
        flattens=True,
    )


def _check_num_learners(num_learners: Any) -> None:
    if isinstance(num_learners, int) and num_learners > 1:
        raise PrivacyConfigError(
            f"num_learners must be 0 or 1 with count_exploration, got {num_learners}: the "
            "visit counts are one table held by the learner (several learners would count "
            "separately)"
        )


def exploration_results(results: dict[str, Any]) -> dict[str, Any]:
    """Moves the exploration metrics to ``results["exploration"]`` and the headline keys first.

    The bonus piece logs under ``exploration/`` in its MetricsLogger: the Learner's (PPO,
    results under ``learners/``) or the Algorithm's (DQN).
    """
    learner = results.get(LEARNER_RESULTS, {})
    section = dict(learner.pop("exploration", {}) if isinstance(learner, dict) else {})
    section.update(results.get("exploration", {}))
    env_runners = results.get(ENV_RUNNER_RESULTS, {})
    if EPISODE_RETURN_MEAN in env_runners:
        section[keys.EXPLORATION_EXTRINSIC_RETURN_MEAN.split("/")[1]] = env_runners[
            EPISODE_RETURN_MEAN
        ]
    results["exploration"] = section
    results["timesteps_total"] = results.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)
    head = {k: section[k] for k in HEADLINE_KEYS if k in section}
    return {**head, **{k: v for k, v in results.items() if k not in head}}


if TYPE_CHECKING:
    # mypy checks the mixin against Algorithm; at run time it is a plain mixin.
    from ray.rllib.algorithms.algorithm import Algorithm as _AlgorithmBase
else:
    _AlgorithmBase = object


class CountExplorationAlgorithmMixin(_AlgorithmBase):
    """Puts the exploration metrics in the results (headline keys first)."""

    TOP_LEVEL_RESULT_KEYS = (*HEADLINE_KEYS, "timesteps_total")

    @override(Algorithm)
    def step(self) -> dict[str, Any]:
        """Runs one iteration and arranges the exploration metrics."""
        return exploration_results(super().step())
