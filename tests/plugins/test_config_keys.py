"""Config keys: one naming style, grouped builder methods, old flat keys still accepted.

Every key the package adds is ``<builder method>_<name>`` and set by that method
(docs/configuration.md); while deprecated (docs/versioning.md), the old names keep working
from dicts, YAML files, ``.training(...)`` keywords and old checkpoints' config states, each
with one deprecation notice naming the old and the new key. They are not attributes.
"""

from __future__ import annotations

import inspect
import math
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.dqn import DQNConfig
from ray.rllib.algorithms.ppo import PPOConfig

import rllib_privacy
from rllib_privacy.algorithms.config_keys import (
    COUNT_EXPLORATION_KEYS,
    OLD_NAMES_REMOVED_IN,
    GroupedConfigMixin,
)
from rllib_privacy.algorithms.count_exploration import ExplorationDQNConfig, ExplorationPPOConfig
from rllib_privacy.algorithms.kickstart_ppo.kickstart_ppo import KickstartPPOConfig
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_config import LDPA3CConfig
from rllib_privacy.algorithms.ldp_ppo.ldp_ppo import LDPPPOConfig
from rllib_privacy.algorithms.pate_ppo.pate_ppo import PATEPPOConfig
from rllib_privacy.algorithms.pipelined_ppo import PipelinedPPOConfig
from rllib_privacy.errors import ExperimentFileError, PrivacyConfigError

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "configuration.md"
CONFIG_CLASSES = (
    LDPA3CConfig,
    LDPPPOConfig,
    KickstartPPOConfig,
    PATEPPOConfig,
    PipelinedPPOConfig,
    ExplorationPPOConfig,
    ExplorationDQNConfig,
)
RLLIB_BASES = (PPOConfig, DQNConfig, AlgorithmConfig)
#: Keys LDPA3C adds under the names RLlib's own algorithms use (PPO, IMPALA): RLlib's.
RLLIB_NAMED_KEYS = {"vf_loss_coeff", "entropy_coeff"}

#: A valid value, different from the default, for every renamed key (by new name).
NEW_VALUES: dict[str, Any] = {
    "privacy_mechanism": "prs",
    "privacy_epsilon": 4.0,
    "privacy_clip": 0.5,
    "privacy_policy_clip_share": 0.25,
    "privacy_reduced_dim": 3,
    "privacy_debias": True,
    "privacy_secure_mode": True,
    "privacy_zero_signal_control": True,
    "privacy_shuffle_delta": 1e-7,
    "agents_submissions_per_agent": 2,
    "agents_episodes_per_submission": 3,
    "agents_action_selection": "sample",
    "agents_exploration_alpha": 0.25,
    "agents_exploration_alpha_zero_at": 17,
    "agents_loss_reduction": "mean",
    "agents_normalize_advantages": True,
    "aggregator_max_buffer": 7,
    "aggregator_submissions_per_iteration": 11,
    "aggregator_submissions_per_request": 5,
    "scoring_fst_target_score": 150.0,
    "scoring_eval_episodes": 4,
    "scoring_eval_heldout_gravities": [9.5, 10.1],
    "count_exploration_config": {"num_bits": 16, "beta": 0.2},
    "count_exploration_flatten_observations": True,
    "pate_teacher_checkpoints": "/tmp/pate-teachers",
}

LEGACY_CASES = [
    (cls, old, new) for cls in CONFIG_CLASSES for old, new in cls.legacy_config_keys().items()
]


def _ids(case: tuple) -> str:
    return f"{case[0].__name__}-{case[1]}" if isinstance(case, tuple) else str(case)


def _state(config: Any) -> dict[str, Any]:
    return {k: v for k, v in config.to_dict().items() if k != "_is_frozen"}


def _deprecations(records: list[warnings.WarningMessage]) -> list[str]:
    return [str(r.message) for r in records if issubclass(r.category, DeprecationWarning)]


# --- the rule --------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", CONFIG_CLASSES, ids=lambda c: c.__name__)
def test_every_own_key_starts_with_its_builder_method(cls: type) -> None:
    assert issubclass(cls, GroupedConfigMixin)
    for group, keys in cls.CONFIG_GROUPS.items():
        assert callable(getattr(cls, group)), group
        for key in keys:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", key), key
            assert key.startswith(f"{group}_"), (group, key)


@pytest.mark.parametrize("cls", CONFIG_CLASSES, ids=lambda c: c.__name__)
def test_own_keys_are_every_attribute_the_class_adds_to_rllibs(cls: type) -> None:
    config = cls()
    base = next(c for c in cls.__mro__ if c in RLLIB_BASES)
    added = set(vars(config)) - set(vars(base())) - RLLIB_NAMED_KEYS
    added = {k for k in added if not k.startswith("_")}
    assert added == set(cls.own_config_keys()), added ^ set(cls.own_config_keys())


@pytest.mark.parametrize("cls", CONFIG_CLASSES, ids=lambda c: c.__name__)
def test_every_builder_method_sets_exactly_what_it_documents(cls: type) -> None:
    for group, keys in cls.CONFIG_GROUPS.items():
        method = getattr(cls, group)
        params = set(inspect.signature(method).parameters) - {"self"}
        assert params == set(keys), (group, params ^ set(keys))
        doc = inspect.getdoc(method) or ""
        for key in keys:
            assert f"{key}:" in doc, f".{group}() does not document {key}"
        # A distinct marker per key: each lands on its own attribute and nowhere else.
        config = cls()
        before = dict(vars(config))
        markers = {key: {"marker": key} for key in keys}
        assert method(config, **markers) is config
        for key in keys:
            assert getattr(config, key) == markers[key], key
        changed = {k for k, v in vars(config).items() if before.get(k) is not v}
        assert changed == set(keys), changed


@pytest.mark.parametrize("cls", CONFIG_CLASSES, ids=lambda c: c.__name__)
def test_builder_method_leaves_what_it_is_not_given(cls: type) -> None:
    for group in cls.CONFIG_GROUPS:
        config = cls()
        before = _state(config)
        getattr(config, group)()
        assert _state(config) == before, group


def test_rllibs_own_training_keys_stay_in_training() -> None:
    config = LDPA3CConfig().training(lr=0.1, gamma=0.9, vf_loss_coeff=0.25, entropy_coeff=0.0)
    assert (config.lr, config.gamma, config.vf_loss_coeff, config.entropy_coeff) == (
        0.1,
        0.9,
        0.25,
        0.0,
    )


# --- old names -------------------------------------------------------------------------------


def test_every_renamed_key_has_a_test_value() -> None:
    assert {new for _, _, new in LEGACY_CASES} <= set(NEW_VALUES)


@pytest.mark.parametrize(("cls", "old", "new"), LEGACY_CASES, ids=_ids)
def test_old_key_in_update_from_dict_gives_the_new_keys_config_and_warns_once(
    cls: type, old: str, new: str
) -> None:
    value = NEW_VALUES[new]
    assert getattr(cls(), new) != value  # Else the test could not tell.
    expected = cls().update_from_dict({new: value})
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        got = cls().update_from_dict({old: value})
    assert _state(got) == _state(expected)
    messages = _deprecations(records)
    assert len(messages) == 1, messages
    assert f"'{old}'" in messages[0] and f"'{new}'" in messages[0], messages[0]
    # The warning points at this file (the caller), not at the package.
    assert Path(records[0].filename).resolve() == Path(__file__).resolve()


@pytest.mark.parametrize(("cls", "old", "new"), LEGACY_CASES, ids=_ids)
def test_old_name_is_not_an_attribute(cls: type, old: str, new: str) -> None:
    # 0.2.0 removed the attribute aliases; dicts, files and checkpoints still translate.
    config = cls()
    assert new in vars(config)
    if not callable(getattr(cls, old, None)):  # ``count_exploration`` is now the method.
        with pytest.raises(AttributeError):
            getattr(config, old)


@pytest.mark.parametrize("cls", CONFIG_CLASSES, ids=lambda c: c.__name__)
def test_old_training_keywords_set_the_same_config_as_the_group_methods(cls: type) -> None:
    for old, new in cls.LEGACY_TRAINING_KWARGS.items():
        value = NEW_VALUES.get(new, [f"marker-{new}"])
        expected = getattr(cls(), new_group(cls, new))(**{new: value})
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            got = cls().training(**{old: value}, lr=0.125)
        assert got.lr == 0.125
        got.lr = expected.lr
        assert _state(got) == _state(expected), old
        messages = _deprecations(records)
        assert len(messages) == 1 and f"training({old}=" in messages[0], messages
        assert f".{new_group(cls, new)}({new}=" in messages[0], messages[0]


def new_group(cls: type, key: str) -> str:
    return cls.own_config_keys()[key]


def test_old_count_based_exploration_method_still_works() -> None:
    settings = {"num_bits": 16}
    with pytest.warns(DeprecationWarning, match=r"count_based_exploration\(\).*count_exploration"):
        old = ExplorationPPOConfig().count_based_exploration(
            count_exploration=settings, flatten_observations=True
        )
    new = ExplorationPPOConfig().count_exploration(
        count_exploration_config=settings, count_exploration_flatten_observations=True
    )
    assert _state(old) == _state(new)
    with pytest.warns(DeprecationWarning):
        ldp = LDPA3CConfig().count_based_exploration(
            count_exploration=settings, count_exploration_scope="env_runner"
        )
    assert ldp.count_exploration_config == settings and ldp.count_exploration_scope == "env_runner"


COUNT_EXPLORATION_CLASSES = (LDPA3CConfig, ExplorationPPOConfig, ExplorationDQNConfig)


def test_count_exploration_takes_the_same_keys_on_every_config() -> None:
    having = [cls for cls in CONFIG_CLASSES if "count_exploration" in cls.CONFIG_GROUPS]
    assert set(having) == set(COUNT_EXPLORATION_CLASSES)
    keywords = {
        cls.__name__: tuple(inspect.signature(cls.count_exploration).parameters) for cls in having
    }
    assert len(set(keywords.values())) == 1, keywords
    assert len({cls.CONFIG_GROUPS["count_exploration"] for cls in having}) == 1


@pytest.mark.parametrize(
    ("cls", "settings"),
    [
        (ExplorationPPOConfig, {"count_exploration_scope": "agent"}),
        (ExplorationDQNConfig, {"count_exploration_scope": "env_runner"}),
        (LDPA3CConfig, {"count_exploration_scope": "global"}),
        (LDPA3CConfig, {"count_exploration_flatten_observations": True}),
        (ExplorationPPOConfig, {"count_exploration_flatten_observations": "yes"}),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "-".join(map(str, v.values())),
)
def test_a_count_exploration_value_the_algorithm_does_not_support_is_rejected(
    cls: type, settings: dict[str, Any]
) -> None:
    (key,) = settings
    config = cls().count_exploration(count_exploration_config={}, **settings)
    validate = getattr(config, "validate_ldp_settings", None) or config.validate_count_exploration
    with pytest.raises(PrivacyConfigError, match=key):
        validate()
    if hasattr(cls, "validate_config_dict"):  # The check before Ray starts.
        with pytest.raises(PrivacyConfigError, match=key):
            cls.validate_config_dict(settings)


@pytest.mark.parametrize("cls", COUNT_EXPLORATION_CLASSES, ids=lambda c: c.__name__)
def test_config_state_saved_by_0_1_without_the_new_count_exploration_key_restores(
    cls: type,
) -> None:
    # 0.1.0 configs had two of the three count_exploration keys: a checkpoint's config state
    # written then restores with the new key at its default and validates.
    expected = cls().count_exploration(count_exploration_config={"num_bits": 16})
    state = expected.get_state()
    new = {LDPA3CConfig: "count_exploration_flatten_observations"}.get(cls)
    del state[new or "count_exploration_scope"]
    state["count_exploration"] = state.pop("count_exploration_config")
    restored = cls.from_state(state)
    assert {k: getattr(restored, k) for k in COUNT_EXPLORATION_KEYS} == {
        k: getattr(expected, k) for k in COUNT_EXPLORATION_KEYS
    }
    validate = getattr(restored, "validate_ldp_settings", None)
    (validate or restored.validate_count_exploration)()


def test_a_deprecation_warning_says_when_the_old_name_goes() -> None:
    # docs/versioning.md: a key renamed in 0.N warns throughout 0.(N+1) and goes in 0.(N+2);
    # the keys renamed in 0.1.0 go in the minor version after this one.
    major, minor, _ = (int(part) for part in rllib_privacy.__version__.split("."))
    assert OLD_NAMES_REMOVED_IN == f"{major}.{minor + 1}.0"
    with pytest.warns(DeprecationWarning, match=r"'epsilon'.*removed in 0\.3\.0"):
        LDPA3CConfig().update_from_dict({"epsilon": 2.0})
    with pytest.warns(DeprecationWarning, match=r"count_based_exploration.*removed in 0\.3\.0"):
        ExplorationPPOConfig().count_based_exploration(count_exploration={})


def test_old_and_new_name_together_are_rejected() -> None:
    with pytest.raises(PrivacyConfigError, match="'privacy_epsilon' twice.*'epsilon'"):
        LDPA3CConfig().update_from_dict({"privacy_epsilon": 1.0, "epsilon": 2.0})


def test_old_key_inside_evaluation_config_is_translated() -> None:
    with pytest.warns(DeprecationWarning, match="'epsilon'"):
        config = LDPA3CConfig().update_from_dict({"evaluation_config": {"epsilon": 3.0}})
    assert config.evaluation_config == {"privacy_epsilon": 3.0}


def test_config_state_saved_before_the_rename_restores_its_values() -> None:
    # AlgorithmConfig.from_state copies a checkpoint's config state into __dict__: an old
    # key would sit beside the new attribute's default (a resumed run with another ε).
    config = LDPA3CConfig().privacy(privacy_epsilon=4.0).aggregator(aggregator_max_buffer=7)
    state = config.get_state()
    state["epsilon"] = state.pop("privacy_epsilon")
    state["max_buffer"] = state.pop("aggregator_max_buffer")
    restored = LDPA3CConfig.from_state(state)
    assert (restored.privacy_epsilon, restored.aggregator_max_buffer) == (4.0, 7)
    assert "epsilon" not in vars(restored) and "max_buffer" not in vars(restored)


# --- unknown keys ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "typo", "suggestion"),
    [
        (LDPA3CConfig, "privacy_epsilonn", "privacy_epsilon"),
        (LDPA3CConfig, "epsilonn", "privacy_epsilon"),  # near an old name: the new one
        (LDPA3CConfig, "agregator_max_buffer", "aggregator_max_buffer"),
        (KickstartPPOConfig, "teacher_kk", "teacher_k"),
        (PATEPPOConfig, "pate_gama", "pate_gamma"),
        (PATEPPOConfig, "teacher_checkpointss", "pate_teacher_checkpoints"),
        (ExplorationPPOConfig, "count_exploration_confg", "count_exploration_config"),
    ],
)
def test_unknown_key_is_rejected_with_a_suggestion(cls: type, typo: str, suggestion: str) -> None:
    with pytest.raises(PrivacyConfigError) as info:
        cls().update_from_dict({typo: 1})
    message = str(info.value)
    assert f"'{typo}'" in message and f"did you mean '{suggestion}'" in message, message
    assert "docs/configuration.md" in message


# --- experiment files ------------------------------------------------------------------------


def _write(tmp_path: Path, run: str, config: dict[str, Any], env: str | None = None) -> Path:
    spec: dict[str, Any] = {"run": run, "stop": {"training_iteration": 1}, "config": config}
    if env:
        spec["env"] = env
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"exp": spec}))
    return path


LDPA3C_OLD = {
    "mechanism": "prs",
    "epsilon": 4.0,
    "clip": 0.5,
    "reduced_dim": 3,
    "debias": True,
    "max_buffer": 7,
    "submissions_per_iteration": 11,
    "loss_reduction": "mean",
    "eval_heldout_gravities": [9.5],
}


def test_old_keys_in_a_yaml_file_load_as_the_new_ones_with_one_notice_each(
    tmp_path: Path,
) -> None:
    from rllib_privacy.experiments import load_experiments

    renamed = LDPA3CConfig.legacy_config_keys()
    new = {renamed[k]: v for k, v in LDPA3C_OLD.items()}
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        old_file = load_experiments(_write(tmp_path, "LDPA3C", LDPA3C_OLD))
    assert not _deprecations(records)  # The loader translated them: one notice each.
    new_file = load_experiments(_write(tmp_path, "LDPA3C", new))
    assert old_file.experiments[0].param_space == new_file.experiments[0].param_space
    assert not new_file.notices
    for old, new_key in ((k, renamed[k]) for k in LDPA3C_OLD):
        lines = [n for n in old_file.notices if f"'{old}'" in n]
        assert len(lines) == 1 and f"'{new_key}'" in lines[0], old_file.notices
    config = LDPA3CConfig().update_from_dict(dict(old_file.experiments[0].param_space))
    assert config.privacy_epsilon == 4.0 and config.aggregator_max_buffer == 7


#: What each algorithm's experiment needs besides the key under test (valid together).
YAML_BASES: dict[type, tuple[str, dict[str, Any]]] = {
    LDPA3CConfig: ("LDPA3C", {"privacy_mechanism": "prs", "agents_per_env_runner": 2}),
    PATEPPOConfig: ("PATEPPO", {"pate_teacher_checkpoints": "/tmp/t"}),
    ExplorationPPOConfig: ("ExplorationPPO", {}),
    ExplorationDQNConfig: ("ExplorationDQN", {}),
}


@pytest.mark.parametrize(("cls", "old", "new"), LEGACY_CASES, ids=_ids)
def test_every_old_key_in_a_yaml_file_loads_as_its_new_key_with_one_notice(
    tmp_path: Path, cls: type, old: str, new: str
) -> None:
    from rllib_privacy.experiments import load_experiments

    run, base = YAML_BASES[cls]
    base = {k: v for k, v in base.items() if k != new}
    if new == "count_exploration_config":  # The fleet has no count bonus.
        base.pop("agents_per_env_runner", None)
    env = None if run == "LDPA3C" else "CartPole-v1"
    value = NEW_VALUES[new]
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        old_file = load_experiments(_write(tmp_path, run, {**base, old: value}, env=env))
    new_file = load_experiments(_write(tmp_path, run, {**base, new: value}, env=env))
    assert old_file.experiments[0].param_space == new_file.experiments[0].param_space
    assert not _deprecations(records) and not new_file.notices
    (notice,) = old_file.notices
    assert f"'{old}'" in notice and f"'{new}'" in notice, notice


def test_old_key_in_a_command_line_override_overrides_the_files_new_key(tmp_path: Path) -> None:
    from rllib_privacy.experiments import Overrides, load_experiments

    path = _write(tmp_path, "LDPA3C", {"privacy_epsilon": 4.0})
    loaded = load_experiments(path, overrides=Overrides(config={"epsilon": 2.0}))
    assert loaded.experiments[0].param_space["privacy_epsilon"] == 2.0
    assert "epsilon" not in loaded.experiments[0].param_space
    assert any("'epsilon'" in n and "'privacy_epsilon'" in n for n in loaded.notices)


def test_old_keys_of_the_other_algorithms_load_from_a_yaml_file(tmp_path: Path) -> None:
    from rllib_privacy.experiments import load_experiments

    pate = load_experiments(
        _write(tmp_path, "PATEPPO", {"teacher_checkpoints": "/tmp/t"}, env="CartPole-v1")
    )
    assert pate.experiments[0].param_space["pate_teacher_checkpoints"] == "/tmp/t"
    exploration = load_experiments(
        _write(
            tmp_path,
            "ExplorationPPO",
            {"count_exploration": {"num_bits": 16}, "flatten_observations": False},
            env="CartPole-v1",
        )
    )
    space = exploration.experiments[0].param_space
    assert space["count_exploration_config"] == {"num_bits": 16}
    assert space["count_exploration_flatten_observations"] is False
    assert len(exploration.notices) == 2


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"privacy_epsilonn": 1.0}, "'privacy_epsilonn'"),
        ({"privacy_epsilon": 1.0, "epsilon": 2.0}, "'privacy_epsilon' twice"),
        ({"count_exploration_config": {"betta": 0.1}}, "did you mean 'beta'"),
    ],
)
def test_bad_keys_in_a_yaml_file_are_rejected(
    tmp_path: Path, config: dict[str, Any], fragment: str
) -> None:
    from rllib_privacy.experiments import load_experiments

    with pytest.raises(ExperimentFileError, match=re.escape(fragment)):
        load_experiments(_write(tmp_path, "LDPA3C", config))


SHIPPED = sorted((REPO / "tuned_configs").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_yamls_use_only_current_key_names(path: Path) -> None:
    from ray.tune.registry import get_trainable_cls

    import rllib_privacy

    rllib_privacy.register()
    for name, spec in yaml.safe_load(path.read_text()).items():
        config_cls = type(get_trainable_cls(spec["run"]).get_default_config())
        legacy = getattr(config_cls, "legacy_config_keys", dict)()
        for where in ("config", "gpu_config"):
            keys = set(spec.get(where) or {})
            keys |= set((spec.get(where) or {}).get("evaluation_config") or {})
            assert not keys & set(legacy), (name, where, keys & set(legacy))


@pytest.mark.parametrize(
    "path",
    [p for p in SHIPPED if "teacher_checkpoint:" not in p.read_text()],
    ids=lambda p: p.name,
)
def test_shipped_yamls_load_with_no_deprecation_notice(path: Path) -> None:
    from rllib_privacy.experiments import load_experiments

    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        loaded = load_experiments(path)
    assert not _deprecations(records)
    assert not [n for n in loaded.notices if "renamed" in n or "deprecated" in n], loaded.notices


# --- the reference page ----------------------------------------------------------------------


@pytest.mark.parametrize("cls", CONFIG_CLASSES, ids=lambda c: c.__name__)
def test_reference_page_lists_every_key_and_old_name(cls: type) -> None:
    text = DOC.read_text()
    for key, group in cls.own_config_keys().items():
        assert f"`.{group}()`" in text, group
        assert re.search(rf"^\| `{key}` \|", text, re.M), key
    for old, new in cls.legacy_config_keys().items():
        row = re.search(rf"^\| `{new}` \|.*$", text, re.M)
        assert row and f"`{old}`" in row.group(0), (old, new)


def test_laplace_default_clip_is_unchanged() -> None:
    # A rename must not change what an untouched config does.
    config = LDPA3CConfig()
    assert config.effective_clip == 0.01 and config.effective_max_buffer == 1
    # ε = 1 per agent in all: the default private score takes 0.2 of it.
    score = config.get_score_mechanism()
    assert score is not None
    assert config.get_gradient_mechanism().epsilon + score.epsilon == 1.0
    assert math.isclose(config.privacy_shuffle_delta, 1e-6)


def test_exploration_learner_builds_its_bonus_from_the_renamed_key() -> None:
    # The learner read ``config.count_exploration``, which is now the builder method.
    import gymnasium as gym

    config = (
        ExplorationPPOConfig()
        .environment("CartPole-v1")
        .count_exploration(count_exploration_config={"num_bits": 8, "beta": 0.5})
    )
    learner = config.build_learner(env=gym.make("CartPole-v1"))
    assert learner.count_bonus is not None
    assert learner.count_bonus.exploration.spec.num_bits == 8
