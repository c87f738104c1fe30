"""Config mixin that makes ``update_from_dict`` reject unknown keys."""

from __future__ import annotations

from typing import Any

from rllib_privacy.utils.config_keys import check_config_dict_keys


class StrictConfigMixin:
    """``update_from_dict`` that raises on a key the config class does not know.

    RLlib's ``AlgorithmConfig.update_from_dict`` (how YAML ``config:`` reaches a config)
    silently sets any attribute: a typo such as ``epsilonn`` would run a job with the
    default ε. Tune's own magic keys (``__trial_info__``, ...) pass through.
    """

    #: Name of this config's section in docs/configuration.md (named when a key is unknown).
    key_reference: str = ""

    def update_from_dict(self, config_dict: dict[str, Any]) -> Any:
        """Like RLlib's, but a key this config does not know is an error, not ignored."""
        reference = self.key_reference or type(self).__name__
        check_config_dict_keys(
            self, config_dict, f"; see the {reference} keys in docs/configuration.md"
        )
        return super().update_from_dict(config_dict)

    def set_provided(self, arguments: dict[str, Any]) -> None:
        """Set every argument of a ``training(...)`` call that is not ``NotProvided``.

        Args:
            arguments: ``locals()`` of the ``training`` method.

        """
        # Lazy: rllib_privacy.utils imports no Ray at module level.
        from ray.rllib.algorithms.algorithm_config import NotProvided

        for name, value in arguments.items():
            if name not in ("self", "kwargs", "__class__") and value is not NotProvided:
                setattr(self, name, value)
