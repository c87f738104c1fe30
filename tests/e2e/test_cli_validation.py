"""Fast tests of `rllib train` argument and experiment-file validation (Ray never starts)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from ray.rllib.algorithms.ppo import PPO, PPOConfig

from rllib_privacy.cli import rllib_main, tools_main
from rllib_privacy.cli.summary import trial_counts
from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError
from rllib_privacy.experiments import Overrides, deep_merge, load_experiments

PPO_EXPERIMENT = """
    ppo-cartpole:
      run: PPO
      env: CartPole-v1
      stop: {training_iteration: 1}
      config:
        num_env_runners: 0
        train_batch_size_per_learner: 256
        minibatch_size: 64
        num_epochs: 1
"""


class HookedConfig(PPOConfig):
    """A config class using both validation hooks of rllib_privacy.experiments."""

    config_dict_keys = {"learner_config_dict": ("noise_std",)}

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or HookedPPO)
        self.env = "CartPole-v1"

    @classmethod
    def validate_config_dict(cls, d):
        if d.get("lr", 0) > 1:
            raise PrivacyConfigError(f"config key 'lr' must be <= 1, got {d['lr']}")


class HookedPPO(PPO):
    @classmethod
    def get_default_config(cls):
        return HookedConfig()


@pytest.fixture
def hooked_ppo() -> str:
    from ray.tune import register_trainable

    register_trainable("HookedPPOForTest", HookedPPO)
    return "HookedPPOForTest"


@pytest.fixture(autouse=True)
def _ray_never_starts(monkeypatch):
    """Validation must not start Ray: any ray.init during the test is recorded as a failure.

    (Checking ``ray.is_initialized()`` afterwards would depend on test order, since other
    test files share a Ray instance in the same process.)
    """
    import ray

    calls = []
    monkeypatch.setattr(ray, "init", lambda *a, **k: calls.append((a, k)))
    yield
    assert not calls, "validation must not start Ray"


def write(tmp_path: Path, text: str, name: str = "exp.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def train(capsys, *args: str) -> tuple[int, str, str]:
    code = rllib_main(["train", *args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert err.startswith("error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err


def dry_run(capsys, path: str, *args: str) -> tuple[dict, str]:
    code, out, err = train(capsys, "-f", path, "--dry-run", "--ray-num-gpus", "0", *args)
    assert code == 0, err
    return yaml.safe_load(out), err


# --- the file itself ------------------------------------------------------------------


def test_malformed_yaml_names_file_and_line(tmp_path, capsys):
    path = write(tmp_path, "exp:\n  run: PPO\n  config: {lr: 0.1\n  stop: x\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, path, "line 4", "invalid YAML")


def test_malformed_json_names_file_and_line(tmp_path, capsys):
    path = write(tmp_path, '{"exp": {"run": "PPO",\n "env": }}', name="exp.json")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, path, "line 2", "invalid JSON")


def test_duplicate_yaml_key_is_rejected(tmp_path, capsys):
    path = write(tmp_path, "exp:\n  run: PPO\n  config: {lr: 0.1, lr: 0.2}\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, path, "line 3", "duplicate key 'lr'")


def test_missing_file(tmp_path, capsys):
    code, _, err = train(capsys, "-f", str(tmp_path / "nope.yaml"))
    assert_usage_error(code, err, "nope.yaml: file not found")


def test_top_level_must_be_a_mapping(tmp_path, capsys):
    path = write(tmp_path, "- run: PPO\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, path, "top level must be a non-empty mapping")


# --- experiment keys ------------------------------------------------------------------


def test_unknown_experiment_key_lists_allowed_and_suggests(tmp_path, capsys):
    path = write(tmp_path, "exp:\n  run: PPO\n  env: CartPole-v1\n  stopp: {}\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(
        code,
        err,
        f"{path}: experiment 'exp': unknown key 'stopp'",
        "did you mean 'stop'?",
        "allowed keys: run, env, stop, config",
    )


def test_legacy_experiment_key_gets_a_hint(tmp_path, capsys):
    path = write(tmp_path, "exp:\n  run: PPO\n  env: CartPole-v1\n  local_dir: /tmp\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, "unknown key 'local_dir' (use 'storage_path')")


def test_missing_run(tmp_path, capsys):
    path = write(tmp_path, "exp:\n  env: CartPole-v1\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, f"{path}: experiment 'exp': missing required key 'run'")


@pytest.mark.parametrize("name", ["PPPO", "ppo"])
def test_unknown_algorithm_lists_registered_and_suggests(tmp_path, capsys, name):
    path = write(tmp_path, f"exp:\n  run: {name}\n  env: CartPole-v1\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(
        code,
        err,
        f"unknown algorithm '{name}'",
        "did you mean 'PPO'?",
        "registered algorithms:",
        "DQN",
    )


def test_unknown_env_suggests(tmp_path, capsys):
    path = write(tmp_path, "exp:\n  run: PPO\n  env: CartPol-v1\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(
        code, err, "experiment 'exp': unknown env 'CartPol-v1'", "did you mean 'CartPole-v1'?"
    )


def test_env_given_twice_must_agree(tmp_path, capsys):
    path = write(tmp_path, "exp:\n  run: PPO\n  env: CartPole-v1\n  config: {env: Pendulum-v1}\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, "disagree")


def test_class_path_env_is_accepted(tmp_path, capsys):
    env = "gymnasium.envs.classic_control.cartpole.CartPoleEnv"
    path = write(tmp_path, f"exp:\n  run: PPO\n  config: {{env: {env}}}\n")
    spec, _ = dry_run(capsys, path)
    assert spec["exp"]["config"]["env"] == env
    exp = load_experiments(path, has_gpus=False).experiments[0]
    assert exp.class_path_envs == (env,)


# --- config keys and values -----------------------------------------------------------


def test_typo_config_key_is_named_with_suggestion(tmp_path, capsys):
    path = write(tmp_path, PPO_EXPERIMENT + "        lrr: 0.001\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(
        code,
        err,
        f"error: {path}: experiment 'ppo-cartpole': config key 'lrr' is not known to PPOConfig; "
        "did you mean 'lr'?; see PPOConfig for allowed keys",
    )


def test_typo_in_evaluation_config_is_named(tmp_path, capsys):
    path = write(tmp_path, PPO_EXPERIMENT + "        evaluation_config: {explor: false}\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, "evaluation_config key 'explor'", "did you mean 'explore'?")


def test_special_update_from_dict_keys_are_accepted(tmp_path, capsys):
    path = write(
        tmp_path,
        PPO_EXPERIMENT
        + "        lambda: 0.9\n        framework: torch\n        evaluation_interval: 1\n"
        + "        model_config: {fcnet_hiddens: [16]}\n        env_config: {render_mode: null}\n",
    )
    spec, _ = dry_run(capsys, path)
    config = spec["ppo-cartpole"]["config"]
    assert config["lambda"] == 0.9
    assert config["_model_config"] == {"fcnet_hiddens": [16]}


def test_bad_value_is_reported_for_the_experiment(tmp_path, capsys):
    path = write(tmp_path, PPO_EXPERIMENT.replace("256", "-5"))
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(
        code,
        err,
        f"{path}: experiment 'ppo-cartpole': invalid config for PPOConfig",
        "train_batch_size_per_learner",
    )


def test_non_torch_framework_is_rejected(tmp_path, capsys):
    path = write(tmp_path, PPO_EXPERIMENT + "        framework: tf2\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, "config key 'framework' is 'tf2'", "torch only")


@pytest.mark.parametrize(
    "key", ["enable_rl_module_and_learner", "enable_env_runner_and_connector_v2"]
)
def test_old_api_stack_flag_is_rejected(tmp_path, capsys, key):
    path = write(tmp_path, PPO_EXPERIMENT + f"        {key}: false\n")
    code, _, err = train(capsys, "-f", path)
    assert_usage_error(code, err, f"config key '{key}' is False", "new API stack only")


def test_new_api_stack_and_torch_are_forced(tmp_path, capsys):
    spec, _ = dry_run(capsys, write(tmp_path, PPO_EXPERIMENT))
    config = spec["ppo-cartpole"]["config"]
    assert config["enable_rl_module_and_learner"] is True
    assert config["enable_env_runner_and_connector_v2"] is True
    assert config["framework"] == "torch"


def test_legacy_num_workers_is_translated(tmp_path, capsys):
    path = write(tmp_path, PPO_EXPERIMENT.replace("num_env_runners", "num_workers"))
    spec, err = dry_run(capsys, path)
    assert spec["ppo-cartpole"]["config"]["num_env_runners"] == 0
    assert "num_workers" not in spec["ppo-cartpole"]["config"]
    assert "notice:" in err and "'num_workers'" in err


def test_grid_search_variants_are_each_validated(tmp_path, capsys):
    text = (
        PPO_EXPERIMENT.replace(
            "train_batch_size_per_learner: 256",
            "train_batch_size_per_learner: {grid_search: [256, -5]}",
        )
        + "        lr: {grid_search: [0.001, 0.0001]}\n"
    )
    code, _, err = train(capsys, "-f", write(tmp_path, text))
    assert_usage_error(
        code,
        err,
        "experiment 'ppo-cartpole': variant 3 of 4 (lr=0.001, ",
        "train_batch_size_per_learner=-5): invalid config for PPOConfig",
    )


def test_valid_grid_search_is_kept_for_tune(tmp_path, capsys):
    text = PPO_EXPERIMENT + "        lr: {grid_search: [0.001, 0.0001]}\n"
    spec, _ = dry_run(capsys, write(tmp_path, text))
    assert spec["ppo-cartpole"]["config"]["lr"] == {"grid_search": [0.001, 0.0001]}


def test_config_class_hook_is_called(tmp_path, capsys, hooked_ppo):
    base = PPO_EXPERIMENT.replace("run: PPO", f"run: {hooked_ppo}")
    code, _, err = train(capsys, "-f", write(tmp_path, base + "        lr: 5\n"))
    assert_usage_error(code, err, "experiment 'ppo-cartpole': config key 'lr' must be <= 1")
    nested = base + "        learner_config_dict: {noise_sd: 1}\n"
    code, _, err = train(capsys, "-f", write(tmp_path, nested))
    assert_usage_error(
        code,
        err,
        "learner_config_dict key 'noise_sd' is not known to HookedConfig",
        "did you mean 'noise_std'?",
    )


def test_env_may_come_from_the_algorithms_default(tmp_path, capsys, hooked_ppo):
    text = f"exp:\n  run: {hooked_ppo}\n  config: {{train_batch_size_per_learner: 256}}\n"
    spec, _ = dry_run(capsys, write(tmp_path, text))
    assert "env" not in spec["exp"]["config"]
    code, _, err = train(capsys, "-f", write(tmp_path, "exp:\n  run: PPO\n"))
    assert_usage_error(code, err, "no env")


class LegacyKeysConfig(PPOConfig):
    """A config class that still takes an old key name (the ``legacy_config_keys`` hook)."""

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or LegacyKeysPPO)

    @classmethod
    def legacy_config_keys(cls):
        return {"learning_rate": "lr"}

    def update_from_dict(self, config_dict):
        renamed = {self.legacy_config_keys().get(k, k): v for k, v in config_dict.items()}
        return super().update_from_dict(renamed)


class LegacyKeysPPO(PPO):
    @classmethod
    def get_default_config(cls):
        return LegacyKeysConfig()


def test_legacy_config_keys_hook_makes_old_names_known(tmp_path):
    from ray.tune import register_trainable

    from rllib_privacy.algorithms.config_keys import allowed_config_keys

    register_trainable("LegacyKeysPPOForTest", LegacyKeysPPO)
    assert "learning_rate" in allowed_config_keys(LegacyKeysConfig())
    assert "learning_rate" not in allowed_config_keys(PPOConfig())
    base = PPO_EXPERIMENT.replace("run: PPO", "run: LegacyKeysPPOForTest")
    loaded = load_experiments(write(tmp_path, base + "        learning_rate: 0.001\n"))
    # A mapping of old to new names: the loader translates, with a notice naming both.
    assert loaded.experiments[0].param_space["lr"] == 0.001
    assert any("'learning_rate'" in n and "'lr'" in n for n in loaded.notices)
    with pytest.raises(ExperimentFileError, match="did you mean 'learning_rate'"):
        load_experiments(write(tmp_path, base + "        learning_rat: 0.001\n"))


# --- stop, overrides, gpu_config ------------------------------------------------------


def test_legacy_stop_keys_are_translated(tmp_path, capsys):
    text = PPO_EXPERIMENT.replace(
        "stop: {training_iteration: 1}",
        "stop: {episode_reward_mean: 150, timesteps_total: 1000, "
        "evaluation/episode_reward_mean: 100, time_total_s: 60}",
    )
    spec, err = dry_run(capsys, write(tmp_path, text))
    assert spec["ppo-cartpole"]["stop"] == {
        "env_runners/episode_return_mean": 150,
        "num_env_steps_sampled_lifetime": 1000,
        "evaluation/env_runners/episode_return_mean": 100,
        "time_total_s": 60,
    }
    assert err.count("notice:") == 3


def test_stop_value_must_be_a_number(tmp_path, capsys):
    text = PPO_EXPERIMENT.replace("training_iteration: 1", "training_iteration: many")
    code, _, err = train(capsys, "-f", write(tmp_path, text))
    assert_usage_error(code, err, "stop value of 'training_iteration' must be a number")


def test_stop_and_config_overrides(tmp_path, capsys):
    text = PPO_EXPERIMENT + "        model_config: {fcnet_hiddens: [32], vf_share_layers: true}\n"
    spec, err = dry_run(
        capsys,
        write(tmp_path, text),
        "--stop",
        '{"episode_reward_mean": 10}',
        "--config",
        '{"num_epochs": 2, "model_config": {"fcnet_hiddens": [8]}}',
        "--num-samples",
        "3",
        "--storage-path",
        str(tmp_path / "results"),
    )
    exp = spec["ppo-cartpole"]
    assert exp["stop"] == {"env_runners/episode_return_mean": 10}
    assert exp["config"]["num_epochs"] == 2
    assert exp["config"]["_model_config"] == {"fcnet_hiddens": [8], "vf_share_layers": True}
    assert exp["num_samples"] == 3
    assert exp["storage_path"] == str(tmp_path / "results")
    assert "--stop:" in err


def test_bad_override_json(tmp_path, capsys):
    code, _, err = train(capsys, "-f", write(tmp_path, PPO_EXPERIMENT), "--config", "{lr: 1}")
    assert_usage_error(code, err, "--config: invalid JSON")


def test_override_is_validated_too(tmp_path, capsys):
    code, _, err = train(
        capsys, "-f", write(tmp_path, PPO_EXPERIMENT), "--config", '{"lrr": 0.1}', "--dry-run"
    )
    assert_usage_error(code, err, "config key 'lrr'", "did you mean 'lr'?")


def test_deep_merge_keeps_search_spaces_whole():
    base = {"a": {"b": 1, "c": 2}, "lr": {"grid_search": [1, 2]}}
    merged = deep_merge(base, {"a": {"c": 3}, "lr": {"grid_search": [3]}})
    assert merged == {"a": {"b": 1, "c": 3}, "lr": {"grid_search": [3]}}
    assert base["a"]["c"] == 2


def test_gpu_config_merged_only_when_gpus(tmp_path, capsys):
    text = PPO_EXPERIMENT + "      gpu_config:\n        num_gpus_per_learner: 0.25\n"
    path = write(tmp_path, text)
    no_gpu, _ = dry_run(capsys, path)  # --ray-num-gpus 0
    assert "num_gpus_per_learner" not in no_gpu["ppo-cartpole"]["config"]
    code, out, err = train(capsys, "-f", path, "--dry-run", "--ray-num-gpus", "1")
    assert code == 0, err
    assert yaml.safe_load(out)["ppo-cartpole"]["config"]["num_gpus_per_learner"] == 0.25

    exp = load_experiments(path, has_gpus=None).experiments[0]
    assert "num_gpus_per_learner" not in exp.config_for(has_gpus=False)
    assert exp.config_for(has_gpus=True)["num_gpus_per_learner"] == 0.25


def test_gpu_config_keys_are_validated(tmp_path, capsys):
    text = PPO_EXPERIMENT + "      gpu_config:\n        num_gpus_per_lerner: 1\n"
    code, _, err = train(capsys, "-f", write(tmp_path, text), "--dry-run", "--ray-num-gpus", "1")
    assert_usage_error(
        code,
        err,
        "with gpu_config merged: config key 'num_gpus_per_lerner'",
        "did you mean 'num_gpus_per_learner'?",
    )


# --- command line ---------------------------------------------------------------------


def test_train_file_form(tmp_path, capsys):
    path = write(tmp_path, PPO_EXPERIMENT)
    code, out, err = train(capsys, "file", path, "--dry-run", "--ray-num-gpus", "0")
    assert code == 0, err
    assert yaml.safe_load(out)["ppo-cartpole"]["run"] == "PPO"


def test_no_file_is_a_usage_error(capsys):
    code, _, err = train(capsys)
    assert_usage_error(code, err, "no experiment file given")


def test_unknown_scheduler_and_missing_metric(tmp_path, capsys):
    path = write(tmp_path, PPO_EXPERIMENT)
    code, _, err = train(capsys, "-f", path, "--scheduler", "ASHAA")
    assert_usage_error(code, err, "unknown scheduler 'ASHAA'", "did you mean 'asha'?")
    code, _, err = train(capsys, "-f", path, "--scheduler", "ASHA")
    assert_usage_error(code, err, "needs metric and mode")
    code, _, err = train(
        capsys,
        "-f",
        path,
        "--dry-run",
        "--scheduler",
        "asha",
        "--scheduler-config",
        '{"metric": "episode_reward_mean", "mode": "max", "grace_period": 1}',
    )
    assert code == 0, err


def test_address_excludes_local_resources(tmp_path, capsys):
    path = write(tmp_path, PPO_EXPERIMENT)
    code, _, err = train(capsys, "-f", path, "--ray-address", "auto", "--ray-num-cpus", "2")
    assert_usage_error(code, err, "--ray-address")


def test_local_address_takes_local_resources(tmp_path, capsys):
    """`--ray-address local` starts a new instance: --ray-num-cpus sizes it."""
    path = write(tmp_path, PPO_EXPERIMENT)
    code, out, err = train(
        capsys, "-f", path, "--ray-address", "local", "--ray-num-cpus", "3", "--dry-run"
    )
    assert code == 0, err
    assert "3 CPUs" in out and "the cluster at" not in out


def test_help_returns_zero(capsys):
    assert rllib_main(["train", "--help"]) == 0
    assert "--config-file" in capsys.readouterr().out


def test_load_experiments_raises_typed_error(tmp_path):
    path = write(tmp_path, "exp:\n  run: PPO\n  env: CartPole-v1\n")
    with pytest.raises(ExperimentFileError) as info:
        load_experiments(path, overrides=Overrides(num_samples=0))
    assert info.value.path == path
    assert "num_samples" in str(info.value)


def test_tools_list(capsys):
    assert tools_main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("algorithms")
    assert "envs" in out


def test_module_entry_point_dry_run(tmp_path):
    path = write(tmp_path, PPO_EXPERIMENT.replace("training_iteration", "episode_reward_mean"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rllib_privacy.cli",
            "train",
            "-f",
            path,
            "--dry-run",
            "--ray-num-gpus",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 0, proc.stderr
    spec = yaml.safe_load(proc.stdout)
    assert spec["ppo-cartpole"]["stop"] == {"env_runners/episode_return_mean": 1}
    assert "notice:" in proc.stderr


def test_trial_counts_use_the_done_flag():
    # Tune reports trials it stopped on Ctrl-C as TERMINATED; only `done` tells them apart.
    class FakeResult:
        def __init__(self, metrics, error=None):
            self.metrics, self.error = metrics, error

    grid = [
        FakeResult({"done": True}),
        FakeResult({"done": False, "training_iteration": 3}),
        FakeResult({}),
        FakeResult({}, error=RuntimeError("boom")),
    ]
    assert trial_counts(grid) == (1, 1, 2)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--stop", '{"training_iteration": 5}'),
        ("--config", '{"lr": 0.001}'),
        ("--num-samples", "2"),
    ],
)
def test_resume_refuses_options_that_tune_would_drop(tmp_path, capsys, option, value):
    path = write(tmp_path, PPO_EXPERIMENT)
    storage = tmp_path / "results"
    saved = storage / "ppo-cartpole"
    saved.mkdir(parents=True)
    (saved / "tuner.pkl").write_bytes(b"")  # what Tuner.can_restore looks for
    code, _, err = train(
        capsys, "-f", path, "--storage-path", str(storage), "--resume", option, value
    )
    assert_usage_error(code, err, option, "'ppo-cartpole'", "--resume", str(saved))


def test_resume_with_options_but_nothing_saved_starts_fresh_with_them(tmp_path, capsys):
    path = write(tmp_path, PPO_EXPERIMENT)
    storage = tmp_path / "results"
    code, out, err = train(
        capsys,
        "-f",
        path,
        "--storage-path",
        str(storage),
        "--resume",
        "--stop",
        '{"training_iteration": 3}',
        "--dry-run",
        "--ray-num-gpus",
        "0",
    )
    assert code == 0, err
    assert yaml.safe_load(out)["ppo-cartpole"]["stop"] == {"training_iteration": 3}
