"""`rllib-privacy pate-epsilon`: both ε values, best orders, clear errors (exit 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rllib_privacy.accounting import pate_epsilon
from rllib_privacy.cli import tools_main


def test_prints_both_epsilons_and_orders(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    votes = np.tile([200, 50], (100, 1))
    path = tmp_path / "votes.npy"
    np.save(path, votes)
    args = ["pate-epsilon", "--votes", str(path), "--gamma", "0.05", "--delta", "1e-5"]
    assert tools_main(args) == 0
    out = capsys.readouterr().out
    dependent = pate_epsilon(votes, gamma=0.05, delta=1e-5)
    assert f"data-dependent epsilon:   {dependent.epsilon:.4f} (order {dependent.order})" in out
    assert "data-independent epsilon: 5.3026 (order 5)" in out
    assert "advanced composition:     5.7985" in out and "queries: 100" in out


def test_queries_alone_and_queries_limiting_the_votes(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert (
        tools_main(["pate-epsilon", "--queries", "100", "--gamma", "0.05", "--delta", "1e-5"]) == 0
    )
    out = capsys.readouterr().out
    assert "n/a (needs --votes)" in out and "5.3026 (order 5)" in out
    path = tmp_path / "votes.npy"
    np.save(path, np.tile([9, 1, 0], (50, 1)))
    args = ["pate-epsilon", "--votes", str(path), "--queries", "10", "--gamma", "0.1"]
    assert tools_main([*args, "--delta", "1e-6", "--max-order", "4"]) == 0
    out = capsys.readouterr().out
    expected = pate_epsilon(10, gamma=0.1, delta=1e-6, max_order=4)
    assert "queries: 10 " in out and f"{expected.epsilon:.4f} (order {expected.order})" in out


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (None, [], "cannot read"),
        (np.array([1, 2, 3]), [], "2-D array"),
        (np.array([[1, -2]]), [], "--votes must be vote counts >= 0"),
        (np.array([[1.0, np.nan]]), [], "--votes must contain only finite values"),
        (np.array([[1, 2]]), ["--gamma", "0"], "--gamma must be a finite number > 0"),
        (np.array([[1, 2]]), ["--delta", "2"], "--delta must be a number in (0, 1)"),
        (np.array([[1, 2]]), ["--max-order", "0"], "--max-order must be an int >= 1"),
        (np.array([[1, 2]]), ["--queries", "-1"], "--queries must be >= 0"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    content: np.ndarray | None,
    extra: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    path = tmp_path / "votes.npy"
    if content is not None:
        np.save(path, content)
    options = {"--gamma": "0.05", "--delta": "1e-5"}
    options.update(dict(zip(extra[::2], extra[1::2], strict=True)))
    args = ["pate-epsilon", "--votes", str(path)]
    for key, value in options.items():
        args += [key, value]
    assert tools_main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_needs_votes_or_queries(capsys: pytest.CaptureFixture) -> None:
    assert tools_main(["pate-epsilon", "--gamma", "0.05", "--delta", "1e-5"]) == 2
    assert "--votes FILE.npy or --queries N" in capsys.readouterr().err
