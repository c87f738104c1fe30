"""Stage 4, validate: every check of an experiment that Ray would otherwise make later.

Each grid variant's config is built by the algorithm's own config class
(``update_from_dict`` and ``validate``), so a file is rejected for what RLlib would
reject inside a Ray actor, with a message naming the key. Algorithm config classes
take part through the hooks described in [rllib_privacy.experiments][]. The checkpoint
settings and ``num_samples`` are checked here too.

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
import math
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from rllib_privacy._validation import (
    check_normal_epsilon,
    describe,
    did_you_mean,
    needs_normal_float,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.experiments.spec import (
    ExperimentDraft,
    Overrides,
    format_variant,
    is_grid_search,
)

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm import Algorithm

__all__ = [
    "DEFAULT_CHECKPOINT_CONFIG",
    "MAX_VALIDATED_VARIANTS",
    "check_config_keys",
    "check_num_samples",
    "check_overrides",
    "checkpoint_config",
    "count_variants",
    "validate_experiment",
    "validate_variants",
]

logger = logging.getLogger(__name__)

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

_RLLIB_SUPPRESS_HINT = (
    "\nTo suppress all validation errors, set "
    "`config.experimental(_validate_config=False)` at your own risk."
)


def check_overrides(overrides: Overrides) -> None:
    """Check the command line's ``--num-samples`` once for the whole file."""
    if overrides.num_samples is not None:
        check_num_samples(overrides.num_samples)


def validate_experiment(
    draft: ExperimentDraft, overrides: Overrides, has_gpus: bool | None
) -> None:
    """Check ``draft``'s configs, checkpoint settings and ``num_samples``, in place.

    Sets ``num_variants``, ``checkpoint_config`` (defaults filled in) and
    ``num_samples``.

    Args:
        draft: The resolved experiment.
        overrides: The command-line overrides (``num_samples`` replaces the file's).
        has_gpus: Whether the cluster will have GPUs; None (unknown) validates the
            config both with and without ``gpu_config``.

    Raises:
        PrivacyConfigError: The first problem, naming the key (and the grid variant).

    """
    has_gpu_config = draft.gpu_config is not None
    draft.num_variants = _validate_config(
        draft.config, draft.algo_cls, validate=has_gpus is not True or not has_gpu_config
    )
    if draft.gpu_config is not None:
        _validate_config(
            draft.gpu_config,
            draft.algo_cls,
            validate=has_gpus is not False,
            label="with gpu_config merged: ",
        )
    draft.checkpoint_config = checkpoint_config(draft.checkpoint_config)
    if overrides.num_samples is not None:
        draft.num_samples = overrides.num_samples
    else:
        draft.num_samples = check_num_samples(draft.spec.get("num_samples", 1))


def _validate_config(
    config: dict[str, Any], algo_cls: type[Algorithm], *, validate: bool, label: str = ""
) -> int:
    """Count the grid variants; with ``validate``, check the keys and every variant.

    Returns:
        The number of grid variants.

    """
    num_variants = count_variants(config, label)
    if validate:
        check_config_keys(config, algo_cls.get_default_config(), label)
        validate_variants(config, algo_cls, num_variants, label)
    return num_variants


def checkpoint_config(value: Any) -> dict[str, Any]:
    """Return the ``tune.CheckpointConfig`` keyword arguments, defaults filled in.

    The translate stage renamed an old API stack ``checkpoint_score_attribute`` already.

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


def check_config_keys(config: Mapping[str, Any], default: Any, label: str) -> None:
    """Raise for a config key (or a key of a declared nested dict) the class ignores.

    Args:
        config: The experiment's config dict (before grid variants are expanded).
        default: The algorithm's default config instance.
        label: Prefix for messages.

    """
    # Lazy: the config-key module imports Ray, and the ``rllib`` command imports this
    # module at start-up.
    from rllib_privacy.algorithms.config_keys import allowed_config_keys

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
    config: Mapping[str, Any], algo_cls: type[Algorithm], num_variants: int, label: str
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


def _validate_variant(variant: dict[str, Any], algo_cls: type[Algorithm], where: str) -> None:
    """Run the config class's hook, ``update_from_dict`` and ``validate``."""
    config = algo_cls.get_default_config()
    with _as_config_error(where, config):
        _call_validate_hook(type(config), copy.deepcopy(variant))
        _validate_env_config(variant, config.env)
        _validate_ldp_gradient(variant)
        config.update_from_dict(copy.deepcopy(variant))
        config.validate()
        _validate_epsilon_floors(config, variant)
    _validate_evaluation_config(config, variant, where)


def _validate_epsilon_floors(config: Any, variant: Mapping[str, Any]) -> None:
    """Refuse an ε that is legal but cannot be computed with (``mechanisms.floors``).

    ``privacy_epsilon: 1e-320`` passes a "number > 0" check, then every release overflows
    inside a worker: the run ended with nothing done. Every ``*epsilon*`` key must be a
    normal float, and a gradient mechanism's per-release ε at least its floor.
    """
    from rllib_privacy.mechanisms.floors import gradient_epsilon_floor

    for key, value in variant.items():
        if (
            needs_normal_float(str(key))
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            check_normal_epsilon(f"config key {key!r}", float(value))
    get_mechanism = getattr(config, "get_gradient_mechanism", None)
    if not callable(get_mechanism):
        return
    mechanism = get_mechanism()
    if mechanism.name == "none" or not math.isfinite(mechanism.epsilon):
        return
    floor = gradient_epsilon_floor(mechanism.name, clip=mechanism.clip, debias=mechanism.debias)
    if mechanism.epsilon >= floor:
        return
    total = float(getattr(config, "privacy_epsilon", mechanism.epsilon))
    share = total / mechanism.epsilon
    per_release = (
        f"one gradient release gets ε = {mechanism.epsilon:.3g} of it, " if share > 1 else ""
    )
    raise PrivacyConfigError(
        f"config key 'privacy_epsilon' is {total!r}: {per_release}below {floor:.2g}, the "
        f"smallest ε per release with which {mechanism.name!r} (clip {mechanism.clip:g}) "
        "can be computed in float64 (its noise overflows); the smallest meaningful "
        f"privacy_epsilon here is {floor * share:.2g}"
    )


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
        evaluation = config.get_evaluation_config_object()
        evaluation.validate()
        _validate_epsilon_floors(evaluation, merged)


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
