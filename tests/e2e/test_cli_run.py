"""`rllib train -f` on the shipped YAML files: real runs, TensorBoard, checkpoints, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_helpers import run_rllib, scalar_tags, train_one_iteration

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "tuned_configs").glob("*.yaml"))
#: Student YAMLs need a trained teacher first; tests/plugins/test_kickstart_ray.py dry-runs and
#: runs them with a teacher it trains.
NEEDS_TEACHER = {p for p in CONFIGS if "teacher_checkpoint:" in p.read_text()}


_rllib = run_rllib
_scalar_tags = scalar_tags


@pytest.mark.parametrize("path", sorted(set(CONFIGS) - NEEDS_TEACHER), ids=lambda p: p.name)
def test_every_shipped_yaml_validates(path: Path) -> None:
    # What `rllib train -f FILE --dry-run` checks, in this process (a subprocess per file
    # costs seconds of imports; test_cli_validation.py covers the dry-run command itself).
    from rllib_privacy.experiments import load_experiments

    experiment_file = load_experiments(path)
    assert experiment_file.experiments


@pytest.mark.ray
@pytest.mark.slow
def test_quick_start_yaml_runs_and_writes_tensorboard_and_checkpoint(tmp_path: Path) -> None:
    result = _rllib(
        "train",
        "-f",
        "tuned_configs/ldp_a3c.yaml",
        "--stop",
        json.dumps({"training_iteration": 1}),
        "--config",
        json.dumps({"aggregator_submissions_per_iteration": 256, "scoring_eval_episodes": 10}),
        "--storage-path",
        str(tmp_path),
        "--ray-num-cpus",
        "2",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"tensorboard --logdir {tmp_path}" in result.stdout
    # The driver prints one progress line per iteration with score, ε and throughput.
    line = next(ln for ln in result.stdout.splitlines() if "] iter 1 | submissions" in ln)
    # The quick start's private score: the window of debiased scores the criterion uses.
    assert "score(65,536)" in line and "eps/agent 1" in line and "subm/s" in line, line
    tags = _scalar_tags(tmp_path)
    for tag in (
        "privacy/epsilon_spent",
        "privacy/releases",
        "ldp/submissions",
        "ldp/noise_scale",
        "ldp/eval_return_mean",
        "privacy/epsilon_central_if_shuffled",
        "score_mean",
        "epsilon_per_agent",
    ):
        assert f"ray/tune/{tag}" in tags, tag
    assert list(tmp_path.rglob("checkpoint_000000")), "no checkpoint written"
    progress = next(tmp_path.rglob("result.json")).read_text().splitlines()
    last = json.loads(progress[-1])
    assert last["submissions"] >= 256 and last["epsilon_per_agent"] == 1.0


@pytest.mark.ray
@pytest.mark.parametrize(
    ("path", "overrides"),
    [
        (
            "tuned_configs/ldp_a3c_prs.yaml",
            {"aggregator_submissions_per_iteration": 20, "aggregator_max_buffer": 5},
        ),
        # Old key names on the command line still override the file's new ones.
        ("tuned_configs/ldp_a3c_laplace.yaml", {"submissions_per_iteration": 20}),
        (
            "tuned_configs/ldp_a3c_sweep.yaml",
            {"privacy_epsilon": 5.0, "aggregator_submissions_per_iteration": 20},
        ),
    ],
)
@pytest.mark.slow
def test_other_shipped_yamls_run_one_iteration(path: str, overrides: dict, tmp_path: Path) -> None:
    result = train_one_iteration(path, tmp_path, overrides, num_samples=1)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "ray/tune/privacy/epsilon_spent" in _scalar_tags(tmp_path)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"epsilonn": 5.0},
            "config key 'epsilonn' is not known to LDPA3CConfig; did you mean 'epsilon'",
        ),
        (
            {"privacy_mechanism": "gauss"},
            "config key 'privacy_mechanism' must be one of ['laplace', 'prs', 'privunitg', "
            "'privunit2', 'none']",
        ),
        ({"privacy_epsilon": 0}, "config key 'privacy_epsilon' must be > 0.0"),
    ],
)
def test_bad_key_or_value_is_named_before_ray_starts(
    change: dict, expected: str, tmp_path: Path
) -> None:
    spec = yaml.safe_load((REPO / "tuned_configs/ldp_a3c.yaml").read_text())
    spec["ldp-a3c-privunitg"]["config"].update(change)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(spec))
    result = _rllib("train", "-f", str(bad), timeout=120)
    assert result.returncode == 2
    assert expected in result.stderr, result.stderr
    assert str(bad) in result.stderr and "ldp-a3c-privunitg" in result.stderr
    assert "Traceback" not in result.stderr and "Started a local Ray" not in result.stderr


@pytest.mark.ray
def test_a_trial_bigger_than_the_local_cluster_is_an_error_not_a_hang() -> None:
    result = _rllib("train", "-f", "tuned_configs/ldp_a3c.yaml", "--ray-num-cpus", "1", timeout=180)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert "one trial needs 2 CPUs" in result.stderr and "--ray-num-cpus" in result.stderr
