"""Learner mixins shipped with rllib_privacy."""

from rllib_privacy.learners.gradient_privatizer import (
    LDPGradientPrivatizerMixin,
    gradient_mechanism_from_config,
)
from rllib_privacy.learners.ldp_ppo import LDPPPOTorchLearner

__all__ = ["LDPGradientPrivatizerMixin", "LDPPPOTorchLearner", "gradient_mechanism_from_config"]
