"""Answer replay: released teacher answers kept by the student and trained on again."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.utils.schedules.scheduler import Scheduler

from rllib_privacy.connectors.kickstart_teacher import (
    TEACHER_K,
    TEACHER_MASK,
    TEACHER_POLICY,
    AddTeacherAnswersToBatch,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.learners.answer_replay import AnswerReplay
from rllib_privacy.learners.kickstart_loss import (
    KickstartLossMixin,
    KickstartLossSettings,
    kickstart_alpha,
)
from tests.plugins.test_kickstart_units import _Metrics, _ZeroLossLearner


def _rows(start: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ids = np.arange(start, start + count, dtype=np.float32)
    observations = np.stack([ids, -ids], axis=1)
    policies = np.stack([ids / 100, 1 - ids / 100], axis=1)
    return observations, policies, ids + 1


def test_replay_keeps_the_newest_capacity_rows_in_order() -> None:
    replay = AnswerReplay(capacity=5)
    replay.add(*_rows(0, 3))
    assert len(replay) == 3
    replay.add(*_rows(3, 4))  # 7 added, the 2 oldest dropped
    assert len(replay) == 5
    state = replay.state_dict()
    np.testing.assert_array_equal(state["observations"][:, 0], [2, 3, 4, 5, 6])
    np.testing.assert_array_equal(state["k"], [3, 4, 5, 6, 7])
    replay.add(*_rows(10, 9))  # more than the capacity at once: only the newest fit
    np.testing.assert_array_equal(replay.state_dict()["observations"][:, 0], [14, 15, 16, 17, 18])


def test_replay_samples_rows_whole_and_without_replacement() -> None:
    replay = AnswerReplay(capacity=100)
    replay.add(*_rows(0, 40))
    observations, policies, k = replay.sample(25, np.random.default_rng(0))
    assert len(set(observations[:, 0].tolist())) == 25  # no row twice
    np.testing.assert_allclose(policies[:, 0], observations[:, 0] / 100)  # rows stay whole
    np.testing.assert_allclose(k, observations[:, 0] + 1)
    assert len(replay.sample(1000, np.random.default_rng(0))[2]) == 40


def test_replay_sampling_is_uniform_over_the_remembered_rows() -> None:
    replay = AnswerReplay(capacity=10)
    replay.add(*_rows(0, 10))
    rng = np.random.default_rng(1)
    draws, per_draw = 4000, 3
    counts = np.zeros(10)
    for _ in range(draws):
        counts[replay.sample(per_draw, rng)[0][:, 0].astype(int)] += 1
    expected = draws * per_draw / 10
    # Each count is Binomial(draws, 0.3): 5 standard deviations.
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(draws * 0.3 * 0.7))


def test_replay_state_round_trips_and_an_empty_one_restores_empty() -> None:
    replay = AnswerReplay(capacity=4)
    replay.add(*_rows(0, 6))
    copy = AnswerReplay(capacity=4)
    copy.load_state_dict(replay.state_dict())
    for key in ("observations", "policies", "k"):
        np.testing.assert_array_equal(copy.state_dict()[key], replay.state_dict()[key])
    copy.add(*_rows(6, 1))
    replay.add(*_rows(6, 1))
    np.testing.assert_array_equal(copy.state_dict()["k"], replay.state_dict()["k"])
    empty = AnswerReplay(capacity=4)
    empty.load_state_dict(AnswerReplay(capacity=4).state_dict())
    assert len(empty) == 0
    with pytest.raises(ValueError, match="empty"):
        empty.sample(3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="capacity"):
        AnswerReplay(capacity=0)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"replay_size": -1}, "kickstart_answer_replay_size"),
        ({"replay_size": 2.5}, "kickstart_answer_replay_size"),
        ({"replay_size": True}, "kickstart_answer_replay_size"),
        ({"replay_capacity": 0}, "kickstart_answer_replay_capacity"),
    ],
)
def test_bad_replay_settings_name_the_key(kwargs: dict[str, Any], key: str) -> None:
    with pytest.raises(PrivacyConfigError, match=key):
        KickstartLossSettings(**kwargs)


class _Teacher:
    """Answers every second asked row with a fixed policy at k = 7."""

    def answer(self, observations: np.ndarray) -> Any:
        count = len(observations)
        mask = np.arange(count) % 2 == 0

        class _Answer:
            answered = True
            policies = np.tile(np.array([[0.25, 0.75]], np.float32), (count, 1))

            @staticmethod
            def row_mask(n: int) -> np.ndarray:
                return mask[:n].astype(np.float32)

            @staticmethod
            def row_k(n: int) -> np.ndarray:
                return np.full(n, 7.0, np.float32)

        return _Answer()


def test_connector_hands_each_answered_row_to_the_sink_once() -> None:
    connector = AddTeacherAnswersToBatch(num_actions=2)
    connector.set_teacher(_Teacher())
    received: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    connector.answer_sink = lambda *rows: received.append(rows)
    observations = np.arange(12, dtype=np.float32).reshape(6, 2)
    in_loss = np.array([True, True, True, True, False, True])
    batch = {"default_policy": {Columns.OBS: observations, Columns.LOSS_MASK: in_loss}}
    connector(rl_module=None, batch=batch, episodes=[])
    assert len(received) == 1
    sunk_obs, sunk_policies, sunk_k = received[0]
    # Asked rows 0, 1, 2, 3, 5; the teacher answered the 1st, 3rd and 5th of them.
    np.testing.assert_array_equal(sunk_obs, observations[[0, 2, 5]])
    np.testing.assert_array_equal(sunk_policies, np.tile([[0.25, 0.75]], (3, 1)))
    np.testing.assert_array_equal(sunk_k, [7.0, 7.0, 7.0])
    np.testing.assert_array_equal(batch["default_policy"][TEACHER_MASK], [1, 0, 1, 0, 0, 1])


class _ProbabilitiesModule:
    """A student whose policy on observation x is x itself (x is a probability vector)."""

    def forward_train(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: torch.log(batch[Columns.OBS])}


class _Learner(KickstartLossMixin, _ZeroLossLearner):
    def __init__(self, settings: KickstartLossSettings) -> None:
        self.kickstart_settings = settings
        self._kickstart_coeff = Scheduler(fixed_value_or_schedule=settings.coeff)
        self.metrics = _Metrics()
        self.module = {"default_policy": _ProbabilitiesModule()}
        self._answer_replay = AnswerReplay(settings.replay_capacity)
        self._replay_rng = np.random.default_rng(0)


def _batch(student: np.ndarray, teacher: np.ndarray, mask: np.ndarray) -> tuple[dict, dict]:
    batch = {
        TEACHER_POLICY: torch.as_tensor(teacher, dtype=torch.float32),
        TEACHER_MASK: torch.as_tensor(mask, dtype=torch.float32),
        TEACHER_K: torch.full((len(student),), 5.0),
    }
    return batch, {Columns.ACTION_DIST_INPUTS: torch.log(torch.as_tensor(student).float())}


def test_replayed_answers_keep_teaching_after_the_teacher_stops() -> None:
    settings = KickstartLossSettings(coeff=1.0, lam=0.0, replay_size=8)
    learner = _Learner(settings)
    student_on_replayed = np.array([[0.9, 0.1], [0.5, 0.5]], np.float32)
    teacher_answers = np.array([[0.1, 0.9], [0.5, 0.5]], np.float32)
    assert learner._answer_replay is not None
    learner._answer_replay.add(student_on_replayed, teacher_answers, np.array([5.0, 5.0]))
    # A batch without any answer (the teacher stopped sharing).
    batch, fwd_out = _batch(np.full((3, 2), 0.5), np.zeros((3, 2)), np.zeros(3))
    loss = learner.compute_loss_for_module(
        module_id="default_policy", config=None, batch=batch, fwd_out=fwd_out
    )
    expected = np.linalg.norm(student_on_replayed - teacher_answers, axis=1).mean()
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert learner.metrics.logged["kickstart_answers_remembered"] == 2.0
    assert learner.metrics.logged["kickstart_answered_fraction"] == 0.0


def test_replay_and_batch_answers_share_one_mean_with_alpha_thresholds() -> None:
    settings = KickstartLossSettings(coeff=2.0, lam=0.5, beta=0.05, replay_size=4)
    learner = _Learner(settings)
    alpha = float(kickstart_alpha(torch.tensor(5.0), settings))
    far = 0.5 + 2 * alpha / np.sqrt(2)  # distance 2α from uniform: active
    assert learner._answer_replay is not None
    learner._answer_replay.add(
        np.array([[0.5, 0.5]], np.float32), np.array([[far, 1 - far]], np.float32), np.array([5.0])
    )
    near = 0.5 + 0.5 * alpha / np.sqrt(2)  # distance α/2: inside the ball, contributes 0
    batch, fwd_out = _batch(
        np.full((2, 2), 0.5), np.array([[near, 1 - near], [0.0, 0.0]]), np.array([1.0, 0.0])
    )
    loss = learner.compute_loss_for_module(
        module_id="default_policy", config=None, batch=batch, fwd_out=fwd_out
    )
    # One answered batch row (0) and one replayed row (2α): mean α, times coeff 2.
    assert float(loss) == pytest.approx(2.0 * (0.0 + 2 * alpha) / 2, rel=1e-4)
