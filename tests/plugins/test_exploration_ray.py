"""Count-based exploration on RLlib: reward shaping, global counts, checkpoints, YAMLs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from rllib_privacy.errors import PrivacyConfigError

REPO = Path(__file__).resolve().parents[2]
_SMALL_PPO = {
    "train_batch_size_per_learner": 32,
    "minibatch_size": 32,
    "num_epochs": 1,
    "num_env_runners": 0,
    "num_envs_per_env_runner": 1,
}
EXPLORATION_YAMLS = {
    # file: config overrides that make one iteration small
    "simhash_ppo_mountaincar.yaml": _SMALL_PPO,
    "simhash_ppo_frozenlake.yaml": _SMALL_PPO,
    "simhash_ppo_mountaincar_sweep.yaml": {
        **_SMALL_PPO,
        "count_exploration_config": {"num_bits": 32, "beta": 0.1},  # one grid point
    },
    "simhash_dqn_mountaincar.yaml": {
        "train_batch_size_per_learner": 16,
        "num_env_runners": 0,
        "num_steps_sampled_before_learning_starts": 0,
        "min_sample_timesteps_per_iteration": 20,
    },
    "ae_ppo_atari_ram.yaml": {
        **_SMALL_PPO,
        "count_exploration_config": {"ae_train_steps": 2, "ae_code_bits": 32, "ae_batch_size": 16},
    },
    "bass_ppo_atari.yaml": _SMALL_PPO,
    "smarthash_ppo_montezuma.yaml": _SMALL_PPO,
}


def _small_ppo_config(num_env_runners: int):
    from rllib_privacy.algorithms.count_exploration import ExplorationPPOConfig
    from rllib_privacy.envs import SPARSE_MOUNTAIN_CAR_ENV_ID

    return (
        ExplorationPPOConfig()
        .environment(SPARSE_MOUNTAIN_CAR_ENV_ID, env_config={"max_episode_steps": 50})
        .env_runners(num_env_runners=num_env_runners, num_cpus_per_env_runner=0.5)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .count_based_exploration(count_exploration={"num_bits": 16, "beta": 0.5})
    )


@pytest.mark.ray
@pytest.mark.slow
def test_ppo_trains_on_bonus_reports_extrinsic_counts_globally_and_restores(
    ray_session, tmp_path: Path
) -> None:
    algo = _small_ppo_config(num_env_runners=2).build_algo()
    try:
        result = algo.train()
        section = result["exploration"]
        # Sparse reward: the random policy never reaches the goal within 50 steps.
        assert result["env_runners"]["episode_return_mean"] == 0.0
        assert section["extrinsic_return_mean"] == result["extrinsic_return_mean"] == 0.0
        assert section["bonus_mean"] > 0 and section["extrinsic_reward_mean"] == 0.0
        assert section["trained_reward_mean"] == pytest.approx(section["bonus_mean"], rel=1e-5)
        assert list(result)[:3] == ["extrinsic_return_mean", "bonus_mean", "unique_codes"]
        # One table counts what both EnvRunners sampled.
        counter = algo.learner_group._learner.count_bonus.exploration.counter
        sampled = result["num_env_steps_sampled_lifetime"]
        assert algo.env_runner_group.num_healthy_remote_workers() == 2
        assert counter.total == sampled == section["counted_states"] >= 200
        assert 1 <= section["unique_codes"] == counter.num_unique <= sampled
        saved = counter.state_dict()
        algo.save_to_path(str(tmp_path))
    finally:
        algo.stop()
    restored = _small_ppo_config(num_env_runners=0).build_algo()
    try:
        restored.restore_from_path(str(tmp_path))
        counter = restored.learner_group._learner.count_bonus.exploration.counter
        assert counter.total == saved["total"]
        np.testing.assert_array_equal(counter.state_dict()["counts"], saved["counts"])
        after = restored.train()
        assert after["exploration"]["counted_states"] == saved["total"] + (
            after["num_env_steps_sampled_lifetime"] - sampled
        )
    finally:
        restored.stop()


@pytest.mark.ray
def test_dqn_counts_a_state_when_collected_not_when_replayed(ray_session, tmp_path: Path) -> None:
    from rllib_privacy.algorithms.count_exploration import ExplorationDQNConfig
    from rllib_privacy.envs import SPARSE_MOUNTAIN_CAR_ENV_ID

    config = (
        ExplorationDQNConfig()
        .environment(SPARSE_MOUNTAIN_CAR_ENV_ID, env_config={"max_episode_steps": 50})
        .env_runners(num_env_runners=0, rollout_fragment_length=10)
        .training(
            train_batch_size_per_learner=32,
            num_steps_sampled_before_learning_starts=0,
            training_intensity=4.0,  # every sampled step is replayed ~4 times
        )
        .reporting(min_sample_timesteps_per_iteration=40)
        .count_based_exploration(count_exploration={"num_bits": 16, "beta": 0.5})
    )
    algo = config.build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        learners = result["learners"]["__all_modules__"]
        sampled = result["num_env_steps_sampled_lifetime"]
        assert learners["num_env_steps_trained_lifetime"] > 2 * sampled
        assert algo.count_bonus.exploration.counter.total == sampled
        assert result["exploration"]["counted_states"] == sampled
        # The bonus is stored with the sample: replayed rewards include it.
        replayed = algo.local_replay_buffer.sample(num_items=64)
        rewards = np.concatenate([np.asarray(e.get_rewards()) for e in replayed])
        assert np.all(rewards > 0) and np.all(rewards <= 0.5)
        algo.save_to_path(str(tmp_path))
        total = algo.count_bonus.exploration.counter.total
    finally:
        algo.stop()
    restored = config.build_algo()
    try:
        restored.restore_from_path(str(tmp_path))
        assert restored.count_bonus.exploration.counter.total == total
    finally:
        restored.stop()


def test_config_rejects_bad_keys_and_several_learners() -> None:
    from rllib_privacy.algorithms.count_exploration import ExplorationPPOConfig

    with pytest.raises(PrivacyConfigError, match=r"'num_bit'.*did you mean 'num_bits'"):
        ExplorationPPOConfig().update_from_dict({"count_exploration_config": {"num_bit": 3}})
    # A typo of the old name: the suggestion is the new one.
    with pytest.raises(
        PrivacyConfigError, match=r"'count_exploratoin'.*'count_exploration_config'"
    ):
        ExplorationPPOConfig().update_from_dict({"count_exploratoin": {}})
    with pytest.raises(PrivacyConfigError, match="num_learners must be 0 or 1"):
        ExplorationPPOConfig.validate_config_dict({"num_learners": 2})
    with pytest.raises(PrivacyConfigError, match="num_learners must be 0 or 1"):
        ExplorationPPOConfig().learners(num_learners=2).validate_count_exploration()


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rllib_privacy.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_bad_nested_key_is_named_before_ray_starts(tmp_path: Path) -> None:
    import ray

    from rllib_privacy.errors import ExperimentFileError
    from rllib_privacy.experiments import load_experiments

    spec = yaml.safe_load((REPO / "tuned_configs/simhash_ppo_mountaincar.yaml").read_text())
    name = next(iter(spec))
    spec[name]["config"]["count_exploration_config"]["betta"] = 0.1
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(spec))
    started = ray.is_initialized()
    with pytest.raises(ExperimentFileError) as error:
        load_experiments(bad)  # what `rllib train -f` runs before it starts Ray
    message = str(error.value)
    assert str(bad) in message and name in message
    assert "count_exploration_config key 'betta'" in message and "did you mean 'beta'" in message
    assert ray.is_initialized() == started


@pytest.mark.ray
@pytest.mark.parametrize("name", sorted(EXPLORATION_YAMLS))
def test_shipped_exploration_yaml_trains_one_iteration(ray_session, name: str) -> None:
    """Each YAML, read by `rllib train`'s own loader (overrides as --config), trains once.

    In-process instead of one CLI run per file: a Tune trial per file would start its own
    worker processes (the CLI path is covered by the next test on the headline file).
    """
    from ray.tune.registry import get_trainable_cls

    from rllib_privacy.experiments import Overrides, load_experiments

    loaded = load_experiments(
        REPO / "tuned_configs" / name,
        overrides=Overrides(config=EXPLORATION_YAMLS[name]),
        has_gpus=False,
    )
    for experiment in loaded.experiments:
        config = get_trainable_cls(experiment.run).get_default_config()
        algo = config.update_from_dict(experiment.param_space).build_algo()
        try:
            result = algo.train()
        finally:
            algo.stop()
        section = result["exploration"]
        assert section["bonus_mean"] > 0 and section["counted_states"] >= 16, section
        if "ae" in name:
            assert section["ae_reconstruction_loss"] > 0
            assert 0.0 <= section["ae_bit_flip_rate"] <= 1.0


@pytest.mark.ray
@pytest.mark.slow
def test_headline_yaml_runs_through_the_cli_with_tensorboard_and_checkpoint(
    tmp_path: Path,
) -> None:
    result = _cli(
        "train",
        "-f",
        "tuned_configs/simhash_ppo_mountaincar.yaml",
        "--stop",
        json.dumps({"training_iteration": 1}),
        "--config",
        # 16-step episodes: some end within the iteration, so there is a return to report.
        json.dumps({**_SMALL_PPO, "env_config": {"max_episode_steps": 16}}),
        "--storage-path",
        str(tmp_path),
        "--ray-num-cpus",
        "2",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    from tensorboard.backend.event_processing import event_accumulator

    events = next(tmp_path.rglob("events.out.tfevents*"))
    # The trial folder: Tune's event file and the privacy layout's, one TensorBoard run.
    accumulator = event_accumulator.EventAccumulator(str(events.parent))
    accumulator.Reload()
    tags = set(accumulator.Tags()["scalars"])
    for tag in (
        "extrinsic_return_mean",
        "bonus_mean",
        "unique_codes",
        "exploration/extrinsic_return_mean",
        "exploration/bonus_mean",
        "exploration/unique_codes",
    ):
        assert f"ray/tune/{tag}" in tags, tag
    assert list(tmp_path.rglob("checkpoint_000000")), "no checkpoint written"
