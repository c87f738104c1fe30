"""The checks of an experiment file that need neither Ray nor torch (well under a second).

``rllib train`` runs these on the parsed file before it imports anything heavy, so that a
typo costs a fraction of a second instead of the seconds Ray, RLlib and torch take to
import: each experiment's shape and keys, its ``run`` name, its ``config``, ``gpu_config``
and ``--config`` keys (and those of ``evaluation_config`` and of declared nested dicts),
the kind of each of this package's values (true/false, a number, a string), the values
its config class refuses on their own (a negative or zero ε, a mechanism it does not know:
rules the table recorded by probing the class), and that every ε is a normal float
(``rllib_privacy.mechanisms.floors``). Keys come
from the generated table of [rllib_privacy.experiments.key_table][].

Every message is the one the full pipeline ([rllib_privacy.experiments.pipeline][])
would give; what is not certain here (an algorithm the table does not record, a value
given as a search space other than ``grid_search``) is left to that pipeline, which runs
next in any case.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from rllib_privacy._validation import check_normal_epsilon, did_you_mean, needs_normal_float
from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError
from rllib_privacy.experiments.key_table import (
    AlgorithmKeys,
    algorithm_keys,
    load_table,
    refusal,
)
from rllib_privacy.experiments.parse import check_experiment_shape
from rllib_privacy.experiments.spec import is_grid_search, literal_values

__all__ = ["precheck_experiments"]

#: What a kind in the table allows, for messages.
_KIND_TEXT = {
    "bool": "true or false",
    "number": "a number",
    "str": "a string",
    "schedule": "a number or a schedule [[0, value], [env_steps, value], ...]",
}


def precheck_experiments(
    raw: Mapping[str, Any], *, path: str, override_config: Mapping[str, Any] | None = None
) -> None:
    """Check ``raw`` (a parsed experiment file) without importing Ray, RLlib or torch.

    Args:
        raw: Experiment names mapped to experiments, as parsed from the file.
        path: The file name, at the start of every message.
        override_config: ``--config``, merged into every experiment's config.

    Raises:
        ExperimentFileError: The first problem found, named as the full validation names it.

    """
    table = load_table()
    for name, spec in raw.items():
        try:
            checked = check_experiment_shape(str(name), spec)
            if table is not None:
                _check_experiment(checked, table, override_config)
        except ExperimentFileError:
            raise
        except PrivacyConfigError as e:
            raise ExperimentFileError(path, str(e), experiment=str(name)) from None


def _check_experiment(
    spec: Mapping[str, Any], table: Mapping[str, Any], override_config: Mapping[str, Any] | None
) -> None:
    run = spec["run"]
    if not isinstance(run, str) or not run:
        return  # The full pipeline words this one.
    names = table["algorithm_names"]
    if run not in names:
        if "ray" in sys.modules:
            return  # Tune may know it: something was registered in this process.
        raise PrivacyConfigError(
            f"unknown algorithm {run!r} in 'run'{did_you_mean(run, names)}; "
            f"registered algorithms: {', '.join(names)}"
        )
    keys = algorithm_keys(run)
    if keys is None:
        return
    for section, label in (
        (spec.get("config"), ""),
        (spec.get("gpu_config"), "with gpu_config merged: "),
        (override_config, ""),
    ):
        if isinstance(section, Mapping) and not is_grid_search(section):
            _check_config(section, keys, label)


def _check_config(config: Mapping[str, Any], keys: AlgorithmKeys, label: str) -> None:
    _check_keys(config, keys.keys, keys.config_class, label, "config key")
    evaluation_config = config.get("evaluation_config")
    if isinstance(evaluation_config, Mapping) and not is_grid_search(evaluation_config):
        _check_keys(evaluation_config, keys.keys, keys.config_class, label, "evaluation_config key")
    for key, allowed in keys.nested.items():
        nested = config.get(key)
        if isinstance(nested, Mapping) and not is_grid_search(nested):
            _check_keys(nested, allowed, keys.config_class, label, f"{key} key")
    for key, value in config.items():
        kind = keys.kinds.get(keys.renamed.get(key, key))
        rule = keys.refused.get(keys.renamed.get(key, key))
        if kind is None and rule is None:
            continue
        for one in literal_values(value):
            if kind is not None and not _has_kind(one, kind):
                raise PrivacyConfigError(
                    f"{label}config key {key!r} must be {_KIND_TEXT[kind]}, got {one!r}"
                )
            # A value the config class refuses on its own (a negative ε, an unknown
            # mechanism): its message, recorded in the table, without importing the class.
            message = None if rule is None or one is None else refusal(rule, one)
            if message is not None:
                raise PrivacyConfigError(f"{label}{message}")
            if kind == "number" and needs_normal_float(key) and isinstance(one, int | float):
                try:
                    check_normal_epsilon(f"{label}config key {key!r}", float(one))
                except ValueError as e:
                    raise PrivacyConfigError(str(e)) from None


def _check_keys(
    config: Iterable[str], allowed: frozenset[str], class_name: str, label: str, what: str
) -> None:
    for key in config:
        if key not in allowed:
            raise PrivacyConfigError(
                f"{label}{what} {key!r} is not known to {class_name}"
                f"{did_you_mean(str(key), allowed)}; see {class_name} for allowed keys"
            )


def _has_kind(value: Any, kind: str) -> bool:
    if value is None or isinstance(value, Mapping):
        return True  # None may mean "default"; a mapping is a search space: decided later.
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "schedule":  # the config class checks the schedule's entries
        return isinstance(value, list | tuple) or _has_kind(value, "number")
    return isinstance(value, str)
