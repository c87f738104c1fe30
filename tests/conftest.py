"""Shared fixtures: one small local Ray instance for the tests that need one."""

from __future__ import annotations

import os

import pytest

# Fixed seeds are expected in tests: silence the fixed-seed PrivacyWarning here and in
# every subprocess and Ray worker started from this process (they inherit the variable).
os.environ.setdefault("RLLIB_PRIVACY_TESTING", "1")


@pytest.fixture(scope="session")
def ray_session():
    """Starts Ray once (2 CPUs, no dashboard) for every test that asks for it."""
    import ray

    import rllib_privacy  # noqa: F401  (registers algorithms and envs)

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
