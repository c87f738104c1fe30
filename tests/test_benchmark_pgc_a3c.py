"""benchmarks/pgc_a3c.py without starting Ray: its statistics, RESULTS.md, reference runner."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

INF = math.inf
_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "pgc_a3c.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("pgc_a3c_benchmark", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_script_does_not_import_ray_at_module_level(bench) -> None:
    source = _PATH.read_text()
    top_level = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not any("ray" in line or "torch" in line for line in top_level), top_level


def test_median_fst_odd_even_and_failures(bench) -> None:
    assert bench.median_fst([300.0, 100.0, 200.0]) == 200.0
    assert bench.median_fst([400.0, 100.0, 300.0, 200.0]) == 250.0
    # Failures sort last: 2 of 5 failed -> still finite.
    assert bench.median_fst([INF, 100.0, INF, 300.0, 200.0]) == 300.0
    # More than half failed -> ∞; exactly half of an even count -> ∞ as well.
    assert bench.median_fst([INF, INF, 100.0]) == INF
    assert bench.median_fst([INF, 100.0, INF, 200.0]) == INF
    assert bench.median_fst([INF, INF]) == INF
    assert math.isnan(bench.median_fst([]))


def test_censor_treats_missing_and_beyond_cap_as_failure(bench) -> None:
    assert bench.censor([50.0, None, 150.0, 100.0], cap=100) == [50.0, INF, INF, 100.0]


def test_success_ratio(bench) -> None:
    assert bench.success_ratio([100.0, INF, 300.0, 1000.0], cap=300) == 0.5
    assert bench.success_ratio([INF, INF], cap=300) == 0.0
    assert bench.success_ratio([0.0, 300.0], cap=300) == 1.0
    assert math.isnan(bench.success_ratio([], cap=300))


def test_success_auc_is_the_area_under_the_success_curve(bench) -> None:
    cap = 1000
    fsts = [100.0, 400.0, INF, 2000.0]
    # Mean over trials of max(0, cap - FST)/cap: (0.9 + 0.6 + 0 + 0) / 4.
    assert bench.success_auc(fsts, cap) == pytest.approx(0.375)
    # Same as integrating success(n) = #{FST_k <= n}/K numerically over [0, cap].
    steps = 10_000
    riemann = sum(sum(f <= (i + 0.5) * cap / steps for f in fsts) / len(fsts) for i in range(steps))
    assert bench.success_auc(fsts, cap) == pytest.approx(riemann / steps, abs=1e-3)
    assert bench.success_auc([INF, INF], cap) == 0.0
    with pytest.raises(ValueError, match="cap"):
        bench.success_auc([1.0], 0)


def test_relative_auc(bench) -> None:
    cap = 1000
    baseline = [100.0, 200.0]  # AUC 0.85
    assert bench.relative_auc([100.0, 200.0], baseline, cap) == pytest.approx(1.0)
    assert bench.relative_auc([500.0, INF], baseline, cap) == pytest.approx(0.25 / 0.85)
    assert bench.relative_auc([INF], baseline, cap) == 0.0
    # A baseline that never succeeded gives no reference: NaN, not a division error.
    assert math.isnan(bench.relative_auc([100.0], [INF, INF], cap))


def test_compute_statistics_fills_every_setting(bench) -> None:
    def trials(fsts):
        return [
            bench.TrialResult(
                seed=k, fst=f, submissions=0, env_steps=0, wall_s=1.0, trial_id=str(k)
            )
            for k, f in enumerate(fsts)
        ]

    cap = 1000
    private = bench.SettingResult(bench.Setting("laplace", 1.0), trials([500.0, INF, 1500.0]), cap)
    base = bench.SettingResult(bench.Setting("none", INF), trials([100.0, 200.0, 300.0]), cap)
    bench.compute_statistics([private, base], baseline_key=("none", INF))
    assert private.median_fst == INF  # 1500 is beyond the cap: 2 of 3 failed
    assert private.success_ratio == pytest.approx(1 / 3)
    assert private.relative_auc == pytest.approx((0.5 / 3) / (2.4 / 3))
    assert base.relative_auc == pytest.approx(1.0) and base.median_fst == 200.0


def test_results_md_sections_are_replaced_in_place(bench, tmp_path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text("# Benchmark results\n\n## other benchmark\n\nkeep me\n")
    bench.update_results_md(path, {"tuned": "first tuned", "speed": "first speed"})
    bench.update_results_md(path, {"tuned": "second tuned"})
    text = path.read_text()
    assert "keep me" in text and "first speed" in text and "second tuned" in text
    assert "first tuned" not in text
    assert text.count(bench.SECTION_START) == 1 and text.count("pgc_a3c:tuned:start") == 1


def test_reference_runner_matches_the_fast_runners_gradient() -> None:
    """The speed baseline computes the same gradient for the same episode (no Ray started)."""
    import numpy as np
    from ray.rllib.core import DEFAULT_MODULE_ID

    from rllib_privacy.algorithms.ldp_a3c import GradientSubmission, LDPA3CConfig
    from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import _LocalAgent, _Trajectory
    from rllib_privacy.algorithms.ldp_a3c.reference_env_runner import (
        RLlibSamplingLDPA3CEnvRunner,
    )

    config = (
        LDPA3CConfig()
        .env_runners(num_env_runners=0)
        .training(mechanism="none", epsilon=INF, loss_reduction="mean")
        .debugging(seed=1)
    )
    runner = RLlibSamplingLDPA3CEnvRunner(config=config)
    try:
        weights = np.random.default_rng(0).normal(0.0, 0.3, 112).astype(np.float32)
        out = runner.submit_gradients(
            weights=weights, weights_version=7, submissions_so_far=0, num_submissions=2
        )
        assert [type(s) for s in out] == [GradientSubmission] * 2
        assert all(s.weights_version == 7 and s.env_steps == s.score > 0 for s in out)
        assert len({s.agent_id for s in out}) == 2
        learner = runner._learner()
        module = learner.module[DEFAULT_MODULE_ID]
        episode = runner.sample(num_episodes=1, explore=True)[0]
        trajectory = _Trajectory(
            obs=list(episode.get_observations()[:-1]),
            actions=[int(a) for a in episode.get_actions()],
            rewards=[float(r) for r in episode.get_rewards()],
            last_obs=episode.get_observations(-1),
            terminated=episode.is_terminated,
            done=True,
        )
        fast = runner._submission(learner, module, _LocalAgent("a"), trajectory, 0)
        batch = runner._episode_batch(learner, episode)
        reference = runner._privatized_submission(
            learner, module, _LocalAgent("b"), batch, score=1.0, env_steps=1, weights_version=0
        )
        np.testing.assert_allclose(reference.gradient, fast.gradient, rtol=1e-6, atol=1e-7)
    finally:
        runner.stop()
