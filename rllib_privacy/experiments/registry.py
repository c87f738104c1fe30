"""Tune's registry before Ray starts: this package registered, algorithm names looked up.

A helper of the stages, not a stage: parse looks up the algorithm here and resolve lists
the registered envs. Ray, RLlib and gymnasium are imported inside the functions that need
them: ``rllib_privacy.experiments`` is imported by the ``rllib`` command at start-up,
before it knows whether it will run anything (``rllib --help``).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rllib_privacy._registration import register_all
from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import PrivacyConfigError

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm import Algorithm

__all__ = [
    "ensure_package_registered",
    "quiet_rllib",
    "registered_algorithms",
    "registered_envs",
    "resolve_algorithm",
]

logger = logging.getLogger(__name__)


def ensure_package_registered() -> None:
    """Register ``rllib_privacy``'s algorithms and envs with Tune and gymnasium."""
    try:
        register_all()
    except ImportError as e:  # A plug-in's optional dependency may be missing.
        logger.debug("registering rllib_privacy failed: %s", e)


def registered_algorithms() -> list[str]:
    """Return the sorted names of all algorithms registered with Tune.

    RLlib's own algorithms are registered first. Must be called before ``ray.init``:
    afterwards Tune keeps its registry in the cluster and only RLlib's names are listed.
    """
    from ray.rllib.algorithms.registry import ALGORITHMS
    from ray.tune.registry import TRAINABLE_CLASS, _has_rllib_trainable

    _has_rllib_trainable("PPO")  # Registers all of RLlib's algorithms with Tune.
    names = set(ALGORITHMS) | set(_registry_names(TRAINABLE_CLASS))
    return sorted(n for n in names if not n.startswith("__"))


def registered_envs() -> list[str]:
    """Return the sorted env names registered with ``tune.register_env`` (before init)."""
    from ray.tune.registry import ENV_CREATOR

    return sorted(_registry_names(ENV_CREATOR))


def resolve_algorithm(name: Any) -> type[Algorithm]:
    """Return the RLlib Algorithm class registered with Tune under ``name``.

    Raises:
        PrivacyConfigError: ``name`` is not a registered RLlib Algorithm; the message
            lists the registered names and suggests the closest one.

    """
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.tune.error import TuneError
    from ray.tune.registry import get_trainable_cls

    if not isinstance(name, str) or not name:
        raise PrivacyConfigError(f"'run' must be an algorithm name, got {name!r}")
    try:
        algo_cls = get_trainable_cls(name)
    except TuneError:
        names = registered_algorithms()
        raise PrivacyConfigError(
            f"unknown algorithm {name!r} in 'run'{did_you_mean(name, names)}; "
            f"registered algorithms: {', '.join(names)}"
        ) from None
    if not (isinstance(algo_cls, type) and issubclass(algo_cls, Algorithm)):
        raise PrivacyConfigError(
            f"'run': {name!r} is registered with Tune but is not an RLlib Algorithm"
        )
    return algo_cls


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


def _registry_names(category: str) -> list[str]:
    """Names registered in Tune's (not yet flushed) registry under ``category``."""
    from ray.tune.registry import _global_registry

    # Tune has no public listing; before ray.init, registrations wait in `_to_flush`,
    # after it they are in the cluster and `_registered` remembers their keys.
    pending = list(getattr(_global_registry, "_to_flush", {}))
    pending += list(getattr(_global_registry, "_registered", ()))
    return sorted({key for (cat, key) in pending if cat == category})
