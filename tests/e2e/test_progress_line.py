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


def test_progress_line_is_none_for_other_algorithms() -> None:
    assert progress_line("t", {"training_iteration": 1, "env_runners": {}}) is None
    assert progress_line("t", {"ldp": {"submissions": "x"}}) is None
