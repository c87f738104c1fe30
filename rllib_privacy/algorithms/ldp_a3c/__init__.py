"""LDPA3C: locally private distributed A3C (Ono & Takahashi's PGC-A3C)."""

from rllib_privacy.algorithms.ldp_a3c.ldp_a3c import LDPA3C, LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import LDPA3CEnvRunner
from rllib_privacy.algorithms.ldp_a3c.reference_env_runner import RLlibSamplingLDPA3CEnvRunner
from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission

__all__ = [
    "LDPA3C",
    "LDPA3CConfig",
    "LDPA3CEnvRunner",
    "GradientSubmission",
    "RLlibSamplingLDPA3CEnvRunner",
]
