"""Exceptions raised by rllib_privacy for bad settings and bad input."""

from __future__ import annotations


class PrivacyConfigError(ValueError):
    """A setting is unknown or has a value that is not allowed.

    The message always names the offending key (or argument) and says what is
    allowed, so that it can be shown to a user as it is, without a traceback.
    """


class BudgetExhaustedError(RuntimeError):
    """A privacy ledger was asked to record a release beyond its budget."""


class ExperimentFileError(PrivacyConfigError):
    """An experiment file cannot be read, or one of its experiments is invalid.

    ``str(error)`` starts with the file path and, where the problem belongs to
    one experiment, its name: ``"x.yaml: experiment 'a': config key 'lrr' ..."``.

    Attributes:
        path: The experiment file as the user named it.
        detail: What is wrong, without the location prefix.
        experiment: The experiment's name, or None for file-level problems.

    """

    def __init__(self, path: str, detail: str, experiment: str | None = None) -> None:
        super().__init__(path, detail, experiment)
        self.path = path
        self.detail = detail
        self.experiment = experiment

    def __str__(self) -> str:
        if self.experiment is None:
            return f"{self.path}: {self.detail}"
        return f"{self.path}: experiment {self.experiment!r}: {self.detail}"
