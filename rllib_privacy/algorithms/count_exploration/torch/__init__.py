"""Torch learners of the count-exploration algorithms."""
