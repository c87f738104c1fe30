"""PATE-PPO: PPO plus noisy-max labels from a private teacher ensemble (PATE for RL)."""

from rllib_privacy.algorithms.pate_ppo.pate_ppo import PATEPPO, PATEPPOConfig

__all__ = ["PATEPPO", "PATEPPOConfig"]
