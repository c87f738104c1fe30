"""LDPA3C behind the shuffler on a local Ray instance: ids never reach it, central ε, faults."""

from __future__ import annotations

import math
import pickle
from pathlib import Path
from typing import Any

import pytest

from rllib_privacy.accounting.shuffle import local_epsilon_for_central, shuffled_rounds_epsilon
from rllib_privacy.algorithms.ldp_a3c import LDPA3C, LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.anonymous import AnonymousBatch, AnonymousReport
from rllib_privacy.errors import PrivacyConfigError

pytestmark = pytest.mark.ray

BATCH = 8


class RecordingLDPA3C(LDPA3C):
    """LDPA3C that keeps everything its aggregator receives and applies."""

    def _receive(self, submissions: list[Any]) -> None:
        self.__dict__.setdefault("received", []).extend(submissions)
        super()._receive(submissions)

    def _apply_report(self, report: Any) -> None:
        self.__dict__.setdefault("applied_reports", []).append(report)
        super()._apply_report(report)


def _config(tmp_path: Path, **privacy: Any) -> LDPA3CConfig:
    return (
        LDPA3CConfig(algo_class=RecordingLDPA3C)
        .env_runners(num_env_runners=1)
        .privacy(
            privacy_mechanism="privunitg",
            privacy_clip=1.0,
            privacy_journal_dir=str(tmp_path / "journal"),
            **privacy,
        )
        .agents(agents_per_env_runner=4, agents_action_selection="sample")
        .aggregator(
            aggregator_max_buffer=BATCH,
            aggregator_submissions_per_iteration=3 * BATCH,
            aggregator_submissions_per_request=4,
        )
        .scoring(scoring_eval_episodes=0)
        .shuffler(shuffler_enabled=True)
    )


def _shuffler_agent_ids(algo: LDPA3C) -> list[str]:
    import ray

    state = ray.get(algo._shuffler.get_state.remote())
    return list(state["ledger"]["agents"])


def _invariants(algo: LDPA3C) -> dict[str, float]:
    """Every accepted report was received in a batch or waits in the shuffler, once."""
    import ray

    stats = ray.get(algo._shuffler.stats.remote())
    submissions = algo._scores.submissions  # applied, or rolled back with a restore
    assert stats["releases"] == submissions + stats["pending"]
    assert algo._ledger.releases == submissions // BATCH == algo._last_batch_seq
    return stats


def test_aggregator_behind_the_shuffler_never_sees_an_id(ray_session, tmp_path: Path) -> None:
    algo = _config(tmp_path, privacy_epsilon=2.0).build_algo()
    try:
        result = algo.train()
        received, applied = algo.received, algo.applied_reports
        assert received and all(type(item) is AnonymousBatch for item in received)
        assert all(len(batch) == BATCH for batch in received)
        assert applied and all(type(report) is AnonymousReport for report in applied)
        ids = _shuffler_agent_ids(algo)
        assert len(ids) >= 3 * BATCH
        # Nothing the aggregator was handed holds an id, in any field or nested object.
        blob = pickle.dumps((received, applied))
        assert not [agent for agent in ids if agent.encode() in blob]
        for report in applied:
            with pytest.raises(AttributeError):
                report.agent_id  # noqa: B018  # the attribute must not exist
        # Anything but an anonymous batch is refused on this path.
        with pytest.raises(TypeError, match="AnonymousBatch"):
            algo._receive([applied[0]])
        # The guarantee of this run: the central ε of the batches it recorded.
        privacy = result["privacy"]
        assert privacy["epsilon_central"] == pytest.approx(algo._ledger.spent[0])
        assert privacy["epsilon_central"] == pytest.approx(
            shuffled_rounds_epsilon(2.0, BATCH, 1e-6, rounds=1)
        )
        assert privacy["delta_central"] == 1e-6
        assert privacy["epsilon_per_report"] == pytest.approx(2.0)
        assert "epsilon_central_if_shuffled" not in privacy
        assert "epsilon_shuffled" not in privacy
        # The local guarantee comes from the shuffler's per-agent ledger.
        assert result["epsilon_per_agent"] == pytest.approx(2.0)
        _invariants(algo)
    finally:
        algo.stop()


def test_without_the_shuffler_the_central_epsilon_is_only_hypothetical(
    ray_session, tmp_path: Path
) -> None:
    config = _config(tmp_path, privacy_epsilon=2.0).shuffler(shuffler_enabled=False)
    algo = config.build_algo()
    try:
        privacy = algo.train()["privacy"]
        assert "epsilon_central" not in privacy and "epsilon_shuffled" not in privacy
        assert privacy["epsilon_central_if_shuffled"] == pytest.approx(
            shuffled_rounds_epsilon(2.0, BATCH, 1e-6, rounds=1)
        )
    finally:
        algo.stop()


def test_central_target_picks_epsilon0_and_needs_the_shuffler(tmp_path: Path) -> None:
    config = _config(tmp_path, privacy_central_epsilon=1.0).aggregator(aggregator_max_buffer=2048)
    config.agents(agents_submissions_per_agent=2)
    config.validate_ldp_settings()
    epsilon0 = local_epsilon_for_central(1.0, 2048, 1e-6, rounds=2)
    assert config.local_epsilon_per_report == epsilon0
    # ε₀ is what a report spends in all: its gradient and, when private, its score.
    score = config.get_score_mechanism() if hasattr(config, "get_score_mechanism") else None
    spent = config.get_gradient_mechanism().epsilon + (0.0 if score is None else score.epsilon)
    assert spent == pytest.approx(epsilon0)
    assert config.effective_epsilon == pytest.approx(2 * epsilon0)
    assert shuffled_rounds_epsilon(epsilon0, 2048, 1e-6, rounds=2) <= 1.0
    with pytest.raises(PrivacyConfigError, match="'privacy_central_epsilon' is 1.0.*shuffler"):
        config.shuffler(shuffler_enabled=False).validate_ldp_settings()
    tiny = _config(tmp_path, privacy_central_epsilon=1e-12)
    with pytest.raises(PrivacyConfigError, match=r"1e-12.*\|B\| = 8.*smallest reachable"):
        tiny.validate_ldp_settings()
    with pytest.raises(PrivacyConfigError, match="'shuffler_resources'"):
        _config(tmp_path).shuffler(shuffler_resources={"shuffler": -1}).validate_ldp_settings()


def test_a_killed_shuffler_loses_nothing_and_a_checkpoint_restores_it(
    ray_session, tmp_path: Path
) -> None:
    import ray

    config = _config(tmp_path, privacy_epsilon=2.0)
    algo = config.build_algo()
    restored = None
    try:
        algo.train()
        before = _invariants(algo)
        # Kill it (mid-batch when reports wait in it): Ray restarts it from its journal.
        ray.kill(algo._shuffler, no_restart=False)
        algo.train()
        after = _invariants(algo)
        assert after["releases_replayed"] == before["releases"]
        assert after["releases"] >= before["releases"] + 3 * BATCH - before["pending"]
        checkpoint = tmp_path / "checkpoint"
        algo.save_to_path(str(checkpoint))
        saved = ray.get(algo._shuffler.stats.remote())
        algo.train()  # then the trial dies; its journals hold what came after
        made = ray.get(algo._shuffler.stats.remote())["releases"]
        algo.stop()
        restored = config.build_algo()
        restored.restore_from_path(str(checkpoint))
        stats = _invariants(restored)
        # Nothing accepted before or after the checkpoint is forgotten or counted twice.
        assert stats["releases"] == made >= saved["releases"]
        restored.train()
        _invariants(restored)
    finally:
        algo.stop()
        if restored is not None:
            restored.stop()


def test_no_shuffler_and_no_central_epsilon_without_privacy(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config.privacy(privacy_mechanism="none", privacy_epsilon=math.inf)
    with pytest.raises(PrivacyConfigError, match="'shuffler_enabled' is true, but the run is not"):
        config.validate_ldp_settings()
    config.shuffler(shuffler_enabled=False).privacy(privacy_central_epsilon=1.0)
    with pytest.raises(PrivacyConfigError, match="privacy_central_epsilon"):
        config.validate_ldp_settings()


class _Result:
    """What the summary reads of one of Tune's results."""

    def __init__(self, metrics: dict[str, Any]) -> None:
        self.metrics, self.error, self.path, self.checkpoint = metrics, None, "/t/trial_0", None


def _outcome(privacy: dict[str, float]) -> Any:
    from types import SimpleNamespace

    from rllib_privacy.cli.summary import Outcome

    metrics = {"done": True, "privacy": {"epsilon_spent": 3.29, "delta_spent": 0.0, **privacy}}
    experiment = SimpleNamespace(name="exp", path="/t")
    return Outcome(experiment=experiment, grid=[_Result(metrics)])  # type: ignore[arg-type]


def test_summary_shows_a_central_epsilon_only_behind_the_shuffler() -> None:
    from rllib_privacy.cli.summary import headline_values, privacy_line

    on = _outcome({"epsilon_central": 1.0, "delta_central": 1e-6, "epsilon_per_report": 3.29})
    line = privacy_line(on)
    assert line is not None and "central ε = 1 at δ = 1e-06 behind the shuffler" in line
    assert "ε₀ = 3.29 per report" in line
    shown = headline_values(on.grid[0].metrics)
    assert shown["privacy/epsilon_central"] == 1.0
    assert shown["privacy/epsilon_per_report"] == 3.29
    # Without the shuffler the hypothetical figure is reported, never shown as achieved.
    off = _outcome({"epsilon_central_if_shuffled": 0.1, "delta_central_if_shuffled": 1e-6})
    line = privacy_line(off)
    assert line is not None and "central ε" not in line
    assert not [key for key in headline_values(off.grid[0].metrics) if "shuffl" in key]
    assert not [key for key in headline_values(off.grid[0].metrics) if "central" in key]
