"""Reading experiment files (YAML or JSON) and command-line JSON into plain mappings.

Nothing here knows what an experiment means: the result is checked by
:mod:`rllib_privacy.experiments.loading`.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import yaml

from rllib_privacy._validation import describe
from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError

__all__ = ["load_experiment_file", "parse_json_mapping", "parse_text"]


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
