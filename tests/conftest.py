"""Shared fixtures and markers.

The suite is split by layer: ``tests/unit`` (pure layers, no Ray), ``tests/plugins`` (RLlib
pieces) and ``tests/e2e`` (the CLI, Tune runs, benchmark scripts). Each test gets its folder's
name as a marker, so ``pytest -m unit`` runs the pure layers alone.
"""

from __future__ import annotations

import os

import pytest

# Fixed seeds are expected in tests: silence the fixed-seed PrivacyWarning here and in
# every subprocess and Ray worker started from this process (they inherit the variable).
os.environ.setdefault("RLLIB_PRIVACY_TESTING", "1")
# Every ray.init() without an address (tests and `rllib train` subprocesses) starts its own
# local instance instead of joining a cluster another test (or pytest-xdist worker) started.
os.environ.setdefault("RAY_ADDRESS", "local")


_LAYERS = ("unit", "plugins", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test with its layer folder's name."""
    for item in items:
        layer = item.path.parent.name
        if layer in _LAYERS:
            item.add_marker(getattr(pytest.mark, layer))


def pytest_collect_file(file_path, parent):  # noqa: ANN001, ANN201
    """Registers the package with Tune and gymnasium before RLlib-facing test modules load.

    ``import rllib_privacy`` no longer registers (it imports no Ray); tests name algorithms
    and envs as strings, as users do after ``rllib_privacy.register()``.
    """
    if file_path.suffix == ".py" and file_path.parent.name in ("plugins", "e2e"):
        import rllib_privacy

        rllib_privacy.register()


@pytest.fixture(scope="session")
def ray_session():
    """Starts Ray once (2 CPUs, no dashboard) for every test that asks for it."""
    import ray

    import rllib_privacy

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # After ray.init: Tune's registry lives in the cluster (a new one starts empty).
    rllib_privacy.register()
    yield ray
    ray.shutdown()
