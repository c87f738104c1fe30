"""Count-based exploration (Tang et al. 2017) on stock PPO and DQN."""

from rllib_privacy.algorithms.count_exploration.count_exploration_config import (
    CountExplorationConfigMixin,
)
from rllib_privacy.algorithms.count_exploration.exploration_dqn import (
    ExplorationDQN,
    ExplorationDQNConfig,
)
from rllib_privacy.algorithms.count_exploration.exploration_ppo import (
    ExplorationPPO,
    ExplorationPPOConfig,
)

__all__ = [
    "CountExplorationConfigMixin",
    "ExplorationDQN",
    "ExplorationDQNConfig",
    "ExplorationPPO",
    "ExplorationPPOConfig",
]
