"""Fault injection for LDPA3C tests: an EnvRunner that dies once, on purpose.

It lives in the package (not in a test module) because Ray workers must import it.
It is configured through ``env_config`` keys that it removes before the environment
is built, so the environment never sees them::

    config.environment(env_config={CRASH_MARKER_KEY: str(tmp / "crashed"), CRASH_ON_CALL_KEY: 2})
    config.env_runners(env_runner_cls=CrashOnceLDPA3CEnvRunner)
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

from ray.rllib.utils.annotations import override

from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import LDPA3CEnvRunner
from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission

#: env_config key: file created right before the crash; while it exists nobody crashes.
CRASH_MARKER_KEY = "_crash_marker"
#: env_config key: the 1-based ``submit_gradients`` call on which the runner dies.
CRASH_ON_CALL_KEY = "_crash_on_call"
#: env_config key: the worker index that dies (default 1, the first remote runner).
CRASH_WORKER_KEY = "_crash_worker_index"


class CrashOnceLDPA3CEnvRunner(LDPA3CEnvRunner):
    """An LDPA3CEnvRunner whose runner ``_crash_worker_index`` exits on call N, once.

    The marker file makes the crash happen once per marker: Ray restarts the actor
    (``restart_failed_env_runners=True``) and the new process sees the marker.
    """

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        env_config = dict(config.env_config or {})
        marker = env_config.pop(CRASH_MARKER_KEY, None)
        self._crash_marker = None if marker is None else pathlib.Path(marker)
        self._crash_on_call = int(env_config.pop(CRASH_ON_CALL_KEY, 1))
        self._crash_worker = int(env_config.pop(CRASH_WORKER_KEY, 1))
        self._calls = 0
        config = config.copy(copy_frozen=False)
        config.env_config = env_config
        super().__init__(config=config, **kwargs)

    @override(LDPA3CEnvRunner)
    def submit_gradients(self, **kwargs: Any) -> list[GradientSubmission]:
        """Dies (``os._exit(1)``) on the configured call, then behaves normally."""
        self._calls += 1
        if (
            self._crash_marker is not None
            and (self.worker_index or 0) == self._crash_worker
            and self._calls == self._crash_on_call
            and not self._crash_marker.exists()
        ):
            self._crash_marker.write_text(f"worker {self.worker_index} pid {os.getpid()}\n")
            os._exit(1)  # a hard crash: no cleanup, no reply to the aggregator
        return super().submit_gradients(**kwargs)
