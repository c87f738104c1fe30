"""Grouping trials and aggregating their curves point-wise over seeds (median and band)."""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.experiments.translate import translate_metric_key
from rllib_privacy.plotting.results import (
    _PARAMS_FILE,
    _RESULT_FILE,
    PlotWarning,
    TrialResults,
    _key_candidates,
    _number,
    config_value,
    flatten,
)

#: The metric plotted by default.
DEFAULT_METRIC = "env_runners/episode_return_mean"


#: Env-step keys tried in this order (per trial) when no x key is given.
DEFAULT_X_KEYS = (
    "timesteps_total",
    "num_env_steps_sampled_lifetime",
    "env_runners/num_env_steps_sampled_lifetime",
)


#: Default upper percentile of the band (the band is [100 - band, band]).
DEFAULT_BAND = 85.0


#: Default largest number of x grid points per curve.
DEFAULT_POINTS = 500


#: Config keys that are expected to differ between the seeds of one group.
SEED_KEYS = frozenset({"seed"})


#: ``group_by`` value meaning: group trials whose configs are equal apart from the seed.
SAME_CONFIG = ""


@dataclasses.dataclass(frozen=True, eq=False)  # numpy fields: compare by identity
class GroupCurve:
    """The aggregated learning curve of the trials sharing one value of the grouping key.

    Attributes:
        group_by: The grouping key (``/`` for nested keys).
        metric: The result key on the y-axis.
        value: The key's value in these trials' configs.
        x: The common x grid (increasing).
        median: Point-wise median over the trials that reached each x.
        lower: Point-wise ``100 - band`` percentile.
        upper: Point-wise ``band`` percentile.
        counts: Number of trials that reached each x (were interpolated, not
            extrapolated, there).
        band: The band's upper percentile.
        final_x: Each trial's last x.
        final_values: Each trial's last metric value.
        x_keys: The result key(s) the trials' x values came from.
        trials: The trial folders in the curve.
        skipped: Trial folders of this group left out because they lack the metric or x.
        points_per_trial: Each trial's number of (x, metric) points.

    """

    group_by: str
    metric: str
    value: Any
    x: np.ndarray
    median: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    counts: np.ndarray
    band: float
    final_x: np.ndarray
    final_values: np.ndarray
    x_keys: tuple[str, ...]
    trials: tuple[Path, ...]
    skipped: tuple[Path, ...] = ()
    points_per_trial: tuple[int, ...] = ()

    @property
    def one_point_per_trial(self) -> bool:
        """Whether every trial reported a single point (e.g. a one-iteration sweep).

        Such a group has no curve: its "median" would join different trials' points.
        """
        return bool(self.points_per_trial) and max(self.points_per_trial) == 1

    @property
    def has_band(self) -> bool:
        """Whether at least two trials share some x, so that a band says something."""
        return bool(np.any(self.counts >= 2)) and not self.one_point_per_trial

    @property
    def num_trials(self) -> int:
        """Number of trials (seeds) in the curve."""
        return len(self.trials)

    @property
    def name(self) -> str:
        """The group's name, see ``group_name``."""
        return group_name(self.group_by, self.value)

    @property
    def label(self) -> str:
        """The legend entry: ``KEY=value (n seeds)``."""
        seeds = "seed" if self.num_trials == 1 else "seeds"
        return f"{self.name} ({self.num_trials} {seeds})"

    def final_summary(self) -> tuple[float, float, float]:
        """Median and ``[100 - band, band]`` percentiles of the trials' final values."""
        low, high = np.percentile(self.final_values, [100.0 - self.band, self.band])
        return float(np.median(self.final_values)), float(low), float(high)


def format_value(value: Any) -> str:
    """A short label for a config value (``0.5``, ``inf``, ``[9.7, 9.9]``, ``laplace``)."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return json.dumps(value, sort_keys=True, default=str)


def group_name(group_by: str, value: Any) -> str:
    """``KEY=value``; for ``SAME_CONFIG``, the keys that set the group apart.

    E.g. ``lr=0.001, mechanism=laplace``, or ``all trials`` when there is one group.
    """
    if group_by == SAME_CONFIG:
        items = value.items() if isinstance(value, Mapping) else ()
        return ", ".join(f"{k}={format_value(v)}" for k, v in items) or "all trials"
    return f"{group_by}={format_value(value)}"


def _group_sort_key(value: Any) -> tuple[int, float, str]:
    number = _number(value) if not isinstance(value, bool) else None
    if number is not None:
        return (0, number, "")
    return (1, 0.0, json.dumps(value, sort_keys=True, default=str))


def group_trials(
    trials: Iterable[TrialResults], group_by: str = SAME_CONFIG
) -> list[tuple[Any, list[TrialResults]]]:
    """Group trials by the value of one config key, numbers in increasing order first.

    With ``group_by`` ``SAME_CONFIG`` (``""``), trials whose configs are equal apart
    from ``SEED_KEYS`` form a group (the seeds, or Tune samples, of one setting); each
    group's value is then the mapping of the flattened config keys in which the groups
    differ (empty when there is one group).

    Raises:
        PrivacyConfigError: A trial has no config, or its config lacks ``group_by`` (the
            message names the trial and suggests a close key).

    """
    trials = list(trials)
    if group_by == SAME_CONFIG:
        return _group_by_config(trials)
    groups: dict[str, tuple[Any, list[TrialResults]]] = {}
    for trial in trials:
        if trial.config is None:
            raise PrivacyConfigError(
                f"--group-by: trial {str(trial.path)!r} has no {_PARAMS_FILE} and no config "
                f"in its {_RESULT_FILE}"
            )
        try:
            value = config_value(trial.config, group_by)
        except KeyError:
            raise PrivacyConfigError(
                f"--group-by: config key {group_by!r} is not in the config of trial "
                f"{str(trial.path)!r}{_suggest(group_by, sorted(flatten(trial.config)))}"
            ) from None
        identity = json.dumps(value, sort_keys=True, default=str)
        groups.setdefault(identity, (value, []))[1].append(trial)
    return sorted(groups.values(), key=lambda group: _group_sort_key(group[0]))


def _group_by_config(trials: Sequence[TrialResults]) -> list[tuple[Any, list[TrialResults]]]:
    """Group trials equal apart from the seed; value: the keys in which groups differ."""
    groups: dict[str, tuple[dict[str, Any], list[TrialResults]]] = {}
    for trial in trials:
        config = {
            k: v
            for k, v in flatten(trial.config or {}).items()
            if k.split("/")[-1] not in SEED_KEYS
        }
        identity = json.dumps(config, sort_keys=True, default=str)
        groups.setdefault(identity, (config, []))[1].append(trial)
    configs = [config for config, _ in groups.values()]
    missing = object()
    differing = sorted(
        key
        for key in set().union(*configs)
        if len({json.dumps(c.get(key, missing), sort_keys=True, default=str) for c in configs}) > 1
    )
    result = [
        ({k: config.get(k) for k in differing}, members) for config, members in groups.values()
    ]
    return sorted(result, key=lambda g: [_group_sort_key(v) for v in g[0].values()])


def _suggest(key: str, available: Iterable[str], shown: int = 8) -> str:
    """``; did you mean 'x'?; available keys include: a, b, ...`` for an error message."""
    names = list(dict.fromkeys(str(k) for k in available))
    text = did_you_mean(key, names)
    if names:
        more = ", ..." if len(names) > shown else ""
        text += f"; available keys include: {', '.join(names[:shown])}{more}"
    return text


def _differing_keys(trials: Sequence[TrialResults], group_by: str) -> list[str]:
    """Config keys (other than the grouping key and seeds) that differ within a group."""
    flat = [flatten(t.config or {}) for t in trials]
    ignored = set(_key_candidates(group_by)) | SEED_KEYS
    keys = sorted(set().union(*flat) - ignored)
    missing = object()
    return [
        k
        for k in keys
        if not k.startswith(tuple(f"{g}/" for g in ignored))
        and len({json.dumps(f.get(k, missing), sort_keys=True, default=str) for f in flat}) > 1
    ]


def trial_curve(
    trial: TrialResults, metric: str, x_keys: Sequence[str] = DEFAULT_X_KEYS
) -> tuple[np.ndarray, np.ndarray, str] | None:
    """One trial's (x, metric) points, x increasing.

    The first key of ``x_keys`` with a number in any row is used. Rows without a number
    (missing, NaN) for x or the metric are dropped. Where several rows share an x (e.g.
    iterations that sampled nothing), the last one counts.

    Args:
        trial: The trial.
        metric: The result key of the y values (``/`` for nested keys).
        x_keys: Candidate result keys of the x values.

    Returns:
        ``(x, y, x_key)``, or None when the trial has no point with both values.

    Raises:
        PrivacyConfigError: x decreases from one iteration to the next.

    """
    x_key = next(
        (k for k in x_keys if any(_number(row.get(k)) is not None for row in trial.rows)), None
    )
    if x_key is None:
        return None
    pairs = [(_number(row.get(x_key)), _number(row.get(metric))) for row in trial.rows]
    pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
    if not pairs:
        return None
    xs = np.array([x for x, _ in pairs])
    ys = np.array([y for _, y in pairs])
    if np.any(np.diff(xs) < 0):
        raise PrivacyConfigError(
            f"--x: {x_key!r} decreases between iterations of trial {str(trial.path)!r}; "
            "the x key must not decrease (e.g. env steps, training_iteration, time_total_s)"
        )
    last_of_each_x = np.append(np.diff(xs) > 0, True)
    return xs[last_of_each_x], ys[last_of_each_x], x_key


def aggregate_curves(
    trials: Sequence[TrialResults],
    *,
    group_by: str = SAME_CONFIG,
    metric: str = DEFAULT_METRIC,
    x: str | None = None,
    band: float = DEFAULT_BAND,
    points: int = DEFAULT_POINTS,
    min_seeds: int = 1,
) -> list[GroupCurve]:
    """Aggregate the trials of each value of ``group_by`` into a median curve and a band.

    Each trial's curve is linearly interpolated onto the group's x grid within the
    trial's own x range (no extrapolation); at every grid point the median and the
    ``100 - band`` and ``band`` percentiles (numpy's linear method) are taken over the
    trials that reached it. The grid is the union of the trials' x values, or ``points``
    evenly spaced values over their range when the union is larger. Points reached by
    fewer than ``min_seeds`` trials are left out.

    Trials without a value for the metric or x are skipped with a ``PlotWarning``;
    so is a group where this leaves no trial. A group whose trials also differ in config
    keys other than ``group_by`` and ``seed`` gets a warning: they are pooled as seeds.

    Args:
        trials: Trials, e.g. from ``load_trials``.
        group_by: The config key (``/`` for nested keys) whose values make the curves;
            ``SAME_CONFIG`` (the default): one curve per config, seeds pooled.
        metric: The result key plotted (``/`` for nested keys).
        x: The result key of the x-axis; default: env steps, the first of
            ``DEFAULT_X_KEYS`` each trial reports.
        band: Upper percentile of the band, in [50, 100].
        points: Largest number of grid points per curve (>= 2).
        min_seeds: Fewest trials a grid point needs (>= 1).

    Returns:
        One curve per value of ``group_by``, numeric values in increasing order first.

    Raises:
        PrivacyConfigError: Bad arguments, no trials, ``group_by`` missing from a trial's
            config, or no trial reports the metric (or x).

    """
    _check_aggregate_arguments(band=band, points=points, min_seeds=min_seeds)
    if not trials:
        raise PrivacyConfigError("RESULTS_DIR: no trials to plot")
    x_keys = (x,) if x else DEFAULT_X_KEYS
    grouped = group_trials(trials, group_by)
    metric = _resolve_metric(trials, metric)
    curves_by_trial = {t.path: trial_curve(t, metric, x_keys) for t in trials}
    if all(c is None for c in curves_by_trial.values()):
        _raise_missing(trials, metric, x_keys)
    curves = []
    for value, members in grouped:
        fields = _group_fields(
            group_by, value, members, curves_by_trial, metric,
            band=band, points=points, min_seeds=min_seeds,
        )  # fmt: skip
        if fields is not None:
            curves.append(fields)
    result = [GroupCurve(**fields) for fields in curves]
    single = [c.name for c in result if c.one_point_per_trial]
    if single:
        warnings.warn(
            f"every trial of {', '.join(single)} reported one result: drawn as points, not "
            "curves, with no median or band; run more training iterations for learning curves",
            PlotWarning,
            stacklevel=2,
        )
    return result


def _group_fields(
    group_by: str,
    value: Any,
    members: Sequence[TrialResults],
    curves_by_trial: Mapping[Path, Any],
    metric: str,
    *,
    band: float,
    points: int,
    min_seeds: int,
) -> dict[str, Any] | None:
    """The ``GroupCurve`` fields of one group, or None when none of its trials has data.

    Warns (``PlotWarning``, attributed to the caller of ``aggregate_curves``) about left
    out trials, trials that differ in other keys, and an empty curve.
    """
    label = group_name(group_by, value)
    used = [t for t in members if curves_by_trial[t.path] is not None]
    skipped = tuple(t.path for t in members if curves_by_trial[t.path] is None)
    if skipped:
        warnings.warn(
            f"{label}: {len(skipped)} trial(s) without {metric!r} or an x value left "
            f"out: {', '.join(p.name for p in skipped)}",
            PlotWarning,
            stacklevel=3,
        )
    if not used:
        return None
    differing = _differing_keys(used, group_by)
    if differing:
        warnings.warn(
            f"{label}: its trials also differ in {', '.join(differing[:5])}"
            f"{', ...' if len(differing) > 5 else ''}; they are pooled as seeds",
            PlotWarning,
            stacklevel=3,
        )
    per_trial = [curves_by_trial[t.path] for t in used]
    fields = _aggregate_group(
        group_by, value, used, per_trial, band=band, points=points, min_seeds=min_seeds
    )
    if not fields["x"].size:
        warnings.warn(
            f"{label}: no x was reached by {min_seeds} trials (--min-seeds); its curve is empty",
            PlotWarning,
            stacklevel=3,
        )
    return fields | {"metric": metric, "skipped": skipped}


def _check_aggregate_arguments(*, band: float, points: int, min_seeds: int) -> None:
    if not (isinstance(band, int | float) and 50.0 <= band <= 100.0):
        raise PrivacyConfigError(
            f"--band: must be a percentile in [50, 100] (the band is [100 - band, band]), "
            f"got {band!r}"
        )
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise PrivacyConfigError(f"--points: must be an integer >= 2, got {points!r}")
    if isinstance(min_seeds, bool) or not isinstance(min_seeds, int) or min_seeds < 1:
        raise PrivacyConfigError(f"--min-seeds: must be an integer >= 1, got {min_seeds!r}")


def _numeric_keys(trials: Sequence[TrialResults]) -> set[str]:
    return {k for t in trials for row in t.rows for k, v in row.items() if _number(v) is not None}


def _resolve_metric(trials: Sequence[TrialResults], metric: str) -> str:
    """Use the new API stack name of an old one (``episode_reward_mean``) if only it exists."""
    new = translate_metric_key(metric)
    if new != metric and new in (numeric := _numeric_keys(trials)) and metric not in numeric:
        warnings.warn(
            f"--metric: {metric!r} is an old API stack key; plotting {new!r}",
            PlotWarning,
            stacklevel=3,
        )
        return new
    return metric


def _raise_missing(trials: Sequence[TrialResults], metric: str, x_keys: Sequence[str]) -> None:
    numeric = _numeric_keys(trials)
    if not any(t.rows for t in trials):
        raise PrivacyConfigError(
            f"RESULTS_DIR: none of the {len(trials)} trial(s) has reported a result yet"
        )
    if metric not in numeric:
        raise PrivacyConfigError(
            f"--metric: {metric!r} is in no trial's results"
            f"{_suggest(metric, _preferred(numeric, metric))}"
        )
    if not numeric.intersection(x_keys):
        names = " or ".join(repr(k) for k in x_keys)
        raise PrivacyConfigError(
            f"--x: no trial's results have {names}"
            f"{_suggest(x_keys[0], _preferred(numeric, x_keys[0]))}"
        )
    raise PrivacyConfigError(
        f"--metric: no trial reports {metric!r} and {' or '.join(x_keys)} in the same result"
    )


def _preferred(keys: set[str], metric: str) -> list[str]:
    """Metric-like keys first: those sharing the metric's last part, then the rest."""
    tail = metric.rsplit("/", 1)[-1]
    return sorted(keys, key=lambda k: (tail not in k, k))


def _aggregate_group(
    group_by: str,
    value: Any,
    trials: Sequence[TrialResults],
    per_trial: Sequence[tuple[np.ndarray, np.ndarray, str]],
    *,
    band: float,
    points: int,
    min_seeds: int,
) -> dict[str, Any]:
    grid = np.unique(np.concatenate([xs for xs, _, _ in per_trial]))
    if grid.size > points:
        grid = np.linspace(grid[0], grid[-1], points)
    # One row per trial; NaN where the trial has not reached (or started) that x.
    values = np.full((len(per_trial), grid.size), np.nan)
    for row, (xs, ys, _) in enumerate(per_trial):
        inside = (grid >= xs[0]) & (grid <= xs[-1])
        values[row, inside] = np.interp(grid[inside], xs, ys)
    counts = np.sum(~np.isnan(values), axis=0)
    keep = counts >= min_seeds
    grid, values, counts = grid[keep], values[:, keep], counts[keep]
    if grid.size:
        median = np.nanmedian(values, axis=0)
        lower, upper = np.nanpercentile(values, [100.0 - band, band], axis=0)
    else:
        median = lower = upper = np.empty(0)
    return {
        "group_by": group_by,
        "value": value,
        "x": grid,
        "median": median,
        "lower": lower,
        "upper": upper,
        "counts": counts,
        "band": float(band),
        "final_x": np.array([xs[-1] for xs, _, _ in per_trial]),
        "final_values": np.array([ys[-1] for _, ys, _ in per_trial]),
        "x_keys": tuple(dict.fromkeys(key for _, _, key in per_trial)),
        "trials": tuple(t.path for t in trials),
        "points_per_trial": tuple(len(xs) for xs, _, _ in per_trial),
    }
