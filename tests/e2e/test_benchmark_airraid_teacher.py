"""benchmarks/airraid_teacher.py: what it reads from a teacher's Tune folder."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.e2e.benchmark_modules import benchmark_fixture

bench = benchmark_fixture("airraid_teacher")


def _experiment(tmp_path: Path, trial: str, returns: list[float | None]) -> Path:
    folder = tmp_path / "kickstart-teacher-airraid" / trial
    folder.mkdir(parents=True)
    rows = [
        {
            "num_env_steps_sampled_lifetime": 4000.0 * (i + 1),
            "env_runners": {} if value is None else {"episode_return_mean": value},
        }
        for i, value in enumerate(returns)
    ]
    (folder / "result.json").write_text("\n".join(json.dumps(row) for row in rows))
    return folder.parent


@pytest.mark.parametrize("trainable", ["PipelinedPPO", "PPO"])
def test_the_table_names_the_algorithm_that_trained_the_teacher(
    bench: ModuleType, tmp_path: Path, trainable: str
) -> None:
    trial = f"{trainable}_rllib_privacy_ALE_AirRaid-ram-v5_c5041_00000_0_2026-11-28_12-25-17"
    assert bench.trainable_of(_experiment(tmp_path, trial, [1.0])) == trainable


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"seed": 2, "pipeline_sampling": False}, "PipelinedPPO with pipeline_sampling: false"),
        ({"seed": 2, "pipeline_sampling": True}, "PipelinedPPO"),
        ({"seed": 2}, "PipelinedPPO"),
    ],
)
def test_the_table_names_the_trials_own_seed_and_switches(
    bench: ModuleType, tmp_path: Path, params: dict[str, object], expected: str
) -> None:
    experiment = _experiment(tmp_path, "PipelinedPPO_x", [1.0])
    (experiment / "PipelinedPPO_x" / "params.json").write_text(json.dumps(params))
    assert bench.trial_settings(experiment) == (
        f"{expected}, (64, 64), 4,000,000 env steps, seed 2"
    )


def test_iterations_without_an_ended_episode_carry_no_return(
    bench: ModuleType, tmp_path: Path
) -> None:
    experiment = _experiment(tmp_path, "PPO_x", [100.0, None, float("nan"), 300.0])
    curve, last = bench.read_curve(experiment)
    assert curve == [(4000.0, 100.0), (16000.0, 300.0)]
    assert last["num_env_steps_sampled_lifetime"] == 16000.0


def test_take_off_is_when_the_running_mean_first_reaches_the_level(bench: ModuleType) -> None:
    curve = [(1000.0 * i, value) for i, value in enumerate([0, 0, 30, 30, 30, 0, 60])]
    assert bench.first_reaching(curve, 20.0, iterations=3) == 3000.0  # mean(0, 30, 30)
    assert bench.first_reaching(curve, 30.0, iterations=3) == 4000.0
    assert bench.first_reaching(curve, 50.0, iterations=3) is None
