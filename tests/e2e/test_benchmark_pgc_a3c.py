"""benchmarks/pgc_a3c.py without starting Ray: statistics, arms, rows, merging, tables, plots."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from benchmark_modules import BENCH_DIR, benchmark_fixture

INF = math.inf
_PATH = BENCH_DIR / "pgc_a3c.py"
bench = benchmark_fixture("pgc_a3c")


@pytest.fixture(autouse=True)
def _restore_environment():
    # main() quiets Tune through environment variables (TUNE_DISABLE_AUTO_CALLBACK_LOGGERS,
    # RAY_AIR_NEW_OUTPUT); in this process they would leak into every later `rllib train`
    # subprocess of the suite and switch off its result.json and TensorBoard files.
    names = ("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "RAY_AIR_NEW_OUTPUT")
    saved = {name: os.environ.get(name) for name in names}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


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


def _record(bench, arm, eps, seed, fst=None, solved=None, eval_final=None, **kw):
    curve = kw.pop(
        "curve",
        {
            "submissions": [500, 1000],
            "score_mean": [20.0, 40.0],
            "eval_return_mean": [10.0, eval_final],
        },
    )
    return bench.TrialRecord(
        arm=arm,
        epsilon=eps,
        seed=seed,
        fst=fst,
        solved_at=solved,
        eval_return_final=eval_final,
        eval_return_max=eval_final,
        submissions=1000,
        env_steps=20000,
        wall_s=10.0,
        curve=curve,
        **kw,
    )


FAMILIES = {
    "privunitg_tuned": "tuned",
    "nonprivate_tuned": "tuned",
    "laplace_paper": "paper",
    "nonprivate_paper": "paper",
}


def test_compute_rows_statistics_and_family_baselines(bench) -> None:
    cap = 1000
    records = [
        _record(bench, "privunitg_tuned", 1.0, 0, fst=500.0, solved=800.0, eval_final=150.0),
        _record(bench, "privunitg_tuned", 1.0, 1, eval_final=50.0),
        _record(bench, "privunitg_tuned", 1.0, 2, fst=1500.0, eval_final=100.0),
        _record(bench, "nonprivate_tuned", INF, 0, fst=100.0, solved=300.0),
        _record(bench, "nonprivate_tuned", INF, 1, fst=200.0, solved=400.0),
        _record(bench, "nonprivate_tuned", INF, 2, fst=300.0, solved=500.0),
        _record(bench, "laplace_paper", 1.0, 0, fst=500.0),
    ]
    rows = bench.compute_rows(records, cap=cap, required=3, families=FAMILIES)
    by = {(r.row.arm, r.row.epsilon): r for r in rows}
    private = by[("privunitg_tuned", 1.0)]
    assert private.median_fst == INF  # 1500 is beyond the cap: 2 of 3 failed
    assert private.success_ratio == pytest.approx(1 / 3)
    assert private.relative_auc == pytest.approx((0.5 / 3) / (2.4 / 3))
    assert private.median_solved_at == INF and private.solved == 1
    assert private.eval_final_median == 100.0
    base = by[("nonprivate_tuned", INF)]
    assert base.relative_auc == pytest.approx(1.0) and base.median_fst == 200.0
    assert base.median_solved_at == 400.0 and base.solved == 3
    # The paper family has no ε = ∞ row: no relative AUC, not the tuned one.
    assert math.isnan(by[("laplace_paper", 1.0)].relative_auc)
    # Display order: each family's baseline after its first arm.
    assert [r.row.arm for r in rows] == ["privunitg_tuned", "nonprivate_tuned", "laplace_paper"]


def test_incomplete_rows_are_marked_and_planned_rows_without_trials_appear(bench) -> None:
    records = [_record(bench, "privunitg_tuned", 1.0, s, fst=100.0) for s in range(3)]
    rows = bench.compute_rows(
        records,
        cap=1000,
        required=10,
        families=FAMILIES,
        rows=[bench.Row("privunitg_tuned", 1.0), bench.Row("privunitg_tuned", 2.0)],
    )
    assert [r.status for r in rows] == ["incomplete (3 of 10 seeds)", "incomplete (0 of 10 seeds)"]
    assert bench.incomplete_rows(rows) == rows
    full = bench.compute_rows(
        [_record(bench, "privunitg_tuned", 1.0, s) for s in range(10)],
        cap=1000,
        required=10,
        families=FAMILIES,
    )
    assert full[0].status == "" and not bench.incomplete_rows(full)
    assert math.isnan(rows[1].median_fst) and rows[1].solved == 0


def test_arms_defaults_and_config_construction(bench) -> None:
    arms = bench.default_arms(tuned_config="t.yaml", laplace_config="l.yaml", prs_config="p.yaml")
    assert list(arms)[: len(bench.ARM_NAMES)] == list(bench.ARM_NAMES)
    assert arms["privunitg_tuned"].base == "t.yaml" and arms["privunit2_tuned"].base == "t.yaml"
    assert arms["laplace_tuned"].base == "l.yaml" and arms["prs_tuned"].base == "p.yaml"
    assert arms["laplace_paper"].is_paper_base and arms["prs_paper"].family == "paper"
    assert arms["nonprivate_tuned"].mechanism == "none" and arms["nonprivate_tuned"].baseline
    assert arms["nonprivate_paper"].mechanism == "laplace"
    # Zero-signal arms: their base arm's config plus the flag.
    tuned = {"privacy_mechanism": "laplace", "lr": 0.02, "agents_per_env_runner": 8}
    g = arms["privunitg_tuned"].build_config(tuned, paper_fleet=32)
    z = arms["zero_privunitg"].build_config(tuned, paper_fleet=32)
    assert g["privacy_mechanism"] == "privunitg" and z == {**g, "privacy_zero_signal_control": True}
    # A fleet without aggregator_submissions_per_request gets one fleet round per request.
    assert g["aggregator_submissions_per_request"] == 8
    kept = arms["privunitg_tuned"].build_config(
        {**tuned, "aggregator_submissions_per_request": 512}, paper_fleet=32
    )
    assert kept["aggregator_submissions_per_request"] == 512
    # Paper arms: the paper base with the fleet (--paper-fleet), 1 = exact protocol.
    paper = arms["zero_paper"].build_config({"env": "E"}, paper_fleet=32)
    assert paper == {
        "env": "E",
        "privacy_mechanism": "laplace",
        "privacy_score_mechanism": "public",
        "privacy_zero_signal_control": True,
        "agents_per_env_runner": 32,
        "aggregator_submissions_per_request": 32,
    }
    exact = arms["laplace_paper"].build_config({"env": "E"}, paper_fleet=1)
    assert exact["agents_per_env_runner"] == 1 and exact["aggregator_submissions_per_request"] == 1
    over = bench.Arm("x", "prs", "paper", "paper", overrides=(("lr", 0.1),))
    assert over.build_config({}, paper_fleet=4)["lr"] == 0.1


def test_parse_arm_names(bench) -> None:
    assert bench.parse_arm_names("laplace_paper, privunitg_tuned,laplace_paper") == [
        "laplace_paper",
        "privunitg_tuned",
    ]
    assert bench.parse_arm_names("all") == list(bench.ARM_NAMES)
    with pytest.raises(Exception, match="unknown arm"):
        bench.parse_arm_names("laplace,nonprivate_tuned")
    args = bench.build_parser().parse_args([])
    assert args.arms == list(bench.ARM_NAMES) and args.epsilons == [1, 2, 5, 10, INF]
    assert (args.cap, args.trials, args.max_concurrent, args.paper_fleet) == (90000, 10, 2, 32)


def test_plan_rows_baselines_once_per_family_and_no_zero_at_inf(bench) -> None:
    arms = bench.default_arms()
    rows = bench.plan_rows(["zero_paper", "privunitg_tuned", "laplace_paper"], [5, INF, 1], arms)
    assert [(r.arm, r.epsilon) for r in rows] == [
        ("zero_paper", 1.0),
        ("zero_paper", 5.0),
        ("nonprivate_paper", INF),
        ("privunitg_tuned", 1.0),
        ("privunitg_tuned", 5.0),
        ("nonprivate_tuned", INF),
        ("laplace_paper", 1.0),
        ("laplace_paper", 5.0),
    ]
    assert bench.plan_rows(["prs_tuned"], [1.0], arms) == [bench.Row("prs_tuned", 1.0)]
    only_inf = bench.plan_rows(["prs_tuned", "laplace_tuned"], [INF], arms)
    assert only_inf == [bench.Row("nonprivate_tuned", INF)]


def test_trial_config_and_variants(bench) -> None:
    config = bench.trial_config(
        {"privacy_mechanism": "privunitg", "privacy_epsilon": 5.0, "num_env_runners": 2},
        epsilon=1.0,
        seed=7,
        submissions_per_iteration=500,
        eval_episodes=None,
    )
    assert config == {
        "privacy_mechanism": "privunitg",
        "privacy_epsilon": 1.0,
        "seed": 7,
        "num_env_runners": 0,
        "num_cpus_for_main_process": 1,
        "aggregator_submissions_per_iteration": 500,
    }
    rows = [bench.Row("a", 1.0), bench.Row("b", INF)]
    out = bench.variants(
        rows, {"a": {}, "b": {}}, [3, 4], submissions_per_iteration=10, eval_episodes=0
    )
    assert [(v["arm"], v["epsilon"], v["seed"]) for v in out] == [
        ("a", 1.0, 3),
        ("a", 1.0, 4),
        ("b", INF, 3),
        ("b", INF, 4),
    ]
    assert out[0]["config"]["scoring_eval_episodes"] == 0
    # The Tune config carries the variant; LDPA3C sees only its config.
    tune_config = {bench.VARIANT_KEY: out[1], "some_tune_key": 1}
    assert bench.strip_variant(tune_config) == {**out[1]["config"], "some_tune_key": 1}
    assert bench.strip_variant({"lr": 1}) == {"lr": 1}


def test_recorder_builds_records_prints_progress_and_separates_failures(bench) -> None:
    lines, recorded = [], []
    rec = bench.TrialRecorder(3, on_record=recorded.append, echo=lines.append)
    variant = {"arm": "privunitg_tuned", "epsilon": 2.0, "seed": 4}
    rec.on_result("t1", {"submissions": 500, "score_mean": 30.0, "ldp": {"eval_return_mean": 40.0}})
    last = {
        "submissions": 1000,
        "score_mean": 196.0,
        "ldp": {"eval_return_mean": 180.0},
        "fst": 812,
        "solved_at": 990,
        "num_env_steps_sampled_lifetime": 12345,
        "time_total_s": 61.5,
    }
    rec.on_result("t1", last)
    record = rec.on_complete("t1", variant, last)
    assert (record.fst, record.solved_at, record.eval_return_final, record.eval_return_max) == (
        812.0,
        990.0,
        180.0,
        180.0,
    )
    assert (record.submissions, record.env_steps, record.wall_s) == (1000, 12345, 61.5)
    assert record.curve == {
        "submissions": [500, 1000],
        "score_mean": [30.0, 196.0],
        "eval_return_mean": [40.0, 180.0],
    }
    assert recorded == [record]
    assert lines[-1].startswith("[1/3] privunitg_tuned ε=2 seed=4: fst 812 | solved_at 990")
    diverged = rec.on_complete(
        "t2",
        {**variant, "seed": 5},
        None,
        error="ValueError: GradientSubmission.gradient must be finite",
    )
    assert diverged.diverged and diverged.fst is None and "DIVERGED" in lines[-1]
    assert rec.on_complete("t3", {**variant, "seed": 6}, None, error="RuntimeError: boom") is None
    assert rec.failures and "boom" in rec.failures[0] and lines[-1].startswith("[3/3]")
    assert len(rec.records) == 2 and rec.done == 3


def _doc(bench, records, *, cap=1000, trials=3, command="cmd"):
    arms = bench.default_arms()
    names = sorted({r.arm for r in records})
    doc = bench.new_document(
        cap=cap,
        trials=trials,
        arms={n: {**arms[n].to_json(), "config": {"mechanism": arms[n].mechanism}} for n in names},
        rows=sorted({r.row for r in records}, key=bench.row_sort_key),
        run={
            "command": command,
            "date_start": "d0",
            "date_end": "d1",
            "loadavg_start": 1.5,
            "loadavg_end": 2.25,
        },
    )
    doc["trials"] = [r.to_json() for r in records]
    return bench.jsonable(doc)


def test_document_json_round_trip_keeps_inf_and_missing(bench, tmp_path) -> None:
    record = _record(bench, "nonprivate_tuned", INF, 0, fst=None, solved=300.0, eval_final=None)
    path = tmp_path / "run.json"
    bench.write_document(path, _doc(bench, [record]))
    doc = bench.load_document(path)
    (back,) = bench.document_records(doc)
    assert back == record
    assert bench.document_rows(doc) == [bench.Row("nonprivate_tuned", INF)]
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(bench.BenchmarkError, match="not a pgc_a3c/2"):
        bench.load_document(tmp_path / "other.json")


def test_merge_documents_joins_runs_and_checks_caps_and_configs(bench) -> None:
    a = _doc(
        bench, [_record(bench, "privunitg_tuned", 1.0, s, fst=100.0) for s in (0, 1)], command="A"
    )
    b = _doc(
        bench,
        [_record(bench, "privunitg_tuned", 1.0, s, fst=900.0) for s in (1, 2)]
        + [_record(bench, "laplace_paper", 2.0, 0)],
        trials=5,
        command="B",
    )
    warned = []
    merged = bench.merge_documents([a, b], ["a.json", "b.json"], warn=warned.append)
    records = bench.document_records(merged)
    assert sorted((r.arm, r.seed, r.fst) for r in records) == [
        ("laplace_paper", 0, None),
        ("privunitg_tuned", 0, 100.0),
        ("privunitg_tuned", 1, 100.0),
        ("privunitg_tuned", 2, 900.0),
    ]
    assert len(warned) == 1 and "kept a.json's" in warned[0]
    assert [r["command"] for r in merged["runs"]] == ["A", "B"]
    assert merged["trials_requested"] == 5 and set(merged["arms"]) == {
        "privunitg_tuned",
        "laplace_paper",
    }
    with pytest.raises(bench.BenchmarkError, match="different caps"):
        bench.merge_documents([a, _doc(bench, [], cap=2000)])
    c = bench.jsonable(dict(a))
    c["arms"] = {"privunitg_tuned": {**a["arms"]["privunitg_tuned"], "config": {"lr": 9}}}
    with pytest.raises(bench.BenchmarkError, match="different config"):
        bench.merge_documents([a, c])


def test_tables_render_paper_values_incomplete_rows_and_raw_trials(bench) -> None:
    records = [
        _record(
            bench, "laplace_paper", 1.0, s, fst=1000.0 + s, solved=2000.0 + s, eval_final=100.0 + s
        )
        for s in range(10)
    ]
    records += [
        _record(bench, "privunitg_tuned", 1.0, 0, fst=300.0),
        _record(bench, "nonprivate_paper", INF, 0, diverged=True),
    ]
    doc = _doc(bench, records, cap=90000, trials=10)
    results = bench.document_results(doc)
    table = bench.sample_efficiency_table(results, 90000)
    lines = {line.split(" | ")[0].strip("| "): line for line in table.splitlines()[2:]}
    # Paper values next to the paper-protocol rows only.
    assert "| 18377 |" in lines["laplace_paper"] and "| 0.800 |" in lines["laplace_paper"]
    assert "| 1769 |" in lines["nonprivate_paper"] and "1 diverged" in lines["nonprivate_paper"]
    assert "18377" not in lines["privunitg_tuned"]
    assert "incomplete (1 of 10 seeds)" in lines["privunitg_tuned"]
    assert "incomplete" not in lines["laplace_paper"]
    assert "| 1004.5 |" in lines["laplace_paper"] and "| 10/10 |" in lines["laplace_paper"]
    raw = bench.raw_trial_table(results)
    assert raw.count("\n") == 2 + 12 - 1 and "diverged" in raw
    section = bench.render_section(doc, [Path("/x/pgc_a3c_laplace_paper.png")])
    assert "**Incomplete rows** (2)" in section and "privunitg_tuned ε=1 (1 of 10)" in section
    assert "1-min load average at start/end 1.50/2.25" in section
    assert "up to N − 1 updates stale" in section
    assert "![pgc_a3c_laplace_paper](pgc_a3c_laplace_paper.png)" in section


def test_fleet_ratio_and_speed_table(bench) -> None:
    def speed(runner, agents, count, subs):
        return bench.SpeedResult(
            runner=runner,
            num_env_runners=count,
            cpus_per_runner=1.0,
            num_envs_per_env_runner=1,
            submissions_per_request=512,
            submissions=subs,
            env_steps=subs * 20,
            wall_s=10.0,
            agents_per_env_runner=agents,
            mechanism="privunitg",
            epsilon=5.0,
        )

    speeds = [
        speed("LDPA3CEnvRunner, fleet of 128", 128, 1, 12000),
        speed("LDPA3CEnvRunner, 1 agent", 1, 1, 1000),
        speed("RLlibSamplingLDPA3CEnvRunner (reference)", 1, 1, 200),
    ]
    assert bench.fleet_ratios(speeds) == {1: pytest.approx(12.0)}
    table = bench.speed_table(speeds)
    assert "| 12.0× |" in table and "| 60.0× |" in table
    back = bench.SpeedResult.from_json(bench.jsonable(speeds[0].to_json()))
    assert back == speeds[0]


def test_merge_json_command_writes_tables_json_and_plots(bench, tmp_path, capsys) -> None:
    curve = {
        "submissions": [500, 1000, 1500],
        "score_mean": [20.0, 60.0, 120.0],
        "eval_return_mean": [15.0, 50.0, 110.0],
    }
    a = _doc(
        bench,
        [_record(bench, "privunitg_tuned", 1.0, s, curve=curve) for s in (0, 1, 2)]
        + [_record(bench, "nonprivate_tuned", INF, 0, fst=300.0, curve=curve)],
    )
    paths = []
    for name, doc in (("a.json", a), ("b.json", _doc(bench, []))):
        bench.write_document(tmp_path / name, doc)
        paths.append(str(tmp_path / name))
    md = tmp_path / "RESULTS.md"
    code = bench.main(
        [
            "--merge-json",
            *paths,
            "--json",
            str(tmp_path / "m.json"),
            "--write-results",
            "--results-md",
            str(md),
            "--plots",
            "--plot-eval",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "privunitg_tuned | 1 | 3 — incomplete (3 of 10 seeds)" in out
    assert (tmp_path / "pgc_a3c_privunitg_tuned.png").stat().st_size > 0
    assert (tmp_path / "pgc_a3c_privunitg_tuned_eval.png").is_file()
    assert not (tmp_path / "pgc_a3c_nonprivate_tuned.png").exists()
    assert "pgc_a3c:arms:start" in md.read_text()
    assert len(bench.load_document(tmp_path / "m.json")["trials"]) == 4


def test_missing_arm_config_is_a_clear_error_before_ray(bench, tmp_path, capsys) -> None:
    code = bench.main(
        [
            "--arms",
            "laplace_tuned",
            "--epsilons",
            "1",
            "--dry-run",
            "--laplace-config",
            str(tmp_path / "absent.yaml"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "laplace_tuned" in err and "absent.yaml" in err and "not found" in err


def test_results_md_sections_are_replaced_in_place(bench, tmp_path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text("# Benchmark results\n\n## other benchmark\n\nkeep me\n")
    bench.RESULTS.write(path, {"tuned": "first tuned", "speed": "first speed"})
    bench.RESULTS.write(path, {"tuned": "second tuned"})
    text = path.read_text()
    assert "keep me" in text and "first speed" in text and "second tuned" in text
    assert "first tuned" not in text
    assert text.count(bench.RESULTS.start) == 1 and text.count("pgc_a3c:tuned:start") == 1
    assert text.count(bench.RESULTS.title) == 1


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
        .privacy(privacy_mechanism="none", privacy_epsilon=INF)
        .agents(agents_loss_reduction="mean")
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
