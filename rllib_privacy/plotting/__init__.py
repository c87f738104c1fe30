"""Paper-style learning curves from Ray Tune result folders (``rllib-privacy plot``).

Reads the folders that ``rllib train -f`` (Ray Tune 2.60) writes: an experiment folder holds
one folder per trial with ``params.json`` (the trial's resolved config, nested as in the
experiment file), ``result.json`` (one JSON result per line, nested dicts) and
``progress.csv`` (the same results flattened with ``/``). Trials are grouped by one config
key, or (by default) by their whole config apart from the seed; within a group the trials
(seeds) are aggregated point-wise into a median and a percentile band, the way Gohari et
al. (kickstarting with the Dirichlet mechanism) report "the median and the 85th percentile
over 30 seeds". We read that as a central band from the 15th to the 85th percentile
(``band=85``; ``band=p`` gives ``[100 - p, p]``).

Curves of different trials are put on a common x grid by linear interpolation within each
trial's own x range; nothing is extrapolated, so the aggregate at an x uses only the trials
that reached it (``GroupCurve.counts``).

Why ``result.json`` and not ``progress.csv``: Tune fixes the CSV header at a trial's first
result and silently drops keys that appear later (e.g. ``env_runners/episode_return_mean``
when no episode finished in the first iteration), and after a resume it appends rows
written with the header of the first new result without writing a new header. The CSV is
only read when a trial has no ``result.json`` results.

The modules: [rllib_privacy.plotting.results][] reads the folders,
[rllib_privacy.plotting.curves][] groups and aggregates the trials, and
[rllib_privacy.plotting.figure][] draws and tabulates the curves.

No Ray import: reading and plotting work without a Ray installation.
"""

from rllib_privacy.plotting.curves import (
    DEFAULT_BAND,
    DEFAULT_METRIC,
    DEFAULT_POINTS,
    DEFAULT_X_KEYS,
    SAME_CONFIG,
    SEED_KEYS,
    GroupCurve,
    aggregate_curves,
    format_value,
    group_name,
    group_trials,
    trial_curve,
)
from rllib_privacy.plotting.figure import (
    AXIS_NAMES,
    axis_label,
    build_figure,
    describe_drawing,
    format_table,
    plot_learning_curves,
    x_axis_label,
)
from rllib_privacy.plotting.results import (
    PlotWarning,
    TrialResults,
    config_value,
    find_trial_dirs,
    flatten,
    load_trials,
)

__all__ = [
    "AXIS_NAMES",
    "DEFAULT_BAND",
    "DEFAULT_METRIC",
    "DEFAULT_POINTS",
    "DEFAULT_X_KEYS",
    "GroupCurve",
    "PlotWarning",
    "SAME_CONFIG",
    "SEED_KEYS",
    "TrialResults",
    "aggregate_curves",
    "axis_label",
    "build_figure",
    "config_value",
    "describe_drawing",
    "find_trial_dirs",
    "flatten",
    "format_table",
    "format_value",
    "group_name",
    "group_trials",
    "load_trials",
    "plot_learning_curves",
    "trial_curve",
    "x_axis_label",
]
