"""One progress line per training iteration, printed by ``rllib train`` on the driver.

Tune's own table shows only a few columns and RLlib's workers' stdout is not forwarded by
default; this callback prints what an LDPA3C user watches (score, ε, submissions per second,
evaluation return) from the results the trial reports, on the driver.
"""

from __future__ import annotations

import math
from typing import Any


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def progress_line(trial_name: str, result: dict[str, Any]) -> str | None:
    """The progress line of one result, or None when the result has no LDPA3C metrics.

    Args:
        trial_name: Shown at the start of the line.
        result: A Tune result dict (nested, as the trainable reports it).

    ``score(n)`` is the mean score of the last n submissions (debiased when the scores are
    private). Once solved, the line ends with the window that solved and ITS mean (the
    criterion's value when it fired, ``ldp/solved_score``), which the current ``score(n)``
    need not equal: with public scores the window slides on after it fired.

    Returns:
        e.g. ``[LDPA3C_00000] iter 3 | submissions 32,768 | score(65,536) 172.4 | eps/agent 5
        | 2,950 subm/s | eval 199.1``, or ending ``| solved at 196,608: score(65,536) 196.4``.

    """
    ldp = result.get("ldp")
    if not isinstance(ldp, dict) or _number(ldp.get("submissions")) is None:
        return None
    parts = [f"iter {result.get('training_iteration', '?')}"]
    parts.append(f"submissions {int(ldp['submissions']):,}")
    # Results written before the window was configurable used 100.
    window = int(_number(ldp.get("score_window")) or 100)
    score = _number(ldp.get("score_mean"))
    if score is not None and not math.isnan(score):
        parts.append(f"score({window:,}) {score:.1f}")
    epsilon = _number(ldp.get("epsilon_per_agent"))
    if epsilon is not None:
        parts.append(f"eps/agent {epsilon:g}")
    rate = _number(ldp.get("submissions_per_second"))
    if rate is not None:
        parts.append(f"{rate:,.0f} subm/s")
    evaluation = _number(ldp.get("eval_return_mean"))
    if evaluation is not None:
        parts.append(f"eval {evaluation:.1f}")
    solved_at = _number(ldp.get("solved_at"))
    if solved_at is not None:
        solved_score = _number(ldp.get("solved_score"))
        criterion = "" if solved_score is None else f": score({window:,}) {solved_score:.1f}"
        parts.append(f"solved at {int(solved_at):,}{criterion}")
    return f"[{trial_name}] " + " | ".join(parts)


def progress_callback() -> Any:
    """A ``ray.tune.Callback`` that prints ``progress_line`` for every result."""
    from ray import tune

    class ProgressLines(tune.Callback):
        """Prints one line per LDPA3C trial result."""

        def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info):
            line = progress_line(str(trial), result)
            if line is not None:
                print(line, flush=True)

    return ProgressLines()
