"""Any gymnasium env whose time limit is part of the task: reaching it is termination.

gymnasium's ``TimeLimit`` reports the last step as *truncated*, and RLlib's GAE (and every
bootstrapping learner) then adds γ·V(s_T) to the last reward, as if the episode went on.
That is right when the limit is only a rollout length, but not when the limit is part of
the task (Pardo et al. 2018, "Time Limits in Reinforcement Learning", §3): on FrozenLake
8x8 with a 14-step limit, the shortest path is the limit itself, the one-hot observation
carries no time, and bootstrapping from an over-estimated V next to the goal makes
"bump the wall on the last step" worth more than "step into the goal" (see
``benchmarks/RESULTS.md``, FrozenLake diagnosis). Wrapping the env reports the limit as
termination, so the value target of the last step is its reward alone.

    env: rllib_privacy/TimeLimitAsTerminal-v0
    config:
      env_config:
        env_id: FrozenLake-v1          # any gymnasium id
        max_episode_steps: 14          # the task's limit (or the id's registered one)
        is_slippery: false             # the rest go to gym.make(env_id, ...)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym

from rllib_privacy._validation import did_you_mean
from rllib_privacy.envs.registry import GYM_MAKE_KEYWORDS, check_env_config_for, register_envs
from rllib_privacy.errors import PrivacyConfigError

#: Tune id of the wrapper (``env_config``: ``env_id`` plus ``gym.make`` keywords).
TIME_LIMIT_AS_TERMINAL_ENV_ID = "rllib_privacy/TimeLimitAsTerminal-v0"

#: ``info`` key set on the step at which the time limit ended the episode.
TIME_LIMIT_INFO_KEY = "time_limit_reached"


class TimeLimitAsTerminal(gym.Wrapper):
    """Reports a time-limit truncation as termination (the limit is part of the MDP).

    ``step`` returns ``terminated = terminated or truncated`` and ``truncated = False``;
    on the step where only the limit ended the episode it also sets
    ``info["time_limit_reached"] = True``. Rewards, observations and spaces are unchanged.
    The observation does not include the time: Pardo et al. recommend adding it when the
    remaining time matters to the policy; with a limit equal to the shortest path (the
    FrozenLake setting) every successful policy acts the same at every step, and the
    one-hot observation of RLlib's demo stays as it is.

    The wrapped ``env`` (the only constructor argument, as for every ``gym.Wrapper``) must
    end episodes by a time limit (``TimeLimit``).

    """

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """One step of the wrapped env with its truncation reported as termination."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if truncated and not terminated:
            info = {**info, TIME_LIMIT_INFO_KEY: True}
        return obs, reward, bool(terminated or truncated), False, info


def _split_env_config(env_config: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    config = dict(env_config or {})
    env_id = config.pop("env_id", None)
    return env_id, config


def validate_time_limit_env_config(env_config: Any) -> Mapping[str, Any]:
    """The ``ENV_CONFIG_HOOKS`` check of TimeLimitAsTerminal (run before Ray starts).

    Raises:
        PrivacyConfigError: Not a mapping; ``env_id`` missing, not a gymnasium id or this
            wrapper itself; ``max_episode_steps`` not a positive integer, or missing while
            the id registers no limit (then nothing would ever end by time); a keyword the
            wrapped env does not take.

    """
    if not isinstance(env_config, Mapping):
        raise PrivacyConfigError(
            f"env_config of {TIME_LIMIT_AS_TERMINAL_ENV_ID} must be a mapping with 'env_id', "
            f"got {env_config!r}"
        )
    env_id, rest = _split_env_config(env_config)
    if "env_id" not in env_config:
        raise PrivacyConfigError(
            f"env_config of {TIME_LIMIT_AS_TERMINAL_ENV_ID} needs the key 'env_id' (the "
            f"gymnasium env to wrap, e.g. 'FrozenLake-v1'); its keys are {sorted(map(str, rest))}"
            f"{_closest_hint(rest, ('env_id',))}"
        )
    if not isinstance(env_id, str) or not env_id:
        raise PrivacyConfigError(
            f"env_config key 'env_id' of {TIME_LIMIT_AS_TERMINAL_ENV_ID} must name the "
            f"gymnasium env to wrap (e.g. 'FrozenLake-v1'), got {env_id!r}"
        )
    if env_id == TIME_LIMIT_AS_TERMINAL_ENV_ID:
        raise PrivacyConfigError(f"env_config key 'env_id' cannot be {env_id!r} itself")
    try:
        spec = gym.spec(env_id)
    except gym.error.Error as e:
        raise PrivacyConfigError(
            f"env_config key 'env_id' of {TIME_LIMIT_AS_TERMINAL_ENV_ID}: {env_id!r} is not "
            f"a registered gymnasium id ({e})"
        ) from None
    limit = rest.get("max_episode_steps", spec.max_episode_steps)
    if limit is None:
        raise PrivacyConfigError(
            f"env_config of {TIME_LIMIT_AS_TERMINAL_ENV_ID}: {env_id!r} registers no time "
            "limit, so set 'max_episode_steps' (a positive integer)"
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise PrivacyConfigError(
            f"env_config key 'max_episode_steps' must be a positive integer, got {limit!r}"
        )
    # gym.make takes its own keywords before the wrapped env sees the rest.
    check_env_config_for(env_id, {k: v for k, v in rest.items() if k not in GYM_MAKE_KEYWORDS})
    return env_config


def _closest_hint(keys: Mapping[str, Any], wanted: tuple[str, ...]) -> str:
    """``"; did you mean 'x'?"`` for the first key close to a wanted one, else ``""``."""
    for key in keys:
        hint = did_you_mean(str(key), wanted)
        if hint:
            return hint
    return ""


def make_time_limit_as_terminal(env_config: Mapping[str, Any] | None = None) -> gym.Env:
    """Env creator for Tune: ``TimeLimitAsTerminal(gym.make(env_id, **rest))``.

    ``env_config`` is validated first (the same check as before Ray starts), so a bad one
    raises PrivacyConfigError naming the key here too.
    """
    register_envs()  # env_id may be one of ours
    validate_time_limit_env_config(env_config if env_config is not None else {})
    env_id, rest = _split_env_config(env_config)
    return TimeLimitAsTerminal(gym.make(env_id, **rest))
