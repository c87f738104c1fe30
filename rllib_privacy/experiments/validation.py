"""Checks of an experiment before Ray starts: keys, values, and every grid variant.

Each variant's config is built by the algorithm's own config class
(``update_from_dict`` and ``validate``), so a file is rejected for what RLlib would
reject inside a Ray actor, with a message naming the key. Algorithm config classes
take part through the hooks described in :mod:`rllib_privacy.experiments`.

This package's environments and mechanisms, gymnasium and Ray are imported inside the
functions that need them: the ``rllib`` command imports this module at start-up.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import itertools
import logging
import os
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from rllib_privacy._validation import describe, did_you_mean
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.experiments.legacy import LEGACY_EXPERIMENT_KEY_HINTS, translate_metric_key
from rllib_privacy.experiments.spec import format_variant, is_grid_search, literal_values
from rllib_privacy.utils.config_keys import allowed_config_keys

__all__ = [
    "API_STACK_KEYS",
    "DEFAULT_CHECKPOINT_CONFIG",
    "DEFAULT_STORAGE_PATH",
    "EXPERIMENT_KEYS",
    "MAX_VALIDATED_VARIANTS",
    "check_config_keys",
    "check_experiment_keys",
    "check_num_samples",
    "checkpoint_config",
    "count_variants",
    "force_new_api_stack",
    "force_torch",
    "normalize_env_config",
    "quiet_rllib",
    "storage_path",
    "validate_variants",
]

logger = logging.getLogger(__name__)

#: Keys an experiment may have.
EXPERIMENT_KEYS = (
    "run",
    "env",
    "stop",
    "config",
    "checkpoint_config",
    "num_samples",
    "storage_path",
    "gpu_config",
)

#: Config keys that switch the API stack; they may only be true.
API_STACK_KEYS = (
    "enable_rl_module_and_learner",
    "enable_env_runner_and_connector_v2",
    "_enable_new_api_stack",
)

#: Checkpoint settings used where an experiment's checkpoint_config does not say: a final
#: checkpoint, and one every 10 iterations (the latest 5 kept) so that --resume continues
#: trials from their latest checkpoint instead of restarting them.
DEFAULT_CHECKPOINT_CONFIG = {
    "checkpoint_at_end": True,
    "checkpoint_frequency": 10,
    "num_to_keep": 5,
}

#: Grid variants validated per experiment; larger grids validate the first ones only.
MAX_VALIDATED_VARIANTS = 64

#: Where Tune writes results when neither the file nor the command line says.
DEFAULT_STORAGE_PATH = "~/ray_results"

_RLLIB_SUPPRESS_HINT = (
    "\nTo suppress all validation errors, set "
    "`config.experimental(_validate_config=False)` at your own risk."
)


# --------------------------------------------------------------------------------------
# Experiment-level keys.
# --------------------------------------------------------------------------------------


def check_experiment_keys(spec: Mapping[str, Any]) -> None:
    """Raise for a key that is not in ``EXPERIMENT_KEYS`` (saying what replaced old ones)."""
    for key in spec:
        if key in EXPERIMENT_KEYS:
            continue
        hint = LEGACY_EXPERIMENT_KEY_HINTS.get(key)
        hint = f" ({hint})" if hint else did_you_mean(str(key), EXPERIMENT_KEYS)
        raise PrivacyConfigError(
            f"unknown key {key!r}{hint}; allowed keys: {', '.join(EXPERIMENT_KEYS)}"
        )


def checkpoint_config(value: Any, notices: list[str]) -> dict[str, Any]:
    """Return the ``tune.CheckpointConfig`` keyword arguments, defaults filled in.

    Raises:
        PrivacyConfigError: Not a mapping, an unknown key or a value of the wrong kind.

    """
    from ray import tune

    if value is not None and not isinstance(value, Mapping):
        raise PrivacyConfigError(f"'checkpoint_config' must be a mapping, got {describe(value)}")
    allowed = [
        f.name for f in dataclasses.fields(tune.CheckpointConfig) if not f.name.startswith("_")
    ]
    result = {**DEFAULT_CHECKPOINT_CONFIG, **(value or {})}
    for key in result:
        if key not in allowed:
            raise PrivacyConfigError(
                f"unknown checkpoint_config key {key!r}{did_you_mean(str(key), allowed)}; "
                f"allowed keys: {', '.join(allowed)}"
            )
        # Tune's own checks miss some types ('yes' for a flag) and word others badly.
        check = _CHECKPOINT_VALUE_CHECKS.get(key)
        if check is not None and not check[0](result[key]):
            raise PrivacyConfigError(
                f"checkpoint_config key {key!r} must be {check[1]}, got {result[key]!r}"
            )
    attribute = result.get("checkpoint_score_attribute")
    if isinstance(attribute, str) and translate_metric_key(attribute) != attribute:
        result["checkpoint_score_attribute"] = translate_metric_key(attribute)
        notices.append(
            f"checkpoint_score_attribute {attribute!r} is an old API stack key; "
            f"using {translate_metric_key(attribute)!r}"
        )
    try:
        tune.CheckpointConfig(**result)
    except (ValueError, TypeError) as e:
        raise PrivacyConfigError(f"invalid checkpoint_config: {e}") from None
    return result


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: checkpoint_config key -> (is the value allowed, what is allowed).
_CHECKPOINT_VALUE_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "checkpoint_frequency": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "num_to_keep": (lambda v: v is None or (_is_int(v) and v >= 1), "an integer >= 1 or null"),
    "checkpoint_at_end": (lambda v: v is None or isinstance(v, bool), "true or false"),
    "checkpoint_score_attribute": (
        lambda v: v is None or (isinstance(v, str) and bool(v)),
        "a result key or null",
    ),
    "checkpoint_score_order": (lambda v: v in ("max", "min"), "'max' or 'min'"),
}


def check_num_samples(value: Any) -> int:
    """Return ``value`` if it is a positive integer, else raise PrivacyConfigError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PrivacyConfigError(f"'num_samples' must be a positive integer, got {value!r}")
    return value


def storage_path(value: Any) -> str:
    """Return ``storage_path`` as an absolute path (a URI unchanged; None: the default)."""
    if value is None:
        value = DEFAULT_STORAGE_PATH
    if not isinstance(value, str) or not value:
        raise PrivacyConfigError(f"'storage_path' must be a path, got {value!r}")
    if "://" in value:
        return value  # A URI (s3://, gs://, ...) that Tune's storage layer understands.
    return os.path.abspath(os.path.expanduser(value))


# --------------------------------------------------------------------------------------
# The config dict.
# --------------------------------------------------------------------------------------


def force_new_api_stack(config: dict[str, Any], label: str) -> None:
    """Set the new API stack keys in ``config``; raise if the file switches it off."""
    for key in API_STACK_KEYS:
        for value in literal_values(config.get(key, True)):
            if value is not True:
                raise PrivacyConfigError(
                    f"{label}config key {key!r} is {value!r}, but rllib_privacy runs on "
                    "RLlib's new API stack only; remove the key"
                )
    config.pop("_enable_new_api_stack", None)
    config["enable_rl_module_and_learner"] = True
    config["enable_env_runner_and_connector_v2"] = True


def force_torch(config: dict[str, Any], label: str) -> None:
    """Set ``framework: torch`` in ``config``; raise if the file asks for another one."""
    for key in ("framework", "framework_str"):
        for value in literal_values(config.get(key, "torch")):
            if value != "torch":
                raise PrivacyConfigError(
                    f"{label}config key {key!r} is {value!r}, but rllib_privacy supports "
                    "torch only; remove the key or set it to torch"
                )
    config.pop("framework_str", None)
    config["framework"] = "torch"


def normalize_env_config(config: dict[str, Any]) -> None:
    """Apply the env's own ``env_config`` normalizer (see ``envs.ENV_CONFIG_HOOKS``)."""
    from rllib_privacy.envs import normalize_env_config_for  # Lazy: start-up time.

    env_config = config.get("env_config")
    if isinstance(env_config, Mapping) and not is_grid_search(env_config):
        config["env_config"] = normalize_env_config_for(config.get("env"), env_config)


def check_config_keys(config: Mapping[str, Any], default: Any, label: str) -> None:
    """Raise for a config key (or a key of a declared nested dict) the class ignores.

    Args:
        config: The experiment's config dict (before grid variants are expanded).
        default: The algorithm's default config instance.
        label: Prefix for messages.

    """
    allowed = allowed_config_keys(default)
    class_name = type(default).__name__
    _check_keys(config, allowed, class_name, label, where="config")
    evaluation_config = config.get("evaluation_config")
    if isinstance(evaluation_config, Mapping) and not is_grid_search(evaluation_config):
        _check_keys(evaluation_config, allowed, class_name, label, where="evaluation_config")
    for key, nested_allowed in getattr(type(default), "config_dict_keys", {}).items():
        nested = config.get(key)
        if isinstance(nested, Mapping) and not is_grid_search(nested):
            _check_keys(nested, frozenset(nested_allowed), class_name, label, where=key)


def _check_keys(
    config: Mapping[str, Any],
    allowed: Collection[str],
    class_name: str,
    label: str,
    where: str,
) -> None:
    for key in config:
        if key not in allowed:
            what = "config key" if where == "config" else f"{where} key"
            raise PrivacyConfigError(
                f"{label}{what} {key!r} is not known to {class_name}"
                f"{did_you_mean(str(key), allowed)}; see {class_name} for allowed keys"
            )


# --------------------------------------------------------------------------------------
# Grid variants.
# --------------------------------------------------------------------------------------


def count_variants(config: Mapping[str, Any], label: str) -> int:
    """Return the number of grid-search variants of ``config``."""
    from ray.tune.search.variant_generator import parse_spec_vars

    try:
        _, _, grid_vars = parse_spec_vars(copy.deepcopy(dict(config)))
    except (TypeError, ValueError) as e:
        raise PrivacyConfigError(f"{label}invalid search space in config: {e}") from None
    count = 1
    for path, domain in grid_vars:
        if not domain.categories:
            raise PrivacyConfigError(
                f"{label}grid_search at {'.'.join(map(str, path))!r} has no values"
            )
        count *= len(domain.categories)
    return count


def validate_variants(
    config: Mapping[str, Any], algo_cls: type, num_variants: int, label: str
) -> None:
    """Build and validate the config of each of the first ``MAX_VALIDATED_VARIANTS``."""
    from ray.tune.search.variant_generator import generate_variants

    variants = generate_variants(copy.deepcopy(dict(config)))
    for index, (resolved, variant) in enumerate(
        itertools.islice(variants, MAX_VALIDATED_VARIANTS), start=1
    ):
        where = label
        if num_variants > 1:
            where += f"variant {index} of {num_variants} ({format_variant(resolved)}): "
        _validate_variant(variant, algo_cls, where)
    if num_variants > MAX_VALIDATED_VARIANTS:
        logger.info("validated the first %d of %d variants", MAX_VALIDATED_VARIANTS, num_variants)


def _validate_variant(variant: dict[str, Any], algo_cls: type, where: str) -> None:
    """Run the config class's hook, ``update_from_dict`` and ``validate``."""
    config = algo_cls.get_default_config()
    with _as_config_error(where, config):
        _call_validate_hook(type(config), copy.deepcopy(variant))
        _validate_env_config(variant, config.env)
        _validate_ldp_gradient(variant)
        config.update_from_dict(copy.deepcopy(variant))
        config.validate()
    _validate_evaluation_config(config, variant, where)


def _validate_evaluation_config(config: Any, variant: Mapping[str, Any], where: str) -> None:
    """Validate the config evaluation EnvRunners get (``evaluation_config`` merged in).

    Its values are otherwise only applied inside Ray, when evaluation starts.
    """
    evaluation_config = variant.get("evaluation_config")
    if not isinstance(evaluation_config, Mapping) or not evaluation_config:
        return
    merged = {k: v for k, v in variant.items() if k != "evaluation_config"}
    merged.update(evaluation_config)
    with _as_config_error(f"{where}evaluation_config: ", config):
        _call_validate_hook(type(config), copy.deepcopy(merged))
        _validate_env_config(merged, config.env)
        config.get_evaluation_config_object().validate()


@contextlib.contextmanager
def _as_config_error(where: str, config: Any) -> Iterator[None]:
    """Re-raise what RLlib's validation raises as a PrivacyConfigError prefixed by ``where``."""
    try:
        yield
    except PrivacyConfigError as e:
        raise PrivacyConfigError(f"{where}{e}") from None
    except (
        ValueError,
        TypeError,
        AttributeError,
        KeyError,
        ImportError,
        AssertionError,
        ArithmeticError,  # e.g. an OverflowError from a huge value
    ) as e:
        message = str(e).replace(_RLLIB_SUPPRESS_HINT, "").strip() or type(e).__name__
        raise PrivacyConfigError(
            f"{where}invalid config for {type(config).__name__}: {message}"
        ) from None


def _validate_env_config(variant: Mapping[str, Any], default_env: Any = None) -> None:
    """Run the env's own ``env_config`` check (see ``envs.check_env_config_for``)."""
    from rllib_privacy.envs import check_env_config_for  # Lazy: start-up time.

    env_config = variant.get("env_config")
    if env_config is not None and not isinstance(env_config, Mapping):
        raise PrivacyConfigError(
            f"config key 'env_config' must be a mapping, got {describe(env_config)}"
        )
    # An algorithm's default env (LDPA3C's CartPoleGravity) gets the same check.
    check_env_config_for(variant.get("env") or default_env, env_config)


def _validate_ldp_gradient(variant: Mapping[str, Any]) -> None:
    """Check ``learner_config_dict.ldp_gradient`` (LDPGradientPrivatizerMixin) before Ray.

    The mixin reads it only when the learner is built, inside a Ray actor.
    """
    learner_config = variant.get("learner_config_dict")
    if not isinstance(learner_config, Mapping) or learner_config.get("ldp_gradient") is None:
        return
    from rllib_privacy.mechanisms import GradientMechanism  # Lazy: start-up time.

    try:
        GradientMechanism.from_dict(learner_config["ldp_gradient"])
    except ValueError as e:
        raise PrivacyConfigError(f"learner_config_dict key 'ldp_gradient': {e}") from None


def _call_validate_hook(config_cls: type, variant: dict[str, Any]) -> None:
    """Call ``config_cls.validate_config_dict(variant)`` if the config class has one."""
    hook = getattr(config_cls, "validate_config_dict", None)
    if not callable(hook):
        return
    if inspect.isfunction(hook) and len(inspect.signature(hook).parameters) == 2:
        hook(config_cls, variant)  # A plain function attribute taking (cls, d).
    else:
        hook(variant)  # A classmethod or staticmethod.


@contextlib.contextmanager
def quiet_rllib() -> Iterator[None]:
    """Silence RLlib's and gymnasium's warnings while configs are only validated."""
    import gymnasium as gym

    rllib_logger = logging.getLogger("ray.rllib")
    level, gym_level = rllib_logger.level, gym.logger.min_level
    rllib_logger.setLevel(logging.ERROR)
    gym.logger.min_level = gym.logger.ERROR  # Imports may reset the warnings filters.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        rllib_logger.setLevel(level)
        gym.logger.min_level = gym_level
