"""PipelinedPPO: PPO whose EnvRunners sample the next batch while the learner updates."""

from rllib_privacy.algorithms.pipelined_ppo.pipelined_ppo import PipelinedPPO, PipelinedPPOConfig

__all__ = ["PipelinedPPO", "PipelinedPPOConfig"]
