"""Drawing the aggregated curves (matplotlib) and printing them as a table."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.plotting.curves import DEFAULT_BAND, GroupCurve

#: Axis names of well-known result keys (the key itself is shown beside the name).
AXIS_NAMES = {
    "timesteps_total": "env steps",
    "num_env_steps_sampled_lifetime": "env steps",
    "env_runners/num_env_steps_sampled_lifetime": "env steps",
    "training_iteration": "training iterations",
    "time_total_s": "time (s)",
    "submissions": "submissions",
    "ldp/submissions": "submissions",
    "env_runners/episode_return_mean": "episode return",
    "evaluation/env_runners/episode_return_mean": "evaluation episode return",
    "episode_return_mean": "episode return",
    "score_mean": "score (episode length)",
    "ldp/score_moving_mean": "score, moving mean",
    "ldp/eval_return_mean": "greedy evaluation return",
    "privacy/epsilon_spent": "ε spent",
    "teacher_epsilon_spent": "teacher ε spent",
    "exploration/extrinsic_return_mean": "return without bonus",
    "ilm/kl_ratio": "KL ratio to uniform Laplace",
    "kl_ratio": "KL ratio to uniform Laplace",
}


def axis_label(keys: Sequence[str]) -> str:
    """``env steps (timesteps_total)``: a readable name and the result key(s) it comes from."""
    keys = list(dict.fromkeys(keys))
    joined = " / ".join(keys)
    names = {AXIS_NAMES.get(k) for k in keys}
    if len(names) == 1 and None not in names:
        return f"{names.pop()} ({joined})"
    return joined


def x_axis_label(curves: Sequence[GroupCurve]) -> str:
    """The x-axis label: e.g. ``env steps (timesteps_total)``, ``training iterations (...)``."""
    return axis_label([k for c in curves for k in c.x_keys])


def build_figure(
    curves: Sequence[GroupCurve], *, metric: str | None = None, title: str | None = None
) -> Any:
    """The learning-curve figure (a matplotlib ``Figure`` on an Agg canvas, no pyplot).

    One median line per curve, with a shaded band only where at least two of its trials
    (seeds) share an x; a group whose trials each reported one point is drawn as those
    points (markers, no line: joining different trials' points would draw a curve that no
    trial followed). The x-axis names the x key (env steps, training iterations,
    submissions, ...), the y-axis the metric and its key, the legend the groups and their
    numbers of seeds, and the default title what was drawn (see ``describe_drawing``).

    Raises:
        PrivacyConfigError: No curves.

    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not curves:
        raise PrivacyConfigError("nothing to plot: no group has a trial with data")
    figure = Figure(figsize=(7.5, 4.8), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for curve in curves:
        if curve.one_point_per_trial:
            axes.plot(
                curve.final_x,
                curve.final_values,
                linestyle="none",
                marker="o",
                label=f"{curve.label}, one point each",
            )
            continue
        (line,) = axes.plot(curve.x, curve.median, label=curve.label, linewidth=1.6)
        if curve.has_band:
            axes.fill_between(
                curve.x,
                curve.lower,
                curve.upper,
                where=curve.counts >= 2,
                color=line.get_color(),
                alpha=0.25,
                linewidth=0,
            )
    metric = metric or curves[0].metric
    axes.set_xlabel(x_axis_label(curves))
    axes.set_ylabel(axis_label([metric]))
    axes.set_title(title if title is not None else f"{metric}: {describe_drawing(curves)}")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    return figure


def describe_drawing(curves: Sequence[GroupCurve]) -> str:
    """What the figure shows, for its default title: medians, bands, single points.

    E.g. ``median and 15th–85th percentile band over seeds``, ``one point per trial (one
    result each)``, or ``one trial per curve (no band)``; a band drawn only where at least
    two seeds share an x says so.
    """
    band = curves[0].band if curves else DEFAULT_BAND
    lines = [c for c in curves if not c.one_point_per_trial]
    parts = []
    if lines:
        if any(c.has_band for c in lines):
            partial = any(np.any(c.counts < 2) for c in lines)
            parts.append(
                f"median and {100 - band:g}th–{band:g}th percentile band over seeds"
                + (" (band where ≥ 2 seeds share an x)" if partial else "")
            )
        elif all(c.num_trials == 1 for c in lines):
            parts.append("one trial per curve (no band)")
        else:
            parts.append("median of the trials reaching each x (no two share an x: no band)")
    if len(lines) < len(curves):
        parts.append("one point per trial (one result each)")
    return "; ".join(parts)


def plot_learning_curves(
    curves: Sequence[GroupCurve],
    output: str | os.PathLike,
    *,
    metric: str | None = None,
    title: str | None = None,
) -> Path:
    """Draw the curves (median line, shaded band) into an image file.

    Uses matplotlib's Agg canvas directly (no pyplot, no global backend change), so it
    works headless and inside notebooks alike. The format follows the file suffix (PNG
    for ``.png``); missing parent folders are created. See ``build_figure``.

    Args:
        curves: Curves from ``aggregate_curves``.
        output: The image file.
        metric: The y-axis label; default: the curves' metric.
        title: The title; default: the metric and what was drawn (``describe_drawing``).

    Returns:
        The written file.

    Raises:
        PrivacyConfigError: No curves, matplotlib cannot write the suffix's format, or the
            file cannot be written.

    """
    if not curves:
        raise PrivacyConfigError("nothing to plot: no group has a trial with data")
    path = Path(output).expanduser()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    supported = FigureCanvasAgg(Figure()).get_supported_filetypes()
    if path.suffix.lstrip(".").lower() not in supported:
        raise PrivacyConfigError(
            f"--output: unsupported image type {path.suffix or '(none)'!r}; use .png "
            f"(or {', '.join('.' + s for s in sorted(supported))})"
        )
    figure = build_figure(curves, metric=metric, title=title)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path)
    except OSError as e:
        raise PrivacyConfigError(
            f"--output: cannot write {str(output)!r}: {e.strerror or e}"
        ) from None
    return path


def format_table(curves: Sequence[GroupCurve]) -> str:
    """A text table: group, seeds, median final x, and final median and band of the metric.

    "final" is each trial's last reported value; the median and band are taken over
    trials, so trials that stopped early (e.g. at a target score) count with the value
    they stopped at.
    """
    band = curves[0].band if curves else DEFAULT_BAND
    header = ("group", "seeds", "final x (median)", "final median", f"band {100 - band:g}–{band:g}")
    rows = []
    for curve in curves:
        median, low, high = curve.final_summary()
        rows.append(
            (
                curve.name,
                str(curve.num_trials),
                f"{np.median(curve.final_x):.6g}",
                f"{median:.4g}",
                f"[{low:.4g}, {high:.4g}]",
            )
        )
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in (header, *rows)
    )
