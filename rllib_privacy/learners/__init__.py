"""Learner mixins shipped with rllib_privacy."""

from rllib_privacy.learners.gradient_privatizer import (
    LDPGradientPrivatizerMixin,
    gradient_mechanism_from_config,
)

__all__ = ["LDPGradientPrivatizerMixin", "gradient_mechanism_from_config"]
