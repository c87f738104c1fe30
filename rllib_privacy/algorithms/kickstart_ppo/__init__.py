"""KickstartPPO: PPO kickstarted by a Dirichlet-privatized teacher (Gohari et al.)."""

from rllib_privacy.algorithms.kickstart_ppo.kickstart_ppo import KickstartPPO, KickstartPPOConfig

__all__ = ["KickstartPPO", "KickstartPPOConfig"]
