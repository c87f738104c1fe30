"""ExplorationPPO: PPO trained on r + β·f(n(φ(s))) (Tang et al. 2017 with PPO for TRPO).

Example::

    config = (
        ExplorationPPOConfig()
        .environment("rllib_privacy/SparseMountainCar-v0")
        .count_exploration(count_exploration_config={"num_bits": 32, "beta": 0.01})
    )
    algo = config.build_algo()
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override

from rllib_privacy.algorithms.count_exploration.count_exploration_config import (
    CountExplorationAlgorithmMixin,
    CountExplorationConfigMixin,
)


class ExplorationPPOConfig(CountExplorationConfigMixin, PPOConfig):
    """PPOConfig plus ``.count_exploration()`` (``count_exploration_*`` keys)."""

    def __init__(self, algo_class: type | None = None) -> None:
        super().__init__(algo_class=algo_class or ExplorationPPO)
        self._init_count_exploration()

    @override(AlgorithmConfig)
    def get_default_learner_class(self) -> type[Learner]:
        """PPO's torch learner with the bonus piece in its connector pipeline."""
        from rllib_privacy.algorithms.count_exploration.torch.exploration_ppo_torch_learner import (  # noqa: E501
            ExplorationPPOTorchLearner,
        )

        return ExplorationPPOTorchLearner

    @override(AlgorithmConfig)
    def validate(self) -> None:
        """PPO's checks plus the exploration keys."""
        self.validate_count_exploration()
        super().validate()


class ExplorationPPO(CountExplorationAlgorithmMixin, PPO):
    """PPO whose learner adds the count-based bonus; counts are learner state."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> ExplorationPPOConfig:
        """ExplorationPPOConfig with PPO's defaults and SimHash k = 32, β = 0.01."""
        return ExplorationPPOConfig()
