"""The privacy-first TensorBoard layout: what it charts, the ε budget line, a real trial's files."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from rllib_privacy.utils.tensorboard_layout import (
    EPSILON_BUDGET_TAG,
    LATER_KEYS,
    epsilon_budget,
    privacy_layout,
    privacy_layout_callback,
    scalar_keys,
)

REPO = Path(__file__).resolve().parents[2]
LAYOUT_TAG = "custom_scalars__config__"

#: The shape of an LDPA3C result (first iteration: not solved yet).
LDP_A3C_RESULT: dict[str, Any] = {
    "training_iteration": 1,
    "submissions": 256,
    "config": {"lr": 0.02},
    "privacy": {"epsilon_spent": 1.0, "releases": 256, "delta_spent": 0.0},
    "ldp": {"submissions": 256, "score_mean": 21.0, "solved": 0.0, "eval_return_mean": 9.5},
    "env_runners": {"episode_return_mean": 21.0},
    "learners": {"default_policy": {"exploration/bonus_mean": 0.1}},
    "trial_id": "abc",  # not a number: no chart
}


def _numbers(result: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """A result's numbers by ``/``-joined key, as Tune's TensorBoard logger flattens them."""
    flat: dict[str, float] = {}
    for name, value in result.items():
        if isinstance(value, dict):
            flat.update(_numbers(value, f"{prefix}{name}/"))
        elif isinstance(value, int | float):
            flat[f"{prefix}{name}"] = float(value)
    return flat


def _matches(pattern: str, tags: set[str]) -> list[str]:
    return [tag for tag in tags if re.match(pattern, tag)]


def test_layout_puts_privacy_first_then_the_components_the_trial_reports() -> None:
    layout = privacy_layout(scalar_keys(LDP_A3C_RESULT))
    assert list(layout) == ["privacy", "ldp", "exploration"]  # no kickstart, pate, ilm
    privacy = layout["privacy"]
    assert list(privacy)[:5] == [
        "ε spent and the ε budget",
        "releases",
        "solved (0/1): the score reached the target",
        "solved at (submissions)",
        "return: evaluation and training",
    ]
    tags = {
        "ray/tune/privacy/epsilon_spent",
        EPSILON_BUDGET_TAG,
        "ray/tune/ldp/eval_return_mean",
        "ray/tune/env_runners/episode_return_mean",
        "ray/tune/ldp/solved_at",
        "ray/tune/privacy/epsilon_spent_other",  # patterns are anchored: no prefix match
    }
    # Two lines on one chart: ε spent and the budget.
    assert sorted(sum((_matches(p, tags) for p in privacy["ε spent and the ε budget"]), [])) == [
        EPSILON_BUDGET_TAG,
        "ray/tune/privacy/epsilon_spent",
    ]
    assert _matches(privacy["solved at (submissions)"][0], tags) == ["ray/tune/ldp/solved_at"]
    # A key that appears only once solved has its chart from the start.
    assert "ldp/solved_at" in layout["ldp"] and "ldp/score_mean" in layout["ldp"]
    assert layout["exploration"] == {
        "exploration/bonus_mean": [r"^ray/tune/learners/default_policy/exploration/bonus_mean$"]
    }


def test_a_key_copied_to_the_top_is_charted_once() -> None:
    result = {"ilm": {"kl_ratio": 0.5}, "env_runners": {"ilm": {"kl_ratio": 0.5}}}
    assert privacy_layout(scalar_keys(result)) == {
        "ilm": {"ilm/kl_ratio": [r"^ray/tune/ilm/kl_ratio$"]}
    }


def test_epsilon_budget_of_each_algorithm_config() -> None:
    from rllib_privacy.algorithms.count_exploration import ExplorationPPOConfig
    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
    from rllib_privacy.algorithms.ldp_ppo import LDPPPOConfig
    from rllib_privacy.algorithms.pate_ppo import PATEPPOConfig

    assert epsilon_budget(LDPA3CConfig().update_from_dict({"privacy_epsilon": 2.0})) == 2.0
    assert epsilon_budget(LDPPPOConfig()) is None  # no learner budget by default (inf)
    budgeted = LDPPPOConfig().update_from_dict({"privacy_epsilon_budget": 3.0})
    assert epsilon_budget(budgeted) == 3.0
    teacher = KickstartPPOConfig().update_from_dict({"teacher_epsilon_budget": 4.0})
    assert epsilon_budget(teacher) == 4.0
    assert epsilon_budget(PATEPPOConfig().update_from_dict({"pate_epsilon_budget": 5.0})) == 5.0
    assert epsilon_budget(ExplorationPPOConfig()) is None  # not a privacy mechanism
    assert epsilon_budget(type("C", (), {"pate_epsilon_budget": math.inf})()) is None


@pytest.mark.ray
def test_a_tune_trial_holds_the_layout_and_the_budget_line(
    ray_session: Any, tmp_path: Path
) -> None:
    from ray import tune
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.plugins.custom_scalar import layout_pb2

    from rllib_privacy.experiments import load_experiments

    (exp,) = load_experiments(REPO / "tuned_configs" / "ldp_a3c.yaml").experiments
    config = exp.config_for(False)
    config.update(aggregator_submissions_per_iteration=256, scoring_eval_episodes=2)
    tune.Tuner(
        exp.run,
        param_space=config,
        run_config=tune.RunConfig(
            name="layout",
            storage_path=str(tmp_path),
            stop={"training_iteration": 1},
            callbacks=[privacy_layout_callback()],
            verbose=0,
        ),
    ).fit()

    (trial_dir,) = [p.parent for p in (tmp_path / "layout").glob("*/result.json")]
    events = event_accumulator.EventAccumulator(str(trial_dir))  # every event file of the run
    events.Reload()
    (layout_event,) = events.Tensors(LAYOUT_TAG)
    layout = layout_pb2.Layout.FromString(layout_event.tensor_proto.string_val[0])
    assert [c.title for c in layout.category] == ["privacy", "ldp"]
    scalars = set(events.Tags()["scalars"])
    charts = {chart.title: list(chart.multiline.tag) for chart in layout.category[0].chart}
    epsilon_tags = sum((_matches(p, scalars) for p in charts["ε spent and the ε budget"]), [])
    assert sorted(epsilon_tags) == [EPSILON_BUDGET_TAG, "ray/tune/privacy/epsilon_spent"]
    # Every chart names tags the trial wrote, but those of what one iteration does not reach
    # (the solve point, the first success) and of numbers not defined yet (NaN: Tune skips them).
    first = json.loads((trial_dir / "result.json").read_text().splitlines()[0])
    undefined = [key for key, value in _numbers(first).items() if math.isnan(value)]
    later = {f"^ray/tune/{key}$" for key in (*LATER_KEYS, *undefined)}
    for category in layout.category:
        for chart in category.chart:
            found = sum((_matches(p, scalars) for p in chart.multiline.tag), [])
            assert found or set(chart.multiline.tag) <= later, (category.title, chart.title)
    # The budget line: LDPA3C's ε per agent (1), at the step Tune logs ε spent at.
    (budget,) = events.Scalars(EPSILON_BUDGET_TAG)
    (spent,) = events.Scalars("ray/tune/privacy/epsilon_spent")
    assert budget.value == 1.0 and budget.step == spent.step
