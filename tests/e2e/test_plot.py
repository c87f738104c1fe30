"""`rllib-privacy plot`: reading Tune result folders, median/band aggregation, PNG, errors.

The trial folders hold synthetic curves written by Ray Tune 2.60's own JSON and CSV logger
callbacks (the ones behind `rllib train -f`): `params.json` is the nested config,
`result.json` one nested result per line including `config`, `progress.csv` the results
without `config`, flattened with `/`, its columns fixed by the first result; a resumed
trial appends to both. No Ray is started.
"""

from __future__ import annotations

import json
import math
import struct
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib.colors
import matplotlib.image
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rllib_privacy import plotting
from rllib_privacy.cli import tools_main
from rllib_privacy.errors import PrivacyConfigError

STEPS = np.arange(0, 1001, 100)  # env steps after each iteration: 0, 100, ..., 1000


def _result(iteration: int, steps: float, value: Any, config: dict[str, Any]) -> dict:
    """One result as RLlib's new API stack reports it (nested) and Tune adds to it."""
    steps = float(steps)
    return {
        "env_runners": {
            "episode_return_mean": value,
            "num_env_steps_sampled_lifetime": steps,
        },
        "num_env_steps_sampled_lifetime": steps,
        "timesteps_total": int(steps),
        "training_iteration": iteration,
        "done": False,
        "trial_id": "abc12_00000",
        "config": config,
    }


class _TuneTrial:
    """The parts of ``ray.tune.experiment.Trial`` that Tune's logger callbacks use.

    A real Trial needs a running Ray for its staging path; these tests start none.
    """

    def __init__(self, folder: Path, config: dict[str, Any]) -> None:
        self.local_path = str(folder)
        self.config = config
        self.checkpoint = None  # Nothing to restore from remote storage.
        self.init_local_path()  # Tune creates the trial folder before logging starts.

    def init_local_path(self) -> None:
        Path(self.local_path).mkdir(parents=True, exist_ok=True)


def write_trial(
    folder: Path,
    config: dict[str, Any],
    steps: Sequence[float],
    values: Sequence[Any],
    *,
    edit: Callable[[dict], dict] | None = None,
    files: tuple[str, ...] = ("params.json", "result.json", "progress.csv"),
    first_iteration: int = 1,
) -> Path:
    """Write (or append to) a trial folder with Tune's own JSON and CSV logger callbacks.

    ``edit`` may change each result; ``files`` lists the files to keep afterwards.
    """
    from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback

    trial = _TuneTrial(folder, config)
    callbacks = [JsonLoggerCallback(), CSVLoggerCallback()]
    for index, (step, value) in enumerate(zip(steps, values, strict=True)):
        result = _result(first_iteration + index, step, value, config)
        result = edit(result) if edit else result
        for callback in callbacks:
            callback.log_trial_result(index, trial, result)
    for callback in callbacks:
        callback.log_trial_end(trial)
    for name in {"params.json", "params.pkl", "result.json", "progress.csv"} - set(files):
        (folder / name).unlink(missing_ok=True)
    return folder


def _config(epsilon: float, seed: int, gravity: float = 9.8) -> dict[str, Any]:
    return {
        "epsilon": epsilon,
        "seed": seed,
        "env_config": {"gravity": gravity},
        "_model_config": {"hiddens": [16]},
        "lr": 0.01,
    }


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """An experiment folder: ε = 1 with slopes 1, 2, 3 (3 seeds), ε = 10 with slopes 4, 6."""
    experiment = tmp_path / "results" / "sweep"
    for index, (epsilon, slope) in enumerate([(1.0, 1), (1.0, 2), (1.0, 3), (10.0, 4), (10.0, 6)]):
        name = f"PPO_CartPole-v1_abc12_{index:05d}_{index}_epsilon={epsilon:g},seed={slope}"
        write_trial(experiment / name, _config(epsilon, slope), STEPS, slope * STEPS)
    (experiment / "experiment_state-2026-11-21_12-00-00.json").write_text("{}")
    return experiment


def _quiet_aggregate(trials: list[plotting.TrialResults], **kwargs: Any) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("error", plotting.PlotWarning)  # None expected here.
        return plotting.aggregate_curves(trials, **kwargs)


def test_median_and_band_of_known_curves(sweep: Path) -> None:
    curves = _quiet_aggregate(plotting.load_trials([sweep]), group_by="epsilon")
    assert [c.value for c in curves] == [1.0, 10.0]
    low, high = curves
    np.testing.assert_array_equal(low.x, STEPS)
    # Slopes 1, 2, 3: median 2x; numpy's linear percentiles 15 and 85 sit at 1.3x and 2.7x.
    np.testing.assert_allclose(low.median, 2 * STEPS)
    np.testing.assert_allclose(low.lower, 1.3 * STEPS)
    np.testing.assert_allclose(low.upper, 2.7 * STEPS)
    # Slopes 4, 6: median 5x; 15th/85th percentiles at 4.3x and 5.7x.
    np.testing.assert_allclose(high.median, 5 * STEPS)
    np.testing.assert_allclose(high.lower, 4.3 * STEPS)
    np.testing.assert_allclose(high.upper, 5.7 * STEPS)
    assert low.label == "epsilon=1 (3 seeds)" and high.label == "epsilon=10 (2 seeds)"
    assert low.x_keys == ("timesteps_total",)
    assert np.all(low.counts == 3) and np.all(high.counts == 2)
    assert low.final_summary() == pytest.approx((2000.0, 1300.0, 2700.0))


def test_band_option_changes_the_percentiles(sweep: Path) -> None:
    (curve,) = _quiet_aggregate(
        [t for t in plotting.load_trials([sweep]) if t.config["epsilon"] == 1.0],
        group_by="epsilon",
        band=75,
    )
    np.testing.assert_allclose(curve.lower, 1.5 * STEPS)
    np.testing.assert_allclose(curve.upper, 2.5 * STEPS)


def test_interpolation_uses_only_trials_that_reached_x(tmp_path: Path) -> None:
    # Trial a: y = x on x in {0, 250, 500}; trial b: y = 3x on x in {0, 100, ..., 1000}.
    write_trial(tmp_path / "a", _config(1.0, 1), [0, 250, 500], [0, 250, 500])
    write_trial(tmp_path / "b", _config(1.0, 2), STEPS, 3 * STEPS)
    (curve,) = _quiet_aggregate(plotting.load_trials([tmp_path]), group_by="epsilon")
    expected_x = np.union1d([0, 250, 500], STEPS)
    np.testing.assert_array_equal(curve.x, expected_x)
    both = expected_x <= 500
    np.testing.assert_array_equal(curve.counts, np.where(both, 2, 1))
    # Interpolating the linear curves is exact; beyond 500 only trial b remains.
    np.testing.assert_allclose(curve.median, np.where(both, 2 * expected_x, 3 * expected_x))
    np.testing.assert_allclose(curve.upper[~both], 3 * expected_x[~both])
    np.testing.assert_array_equal(curve.final_x, [500, 1000])

    (trimmed,) = _quiet_aggregate(plotting.load_trials([tmp_path]), group_by="epsilon", min_seeds=2)
    np.testing.assert_array_equal(trimmed.x, expected_x[both])
    with pytest.warns(plotting.PlotWarning, match="no x was reached by 3 trials"):
        (empty,) = plotting.aggregate_curves(
            plotting.load_trials([tmp_path]), group_by="epsilon", min_seeds=3
        )
    assert empty.x.size == 0 and empty.num_trials == 2


def test_dense_grids_are_resampled_evenly(tmp_path: Path) -> None:
    # 600 distinct x values in all (even and odd steps), more than `points`.
    write_trial(tmp_path / "a", _config(1.0, 1), np.arange(0, 600, 2), np.arange(0, 600, 2))
    write_trial(tmp_path / "b", _config(1.0, 2), np.arange(1, 600, 2), np.arange(1, 600, 2))
    (curve,) = _quiet_aggregate(plotting.load_trials([tmp_path]), group_by="epsilon", points=50)
    np.testing.assert_allclose(curve.x, np.linspace(0, 599, 50))
    np.testing.assert_allclose(curve.median, curve.x)  # Both trials are y = x.
    assert curve.counts[0] == 1 and curve.counts[-1] == 1 and np.all(curve.counts[1:-1] == 2)


def test_group_by_nested_key_and_model_config_alias(tmp_path: Path) -> None:
    for index, gravity in enumerate([9.9, 9.7, 9.9, 9.7, 9.8]):
        write_trial(tmp_path / "exp" / f"t{index}", _config(1.0, index, gravity), STEPS, STEPS)
    trials = plotting.load_trials([tmp_path / "exp"])
    curves = _quiet_aggregate(trials, group_by="env_config/gravity")
    assert [(c.value, c.num_trials) for c in curves] == [(9.7, 2), (9.8, 1), (9.9, 2)]
    assert curves[1].label == "env_config/gravity=9.8 (1 seed)"
    # params.json holds `_model_config` (what `rllib train` passes RLlib); both spellings work.
    for key in ("model_config/hiddens", "_model_config/hiddens", "config/model_config/hiddens"):
        with pytest.warns(plotting.PlotWarning, match="also differ in env_config/gravity"):
            (curve,) = plotting.aggregate_curves(trials, group_by=key)
        assert curve.value == [16] and curve.num_trials == 5


def test_x_falls_back_to_lifetime_env_steps_and_can_be_chosen(tmp_path: Path) -> None:
    def without_timesteps_total(result: dict) -> dict:
        del result["timesteps_total"]
        return result

    def only_env_runner_steps(result: dict) -> dict:
        del result["timesteps_total"], result["num_env_steps_sampled_lifetime"]
        return result

    write_trial(tmp_path / "a", _config(1.0, 1), STEPS, STEPS, edit=without_timesteps_total)
    write_trial(tmp_path / "b", _config(2.0, 1), STEPS, STEPS, edit=only_env_runner_steps)
    curves = _quiet_aggregate(plotting.load_trials([tmp_path]), group_by="epsilon")
    assert [c.x_keys for c in curves] == [
        ("num_env_steps_sampled_lifetime",),
        ("env_runners/num_env_steps_sampled_lifetime",),
    ]
    assert plotting.x_axis_label(curves).startswith("env steps (")
    by_iteration = _quiet_aggregate(
        plotting.load_trials([tmp_path]), group_by="epsilon", x="training_iteration"
    )
    np.testing.assert_array_equal(by_iteration[0].x, np.arange(1, 12))
    np.testing.assert_allclose(by_iteration[0].median, STEPS)
    assert plotting.x_axis_label(by_iteration) == "training iterations (training_iteration)"


def test_resumed_trial_keeps_the_rerun_iterations(tmp_path: Path) -> None:
    folder = write_trial(tmp_path / "t", _config(1.0, 1), STEPS[:6], STEPS[:6])
    # Restored from the checkpoint of iteration 3: Tune appends iterations 4-6 again.
    write_trial(folder, _config(1.0, 1), STEPS[3:6], 10 * STEPS[3:6], first_iteration=4)
    assert len((folder / "result.json").read_text().splitlines()) == 9
    (trial,) = plotting.load_trials([folder])
    assert [r["training_iteration"] for r in trial.rows] == [1, 2, 3, 4, 5, 6]
    (curve,) = _quiet_aggregate([trial], group_by="epsilon")
    np.testing.assert_allclose(curve.median, [0, 100, 200, 3000, 4000, 5000])


def test_nan_and_tune_encoded_values_are_gaps(tmp_path: Path) -> None:
    # Tune's JSON encoder writes a float NaN as NaN and a numpy float32 NaN as "null".
    values = [math.nan, np.float32("nan"), 20.0, 30.0] + [40.0] * 7
    folder = write_trial(tmp_path / "t", _config(1.0, 1), STEPS, values)
    assert '"episode_return_mean": "null"' in (folder / "result.json").read_text()
    (curve,) = _quiet_aggregate(plotting.load_trials([tmp_path]), group_by="epsilon")
    np.testing.assert_array_equal(curve.x, STEPS[2:])
    assert curve.median[0] == 20.0


def test_keys_new_after_the_first_result_are_only_in_result_json(tmp_path: Path) -> None:
    def no_episode_yet(result: dict) -> dict:
        if result["training_iteration"] == 1:
            del result["env_runners"]["episode_return_mean"]
        return result

    folder = write_trial(tmp_path / "t", _config(1.0, 1), STEPS, STEPS, edit=no_episode_yet)
    # Tune fixes progress.csv's columns at the first result: the metric never makes it in.
    assert "env_runners/episode_return_mean" not in (folder / "progress.csv").read_text()
    (curve,) = _quiet_aggregate(plotting.load_trials([folder]), group_by="epsilon")
    np.testing.assert_array_equal(curve.x, STEPS[1:])
    (folder / "result.json").unlink()
    with pytest.raises(PrivacyConfigError, match="is in no trial's results"):
        plotting.aggregate_curves(plotting.load_trials([folder]), group_by="epsilon")


def test_progress_csv_is_read_when_there_is_no_result_json(tmp_path: Path) -> None:
    write_trial(
        tmp_path / "a", _config(1.0, 1), STEPS, STEPS, files=("params.json", "progress.csv")
    )
    write_trial(tmp_path / "b", _config(1.0, 2), STEPS, 3 * STEPS)
    trials = plotting.load_trials([tmp_path])
    assert [t.source for t in trials] == ["progress.csv", "result.json"]
    (curve,) = _quiet_aggregate(trials, group_by="epsilon")
    np.testing.assert_allclose(curve.median, 2 * STEPS)


def test_config_comes_from_result_json_without_params_json(tmp_path: Path) -> None:
    write_trial(tmp_path / "t", _config(5.0, 1), STEPS, STEPS, files=("result.json",))
    (curve,) = _quiet_aggregate(plotting.load_trials([tmp_path]), group_by="epsilon")
    assert curve.value == 5.0


def test_accepts_trial_experiment_and_parent_folders(sweep: Path, tmp_path: Path) -> None:
    trial_dirs = sorted(p for p in sweep.iterdir() if p.is_dir())
    # A checkpoint inside a trial folder is not a trial.
    (trial_dirs[0] / "checkpoint_000000").mkdir()
    (trial_dirs[0] / "checkpoint_000000" / "result.json").write_text("{}\n")
    other = write_trial(tmp_path / "results" / "other" / "t0", _config(2.0, 9), STEPS, STEPS)
    assert len(plotting.load_trials([sweep])) == 5
    assert len(plotting.load_trials([tmp_path / "results"])) == 6
    assert len(plotting.load_trials([trial_dirs[0], trial_dirs[1], other])) == 3
    assert len(plotting.load_trials([sweep, trial_dirs[0]])) == 5  # Each trial once.


def test_linked_experiments_are_followed_once(sweep: Path, tmp_path: Path) -> None:
    compare = tmp_path / "compare"
    compare.mkdir()
    (compare / "sweep").symlink_to(sweep, target_is_directory=True)
    (compare / "again").symlink_to(sweep, target_is_directory=True)
    (compare / "loop").symlink_to(compare, target_is_directory=True)
    assert len(plotting.load_trials([compare])) == 5


def test_running_trial_with_partly_written_last_line(tmp_path: Path) -> None:
    folder = write_trial(tmp_path / "t", _config(1.0, 1), STEPS, STEPS)
    with (folder / "result.json").open("a") as f:
        f.write('{"env_runners": {"episode_return_m')
    (trial,) = plotting.load_trials([folder])
    assert len(trial.rows) == len(STEPS)
    (folder / "result.json").write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(PrivacyConfigError, match=r"result.json:2: not valid JSON"):
        plotting.load_trials([folder])


def test_metric_missing_everywhere_is_named_with_available_keys(sweep: Path) -> None:
    trials = plotting.load_trials([sweep])
    with pytest.raises(PrivacyConfigError) as error:
        plotting.aggregate_curves(trials, group_by="epsilon", metric="episode_return")
    message = str(error.value)
    assert "--metric: 'episode_return' is in no trial's results" in message
    assert "did you mean 'env_runners/episode_return_mean'?" in message
    assert "available keys include: env_runners/episode_return_mean" in message
    with pytest.raises(PrivacyConfigError, match=r"--x: no trial's results have 'steps'"):
        plotting.aggregate_curves(trials, group_by="epsilon", x="steps")


def test_old_api_stack_metric_name_is_translated(sweep: Path) -> None:
    with pytest.warns(plotting.PlotWarning, match="old API stack key"):
        curves = plotting.aggregate_curves(
            plotting.load_trials([sweep]), group_by="epsilon", metric="episode_reward_mean"
        )
    assert curves[0].metric == "env_runners/episode_return_mean"


def test_trial_without_metric_is_skipped_with_a_warning(sweep: Path) -> None:
    def drop_metric(result: dict) -> dict:
        del result["env_runners"]["episode_return_mean"]
        return result

    lonely = write_trial(sweep / "late", _config(100.0, 1), STEPS, STEPS, edit=drop_metric)
    with pytest.warns(plotting.PlotWarning, match="epsilon=100: 1 trial"):
        curves = plotting.aggregate_curves(plotting.load_trials([sweep]), group_by="epsilon")
    assert [c.value for c in curves] == [1.0, 10.0]
    assert lonely.resolve() not in {p for c in curves for p in c.trials}


def test_group_key_missing_from_a_trial_config(sweep: Path) -> None:
    with pytest.raises(PrivacyConfigError) as error:
        plotting.aggregate_curves(plotting.load_trials([sweep]), group_by="env_config/gravty")
    message = str(error.value)
    assert message.startswith("--group-by: config key 'env_config/gravty' is not in the config")
    assert "did you mean 'env_config/gravity'?" in message and str(sweep) in message


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"band": 40}, "--band"),
        ({"band": 101}, "--band"),
        ({"points": 1}, "--points"),
        ({"min_seeds": 0}, "--min-seeds"),
    ],
)
def test_bad_aggregation_arguments(sweep: Path, kwargs: dict, match: str) -> None:
    with pytest.raises(PrivacyConfigError, match=match):
        plotting.aggregate_curves(plotting.load_trials([sweep]), group_by="epsilon", **kwargs)


def test_empty_or_missing_folders(tmp_path: Path) -> None:
    (tmp_path / "empty" / "exp").mkdir(parents=True)
    with pytest.raises(PrivacyConfigError, match="no Tune trial folders"):
        plotting.load_trials([tmp_path / "empty"])
    with pytest.raises(PrivacyConfigError, match="does not exist"):
        plotting.load_trials([tmp_path / "nope"])
    with pytest.raises(PrivacyConfigError, match="at least one"):
        plotting.load_trials([])
    pending = tmp_path / "pending" / "t"
    pending.mkdir(parents=True)
    (pending / "params.json").write_text(json.dumps(_config(1.0, 1)))
    (pending / "result.json").write_text("")
    with pytest.raises(PrivacyConfigError, match="has reported a result yet"):
        plotting.aggregate_curves(plotting.load_trials([pending]), group_by="epsilon")


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plot_writes_a_png(sweep: Path, tmp_path: Path) -> None:
    curves = _quiet_aggregate(plotting.load_trials([sweep]), group_by="epsilon")
    path = plotting.plot_learning_curves(curves, tmp_path / "new" / "curves.png", title="T")
    assert path == tmp_path / "new" / "curves.png"
    assert _png_size(path) == (900, 576)  # 7.5 x 4.8 inches at 120 dpi
    assert path.stat().st_size > 10_000  # Lines, bands, labels and legend, not a blank image.
    pixels = matplotlib.image.imread(path)[..., :3]
    for color in ("C0", "C1"):  # The two median lines, in matplotlib's first two colours.
        rgb = np.array(matplotlib.colors.to_rgb(color))
        assert np.sum(np.all(np.abs(pixels - rgb) < 0.02, axis=-1)) > 200, color
    with pytest.raises(PrivacyConfigError, match="--output: unsupported image type '.txt'"):
        plotting.plot_learning_curves(curves, tmp_path / "curves.txt")
    (tmp_path / "taken.png").mkdir()
    with pytest.raises(PrivacyConfigError, match="--output: cannot write"):
        plotting.plot_learning_curves(curves, tmp_path / "taken.png")
    with pytest.raises(PrivacyConfigError, match="nothing to plot"):
        plotting.plot_learning_curves([], tmp_path / "x.png")


def test_cli_plot(sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "plot.png"
    code = tools_main(
        ["plot", str(sweep), "--group-by", "epsilon", "--output", str(output), "--band", "85"]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = captured.out.splitlines()
    assert lines[0].split() == ["group", "seeds", "final", "x", "(median)", "final", "median"] + [
        "band",
        "15–85",
    ]
    assert lines[1].split() == ["epsilon=1", "3", "1000", "2000", "[1300,", "2700]"]
    assert lines[2].split() == ["epsilon=10", "2", "1000", "5000", "[4300,", "5700]"]
    assert lines[-1] == f"wrote {output}"
    assert _png_size(output)[0] > 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metric", "nope"], "error: --metric: 'nope' is in no trial's results"),
        (["--group-by", "lrr"], "error: --group-by: config key 'lrr' is not in the config"),
        (["--band", "20"], "error: --band: must be a percentile in [50, 100]"),
    ],
)
def test_cli_plot_errors(
    sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list, message: str
) -> None:
    args = ["plot", str(sweep), "--group-by", "epsilon", "-o", str(tmp_path / "p.png"), *extra]
    assert tools_main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err
    assert not (tmp_path / "p.png").exists()


def test_cli_plot_empty_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tools_main(["plot", str(tmp_path), "--group-by", "epsilon"]) == 2
    assert capsys.readouterr().err.startswith("error: RESULTS_DIR: no Tune trial folders")
    assert tools_main(["plot", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: RESULTS_DIR: no Tune trial folders")


def test_without_group_by_trials_differing_only_in_seed_are_one_curve(sweep: Path) -> None:
    by_key = _quiet_aggregate(plotting.load_trials([sweep]), group_by="epsilon")
    by_config = _quiet_aggregate(plotting.load_trials([sweep]))
    assert [c.label for c in by_config] == ["epsilon=1 (3 seeds)", "epsilon=10 (2 seeds)"]
    for key_curve, config_curve in zip(by_key, by_config, strict=True):
        np.testing.assert_allclose(config_curve.median, key_curve.median)
        np.testing.assert_allclose(config_curve.lower, key_curve.lower)
        assert config_curve.trials == key_curve.trials


def test_without_group_by_a_second_differing_key_names_both(tmp_path: Path) -> None:
    for index, (epsilon, gravity, seed) in enumerate(
        [(1.0, 9.8, 0), (1.0, 9.8, 1), (1.0, 9.9, 0), (5.0, 9.8, 0)]
    ):
        config = _config(epsilon, seed, gravity)
        write_trial(tmp_path / f"trial_{index}", config, STEPS, (index + 1) * STEPS)
    curves = _quiet_aggregate(plotting.load_trials([tmp_path]))
    assert [c.label for c in curves] == [
        "env_config/gravity=9.8, epsilon=1 (2 seeds)",
        "env_config/gravity=9.8, epsilon=5 (1 seed)",
        "env_config/gravity=9.9, epsilon=1 (1 seed)",
    ]
    one = _quiet_aggregate(plotting.load_trials([tmp_path / "trial_0", tmp_path / "trial_1"]))
    assert [c.label for c in one] == ["all trials (2 seeds)"]


def test_figure_axes_name_x_and_metric_and_legend_names_groups(sweep: Path) -> None:
    trials = plotting.load_trials([sweep])
    axes = plotting.build_figure(_quiet_aggregate(trials)).axes[0]
    assert axes.get_xlabel() == "env steps (timesteps_total)"
    assert axes.get_ylabel() == "episode return (env_runners/episode_return_mean)"
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert legend == ["epsilon=1 (3 seeds)", "epsilon=10 (2 seeds)"]
    assert len(axes.lines) == 2 and len(axes.collections) == 2  # Median lines and bands.
    by_iteration = _quiet_aggregate(trials, x="training_iteration", metric="timesteps_total")
    axes = plotting.build_figure(by_iteration).axes[0]
    assert axes.get_xlabel() == "training iterations (training_iteration)"
    assert axes.get_ylabel() == "env steps (timesteps_total)"
    submissions = _quiet_aggregate(trials, x="timesteps_total", metric="done")
    assert plotting.build_figure(submissions).axes[0].get_ylabel() == "done"


@settings(max_examples=30, deadline=None)
@given(
    slopes=st.lists(st.floats(-5, 5), min_size=1, max_size=7),
    ends=st.lists(st.integers(2, 11), min_size=7, max_size=7),
    band=st.floats(50, 100),
)
def test_band_brackets_the_median_within_the_trials_range(
    tmp_path_factory: pytest.TempPathFactory, slopes: list[float], ends: list[int], band: float
) -> None:
    root = tmp_path_factory.mktemp("prop")
    for index, slope in enumerate(slopes):
        steps = STEPS[: ends[index]]
        write_trial(root / f"t{index}", _config(1.0, index), steps, slope * steps + index)
    (curve,) = plotting.aggregate_curves(
        plotting.load_trials([root]), group_by="epsilon", band=band
    )
    assert np.all(curve.lower <= curve.median + 1e-9)
    assert np.all(curve.median <= curve.upper + 1e-9)
    reached = [STEPS[: ends[i]] for i in range(len(slopes))]
    for j, x in enumerate(curve.x):
        values = [s * x + i for i, s in enumerate(slopes) if x <= reached[i][-1]]
        assert curve.counts[j] == len(values)
        assert min(values) - 1e-9 <= curve.lower[j] and curve.upper[j] <= max(values) + 1e-9


# ---- what is drawn: points for one-result trials, bands only where seeds share an x ---------


def _one_iteration_sweep(root: Path) -> Path:
    """ε ∈ {1, 10} × 3 seeds, each trial one result at its own env-step count."""
    for index, (epsilon, seed) in enumerate([(e, s) for e in (1.0, 10.0) for s in (1, 2, 3)]):
        write_trial(root / f"trial_{index}", _config(epsilon, seed), [100 + 7 * index], [seed])
    return root


def test_one_result_per_trial_is_drawn_as_points_with_a_notice(tmp_path: Path) -> None:
    trials = plotting.load_trials([_one_iteration_sweep(tmp_path)])
    with pytest.warns(plotting.PlotWarning, match="reported one result: drawn as points"):
        curves = plotting.aggregate_curves(trials, group_by="epsilon")
    assert [c.one_point_per_trial for c in curves] == [True, True]
    assert not any(c.has_band for c in curves)
    axes = plotting.build_figure(curves).axes[0]
    assert not axes.collections  # No band.
    for line, curve in zip(axes.lines, curves, strict=True):
        assert line.get_linestyle() == "None" and line.get_marker() == "o"  # Points only.
        np.testing.assert_array_equal(line.get_xdata(), curve.final_x)
        np.testing.assert_array_equal(line.get_ydata(), [1, 2, 3])
    assert axes.get_title().endswith("one point per trial (one result each)")
    assert "median" not in axes.get_title() and "percentile" not in axes.get_title()


def test_band_only_where_two_seeds_share_an_x(tmp_path: Path) -> None:
    # Seed 1 covers steps 0-1000, seed 2 only 0-300: from 400 on a single seed is left.
    write_trial(tmp_path / "a", _config(1.0, 1), STEPS, STEPS)
    write_trial(tmp_path / "b", _config(1.0, 2), STEPS[:4], 2 * STEPS[:4])
    (curve,) = _quiet_aggregate(plotting.load_trials([tmp_path]), group_by="epsilon")
    assert curve.has_band and not curve.one_point_per_trial
    axes = plotting.build_figure([curve]).axes[0]
    (band,) = axes.collections
    band_x = np.concatenate([path.vertices[:, 0] for path in band.get_paths()])
    assert band_x.max() == pytest.approx(300) and band_x.min() == pytest.approx(0)
    assert axes.get_title() == (
        "env_runners/episode_return_mean: median and 15th–85th percentile band over seeds "
        "(band where ≥ 2 seeds share an x)"
    )


def test_single_seed_curves_have_no_band_and_say_so(tmp_path: Path) -> None:
    write_trial(tmp_path / "a", _config(1.0, 1), STEPS, STEPS)
    write_trial(tmp_path / "b", _config(5.0, 1), STEPS, 2 * STEPS)
    curves = _quiet_aggregate(plotting.load_trials([tmp_path]), group_by="epsilon")
    axes = plotting.build_figure(curves).axes[0]
    assert len(axes.lines) == 2 and not axes.collections
    assert axes.get_title().endswith(": one trial per curve (no band)")


def test_full_band_title_when_every_x_has_seeds(sweep: Path) -> None:
    axes = plotting.build_figure(_quiet_aggregate(plotting.load_trials([sweep]))).axes[0]
    assert axes.get_title() == (
        "env_runners/episode_return_mean: median and 15th–85th percentile band over seeds"
    )


def test_cli_plot_of_a_one_iteration_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _one_iteration_sweep(tmp_path / "sweep")
    output = tmp_path / "points.png"
    assert tools_main(["plot", str(root), "--group-by", "epsilon", "-o", str(output)]) == 0
    captured = capsys.readouterr()
    assert "notice: every trial of epsilon=1, epsilon=10 reported one result" in captured.err
    assert _png_size(output)[0] > 0
