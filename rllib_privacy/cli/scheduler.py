"""``rllib train --scheduler NAME --scheduler-config JSON``: checked before Ray starts."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from rllib_privacy.cli import preflight
from rllib_privacy.errors import PrivacyConfigError

#: Scheduler names accepted besides those of ``ray.tune.schedulers.SCHEDULER_IMPORT``.
SCHEDULER_ALIASES = {"asha": "async_hyperband", "median": "median_stopping_rule"}


@dataclasses.dataclass(frozen=True)
class SchedulerSpec:
    """A Tune scheduler checked before Ray starts, created once per experiment.

    Attributes:
        name: Its key in ``ray.tune.schedulers.SCHEDULER_IMPORT``.
        kwargs: Its keyword arguments (``--scheduler-config``).
    """

    name: str
    kwargs: dict[str, Any]

    def create(self) -> Any:
        """A new scheduler (a Tuner needs its own)."""
        from ray.tune.schedulers import create_scheduler

        return create_scheduler(self.name, **self.kwargs)


def json_option(text: str | None, option: str) -> dict[str, Any] | None:
    """The JSON object of a command-line option, or None if it was not given.

    Args:
        text: The option's value.
        option: Its name, for the error message.

    Returns:
        The parsed mapping, or None.
    """
    from rllib_privacy import experiments as exps

    return None if text is None else exps.parse_json_mapping(text, option)


def scheduler_spec(name: str | None, config_json: str | None) -> SchedulerSpec | None:
    """Check the scheduler name and its keyword arguments before Ray starts."""
    import inspect

    from ray._common.utils import get_function_args
    from ray.tune.schedulers import SCHEDULER_IMPORT

    from rllib_privacy import experiments as exps

    kwargs = json_option(config_json, "--scheduler-config") or {}
    if name is None:
        if kwargs:
            raise PrivacyConfigError("--scheduler-config needs --scheduler")
        return None
    key = SCHEDULER_ALIASES.get(name.lower(), name.lower())
    names = sorted(set(SCHEDULER_IMPORT) | set(SCHEDULER_ALIASES))
    if key not in SCHEDULER_IMPORT:
        raise PrivacyConfigError(
            f"--scheduler: unknown scheduler {name!r}{exps.did_you_mean(name, names)}; "
            f"known: {', '.join(names)}"
        )
    scheduler_cls = SCHEDULER_IMPORT[key]
    if inspect.isfunction(scheduler_cls):
        scheduler_cls = scheduler_cls()  # A lazy importer (PB2).
    allowed = get_function_args(scheduler_cls)
    for arg in kwargs:
        if arg not in allowed:
            raise PrivacyConfigError(
                f"--scheduler-config: {scheduler_cls.__name__} has no argument {arg!r}"
                f"{exps.did_you_mean(arg, allowed)}; arguments: {', '.join(allowed)}"
            )
    missing = [a for a in ("metric", "mode") if a in allowed and a not in kwargs]
    if missing:
        raise PrivacyConfigError(
            f"--scheduler-config: {scheduler_cls.__name__} needs {' and '.join(missing)}, "
            'e.g. {"metric": "env_runners/episode_return_mean", "mode": "max"}'
        )
    # Before Tune's own constructor check, whose message names no allowed value.
    preflight.check_scheduler_metric({"mode": kwargs.get("mode")}, [])
    metric = kwargs.get("metric")
    if isinstance(metric, str) and exps.translate_metric_key(metric) != metric:
        kwargs["metric"] = exps.translate_metric_key(metric)
        print(
            f"notice: --scheduler-config: metric {metric!r} is an old API stack key; "
            f"using {kwargs['metric']!r}",
            file=sys.stderr,
        )
    spec = SchedulerSpec(key, kwargs)
    try:
        spec.create()
    except (ValueError, TypeError, AssertionError) as e:
        raise PrivacyConfigError(f"--scheduler-config: {e}") from None
    return spec
