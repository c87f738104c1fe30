"""Registers this package's algorithms with Tune and its envs with gymnasium and Tune.

Nothing is imported at module level: the ``rllib`` command and the experiment-file
loader import this module at start-up, and registering imports Ray, RLlib, torch and
every algorithm, which only ``register_all`` (when something will run) should pay for.
"""

from __future__ import annotations

#: Algorithm names this package registers with Tune (none shadows an RLlib built-in).
ALGORITHM_NAMES: tuple[str, ...] = (
    "LDPA3C",
    "LDPPPO",
    "KickstartPPO",
    "PipelinedPPO",
    "PATEPPO",
    "ExplorationPPO",
    "ExplorationDQN",
)

_registered = False
#: The Ray driver connection (job id) the registrations were written to; None before ray.init.
_registered_in: str | None = None


def _ray_connection() -> str | None:
    """The current Ray session and driver job, or None while Ray is not initialized.

    Tune keeps its registry in the Ray cluster: after ``ray.shutdown()`` and a new
    ``ray.init()`` the registrations are gone and must be written again. Job ids restart
    at 1 in every new cluster, so the session name (unique per cluster) is part of the key.
    """
    import sys

    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    # Ray has no public accessor for the session name; fall back to the GCS address.
    node = getattr(ray._private.worker.global_worker, "node", None)
    session = getattr(node, "session_name", None) or ray.get_runtime_context().gcs_address
    return f"{session}/{ray.get_runtime_context().get_job_id()}"


def register_all() -> None:
    """Registers every algorithm and environment of rllib_privacy.

    Idempotent within one Ray connection; registers again after Ray was restarted (Tune's
    registry lives in the cluster, so a new cluster starts without our names).
    """
    global _registered, _registered_in
    connection = _ray_connection()
    if _registered and (connection is None or connection == _registered_in):
        return
    # Lazy (see the module docstring): Ray, torch and the algorithms load here.
    from ray.tune.registry import register_env, register_trainable

    from rllib_privacy.algorithms.count_exploration import ExplorationDQN, ExplorationPPO
    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPO
    from rllib_privacy.algorithms.ldp_a3c import LDPA3C
    from rllib_privacy.algorithms.ldp_ppo import LDPPPO
    from rllib_privacy.algorithms.pate_ppo import PATEPPO
    from rllib_privacy.algorithms.pipelined_ppo import PipelinedPPO
    from rllib_privacy.envs import (
        ACROBOT_MASS_ENV_ID,
        CARTPOLE_GRAVITY_ENV_ID,
        INSTANCE_LAPLACE_ENV_ID,
        SPARSE_MOUNTAIN_CAR_ENV_ID,
        TIME_LIMIT_AS_TERMINAL_ENV_ID,
        make_acrobot_mass,
        make_cartpole_gravity,
        make_instance_laplace,
        make_sparse_mountain_car,
        make_time_limit_as_terminal,
        register_envs,
    )
    from rllib_privacy.envs.atari_pixels import (
        ATARI_PIXELS_ENV_ID,
        ATARI_RAM_ENV_ID,
        make_atari_pixels,
        make_atari_ram,
    )

    register_envs()
    # Also Tune envs: EnvRunner processes then get the creator from Ray's registry,
    # whether or not they imported this package themselves.
    register_env(CARTPOLE_GRAVITY_ENV_ID, make_cartpole_gravity)
    register_env(ACROBOT_MASS_ENV_ID, make_acrobot_mass)
    register_env(INSTANCE_LAPLACE_ENV_ID, make_instance_laplace)
    register_env(TIME_LIMIT_AS_TERMINAL_ENV_ID, make_time_limit_as_terminal)
    register_env(SPARSE_MOUNTAIN_CAR_ENV_ID, make_sparse_mountain_car)
    register_env(ATARI_PIXELS_ENV_ID, make_atari_pixels)
    register_env(ATARI_RAM_ENV_ID, make_atari_ram)
    register_trainable("LDPA3C", LDPA3C)
    register_trainable("LDPPPO", LDPPPO)
    register_trainable("KickstartPPO", KickstartPPO)
    register_trainable("PipelinedPPO", PipelinedPPO)
    register_trainable("ExplorationPPO", ExplorationPPO)
    register_trainable("ExplorationDQN", ExplorationDQN)
    register_trainable("PATEPPO", PATEPPO)
    _registered = True
    _registered_in = connection
