"""Torch learner of PipelinedPPO."""
