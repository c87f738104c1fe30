"""The teacher's answer cache, the student's query rule, and their checkpoint/journal behaviour."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from rllib_privacy.accounting import DEFAULT_ORDERS, dirichlet_rdp, rdp_to_epsilon
from rllib_privacy.accounting.journal import PrivacyJournal
from rllib_privacy.connectors.kickstart_teacher import (
    TEACHER_K,
    TEACHER_MASK,
    TEACHER_POLICY,
    AddTeacherAnswersToBatch,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.learners.kickstart_loss import KickstartLossSettings
from rllib_privacy.teachers import JOURNAL_COMPONENT, DirichletTeacher, TeacherSettings
from rllib_privacy.teachers.answer import TeacherAnswer
from rllib_privacy.teachers.answer_cache import AnswerCache

OBS_SPACE = gym.spaces.Box(
    np.array([-4.8, -np.inf, -0.42, -np.inf], np.float32),
    np.array([4.8, np.inf, 0.42, np.inf], np.float32),
)
ACT_SPACE = gym.spaces.Discrete(2)


class _Module:
    """A tiny RLModule stand-in: logits = W·s (the teacher only calls forward_inference)."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        config = PPOConfig().rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[8]))
        spec = config.get_default_rl_module_spec()
        spec.observation_space, spec.action_space = OBS_SPACE, ACT_SPACE
        spec.model_config = DefaultModelConfig(fcnet_hiddens=[8])
        self._module = spec.build()
        self.observation_space, self.action_space = OBS_SPACE, ACT_SPACE
        self.encoder, self.pi = self._module.encoder, self._module.pi

    def forward_inference(self, batch: dict[str, Any]) -> dict[str, Any]:
        return self._module.forward_inference(batch)


def _settings(**overrides: Any) -> TeacherSettings:
    values = {
        "k": 20.0,
        "eta": 0.1,
        "adjacency": 0.01,
        "seed": 0,
        "cache_bits": 6,
        "delta_samples": 1000,
        "vanishing_coefficient": 0.5,
    }
    values.update(overrides)
    return TeacherSettings(**values)


def _teacher(journal: Path | None = None, **overrides: Any) -> DirichletTeacher:
    return DirichletTeacher(
        _Module(), _settings(**overrides), journal_path=None if journal is None else str(journal)
    )


def _obs(n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (n, 4)) * np.array([2.0, 1.0, 0.2, 1.0])).astype(np.float32)


def _distinct_codes(teacher_bits: int, obs: np.ndarray) -> int:
    return len(set(AnswerCache(OBS_SPACE, bits=teacher_bits).keys(obs)))


def _rdp_epsilon(teacher: DirichletTeacher, releases: dict[float, int]) -> float:
    curve = sum(
        count * dirichlet_rdp(DEFAULT_ORDERS, k=k, eta=0.1, radius=teacher.radius, num_actions=2)
        for k, count in releases.items()
    )
    return rdp_to_epsilon(DEFAULT_ORDERS, curve, 1e-5)


# ---- the cache alone ---------------------------------------------------------------------


def test_codes_are_deterministic_and_coarser_with_fewer_bits() -> None:
    obs = _obs(500)
    coarse = AnswerCache(OBS_SPACE, bits=4)
    fine = AnswerCache(OBS_SPACE, bits=24)
    assert coarse.keys(obs) == AnswerCache(OBS_SPACE, bits=4).keys(obs)
    assert 1 < len(set(coarse.keys(obs))) <= 16
    assert len(set(fine.keys(obs))) > 4 * len(set(coarse.keys(obs)))
    # Nearby states share a code far more often than random pairs.
    near = obs + np.float32(1e-4)
    same_near = np.mean([a == b for a, b in zip(fine.keys(obs), fine.keys(near), strict=True)])
    same_random = np.mean(
        [a == b for a, b in zip(fine.keys(obs), fine.keys(obs[::-1]), strict=True)]
    )
    assert same_near > 0.9 > 0.2 > same_random


def test_cache_state_round_trips_and_rejects_another_code_length() -> None:
    cache = AnswerCache(OBS_SPACE, bits=8)
    keys = cache.keys(_obs(20))
    for index, key in enumerate(keys):
        cache.put(key, np.array([0.3, 0.7]), 5.0 + index)
    state = json.loads(json.dumps(cache.state_dict()))
    restored = AnswerCache(OBS_SPACE, bits=8)
    restored.load_state_dict(state)
    assert len(restored) == len(cache) == len(set(keys))
    for key in keys:
        np.testing.assert_array_equal(restored.get(key)[0], cache.get(key)[0])
        assert restored.get(key)[1] == cache.get(key)[1]
    with pytest.raises(PrivacyConfigError, match="teacher_cache_bits is 9"):
        AnswerCache(OBS_SPACE, bits=9).load_state_dict(state)


def test_cache_needs_a_box_observation_space() -> None:
    with pytest.raises(PrivacyConfigError, match="teacher_cache_bits needs a Box"):
        AnswerCache(gym.spaces.Discrete(3), bits=4)


@pytest.mark.parametrize("bits", [-1, 257, 2.5, True, "8"])
def test_bad_cache_bits_name_the_key(bits: Any) -> None:
    with pytest.raises(PrivacyConfigError, match="teacher_cache_bits must be an int in"):
        _settings(cache_bits=bits)


# ---- the teacher with a cache ------------------------------------------------------------


def test_each_code_is_released_once_and_later_states_get_the_same_answer_for_free() -> None:
    teacher = _teacher()
    obs = _obs(200)
    distinct = _distinct_codes(6, obs)
    teacher.start_rollout(expected_states=200)
    first = teacher.answer(obs)
    assert first.answered and first.mask.all()
    stats = teacher.stats()
    assert stats["releases"] == stats["answered"] == stats["cache_size"] == distinct < 200
    assert stats["cached"] == 200 - distinct and stats["asked"] == 200
    assert stats["epsilon_spent"] == pytest.approx(_rdp_epsilon(teacher, {20.0: distinct}))
    # Rows with the same code got the same answer.
    codes = AnswerCache(OBS_SPACE, bits=6).keys(obs)
    by_code: dict[bytes, np.ndarray] = {}
    for code, row in zip(codes, first.policies, strict=True):
        np.testing.assert_array_equal(by_code.setdefault(code, row), row)
    # The next rollout (k halves) asks the same states again: nothing new is spent, and the
    # answers keep the k they were drawn with.
    teacher.start_rollout(expected_states=200)
    again = teacher.answer(obs)
    np.testing.assert_array_equal(again.policies, first.policies)
    np.testing.assert_array_equal(again.row_k(200), np.full(200, 20.0, np.float32))
    assert teacher.stats()["releases"] == distinct
    assert teacher.stats()["cached"] == 400 - distinct


def test_new_codes_at_a_later_k_are_released_at_that_k() -> None:
    teacher = _teacher(cache_bits=16)
    teacher.start_rollout(expected_states=50)
    first = teacher.answer(_obs(50, seed=1))
    teacher.start_rollout(expected_states=50)
    second = teacher.answer(_obs(50, seed=2))
    codes_1 = set(AnswerCache(OBS_SPACE, bits=16).keys(_obs(50, seed=1)))
    codes_2 = AnswerCache(OBS_SPACE, bits=16).keys(_obs(50, seed=2))
    new = len({code for code in codes_2 if code not in codes_1})
    assert np.count_nonzero(second.row_k(50) == 10.0) >= new > 0
    releases = {20.0: teacher.stats()["releases"] - new, 10.0: new}
    assert releases[20.0] == len(codes_1) and first.mask.all()
    assert teacher.stats()["epsilon_spent"] == pytest.approx(_rdp_epsilon(teacher, releases))


def test_a_request_beyond_the_budget_is_answered_up_to_it_then_from_the_cache() -> None:
    probe = _teacher(cache_bits=16)
    one_release = _rdp_epsilon(probe, {20.0: 5})
    teacher = _teacher(cache_bits=16, epsilon_budget=one_release * 1.0001)
    obs = _obs(60)
    assert _distinct_codes(16, obs) > 5
    teacher.start_rollout(expected_states=60)
    answer = teacher.answer(obs)
    stats = teacher.stats()
    assert stats["releases"] == 5 and stats["sharing"] == 0.0
    assert stats["epsilon_spent"] <= stats["epsilon_budget"]
    served = answer.row_mask(60)
    assert 5 <= served.sum() < 60 and stats["refused"] == 60 - served.sum()
    # With the budget spent, the codes released are still served (post-processing) while the
    # k schedule lasts, and nothing more is spent.
    teacher.start_rollout(expected_states=60)
    later = teacher.answer(obs)
    np.testing.assert_array_equal(later.row_mask(60), served)
    assert teacher.stats()["releases"] == 5
    assert teacher.stats()["epsilon_spent"] == stats["epsilon_spent"]


def test_min_k_ends_the_cached_answers_too() -> None:
    # k₀ = 20, c = 0.5: the third rollout has k = 5 < 10, even with budget left.
    teacher = _teacher(min_k=10.0)
    obs = _obs(50)
    for expected in (True, True, False):
        teacher.start_rollout(expected_states=50)
        assert teacher.answer(obs).answered is expected
    assert teacher.stats()["releases"] == _distinct_codes(6, obs)
    assert teacher.stats()["refused"] == 50


def test_rollout_start_with_a_cache_needs_only_one_affordable_release() -> None:
    probe = _teacher(cache_bits=16)
    teacher = _teacher(cache_bits=16, epsilon_budget=_rdp_epsilon(probe, {20.0: 3}) * 1.0001)
    # A rollout of 2,000 states would not fit whole; with the cache it starts anyway.
    assert teacher.start_rollout(expected_states=2000)["sharing"] == 1.0
    whole = _teacher(cache_bits=0, epsilon_budget=teacher.stats()["epsilon_budget"])
    assert whole.start_rollout(expected_states=2000)["sharing"] == 0.0


def test_basic_composition_figures_are_reported_beside_rdp() -> None:
    teacher = _teacher(cache_bits=0)
    teacher.start_rollout(expected_states=30)
    teacher.answer(_obs(30))
    epsilon, delta = teacher.release_privacy(20.0)
    stats = teacher.stats()
    assert stats["epsilon_basic"] == pytest.approx(30 * epsilon)
    assert stats["delta_basic"] == pytest.approx(30 * delta)
    assert stats["epsilon_basic"] > stats["epsilon_spent"]


# ---- restore: neither re-pays nor forgets --------------------------------------------------


def test_a_crashed_teacher_restarts_with_its_cache_from_the_journal(tmp_path: Path) -> None:
    journal = tmp_path / "kickstart_teacher.jsonl"
    teacher = _teacher(journal)
    obs = _obs(100)
    teacher.start_rollout(expected_states=100)
    first = teacher.answer(obs)
    released = teacher.stats()["releases"]
    records = PrivacyJournal(journal, component=JOURNAL_COMPONENT).records()
    assert records[-1]["kind"] == "release" and len(records[-1]["codes"]) == released
    restarted = _teacher(journal)  # no checkpoint: the journal alone
    assert restarted.stats()["releases"] == released
    assert restarted.stats()["cache_size"] == released
    again = restarted.answer(obs)
    np.testing.assert_array_equal(again.policies, first.policies)
    assert restarted.stats()["releases"] == released  # not paid twice


def test_checkpoint_restore_keeps_the_cache_and_the_releases_after_it(tmp_path: Path) -> None:
    journal = tmp_path / "kickstart_teacher.jsonl"
    teacher = _teacher(journal, cache_bits=16)
    teacher.start_rollout(expected_states=40)
    teacher.answer(_obs(40, seed=1))
    checkpoint = json.loads(json.dumps(teacher.get_state()))
    teacher.answer(_obs(40, seed=2))  # after the checkpoint, then the process dies
    total = teacher.stats()["releases"]
    for restored_journal in (journal, tmp_path / "elsewhere" / "kickstart_teacher.jsonl"):
        restored = _teacher(restored_journal, cache_bits=16)
        restored.set_state(checkpoint)
        assert restored.stats()["releases"] == total  # forgets nothing
        assert restored.stats()["cache_size"] == teacher.stats()["cache_size"]
        for seed in (1, 2):
            np.testing.assert_array_equal(
                restored.answer(_obs(40, seed=seed)).policies,
                teacher.answer(_obs(40, seed=seed)).policies,
            )
        assert restored.stats()["releases"] == total  # re-pays nothing


# ---- the student's side --------------------------------------------------------------------


class _HalfTeacher:
    """Answers the even rows only, each with its own k (as a partly cached answer does)."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def answer(self, observations: np.ndarray) -> TeacherAnswer:
        n = len(observations)
        self.asked.append(n)
        mask = np.arange(n) % 2 == 0
        policies = np.where(mask[:, None], np.float32([0.2, 0.8]), 0).astype(np.float32)
        return TeacherAnswer(policies, np.arange(1, n + 1, dtype=np.float32), mask)


class _Student:
    """A module whose policy is confident on states with obs[0] > 0."""

    def forward_inference(self, batch: dict[str, Any]) -> dict[str, Any]:
        confident = (batch[Columns.OBS][:, 0] > 0).float()
        logits = torch.stack([confident * 10.0, torch.zeros_like(confident)], dim=-1)
        return {Columns.ACTION_DIST_INPUTS: logits}


def _batch(obs: np.ndarray) -> dict[str, Any]:
    return {"default_policy": {Columns.OBS: torch.as_tensor(obs)}}


def test_connector_keeps_a_partial_answer_row_by_row() -> None:
    connector = AddTeacherAnswersToBatch(num_actions=2)
    connector.set_teacher(_HalfTeacher())
    out = connector(rl_module=None, batch=_batch(_obs(6)), episodes=[])["default_policy"]
    np.testing.assert_array_equal(out[TEACHER_MASK].numpy(), [1, 0, 1, 0, 1, 0])
    np.testing.assert_array_equal(out[TEACHER_K].numpy(), [1, 0, 3, 0, 5, 0])
    assert torch.all(out[TEACHER_POLICY][1] == 0)
    assert connector.get_state() == {"queries": 1, "answered": 3, "refused": 3, "skipped": 0}


def test_uncertain_rule_asks_only_where_the_student_is_unsure() -> None:
    teacher = _HalfTeacher()
    connector = AddTeacherAnswersToBatch(
        num_actions=2, query_rule="uncertain", query_confidence=0.9
    )
    connector.set_teacher(teacher)
    obs = _obs(40)
    unsure = obs[:, 0] <= 0
    out = connector(rl_module={"default_policy": _Student()}, batch=_batch(obs), episodes=[])
    assert teacher.asked == [int(unsure.sum())]
    mask = out["default_policy"][TEACHER_MASK].numpy()
    assert mask[~unsure].sum() == 0 and mask[unsure].sum() == (int(unsure.sum()) + 1) // 2
    assert connector.get_state()["skipped"] == int((~unsure).sum())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query_rule": "sometimes"}, "kickstart_query_rule must be one of"),
        ({"query_confidence": 0.0}, "kickstart_query_confidence must be a number in"),
        ({"query_confidence": 1.5}, "kickstart_query_confidence must be a number in"),
        ({"query_confidence": True}, "kickstart_query_confidence must be a number in"),
    ],
)
def test_bad_query_settings_name_the_key(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PrivacyConfigError, match=message):
        KickstartLossSettings(**kwargs)


def test_uncertain_threshold_at_or_below_one_over_m_never_asks_and_is_refused() -> None:
    settings = KickstartLossSettings(query_rule="uncertain", query_confidence=0.5)
    with pytest.raises(PrivacyConfigError, match="above 1/m = 0.5"):
        settings.check_num_actions(2)
    settings.check_num_actions(3)  # 0.5 > 1/3: fine
