"""CartPole-v0 dynamics whose gravity is a private, per-agent parameter.

Ono & Takahashi (PGC-A3C, §4) evaluate on CartPole with a gravity coefficient
ψ_n ∈ {9.7, 9.8, 9.9} drawn uniformly for every local agent n; ψ_n is the private
part of agent n's environment. This env reproduces that: each ``reset()`` draws a
gravity from ``gravity_choices`` with the env's own seeded generator, unless the
caller pins one with ``reset(options={"gravity": g})`` (used by multi-round agents
that keep their environment across several submissions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv, CartPoleVectorEnv

from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import PrivacyConfigError

#: Gravity coefficients of the paper's evaluation (§4, "Evaluation Task").
PAPER_GRAVITY_CHOICES: tuple[float, ...] = (9.7, 9.8, 9.9)


class CartPoleGravityEnv(CartPoleEnv):
    """CartPole whose gravity is drawn from a finite set at every reset.

    Register-time settings give it CartPole-v0's 200-step limit (see
    ``rllib_privacy.envs.register_envs``). The current gravity is
    ``env.unwrapped.gravity``; it is deliberately NOT part of the observation
    or the info dict, because it is the agent's private data.

    Args:
        gravity_choices: Non-empty sequence of positive, finite gravity values.
        render_mode: Passed to gymnasium's CartPoleEnv.

    """

    def __init__(
        self,
        gravity_choices: Sequence[float] = PAPER_GRAVITY_CHOICES,
        render_mode: str | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise PrivacyConfigError(
                f"env_config key(s) {sorted(unknown)} are not known to CartPoleGravityEnv; "
                "allowed: ['gravity_choices']"
            )
        choices = validate_gravity_choices(gravity_choices)
        super().__init__(render_mode=render_mode)
        self.gravity_choices = choices

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets the pole and draws (or pins) this episode's gravity."""
        options = dict(options or {})
        pinned = options.pop("gravity", None)
        obs, info = super().reset(seed=seed, options=options or None)
        if pinned is None:
            self.gravity = float(self.np_random.choice(self.gravity_choices))
        else:
            self.gravity = validate_gravity_choices([pinned])[0]
        return obs, info


def validate_gravity_choices(gravity_choices: Sequence[float]) -> tuple[float, ...]:
    """Returns ``gravity_choices`` as a tuple of floats or raises a clear error."""
    return validate_positive_choices("gravity_choices", gravity_choices)


def validate_positive_choices(key: str, choices: Any) -> tuple[float, ...]:
    """Returns ``choices`` (a number or a list of numbers) as a tuple of positive floats.

    Raises:
        PrivacyConfigError: Not a non-empty list of finite numbers > 0; names ``key``.

    """
    # A string or mapping would iterate as characters or keys ("98" -> 9.0, 8.0), and
    # a bool is an int: reject them instead of running with values nobody wrote.
    if isinstance(choices, bool | str | bytes | Mapping) or (
        isinstance(choices, Sequence) and any(isinstance(g, bool | str | bytes) for g in choices)
    ):
        raise PrivacyConfigError(
            f"env_config key {key!r} must be a number or a list of numbers, got {choices!r}"
        )
    if isinstance(choices, int | float):
        choices = [choices]
    try:
        values = tuple(float(g) for g in choices)
    except (TypeError, ValueError) as exc:
        raise PrivacyConfigError(
            f"env_config key {key!r} must be a list of numbers, got {choices!r}"
        ) from exc
    if not values or any(not math.isfinite(g) or g <= 0 for g in values):
        raise PrivacyConfigError(
            f"env_config key {key!r} must be a non-empty list of finite numbers > 0, "
            f"got {list(choices)!r}"
        )
    return values


def check_env_config(
    env_name: str,
    env_config: Any,
    validators: Mapping[str, Callable[[Any], Any]],
    *,
    extra: tuple[str, ...] = ("render_mode",),
) -> Mapping[str, Any]:
    """Check an ``env_config`` before Ray starts: known keys only, each value valid.

    Args:
        env_name: The env's name, for messages.
        env_config: The ``env_config`` of an experiment (None: empty).
        validators: Each allowed key mapped to a function that raises
            PrivacyConfigError for a bad value.
        extra: Keys allowed without a check (gymnasium's ``render_mode`` by default).

    Returns:
        ``env_config`` unchanged (the normalize hook of ``ENV_CONFIG_HOOKS``).

    Raises:
        PrivacyConfigError: Not a mapping, an unknown key (with a suggestion) or a bad value.

    """
    if env_config is None:
        return {}
    if not isinstance(env_config, Mapping):
        raise PrivacyConfigError(f"env_config of {env_name} must be a mapping, got {env_config!r}")
    allowed = (*validators, *extra)
    for key, value in env_config.items():
        if key not in allowed:
            raise PrivacyConfigError(
                f"env_config key {key!r} is not known to {env_name}"
                f"{did_you_mean(str(key), allowed)}; allowed: {list(allowed)}"
            )
        if key in validators:
            validators[key](value)
    return env_config


def validate_cartpole_gravity_env_config(env_config: Any) -> Mapping[str, Any]:
    """The ``ENV_CONFIG_HOOKS`` check of CartPoleGravity (run before Ray starts)."""
    return check_env_config(
        "CartPoleGravityEnv", env_config, {"gravity_choices": validate_gravity_choices}
    )


class CartPoleGravityVectorEnv(CartPoleVectorEnv):
    """Many CartPole-v0 episodes in lockstep, each with its own private gravity.

    gymnasium's ``CartPoleVectorEnv`` (the same dynamics as ``CartPoleEnv``, vectorized)
    with ``gravity`` an array: entry ``i`` is the gravity of sub-environment ``i``. A
    LDPA3C fleet EnvRunner hosts one local agent per sub-environment, so entry ``i`` is
    agent ``i``'s private ψ. ``draw_gravities`` draws them uniformly from
    ``gravity_choices`` with the env's own generator; ``set_gravities`` pins them.

    Args:
        num_envs: Number of sub-environments (local agents).
        gravity_choices: Non-empty sequence of positive, finite gravity values.
        max_episode_steps: Truncation limit (CartPole-v0: 200).

    """

    def __init__(
        self,
        num_envs: int,
        gravity_choices: Sequence[float] = PAPER_GRAVITY_CHOICES,
        max_episode_steps: int = 200,
    ) -> None:
        super().__init__(num_envs=int(num_envs), max_episode_steps=int(max_episode_steps))
        self.gravity_choices = validate_gravity_choices(gravity_choices)
        # gymnasium annotates the attribute float; its vector step broadcasts an array.
        self.gravity = np.full(  # type: ignore[assignment]  # one gravity per sub-env
            self.num_envs, self.gravity_choices[0], dtype=np.float64
        )

    def draw_gravities(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """Draws ``size`` (default: ``num_envs``) gravities uniformly from the choices."""
        return rng.choice(np.asarray(self.gravity_choices), size=size or self.num_envs)

    def set_gravities(self, gravities: Any) -> None:
        """Pins the gravity of every sub-environment (one entry per sub-environment)."""
        gravities = np.asarray(gravities, dtype=np.float64)
        if gravities.shape != (self.num_envs,) or not np.all(
            np.isfinite(gravities) & (gravities > 0)
        ):
            raise PrivacyConfigError(
                f"gravities must be {self.num_envs} finite numbers > 0, got {gravities!r}"
            )
        self.gravity = gravities
