"""rllib_privacy.register() writes our names into the Ray cluster the driver is connected to."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import ray
    import rllib_privacy
    from ray.tune.registry import ENV_CREATOR, TRAINABLE_CLASS, _global_registry

    def known():
        return (
            _global_registry.contains(TRAINABLE_CLASS, "LDPA3C"),
            _global_registry.contains(ENV_CREATOR, "rllib_privacy/CartPoleGravity-v0"),
        )

    rllib_privacy.register()  # before ray.init: flushed into the cluster on init
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    print("first", known())
    rllib_privacy.register()  # connected now: remembers this cluster (its job id is 1)
    ray.shutdown()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    print("restarted", known())  # a new cluster (job id 1 again) has an empty registry
    rllib_privacy.register()
    print("registered again", known())
    rllib_privacy.register()  # idempotent within one connection
    print("twice", known())
    ray.shutdown()
    """
)


@pytest.mark.ray
@pytest.mark.slow
def test_register_writes_again_into_a_restarted_cluster() -> None:
    # A fresh process: the suite's own Ray session must not be shut down from here.
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RAY_ADDRESS": "local"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" (", 1) for line in result.stdout.splitlines() if " (" in line)
    assert lines["first"] == "True, True)"
    assert lines["restarted"] == "False, False)"
    assert lines["registered again"] == "True, True)"
    assert lines["twice"] == "True, True)"
