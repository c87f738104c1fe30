"""The InstanceWiseLaplace environment: spaces, reward rules, data and config errors."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rllib_privacy.accounting.pdp import instance_privacy_losses
from rllib_privacy.envs import INSTANCE_LAPLACE_ENV_ID, InstanceWiseLaplaceEnv
from rllib_privacy.envs.instance_laplace import positional_encoding
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms.instance_laplace import kl_divergence, privatized_pmf

# Actions of the paper's set, by index.
WIDE_3, WIDE_2, HALF, SMALL, TINY = range(5)


def _csv(tmp_path: Path, text: str, name: str = "data.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _utility_reward(info: dict) -> float:
    """R_U of the paper: 1 - KL_DRL/KL_LAP when below Laplace's KL, else -1."""
    return 1.0 - info["kl_ratio"] if info["kl_ratio"] < 1.0 else -1.0


def _env(tmp_path: Path, values: list[float], **config) -> InstanceWiseLaplaceEnv:
    text = "x\n" + "".join(f"{v}\n" for v in values)
    return InstanceWiseLaplaceEnv({"data_path": _csv(tmp_path, text), "shuffle": False, **config})


def test_passes_gymnasium_check_env_and_is_registered() -> None:
    check_env(InstanceWiseLaplaceEnv({"max_instances": 25}), skip_render_check=True)
    env = gym.make(INSTANCE_LAPLACE_ENV_ID, dataset="linnerud", bins=8)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.unwrapped.n == 20


def test_observation_is_encoding_then_pmf_and_episode_visits_every_instance_once() -> None:
    env = InstanceWiseLaplaceEnv({"max_instances": 40, "bins": 10, "pe_dim": 8})
    obs, _ = env.reset(seed=3)
    assert obs.shape == (18,) and env.observation_space.contains(obs)
    first = env._order[0]
    position = 1000.0 * (env.values[first] - env.values.min()) / env.delta_f
    np.testing.assert_allclose(obs[:8], positional_encoding(position, 8), atol=1e-6)
    assert obs[8:].sum() == pytest.approx(1.0, abs=1e-5)
    assert sorted(env._order) == list(range(env.n))
    steps, terminated = 0, False
    while not terminated:
        _, _, terminated, truncated, info = env.step(HALF)
        steps += 1
        assert not truncated
    assert steps == env.n and np.all(env.scales == env.action_scales[HALF])
    other = InstanceWiseLaplaceEnv({"max_instances": 40})
    other.reset(seed=4)
    assert list(other._order) != list(env._order)  # shuffled per episode


def test_paper_actions_are_the_five_scales() -> None:
    env = InstanceWiseLaplaceEnv({"max_instances": 30, "epsilon": 0.5})
    d = env.delta_f
    np.testing.assert_allclose(
        env.action_scales, [3 * d / 0.5, 2 * d / 0.5, d / 2, 0.01 * d / 2, 0.001 * d / 2]
    )
    assert env.uniform_scale == pytest.approx(d / 0.5)


def test_reward_small_scale_on_a_frequent_value_is_positive(tmp_path: Path) -> None:
    # 60 copies of 0 and a few other values: a copy of 0 at Δf/2 is hidden among its
    # copies (pDP holds) and sharpens the output PMF (KL falls below uniform Laplace's).
    env = _env(tmp_path, [0.0] * 60 + [5.0, 10.0, 7.0], epsilon=0.5)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(HALF)
    assert info["loss"] <= 0.5 and info["kl_ratio"] < 1.0
    assert reward == pytest.approx(1.0 + (1.0 - info["kl_ratio"]))
    assert reward > 1.0


def test_reward_tiny_scale_on_an_isolated_value_violates_pdp(tmp_path: Path) -> None:
    env = _env(tmp_path, [10.0] + [0.0] * 30, epsilon=0.5)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(TINY)
    assert info["loss"] > 0.5
    assert reward == pytest.approx(-1.0 + _utility_reward(info))  # R_E = -1


def test_reward_wider_than_laplace_gets_both_penalties(tmp_path: Path) -> None:
    # More noise than uniform Laplace: R_U = -1. Under the mixture reading a lone widest
    # component also dominates both tails of p_D but is absent from p_{D∖{z}}, so the
    # density ratio is unbounded there: R_E = -1 as well.
    env = _env(tmp_path, [0.0, 1.0, 2.0, 3.0, 4.0, 4.0], epsilon=1.0)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(WIDE_3)
    assert info["kl_ratio"] > 1.0 and info["loss"] > 1.0
    assert reward == pytest.approx(-2.0)


def test_terminal_check_sees_a_violation_that_later_choices_caused(tmp_path: Path) -> None:
    # The isolated first instance at Δf/2 passes while the 20 others sit at the uniform
    # Δf/ε; once they all move to the wider 3Δf/ε their density at 0 drops and it fails.
    values = [0.0] + [1.0] * 10
    epsilon = 0.5
    wide = np.array([0.5] + [1.0 / epsilon] * 10)
    final = np.array([0.5] + [3.0 / epsilon] * 10)
    assert instance_privacy_losses(values, wide)[0] <= epsilon  # precondition
    assert instance_privacy_losses(values, final)[0] > epsilon
    env = _env(tmp_path, values, epsilon=epsilon)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(HALF)
    assert info["loss"] <= epsilon and reward - (1 - info["kl_ratio"]) > 0  # R_E = +1
    for _ in range(9):
        env.step(WIDE_3)
    _, reward, terminated, _, info = env.step(WIDE_3)
    assert terminated and info["pdp_violations"] == 1
    assert info["pdp_pass_rate"] == pytest.approx(10 / 11)
    assert info["loss"] <= epsilon  # the last instance itself is fine ...
    assert reward == pytest.approx(-1.0 + -1.0)  # ... but R_E = -1 (and KL > Laplace's)


def test_unassigned_same_judges_a_choice_as_if_everyone_left_made_it(tmp_path: Path) -> None:
    # A copy of a frequent value at 0.005·Δf towers over its 19 copies at the uniform Δf/ε
    # (the default rule: fails), but is one of 20 equal peaks if they all take it (passes).
    values = [0.0] * 20 + [1.0] * 20
    uniform = _env(tmp_path, values, epsilon=0.5)
    same = _env(tmp_path, values, epsilon=0.5, unassigned="same")
    for env in (uniform, same):
        env.reset(seed=0)
    _, _, _, _, info_uniform = uniform.step(SMALL)
    _, _, _, _, info_same = same.step(SMALL)
    expected = instance_privacy_losses(values, np.full(40, 0.005), instances=[0])[0]
    assert info_same["loss"] == pytest.approx(expected)
    assert info_same["loss"] <= 0.5 < info_uniform["loss"]
    with pytest.raises(PrivacyConfigError, match="key 'unassigned' must be one of"):
        InstanceWiseLaplaceEnv({"unassigned": "optimistic"})


def test_terminal_penalty_counts_every_violating_instance(tmp_path: Path) -> None:
    # Three isolated values at a tiny scale among wide copies of 0: all three fail.
    env = _env(tmp_path, [0.0] * 10 + [3.0, 6.0, 9.0], epsilon=0.5)
    env.reset(seed=0)
    for _ in range(10):
        env.step(HALF)
    for _ in range(2):
        env.step(TINY)
    _, reward, terminated, _, info = env.step(TINY)
    assert terminated and info["pdp_violations"] == 3
    assert reward == pytest.approx(-3.0 + _utility_reward(info))


@pytest.mark.parametrize(
    ("text", "config", "message"),
    [
        ("x\n", {}, "has no values (empty dataset)"),
        ("", {}, "is empty (no header row)"),
        ("x\n1\nabc\n", {}, "non-numeric value 'abc' at line 3"),
        ("x\n1\nnan\n2\n", {}, "NaN/inf value(s) (first at data row 2)"),
        ("x\n3\n3\n3\n", {}, "needs at least 2 distinct values"),
        ("x,y\n1,2\n", {"column": "z"}, "env_config key 'column' must be a column of"),
        ("x,y\n1,2\n", {}, "env_config key 'column' is needed"),
    ],
)
def test_bad_data_is_named(tmp_path: Path, text: str, config: dict, message: str) -> None:
    with pytest.raises(PrivacyConfigError, match="data_path|column") as info:
        InstanceWiseLaplaceEnv({"data_path": _csv(tmp_path, text), **config})
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"epsilonn": 1.0}, "key 'epsilonn' is not known to InstanceWiseLaplace; did you mean"),
        ({"epsilon": 0}, "key 'epsilon' must be a finite number > 0"),
        ({"bins": 1}, "key 'bins' must be an int >= 2"),
        ({"pe_dim": 7}, "key 'pe_dim' must be an even int"),
        ({"actions": ["3/eps", "x/eps"]}, "key 'actions' must be a list of entries"),
        ({"actions": [0.5]}, "key 'actions' must be a list of at least 2"),
        ({"dataset": "iris"}, "key 'dataset' must be one of ['diabetes', 'linnerud']"),
        ({"column": "height"}, "key 'column' must be a column of dataset 'diabetes'"),
        ({"data_path": "/nonexistent.csv"}, "key 'data_path': cannot read"),
    ],
)
def test_bad_settings_are_named(config: dict, message: str) -> None:
    with pytest.raises(PrivacyConfigError) as info:
        InstanceWiseLaplaceEnv(config)
    assert message in str(info.value)


def test_custom_actions_and_csv_column(tmp_path: Path) -> None:
    path = _csv(tmp_path, "id,height\n1,180\n2,190\n3,185\n4,200\n")
    env = InstanceWiseLaplaceEnv(
        {"data_path": path, "column": "height", "epsilon": 2.0, "actions": ["1/eps", 0.25]}
    )
    np.testing.assert_allclose(env.action_scales, [20.0 / 2.0, 5.0])
    assert env.action_space.n == 2
    # The action equal to the uniform scale reproduces uniform Laplace exactly.
    env.reset(seed=0)
    for _ in range(3):
        env.step(0)
    _, _, terminated, _, info = env.step(0)
    assert terminated and info["kl_ratio"] == pytest.approx(1.0)


def test_released_scales_are_repaired_and_the_summary_counts_the_repair(tmp_path: Path) -> None:
    # The three isolated values at a tiny scale violate pDP; the released assignment (the
    # episode summary's `scales`, and `release()`) is the repaired one, with zero violations.
    values = [0.0] * 10 + [3.0, 6.0, 9.0]
    env = _env(tmp_path, values, epsilon=0.5)
    env.reset(seed=0)
    for action in [HALF] * 10 + [TINY] * 3:
        _, _, terminated, _, info = env.step(action)
    assert terminated and info["pdp_violations"] == 3
    np.testing.assert_array_equal(info["policy_scales"], env.scales)
    released = info["scales"]
    assert np.all(instance_privacy_losses(values, released) <= 0.5)
    assert np.all(released >= info["policy_scales"])
    assert info["repaired_instances"] == np.count_nonzero(released > info["policy_scales"]) >= 3
    kl = kl_divergence(env.data_pmf, privatized_pmf(env.values, released, env.edges))
    assert info["kl_ratio_repaired"] == pytest.approx(kl / env.kl_laplace)
    np.testing.assert_array_equal(env.released_scales(), released)
    noisy = env.release(np.random.default_rng(3))
    expected = env.values + np.random.default_rng(3).laplace(0.0, released)
    np.testing.assert_allclose(noisy, expected)


def test_feasible_episode_needs_no_repair(tmp_path: Path) -> None:
    env = _env(tmp_path, [0.0] * 10 + [3.0, 6.0, 9.0], epsilon=0.5)
    env.reset(seed=0)
    for _ in range(13):
        _, _, _, _, info = env.step(HALF)
    assert info["pdp_violations"] == 0 and info["repaired_instances"] == 0
    np.testing.assert_array_equal(info["scales"], info["policy_scales"])
    assert info["kl_ratio_repaired"] == pytest.approx(info["kl_ratio"])


def test_geometric_actions_span_the_smallest_paper_scale_to_uniform(tmp_path: Path) -> None:
    env = _env(tmp_path, [0.0, 1.0, 4.0], epsilon=0.1, actions="geometric:6")
    assert env.action_space.n == 6
    np.testing.assert_allclose(env.action_scales, np.geomspace(0.0005 * 4.0, 40.0, 6))
    for bad in ("geometric:1", "geometric", "linear:5"):
        with pytest.raises(PrivacyConfigError, match="key 'actions' must be"):
            InstanceWiseLaplaceEnv({"actions": bad})
    with pytest.raises(PrivacyConfigError, match="key 'actions' must be a scale set that fits"):
        InstanceWiseLaplaceEnv({"actions": "geometric:4", "epsilon": 5000.0})


def test_marginal_utility_reward_telescopes_to_the_final_kl(tmp_path: Path) -> None:
    values = [0.0] * 6 + [1.0] * 6 + [3.0, 5.0]
    paper = _env(tmp_path, values, epsilon=1.0)
    marginal = _env(tmp_path, values, epsilon=1.0, utility_reward="marginal")
    actions = [HALF, SMALL, HALF, WIDE_2, SMALL, HALF, TINY] * 2
    total, kl_before = 0.0, marginal.kl_laplace
    for env in (paper, marginal):
        env.reset(seed=0)
    for action in actions:
        _, r_paper, _, _, info_paper = paper.step(action)
        _, r_marginal, done, _, info = marginal.step(action)
        # Same R_E, same KL; only R_U differs: n·(KL_{t-1} - KL_t)/KL_LAP.
        assert info["kl"] == info_paper["kl"]
        r_e = r_paper - _utility_reward(info_paper)
        r_u = len(values) * (kl_before - info["kl"]) / marginal.kl_laplace
        assert r_marginal == pytest.approx(r_e + r_u)
        total += r_u
        kl_before = info["kl"]
    assert done
    assert total == pytest.approx(len(values) * (1 - info["kl_ratio"]))
    with pytest.raises(PrivacyConfigError, match="key 'utility_reward' must be one of"):
        InstanceWiseLaplaceEnv({"utility_reward": "dense"})


# ---------------------------------------------------------------- formulation: improve

# 30 copies of 5 (may go narrow at ε = 1), 10 of 2 and of 8, one lone 9 (must stay wide).
IMPROVE_VALUES = [5.0] * 30 + [2.0] * 10 + [8.0] * 10 + [9.0]


def test_improve_starts_at_the_best_single_scale_and_visits_values_by_frequency(
    tmp_path: Path,
) -> None:
    from rllib_privacy.accounting.ilm_scales import best_single_scale

    env = _env(tmp_path, IMPROVE_VALUES, epsilon=1.0, formulation="improve", passes=3, bins=8)
    obs, _ = env.reset(seed=0)
    best = best_single_scale(env.values, 1.0, env.action_scales, env.edges)
    assert best.scale is not None and np.all(env.scales == best.scale)
    assert env.observation_space.contains(obs) and obs.shape == (16 + 1 + 6 + 5 + 3,)
    # Distinct values are sorted (2, 5, 8, 9); most frequent first: 5, 2, 8, then 9.
    assert list(env._order) == [1, 0, 2, 3] * 3
    assert obs[16] == pytest.approx(1.0)  # share of the most frequent value
    assert obs[17 + best.index] == 1.0 and obs[17:23].sum() == 1.0  # current-scale one-hot
    steps, terminated = 0, False
    while not terminated:
        _, reward, terminated, _, info = env.step(best.index)  # stay: no move, no reward
        assert reward == 0.0
        steps += 1
    assert steps == 12 and info["accepted_moves"] == info["rejected_moves"] == 0
    assert info["kl_ratio"] == pytest.approx(best.kl / env.kl_laplace)
    assert info["kl_ratio_start"] == pytest.approx(info["kl_ratio"])


def test_improve_accepts_a_feasible_move_with_the_log_kl_reward_and_rejects_a_violation(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path, IMPROVE_VALUES, epsilon=1.0, formulation="improve", passes=1, bins=8)
    obs, _ = env.reset(seed=0)
    kl_before = kl_divergence(env.data_pmf, privatized_pmf(env.values, env.scales, env.edges))
    # The observation's KL changes rank the moves as the env's own KL does.
    change = obs[23:28]
    _, reward, _, _, info = env.step(SMALL)  # the 30 copies of 5 go to 0.005·Δf
    assert env.move_counts == {"accepted": 1, "rejected": 0}
    fives = env.values == 5.0
    assert np.all(env.scales[fives] == env.action_scales[SMALL])
    assert np.all(instance_privacy_losses(env.values, env.scales) <= 1.0)
    kl_after = kl_divergence(env.data_pmf, privatized_pmf(env.values, env.scales, env.edges))
    assert info["kl"] == pytest.approx(kl_after, rel=1e-9)
    assert change[SMALL] == pytest.approx(kl_after / kl_before - 1.0, rel=1e-5, abs=1e-6)
    assert reward == pytest.approx(4 * np.log(kl_before / kl_after), rel=1e-9)  # 4 groups
    assert reward > 0
    assert env.step(HALF)[1] == 0.0 and env.step(HALF)[1] == 0.0  # 2 and 8 stay
    scales_before = env.scales.copy()
    _, reward, terminated, _, info = env.step(TINY)  # the lone 9 at 0.0005·Δf: violates
    assert terminated and reward == -1.0
    np.testing.assert_array_equal(env.scales, scales_before)  # rejected: nothing changed
    assert info["rejected_moves"] == 1 and info["accepted_moves"] == 1
    assert info["pdp_violations"] == 0
    assert info["repaired_instances"] == 0
    np.testing.assert_array_equal(info["scales"], env.scales)


def test_improve_episode_rewards_telescope_to_the_log_kl_ratio(tmp_path: Path) -> None:
    env = _env(tmp_path, IMPROVE_VALUES, epsilon=1.0, formulation="improve", passes=2, bins=8)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    total, penalties, terminated = 0.0, 0, False
    while not terminated:
        _, reward, terminated, _, info = env.step(int(rng.integers(env.action_space.n)))
        total += reward
    penalties = info["rejected_moves"]
    kl_start = info["kl_ratio_start"] * env.kl_laplace
    assert total == pytest.approx(4 * np.log(kl_start / info["kl"]) - penalties, rel=1e-9)
    assert np.all(instance_privacy_losses(env.values, env.scales) <= 1.0)


def test_improve_shuffle_permutes_each_pass_and_settings_are_checked(tmp_path: Path) -> None:
    env = _env(tmp_path, IMPROVE_VALUES, epsilon=1.0, formulation="improve", passes=4, shuffle=True)
    orders = set()
    for seed in range(5):
        env.reset(seed=seed)
        sweeps = env._order.reshape(4, 4)
        assert all(sorted(sweep) == [0, 1, 2, 3] for sweep in sweeps)
        orders.add(tuple(env._order))
    assert len(orders) > 1
    with pytest.raises(PrivacyConfigError, match="key 'formulation' must be one of"):
        InstanceWiseLaplaceEnv({"formulation": "greedy"})
    with pytest.raises(PrivacyConfigError, match="key 'passes' must be an int >= 1"):
        InstanceWiseLaplaceEnv({"formulation": "improve", "passes": 0})


def test_improve_passes_gymnasium_check_env() -> None:
    env = InstanceWiseLaplaceEnv(
        {"max_instances": 60, "formulation": "improve", "actions": "geometric:6", "epsilon": 1.0}
    )
    check_env(env, skip_render_check=True)
    assert env.action_space.n == 6 and env.observation_space.shape == (16 + 1 + 7 + 6 + 3,)


class _ArgminModule:
    """A stand-in RLModule for an ``improve`` env: the action of lowest KL change."""

    def __init__(self, env: InstanceWiseLaplaceEnv) -> None:
        self.observation_space, self.action_space = env.observation_space, env.action_space
        self._start = env.observation_space.shape[0] - 3 - env.action_space.n

    def forward_inference(self, batch: dict) -> dict:
        obs = np.asarray(batch["obs"])[0]
        change = obs[self._start : self._start + self.action_space.n]
        return {"actions": np.array([int(np.argmin(change))])}


def test_ilm_evaluate_rolls_out_an_improve_policy_and_refuses_the_wrong_formulation(
    tmp_path: Path,
) -> None:
    from rllib_privacy.cli.ilm_evaluate import evaluate

    path = _csv(tmp_path, "x\n" + "".join(f"{v}\n" for v in IMPROVE_VALUES))
    config = {"data_path": path, "epsilon": 1.0, "formulation": "improve", "passes": 2}
    module = _ArgminModule(InstanceWiseLaplaceEnv(config))
    result = evaluate(module, data=path, epsilon=1.0, formulation="improve", passes=2)
    # Every move is checked, so the policy's own scales never violate and need no repair.
    assert result.violations == 0 and result.repaired_instances == 0
    assert result.kl_policy < result.kl_best_single
    # 6 actions make a longer improve observation than the module's 5-action one.
    with pytest.raises(PrivacyConfigError, match="expects observations of size 31.* gives 33"):
        evaluate(module, data=path, epsilon=1.0, formulation="improve", actions="geometric:6")
