"""Registers this package's algorithms with Tune and its envs with gymnasium."""

from __future__ import annotations

#: Algorithm names this package registers with Tune (none shadows an RLlib built-in).
ALGORITHM_NAMES: tuple[str, ...] = ("LDPA3C", "PATEPPO")

_registered = False


def register_all() -> None:
    """Registers every algorithm and environment of rllib_privacy (idempotent)."""
    global _registered
    if _registered:
        return
    from ray.tune.registry import register_env, register_trainable

    from rllib_privacy.algorithms.ldp_a3c import LDPA3C
    from rllib_privacy.algorithms.pate_ppo import PATEPPO
    from rllib_privacy.envs import CARTPOLE_GRAVITY_ENV_ID, make_cartpole_gravity, register_envs

    register_envs()
    # Also a Tune env: EnvRunner processes then get the creator from Ray's registry,
    # whether or not they imported this package themselves.
    register_env(CARTPOLE_GRAVITY_ENV_ID, make_cartpole_gravity)
    register_trainable("LDPA3C", LDPA3C)
    register_trainable("PATEPPO", PATEPPO)
    _registered = True
