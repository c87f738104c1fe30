"""Torch learner of LDPPPO."""
