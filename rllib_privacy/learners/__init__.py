"""Learner mixins shipped with rllib_privacy, and LDPPPOTorchLearner for stock PPO.

Each mixin adds one thing to a learner (put it before RLlib's learner class). An
algorithm's torch learner, in its own package, combines them with RLlib's learner.
"""

from rllib_privacy.learners.count_exploration import (
    COMPONENT_COUNT_EXPLORATION,
    CountExplorationLearnerMixin,
)
from rllib_privacy.learners.gradient_privatizer import (
    LDPGradientPrivatizerMixin,
    gradient_mechanism_from_config,
)
from rllib_privacy.learners.kickstart_loss import KickstartLossMixin
from rllib_privacy.learners.ldp_ppo import LDPPPOTorchLearner
from rllib_privacy.learners.pate_label_loss import PATELabelLossMixin

__all__ = [
    "COMPONENT_COUNT_EXPLORATION",
    "CountExplorationLearnerMixin",
    "KickstartLossMixin",
    "LDPGradientPrivatizerMixin",
    "LDPPPOTorchLearner",
    "PATELabelLossMixin",
    "gradient_mechanism_from_config",
]
