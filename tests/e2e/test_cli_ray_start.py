"""`rllib train` joining Ray: a cluster that cannot be joined, a trial that cannot fit.

Ray's convention is kept (join the cluster `ray start` registered, else start a local
one); the tests point it only at addresses where nothing listens, never at a real cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cli_helpers import PPO_FILE


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rllib(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    path = tmp_path / "ppo.yaml"
    path.write_text(PPO_FILE)
    return subprocess.run(
        [sys.executable, "-m", "rllib_privacy.cli", "train", "-f", str(path), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def ray_tmp(tmp_path):
    """A private RAY_TMPDIR (no machine-wide ray_current_cluster) with short socket paths.

    Ray's sockets live under it and AF_UNIX paths are limited to 107 bytes: pytest's
    tmp_path is too deep for that.
    """
    path = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(ray_tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_TMPDIR"] = str(ray_tmp)
    env.update(extra)
    return env


def _error_line(done: subprocess.CompletedProcess) -> str:
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def test_dead_address_from_ray_address_variable_is_named(tmp_path, ray_tmp):
    address = f"127.0.0.1:{closed_port()}"
    done = rllib(tmp_path, "--storage-path", str(tmp_path), env=_env(ray_tmp, RAY_ADDRESS=address))
    assert done.returncode == 1
    line = _error_line(done)
    assert f"cannot join the Ray cluster at {address} (from the RAY_ADDRESS environment" in line
    assert "--ray-address local" in line and "Traceback" not in done.stderr


def test_dead_address_from_the_ray_start_file_is_named(tmp_path, ray_tmp):
    address = f"127.0.0.1:{closed_port()}"
    address_file = ray_tmp / "ray" / "ray_current_cluster"
    address_file.parent.mkdir(parents=True)
    address_file.write_text(address)
    done = rllib(tmp_path, "--storage-path", str(tmp_path), env=_env(ray_tmp))
    assert done.returncode == 1
    line = _error_line(done)
    assert f"at {address} (from {address_file}, written by `ray start`)" in line
    assert "--ray-address local" in line


def test_dead_explicit_address_is_named(tmp_path, ray_tmp):
    address = f"127.0.0.1:{closed_port()}"
    done = rllib(
        tmp_path, "--ray-address", address, "--storage-path", str(tmp_path), env=_env(ray_tmp)
    )
    assert done.returncode == 1
    assert f"at {address} (from --ray-address)" in _error_line(done)


@pytest.mark.slow
def test_trial_larger_than_a_local_instance_is_refused_with_ray_address_local(tmp_path, ray_tmp):
    """The AirRaid-teacher case: more CPUs than the machine has, even with --ray-address local."""
    runners = (os.cpu_count() or 2) + 8  # needs one more CPU per runner than exist
    done = rllib(
        tmp_path,
        "--ray-address",
        "local",
        "--storage-path",
        str(tmp_path),
        "--config",
        json.dumps({"num_env_runners": runners}),
        env=_env(ray_tmp),
    )
    assert done.returncode == 2, done.stderr[-2000:]
    line = _error_line(done)
    assert f"experiment 'ppo': one trial needs {runners + 1} CPUs" in line


@pytest.mark.slow
def test_ray_num_cpus_sizes_the_instance_ray_address_local_starts(tmp_path, ray_tmp):
    """The too-large error says to raise --ray-num-cpus: that works with --ray-address local."""
    done = rllib(
        tmp_path,
        "--ray-address",
        "local",
        "--ray-num-cpus",
        "1",
        "--storage-path",
        str(tmp_path),
        "--config",
        json.dumps({"num_env_runners": 1}),
        env=_env(ray_tmp),
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "one trial needs 2 CPUs" in _error_line(done)
    assert "but this Ray cluster has 1;" in _error_line(done)


def test_ray_failing_to_start_is_one_line_and_exit_1(monkeypatch, capsys):
    """Ray raises a bare Exception when its node times out starting (a loaded machine)."""
    from types import SimpleNamespace

    import ray

    from rllib_privacy.cli import launch

    def timed_out(*args, **kwargs):
        raise Exception("The current node timed out during startup.\nThis could happen ...")  # noqa: TRY002

    monkeypatch.setattr(ray, "init", timed_out)
    args = SimpleNamespace(ray_address="local", ray_num_cpus=None, ray_num_gpus=None, verbose=0)
    experiments = SimpleNamespace(experiments=[], path="x.yaml")
    assert launch.run_experiments(experiments, args, None) == 1
    assert capsys.readouterr().err == (
        "error: cannot start Ray: The current node timed out during startup. This could happen "
        "...\n"
    )
