"""Torch learner of KickstartPPO."""
