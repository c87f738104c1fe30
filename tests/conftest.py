"""Shared fixtures and markers.

The suite is split by layer: ``tests/unit`` (pure layers, no Ray), ``tests/plugins`` (RLlib
pieces) and ``tests/e2e`` (the CLI, Tune runs, benchmark scripts). Each test gets its folder's
name as a marker, so ``pytest -m unit`` runs the pure layers alone.

Tests leave no trace outside pytest's temporary folders (:func:`_private_home_and_ray_tmpdir`):

- ``HOME`` is a fresh folder for the whole session, so ``~/ray_results`` (Tune's default
  storage, the default logdir of an ``Algorithm`` built outside Tune and its privacy
  journals) resolves there, in this process, in every ``rllib train`` subprocess and in
  every Ray worker (they inherit the environment);
- an ``Algorithm`` built outside Tune logs into its test's own ``tmp_path`` (RLlib computed
  its default folder when Ray was imported, during collection: :func:`_algorithm_logdir`);
- ``RAY_TMPDIR`` is a private folder, so the Ray sessions' logs and sockets, and the cluster
  address file ``ray.cluster_utils.Cluster`` writes, stay out of ``/tmp/ray`` (another
  process's ``ray.init()`` without an address must never find a test's cluster there).

A test that still writes into ``~/ray_results`` fails (:func:`_nothing_in_ray_results`), and
the session fails if the real ``~/ray_results`` gained an entry (``pytest_sessionfinish``).

Tests marked ``slow`` are left out by default (``addopts`` in ``pyproject.toml``); CI runs them
separately with ``-m slow``. A run that names only test files or test ids runs them whatever
their speed, unless it passes its own ``-m``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Fixed seeds are expected in tests: silence the fixed-seed PrivacyWarning here and in
# every subprocess and Ray worker started from this process (they inherit the variable).
os.environ.setdefault("RLLIB_PRIVACY_TESTING", "1")
# Every ray.init() without an address (tests and `rllib train` subprocesses) starts its own
# local instance instead of joining a cluster another test (or pytest-xdist worker) started.
os.environ.setdefault("RAY_ADDRESS", "local")

#: The user's own results folder, read before any fixture replaces HOME.
REAL_RAY_RESULTS = Path.home() / "ray_results"
#: The machine-wide cluster address file (Ray's ``get_ray_address_file`` before this suite
#: sets ``RAY_TMPDIR``): ``ray.init()`` without an address joins the cluster it names.
MACHINE_RAY_ADDRESS_FILE = (
    Path(os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp")
    / "ray"
    / "ray_current_cluster"
)

_LAYERS = ("unit", "plugins", "e2e")
_DEFAULT_MARK_EXPRESSION = "not slow"
_REAL_RESULTS_BEFORE = pytest.StashKey[set[str]]()


def _listing(folder: Path) -> set[str]:
    return set(os.listdir(folder)) if folder.is_dir() else set()


def pytest_configure(config: pytest.Config) -> None:
    """Runs named test files or ids whatever their speed; records ``~/ray_results``.

    The ``-m "not slow"`` of ``addopts`` is for the default run: someone who names a file
    or a test id (``pytest tests/plugins/test_x.py::test_y``) wants it run, slow or not.
    """
    given = config.invocation_params.args
    names_tests = bool(config.args) and all(
        Path(arg.split("::", 1)[0]).is_file() for arg in config.args
    )
    user_chose_marks = any(a == "-m" or a.startswith("-m") for a in map(str, given))
    if names_tests and not user_chose_marks and config.option.markexpr == _DEFAULT_MARK_EXPRESSION:
        config.option.markexpr = ""
    config.stash[_REAL_RESULTS_BEFORE] = _listing(REAL_RAY_RESULTS)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fails the session if the user's real ``~/ray_results`` gained an entry during it."""
    before = session.config.stash.get(_REAL_RESULTS_BEFORE, None)
    if before is None or hasattr(session.config, "workerinput"):
        return  # pytest-xdist: the controller checks once for all workers.
    new = sorted(_listing(REAL_RAY_RESULTS) - before)
    if new:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (
            f"tests wrote into the user's {REAL_RAY_RESULTS} (tests write only under "
            f"pytest's tmp_path; or another process on this machine did): "
            f"{new[:10]}{' ...' if len(new) > 10 else ''}"
        )
        if reporter is not None:
            reporter.write_line(message, red=True)
        else:
            print(message, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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


#: Module attributes holding ``~/ray_results`` as RLlib and Tune computed it at import time.
_STORAGE_CONSTANTS = (
    "ray.train.constants",
    "ray.tune.experiment.experiment",
    "ray.tune.trainable.trainable",
)


@pytest.fixture(scope="session", autouse=True)
def _private_home_and_ray_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh HOME and a private RAY_TMPDIR for the whole session (see the module docstring).

    ``RAY_TMPDIR`` is a short folder of its own beside pytest's: Ray's Unix socket paths
    (``<RAY_TMPDIR>/ray/session_<date>_<pid>/sockets/plasma_store``) must stay under 108
    characters, which a folder under pytest's base temp would not leave room for. It is
    removed at the end of the session.
    """
    home = tmp_path_factory.mktemp("home")
    ray_tmpdir = Path(tempfile.mkdtemp(prefix="pytest-ray-"))
    results = home / "ray_results"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("RAY_TMPDIR", str(ray_tmpdir))
        for name in _STORAGE_CONSTANTS:
            if name in sys.modules:
                patch.setattr(sys.modules[name], "DEFAULT_STORAGE_PATH", str(results))
        yield home
    shutil.rmtree(ray_tmpdir, ignore_errors=True)


@pytest.fixture(autouse=True)
def _algorithm_logdir(
    _private_home_and_ray_tmpdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``Algorithm`` built outside Tune logs (and journals) into the test's ``tmp_path``.

    Without a Tune trial, RLlib's ``Trainable`` makes a timestamped folder in its module's
    ``DEFAULT_STORAGE_PATH`` (``~/ray_results``, fixed when Ray was imported); its privacy
    journals go there too.
    """
    trainable = sys.modules.get("ray.tune.trainable.trainable")
    if trainable is not None:
        monkeypatch.setattr(trainable, "DEFAULT_STORAGE_PATH", str(tmp_path / "ray_results"))


@pytest.fixture(autouse=True)
def _nothing_in_ray_results(_private_home_and_ray_tmpdir: Path) -> Iterator[None]:
    """Fails the test that wrote into ``~/ray_results`` (the session's HOME), then cleans it.

    A Tune run, ``rllib train`` or an Algorithm in a Ray worker without a storage path of
    the test's own writes there: give it ``tmp_path``.
    """
    results = _private_home_and_ray_tmpdir / "ray_results"
    before = _listing(results)
    yield
    new = sorted(_listing(results) - before)
    for name in new:
        shutil.rmtree(results / name, ignore_errors=True)
    assert not new, (
        f"the test wrote into ~/ray_results ({new}); give every Tune run, `rllib train` and "
        "Algorithm a storage path or logdir under tmp_path"
    )


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
