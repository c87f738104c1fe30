"""benchmarks/pate.py without Ray: tables, option parsing and the RESULTS.md markers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from benchmark_modules import benchmark_fixture

bench = benchmark_fixture("pate")


def test_table_formats_floats_and_missing_values(bench) -> None:
    text = bench.table(["a", "b"], [[1, 0.12345], ["x", math.nan]])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| 1 | 0.123 |", "| x | n/a |"]


def test_parts_option(bench) -> None:
    args = bench.build_parser().parse_args(["--parts", "digits", "--digits-queries", "5,7"])
    assert args.digits_queries == [5, 7] and args.parts == "digits"
    assert bench.main(["--parts", "nope"]) == 2
    # PATE-PPO moved to benchmarks/pate_rl.py, which writes the rl part of the section.
    assert bench.main(["--parts", "rl"]) == 2
    assert bench.RESULTS.parts == ("accountant", "digits", "rl")


def test_results_md_parts_are_replaced_in_place(bench, tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep\n<!-- other:end -->\n")
    bench.RESULTS.write(results, {"digits": "first", "rl": "rl one"})
    bench.RESULTS.write(results, {"digits": "second"})
    text = results.read_text()
    assert "keep" in text and "second" in text and "first" not in text and "rl one" in text
    assert text.count("<!-- pate:start -->") == 1 and text.count("<!-- pate:digits:start -->") == 1
    assert text.index("<!-- pate:digits:end -->") < text.index("<!-- pate:rl:start -->")


def test_equal_epsilon_calibration_and_quick_options(bench) -> None:
    from rllib_privacy.accounting import GNMAX_ORDERS, pate_epsilon, rdp_to_epsilon

    gamma = bench.lnmax_gamma_for(5.0, 100)
    assert pate_epsilon(100, gamma=gamma, delta=1e-5).epsilon == pytest.approx(5.0, rel=1e-6)
    sigma = bench.gnmax_sigma_for(5.0, 100)
    orders = np.array(GNMAX_ORDERS)
    spent = rdp_to_epsilon(orders, 100 * orders / sigma**2, 1e-5)
    assert spent == pytest.approx(5.0, rel=1e-6)
    # Confident-GNMax: 40 threshold steps at σ₁ = 15 and 20 answers at σ₂ spend exactly 5.
    sigma2 = bench.confident_sigma_for(5.0, 20, 40, 15.0)
    rdp = 40 * orders / (2 * 15.0**2) + 20 * orders / sigma2**2
    assert rdp_to_epsilon(orders, rdp, 1e-5) == pytest.approx(5.0, rel=1e-6)
    assert sigma2 > bench.gnmax_sigma_for(5.0, 20)  # the threshold steps take their share
    with pytest.raises(ValueError, match="threshold steps"):
        bench.confident_sigma_for(5.0, 20, 4000, 1.0)
    assert bench._confident("0.7:0.35;0.6:0.5") == [(0.7, 0.35), (0.6, 0.5)]
    args = bench.build_parser().parse_args(["--quick"])
    assert args.quick and args.digits_target_epsilon == 5.0
    args = bench.build_parser().parse_args(["--seeds", "3", "--digits-first-seed", "3"])
    assert list(bench._digits_seeds(args)) == [3, 4, 5]
    assert bench.build_parser().parse_args(["--dataset", "mnist5k"]).dataset == "mnist5k"
    assert set(bench.DATASETS) == {"digits", "mnist5k"}
    # 45 threshold steps at σ₁ = 0.2·30 = 6 alone spend more than ε = 5: that setting is left
    # out (and named), the one at σ₁ = 0.5·30 is kept.
    args = bench.build_parser().parse_args(
        ["--aggregator-teachers", "30", "--aggregator-queries", "30",
         "--confident-settings", "0.5:0.2;0.5:0.5"]
    )  # fmt: skip
    settings, skipped = bench._aggregator_settings(args)
    assert [name.split(" ")[0] for name, _, _ in settings] == ["LNMax", "GNMax", "Confident-GNMax"]
    assert skipped == ["n=30, T=0.5n, σ₁=0.2n, Q=30"]


@pytest.mark.slow
def test_quick_digits_part_prints_the_aggregator_table(bench, capsys) -> None:
    assert bench.main(["--parts", "digits", "--quick"]) == 0
    out = capsys.readouterr().out
    for name in ("LNMax", "GNMax", "Confident-GNMax", "Best student accuracy"):
        assert name in out


def test_digits_part_runs_scikit_learn_single_threaded(bench) -> None:
    """OpenMP (scikit-learn's k-NN searches) included: it is loaded before the limit is set."""
    from threadpoolctl import threadpool_info

    def pools(_args: object) -> list[tuple[str, int]]:
        return [(pool["internal_api"], pool["num_threads"]) for pool in threadpool_info()]

    limited = bench._single_threaded(pools)(None)
    assert "openmp" in {api for api, _ in limited} and {n for _, n in limited} == {1}, limited
