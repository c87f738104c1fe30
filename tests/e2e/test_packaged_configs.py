"""The shipped experiment files: `rllib train -f NAME`, `rllib-privacy configs`, the wheel.

The slow test builds the wheel offline, installs it into a fresh venv that reuses this
environment's dependencies (no downloads), and runs the quick start's first iteration from
a folder outside the repository.
"""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from rllib_privacy.cli import tools_main
from rllib_privacy.cli.common import find_experiment_file, shipped_configs
from rllib_privacy.errors import ExperimentFileError

REPO = Path(__file__).resolve().parents[2]


def test_every_repository_config_is_shipped():
    shipped = shipped_configs()
    assert set(shipped) == {p.stem for p in (REPO / "tuned_configs").glob("*.yaml")}
    assert shipped["ldp_a3c"].read_text() == (REPO / "tuned_configs/ldp_a3c.yaml").read_text()


def test_a_name_finds_the_shipped_file_and_an_existing_path_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    expected = shipped_configs()["ldp_a3c"]
    for name in ("ldp_a3c", "ldp_a3c.yaml", "tuned_configs/ldp_a3c.yaml"):
        assert Path(find_experiment_file(name)) == expected
    (tmp_path / "ldp_a3c.yaml").write_text("mine: {run: PPO}\n")
    assert find_experiment_file("ldp_a3c.yaml") == "ldp_a3c.yaml"


def test_an_unknown_name_lists_the_shipped_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ExperimentFileError) as caught:
        find_experiment_file("ldp_a3d")
    message = str(caught.value)
    assert message.startswith("ldp_a3d: file not found, and not the name of a shipped")
    assert "did you mean 'ldp_a3c'?" in message and "pate_ppo_cartpole" in message
    with pytest.raises(ExperimentFileError, match=r"^elsewhere/x.yaml: file not found$"):
        find_experiment_file("elsewhere/x.yaml")


def test_configs_list_and_copy(tmp_path, capsys):
    assert tools_main(["configs", "list"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert len(listing) == len(shipped_configs())
    assert any(line.startswith("ldp_a3c ") and "LDPA3C" in line for line in listing)
    assert tools_main(["configs", "copy", "ldp_a3c", str(tmp_path)]) == 0
    copied = tmp_path / "ldp_a3c.yaml"
    assert copied.read_text() == shipped_configs()["ldp_a3c"].read_text()
    assert tools_main(["configs", "copy", "ldp_a3c", str(tmp_path)]) == 2  # exists
    assert "pass --force" in capsys.readouterr().err
    assert tools_main(["configs", "copy", "ldp_a3c", str(copied), "--force"]) == 0
    assert tools_main(["configs", "copy", "nope"]) == 2
    assert "'nope' is not a shipped experiment file" in capsys.readouterr().err


def _copy_source(dest: Path) -> None:
    """What the wheel is built from (the repository's files, the symlink kept)."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("rllib_privacy", "tuned_configs"):
        shutil.copytree(REPO / name, dest / name, symlinks=True, ignore=ignore)


def _run(*args: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.slow
def test_wheel_runs_the_quick_start_outside_the_repository(tmp_path):
    source, dist, venv, work = (tmp_path / n for n in ("src", "dist", "venv", "work"))
    _copy_source(source)
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", dist, source, cwd=tmp_path)  # fmt: skip
    (wheel,) = dist.glob("rllib_privacy-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "rllib_privacy/tuned_configs/ldp_a3c.yaml" in names
    assert "rllib_privacy/experiments/config_keys.json" in names
    assert len([n for n in names if n.startswith("rllib_privacy/tuned_configs/")]) == len(
        list((REPO / "tuned_configs").glob("*.yaml"))
    )

    # A fresh venv seeing this environment's packages (Ray, torch, ...) through a .pth
    # line: no downloads. The repository's editable install is not active there (a .pth
    # in a folder named by a .pth line is not run), so the wheel's copy is imported.
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                   cwd=tmp_path).stdout.strip()  # fmt: skip
    outer = [p for p in [*site.getsitepackages(), sysconfig.get_path("purelib")] if p]
    (Path(purelib) / "outer_env.pth").write_text("\n".join(dict.fromkeys(outer)) + "\n")
    _run(python, "-m", "pip", "install", "--no-deps", "--no-index", wheel, cwd=tmp_path)
    work.mkdir()
    where = _run(python, "-c", "import rllib_privacy; print(rllib_privacy.__file__)", cwd=work)
    assert where.stdout.strip().startswith(str(venv)), where.stdout

    listing = _run(venv / "bin" / "rllib-privacy", "configs", "list", cwd=work).stdout
    assert "ldp_a3c " in listing
    done = _run(
        venv / "bin" / "rllib", "train", "-f", "ldp_a3c",
        "--stop", json.dumps({"training_iteration": 1}),
        "--storage-path", work / "results", "--ray-num-cpus", "2",
        cwd=work,
    )  # fmt: skip
    assert "trials: 1 finished, 0 errored, 0 unfinished" in done.stdout + done.stderr
    assert list((work / "results").glob("*/*/result.json"))
