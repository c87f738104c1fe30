"""``ALE/<Game>-ram-v5`` ids: the Atari RAM variants that ale-py 0.9+ no longer registers.

Papers of the gym era name RAM environments such as ``AirRaid-ram-v0``. ale-py now
registers only ``ALE/<Game>-v5`` and expects ``obs_type="ram"`` as a keyword. This
module registers ``ALE/<Game>-ram-v5`` for every ``ALE/<Game>-v5`` id, with the same
settings plus ``obs_type="ram"``, so that YAML files can name the RAM game directly.

The observation is the console's 128 RAM bytes as ``float32`` scaled to [0, 1]
(byte / 255): RLlib's default MLP encoders take float input, and the scale keeps
adjacency radii (e.g. the Dirichlet teacher's ``teacher_adjacency``) in a unit range.
``round(obs * 255)`` recovers the bytes. The entry point lives in this package, so the
``rllib_privacy:`` prefix that ``rllib train`` adds makes every EnvRunner import it.
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym

_V5_ID = re.compile(r"^ALE/(?P<game>[A-Za-z0-9]+)-v5$")


def ram_env_id(game_id: str) -> str:
    """Return the RAM alias of an ``ALE/<Game>-v5`` id (``ALE/<Game>-ram-v5``)."""
    match = _V5_ID.match(game_id)
    if match is None:
        raise ValueError(f"game_id must look like 'ALE/<Game>-v5', got {game_id!r}")
    return f"ALE/{match['game']}-ram-v5"


def make_ale_ram(**kwargs: Any) -> gym.Env:
    """Entry point of the RAM aliases: ale-py's RAM ``AtariEnv``, bytes scaled to [0, 1]."""
    import ale_py
    import numpy as np

    kwargs["obs_type"] = "ram"
    env = ale_py.env.AtariEnv(**kwargs)
    space = gym.spaces.Box(0.0, 1.0, env.observation_space.shape, np.float32)
    return gym.wrappers.TransformObservation(
        env, lambda ram: np.asarray(ram, dtype=np.float32) / np.float32(255.0), space
    )


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
                kwargs={**spec.kwargs, "obs_type": "ram"},
                max_episode_steps=spec.max_episode_steps,
            )
        registered.append(ram_id)
    return registered
