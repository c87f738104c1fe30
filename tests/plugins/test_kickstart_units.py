"""Kickstarting plug-ins without a Ray cluster: teacher, connector, loss term, loading."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.utils.schedules.scheduler import Scheduler
from scipy import stats

from rllib_privacy.accounting import (
    DEFAULT_ORDERS,
    DirichletAnswer,
    TeacherLedger,
    dirichlet_rdp,
    event_to_dict,
    rdp_to_epsilon,
)
from rllib_privacy.accounting.dirichlet import dirichlet_epsilon
from rllib_privacy.connectors.kickstart_teacher import (
    TEACHER_K,
    TEACHER_MASK,
    TEACHER_POLICY,
    AddTeacherAnswersToBatch,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.learners.kickstart_loss import (
    KickstartLossMixin,
    KickstartLossSettings,
    argmax_answers,
    debiased_answers,
    kickstart_alpha,
)
from rllib_privacy.mechanisms.dirichlet import dirichlet_mechanism, kickstart_threshold
from rllib_privacy.mechanisms.lipschitz import (
    lipschitz_upper_bound,
    policy_lipschitz_upper_bound,
)
from rllib_privacy.teachers import (
    DirichletTeacher,
    TeacherAnswer,
    TeacherClient,
    TeacherSettings,
    check_teacher_spaces,
    resolve_teacher_checkpoint,
)

OBS_SPACE = gym.spaces.Box(-5.0, 5.0, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


def _module(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    config = PPOConfig().rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[16, 16]))
    spec = config.get_default_rl_module_spec()
    spec.observation_space, spec.action_space = OBS_SPACE, ACT_SPACE
    spec.model_config = DefaultModelConfig(fcnet_hiddens=[16, 16])
    module = spec.build()
    module.eval()
    return module


def _settings(**overrides: Any) -> TeacherSettings:
    # No ε limit unless a test sets one: the default budget (10) would refuse these batches.
    values = {"k": 20.0, "eta": 0.1, "tau": 1e-3, "adjacency": 0.01, "seed": 0}
    values["epsilon_budget"] = math.inf
    values.update(overrides)
    return TeacherSettings(**values)


def _obs(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, 4)).astype(np.float32)


# ---- teacher -------------------------------------------------------------------------


#: Basic composition of Theorem 1's per-release (ε, δ), with no δ limit: for tests whose
#: budget arithmetic is n·ε.
BASIC = {"composition": "basic", "delta_budget": 1.0}


def test_teacher_answers_on_the_simplex_and_records_one_release_per_state() -> None:
    teacher = DirichletTeacher(_module(), _settings(**BASIC))
    teacher.start_rollout(expected_states=50)
    answer = teacher.answer(_obs(50))
    assert answer.answered and answer.k == 20.0
    assert answer.policies.shape == (50, 2) and answer.policies.dtype == np.float32
    assert np.all(answer.policies >= 0)
    np.testing.assert_allclose(answer.policies.sum(axis=1), 1.0, atol=1e-5)
    stats = teacher.stats()
    epsilon, delta = teacher.release_privacy(20.0)
    assert stats["releases"] == 50 and stats["answered"] == 50
    assert stats["epsilon_spent"] == pytest.approx(50 * epsilon)
    assert stats["delta_spent"] == pytest.approx(50 * delta)


def test_default_rdp_teacher_reports_the_rdp_epsilon_at_the_delta_budget() -> None:
    settings = _settings()
    assert (settings.composition, settings.delta_budget) == ("rdp", 1e-5)
    teacher = DirichletTeacher(_module(), settings)
    assert teacher.radius == pytest.approx(teacher.restricted_lipschitz * 0.01)
    teacher.start_rollout(expected_states=50)
    assert teacher.answer(_obs(50)).answered
    one = dirichlet_rdp(DEFAULT_ORDERS, k=20.0, eta=0.1, radius=teacher.radius, num_actions=2)
    stats = teacher.stats()
    assert stats["releases"] == 50 and stats["delta_spent"] == 1e-5
    assert stats["epsilon_spent"] == pytest.approx(
        rdp_to_epsilon(DEFAULT_ORDERS, 50 * one, 1e-5), rel=1e-12
    )
    state = teacher.get_state()["ledger"]
    assert state["composition"] == "rdp"
    answer = DirichletAnswer(k=20.0, eta=0.1, radius=teacher.radius, num_actions=2, count=50)
    assert state["accountant"]["history"] == [event_to_dict(answer)]


def test_rdp_budget_stops_the_next_rollout() -> None:
    teacher = DirichletTeacher(_module(), _settings(vanishing_coefficient=1.0))
    # Room for exactly 30 releases at k = 20 under RDP.
    probe = TeacherLedger(epsilon_budget=math.inf, delta_budget=1e-5, composition="rdp")
    probe.record(DirichletAnswer(k=20.0, eta=0.1, radius=teacher.radius, num_actions=2, count=30))
    teacher = DirichletTeacher(
        _module(),
        _settings(vanishing_coefficient=1.0, epsilon_budget=probe.epsilon_spent),
    )
    assert teacher.start_rollout(expected_states=20)["sharing"] == 1.0
    assert teacher.answer(_obs(20)).answered
    assert teacher.start_rollout(expected_states=20)["sharing"] == 0.0
    assert teacher.stats()["releases"] == 20
    assert 0 < teacher.stats()["epsilon_spent"] < probe.epsilon_spent


def test_teacher_epsilon_is_eq12_with_the_restricted_lipschitz_constant() -> None:
    module = _module()
    teacher = DirichletTeacher(module, _settings())
    network_l = policy_lipschitz_upper_bound(module.encoder.encoder, module.pi)
    # The policy's bound: half the logits chain's at most (softmax is 1/2-Lipschitz).
    assert network_l <= lipschitz_upper_bound(module.encoder.encoder, module.pi) / 2 + 1e-12
    assert teacher.restricted_lipschitz == pytest.approx((1 - 2 * 0.1) * network_l)
    expected = dirichlet_epsilon(
        k=20.0,
        eta=0.1,
        tau=1e-3,
        lipschitz=(1 - 2 * 0.1) * network_l,
        adjacency=0.01,
        num_actions=2,
    )
    assert teacher.release_privacy(20.0)[0] == pytest.approx(expected)


def test_privatized_answers_center_on_the_restricted_policy() -> None:
    module = _module()
    teacher = DirichletTeacher(module, _settings(k=200.0))
    obs = np.repeat(_obs(1), 4000, axis=0)
    answers = teacher.answer(obs).policies
    with torch.no_grad():
        logits = module.forward_inference({"obs": torch.as_tensor(obs[:1])})["action_dist_inputs"]
    restricted = 0.8 * torch.softmax(logits, -1).numpy()[0] + 0.1
    # Dir(kπ̃) has variance π̃_i(1 − π̃_i)/(k + 1) per coordinate.
    std_error = np.sqrt(restricted * (1 - restricted) / 201 / 4000)
    assert np.all(np.abs(answers.mean(axis=0) - restricted) < 5 * std_error)


def test_mechanism_none_answers_the_raw_policy_without_spending() -> None:
    module = _module()
    teacher = DirichletTeacher(module, _settings(mechanism="none"))
    obs = _obs(8)
    answer = teacher.answer(obs)
    with torch.no_grad():
        logits = module.forward_inference({"obs": torch.as_tensor(obs)})["action_dist_inputs"]
    np.testing.assert_allclose(answer.policies, torch.softmax(logits, -1).numpy(), atol=1e-6)
    assert math.isinf(answer.k) and teacher.stats()["epsilon_spent"] == math.inf


def test_k_decays_by_the_vanishing_coefficient_per_rollout() -> None:
    teacher = DirichletTeacher(_module(), _settings(vanishing_coefficient=0.5))
    ks = [teacher.start_rollout(expected_states=1)["k"] for _ in range(4)]
    assert ks == pytest.approx([20.0, 10.0, 5.0, 2.5])


def test_budget_stops_answers_for_good() -> None:
    probe = DirichletTeacher(_module(), _settings(**BASIC))
    epsilon, _ = probe.release_privacy(20.0)
    # Room for exactly 30 releases at k = 20 (k constant: c = 1).
    teacher = DirichletTeacher(
        _module(), _settings(vanishing_coefficient=1.0, epsilon_budget=30.5 * epsilon, **BASIC)
    )
    assert teacher.start_rollout(expected_states=20)["sharing"] == 1.0
    assert teacher.answer(_obs(20)).answered
    # The next rollout would not fit: refused before anything is released.
    assert teacher.start_rollout(expected_states=20)["sharing"] == 0.0
    refused = teacher.answer(_obs(5))
    assert not refused.answered and refused.policies is None and refused.k == 0.0
    stats = teacher.stats()
    assert stats["releases"] == 20 and stats["refused"] == 5
    assert stats["epsilon_spent"] <= 30.5 * epsilon
    assert stats["stopped_at_rollout"] == 2.0
    # Never resumes, whatever the next rollout's size.
    assert teacher.start_rollout(expected_states=1)["sharing"] == 0.0
    assert not teacher.answer(_obs(1)).answered


def test_a_request_larger_than_the_rest_of_the_budget_is_refused_whole() -> None:
    probe = DirichletTeacher(_module(), _settings(**BASIC))
    epsilon, _ = probe.release_privacy(20.0)
    teacher = DirichletTeacher(
        _module(), _settings(vanishing_coefficient=1.0, epsilon_budget=10.5 * epsilon, **BASIC)
    )
    teacher.start_rollout(expected_states=5)
    assert not teacher.answer(_obs(11)).answered
    assert teacher.stats()["releases"] == 0


def test_min_k_stops_sharing() -> None:
    teacher = DirichletTeacher(_module(), _settings(vanishing_coefficient=0.1, min_k=1.0))
    assert teacher.start_rollout(expected_states=1)["sharing"] == 1.0  # k = 20
    assert teacher.start_rollout(expected_states=1)["sharing"] == 1.0  # k = 2
    assert teacher.start_rollout(expected_states=1)["sharing"] == 0.0  # k = 0.2 < 1


def test_teacher_state_round_trips_through_json_and_continues() -> None:
    teacher = DirichletTeacher(_module(), _settings(vanishing_coefficient=0.5))
    teacher.start_rollout(expected_states=10)
    teacher.answer(_obs(10))
    teacher.start_rollout(expected_states=10)
    state = json.loads(json.dumps(teacher.get_state()))
    restored = DirichletTeacher(_module(), _settings(vanishing_coefficient=0.5, seed=123))
    restored.set_state(state)
    assert restored.stats() == teacher.stats()
    # The noise stream is NOT restored (a resumed run must not re-use noise it already
    # spent): the next answers differ, the budget and schedule continue.
    assert "rng" not in state
    after_restore = restored.answer(_obs(6, seed=9)).policies
    assert not np.array_equal(after_restore, teacher.answer(_obs(6, seed=9)).policies)
    assert restored.stats() == teacher.stats()


def test_teacher_client_calls_an_in_process_teacher() -> None:
    teacher = DirichletTeacher(_module(), _settings())
    client = TeacherClient(teacher)
    client.start_rollout(expected_states=3)
    assert isinstance(client.answer(_obs(3)), TeacherAnswer)
    assert client.spaces() == (OBS_SPACE, ACT_SPACE)
    assert client.stats()["answered"] == 3


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"k": 0.0}, "teacher_k"),
        ({"k": -1.0}, "teacher_k"),
        ({"tau": 0.2}, "teacher_tau"),
        ({"tau": 0.0}, "teacher_tau"),
        ({"vanishing_coefficient": 1.5}, "teacher_vanishing_coefficient"),
        ({"mechanism": "gaussian"}, "teacher_mechanism"),
        ({"delta_budget": 2.0}, "teacher_delta_budget"),
        ({"epsilon_budget": float("nan")}, "teacher_epsilon_budget"),
        ({"composition": "moments"}, "teacher_composition"),
        ({"delta_budget": 1.0}, "teacher_delta_budget"),  # rdp converts at δ < 1
        ({"delta_samples": 10}, "teacher_delta_samples"),
    ],
)
def test_bad_teacher_settings_name_the_key(overrides: dict[str, Any], key: str) -> None:
    with pytest.raises(PrivacyConfigError, match=key):
        _settings(**overrides)


def test_eta_must_be_below_one_over_m() -> None:
    with pytest.raises(PrivacyConfigError, match=r"teacher_eta must be below 1/m"):
        DirichletTeacher(_module(), _settings(eta=0.5, tau=0.01))


# ---- connector -----------------------------------------------------------------------


class _CountingTeacher:
    def __init__(self, answer: bool = True) -> None:
        self.calls: list[int] = []
        self._answer = answer

    def answer(self, observations: np.ndarray) -> TeacherAnswer:
        self.calls.append(len(observations))
        if not self._answer:
            return TeacherAnswer(None, 0.0)
        policies = np.tile(np.array([[0.25, 0.75]], np.float32), (len(observations), 1))
        return TeacherAnswer(policies, 7.0)


def _batch(n: int, in_loss: np.ndarray) -> dict[str, Any]:
    return {
        "default_policy": {
            Columns.OBS: torch.as_tensor(_obs(n)),
            Columns.LOSS_MASK: torch.as_tensor(in_loss),
        }
    }


def test_connector_asks_once_per_call_and_only_for_samples_in_the_loss() -> None:
    teacher = _CountingTeacher()
    connector = AddTeacherAnswersToBatch(num_actions=2)
    connector.set_teacher(teacher)
    in_loss = np.array([True, True, False, True, True, False])
    out = connector(rl_module=None, batch=_batch(6, in_loss), episodes=[])
    assert teacher.calls == [4]
    column = out["default_policy"]
    np.testing.assert_array_equal(column[TEACHER_MASK].numpy(), in_loss.astype(np.float32))
    np.testing.assert_array_equal(column[TEACHER_K].numpy(), np.where(in_loss, 7.0, 0.0))
    assert torch.all(column[TEACHER_POLICY][~torch.as_tensor(in_loss)] == 0)
    assert torch.allclose(column[TEACHER_POLICY][0], torch.tensor([0.25, 0.75]))
    assert connector.get_state() == {"queries": 1, "answered": 4, "refused": 0, "skipped": 0}


def test_connector_masks_everything_when_refused_or_without_teacher() -> None:
    connector = AddTeacherAnswersToBatch(num_actions=2)
    out = connector(rl_module=None, batch=_batch(3, np.ones(3, bool)), episodes=[])
    assert out["default_policy"][TEACHER_MASK].sum() == 0
    connector.set_teacher(_CountingTeacher(answer=False))
    out = connector(rl_module=None, batch=_batch(3, np.ones(3, bool)), episodes=[])
    assert out["default_policy"][TEACHER_MASK].sum() == 0
    assert connector.get_state()["refused"] == 6
    restored = AddTeacherAnswersToBatch(num_actions=2)
    restored.set_state(connector.get_state())
    assert restored.get_state() == connector.get_state()


# ---- loss term -----------------------------------------------------------------------


class _Metrics:
    def __init__(self) -> None:
        self.logged: dict[str, float] = {}

    def log_dict(self, values: dict[str, Any], *, key: str, window: int) -> None:
        self.logged.update({k: float(v) for k, v in values.items()})


class _ZeroLossLearner:
    def compute_loss_for_module(self, **kwargs: Any) -> torch.Tensor:
        return torch.tensor(0.0)


class _Learner(KickstartLossMixin, _ZeroLossLearner):
    def __init__(self, settings: KickstartLossSettings) -> None:
        self.kickstart_settings = settings
        self._kickstart_coeff = Scheduler(fixed_value_or_schedule=settings.coeff)
        self.metrics = _Metrics()


def _loss(settings: KickstartLossSettings, student: np.ndarray, teacher: np.ndarray, **cols):
    learner = _Learner(settings)
    n = len(student)
    batch = {
        TEACHER_POLICY: torch.as_tensor(teacher, dtype=torch.float32),
        TEACHER_MASK: torch.as_tensor(cols.get("mask", np.ones(n)), dtype=torch.float32),
        TEACHER_K: torch.as_tensor(cols.get("k", np.full(n, 5.0)), dtype=torch.float32),
    }
    logits = torch.log(torch.as_tensor(student, dtype=torch.float32))
    fwd_out = {Columns.ACTION_DIST_INPUTS: logits}
    loss = learner.compute_loss_for_module(
        module_id="default_policy", config=None, batch=batch, fwd_out=fwd_out
    )
    return float(loss), learner.metrics.logged


def test_phi_is_zero_inside_the_alpha_ball_and_the_distance_outside() -> None:
    settings = KickstartLossSettings(coeff=2.0, lam=0.5, beta=0.05)
    alpha = kickstart_threshold(k=5.0, beta=0.05, lam=0.5)
    student = np.array([[0.5, 0.5], [0.5, 0.5]])
    inside = 0.5 + 0.5 * alpha / np.sqrt(2)  # ‖π_θ − π^t‖₂ = α/2 < α
    outside = 0.5 + 2 * alpha / np.sqrt(2)  # distance 2α > α
    teacher = np.array([[inside, 1 - inside], [outside, 1 - outside]])
    loss, logged = _loss(settings, student, teacher)
    assert loss == pytest.approx(2.0 * (0.0 + 2 * alpha) / 2, rel=1e-4)
    assert logged["kickstart_active_fraction"] == pytest.approx(0.5)
    assert logged["kickstart_alpha_lambda"] == pytest.approx(alpha, rel=1e-5)


def test_unanswered_samples_do_not_count_and_lambda_zero_is_plain_l2() -> None:
    settings = KickstartLossSettings(coeff=1.0, lam=0.0)
    student = np.array([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]])
    teacher = np.array([[0.6, 0.4], [0.1, 0.9], [0.0, 0.0]])
    loss, logged = _loss(settings, student, teacher, mask=np.array([1.0, 1.0, 0.0]))
    distances = np.linalg.norm(student[:2] - teacher[:2], axis=1)
    assert loss == pytest.approx(distances.mean(), rel=1e-5)
    assert logged["kickstart_answered_fraction"] == pytest.approx(2 / 3)


def test_no_answers_add_nothing() -> None:
    loss, logged = _loss(
        KickstartLossSettings(), np.full((2, 2), 0.5), np.zeros((2, 2)), mask=np.zeros(2)
    )
    assert loss == 0.0 and logged["kickstart_loss"] == 0.0


def test_cross_entropy_term_of_schmitt_et_al() -> None:
    settings = KickstartLossSettings(coeff=1.0, loss="cross_entropy")
    student = np.array([[0.3, 0.7]])
    teacher = np.array([[0.9, 0.1]])
    loss, _ = _loss(settings, student, teacher)
    assert loss == pytest.approx(-(0.9 * np.log(0.3) + 0.1 * np.log(0.7)), rel=1e-5)


def test_alpha_lambda_matches_lemma_1_and_vanishes_without_mechanism() -> None:
    settings = KickstartLossSettings(lam=0.5, beta=0.05)
    k = torch.tensor([1.0, 5.0, 50.0, math.inf])
    alphas = kickstart_alpha(k, settings).numpy()
    expected = [kickstart_threshold(k=float(v), beta=0.05, lam=0.5) for v in k[:3]]
    np.testing.assert_allclose(alphas[:3], expected, rtol=1e-6)
    assert alphas[3] == 0.0


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"coeff": -1.0}, "kickstart_coeff"),
        ({"lam": -0.1}, "kickstart_lambda"),
        ({"beta": 1.0}, "kickstart_beta"),
        ({"beta": 0.0}, "kickstart_beta"),
        ({"loss": "kl"}, "kickstart_loss"),
    ],
)
def test_bad_kickstart_settings_name_the_key(kwargs: dict[str, Any], key: str) -> None:
    with pytest.raises(PrivacyConfigError, match=key):
        KickstartLossSettings(**kwargs)


# ---- loading -------------------------------------------------------------------------


def _fake_checkpoint(trial: Path, index: int) -> Path:
    checkpoint = trial / f"checkpoint_{index:06d}"
    module_dir = checkpoint / "learner_group" / "learner" / "rl_module" / "default_policy"
    module_dir.mkdir(parents=True)
    (module_dir / "module_state.pkl").write_bytes(b"")
    (checkpoint / "rllib_checkpoint.json").write_text("{}")
    return module_dir


def test_resolve_accepts_module_checkpoint_trial_and_experiment_folders(tmp_path: Path) -> None:
    experiment = tmp_path / "exp"
    _fake_checkpoint(experiment / "trial_a", 0)
    newest = _fake_checkpoint(experiment / "trial_a", 2)
    assert resolve_teacher_checkpoint(experiment) == newest
    assert resolve_teacher_checkpoint(experiment / "trial_a") == newest
    assert resolve_teacher_checkpoint(experiment / "trial_a" / "checkpoint_000002") == newest
    assert resolve_teacher_checkpoint(newest) == newest


def test_resolve_errors_name_the_key_and_the_problem(tmp_path: Path) -> None:
    with pytest.raises(PrivacyConfigError, match="teacher_checkpoint .* does not exist"):
        resolve_teacher_checkpoint(tmp_path / "missing")
    with pytest.raises(PrivacyConfigError, match="holds no RLlib checkpoint"):
        resolve_teacher_checkpoint(tmp_path)
    _fake_checkpoint(tmp_path / "t1", 0)
    _fake_checkpoint(tmp_path / "t2", 0)
    with pytest.raises(PrivacyConfigError, match="holds 2 trials"):
        resolve_teacher_checkpoint(tmp_path)


def test_space_mismatch_is_rejected_with_both_spaces() -> None:
    with pytest.raises(PrivacyConfigError, match="observation space .* but the student"):
        check_teacher_spaces(
            teacher_obs=OBS_SPACE,
            teacher_act=ACT_SPACE,
            student_obs=gym.spaces.Box(-1, 1, (6,), np.float32),
            student_act=ACT_SPACE,
            where="ckpt",
        )
    with pytest.raises(PrivacyConfigError, match="action space Discrete\\(2\\)"):
        check_teacher_spaces(
            teacher_obs=OBS_SPACE,
            teacher_act=ACT_SPACE,
            student_obs=OBS_SPACE,
            student_act=gym.spaces.Discrete(3),
            where="ckpt",
        )


# ---- shipped student YAMLs, validated before Ray starts --------------------------------


def _saved_module(path: Path, obs_space: Any, act_space: Any) -> Path:
    spec = PPOConfig().get_default_rl_module_spec()
    spec.observation_space, spec.action_space = obs_space, act_space
    spec.model_config = DefaultModelConfig(fcnet_hiddens=[8])
    spec.build().save_to_path(str(path))
    return path


def _validate(yaml_name: str, teacher: Path) -> None:
    """What `rllib train -f FILE --dry-run --config ...` does, in this process."""
    from rllib_privacy.experiments import Overrides, load_experiments

    load_experiments(
        Path(__file__).resolve().parents[2] / "tuned_configs" / yaml_name,
        overrides=Overrides(config={"teacher_checkpoint": str(teacher)}),
    )


def test_student_yamls_validate_with_a_matching_teacher_and_reject_another(
    tmp_path: Path,
) -> None:
    import rllib_privacy

    rllib_privacy.register()  # Registers the ALE RAM ids

    airraid = gym.make("ALE/AirRaid-ram-v5")
    airraid_teacher = _saved_module(
        tmp_path / "airraid", airraid.observation_space, airraid.action_space
    )
    airraid.close()
    cartpole = gym.make("CartPole-v1")
    cartpole_teacher = _saved_module(
        tmp_path / "cartpole", cartpole.observation_space, cartpole.action_space
    )
    for name in ("kickstart_dirichlet_cartpole.yaml", "kickstart_sweep_cartpole.yaml"):
        _validate(name, cartpole_teacher)
    _validate("kickstart_dirichlet_airraid.yaml", airraid_teacher)
    with pytest.raises(PrivacyConfigError, match="was trained with observation space"):
        _validate("kickstart_dirichlet_airraid.yaml", cartpole_teacher)


# ---- config: composition and δ budget --------------------------------------------------


def test_config_defaults_to_rdp_composition_at_delta_1e_5() -> None:
    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig

    config = KickstartPPOConfig()
    assert (config.teacher_composition, config.teacher_delta_budget) == ("rdp", 1e-5)
    settings = config.teacher_settings()
    assert (settings.composition, settings.delta_budget) == ("rdp", 1e-5)
    with pytest.raises(PrivacyConfigError, match="teacher_composition.*'moments'"):
        KickstartPPOConfig().teacher(teacher_composition="moments").teacher_settings()


def _cartpole_teacher_config(tmp_path: Path, **teacher: Any) -> Any:
    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig

    env = gym.make("CartPole-v1")
    torch.manual_seed(0)
    spec = PPOConfig().get_default_rl_module_spec()
    spec.observation_space, spec.action_space = env.observation_space, env.action_space
    spec.model_config = DefaultModelConfig(fcnet_hiddens=[8])
    module_dir = tmp_path / "teacher_module"
    spec.build().save_to_path(str(module_dir))
    values = {"teacher_k": 5.0, "teacher_eta": 0.1, "teacher_tau": 1e-3, **teacher}
    return (
        KickstartPPOConfig()
        .environment("CartPole-v1")
        .teacher(teacher_checkpoint=str(module_dir), teacher_delta_samples=1000, **values)
    )


def test_per_release_delta_at_or_above_the_delta_budget_is_a_config_error(
    tmp_path: Path,
) -> None:
    config = _cartpole_teacher_config(tmp_path, teacher_composition="basic")
    delta = config.teacher_settings().release_delta(5.0, 2, rollout=1)
    assert 1e-5 < delta < 0.5  # the default budget 1e-5 cannot afford one release
    with pytest.raises(PrivacyConfigError, match="teacher_delta_budget") as caught:
        config.validate_kickstart_settings()
    assert f"{delta:.3g}" in str(caught.value) and "per-release delta" in str(caught.value)
    # At exactly the release's δ it is still refused (nothing could be answered) ...
    with pytest.raises(PrivacyConfigError, match="teacher_delta_budget"):
        config.teacher(teacher_delta_budget=delta).validate_kickstart_settings()
    # ... above it, and under rdp (no per-release δ), it is accepted.
    config.teacher(teacher_delta_budget=min(1.0, 2 * delta)).validate_kickstart_settings()
    config.teacher(
        teacher_composition="rdp", teacher_delta_budget=1e-5
    ).validate_kickstart_settings()


# ---- debiased answers -------------------------------------------------------------------


def test_debiased_answers_are_unbiased_for_the_teacher_policy() -> None:
    """E[(x − η)/(1 − mη)] = π for x ~ Dir(k·π̃); here clipping never binds (12 σ away)."""
    policy, eta, k, n = np.array([0.7, 0.3]), 0.2, 200.0, 20_000
    answers = dirichlet_mechanism(
        np.tile(policy, (n, 1)), k=k, eta=eta, rng=np.random.default_rng(7)
    )
    targets = debiased_answers(
        torch.as_tensor(answers, dtype=torch.float64), torch.full((n,), k), eta=eta
    ).numpy()
    restricted = (1 - 2 * eta) * policy + eta
    # sd of one debiased row: sqrt(π̃(1 − π̃)/(k + 1))/(1 − mη); 5 standard errors of the
    # mean (false-failure rate below 1e-6).
    sd = np.sqrt(restricted[0] * (1 - restricted[0]) / (k + 1)) / (1 - 2 * eta)
    assert abs(targets[:, 0].mean() - policy[0]) < 5 * sd / np.sqrt(n)
    # The released answers themselves centre on π̃, not π: the bias the target removes.
    assert abs(answers[:, 0].mean() - restricted[0]) < 5 * sd * (1 - 2 * eta) / np.sqrt(n)
    assert abs(restricted[0] - policy[0]) > 100 * sd / np.sqrt(n)


def test_debiased_answers_clip_to_the_simplex_and_leave_other_rows_alone() -> None:
    policies = torch.tensor([[0.95, 0.05], [0.5, 0.5], [0.25, 0.75], [0.9, 0.1], [0.0, 0.0]])
    k = torch.tensor([100.0, 100.0, 100.0, math.inf, 0.0])
    targets = debiased_answers(policies, k, eta=0.4).numpy()
    # (0.95 − 0.4)/0.2 = 2.75 and (0.05 − 0.4)/0.2 < 0: clipped to (1, 0).
    np.testing.assert_allclose(targets[0], [1.0, 0.0])
    np.testing.assert_allclose(targets[1], [0.5, 0.5])
    np.testing.assert_allclose(targets[2], [0.0, 1.0])
    np.testing.assert_allclose(targets[3], [0.9, 0.1])  # k = ∞: the raw policy, unchanged
    np.testing.assert_allclose(targets[4], [0.0, 0.0])  # unanswered: unchanged (masked)
    assert np.all(targets[:4] >= 0) and np.allclose(targets[:4].sum(axis=1), 1.0)


def test_debiased_term_pulls_towards_the_estimate_with_the_radius_in_its_units() -> None:
    settings = KickstartLossSettings(coeff=1.0, lam=0.5, answer_target="debiased", teacher_eta=0.2)
    student = np.array([[0.5, 0.5]])
    teacher = np.array([[0.62, 0.38]])  # debiased: (0.62 − 0.2)/0.6 = 0.7
    loss, logged = _loss(settings, student, teacher, k=np.array([50.0]))
    assert loss == pytest.approx(np.sqrt(2) * 0.2, rel=1e-5)
    alpha = kickstart_threshold(k=50.0, beta=0.05, lam=0.5) / 0.6
    assert logged["kickstart_alpha_lambda"] == pytest.approx(alpha, rel=1e-5)
    released, _ = _loss(KickstartLossSettings(coeff=1.0, lam=0.0), student, teacher)
    assert released == pytest.approx(np.sqrt(2) * 0.12, rel=1e-5)


def test_argmax_answers_are_one_hot_labels_and_leave_unanswered_rows_alone() -> None:
    policies = torch.tensor([[0.55, 0.45], [0.2, 0.8], [0.9, 0.1], [0.0, 0.0]])
    k = torch.tensor([100.0, 100.0, math.inf, 0.0])
    targets = argmax_answers(policies, k).numpy()
    np.testing.assert_array_equal(targets[:3], [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(targets[3], [0.0, 0.0])  # unanswered: unchanged (masked)


def test_argmax_labels_match_the_teachers_action_at_the_beta_probability() -> None:
    """For m = 2 the label is right with probability P(Beta(kπ̃₁, kπ̃₂) > 1/2)."""
    policy, eta, k, n = np.array([0.8, 0.2]), 0.4, 100.0, 20_000
    answers = dirichlet_mechanism(
        np.tile(policy, (n, 1)), k=k, eta=eta, rng=np.random.default_rng(11)
    )
    labels = argmax_answers(torch.as_tensor(answers), torch.full((n,), k)).numpy()
    restricted = (1 - 2 * eta) * policy + eta
    expected = stats.beta.sf(0.5, k * restricted[0], k * restricted[1])
    # 5 binomial standard errors (false-failure rate below 1e-6).
    assert abs(labels[:, 0].mean() - expected) < 5 * np.sqrt(expected * (1 - expected) / n)


@pytest.mark.parametrize("loss", ["thresholded_l2", "cross_entropy"])
def test_argmax_term_pulls_towards_the_label_with_no_threshold(loss: str) -> None:
    settings = KickstartLossSettings(coeff=1.0, lam=0.5, loss=loss, answer_target="argmax")
    student = np.array([[0.7, 0.3]])
    teacher = np.array([[0.45, 0.55]])  # label: action 1
    value, logged = _loss(settings, student, teacher, k=np.array([50.0]))
    expected = np.sqrt(2) * 0.7 if loss == "thresholded_l2" else -np.log(0.3)
    assert value == pytest.approx(expected, rel=1e-5)
    assert logged["kickstart_alpha_lambda"] == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"answer_target": "mean"}, "kickstart_answer_target"),
        ({"answer_target": "debiased"}, "teacher_eta"),
        ({"answer_target": "debiased", "teacher_eta": 0.0}, "teacher_eta"),
    ],
)
def test_bad_answer_target_settings_name_the_key(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(PrivacyConfigError, match=match):
        KickstartLossSettings(**kwargs)


def test_debiased_threshold_that_no_distance_reaches_is_refused() -> None:
    # AirRaid's 6 actions at η = 0.16: α_λ/(1 − mη) = 0.061/0.04 > √2, so φ_λ is always 0.
    settings = KickstartLossSettings(answer_target="debiased", teacher_eta=0.16, lam=0.5)
    with pytest.raises(PrivacyConfigError, match="kickstart_lambda 0.5 .* never act"):
        settings.check_term_can_act(num_actions=6, k=100.0)
    # α_λ/(1 − mη) just below √2 acts; a larger k, λ = 0, a label target or the
    # cross-entropy term (no threshold) are accepted too.
    beta, lam, scale = 0.05, 0.5, 1 - 6 * 0.16
    edge = math.log(1 / beta) / (2 * (math.sqrt(2) * scale / lam) ** 2) - 1
    settings.check_term_can_act(num_actions=6, k=edge * 1.001)
    with pytest.raises(PrivacyConfigError):
        settings.check_term_can_act(num_actions=6, k=edge * 0.999)
    for other in (
        KickstartLossSettings(answer_target="debiased", teacher_eta=0.16, lam=0.0),
        KickstartLossSettings(answer_target="argmax", teacher_eta=0.16, lam=0.5),
        KickstartLossSettings(
            answer_target="debiased", teacher_eta=0.16, lam=0.5, loss="cross_entropy"
        ),
    ):
        other.check_term_can_act(num_actions=6, k=100.0)
    KickstartLossSettings(answer_target="debiased", teacher_eta=0.4).check_term_can_act(
        num_actions=2, k=100.0
    )


def test_debiased_target_needs_eta_below_one_over_m() -> None:
    settings = KickstartLossSettings(answer_target="debiased", teacher_eta=0.3)
    settings.check_num_actions(3)  # 0.3 < 1/3
    with pytest.raises(PrivacyConfigError, match="below 1/m"):
        settings.check_num_actions(4)


# ---- a kickstart weight that follows a schedule --------------------------------------------


class _BaseWithUpdateHook(_ZeroLossLearner):
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        self.base_updates = getattr(self, "base_updates", 0) + 1


class _ScheduledLearner(KickstartLossMixin, _BaseWithUpdateHook):
    """The mixin with its weight scheduler (as ``build()`` makes it) on a stub learner."""

    def __init__(self, settings: KickstartLossSettings) -> None:
        self.kickstart_settings = settings
        self._kickstart_coeff = Scheduler(fixed_value_or_schedule=settings.coeff)
        self.module = type("_Modules", (), {"_rl_modules": {"default_policy": None}})()
        self.metrics = _Metrics()
        self.logged_weights: list[float] = []
        self.metrics.log_value = (  # type: ignore[attr-defined]
            lambda key, value, window: self.logged_weights.append(value)
        )


def test_kickstart_coeff_schedule_fades_the_term_out() -> None:
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    learner = _ScheduledLearner(KickstartLossSettings(coeff=[[0, 2.0], [10_000, 0.0]], lam=0.0))
    student, teacher = np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]])
    distance = float(np.linalg.norm(student - teacher))
    batch = {
        TEACHER_POLICY: torch.as_tensor(teacher, dtype=torch.float32),
        TEACHER_MASK: torch.ones(1),
        TEACHER_K: torch.full((1,), 5.0),
    }
    fwd_out = {Columns.ACTION_DIST_INPUTS: torch.log(torch.as_tensor(student))}

    def loss_after(steps: int) -> float:
        learner.after_gradient_based_update(timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: steps})
        loss = learner.compute_loss_for_module(
            module_id="default_policy", config=None, batch=batch, fwd_out=fwd_out
        )
        return float(loss)

    assert loss_after(0) == pytest.approx(2.0 * distance, rel=1e-5)
    assert loss_after(5_000) == pytest.approx(1.0 * distance, rel=1e-5)  # linear in between
    assert loss_after(20_000) == 0.0  # the last weight after the schedule's end
    assert learner.logged_weights == pytest.approx([2.0, 1.0, 0.0])  # kickstart/coeff
    assert learner.base_updates == 3  # RLlib's own hook still runs


@pytest.mark.parametrize(
    "coeff",
    [
        [[1, 1.0], [10, 0.0]],  # RLlib's rule: a schedule starts at timestep 0
        [[0, 1.0], [0, 0.0]],  # steps must increase
        [[0, -1.0], [10, 0.0]],  # weights >= 0
        [[0, 1.0]],  # at least two points
        [[0, 1.0, 2.0], [10, 0.0]],
        -1.0,
        "fast",
    ],
)
def test_bad_kickstart_coeff_names_the_key(coeff: Any) -> None:
    with pytest.raises(PrivacyConfigError, match="kickstart_coeff"):
        KickstartLossSettings(coeff=coeff)


def test_random_rule_asks_about_a_seeded_fraction_of_the_states_in_the_loss() -> None:
    n, fraction = 4000, 0.1
    in_loss = np.ones(n, bool)
    in_loss[::10] = False  # PPO's masked bootstrap steps are never asked
    counts = []
    for seed in (3, 3, 4):
        teacher = _CountingTeacher()
        connector = AddTeacherAnswersToBatch(
            num_actions=2, query_rule="random", query_fraction=fraction, seed=seed
        )
        connector.set_teacher(teacher)
        out = connector(rl_module=None, batch=_batch(n, in_loss), episodes=[])
        mask = out["default_policy"][TEACHER_MASK].numpy()
        assert mask[~in_loss].sum() == 0
        assert teacher.calls == [int(mask.sum())]
        assert connector.get_state()["skipped"] == int(in_loss.sum() - mask.sum())
        counts.append(mask)
    np.testing.assert_array_equal(counts[0], counts[1])  # the same seed, the same coins
    assert not np.array_equal(counts[0], counts[2])
    # Binomial(3600, 0.1): 5 standard deviations (false-failure rate below 1e-6).
    asked, trials = counts[0].sum(), int(in_loss.sum())
    assert abs(asked - fraction * trials) < 5 * np.sqrt(trials * fraction * (1 - fraction))


@pytest.mark.parametrize("fraction", [0.0, 1.5, -0.1, "half", True])
def test_bad_query_fraction_names_the_key(fraction: Any) -> None:
    with pytest.raises(PrivacyConfigError, match="kickstart_query_fraction"):
        KickstartLossSettings(query_rule="random", query_fraction=fraction)
