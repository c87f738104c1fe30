"""ExplorationDQN: DQN whose stored rewards include the count-based bonus.

Off-policy algorithms replay a transition many times; counting it in the learner
connector would count it on every replay and give it a fresh (ever smaller) bonus each
time. Here the Algorithm holds the one global count table: each freshly sampled batch of
episodes (from all EnvRunners) is hashed and counted once on the driver, and the bonus
is written into the episodes' rewards before they enter the replay buffer, so the bonus
is stored with the sample (Tang et al. 2017, Alg. 1 lines 6-9, applied at collection).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.dqn import DQN, DQNConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.utils.annotations import override

from rllib_privacy.algorithms.count_exploration.count_exploration_config import (
    CountExplorationAlgorithmMixin,
    CountExplorationConfigMixin,
)
from rllib_privacy.connectors.count_bonus import AddCountBonusToRewards
from rllib_privacy.learners.count_exploration import COMPONENT_COUNT_EXPLORATION


class ExplorationDQNConfig(CountExplorationConfigMixin, DQNConfig):
    """DQNConfig plus ``.count_exploration()`` (``count_exploration_*`` keys)."""

    def __init__(self, algo_class: type | None = None) -> None:
        super().__init__(algo_class=algo_class or ExplorationDQN)
        self._init_count_exploration()

    @override(AlgorithmConfig)
    def validate(self) -> None:
        """DQN's checks plus the exploration keys."""
        self.validate_count_exploration()
        super().validate()


def _module_spaces(learner: Any) -> tuple[Any, Any]:
    module = learner.module[DEFAULT_MODULE_ID]
    return module.observation_space, module.action_space


class ExplorationDQN(CountExplorationAlgorithmMixin, DQN):
    """DQN with the bonus added once per collected transition (not per replay)."""

    count_bonus: AddCountBonusToRewards

    @classmethod
    @override(DQN)
    def get_default_config(cls) -> ExplorationDQNConfig:
        """ExplorationDQNConfig with DQN's defaults and SimHash k = 32, β = 0.01."""
        return ExplorationDQNConfig()

    @override(DQN)
    def setup(self, config: ExplorationDQNConfig) -> None:
        """Builds DQN, then the count table and the bonus-on-store hook."""
        super().setup(config)
        results = self.learner_group.foreach_learner(_module_spaces)
        observation_space, action_space = next(iter(results)).get()
        self.count_bonus = AddCountBonusToRewards(
            observation_space, action_space, spec=config.get_exploration_spec()
        )
        store = self.local_replay_buffer.add

        # DQN's training_step goes straight from sampling to `local_replay_buffer.add`
        # with no hook in between, so the bonus is applied by wrapping this instance's
        # `add` (the buffer's class, and thus isinstance checks, stay as they are).
        def add_with_bonus(episodes: Any, *args: Any, **kwargs: Any) -> Any:
            shaped = self.count_bonus.apply(list(episodes), metrics=self.metrics)
            return store(shaped, *args, **kwargs)

        self.local_replay_buffer.add = add_with_bonus

    @override(Algorithm)
    def get_state(
        self, components: Any = None, *, not_components: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        """RLlib's state plus the count table (not checkpointed by RLlib)."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self._check_component(COMPONENT_COUNT_EXPLORATION, components, not_components):
            state[COMPONENT_COUNT_EXPLORATION] = self.count_bonus.get_state()
        return state

    @override(Algorithm)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores RLlib's state and the count table (counts never reset)."""
        super().set_state(state)
        if COMPONENT_COUNT_EXPLORATION in state:
            self.count_bonus.set_state(state[COMPONENT_COUNT_EXPLORATION])
