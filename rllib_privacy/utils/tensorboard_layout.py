"""A TensorBoard custom-scalars layout for every trial: the privacy figures first.

Tune writes every number of a result as a ``ray/tune/<key>`` scalar, and TensorBoard's
time-series page opens on dozens of RLlib cards; the ε spent, the releases, the solved
marker and the evaluation return are found only by filtering. The Tune callback
[privacy_layout_callback][rllib_privacy.utils.tensorboard_layout.privacy_layout_callback]
(``rllib train`` attaches it) writes, into each trial's own TensorBoard folder, a
[custom-scalars layout](https://github.com/tensorflow/tensorboard/tree/master/tensorboard/plugins/custom_scalar)
(TensorBoard's "Custom scalars" tab, ``#custom_scalars``):

1. ``privacy``: ε spent against the run's ε budget on one chart (the budget is written by the
   callback as the scalar ``privacy/epsilon_budget``, read from the trial's config), the
   releases, the solved marker and solve point of LDPA3C, the evaluation and training
   return, then the other ``privacy/...`` figures (δ, shuffled ε, replayed releases);
2. one category per component the trial reports (``ldp``, ``kickstart``, ``pate``,
   ``exploration``, ``ilm``: the key prefixes of [rllib_privacy.utils.metrics][]), a chart
   per key.

The layout is built from the trial's first result, so a category appears only for a
component the trial runs; keys that appear only later (``ldp/solved_at`` once solved) get
their chart from the start.
"""

from __future__ import annotations

import logging
import math
import numbers
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rllib_privacy.utils import metrics as keys

logger = logging.getLogger(__name__)

#: Prefix Tune's TensorBoard logger gives every result key.
TUNE_TAG_PREFIX = "ray/tune/"
#: The scalar this callback writes: the trial's ε budget, beside ``privacy/epsilon_spent``.
EPSILON_BUDGET_TAG = "privacy/epsilon_budget"
#: The layout's first category.
PRIVACY_CATEGORY = "privacy"
#: Key prefixes of the components, in the order of their categories after ``privacy``.
COMPONENTS = ("ldp", "kickstart", "pate", "exploration", "ilm")
#: Keys a component reports only once something happened: charted from the first result on.
LATER_KEYS = (keys.LDP_SOLVED_AT, keys.LDP_FST, keys.KICKSTART_TEACHER_STOPPED_AT)
#: Config attributes holding a run's ε budget, the first one a config has wins: LDP-PPO's
#: learner budget, the kickstart teacher's, PATE's, and LDPA3C's per-agent ε (each local
#: agent spends at most ``privacy_epsilon``).
BUDGET_ATTRIBUTES = (
    "privacy_epsilon_budget",
    "teacher_epsilon_budget",
    "pate_epsilon_budget",
    "privacy_epsilon",
)
#: Result keys Tune's TensorBoard logger leaves out.
_NOT_LOGGED = ("config", "pid", "timestamp", "time_total_s", "training_iteration")
_EVAL_RETURNS = (
    keys.LDP_EVAL_RETURN_MEAN,
    "evaluation/env_runners/episode_return_mean",
    "env_runners/episode_return_mean",
)

#: A layout: category title -> chart title -> tags (regular expressions, as TensorBoard's
#: multiline chart reads them).
Layout = dict[str, dict[str, list[str]]]


def scalar_keys(result: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """The ``/``-joined keys of the numbers in a (nested) result, as Tune's logger names them.

    Args:
        result: A Tune result dict.
        prefix: Prepended to every key (used by the recursion).

    Yields:
        ``privacy/epsilon_spent``, ``env_runners/episode_return_mean``, ... in result order.
    """
    for name, value in result.items():
        if not prefix and name in _NOT_LOGGED:
            continue
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            yield from scalar_keys(value, prefix=f"{key}/")
        elif isinstance(value, numbers.Real):
            yield key


def _tag(key: str, *, ours: bool = False) -> str:
    """The exact-match pattern of a result key's scalar (of ours: no ``ray/tune/`` prefix)."""
    return f"^{re.escape(key if ours else TUNE_TAG_PREFIX + key)}$"


def _privacy_category(present: set[str]) -> dict[str, list[str]]:
    charts: dict[str, list[str]] = {}
    if keys.PRIVACY_EPSILON_SPENT in present:
        charts["ε spent and the ε budget"] = [
            _tag(keys.PRIVACY_EPSILON_SPENT),
            _tag(EPSILON_BUDGET_TAG, ours=True),
        ]
    if keys.PRIVACY_RELEASES in present:
        charts["releases"] = [_tag(keys.PRIVACY_RELEASES)]
    if keys.LDP_SOLVED in present:
        charts["solved (0/1): the score reached the target"] = [_tag(keys.LDP_SOLVED)]
        charts["solved at (submissions)"] = [_tag(keys.LDP_SOLVED_AT)]
    returns = [key for key in _EVAL_RETURNS if key in present]
    if returns:
        charts["return: evaluation and training"] = [_tag(key) for key in returns]
    headline = {keys.PRIVACY_EPSILON_SPENT, keys.PRIVACY_RELEASES}
    for key in sorted(present):
        if key.startswith("privacy/") and key not in headline:
            charts[key] = [_tag(key)]
    return charts


def _component_category(component: str, ordered: list[str]) -> dict[str, list[str]]:
    """A chart per key of ``component``, titled from the component on.

    A key the result holds at several depths (``ilm/kl_ratio`` and the EnvRunners'
    ``env_runners/ilm/kl_ratio``) is charted at the shallowest: the copy made for the table.
    """
    by_title: dict[str, list[str]] = {}
    for key in ordered:
        parts = key.split("/")
        if component in parts[:-1]:
            title = "/".join(parts[parts.index(component) :])
            by_title.setdefault(title, []).append(key)
    charts: dict[str, list[str]] = {}
    for title, found in by_title.items():
        depth = min(k.count("/") for k in found)
        charts[title] = [_tag(k) for k in found if k.count("/") == depth]
    return charts


def privacy_layout(result_keys: Iterable[str]) -> Layout:
    """The custom-scalars layout for a trial whose first result has ``result_keys``.

    Args:
        result_keys: The result's ``/``-joined scalar keys (see
            [scalar_keys][rllib_privacy.utils.tensorboard_layout.scalar_keys]).

    Returns:
        The ``privacy`` category first, then one category per component present; empty
        categories are left out.
    """
    ordered = list(dict.fromkeys(result_keys))
    present = set(ordered)
    components = [c for c in COMPONENTS if any(c in k.split("/")[:-1] for k in ordered)]
    ordered += [k for k in LATER_KEYS if k.split("/")[0] in components and k not in present]
    layout: Layout = {PRIVACY_CATEGORY: _privacy_category(present)}
    for component in components:
        layout[component] = _component_category(component, ordered)
    return {title: charts for title, charts in layout.items() if charts}


def epsilon_budget(config: Any) -> float | None:
    """The run's ε budget from its algorithm config, or None (none, or no limit).

    Args:
        config: An ``AlgorithmConfig`` (any object with the attributes of
            ``BUDGET_ATTRIBUTES``).

    Returns:
        The value of the first of ``BUDGET_ATTRIBUTES`` the config has, if finite and > 0;
        None for a config that says it is not private (LDPA3C's ``is_private``).
    """
    if getattr(config, "is_private", True) is False:
        return None
    for name in BUDGET_ATTRIBUTES:
        if hasattr(config, name):
            value = getattr(config, name)
            if isinstance(value, numbers.Real) and 0 < float(value) < math.inf:
                return float(value)
            return None
    return None


def _trial_epsilon_budget(trial: Any) -> float | None:
    """``epsilon_budget`` of a trial's algorithm config (None if it is not an RLlib one)."""
    from ray.tune.registry import get_trainable_cls

    try:
        algorithm = get_trainable_cls(trial.trainable_name)
        config = algorithm.get_default_config().update_from_dict(dict(trial.config))
    except Exception as e:  # noqa: BLE001 - a chart's second line is never worth a failed run
        logger.debug("no ε budget line for %s: %s", trial, e)
        return None
    return epsilon_budget(config)


def privacy_layout_callback() -> Any:
    """A ``ray.tune.Callback`` writing each trial's privacy-first custom-scalars layout.

    On a trial's first result it writes the layout of
    [privacy_layout][rllib_privacy.utils.tensorboard_layout.privacy_layout] into the
    trial's folder (the TensorBoard run of Tune's own scalars); on every result, if the
    config has a finite ε budget, the scalar ``privacy/epsilon_budget`` at Tune's step.

    Returns:
        The callback, for ``tune.RunConfig(callbacks=[...])``.
    """
    from ray import tune
    from torch.utils.tensorboard import SummaryWriter

    class PrivacyLayout(tune.Callback):
        """Writes the layout and the ε budget line (see ``privacy_layout_callback``)."""

        def __init__(self) -> None:
            self._writers: dict[str, tuple[SummaryWriter, float | None]] = {}

        def on_trial_result(
            self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
        ) -> None:
            """Writes the layout on the trial's first result, the budget on each."""
            if trial.trial_id not in self._writers:
                writer = SummaryWriter(log_dir=trial.local_path, flush_secs=30)
                layout = privacy_layout(scalar_keys(result))
                writer.add_custom_scalars(
                    {
                        category: {title: ["Multiline", tags] for title, tags in charts.items()}
                        for category, charts in layout.items()
                    }
                )
                self._writers[trial.trial_id] = (writer, _trial_epsilon_budget(trial))
            writer, budget = self._writers[trial.trial_id]
            if budget is not None:
                # Tune's TensorBoard logger's step, so that both lines share the x-axis.
                step = result.get("timesteps_total") or result["training_iteration"]
                writer.add_scalar(EPSILON_BUDGET_TAG, budget, global_step=step)
            writer.flush()

        def _close(self, trial: Any) -> None:
            entry = self._writers.pop(trial.trial_id, None)
            if entry is not None:
                entry[0].close()

        def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            """Closes the trial's event file."""
            self._close(trial)

        def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            """Closes the trial's event file."""
            self._close(trial)

        def on_experiment_end(self, trials: list, **info: Any) -> None:
            """Closes what is still open (trials stopped by an interrupt)."""
            for trial in trials:
                self._close(trial)

    return PrivacyLayout()
