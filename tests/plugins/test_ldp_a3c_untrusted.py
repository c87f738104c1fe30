"""LDPA3C with untrusted local agents: reports are checked before they are applied.

A malicious agent does not run ``GradientSubmission.__post_init__``: the forged reports
here are built without it (``_forged``). Covered: the aggregator-side check
(``check_report``), what a refused report is charged, the robust mean
(``aggregator_robust: projection_filter``), the simulated attackers of a fleet
(``agents_malicious_fraction``), the config keys, and a running LDPA3C that counts and
never applies malformed reports while the trial keeps running.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import pathlib
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rllib_privacy.accounting import LDPLedger, LDPReport, PrivacyJournal, journal_file
from rllib_privacy.algorithms.ldp_a3c import GradientSubmission, LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.attacks import attack_direction, poison_rows
from rllib_privacy.algorithms.ldp_a3c.fleet import AgentFleet
from rllib_privacy.algorithms.ldp_a3c.gradient_aggregator import (
    GradientBuffer,
    projection_filter,
)
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c import JOURNAL_COMPONENT
from rllib_privacy.algorithms.ldp_a3c.validation import (
    check_report,
    configured_score_mechanism,
    rejected_charges,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms import GradientMechanism

DIM = 28
PRIVUNITG = GradientMechanism(name="privunitg", epsilon=1.0, clip=1.0)


def _forged(**fields: Any) -> GradientSubmission:
    """A report as a malicious sender can make it: no constructor checks run."""
    values: dict[str, Any] = {
        "agent_id": "agent-0",
        "gradient": np.zeros(DIM, dtype=np.float32),
        "epsilon": 1.0,
        "mechanism": "privunitg",
        "score": 20.0,
        "env_steps": 20,
        "weights_version": 0,
        "agent_sequence": 1,
        "score_mechanism": "public",
        "score_epsilon": math.inf,
    }
    values.update(fields)
    report = object.__new__(GradientSubmission)
    for field in dataclasses.fields(GradientSubmission):
        object.__setattr__(report, field.name, values[field.name])
    return report


def _honest(mechanism: GradientMechanism, rng: np.random.Generator, **fields: Any) -> Any:
    gradient = np.asarray(mechanism.privatize(rng.normal(size=DIM), rng), dtype=np.float32)
    return _forged(gradient=gradient, epsilon=mechanism.epsilon, mechanism=mechanism.name, **fields)


# ------------------------------------------------------------------ check_report


@pytest.mark.parametrize(
    "mechanism",
    [
        PRIVUNITG,
        GradientMechanism(name="privunit2", epsilon=2.0, clip=1.0),
        GradientMechanism(name="prs", epsilon=10.0, clip=1.0),
        GradientMechanism(name="laplace", epsilon=1.0, clip=0.01),
    ],
    ids=lambda m: m.name,
)
def test_honest_reports_pass_the_aggregator_check(mechanism: GradientMechanism) -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        report = _honest(mechanism, rng, weights_version=3)
        assert check_report(report, mechanism=mechanism, dim=DIM, max_weights_version=3) is None


def _big(mechanism: GradientMechanism) -> np.ndarray:
    return (mechanism.worst_valid_output(np.ones(DIM)) * 1.5).astype(np.float32)


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"gradient": np.zeros(DIM + 1, dtype=np.float32)}, "shape"),
        ({"gradient": np.zeros((2, DIM), dtype=np.float32)}, "shape"),
        ({"gradient": np.zeros(DIM, dtype=np.float64)}, "float64"),
        ({"gradient": np.zeros(DIM, dtype=np.int32)}, "dtype"),
        ({"gradient": [0.0] * DIM}, "numpy array"),
        ({"gradient": np.full(DIM, np.nan, dtype=np.float32)}, "non-finite"),
        ({"gradient": _big(PRIVUNITG)}, "PrivUnitG bound"),
        ({"epsilon": 0.5}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"mechanism": "laplace"}, "mechanism"),
        ({"score": math.nan}, "score"),
        ({"score": "20"}, "score"),
        ({"env_steps": -1}, "env_steps"),
        ({"weights_version": 9}, "weights_version"),
        ({"agent_id": 7}, "agent_id"),
        ({"agent_sequence": "1"}, "agent_sequence"),
        ({"agent_sequence": 0}, "agent_sequence"),
        ({"score_mechanism": "one_bit"}, "score_mechanism"),
    ],
)
def test_malformed_reports_are_refused_naming_the_field(fields: dict, fragment: str) -> None:
    reason = check_report(_forged(**fields), mechanism=PRIVUNITG, dim=DIM, max_weights_version=2)
    assert reason is not None and fragment in reason


def test_prs_and_laplace_reports_outside_their_sets_are_refused() -> None:
    prs = GradientMechanism(name="prs", epsilon=10.0, clip=1.0)
    off = prs.worst_valid_output(np.ones(DIM)).astype(np.float32)
    off[0] *= 0.75  # 3 units of the lattice: in range, and a lattice point
    assert (
        check_report(
            _forged(gradient=off, epsilon=10.0, mechanism="prs"),
            mechanism=prs,
            dim=DIM,
            max_weights_version=0,
        )
        is None
    )
    off[1] *= 0.9  # off the lattice
    reason = check_report(
        _forged(gradient=off, epsilon=10.0, mechanism="prs"),
        mechanism=prs,
        dim=DIM,
        max_weights_version=0,
    )
    assert reason is not None and "support" in reason
    laplace = GradientMechanism(name="laplace", epsilon=1.0, clip=0.01)
    spike = np.zeros(DIM, dtype=np.float32)
    spike[3] = 0.5  # 50 noise scales: beyond C/2 + b·ln(2d/r) ≈ 0.25, within the L1 bound
    reason = check_report(
        _forged(gradient=spike, mechanism="laplace"),
        mechanism=laplace,
        dim=DIM,
        max_weights_version=0,
    )
    assert reason is not None and "per-entry" in reason


#: The fields of a report whose score went through ``_ScoreMechanism``.
BIT = {"env_steps": 0, "score_mechanism": "one_bit", "score_epsilon": 0.25}


@dataclasses.dataclass(frozen=True)
class _ScoreMechanism:
    """The interface check_report needs of a private-score mechanism."""

    name: str = "one_bit"
    epsilon: float = 0.25
    output_set: frozenset[int] = frozenset({0, 1})


@pytest.mark.parametrize(
    ("fields", "ok"),
    [
        ({"score": 1.0, "env_steps": 0, "score_mechanism": "one_bit", "score_epsilon": 0.25}, True),
        ({"score": 0.0, "env_steps": 0, "score_mechanism": "one_bit", "score_epsilon": 0.25}, True),
        (
            {"score": 0.5, "env_steps": 0, "score_mechanism": "one_bit", "score_epsilon": 0.25},
            False,
        ),
        (
            {"score": 1.0, "env_steps": 9, "score_mechanism": "one_bit", "score_epsilon": 0.25},
            False,
        ),
        ({"score": 1.0, "env_steps": 0, "score_mechanism": "one_bit", "score_epsilon": 0.5}, False),
        ({"score": 20.0, "env_steps": 20}, False),  # a clear score where a private one is due
    ],
)
def test_a_private_score_must_be_in_its_mechanisms_output_set(fields: dict, ok: bool) -> None:
    reason = check_report(
        _forged(**fields),
        mechanism=PRIVUNITG,
        dim=DIM,
        max_weights_version=0,
        score_mechanism=_ScoreMechanism(),
    )
    assert (reason is None) == ok, reason


def test_a_refused_report_is_charged_as_an_honest_release_once() -> None:
    ledger = LDPLedger(epsilon_budget_per_agent=1.0)
    # Charged the configured ε, whatever it claims.
    charges = rejected_charges(
        _forged(epsilon=1e-9), mechanism=PRIVUNITG, score_mechanism=None, ledger=ledger
    )
    assert charges == [LDPReport(agent_id="agent-0", epsilon=1.0, mechanism="privunitg")]
    ledger.record(charges[0])
    # A number already recorded (a duplicate, or a forged id) is charged nothing.
    assert not rejected_charges(_forged(), mechanism=PRIVUNITG, score_mechanism=None, ledger=ledger)
    # The budget is spent: the ledger is not pushed above it.
    assert not rejected_charges(
        _forged(agent_sequence=2), mechanism=PRIVUNITG, score_mechanism=None, ledger=ledger
    )
    # No well-formed sender: no one to charge.
    for fields in ({"agent_id": 3}, {"agent_sequence": "2"}):
        assert not rejected_charges(
            _forged(**fields), mechanism=PRIVUNITG, score_mechanism=None, ledger=ledger
        )
    # With a private score, the score's release is charged too.
    half = GradientMechanism(name="privunitg", epsilon=0.75, clip=1.0)
    charges = rejected_charges(
        _forged(agent_id="agent-1"),
        mechanism=half,
        score_mechanism=_ScoreMechanism(),
        ledger=ledger,
    )
    assert [(e.mechanism, e.epsilon) for e in charges] == [("privunitg", 0.75), ("one_bit", 0.25)]


# ------------------------------------------------------------------ robust mean


def _honest_rows(rng: np.random.Generator, rows: int, signal: np.ndarray) -> np.ndarray:
    return np.asarray(PRIVUNITG.privatize_rows(np.tile(signal, (rows, 1)), rng))


def test_projection_filter_keeps_honest_reports_and_drops_aligned_attackers() -> None:
    rng = np.random.default_rng(1)
    signal = rng.normal(size=DIM)
    signal *= 0.5 / np.linalg.norm(signal)
    honest = _honest_rows(rng, 2048, signal)
    bound = PRIVUNITG.output_std_bound(DIM)
    keep = projection_filter(honest, std_bound=bound)
    # About 0.3 honest reports of 2048 are left out on average (measured over 60 buffers);
    # more than 5 has Poisson probability < 1e-6.
    assert np.count_nonzero(~keep) <= 5
    attack = np.tile(PRIVUNITG.worst_valid_output(-signal), (205, 1))
    rows = np.vstack([honest[:1843], attack])  # 10% malicious
    keep = projection_filter(rows, std_bound=bound)
    assert not keep[1843:].any()
    unit = signal / np.linalg.norm(signal)
    # The plain mean is pushed past zero along the signal; the filtered one is not.
    assert float(rows.mean(axis=0) @ unit) < 0.0
    assert float(rows[keep].mean(axis=0) @ unit) > 0.0


def test_robust_buffer_is_the_plain_mean_when_nothing_is_left_out() -> None:
    rng = np.random.default_rng(2)
    rows = rng.normal(size=(6, DIM)).astype(np.float32)
    plain = GradientBuffer(6, DIM)
    robust = GradientBuffer(6, DIM, robust="projection_filter", std_bound=100.0)
    for row in rows[:-1]:
        assert plain.add(row) is None and robust.add(row) is None
    # A checkpoint in the middle of a buffer keeps each report.
    restored = GradientBuffer(6, DIM, robust="projection_filter", std_bound=100.0)
    restored.load_state_dict(robust.state_dict())
    expected = plain.add(rows[-1])
    np.testing.assert_allclose(restored.add(rows[-1]), expected, rtol=1e-6)
    assert restored.filtered == 0 and len(restored) == 0


def test_robust_buffer_counts_left_out_reports_and_needs_its_rows() -> None:
    buffer = GradientBuffer(4, 2, robust="projection_filter", std_bound=1.0)
    for row in ([0.1, 0.0], [-0.1, 0.2], [0.0, -0.1], [50.0, 50.0]):
        mean = buffer.add(np.array(row, dtype=np.float32))
    assert buffer.filtered == 1
    np.testing.assert_allclose(mean, [0.0, 1 / 30], atol=1e-6)
    with pytest.raises(ValueError, match="std_bound"):
        GradientBuffer(4, 2, robust="projection_filter")
    with pytest.raises(ValueError, match="robust"):
        GradientBuffer(4, 2, robust="median")
    legacy = GradientBuffer(4, 2).state_dict()
    legacy.update(count=1, sum=[1.0, 1.0])
    with pytest.raises(ValueError, match="one by one"):
        buffer.load_state_dict(legacy)


# ------------------------------------------------------------------ simulated attackers


def test_attack_directions() -> None:
    gradient = np.array([1.0, -2.0, 0.0])
    np.testing.assert_array_equal(attack_direction(gradient, "flip"), -gradient)
    np.testing.assert_array_equal(attack_direction(gradient, "fixed"), np.ones(3))
    # A zero gradient has no direction to flip: the fixed one.
    np.testing.assert_array_equal(attack_direction(np.zeros(3), "flip"), np.ones(3))
    with pytest.raises(ValueError, match="attack"):
        attack_direction(gradient, "random")


@pytest.mark.parametrize("attack", ["flip", "fixed"])
def test_poisoned_rows_are_the_worst_valid_outputs(attack: str) -> None:
    rng = np.random.default_rng(3)
    prs = GradientMechanism(name="prs", epsilon=1.0, clip=1.0)
    gradients = rng.normal(size=(5, DIM))
    released = np.asarray(prs.privatize_rows(gradients, rng), dtype=np.float32)
    out = poison_rows(
        gradients, released, [False, True, False, True, False], mechanism=prs, attack=attack
    )
    np.testing.assert_array_equal(out[[0, 2, 4]], released[[0, 2, 4]])
    for i in (1, 3):
        expected = prs.worst_valid_output(attack_direction(gradients[i], attack))
        np.testing.assert_array_equal(out[i], expected.astype(np.float32))
        assert prs.check_output(out[i]) is None
    if attack == "fixed":  # all-same signs
        assert np.all(out[[1, 3]] == np.float32(math.sqrt(3.0)))
    assert poison_rows(gradients, released, [False] * 5, mechanism=prs, attack=attack) is released


def test_a_fleet_with_malicious_agents_sends_valid_attack_reports() -> None:
    config = LDPA3CConfig().agents(agents_per_env_runner=8, agents_malicious_fraction=0.5)
    config.privacy(privacy_mechanism="privunitg", privacy_epsilon=1.0, privacy_clip=1.0)
    config.validate_ldp_settings()
    spec = config.get_default_rl_module_spec()
    spec.observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    spec.action_space, spec.model_config = gym.spaces.Discrete(2), {}
    torch.manual_seed(0)
    module = spec.build()
    ids = itertools.count()
    fleet = AgentFleet(
        module=module,
        config=config,
        num_agents=8,
        new_agent_id=lambda: f"agent-{next(ids)}",
        env_seed_rng=np.random.default_rng(0),
        explore_rng=np.random.default_rng(1),
        noise_rng=lambda: np.random.default_rng(2),
    )
    submissions = fleet.submit(weights_version=0, alpha=lambda made: 0.0, num_submissions=32)
    mechanism = config.get_gradient_mechanism()
    dim = submissions[0].gradient.size
    bound = mechanism.worst_valid_output(np.ones(dim))
    norms = np.array([np.linalg.norm(s.gradient) for s in submissions])
    attacked = np.isclose(norms, np.linalg.norm(bound), rtol=1e-5)
    # Each new agent is malicious w.p. 1/2: 32 agents, all attackers or none has
    # probability 2^-31.
    assert 0 < attacked.sum() < len(submissions)
    scores = configured_score_mechanism(config)
    for s in submissions:
        assert (
            check_report(
                s, mechanism=mechanism, dim=dim, max_weights_version=0, score_mechanism=scores
            )
            is None
        )


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"aggregator_robust": "median"}, "aggregator_robust"),
        ({"agents_malicious_attack": "random"}, "agents_malicious_attack"),
        ({"agents_malicious_fraction": 1.0}, "agents_malicious_fraction"),
        ({"agents_malicious_fraction": -0.1}, "agents_malicious_fraction"),
        ({"agents_malicious_fraction": "0.1"}, "agents_malicious_fraction"),
        # The fleet simulates the attackers.
        ({"agents_malicious_fraction": 0.1, "agents_per_env_runner": 1}, "agents_malicious"),
        # No bounded output set without a private mechanism.
        (
            {"aggregator_robust": "projection_filter", "privacy_epsilon": math.inf},
            "aggregator_robust",
        ),
    ],
)
def test_bad_untrusted_agent_settings_name_the_key(settings: dict, key: str) -> None:
    base = {"privacy_mechanism": "privunitg", "agents_per_env_runner": 4}
    config = LDPA3CConfig().update_from_dict({**base, **settings})
    with pytest.raises(PrivacyConfigError, match=f"'{key}"):
        config.validate_ldp_settings()


# ------------------------------------------------------------------ a running LDPA3C


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_malformed_reports_are_counted_charged_never_applied_and_training_goes_on(
    tmp_path: pathlib.Path,
) -> None:
    config = (
        LDPA3CConfig()
        .env_runners(num_env_runners=0)
        .privacy(
            privacy_mechanism="privunitg",
            privacy_epsilon=1.0,
            privacy_clip=1.0,
            privacy_journal_dir=str(tmp_path / "journal"),
        )
        .agents(agents_per_env_runner=4, agents_action_selection="sample")
        .aggregator(
            aggregator_max_buffer=8,
            aggregator_submissions_per_iteration=8,
            aggregator_submissions_per_request=8,
        )
        .scoring(scoring_eval_episodes=0)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        first = algo.train()
        assert first["ldp"]["rejected_submissions"] == 0
        dim = algo._weights.size
        good = algo.env_runner.submit_gradients(
            weights=algo._weights,
            weights_version=algo._weights_version,
            submissions_so_far=0,
            num_submissions=4,
        )[0]
        forged = [
            dataclasses.replace(good, agent_id="forger", agent_sequence=n) for n in range(1, 4)
        ]
        # dataclasses.replace runs the constructor: forge past it, as a malicious agent can.
        bad_gradients = [
            np.zeros(dim + 1, dtype=np.float32),
            np.full(dim, np.nan, dtype=np.float32),
            (algo._mechanism.worst_valid_output(np.ones(dim)) * 2).astype(np.float32),
        ]
        for report, gradient in zip(forged, bad_gradients, strict=True):
            object.__setattr__(report, "gradient", gradient)
        nameless = dataclasses.replace(good, agent_sequence=5)
        object.__setattr__(nameless, "agent_id", None)
        object.__setattr__(nameless, "gradient", bad_gradients[1])
        weights = algo._weights.copy()
        before = (algo._applied, len(algo._buffer), algo._scores.submissions)
        releases = algo._ledger.releases
        algo._receive([*forged, nameless])
        # Counted, never applied or scored, θ untouched.
        assert algo._rejected == 4
        assert (algo._applied, len(algo._buffer), algo._scores.submissions) == before
        np.testing.assert_array_equal(algo._weights, weights)
        # The forger's first report is charged once (one agent, ε = 1 spent); later ones
        # cannot be afforded; the nameless one has no one to charge.
        # (With private scores a report is two releases: its gradient and its score.)
        per_report = 1 if algo._score_check is None else 2
        assert algo._ledger.releases == releases + per_report
        assert algo._ledger.epsilon_spent("forger") == pytest.approx(1.0)
        records = PrivacyJournal(
            journal_file(tmp_path / "journal", JOURNAL_COMPONENT), component=JOURNAL_COMPONENT
        ).records()
        refused = [r for r in records if r["kind"] == "release" and r.get("rejected")]
        assert [r["id"] for r in refused] == ["forger#1"] * per_report
        assert "shape" in refused[0]["rejected"]
        # The trial keeps running and reports the count.
        second = algo.train()
        assert second["ldp"]["rejected_submissions"] == 4
        assert second["ldp"]["submissions"] >= first["ldp"]["submissions"] + 8
        assert second["ldp"]["applied_submissions"] == second["ldp"]["submissions"]
    finally:
        algo.stop()


def test_the_summary_shows_refused_reports_only_when_there_were_some() -> None:
    from rllib_privacy.cli.summary import headline_values

    assert "ldp/rejected_submissions" not in headline_values(
        {"ldp": {"rejected_submissions": 0, "eval_return_mean": 9.0}}
    )
    shown = headline_values({"ldp": {"rejected_submissions": 3, "eval_return_mean": 9.0}})
    assert shown["ldp/rejected_submissions"] == 3
