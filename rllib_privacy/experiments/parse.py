"""Stage 1, parse: the file's text into mappings, and each experiment's shape.

Reads experiment files (YAML or JSON) and command-line JSON into plain mappings, then
checks that an experiment is a mapping with known keys and names, in ``run``, an
algorithm registered with Tune (its config class decides which config keys exist).
What the values mean is for the later stages.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

import yaml

from rllib_privacy._validation import describe, did_you_mean
from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError
from rllib_privacy.experiments.registry import resolve_algorithm
from rllib_privacy.experiments.spec import ExperimentDraft

__all__ = [
    "EXPERIMENT_KEYS",
    "LEGACY_EXPERIMENT_KEY_HINTS",
    "check_experiment_keys",
    "check_experiment_shape",
    "load_experiment_file",
    "parse_experiment",
    "parse_json_mapping",
    "parse_text",
]

#: Keys an experiment may have.
EXPERIMENT_KEYS = (
    "run",
    "env",
    "stop",
    "config",
    "checkpoint_config",
    "num_samples",
    "storage_path",
    "gpu_config",
)

#: Experiment keys of older Tune/RLlib versions and what to write instead.
LEGACY_EXPERIMENT_KEY_HINTS = {
    "local_dir": "use 'storage_path'",
    "checkpoint_freq": "use 'checkpoint_config: {checkpoint_frequency: N}'",
    "checkpoint_at_end": "use 'checkpoint_config: {checkpoint_at_end: true}'",
    "keep_checkpoints_num": "use 'checkpoint_config: {num_to_keep: N}'",
    "checkpoint_score_attr": "use 'checkpoint_config: {checkpoint_score_attribute: KEY}'",
    "resources_per_trial": (
        "RLlib derives trial resources from config (num_env_runners, num_learners, "
        "num_gpus_per_learner, ...)"
    ),
}


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML SafeLoader that rejects duplicate keys in a mapping."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, str | int | float | bool) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)

# PyYAML follows YAML 1.1, where a float needs a dot: `lr: 1e-5` would reach the config
# as the string "1e-5" and fail deep inside a Ray worker. YAML 1.2 (and JSON) read it as
# a float; so does this loader. (add_implicit_resolver copies the resolvers per class.)
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_experiment_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse an experiment file and check that its top level is a mapping.

    Args:
        path: The file; ``.json`` files are parsed as JSON, all others as YAML.

    Returns:
        The mapping of experiment names to (unvalidated) experiments.

    Raises:
        ExperimentFileError: The file is missing, unreadable, malformed (the message
            gives line and column) or its top level is not a non-empty mapping.

    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ExperimentFileError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ExperimentFileError(path, f"cannot read file: {e}") from None
    try:
        data = parse_text(path, text)
    except PrivacyConfigError as e:
        raise ExperimentFileError(path, str(e)) from None
    if data is None:
        raise ExperimentFileError(path, "file is empty; expected a mapping of experiments")
    if not isinstance(data, dict) or not data:
        raise ExperimentFileError(
            path,
            "the top level must be a non-empty mapping of experiment names to "
            f"experiments, got {describe(data)}",
        )
    return data


def parse_text(path: str, text: str) -> Any:
    """Parse ``text`` as JSON if ``path`` ends in ``.json``, else as YAML (unique keys).

    Raises:
        PrivacyConfigError: Malformed text; the message gives line and column.

    """
    if path.lower().endswith(".json"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise PrivacyConfigError(
                f"line {e.lineno}, column {e.colno}: invalid JSON: {e.msg}"
            ) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # A SafeLoader subclass.
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = e.problem or e.context or "malformed"
        raise PrivacyConfigError(f"{where}invalid YAML: {problem}") from None
    except yaml.YAMLError as e:
        raise PrivacyConfigError(f"invalid YAML: {e}") from None


def parse_json_mapping(text: str, what: str) -> dict[str, Any]:
    """Parse a command-line JSON object such as ``--stop '{"training_iteration": 5}'``.

    Args:
        text: The JSON text.
        what: The option's name, for messages.

    Raises:
        PrivacyConfigError: The text is not a JSON object.

    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise PrivacyConfigError(f"{what}: invalid JSON at column {e.colno}: {e.msg}") from None
    if not isinstance(value, dict):
        raise PrivacyConfigError(f"{what}: expected a JSON object, got {describe(value)}")
    return value


def parse_experiment(name: str, spec: Any) -> ExperimentDraft:
    """Check one experiment's shape and find the algorithm its ``run`` names.

    Args:
        name: The experiment name (a directory name under the storage path).
        spec: The experiment as parsed from the file.

    Returns:
        The draft the later stages fill in.

    Raises:
        PrivacyConfigError: Not a mapping, a name that is no directory name, an unknown
            key, or no (or an unknown) ``run``.

    """
    spec = check_experiment_shape(name, spec)
    return ExperimentDraft(name=name, spec=spec, algo_cls=resolve_algorithm(spec["run"]))


def check_experiment_shape(name: str, spec: Any) -> Mapping[str, Any]:
    """The checks of `parse_experiment` that need no Ray: mapping, name, keys, ``run``.

    Returns:
        ``spec``, known to be a mapping with a ``run`` key.

    Raises:
        PrivacyConfigError: Not a mapping, a name that is no directory name, an unknown
            key, or no ``run``.

    """
    if not isinstance(spec, Mapping):
        raise PrivacyConfigError(
            f"must be a mapping with at least a 'run' key, got {describe(spec)}"
        )
    if "/" in name or name in ("", ".", ".."):
        raise PrivacyConfigError("the name must be usable as a directory name")
    check_experiment_keys(spec)
    if "run" not in spec:
        raise PrivacyConfigError("missing required key 'run' (an algorithm name, e.g. PPO)")
    return spec


def check_experiment_keys(spec: Mapping[str, Any]) -> None:
    """Raise for a key that is not in ``EXPERIMENT_KEYS`` (saying what replaced old ones)."""
    for key in spec:
        if key in EXPERIMENT_KEYS:
            continue
        hint = LEGACY_EXPERIMENT_KEY_HINTS.get(key)
        hint = f" ({hint})" if hint else did_you_mean(str(key), EXPERIMENT_KEYS)
        raise PrivacyConfigError(
            f"unknown key {key!r}{hint}; allowed keys: {', '.join(EXPERIMENT_KEYS)}"
        )
