"""Exceptions raised by rllib_privacy for bad settings and bad input."""

from __future__ import annotations


class PrivacyConfigError(ValueError):
    """A setting is unknown or has a value that is not allowed.

    The message always names the offending key (or argument) and says what is
    allowed, so that it can be shown to a user as it is, without a traceback.
    """


class BudgetExhaustedError(RuntimeError):
    """A privacy ledger was asked to record a release beyond its budget."""
