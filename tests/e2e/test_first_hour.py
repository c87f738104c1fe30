"""What a new user meets in the first hour: top-level imports, fast --help, early errors.

Each test here pins one friction point a new user met (the CLI ones run ``rllib`` or
``rllib-privacy`` in-process unless the test is about what a fresh process imports).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import rllib_privacy
from rllib_privacy.errors import PrivacyConfigError

HEAVY_MODULES = ("ray", "torch", "gymnasium")


def _imported_after(code: str) -> dict[str, bool]:
    """Which heavy modules a fresh interpreter has imported after running ``code``."""
    probe = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        print(json.dumps({{m: m in sys.modules for m in {HEAVY_MODULES!r}}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_package_imports_no_ray_torch_or_gymnasium() -> None:
    assert _imported_after("import rllib_privacy") == dict.fromkeys(HEAVY_MODULES, False)


@pytest.mark.slow
def test_gymnasium_importing_the_package_for_an_id_registers_the_ids() -> None:
    # `rllib train` passes ALE RAM ids to EnvRunners as `rllib_privacy:ALE/<Game>-ram-v5`:
    # gymnasium imports the package in the worker and then looks the id up.
    pytest.importorskip("ale_py")
    imported = _imported_after(
        """
        import gymnasium as gym
        env = gym.make("rllib_privacy:ALE/Pong-ram-v5")
        assert env.observation_space.shape == (128,), env.observation_space
        env = gym.make("rllib_privacy:rllib_privacy/CartPoleGravity-v0")
        assert env.unwrapped.gravity in (9.7, 9.8, 9.9)
        """
    )
    assert not imported["ray"] and not imported["torch"]


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        ("rllib_main", ["--help"]),
        ("rllib_main", ["train", "--help"]),
        ("tools_main", ["--help"]),
        ("tools_main", ["list", "--help"]),
        ("tools_main", ["plot", "--help"]),
        ("tools_main", ["ilm-evaluate", "--help"]),
        ("tools_main", ["pate-epsilon", "--help"]),
    ],
)
def test_help_imports_no_ray_torch_or_gymnasium(main: str, argv: list[str]) -> None:
    # What the console scripts run; --help must answer without the heavy imports (about
    # 5-7 s before, well under a second after).
    imported = _imported_after(
        f"""
        import contextlib, io
        from rllib_privacy import cli
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = cli.{main}({argv!r})
        assert code == 0, code
        assert "usage:" in out.getvalue()
        """
    )
    assert imported == dict.fromkeys(HEAVY_MODULES, False)


def test_all_lists_every_export_and_each_resolves() -> None:
    assert set(rllib_privacy.__all__) == {"__version__", "register", *rllib_privacy._EXPORTS}
    for name in rllib_privacy.__all__:
        assert getattr(rllib_privacy, name) is not None, name
    assert set(rllib_privacy.__all__) <= set(dir(rllib_privacy))
    with pytest.raises(AttributeError, match="LDPA3CConf"):
        rllib_privacy.LDPA3CConf  # noqa: B018


def test_top_level_config_classes_are_the_real_ones_and_registered() -> None:
    from ray.tune.registry import get_trainable_cls

    from rllib_privacy import KickstartPPOConfig, LDPA3CConfig
    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPO
    from rllib_privacy.algorithms.ldp_a3c import LDPA3C

    assert LDPA3CConfig is LDPA3C.get_default_config().__class__
    assert KickstartPPOConfig is KickstartPPO.get_default_config().__class__
    assert get_trainable_cls("LDPA3C") is LDPA3C


@pytest.mark.slow
def test_taking_a_config_class_registers_algorithms_in_a_fresh_process() -> None:
    # A user script: take the config from the top level, then name the algorithm in Tune.
    code = """
        from rllib_privacy import LDPA3CConfig
        from ray.tune.registry import get_trainable_cls
        assert get_trainable_cls("LDPA3C").__name__ == "LDPA3C"
        assert get_trainable_cls("KickstartPPO").__name__ == "KickstartPPO"
        """
    assert _imported_after(code)["ray"]


# ---- helpers for checkpoints written without a Ray run --------------------------------

MODULE_SUBPATH = ("learner_group", "learner", "rl_module", "default_policy")


def _algorithm_checkpoint(checkpoint: Path, algorithm_cls: type) -> Path:
    """An Algorithm checkpoint's root files; returns its default module folder."""
    checkpoint.mkdir(parents=True)
    (checkpoint / "rllib_checkpoint.json").write_text('{"checkpoint_version": "2.1"}')
    with open(checkpoint / "class_and_ctor_args.pkl", "wb") as f:
        pickle.dump({"class": algorithm_cls, "ctor_args_and_kwargs": ((), {})}, f)
    return checkpoint.joinpath(*MODULE_SUBPATH)


def _ppo_teacher(storage: Path, experiment: str = "kickstart-teacher-cartpole") -> Path:
    """A PPO CartPole teacher checkpoint, as `rllib train` leaves it, in ``storage``."""
    import gymnasium as gym
    from ray.rllib.algorithms.ppo import PPO, PPOConfig

    env = gym.make("CartPole-v1")
    trial = storage / experiment / "PPO_CartPole-v1_00000"
    module_dir = _algorithm_checkpoint(trial / "checkpoint_000000", PPO)
    spaces = {"default_policy": (env.observation_space, env.action_space)}
    config = PPOConfig().rl_module(model_config={"fcnet_hiddens": [8]})
    config.get_rl_module_spec(spaces=spaces).build().save_to_path(module_dir)
    return module_dir


def _ldpa3c_checkpoint(checkpoint: Path) -> Path:
    from rllib_privacy.algorithms.ldp_a3c import LDPA3C
    from rllib_privacy.algorithms.ldp_a3c.torch.ldp_a3c_torch_rl_module import (
        LDPA3CTorchRLModule,
    )

    module_dir = _algorithm_checkpoint(checkpoint, LDPA3C)
    module_dir.mkdir(parents=True)
    with open(module_dir / "class_and_ctor_args.pkl", "wb") as f:
        pickle.dump({"class": LDPA3CTorchRLModule, "ctor_args_and_kwargs": ((), {})}, f)
    (module_dir / "module_state.pkl").write_bytes(b"")
    return checkpoint


def _train(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    """`rllib train ...` in this process: (exit code, stdout, stderr); Ray must not start.

    Any ``ray.init`` call is recorded (``ray.is_initialized()`` would depend on test order:
    other test files share a Ray instance in this process).
    """
    import ray

    from rllib_privacy.cli import rllib_main

    calls: list[tuple] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ray, "init", lambda *a, **k: calls.append((a, k)))
        code = rllib_main(["train", *argv])
    captured = capsys.readouterr()
    assert not calls, "the check must come before Ray starts"
    return code, captured.out, captured.err


# ---- teacher paths follow --storage-path ----------------------------------------------


def test_relative_teacher_paths_follow_the_storage_path(tmp_path: Path) -> None:
    from rllib_privacy.cli.preflight import resolve_teacher_path, resolve_teacher_paths

    storage = str(tmp_path / "runs")
    assert resolve_teacher_path("teacher", storage) == f"{storage}/teacher"
    assert resolve_teacher_path("./teacher", storage) == os.path.abspath("teacher")
    assert resolve_teacher_path("../teacher", storage) == os.path.abspath("../teacher")
    assert resolve_teacher_path("~/teacher", storage) == "~/teacher"
    assert resolve_teacher_path("/abs/teacher", storage) == "/abs/teacher"
    assert resolve_teacher_path("teacher", "s3://bucket/runs") == "teacher"
    raw = {
        "a": {"storage_path": "/own", "config": {"teacher_checkpoint": "t"}},
        "b": {"config": {"teacher_checkpoints": ["t1", "/x/t2"]}},
        "c": {"config": {"teacher_checkpoint": {"grid_search": ["t1", "./t2"]}}},
    }
    out, override = resolve_teacher_paths(
        raw, storage_override=None, override_config={"teacher_checkpoint": "t"}
    )
    default = os.path.expanduser("~/ray_results")
    assert out["a"]["config"]["teacher_checkpoint"] == "/own/t"
    assert out["b"]["config"]["teacher_checkpoints"] == [f"{default}/t1", "/x/t2"]
    assert out["c"]["config"]["teacher_checkpoint"] == {
        "grid_search": [f"{default}/t1", os.path.abspath("t2")]
    }
    assert override == {"teacher_checkpoint": f"{default}/t"}  # Storage paths differ.
    assert raw["a"]["config"]["teacher_checkpoint"] == "t"  # The input is not changed.
    out, override = resolve_teacher_paths(
        raw, storage_override=storage, override_config={"teacher_checkpoint": "t"}
    )
    assert out["a"]["config"]["teacher_checkpoint"] == f"{storage}/t"
    assert override == {"teacher_checkpoint": f"{storage}/t"}


def test_shipped_student_finds_its_teacher_in_the_storage_path(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    module_dir = _ppo_teacher(tmp_path / "runs")
    code, out, err = _train(
        capsys,
        "-f",
        "tuned_configs/kickstart_dirichlet_cartpole.yaml",
        "--storage-path",
        str(tmp_path / "runs"),
        "--dry-run",
    )
    assert code == 0, err
    config = yaml.safe_load(out)["kickstart-dirichlet-cartpole"]["config"]
    assert Path(config["teacher_checkpoint"]) == tmp_path / "runs" / "kickstart-teacher-cartpole"
    assert module_dir.is_dir()
    # Another storage path has no teacher: the error names where it looked.
    code, _, err = _train(
        capsys,
        "-f",
        "tuned_configs/kickstart_dirichlet_cartpole.yaml",
        "--storage-path",
        str(tmp_path / "empty"),
    )
    assert code == 2
    assert f"teacher_checkpoint '{tmp_path / 'empty' / 'kickstart-teacher-cartpole'}'" in err
    assert "does not exist" in err and "Traceback" not in err


# ---- a checkpoint of the wrong algorithm as teacher ------------------------------------


def test_ldpa3c_checkpoint_as_teacher_is_named_not_a_lipschitz_error(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from rllib_privacy.teachers.loading import resolve_teacher_checkpoint

    checkpoint = _ldpa3c_checkpoint(tmp_path / "ldp" / "trial" / "checkpoint_000000")
    for given in (checkpoint, tmp_path / "ldp", checkpoint.joinpath(*MODULE_SUBPATH)):
        with pytest.raises(PrivacyConfigError) as info:
            resolve_teacher_checkpoint(given)
        message = str(info.value)
        assert f"teacher_checkpoint '{given}' is an LDPA3C checkpoint" in message
        assert "LDPA3CTorchRLModule" in message and "trained with PPO" in message
        assert "Lipschitz" not in message
    code, _, err = _train(
        capsys,
        "-f",
        "tuned_configs/kickstart_dirichlet_cartpole.yaml",
        "--config",
        json.dumps({"teacher_checkpoint": str(tmp_path / "ldp")}),
        "--dry-run",
    )
    assert code == 2 and "is an LDPA3C checkpoint" in err and "Traceback" not in err
    # A PPO teacher is accepted.
    module_dir = _ppo_teacher(tmp_path / "runs")
    assert resolve_teacher_checkpoint(tmp_path / "runs" / "kickstart-teacher-cartpole") == (
        module_dir
    )


# ---- missing PATE teachers -------------------------------------------------------------


def test_missing_pate_teachers_are_an_error_before_ray_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    args = ["-f", "tuned_configs/pate_ppo_cartpole.yaml", "--storage-path", str(tmp_path)]
    code, _, err = _train(capsys, *args)
    assert code == 2, err
    expected = f"teacher_checkpoints': '{tmp_path / 'pate-teachers-cartpole'}' does not exist"
    assert expected in err and "experiment 'pate-ppo-cartpole'" in err
    assert "Traceback" not in err
    # --dry-run validates a file whose teachers are trained later.
    code, _, err = _train(capsys, *args, "--dry-run")
    assert code == 0, err


# ---- --scheduler-config ---------------------------------------------------------------


def _ldp_a3c_with_asha(
    capsys: pytest.CaptureFixture, scheduler_config: dict, *extra: str
) -> tuple[int, str, str]:
    return _train(
        capsys,
        "-f",
        "tuned_configs/ldp_a3c.yaml",
        "--scheduler",
        "asha",
        "--scheduler-config",
        json.dumps(scheduler_config),
        *extra,
    )


@pytest.mark.parametrize(
    ("scheduler_config", "expected"),
    [
        (
            {"metric": "env_runners/episode_retrun_mean", "mode": "max"},
            "--scheduler-config: 'metric' 'env_runners/episode_retrun_mean' is not a result "
            "key of these experiments; did you mean 'env_runners/episode_return_mean'?",
        ),
        (
            {"metric": "score_maen", "mode": "max"},
            "did you mean 'score_mean'?",
        ),
        (
            {"metric": "env_runners/episode_return_mean", "mode": "maxx"},
            "--scheduler-config: 'mode' must be 'min' or 'max', got 'maxx'; did you mean 'max'?",
        ),
    ],
)
def test_mistyped_scheduler_metric_or_mode_is_named_before_ray(
    scheduler_config: dict, expected: str, capsys: pytest.CaptureFixture
) -> None:
    code, _, err = _ldp_a3c_with_asha(capsys, scheduler_config)
    assert code == 2
    assert expected in err and "Traceback" not in err


def test_known_scheduler_metrics_are_accepted(capsys: pytest.CaptureFixture) -> None:
    for metric in ("env_runners/episode_return_mean", "score_mean", "privacy/epsilon_spent"):
        code, _, err = _ldp_a3c_with_asha(capsys, {"metric": metric, "mode": "max"}, "--dry-run")
        assert code == 0, err
    from rllib_privacy.cli.preflight import check_scheduler_metric

    notices = check_scheduler_metric({"metric": "custom/my_metric", "mode": "min"}, [])
    assert notices and "custom/my_metric" in notices[0]


# ---- --resume with nothing saved -------------------------------------------------------


def test_resume_with_nothing_saved_is_an_error_naming_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code, _, err = _train(
        capsys, "-f", "tuned_configs/ldp_a3c.yaml", "--resume", "--storage-path", str(tmp_path)
    )
    assert code == 2
    assert f"--resume: nothing saved to resume in {tmp_path / 'ldp-a3c-privunitg'}" in err


def test_resume_starts_only_the_experiments_never_saved() -> None:
    from types import SimpleNamespace

    from rllib_privacy.cli.preflight import check_resume

    first = SimpleNamespace(name="a", path="/r/a")
    second = SimpleNamespace(name="b", path="/r/b")
    notices = check_resume([first, second], lambda path: path == "/r/a")
    assert notices == ["--resume: nothing saved for experiment 'b' in /r/b; starting it"]
    with pytest.raises(PrivacyConfigError, match="nothing saved to resume in /r/a, /r/b"):
        check_resume([first, second], lambda path: False)


# ---- ilm-evaluate without --data -------------------------------------------------------


def test_ilm_evaluate_uses_the_bundled_dataset_without_data(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    import gymnasium as gym
    import numpy as np
    from ray.rllib.algorithms.dqn import DQNConfig

    from rllib_privacy.cli import ilm_evaluate, tools_main
    from rllib_privacy.envs.instance_laplace import BUNDLED_DATASETS

    assert ilm_evaluate.BUNDLED_DATASET_NAMES == tuple(BUNDLED_DATASETS)
    bins, pe_dim = 10, 16
    obs = gym.spaces.Box(-np.inf, np.inf, (bins + pe_dim,), np.float32)
    spec = DQNConfig().rl_module(model_config={"fcnet_hiddens": [8]})
    module = spec.get_rl_module_spec(spaces={"default_policy": (obs, gym.spaces.Discrete(5))})
    module.build().save_to_path(tmp_path / "module")
    for extra, n in (([], 442), (["--dataset", "linnerud"], 20)):
        output = tmp_path / f"out{n}"
        code = tools_main(
            ["ilm-evaluate", "--checkpoint", str(tmp_path / "module"), "--epsilon", "0.5"]
            + ["--output-dir", str(output), *extra]
        )
        captured = capsys.readouterr()
        assert code in (0, 1), captured.err
        assert json.loads((output / "ilm_evaluation.json").read_text())["n"] == n
        assert f"instances: {n}" in captured.out


# ---- list ------------------------------------------------------------------------------


def test_list_shows_this_package_first_and_collapses_the_rest(
    capsys: pytest.CaptureFixture,
) -> None:
    from rllib_privacy.cli import tools_main

    assert tools_main(["list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "algorithms of rllib_privacy (`run:` in experiment files):"
    assert [line.split()[0] for line in lines[1:7]] == [
        "ExplorationDQN",
        "ExplorationPPO",
        "KickstartPPO",
        "LDPA3C",
        "LDPPPO",
        "PATEPPO",
    ]
    assert "  rllib_privacy/CartPoleGravity-v0" in lines
    assert not [line for line in lines if line.startswith("  ALE/")] and "  PPO" not in lines
    assert lines[-1].startswith("not shown: ") and "`rllib-privacy list --all`" in lines[-1]
    assert tools_main(["list", "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines.index("  rllib_privacy/CartPoleGravity-v0") < lines.index("  PPO")
    atari = [line for line in lines if line.startswith("  ALE/")]
    assert all(
        lines.index(line) > lines.index("  rllib_privacy/CartPoleGravity-v0") for line in atari
    )


# ---- the final summary -----------------------------------------------------------------


def test_summary_shows_ilm_and_exploration_headline_metrics(
    capsys: pytest.CaptureFixture,
) -> None:
    from types import SimpleNamespace

    from rllib_privacy.cli import summary

    metrics = {
        "training_iteration": 3,
        "env_runners": {"episode_return_mean": 1.5, "ilm": {"kl_ratio": 0.9}},
        "ilm": {"kl_ratio": 0.5, "pdp_violations": 0.0, "pdp_pass_rate": 1.0},
        "learners": {"default_policy": {"exploration": {"extrinsic_return_mean": 2.5}}},
        "exploration": {"unique_codes": 17},
        "done": True,
    }
    result = SimpleNamespace(metrics=metrics, error=None, path="/r/exp/trial_0", checkpoint=None)
    exp = SimpleNamespace(name="exp", path="/r/exp")
    assert summary.print_summary(summary.Outcome(exp, grid=[result])) is False
    out = capsys.readouterr().out
    for shown in (
        "ilm/kl_ratio=0.5",  # The top-level copy, not the EnvRunner one.
        "ilm/pdp_violations=0",
        "ilm/pdp_pass_rate=1",
        "exploration/extrinsic_return_mean=2.5",
        "exploration/unique_codes=17",
        "env_runners/episode_return_mean=1.5",
    ):
        assert shown in out, shown


def test_run_ends_with_the_largest_privacy_spend_of_each_experiment(
    capsys: pytest.CaptureFixture,
) -> None:
    from types import SimpleNamespace

    from rllib_privacy.cli import summary

    def result(epsilon: float | None, ret: float) -> SimpleNamespace:
        metrics: dict = {"env_runners": {"episode_return_mean": ret}, "done": True}
        if epsilon is not None:
            metrics["privacy"] = {"epsilon_spent": epsilon, "delta_spent": 1e-5}
        return SimpleNamespace(metrics=metrics, error=None, path="/r/e/t", checkpoint=None)

    private = SimpleNamespace(name="kick", path="/r/kick")
    public = SimpleNamespace(name="ppo", path="/r/ppo")
    outcomes = [
        summary.Outcome(private, grid=[result(970.8, 500.0), result(12.5, 20.0)]),
        summary.Outcome(public, grid=[result(None, 100.0)]),
    ]
    args = SimpleNamespace(storage_path=None)
    assert summary.report(outcomes, SimpleNamespace(path="x.yaml"), args) == summary.EXIT_OK
    lines = capsys.readouterr().out.strip().splitlines()
    # The most expensive trial, not the best-returning one, and only private experiments.
    assert lines[-1] == "privacy: 'kick' spent ε = 970.8 at δ = 1e-05 (largest of 2 trials)"
    assert not any(line.startswith("privacy: 'ppo'") for line in lines)


# ---- docs/cli.md -----------------------------------------------------------------------


def test_cli_docs_examples_use_real_keys_and_no_internal_references() -> None:
    import re

    from rllib_privacy import KickstartPPOConfig

    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    # The kickstart sweep's c is `teacher_vanishing_coefficient` (k ← c·k each rollout).
    assert "--group-by teacher_vanishing_coefficient" in text
    assert "teacher_vanishing_coefficient" in KickstartPPOConfig().to_dict()
    assert not re.search(r"(?<!teacher_)vanishing_coefficient", text)
    assert "kickstart-sweep-cartpole" in yaml.safe_load(
        (
            Path(__file__).resolve().parents[2] / "tuned_configs/kickstart_sweep_cartpole.yaml"
        ).read_text()
    )
    assert "DESIGN" not in text and "README" not in text
