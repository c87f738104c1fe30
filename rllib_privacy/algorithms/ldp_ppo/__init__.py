"""LDPPPO: PPO whose learner privatizes every gradient update (LDP gradient noise)."""

from rllib_privacy.algorithms.ldp_ppo.ldp_ppo import LDPPPO, LDPPPOConfig

__all__ = ["LDPPPO", "LDPPPOConfig"]
