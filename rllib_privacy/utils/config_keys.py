"""Which keys ``AlgorithmConfig.update_from_dict`` accepts for a config class.

Used by the config classes themselves (to reject a typo instead of silently setting an
attribute, see :class:`~rllib_privacy.utils.strict_config.StrictConfigMixin`) and by the
experiment-file loader (to reject it before Ray starts). Imports no Ray: it only inspects
the config instance it is given.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import PrivacyConfigError

__all__ = ["UPDATE_FROM_DICT_SPECIAL_KEYS", "allowed_config_keys", "check_config_dict_keys"]

#: Keys `AlgorithmConfig.update_from_dict` handles specially (see its source and
#: `AlgorithmConfig._translate_special_keys` in ray/rllib/algorithms/algorithm_config.py),
#: in addition to the keys of `to_dict()` and the attributes they are translated to.
UPDATE_FROM_DICT_SPECIAL_KEYS = frozenset(
    {
        "callbacks",
        "callbacks_class",
        "create_env_on_driver",
        "create_env_on_local_worker",
        "custom_eval_function",
        "custom_evaluation_function",
        "framework",
        "framework_str",
        "input",
        "input_",
        "lambda",
        "lambda_",
        "num_cpus_for_driver",
        "num_cpus_for_main_process",
        "num_workers",
        "multiagent",
        "model_config",
        "_enable_new_api_stack",
    }
)


def allowed_config_keys(config: Any) -> frozenset[str]:
    """Return the keys ``config.update_from_dict`` accepts for this config class.

    These are the keys of ``config.to_dict()``, the special keys and attribute names of
    ``AlgorithmConfig.update_from_dict``, the properties with setters, and (for keys
    starting with ``evaluation_``) only the arguments of ``config.evaluation()``, since
    ``update_from_dict`` passes those keys to that method.

    A config class may accept more keys (e.g. old names it translates itself) by defining
    a classmethod or staticmethod ``legacy_config_keys()`` that returns them (any iterable
    of names; a mapping of old to new names works too).

    Args:
        config: An AlgorithmConfig instance (e.g. ``PPO.get_default_config()``).

    Returns:
        The accepted keys.

    """
    keys = set(config.to_dict()) | UPDATE_FROM_DICT_SPECIAL_KEYS
    keys |= {
        name
        for name, attr in inspect.getmembers(type(config))
        if isinstance(attr, property) and attr.fset is not None
    }
    evaluation_args = set(inspect.signature(config.evaluation).parameters)
    keys = {k for k in keys if not k.startswith("evaluation_") or k in evaluation_args}
    keys |= {k for k in evaluation_args if k.startswith("evaluation_")}
    legacy_keys = getattr(type(config), "legacy_config_keys", None)
    if callable(legacy_keys):
        keys |= {str(k) for k in legacy_keys()}
    return frozenset(keys)


def check_config_dict_keys(config: Any, config_dict: Mapping[str, Any], hint: str = "") -> None:
    """Raise for the first key of ``config_dict`` that ``config.update_from_dict`` ignores.

    Tune's own magic keys (``__trial_info__``, ...) pass.

    Args:
        config: The AlgorithmConfig instance about to be updated.
        config_dict: The keys and values for ``update_from_dict``.
        hint: Appended to the message (e.g. where the keys are documented).

    Raises:
        PrivacyConfigError: Naming the unknown key and the closest known one.

    """
    allowed = allowed_config_keys(config)
    for key in config_dict:
        if key not in allowed and not (key.startswith("__") and key.endswith("__")):
            raise PrivacyConfigError(
                f"config key {key!r} is not known to {type(config).__name__}"
                f"{did_you_mean(key, allowed)}{hint}"
            )
