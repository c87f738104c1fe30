"""`rllib train` reports bad input before importing Ray, torch, Tune or gymnasium.

Each case runs the command in a fresh interpreter and then lists the heavy modules that
interpreter imported: a check that needs none of them must not pay for them (seconds).
The import footprint is asserted, not a time (timings depend on the machine's load;
``benchmarks/cli_error_latency.py`` prints them).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rllib_privacy.errors import ExperimentFileError
from rllib_privacy.experiments import load_experiment_file, precheck_experiments

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("ray", "torch", "gymnasium", "ray.tune", "ray.rllib")

_PROBE = textwrap.dedent(
    """
    import json, sys
    from rllib_privacy.cli.train import rllib_main
    code = rllib_main(sys.argv[1:])
    heavy = [m for m in {heavy!r} if m in sys.modules]
    print(json.dumps({{"code": code, "heavy": heavy}}))
    """
).format(heavy=HEAVY)


@pytest.fixture
def current_table() -> None:
    """Skip when the key table is older than the config classes (then it is not used).

    In a working tree where a config class was just edited the checks wait for the full
    validation by design; tests/plugins/test_config_key_table.py fails until the table
    is regenerated, so a stale table cannot pass unnoticed.
    """
    from rllib_privacy.experiments import key_table

    if not key_table.is_current(json.loads(key_table.TABLE_PATH.read_text())):
        pytest.skip("config_keys.json is older than the config classes: run "
                    "`python -m rllib_privacy.experiments.key_table --write`")  # fmt: skip


def run_probe(*args: str, cwd: Path) -> tuple[int, list[str], str]:
    """Run `rllib ARGS` in a fresh interpreter; (exit code, heavy modules, stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["code"], result["heavy"], done.stderr


def _write(tmp_path: Path, config: str, run: str = "LDPA3C") -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"exp:\n  run: {run}\n  stop: {{training_iteration: 1}}\n  config:\n    {config}\n"
    )
    return str(path)


CASES = {
    "missing file": (None, "nowhere.yaml: file not found"),
    "unknown key": (
        "lrr: 0.1",
        "config key 'lrr' is not known to LDPA3CConfig; did you mean 'lr'?",
    ),
    "wrong kind": ("privacy_epsilon: abc", "config key 'privacy_epsilon' must be a number"),
    "bool as number": ("privacy_debias: 3", "config key 'privacy_debias' must be true or false"),
    "grid value": (
        "privacy_mechanism: {grid_search: [laplace, 7]}",
        "config key 'privacy_mechanism' must be a string, got 7",
    ),
    "unknown evaluation key": (
        "evaluation_config: {explor: false}",
        "evaluation_config key 'explor' is not known to LDPA3CConfig; did you mean 'explore'?",
    ),
    # Values the config class refuses on their own: the table's probed rules.
    "negative epsilon": (
        "privacy_epsilon: -1",
        "config key 'privacy_epsilon' must be > 0.0, got -1",
    ),
    "zero epsilon": ("privacy_epsilon: 0", "config key 'privacy_epsilon' must be > 0.0, got 0"),
    "unknown mechanism": (
        "privacy_mechanism: laplase",
        "config key 'privacy_mechanism' must be one of ['laplace', 'prs', 'privunitg', "
        "'privunit2', 'none'], got 'laplase'",
    ),
    "zero for a key without a default": (
        "aggregator_max_buffer: 0",
        "config key 'aggregator_max_buffer' must be an integer >= 1, got 0",
    ),
    "negative value in a grid": (
        "privacy_epsilon: {grid_search: [1, -2]}",
        "config key 'privacy_epsilon' must be > 0.0, got -2",
    ),
}


def test_a_pate_value_is_refused_before_ray(tmp_path, current_table):
    """PATE's rules were probed with a stand-in teacher path; the user's path is not read."""
    path = _write(
        tmp_path, "{pate_teacher_checkpoints: /nowhere, pate_epsilon_budget: -1}", "PATEPPO"
    )
    code, heavy, stderr = run_probe("train", "-f", path, cwd=tmp_path)
    assert (code, heavy) == (2, [])
    assert "config key 'pate_epsilon_budget' must be a finite number > 0.0, got -1" in stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_is_reported_before_anything_heavy_is_imported(tmp_path, case, request):
    config, expected = CASES[case]
    if config is not None:
        request.getfixturevalue("current_table")
    path = "nowhere.yaml" if config is None else _write(tmp_path, config)
    code, heavy, stderr = run_probe("train", "-f", path, cwd=tmp_path)
    assert code == 2
    assert heavy == []
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith("error: ") and expected in stderr


def test_a_schedule_key_takes_a_number_or_a_schedule_before_ray(tmp_path, current_table):
    """kickstart_coeff takes RLlib's schedule format; a string is still the wrong kind."""
    schedule = {"exp": {"run": "KickstartPPO", "config": {"kickstart_coeff": [[0, 1.0], [9, 0]]}}}
    precheck_experiments(schedule, path="exp.yaml")  # passes the cheap checks
    precheck_experiments(
        {"exp": {"run": "KickstartPPO", "config": {"kickstart_coeff": 2.0}}}, path="exp.yaml"
    )
    path = _write(tmp_path, "kickstart_coeff: fast", run="KickstartPPO")
    code, heavy, stderr = run_probe("train", "-f", path, cwd=tmp_path)
    assert (code, heavy) == (2, [])
    assert "config key 'kickstart_coeff' must be a number or a schedule" in stderr


def test_unknown_algorithm_is_reported_before_ray(tmp_path, current_table):
    path = _write(tmp_path, "lr: 0.1", run="LDPA3D")
    code, heavy, stderr = run_probe("train", "-f", path, cwd=tmp_path)
    assert (code, heavy) == (2, [])
    assert "unknown algorithm 'LDPA3D' in 'run'; did you mean 'LDPA3C'?" in stderr


def test_bad_config_option_is_reported_before_ray(tmp_path, current_table):
    path = _write(tmp_path, "lr: 0.1")
    code, heavy, stderr = run_probe(
        "train", "-f", path, "--config", '{"privacy_epsilonn": 1}', cwd=tmp_path
    )
    assert (code, heavy) == (2, [])
    assert "config key 'privacy_epsilonn' is not known" in stderr


@pytest.mark.parametrize("kind", ["proc", "under a file"])
def test_unwritable_storage_path_is_one_line_and_exit_2(tmp_path, kind):
    path = _write(tmp_path, "lr: 0.1")
    if kind == "proc":
        storage, expected = "/proc/rllib_privacy_x", "cannot write results to /proc/rllib_privacy_x"
    else:
        (tmp_path / "a_file").write_text("x")
        storage = str(tmp_path / "a_file" / "results")
        expected = f"{tmp_path / 'a_file'} is a regular file, not a folder"
    code, heavy, stderr = run_probe("train", "-f", path, "--storage-path", storage, cwd=tmp_path)
    assert (code, heavy) == (2, [])
    assert stderr.splitlines() == [stderr.strip()]
    assert stderr.startswith(f"error: --storage-path {storage}: ") and expected in stderr


def test_storage_path_of_the_file_is_checked_too(tmp_path):
    (tmp_path / "a_file").write_text("x")
    path = tmp_path / "exp.yaml"
    path.write_text(f"exp:\n  run: PPO\n  env: CartPole-v1\n  storage_path: {tmp_path}/a_file\n")
    code, heavy, stderr = run_probe("train", "-f", str(path), cwd=tmp_path)
    assert (code, heavy) == (2, [])
    assert "experiment 'exp': storage_path" in stderr and "is a regular file" in stderr


@pytest.mark.parametrize(
    "path", sorted((REPO / "tuned_configs").glob("*.yaml")), ids=lambda p: p.name
)
def test_shipped_files_pass_the_cheap_checks(path):
    precheck_experiments(load_experiment_file(path), path=str(path))


def test_a_stale_table_is_not_used(tmp_path, monkeypatch, current_table):
    """A config class edited after the table was written: a key it lacks is no error yet."""
    from rllib_privacy.experiments import key_table

    table = json.loads(key_table.TABLE_PATH.read_text())
    raw = {"exp": {"run": "LDPA3C", "config": {"privacy_new_key": 1}}}
    with pytest.raises(ExperimentFileError, match="'privacy_new_key' is not known"):
        precheck_experiments(raw, path="x.yaml")
    table["source_fingerprint"] = "0" * 64
    stale = tmp_path / "config_keys.json"
    stale.write_text(json.dumps(table))
    monkeypatch.setattr(key_table, "TABLE_PATH", stale)
    key_table.load_table.cache_clear()
    try:
        precheck_experiments(raw, path="x.yaml")  # left to the full validation
    finally:
        key_table.load_table.cache_clear()


def test_subnormal_epsilon_is_refused_before_ray(tmp_path, current_table):
    path = _write(tmp_path, "privacy_epsilon: 1e-320")
    code, heavy, stderr = run_probe("train", "-f", path, cwd=tmp_path)
    assert (code, heavy) == (2, [])
    assert "config key 'privacy_epsilon' is 1e-320, a subnormal float" in stderr
    assert "the smallest meaningful value is 2.23e-308" in stderr


def test_epsilon_below_the_mechanisms_floor_is_refused_before_ray(tmp_path):
    """Legal (> 0, normal) but the noise overflows: the floor of the mechanism is named."""
    from rllib_privacy.experiments import load_experiments

    path = tmp_path / "exp.yaml"
    path.write_text(
        "exp:\n  run: LDPA3C\n  config: {privacy_mechanism: laplace, privacy_epsilon: 1.0e-200}\n"
    )
    with pytest.raises(ExperimentFileError) as caught:
        load_experiments(path)
    message = str(caught.value)
    assert "config key 'privacy_epsilon' is 1e-200" in message
    assert "the smallest ε per release with which 'laplace'" in message
    assert "the smallest meaningful privacy_epsilon here is" in message
