"""Config mixin that makes ``update_from_dict`` reject unknown keys."""

from __future__ import annotations

from typing import Any

from rllib_privacy.errors import PrivacyConfigError


class StrictConfigMixin:
    """``update_from_dict`` that raises on a key the config class does not know.

    RLlib's ``AlgorithmConfig.update_from_dict`` (how YAML ``config:`` reaches a config)
    silently sets any attribute: a typo such as ``epsilonn`` would run a job with the
    default ε. Tune's own magic keys (``__trial_info__``, ...) pass through.
    """

    #: Name of the README section that lists this config's keys.
    key_reference: str = ""

    def update_from_dict(self, config_dict: dict[str, Any]) -> Any:
        """Like RLlib's, but a key this config does not know is an error, not ignored."""
        from rllib_privacy.experiments import allowed_config_keys, did_you_mean

        allowed = allowed_config_keys(self)
        for key in config_dict:
            if key not in allowed and not (key.startswith("__") and key.endswith("__")):
                raise PrivacyConfigError(
                    f"config key {key!r} is not known to {type(self).__name__}"
                    f"{did_you_mean(key, allowed)}; see the README's "
                    f"{self.key_reference or type(self).__name__} key reference"
                )
        return super().update_from_dict(config_dict)

    def set_provided(self, arguments: dict[str, Any]) -> None:
        """Set every argument of a ``training(...)`` call that is not ``NotProvided``.

        Args:
            arguments: ``locals()`` of the ``training`` method.

        """
        from ray.rllib.algorithms.algorithm_config import NotProvided

        for name, value in arguments.items():
            if name not in ("self", "kwargs", "__class__") and value is not NotProvided:
                setattr(self, name, value)
