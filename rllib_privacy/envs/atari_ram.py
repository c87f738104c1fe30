"""``ALE/<Game>-ram-v5`` ids: the Atari RAM variants that ale-py 0.9+ no longer registers.

Papers of the gym era name RAM environments such as ``AirRaid-ram-v0``. ale-py now
registers only ``ALE/<Game>-v5`` and expects ``obs_type="ram"`` as a keyword. This
module registers ``ALE/<Game>-ram-v5`` for every ``ALE/<Game>-v5`` id, with the same
settings plus ``obs_type="ram"``, so that YAML files can name the RAM game directly.

Each alias also has a ``vector_entry_point``:
[AtariRamVectorEnv][rllib_privacy.envs.atari_ram.AtariRamVectorEnv] steps N games in one
loop without gymnasium's per-environment wrappers and info merging.
RLlib uses it with ``gym_env_vectorize_mode: vector_entry_point`` (the AirRaid YAMLs do); the
default ``sync`` mode keeps building N single environments as before.

The observation is the console's 128 RAM bytes as ``float32`` scaled to [0, 1]
(byte / 255): RLlib's default MLP encoders take float input, and the scale keeps
adjacency radii (e.g. the Dirichlet teacher's ``teacher_adjacency``) in a unit range.
``round(obs * 255)`` recovers the bytes. The entry point lives in this package, so the
``rllib_privacy:`` prefix that ``rllib train`` adds makes every EnvRunner import it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

_V5_ID = re.compile(r"^ALE/(?P<game>[A-Za-z0-9]+)-v5$")


def ram_env_id(game_id: str) -> str:
    """Return the RAM alias of an ``ALE/<Game>-v5`` id (``ALE/<Game>-ram-v5``)."""
    match = _V5_ID.match(game_id)
    if match is None:
        raise ValueError(f"game_id must look like 'ALE/<Game>-v5', got {game_id!r}")
    return f"ALE/{match['game']}-ram-v5"


def _atari_env_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``AtariEnv`` arguments for a RAM game; a YAML list frameskip ``[2, 5]`` becomes a tuple.

    ale-py draws a stochastic frameskip only from a tuple ``(low, high)`` and rejects a list,
    which is what YAML and JSON produce.
    """
    kwargs = {key: value for key, value in kwargs.items() if key != "render_mode"}
    if isinstance(kwargs.get("frameskip"), list):
        kwargs["frameskip"] = tuple(kwargs["frameskip"])
    kwargs["obs_type"] = "ram"
    return kwargs


def make_ale_ram(**kwargs: Any) -> gym.Env:
    """Entry point of the RAM aliases: ale-py's RAM ``AtariEnv``, bytes scaled to [0, 1]."""
    import ale_py

    env = ale_py.env.AtariEnv(**_atari_env_kwargs(kwargs))
    space = gym.spaces.Box(0.0, 1.0, env.observation_space.shape, np.float32)
    return gym.wrappers.TransformObservation(
        env, lambda ram: np.asarray(ram, dtype=np.float32) / np.float32(255.0), space
    )


_RAM_MAX = np.float32(255.0)


class AtariRamVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` ale-py RAM games stepped in one loop, observations scaled to [0, 1].

    The same games as ``num_envs`` copies of
    [make_ale_ram][rllib_privacy.envs.atari_ram.make_ale_ram] in gymnasium's ``SyncVectorEnv``
    (same seeds give the same trajectories), without the per-environment wrapper calls and info
    merging that cost about a tenth of an AirRaid step. Autoreset follows gymnasium's default
    ``NEXT_STEP`` mode, which RLlib's ``SingleAgentEnvRunner`` expects: the step after a
    terminal or truncated one resets that game and ignores its action. Infos are empty.

    Args:
        num_envs: Number of games.
        max_episode_steps: Truncate an episode after this many agent steps (the registered
            spec's value; ALE's own ``max_num_frames_per_episode`` applies as well).
        **kwargs: ``ale_py.env.AtariEnv`` arguments (``game``, ``frameskip``,
            ``repeat_action_probability``, ...); ``obs_type`` is forced to ``"ram"``.

    """

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(
        self, num_envs: int, *, max_episode_steps: int | None = None, **kwargs: Any
    ) -> None:
        import ale_py

        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        kwargs = _atari_env_kwargs(kwargs)
        self.envs = [ale_py.env.AtariEnv(**kwargs) for _ in range(num_envs)]
        self.num_envs = num_envs
        self.max_episode_steps = max_episode_steps
        ram_shape = self.envs[0].observation_space.shape
        assert ram_shape is not None  # ALE's RAM observation space is a Box
        self.single_observation_space = gym.spaces.Box(0.0, 1.0, ram_shape, np.float32)
        self.single_action_space = self.envs[0].action_space
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, num_envs
        )
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self._ram = np.zeros((num_envs, *ram_shape), dtype=np.uint8)
        self._needs_reset = np.zeros(num_envs, dtype=bool)
        self._episode_steps = np.zeros(num_envs, dtype=np.int64)

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every game; an int seed gives game i the seed ``seed + i`` (as gymnasium)."""
        if seed is None or isinstance(seed, int | np.integer):
            seeds = [None if seed is None else int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"got {len(seeds)} seeds for {self.num_envs} environments")
        for index, (env, game_seed) in enumerate(zip(self.envs, seeds, strict=True)):
            self._ram[index], _ = env.reset(seed=game_seed, options=options)
        self._needs_reset[:] = False
        self._episode_steps[:] = 0
        return self._ram.astype(np.float32) / _RAM_MAX, {}

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every game once (or reset the ones that ended on the previous step)."""
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        for index, env in enumerate(self.envs):
            if self._needs_reset[index]:
                self._ram[index], _ = env.reset()
                self._episode_steps[index] = 0
                continue
            ram, reward, terminal, truncation, _ = env.step(int(actions[index]))
            self._ram[index] = ram
            rewards[index] = reward
            terminated[index] = terminal
            truncated[index] = truncation
        self._episode_steps += ~self._needs_reset
        if self.max_episode_steps is not None:
            truncated |= ~terminated & (self._episode_steps >= self.max_episode_steps)
        # Games that were reset above produced no step: their flags stay False.
        self._needs_reset = terminated | truncated
        return self._ram.astype(np.float32) / _RAM_MAX, rewards, terminated, truncated, {}

    def close_extras(self, **kwargs: Any) -> None:
        """Close every game."""
        for env in getattr(self, "envs", ()):  # absent when __init__ raised
            env.close()


def make_ale_ram_vector(num_envs: int, **kwargs: Any) -> AtariRamVectorEnv:
    """Vector entry point of the RAM aliases (gymnasium's ``vector_entry_point`` mode)."""
    return AtariRamVectorEnv(num_envs, **kwargs)


def register_ale_ram_envs() -> list[str]:
    """Register ``ALE/<Game>-ram-v5`` for every ``ALE/<Game>-v5`` id (idempotent).

    Returns:
        The RAM ids now registered; empty when ale-py is not installed.

    """
    try:
        import ale_py
    except ImportError:
        return []
    gym.register_envs(ale_py)
    registered = []
    for env_id, spec in list(gym.registry.items()):
        if _V5_ID.match(env_id) is None:
            continue
        ram_id = ram_env_id(env_id)
        if ram_id not in gym.registry:
            gym.register(
                id=ram_id,
                entry_point="rllib_privacy.envs.atari_ram:make_ale_ram",
                vector_entry_point="rllib_privacy.envs.atari_ram:make_ale_ram_vector",
                kwargs={**spec.kwargs, "obs_type": "ram"},
                max_episode_steps=spec.max_episode_steps,
            )
        registered.append(ram_id)
    return registered
