from types import SimpleNamespace

import pytest

from rllib_privacy.utils.progress import progress_line


def test_progress_line_shows_score_epsilon_rate_and_evaluation() -> None:
    result = {
        "training_iteration": 3,
        "ldp": {
            "submissions": 32768.0,
            "score_mean": 172.44,
            "epsilon_per_agent": 5.0,
            "submissions_per_second": 2950.4,
            "eval_return_mean": 199.06,
        },
    }
    line = progress_line("LDPA3C_00000", result)
    assert line == (
        "[LDPA3C_00000] iter 3 | submissions 32,768 | score(100) 172.4 | eps/agent 5 | "
        "2,950 subm/s | eval 199.1"
    )


def test_progress_line_adds_solved_at_and_skips_missing_values() -> None:
    line = progress_line(
        "t", {"training_iteration": 9, "ldp": {"submissions": 5, "solved_at": 40000.0}}
    )
    assert line == "[t] iter 9 | submissions 5 | solved at 40,000"


def test_solved_line_shows_the_window_that_solved_and_its_mean() -> None:
    """The criterion's own value, beside the current window mean (they may differ)."""
    public = {
        "training_iteration": 43,
        "ldp": {
            "submissions": 352256,
            "score_mean": 185.2,
            "score_window": 100,
            "solved_at": 284930,
            "solved_score": 195.31,
        },
    }
    assert progress_line("t", public) == (
        "[t] iter 43 | submissions 352,256 | score(100) 185.2 | solved at 284,930: score(100) 195.3"
    )
    private = {
        "training_iteration": 24,
        "ldp": {
            "submissions": 196608,
            "score_mean": 196.44,
            "score_window": 65536,
            "solved_at": 196608,
            "solved_score": 196.44,
        },
    }
    assert progress_line("t", private) == (
        "[t] iter 24 | submissions 196,608 | score(65,536) 196.4 | "
        "solved at 196,608: score(65,536) 196.4"
    )


def test_progress_line_is_none_for_other_algorithms() -> None:
    assert progress_line("t", {"training_iteration": 1, "env_runners": {}}) is None
    assert progress_line("t", {"ldp": {"submissions": "x"}}) is None


def _summary_of(ldp: dict, capsys: pytest.CaptureFixture) -> str:
    from rllib_privacy.cli import summary

    metrics = {
        "training_iteration": 43,
        "env_runners": {"episode_return_mean": ldp["score_mean"]},
        "ldp": ldp,
        "done": True,
    }
    result = SimpleNamespace(metrics=metrics, error=None, path="/r/exp/trial_0", checkpoint=None)
    exp = SimpleNamespace(name="exp", path="/r/exp")
    assert summary.print_summary(summary.Outcome(exp, grid=[result])) is False
    return capsys.readouterr().out


def test_summary_shows_the_window_that_solved_and_says_the_scores_were_public(
    capsys: pytest.CaptureFixture,
) -> None:
    out = _summary_of(
        {
            "score_mean": 185.2,
            "score_window": 100,
            "solved_at": 284930,
            "solved_score": 195.31,
            "score_private": 0.0,
        },
        capsys,
    )
    for shown in (
        "env_runners/episode_return_mean=185.2",
        "ldp/solved_at=284930",
        "ldp/solved_score=195.3",
        "ldp/score_window=100",
        "scores: PUBLIC (the paper's setting: sent in the clear, not counted in ε)",
        "mean of the last 100 scores at the end",
    ):
        assert shown in out, shown


def test_summary_says_private_scores_are_counted_in_epsilon(
    capsys: pytest.CaptureFixture,
) -> None:
    out = _summary_of(
        {
            "score_mean": 196.4,
            "score_window": 65536,
            "solved_at": 196608,
            "solved_score": 196.4,
            "score_private": 1.0,
        },
        capsys,
    )
    assert "ldp/solved_score=196.4" in out and "ldp/score_window=65536" in out
    assert "scores: private (one bit per submission, debiased; counted in ε per agent)" in out
    assert "mean of the last 65,536 scores" in out
