"""The config keys of every algorithm ``rllib train`` can run, readable without Ray.

``rllib train`` rejects a missing file, an unknown experiment key, an unknown algorithm, a
misspelled config key, a value of the wrong kind or a value the config class refuses on its
own (a negative ε, an unknown mechanism) in well under a second: these checks
([rllib_privacy.experiments.precheck][]) read ``config_keys.json`` next to this module
instead of importing Ray, RLlib and torch (seconds) to ask the config classes.

The table is generated from the config classes themselves (``build_table``: the keys of
[`allowed_config_keys`][rllib_privacy.algorithms.config_keys.allowed_config_keys], the
classes' renamed keys and declared nested keys, the kind of each of this package's keys'
default value, and the values each class refuses with one message whatever the other keys
say, found by validating probes: `probe_refusals`) and a test checks that the file matches
them. It also records the Ray
version and a hash of the modules defining this package's config classes: a table that no
longer matches them is not used (the checks then wait for the full validation, seconds
later, rather than reject a key added since). After changing a config class or upgrading
Ray, regenerate it::

    python -m rllib_privacy.experiments.key_table --write

Only the loader is cheap: ``build_table`` imports Ray and every algorithm.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.metadata
import inspect
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "TABLE_PATH",
    "AlgorithmKeys",
    "algorithm_keys",
    "build_table",
    "is_current",
    "load_table",
    "main",
    "probe_refusals",
    "refusal",
    "source_fingerprint",
]

#: The generated table, shipped with the package.
TABLE_PATH = Path(__file__).with_name("config_keys.json")

#: Kinds a default value can give its key (values of ``"kinds"`` in the table).
_KIND_OF_TYPE = (
    (bool, "bool"),  # before int: a bool is an int
    (int, "number"),  # an int key given 1e5 in YAML is a float; RLlib decides later
    (float, "number"),
    (str, "str"),
)


def _package_root() -> Path:
    return Path(__file__).resolve().parents[1]


def source_fingerprint(files: Sequence[str]) -> str:
    """A hash of the package's source ``files`` (paths relative to the package folder).

    The table records it for the modules that define its config classes: when one of them
    was edited after the table was written, the table may be out of date, and the cheap
    checks leave key errors to the full validation instead of rejecting a new key.
    """
    digest = hashlib.sha256()
    root = _package_root()
    for name in sorted(files):
        digest.update(name.encode())
        try:
            digest.update((root / name).read_bytes())
        except OSError:
            digest.update(b"<missing>")
    return digest.hexdigest()


def is_current(table: dict[str, Any]) -> bool:
    """Whether ``table`` was built from the installed Ray and the package's current source."""
    try:
        ray_version = importlib.metadata.version("ray")
    except importlib.metadata.PackageNotFoundError:
        return False
    return table.get("ray_version") == ray_version and table.get(
        "source_fingerprint"
    ) == source_fingerprint(table.get("source_files", ()))


class AlgorithmKeys:
    """The allowed config keys of one algorithm, as recorded in the table.

    Attributes:
        config_class: The config class's name (for messages).
        keys: Every top-level key ``update_from_dict`` accepts.
        renamed: Old key names the class translates ({old: new}).
        nested: Declared keys of nested dicts ({key: allowed names}).
        kinds: This package's keys with a bool, number or str default: that kind.
        refused: Values the config class refuses whatever else the config says, found by
            `probe_refusals` ({key: rule}; see `refusal`).

    """

    def __init__(self, entry: dict[str, Any], base: frozenset[str]) -> None:
        self.config_class: str = entry["config_class"]
        self.keys = (base | frozenset(entry.get("add", ()))) - frozenset(entry.get("remove", ()))
        self.renamed: dict[str, str] = dict(entry.get("renamed", {}))
        self.nested: dict[str, frozenset[str]] = {
            k: frozenset(v) for k, v in entry.get("nested", {}).items()
        }
        self.kinds: dict[str, str] = dict(entry.get("kinds", {}))
        self.refused: dict[str, dict[str, Any]] = dict(entry.get("refused", {}))


@functools.lru_cache(maxsize=1)
def load_table() -> dict[str, Any] | None:
    """The table as stored, or None when it is missing, unreadable or out of date.

    Out of date: written for another Ray version, or before the modules defining this
    package's config classes were last edited (see `source_fingerprint`). Without a table
    the cheap checks are skipped; the full validation still runs.
    """
    try:
        table = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return table if isinstance(table, dict) and is_current(table) else None


def algorithm_keys(name: str) -> AlgorithmKeys | None:
    """The table's entry for the algorithm registered as ``name`` (None: not recorded)."""
    table = load_table()
    if table is None or name not in table["algorithms"]:
        return None
    return AlgorithmKeys(table["algorithms"][name], frozenset(table["base_keys"]))


def _kind(value: Any) -> str | None:
    if isinstance(value, float) and math.isnan(value):
        return None
    return next((kind for cls, kind in _KIND_OF_TYPE if isinstance(value, cls)), None)


#: Where a recorded message shows the refused value.
_VALUE = "{value}"
#: Negative values probed: each must be refused with the same message but for the value.
_NEGATIVE_PROBES = (-2.5, -7.25, -1e300)
#: Strings probed: a plain word and a class path (a key taking class paths is no choice key).
_STRING_PROBES = ("no_such_value", "no_such_module:NoSuchClass")


#: A required key named by the default config's own error ("'X' is required").
_REQUIRED = r"'?(\w+)'? is required"
#: Stand-ins for a required key, tried in turn: a path (a teacher checkpoint) or a number (a
#: noise scale another choice needs), so that the other keys' own checks run; a class that
#: checks that the path exists is probed without it.
_STAND_INS = ("/nonexistent/rllib-privacy-probe", 1.0)


class _Prober:
    """Runs the full validation of one algorithm on probe configs (imports Ray).

    Attributes:
        algo_cls: The algorithm whose config class is probed.
        base: Keys every probe config holds: stand-ins for the keys the default config
            is invalid without (`_Prober.complete`).
    """

    def __init__(self, algo_cls: type) -> None:
        self.algo_cls = algo_cls
        self.base: dict[str, Any] = {}
        self.base = self.complete({}) or {}

    def message(
        self, key: str | None, value: Any = None, extra: dict[str, Any] | None = None
    ) -> str | None:
        """The full validation's message for the base, ``extra`` and ``{key: value}``."""
        from rllib_privacy.experiments.validate import validate_variants

        config = {**self.base, **(extra or {})}
        if key is not None:
            config[key] = value
        try:
            validate_variants(config, self.algo_cls, 1, "")
        except Exception as e:  # noqa: BLE001 - whatever the config class raises is its answer
            return str(e)
        return None

    def complete(self, extra: dict[str, Any]) -> dict[str, Any] | None:
        """``extra`` plus stand-ins for the keys it is invalid without (None: none found)."""
        import re

        config, last, index = dict(extra), "", 0
        for _ in range(4 * len(_STAND_INS)):
            message = self.message(None, extra=config)
            if message is None:
                return config
            match = re.search(_REQUIRED, message)
            if match is not None and match.group(1) not in config:
                last, index = match.group(1), 0
            elif last and last in message and index + 1 < len(_STAND_INS):
                index += 1  # The stand-in itself was refused: try the next kind.
            else:
                return None
            config[last] = _STAND_INS[index]
        return None

    def template(self, key: str, probes: Sequence[Any]) -> str | None:
        """The one message, but for the value, with which every probe is refused (or None)."""
        first, *others = probes
        message, text = self.message(key, first), repr(first)
        if message is None or key not in message or message.count(text) != 1:
            return None
        template = message.replace(text, _VALUE)
        if any(self.message(key, v) != template.replace(_VALUE, repr(v)) for v in others):
            return None
        return template

    def number_rule(self, key: str) -> dict[str, Any] | None:
        """``{"below": 0, ...}`` or ``{"at_most": 0, ...}`` when negatives (and 0) are refused."""
        template = self.template(key, _NEGATIVE_PROBES)
        if template is None:
            return None
        # A YAML int: the message shows it as given, or as the float the class made of it.
        as_int = self.message(key, -1)
        value_format = next(
            (
                f
                for f, text in (("repr", "-1"), ("float", "-1.0"))
                if as_int == template.replace(_VALUE, text)
            ),
            None,
        )
        if value_format is None:
            return None
        zero = self.message(key, 0)
        refused_zero = zero == template.replace(_VALUE, _format(0, value_format))
        return {
            "at_most" if refused_zero else "below": 0,
            "message": template,
            "format": value_format,
        }

    def choice_rule(self, key: str) -> dict[str, Any] | None:
        """``{"choices": [...], ...}`` when the class names the only strings it takes."""
        import ast
        import re

        template = self.template(key, _STRING_PROBES)
        if template is None:
            return None
        match = re.search(r"one of (\[[^\]]*\])", template)
        if match is None:
            return None
        try:
            choices = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError):
            return None
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            return None
        return {"choices": choices, "message": template, "format": "repr"}

    def holds(self, key: str, rule: dict[str, Any], extra: dict[str, Any]) -> bool:
        """Whether ``rule`` gives the full validation's message with ``extra`` set too."""
        probes: list[Any] = [_STRING_PROBES[0]] if "choices" in rule else [_NEGATIVE_PROBES[0], -1]
        if "at_most" in rule:
            probes.append(0)
        return all(self.message(key, v, extra) == refusal(rule, v) for v in probes)


def probe_refusals(algo_cls: type, kinds: dict[str, str | None]) -> dict[str, dict[str, Any]]:
    """The values of this package's keys that the config class refuses on their own.

    Each number key is validated with negative values and 0, each str key with strings no
    class takes, on the class's default config (imports Ray; a required path the default
    lacks, such as PATE's teachers, gets a stand-in), then again with each choice of the
    choice keys found. A rule is recorded only when every probe is refused with one message
    naming the key that differs only in the value (so the message can be given for the
    user's value without the class), and for a str key only when that message lists the
    choices. A key refused only in combination with others (a probe failing for another
    reason) gets no rule: the full validation, seconds later, still checks it.

    Args:
        algo_cls: The algorithm (its default config is probed).
        kinds: This package's keys and their kinds (``"number"``, ``"str"``, ``"bool"``;
            None: no kind known, probed as a number).

    Returns:
        ``{key: rule}``: ``{"below": 0 | "at_most": 0 | "choices": [...], "message":
        template with {value}, "format": "repr" | "float"}`` (see `refusal`).
    """
    prober = _Prober(algo_cls)
    rules: dict[str, dict[str, Any]] = {}
    for key, kind in kinds.items():
        # A key without a kind (its default is None: "the mechanism's default") takes a
        # number often enough to probe like one.
        rule = (
            prober.number_rule(key)
            if kind in ("number", None)
            else prober.choice_rule(key)
            if kind == "str"
            else None
        )
        if rule is not None:
            rules[key] = rule
    # A rule must not depend on another key: each is checked again with every choice of
    # every choice key (e.g. each privacy_mechanism) that is valid on its own.
    # (A choice that needs another key, e.g. PATE's gnmax its σ, gets a stand-in for it.)
    completed = (
        prober.complete({key: choice})
        for key, rule in rules.items()
        if "choices" in rule
        for choice in rule["choices"]
    )
    extras = [extra for extra in completed if extra is not None]
    return {
        key: rule
        for key, rule in rules.items()
        if all(prober.holds(key, rule, extra) for extra in extras if key not in extra)
    }


def _format(value: Any, value_format: str) -> str:
    return repr(float(value)) if value_format == "float" else repr(value)


def refusal(rule: dict[str, Any], value: Any) -> str | None:
    """The full validation's message for ``value`` when ``rule`` refuses it, else None.

    Args:
        rule: A recorded rule of `probe_refusals`.
        value: A literal value of the key (a number for number rules, a str for choices).
    """
    if "choices" in rule:
        refused = isinstance(value, str) and value not in rule["choices"]
    elif isinstance(value, bool) or not isinstance(value, int | float):
        refused = False
    elif "at_most" in rule:
        refused = value <= rule["at_most"]
    else:
        refused = value < rule.get("below", -math.inf)
    if not refused:
        return None
    return str(rule["message"]).replace(_VALUE, _format(value, rule.get("format", "repr")))


def build_table() -> dict[str, Any]:
    """Ask every registered algorithm's config class for its keys (imports Ray).

    Returns:
        The table: ``ray_version``, ``algorithm_names`` (every name registered with Tune),
        ``base_keys`` (the keys all recorded algorithms share) and per algorithm its
        ``config_class``, the keys it adds to or lacks from the base, its renamed keys,
        its declared nested keys, the kinds of this package's keys and the values its
        config class refuses (`probe_refusals`).
    """
    import ray
    from ray.tune.registry import get_trainable_cls

    from rllib_privacy._registration import register_all
    from rllib_privacy.algorithms.config_keys import allowed_config_keys

    register_all()
    from rllib_privacy.experiments.registry import quiet_rllib, registered_algorithms

    names = registered_algorithms()
    entries: dict[str, tuple[type, frozenset[str], Any]] = {}
    with quiet_rllib():
        for name in names:
            try:
                config = get_trainable_cls(name).get_default_config()
            except Exception:  # noqa: BLE001 - an optional dependency missing: not recorded
                continue
            entries[name] = (type(config), allowed_config_keys(config), config)
    base = frozenset.intersection(*(keys for _, keys, _ in entries.values()))
    root = _package_root()
    sources = sorted(
        {
            Path(inspect.getfile(klass)).resolve().relative_to(root).as_posix()
            for cls, _, _ in entries.values()
            for klass in cls.__mro__
            if klass.__module__.startswith("rllib_privacy.")
        }
    )
    algorithms = {}
    for name, (cls, keys, config) in sorted(entries.items()):
        own: dict[str, str] = getattr(cls, "own_config_keys", dict)()
        legacy = getattr(cls, "legacy_config_keys", None)
        renamed = legacy() if callable(legacy) else {}
        kinds = {key: _kind(getattr(config, key, None)) for key in own}
        # A weight that also takes RLlib's schedule format ([[0, w0], [t1, w1], ...]).
        kinds.update(dict.fromkeys(getattr(cls, "SCHEDULE_KEYS", ()), "schedule"))
        with quiet_rllib():
            refused = probe_refusals(get_trainable_cls(name), kinds)
        algorithms[name] = {
            "config_class": cls.__name__,
            "add": sorted(keys - base),
            "remove": sorted(base - keys),
            "renamed": dict(sorted(dict(renamed).items())) if isinstance(renamed, dict) else {},
            "nested": {
                k: sorted(v) for k, v in sorted(getattr(cls, "config_dict_keys", {}).items())
            },
            "kinds": {k: v for k, v in sorted(kinds.items()) if v is not None},
            "refused": dict(sorted(refused.items())),
        }
    return {
        "generated_by": "python -m rllib_privacy.experiments.key_table --write",
        "ray_version": ray.__version__,
        "source_files": sources,
        "source_fingerprint": source_fingerprint(sources),
        "algorithm_names": names,
        "base_keys": sorted(base),
        "algorithms": algorithms,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table, ``--write`` it to ``config_keys.json`` or ``--check`` that file.

    Returns:
        0, or 1 when ``--check`` finds the file out of date.
    """
    parser = argparse.ArgumentParser(description="The config-key table of rllib train.")
    parser.add_argument("--write", action="store_true", help="write config_keys.json")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    text = json.dumps(build_table(), indent=1, sort_keys=False) + "\n"
    if args.write:
        TABLE_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {TABLE_PATH}")
        return 0
    if args.check:
        current = TABLE_PATH.read_text(encoding="utf-8") if TABLE_PATH.exists() else ""
        if current != text:
            print(f"{TABLE_PATH} is out of date; run with --write", file=sys.stderr)
            return 1
        return 0
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
