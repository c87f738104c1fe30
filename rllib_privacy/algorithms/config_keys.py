"""The config keys: which ones a config accepts, one naming style, and the old names.

[`allowed_config_keys`][rllib_privacy.algorithms.config_keys.allowed_config_keys] says
which keys ``AlgorithmConfig.update_from_dict`` accepts for a config class; the config
classes (through
[`GroupedConfigMixin`][rllib_privacy.algorithms.config_keys.GroupedConfigMixin]) and the
experiment-file loader use it to reject a typo instead of silently setting an attribute.

The rule (docs/configuration.md): every key this package adds to an AlgorithmConfig is
snake_case and starts with the name of the builder method that sets it, followed by an
underscore, and that method's keyword arguments are the attribute names themselves, as
in RLlib's ``.evaluation(evaluation_interval=...)``. So ``.privacy(privacy_epsilon=1.0)``
sets ``config.privacy_epsilon``, which is also the flat YAML ``config:`` key, and one look
at a key tells which method documents it. RLlib's own keys (``lr``, ``gamma``,
``vf_loss_coeff``, ...) keep their names and methods.

Keys renamed by this rule still work while they are deprecated (docs/versioning.md: one
minor version): ``update_from_dict`` (YAML ``config:``) and the old ``.training(...)``
keywords translate an old name to its new one, with one DeprecationWarning naming both, and
configs restored from old checkpoints get the new names. An old name is not an attribute.
"""

from __future__ import annotations

import inspect
import os
import sys
import types
import warnings
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import ray
from ray.rllib.algorithms.algorithm_config import NotProvided

from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import PrivacyConfigError

if TYPE_CHECKING:
    # mypy checks the mixins against the class they are mixed into; at run time they are plain.
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig as _ConfigBase
else:
    _ConfigBase = object

#: Keys `AlgorithmConfig.update_from_dict` handles specially (see its source and
#: `AlgorithmConfig._translate_special_keys` in ray/rllib/algorithms/algorithm_config.py),
#: in addition to the keys of `to_dict()` and the attributes they are translated to.
UPDATE_FROM_DICT_SPECIAL_KEYS = frozenset(
    {
        "callbacks",
        "callbacks_class",
        "create_env_on_driver",
        "create_env_on_local_worker",
        "custom_eval_function",
        "custom_evaluation_function",
        "framework",
        "framework_str",
        "input",
        "input_",
        "lambda",
        "lambda_",
        "num_cpus_for_driver",
        "num_cpus_for_main_process",
        "num_workers",
        "multiagent",
        "model_config",
        "_enable_new_api_stack",
    }
)


def allowed_config_keys(config: Any) -> frozenset[str]:
    """Return the keys ``config.update_from_dict`` accepts for this config class.

    These are the keys of ``config.to_dict()``, the special keys and attribute names of
    ``AlgorithmConfig.update_from_dict``, the properties with setters, and (for keys
    starting with ``evaluation_``) only the arguments of ``config.evaluation()``, since
    ``update_from_dict`` passes those keys to that method.

    A config class may accept more keys (e.g. old names it translates itself) by defining
    a classmethod or staticmethod ``legacy_config_keys()`` that returns them (any iterable
    of names; a mapping of old to new names works too).

    Args:
        config: An AlgorithmConfig instance (e.g. ``PPO.get_default_config()``).

    Returns:
        The accepted keys.

    """
    keys = set(config.to_dict()) | UPDATE_FROM_DICT_SPECIAL_KEYS
    keys |= {
        name
        for name, attr in inspect.getmembers(type(config))
        if isinstance(attr, property) and attr.fset is not None
    }
    evaluation_args = set(inspect.signature(config.evaluation).parameters)
    keys = {k for k in keys if not k.startswith("evaluation_") or k in evaluation_args}
    keys |= {k for k in evaluation_args if k.startswith("evaluation_")}
    legacy_keys = getattr(type(config), "legacy_config_keys", None)
    if callable(legacy_keys):
        keys |= {str(k) for k in legacy_keys()}
    return frozenset(keys)


#: The page that documents every key (named when a key is unknown).
KEY_REFERENCE_PAGE = "docs/configuration.md"
#: The version that drops the old names (docs/versioning.md: they warn for one minor version).
OLD_NAMES_REMOVED_IN = "0.3.0"
#: Frames in these folders are skipped when a warning names the caller's line.
_INTERNAL_DIRS = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
    os.path.dirname(os.path.abspath(ray.__file__ or "")) + os.sep,
)


def _warn(message: str) -> None:
    """A DeprecationWarning attributed to the first caller outside this package and Ray.

    So it points at the user's YAML loader or builder call, and Python's default filter
    shows it when that caller is ``__main__``. The message says when the old name goes.
    """
    frame: types.FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL_DIRS):
        frame, level = frame.f_back, level + 1
    message = f"{message} (the old name is removed in {OLD_NAMES_REMOVED_IN})"
    warnings.warn(message, DeprecationWarning, stacklevel=level + 1)


def group_of(key: str, groups: Collection[str]) -> str | None:
    """The builder method (longest matching prefix) that documents ``key``, if any."""
    matches = [g for g in groups if key.startswith(f"{g}_")]
    return max(matches, key=len) if matches else None


class GroupedConfigMixin(_ConfigBase):
    """Grouped builder methods and old key names for an AlgorithmConfig subclass.

    Put it first among the bases (before RLlib's config class). A subclass lists its own
    keys in ``CONFIG_GROUPS`` ({builder method: attribute names}) and the renamed ones in
    ``LEGACY_CONFIG_KEYS`` ({old key: new key}); ``LEGACY_TRAINING_KWARGS`` are the keywords
    ``.training(...)`` accepted before the keys moved to their own methods ({old keyword:
    attribute}).
    """

    #: {builder method: the attributes it sets}; every name starts with ``<method>_``.
    CONFIG_GROUPS: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: {old key: new key}: keys renamed to the one naming style.
    LEGACY_CONFIG_KEYS: ClassVar[Mapping[str, str]] = {}
    #: {old ``.training()`` keyword: attribute}: keywords that moved to a group method.
    LEGACY_TRAINING_KWARGS: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def legacy_config_keys(cls) -> dict[str, str]:
        """{old key: new key} of this config's renamed keys (YAML ``config:`` and dicts)."""
        return dict(cls.LEGACY_CONFIG_KEYS)

    @classmethod
    def own_config_keys(cls) -> dict[str, str]:
        """{key: builder method} of every key this package adds to this config."""
        return {key: group for group, names in cls.CONFIG_GROUPS.items() for key in names}

    @classmethod
    def translate_legacy_keys(
        cls, config_dict: Mapping[str, Any], *, warn: bool = True
    ) -> dict[str, Any]:
        """A copy of ``config_dict`` with old key names replaced by the new ones.

        Recurses into ``evaluation_config``. Each old key gives one DeprecationWarning
        naming both keys (when ``warn``).

        Raises:
            PrivacyConfigError: If a key is given under its old and its new name.

        """
        out: dict[str, Any] = {}
        for key, value in config_dict.items():
            new = cls.LEGACY_CONFIG_KEYS.get(key)
            if new is not None:
                if new in config_dict or new in out:
                    raise PrivacyConfigError(
                        f"config sets {new!r} twice (also under its old name {key!r})"
                    )
                if warn:
                    cls._warn_renamed(key, new)
                key = new
            if key == "evaluation_config" and isinstance(value, Mapping):
                value = cls.translate_legacy_keys(value, warn=warn)
            out[key] = value
        return out

    @classmethod
    def _warn_renamed(cls, old: str, new: str) -> None:
        group = group_of(new, cls.CONFIG_GROUPS)
        where = f" (set by .{group}())" if group else ""
        _warn(f"{cls.__name__}: config key {old!r} is deprecated; use {new!r}{where}")

    def update_from_dict(self, config_dict: Mapping[str, Any]) -> Any:
        """RLlib's ``update_from_dict`` with old names translated and unknown keys rejected.

        Raises:
            PrivacyConfigError: For a key this config does not know, with the closest key.

        """
        translated = self.translate_legacy_keys(config_dict)
        self.check_known_keys(translated)
        return super().update_from_dict(translated)

    def check_known_keys(self, config_dict: Mapping[str, Any]) -> None:
        """Raise for a key this config does not know (Tune's ``__magic__`` keys pass).

        Raises:
            PrivacyConfigError: Naming the key, the closest known key and the key reference.

        """
        allowed = allowed_config_keys(self)
        for key in config_dict:
            if key in allowed or (key.startswith("__") and key.endswith("__")):
                continue
            raise PrivacyConfigError(
                f"config key {key!r} is not known to {type(self).__name__}"
                f"{did_you_mean(str(key), allowed, self.LEGACY_CONFIG_KEYS)}; see "
                f"{KEY_REFERENCE_PAGE} for its keys"
            )

    def set_provided(self, arguments: Mapping[str, Any]) -> None:
        """Set every argument of a builder-method call that is not ``NotProvided``.

        Args:
            arguments: ``locals()`` of the builder method.

        """
        for name, value in arguments.items():
            if name not in ("self", "kwargs", "__class__") and value is not NotProvided:
                setattr(self, name, value)

    def training(self, **kwargs: Any) -> Any:
        """RLlib's ``training()``; the keywords that moved to a group method still work.

        Returns:
            This updated config.

        """
        for name in [k for k in kwargs if k in self.LEGACY_TRAINING_KWARGS]:
            new = self.LEGACY_TRAINING_KWARGS[name]
            group = group_of(new, self.CONFIG_GROUPS)
            _warn(
                f"{type(self).__name__}.training({name}=...) is deprecated; use .{group}({new}=...)"
            )
            setattr(self, new, kwargs.pop(name))
        return super().training(**kwargs)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Any:
        """RLlib's ``from_state``; a state saved before the rename restores its values.

        ``AlgorithmConfig.from_state`` copies the state into ``__dict__``: an old key would
        sit there beside the new attribute's default (a restored run with the default ε).

        Returns:
            The restored config.

        """
        ctor = state.get("class", cls)
        legacy = getattr(ctor, "LEGACY_CONFIG_KEYS", cls.LEGACY_CONFIG_KEYS)
        renamed = {legacy.get(k, k): v for k, v in state.items() if k not in legacy}
        renamed.update({legacy[k]: v for k, v in state.items() if k in legacy})
        return super().from_state(renamed)


def warn_renamed_method(config: Any, old: str, new: str) -> None:
    """One DeprecationWarning for a builder method that got a new name."""
    _warn(f"{type(config).__name__}.{old}() is deprecated; use .{new}()")


class JournalPrivacyMixin(_ConfigBase):
    """``.privacy()`` holding only the journal folder.

    For an algorithm whose privacy settings belong to a party with its own group (the
    kickstart teacher's ``.teacher()``, PATE's ``.pate()``).
    """

    privacy_journal_dir: str | os.PathLike[str] | None

    def privacy(
        self,
        *,
        privacy_journal_dir: str | os.PathLike[str] | None = NotProvided,
    ) -> Any:
        """Sets where the write-ahead privacy journal lives (docs/privacy-journal.md).

        Args:
            privacy_journal_dir: Its folder; ``None`` = ``<trial folder>/privacy_journal``
                (stable across ``--resume``). It cannot be switched off: a run without it
                could forget releases in a crash.

        Returns:
            This updated config.

        """
        if privacy_journal_dir is not NotProvided:
            self.privacy_journal_dir = privacy_journal_dir
        return self


#: The keys of ``.count_exploration()``: the same on every config that has the method.
COUNT_EXPLORATION_KEYS = (
    "count_exploration_config",
    "count_exploration_scope",
    "count_exploration_flatten_observations",
)


def check_count_exploration_keys(
    algorithm: str,
    *,
    scope: Any,
    flatten: Any,
    scopes: tuple[str, ...],
    flattens: bool,
) -> None:
    """Raise for a ``count_exploration_scope`` or a flattening ``algorithm`` does not support.

    Every config takes the same ``.count_exploration()`` keys, so that a YAML file moves
    from one algorithm to another; what each algorithm supports differs.

    Args:
        algorithm: Its name, for the message.
        scope: The ``count_exploration_scope`` value.
        flatten: The ``count_exploration_flatten_observations`` value.
        scopes: Where this algorithm can keep its visit counts.
        flattens: Whether it can flatten observations for its RLModule.

    Raises:
        PrivacyConfigError: Naming the key, what was given and what is supported.

    """
    if scope not in scopes:
        raise PrivacyConfigError(
            f"config key 'count_exploration_scope' must be one of {list(scopes)} for "
            f"{algorithm}, got {scope!r}"
        )
    if not isinstance(flatten, bool):
        raise PrivacyConfigError(
            f"count_exploration_flatten_observations must be true or false, got {flatten!r}"
        )
    if flatten and not flattens:
        raise PrivacyConfigError(
            f"config key 'count_exploration_flatten_observations' must be false for "
            f"{algorithm}: it does not flatten observations for its RLModule"
        )


class LegacyCountExplorationMixin(_ConfigBase):
    """The old ``.count_based_exploration()``, now ``.count_exploration()``."""

    #: Old keyword → new one; the others kept their names.
    _RENAMED_KWARGS = {
        "count_exploration": "count_exploration_config",
        "flatten_observations": "count_exploration_flatten_observations",
    }

    def count_based_exploration(self, **kwargs: Any) -> Any:
        """Deprecated: use ``.count_exploration(count_exploration_config=...)``.

        Returns:
            This updated config.

        """
        warn_renamed_method(self, "count_based_exploration", "count_exploration")
        renamed = {self._RENAMED_KWARGS.get(k, k): v for k, v in kwargs.items()}
        return self.count_exploration(**renamed)
