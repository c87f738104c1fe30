"""Shared result-key helpers of rllib_privacy.utils.metrics against RLlib's keys."""

from __future__ import annotations


def test_metric_key_literals_match_rllibs_constants() -> None:
    """utils.metrics spells RLlib's result keys out (no Ray import); they must stay equal."""
    from ray.rllib.utils import metrics as rllib_metrics

    from rllib_privacy.utils import metrics

    assert metrics.RLLIB_ENV_RUNNER_RESULTS == rllib_metrics.ENV_RUNNER_RESULTS
    assert metrics.RLLIB_EPISODE_RETURN_MEAN == rllib_metrics.EPISODE_RETURN_MEAN
    assert (
        metrics.RLLIB_NUM_ENV_STEPS_SAMPLED_LIFETIME == rllib_metrics.NUM_ENV_STEPS_SAMPLED_LIFETIME
    )


def test_ppo_family_results_put_return_and_steps_first() -> None:
    from rllib_privacy.utils.metrics import ppo_family_results

    results = {
        "x": 1,
        "env_runners": {"episode_return_mean": 42.0},
        "num_env_steps_sampled_lifetime": 1000,
        "privacy/epsilon_spent": 3.0,
    }
    out = ppo_family_results(results, ("episode_return_mean", "privacy/epsilon_spent"))
    assert list(out)[:2] == ["episode_return_mean", "privacy/epsilon_spent"]
    assert out["episode_return_mean"] == 42.0 and out["timesteps_total"] == 1000
    assert out["x"] == 1
