"""The ILM YAMLs through `rllib train -f`, and `rllib-privacy ilm-evaluate` on their checkpoint."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from cli_helpers import scalar_tags as _scalar_tags
from cli_helpers import train_one_iteration

REPO = Path(__file__).resolve().parents[2]
TINY = {
    "num_steps_sampled_before_learning_starts": 20,
    "min_sample_timesteps_per_iteration": 60,
    "train_batch_size_per_learner": 8,
    "model_config": {"fcnet_hiddens": [16]},
    "num_envs_per_env_runner": 4,
}
#: The YAMLs' formulation, one sweep: short episodes finish within the iteration's 60 steps.
IMPROVE = ["--formulation", "improve", "--passes", "1", "--actions", "geometric:12"]


def _evaluate(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """Run ``rllib-privacy ilm-evaluate`` in this process: (exit code, stdout, stderr)."""
    from rllib_privacy.cli import tools_main

    code = tools_main(["ilm-evaluate", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _train(path: str, storage: Path, env_config: dict) -> subprocess.CompletedProcess:
    return train_one_iteration(path, storage, {**TINY, "env_config": env_config})


@pytest.fixture(scope="module")
def tiny_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "heights.csv"
    heights = [170, 175, 175, 180, 180, 180, 185, 185, 190, 201, 180, 175]
    path.write_text("id,height\n" + "".join(f"{i},{h}\n" for i, h in enumerate(heights)))
    return path


@pytest.fixture(scope="module")
def trained_checkpoint(tmp_path_factory: pytest.TempPathFactory, tiny_csv: Path) -> Path:
    storage = tmp_path_factory.mktemp("ilm_run")
    result = _train(
        "tuned_configs/ilm_dqn.yaml",
        storage,
        {"data_path": str(tiny_csv), "column": "height", "epsilon": 0.5, "bins": 10, "passes": 1},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    tags = _scalar_tags(storage)
    for tag in (
        "ilm/kl_ratio",
        "ilm/pdp_violations",
        "ilm/pdp_pass_rate",
        "kl_ratio",
        "ilm/kl_ratio_repaired",
        "ilm/repaired_instances",
    ):
        assert f"ray/tune/{tag}" in tags, tag
    return next(storage.rglob("checkpoint_000000"))


@pytest.mark.ray
@pytest.mark.slow
def test_evaluate_reports_pdp_and_kl_against_laplace(
    trained_checkpoint: Path, tiny_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code, out, err = _evaluate(
        capsys,
        "--checkpoint",
        str(trained_checkpoint),
        "--data",
        str(tiny_csv),
        "--column",
        "height",
        "--epsilon",
        "0.5",
        "--output-dir",
        str(tmp_path),
        *IMPROVE,
    )
    assert code in (0, 1), err[-3000:]
    summary = json.loads((tmp_path / "ilm_evaluation.json").read_text())
    assert (tmp_path / "ilm_evaluation.png").stat().st_size > 1000
    assert summary["n"] == 12 and sum(summary["action_counts"]) == 12
    assert code == (0 if summary["pdp_violations"] == 0 else 1)
    assert summary["kl_ratio_policy"] == pytest.approx(summary["kl_policy"] / summary["kl_laplace"])
    assert "uniform Laplace" in out and "pDP check:" in out
    # The released assignment is the repaired one: never a violation, never a narrower scale.
    assert summary["pdp_violations_released"] == 0
    assert summary["repaired_instances"] >= (1 if summary["pdp_violations"] else 0)
    assert summary["kl_ratio_released"] == pytest.approx(
        summary["kl_released"] / summary["kl_laplace"]
    )
    assert summary["kl_greedy"] <= summary["kl_best_single"]
    assert "released (repaired" in out and "greedy per-instance" in out
    # An improve policy's own scales never violate: every move was checked.
    assert code == 0 and summary["pdp_violations"] == 0 and summary["repaired_instances"] == 0
    # An action set that does not match the trained module's observation size is refused
    # (improve: encoding 16 + share 1 + one-hot 13 + KL changes 12 + 3 = 45).
    code, _, err = _evaluate(
        capsys,
        "--checkpoint", str(trained_checkpoint), "--data", str(tiny_csv), "--column", "height",
        "--epsilon", "0.5", *IMPROVE[:4], "--actions", "geometric:6",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert code == 2 and "expects observations of size 45" in err
    # Without the options, the checkpoint's env_config says how it was trained (improve,
    # 1 pass, 12 geometric scales): the same rollout as above.
    default_dir = tmp_path / "from_checkpoint"
    code, _, err = _evaluate(
        capsys,
        "--checkpoint", str(trained_checkpoint), "--data", str(tiny_csv), "--column", "height",
        "--epsilon", "0.5", "--output-dir", str(default_dir),
    )  # fmt: skip
    assert code == 0, err[-3000:]
    again = json.loads((default_dir / "ilm_evaluation.json").read_text())
    assert again["action_counts"] == summary["action_counts"]
    assert again["kl_ratio_released"] == pytest.approx(summary["kl_ratio_released"])
    # An improve policy rolled out as assign would run and mean nothing: refused by name.
    code, _, err = _evaluate(
        capsys,
        "--checkpoint", str(trained_checkpoint), "--data", str(tiny_csv), "--column", "height",
        "--epsilon", "0.5", "--formulation", "assign", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert code == 2 and "--formulation assign: the checkpoint was trained with" in err, err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"checkpoint": "missing"}, "is not a directory"),
        ({"checkpoint": "empty"}, "holds no RLModule"),
        ({"data": "missing.csv"}, "--data: "),
        ({"epsilon": "0"}, "--epsilon must be a finite number > 0"),
    ],
)
def test_evaluate_bad_input_exits_2(
    change: dict, message: str, tmp_path: Path, tiny_csv: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "empty").mkdir()
    args = {"checkpoint": str(tmp_path / "empty"), "data": str(tiny_csv), "epsilon": "0.5"}
    args.update({k: str(tmp_path / v) if k != "epsilon" else v for k, v in change.items()})
    code, _, err = _evaluate(capsys, *[f"--{k}={v}" for k, v in args.items()])
    assert code == 2 and message in err, err


@pytest.mark.ray
@pytest.mark.slow
def test_sweep_yaml_runs_one_iteration(tmp_path: Path) -> None:
    # One ε of the grid (the override replaces the grid_search) on 10 bundled ages, so that
    # each of the 4 vectorized envs finishes an episode within the iteration's 60 steps.
    result = _train(
        "tuned_configs/ilm_dqn_sweep.yaml",
        tmp_path,
        {"epsilon": 1.0, "max_instances": 10, "passes": 1},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    last = json.loads(next(tmp_path.rglob("result.json")).read_text().splitlines()[-1])
    assert list(last)[:2] == ["kl_ratio", "pdp_violations"]
    assert 0.0 <= last["ilm"]["pdp_pass_rate"] <= 1.0


@pytest.mark.parametrize(
    ("env_config", "expected"),
    [
        ({"epsilonn": 1.0}, "env_config key 'epsilonn' is not known to InstanceWiseLaplace"),
        ({"column": "height"}, "env_config key 'column' must be a column of dataset 'diabetes'"),
        ({"data_path": "no/such.csv"}, "env_config key 'data_path': cannot read"),
    ],
)
def test_bad_env_config_is_named_before_ray_starts(
    env_config: dict, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    import ray

    from rllib_privacy.cli import rllib_main

    spec = yaml.safe_load((REPO / "tuned_configs/ilm_dqn.yaml").read_text())
    spec["ilm-dqn"]["config"]["env_config"].update(env_config)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(spec))
    was_running = ray.is_initialized()
    assert rllib_main(["train", "-f", str(bad)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "ilm-dqn" in err, err
    assert ray.is_initialized() == was_running  # rejected before Ray was started


def test_actions_option_is_parsed() -> None:
    from rllib_privacy.cli.ilm_evaluate import parse_actions

    assert parse_actions(None) is None
    assert parse_actions("geometric:12") == "geometric:12"
    assert parse_actions("3/eps, 0.5,0.005") == ("3/eps", 0.5, 0.005)


def test_trained_settings_come_from_the_options_then_the_checkpoint() -> None:
    import argparse

    from rllib_privacy.cli.ilm_evaluate import resolve_trained_settings
    from rllib_privacy.errors import PrivacyConfigError

    def options(**values: object) -> argparse.Namespace:
        return argparse.Namespace(
            **{"formulation": None, "passes": None, "actions": None, **values}
        )

    assert resolve_trained_settings(options(), None) == ("assign", 2, None)  # a bare RLModule
    recorded = {"formulation": "improve", "passes": 4, "actions": [0.5, "1/eps"]}
    assert resolve_trained_settings(options(), recorded) == ("improve", 4, (0.5, "1/eps"))
    assert resolve_trained_settings(options(passes=1, actions="geometric:6"), recorded) == (
        "improve",
        1,
        "geometric:6",
    )
    assert resolve_trained_settings(options(), {"bins": 10})[0] == "assign"  # paper's MDP
    with pytest.raises(PrivacyConfigError, match="--formulation improve: the checkpoint was"):
        resolve_trained_settings(options(formulation="improve"), {"bins": 10})


def test_another_algorithms_checkpoint_is_named_before_its_module_is_read(
    tmp_path: Path, tiny_csv: Path, capsys: pytest.CaptureFixture
) -> None:
    """An LDPA3C checkpoint: its algorithm and env are named (was "'bins' must be ... -12")."""
    import pickle

    from rllib_privacy.algorithms.ldp_a3c import LDPA3C

    config = {"env": "rllib_privacy/CartPoleGravity-v0", "env_config": {}}
    with (tmp_path / "class_and_ctor_args.pkl").open("wb") as file:
        pickle.dump({"class": LDPA3C, "ctor_args_and_kwargs": ((config,), {})}, file)
    code, _, err = _evaluate(
        capsys, f"--checkpoint={tmp_path}", f"--data={tiny_csv}", "--epsilon=0.5"
    )
    assert code == 2
    assert "is not an instance-wise Laplace checkpoint: it was written by LDPA3C on env " in err
    assert "'rllib_privacy/CartPoleGravity-v0'" in err and "bins" not in err
