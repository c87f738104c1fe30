"""Learner mixins shipped with rllib_privacy."""

from rllib_privacy.learners.gradient_privatizer import (
    LDPGradientPrivatizerMixin,
    gradient_mechanism_from_config,
)
from rllib_privacy.learners.ldp_ppo import LDPPPOTorchLearner
from rllib_privacy.learners.pate_label_loss import PATELabelLossMixin

__all__ = [
    "LDPGradientPrivatizerMixin",
    "LDPPPOTorchLearner",
    "PATELabelLossMixin",
    "gradient_mechanism_from_config",
]
