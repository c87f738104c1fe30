"""Property tests (hypothesis): bad experiment files and config values get a clear error.

Every algorithm in ``ALGORITHM_NAMES`` and every nested settings dict
(``count_exploration_config``, the envs' ``env_config``) is fed, through the same in-process
validation that ``rllib train -f FILE`` runs before Ray starts:

* misspelled keys (random edits of a valid key that are not valid themselves): the error
  names the bad key and suggests one;
* wrong-typed or out-of-range values for every own key: either the value is valid and
  reaches the config object unchanged, or the error is ours and names the key;
* malformed experiment files: exit code 2, ``error: FILE: ...`` naming the key, no
  traceback, and Ray never starts.

The own keys are derived from the config classes (their grouped builder methods' keys, see
docs/configuration.md, and ``training()`` arguments the RLlib base class lacks), so that
keys added later are covered without editing this file.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import json
import math
import re
import string
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.dqn import DQNConfig
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.tune.registry import get_trainable_cls

from rllib_privacy._registration import ALGORITHM_NAMES
from rllib_privacy.algorithms.config_keys import allowed_config_keys
from rllib_privacy.cli import rllib_main
from rllib_privacy.envs import (
    ACROBOT_MASS_ENV_ID,
    ATARI_PIXELS_ENV_ID,
    ATARI_RAM_ENV_ID,
    CARTPOLE_GRAVITY_ENV_ID,
    INSTANCE_LAPLACE_ENV_ID,
)
from rllib_privacy.envs.instance_laplace import ENV_CONFIG_KEYS as ILM_KEYS
from rllib_privacy.errors import ExperimentFileError
from rllib_privacy.experiments import (
    CONFIG_KEY_ALIASES,
    EXPERIMENT_KEYS,
    LEGACY_CONFIG_KEYS,
    normalize_experiments,
    registered_algorithms,
)
from rllib_privacy.exploration import ExplorationSpec

#: Deterministic, bounded runs (the whole file stays well under a minute).
FAST = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

#: Per-key properties run once per key: fewer draws each (NASTY_VALUES always run too).
PER_KEY = settings(FAST, max_examples=10)

#: The RLlib classes our config classes extend: their keys are RLlib's, not ours.
RLLIB_BASES = (PPOConfig, DQNConfig, AlgorithmConfig)

#: Env settings of the envs this package ships (validated before Ray starts).
ENV_CONFIG_KEYS = {
    INSTANCE_LAPLACE_ENV_ID: tuple(ILM_KEYS),
    CARTPOLE_GRAVITY_ENV_ID: ("gravity_choices",),
    ACROBOT_MASS_ENV_ID: ("link_mass_choices",),
}

#: Every env whose env_config is checked before Ray starts, with its allowed keys: ours
#: (by their ENV_CONFIG_HOOKS) and a gymnasium id (by its constructor's arguments).
MISSPELLABLE_ENV_CONFIG_KEYS = {
    **ENV_CONFIG_KEYS,
    ATARI_RAM_ENV_ID: ("game", "scale"),
    ATARI_PIXELS_ENV_ID: ("game", "framestack"),
    "CartPole-v1": (
        "sutton_barto_reward",
        "render_mode",
        "max_episode_steps",
        "disable_env_checker",
        "autoreset",
    ),
}

#: Values nobody should be able to sneak into a config unnoticed.
BAD_VALUES = st.one_of(
    st.text(alphabet=string.ascii_letters + string.digits + " -_", max_size=8),
    st.none(),
    st.sampled_from([math.nan, math.inf, -math.inf, 0, 0.0, -1, -0.5, 10**30, True, False, "1e-5"]),
    st.integers(min_value=-(10**6), max_value=-1),
    st.floats(min_value=-1e6, max_value=-1e-9),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2),
)


#: Values where an experiment file needs a mapping.
NOT_A_MAPPING = st.one_of(st.lists(st.integers(), max_size=2), st.text(max_size=5), st.integers())


#: The same, but not null (which means "the default" for an optional mapping).
NOT_A_MAPPING_NOR_NULL = st.one_of(NOT_A_MAPPING, st.booleans(), st.floats(allow_nan=False))


#: Checked for every own key on top of hypothesis's draws (which may miss one of them).
NASTY_VALUES = (
    math.nan,
    math.inf,
    -math.inf,
    -1,
    0,
    True,
    False,
    None,
    "",
    "x",
    "1e-5",
    [],
    {},
    10**30,
)


def with_nasty_examples(test: Callable[..., None]) -> Callable[..., None]:
    """Run ``test`` (a ``@given(value=...)`` test) on every NASTY_VALUES value too."""
    for value in NASTY_VALUES:
        test = example(value=value)(test)
    return test


def own_training_keys(algo_name: str) -> tuple[str, ...]:
    """Keys a config class adds to its RLlib base (group methods' and ``training()`` args)."""
    config_cls = type(get_trainable_cls(algo_name).get_default_config())
    base = next(c for c in config_cls.__mro__ if c in RLLIB_BASES)
    own = set(inspect.signature(config_cls.training).parameters)
    own -= set(inspect.signature(base.training).parameters) | {"self", "kwargs"}
    own |= set(config_cls.own_config_keys())
    return tuple(sorted(own))


def _teacher_module_dir() -> str:
    """A saved CartPole RLModule: KickstartPPO's validation loads its spaces."""
    path = Path(tempfile.mkdtemp(prefix="badinput-teacher-")) / "module"
    env = gym.make("CartPole-v1")
    spec = PPOConfig().get_default_rl_module_spec()
    spec.observation_space, spec.action_space = env.observation_space, env.action_space
    spec.model_config = DefaultModelConfig(fcnet_hiddens=[4])
    spec.build().save_to_path(str(path))
    env.close()
    return str(path)


_TEACHER_DIR: list[str] = []


def base_experiment(algo_name: str) -> dict[str, Any]:
    """A minimal experiment that validates; properties then break one thing in it."""
    spec: dict[str, Any] = {"run": algo_name, "stop": {"training_iteration": 1}, "config": {}}
    if algo_name == "KickstartPPO":
        if not _TEACHER_DIR:
            _TEACHER_DIR.append(_teacher_module_dir())
        spec["env"] = "CartPole-v1"
        spec["config"]["teacher_checkpoint"] = _TEACHER_DIR[0]
    elif algo_name == "PATEPPO":
        # Whether teacher folders exist is checked when the algorithm starts.
        spec["env"] = CARTPOLE_GRAVITY_ENV_ID
        spec["config"]["pate_teacher_checkpoints"] = "/nonexistent/pate-teachers"
    elif algo_name != "LDPA3C":  # LDPA3C defaults to the CartPole gravity env.
        spec["env"] = "CartPole-v1"
    return spec


def validate(spec: Mapping[str, Any]) -> Any:
    """What ``rllib train -f`` runs before Ray starts, for a one-experiment file."""
    return normalize_experiments({"exp": copy.deepcopy(dict(spec))}, path="bad.yaml")


def assert_names(error: BaseException, *names: str) -> None:
    """The error is ours (a typed experiment-file error) and names every ``names``."""
    assert isinstance(error, ExperimentFileError), f"{type(error).__name__}: {error}"
    message = str(error)
    assert message.startswith("bad.yaml: "), message
    for name in names:
        # The name as a word of its own: 'epsilon' must not match 'pate_epsilon_budget'.
        pattern = rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])"
        assert re.search(pattern, message), f"{name!r} not named in: {message}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def assert_used(key: str, default: Any, value: Any, got: Any) -> None:
    """An accepted value must reach the config unchanged and have a sensible type."""
    if _is_number(value) and _is_number(got):  # Stored as a float is fine.
        assert float(got) == float(value), f"{key}={value!r} accepted, config holds {got!r}"
    else:
        assert got == value, f"{key}={value!r} was accepted but the config holds {got!r}"
    if isinstance(value, float):
        assert not math.isnan(value), f"{key}: NaN accepted"
    if isinstance(default, bool):
        assert isinstance(value, bool), f"{key}: non-bool {value!r} accepted for a flag"
    else:
        assert not isinstance(value, bool), f"{key}: bool {value!r} accepted, not a flag"
    if _is_number(default) and isinstance(value, str):
        float(value)  # Only a number written as a string may pass for a number.


@st.composite
def misspelling(draw: st.DrawFn, keys: tuple[str, ...], allowed: frozenset[str]) -> tuple:
    """``(key, typo)``: one or two random edits of ``key`` that no longer name a key."""
    key = draw(st.sampled_from(keys))
    typo = key
    edits = draw(st.integers(1, 2))
    for _ in range(edits):
        op = draw(st.sampled_from(["delete", "insert", "replace", "swap"]))
        pos = draw(st.integers(0, max(len(typo) - 1, 0)))
        char = draw(st.sampled_from(string.ascii_lowercase + "_"))
        if op == "delete" and len(typo) > 1:
            typo = typo[:pos] + typo[pos + 1 :]
        elif op == "insert":
            typo = typo[:pos] + char + typo[pos:]
        elif op == "replace":
            typo = typo[:pos] + char + typo[pos + 1 :]
        elif op == "swap" and pos + 1 < len(typo):
            typo = typo[:pos] + typo[pos + 1] + typo[pos] + typo[pos + 2 :]
    assume(typo not in allowed and not (typo.startswith("__") and typo.endswith("__")))
    return key, typo, edits


def assert_typo_rejected(spec: Mapping[str, Any], key: str, typo: str, edits: int) -> None:
    """``spec`` (with ``typo`` in it) is rejected naming the typo; one edit gets a hint."""
    with pytest.raises(ExperimentFileError) as info:
        validate(spec)
    assert_names(info.value, typo)
    if edits == 1 and len(key) >= 4:
        assert "did you mean" in str(info.value), str(info.value)


def _top_level_allowed(algo_name: str) -> frozenset[str]:
    default = get_trainable_cls(algo_name).get_default_config()
    return allowed_config_keys(default) | set(LEGACY_CONFIG_KEYS) | set(CONFIG_KEY_ALIASES)


# --- (a) misspelled keys -----------------------------------------------------------------


@pytest.mark.parametrize("algo_name", ALGORITHM_NAMES)
def test_every_algorithm_has_own_keys_that_its_config_accepts(algo_name: str) -> None:
    own = own_training_keys(algo_name)
    assert own, algo_name
    assert set(own) <= _top_level_allowed(algo_name)
    validate(base_experiment(algo_name))  # The base of every property validates.


@pytest.mark.parametrize("algo_name", ALGORITHM_NAMES)
@FAST
@given(data=st.data())
def test_misspelled_config_key_is_named_with_a_suggestion(algo_name: str, data: Any) -> None:
    allowed = _top_level_allowed(algo_name)
    # Own keys, and a few of RLlib's that every YAML uses.
    keys = (*own_training_keys(algo_name), "num_env_runners", "train_batch_size_per_learner")
    key, typo, edits = data.draw(misspelling(keys, allowed))
    spec = base_experiment(algo_name)
    spec["config"][typo] = 1
    assert_typo_rejected(spec, key, typo, edits)


@pytest.mark.parametrize("algo_name", ["ExplorationPPO", "ExplorationDQN"])
@FAST
@given(data=st.data())
def test_misspelled_count_exploration_key_is_named(algo_name: str, data: Any) -> None:
    keys = ExplorationSpec.keys()
    key, typo, edits = data.draw(misspelling(keys, frozenset(keys)))
    spec = base_experiment(algo_name)
    spec["config"]["count_exploration_config"] = {typo: 1}
    assert_typo_rejected(spec, key, typo, edits)


@pytest.mark.parametrize("env_id", sorted(MISSPELLABLE_ENV_CONFIG_KEYS))
@FAST
@given(data=st.data())
def test_misspelled_env_config_key_is_named_before_ray_starts(env_id: str, data: Any) -> None:
    keys = MISSPELLABLE_ENV_CONFIG_KEYS[env_id]
    key, typo, edits = data.draw(misspelling(keys, frozenset(keys)))
    spec = base_experiment("ExplorationDQN")
    spec["env"] = env_id
    spec["config"]["env_config"] = {typo: 1}
    assert_typo_rejected(spec, key, typo, edits)


@pytest.mark.parametrize("env_id", sorted(MISSPELLABLE_ENV_CONFIG_KEYS))
@FAST
@given(env_config=NOT_A_MAPPING_NOR_NULL)
def test_env_config_that_is_not_a_mapping_is_named(env_id: str, env_config: Any) -> None:
    spec = base_experiment("ExplorationDQN")
    spec["env"] = env_id
    spec["config"]["env_config"] = env_config
    with pytest.raises(ExperimentFileError) as info:
        validate(spec)
    assert_names(info.value, "env_config")


# --- (b) wrong-typed and out-of-range values ---------------------------------------------

OWN_KEY_CASES = [(algo, key) for algo in ALGORITHM_NAMES for key in own_training_keys(algo)]


@pytest.mark.parametrize(("algo_name", "key"), OWN_KEY_CASES)
@PER_KEY
@given(value=BAD_VALUES)
@with_nasty_examples
def test_bad_value_of_own_key_is_rejected_naming_it_or_used(
    algo_name: str, key: str, value: Any
) -> None:
    check_own_key_value(algo_name, key, value)


def check_own_key_value(algo_name: str, key: str, value: Any) -> None:
    """Rejected naming ``key``, or accepted and held by the config as given."""
    algo_cls = get_trainable_cls(algo_name)
    default = getattr(algo_cls.get_default_config(), key)
    spec = base_experiment(algo_name)
    spec["config"][key] = value
    try:
        experiments = validate(spec)
    except ExperimentFileError as e:
        assert_names(e, key)
        return
    config = algo_cls.get_default_config()
    config.update_from_dict(copy.deepcopy(experiments.experiments[0].param_space))
    got = getattr(config, key)
    if key == "count_exploration_config":  # Stored as given; ExplorationSpec reads it.
        assert got == value or (value is None and got == {}), got
        config.get_exploration_spec()
        return
    if key == "teacher_checkpoint":  # Made absolute before Tune moves the trial.
        value = got if isinstance(value, str) else value
    assert_used(key, default, value, got)


SPEC_DEFAULTS = ExplorationSpec()


@pytest.mark.parametrize("key", ExplorationSpec.keys())
@PER_KEY
@given(value=BAD_VALUES)
@with_nasty_examples
def test_bad_count_exploration_value_is_rejected_naming_it_or_used(key: str, value: Any) -> None:
    spec = base_experiment("ExplorationPPO")
    spec["config"]["count_exploration_config"] = {key: value}
    try:
        validate(spec)
    except ExperimentFileError as e:
        assert_names(e, f"count_exploration_config.{key}")
        return
    got = getattr(ExplorationSpec.from_dict({key: value}), key)
    expected = tuple(value) if isinstance(value, list) else value
    assert_used(key, getattr(SPEC_DEFAULTS, key), expected, got)


ENV_CONFIG_CASES = [(env, key) for env, keys in sorted(ENV_CONFIG_KEYS.items()) for key in keys]


def _env_config_reader(env_id: str) -> Callable[[dict[str, Any]], Any]:
    """Builds the env from a validated env_config and reads the settings it holds."""
    if env_id == INSTANCE_LAPLACE_ENV_ID:
        from rllib_privacy.envs.instance_laplace import parse_settings

        return parse_settings
    from ray.tune.registry import ENV_CREATOR, _global_registry

    return lambda env_config: _global_registry.get(ENV_CREATOR, env_id)(env_config).unwrapped


@pytest.mark.parametrize(("env_id", "key"), ENV_CONFIG_CASES)
@PER_KEY
@given(value=BAD_VALUES)
@with_nasty_examples
def test_bad_env_config_value_is_rejected_naming_it_or_used(
    env_id: str, key: str, value: Any
) -> None:
    spec = base_experiment("ExplorationDQN")
    spec["env"] = env_id
    spec["config"]["env_config"] = {key: value}
    try:
        experiments = validate(spec)
    except ExperimentFileError as e:
        assert_names(e, key)
        return
    env_config = experiments.experiments[0].param_space["env_config"]
    got = getattr(_env_config_reader(env_id)(env_config), key)
    if key == "data_path":  # Made absolute before Tune moves the trial (and must exist).
        return
    if isinstance(got, tuple) and not isinstance(value, tuple):
        # Lists become tuples of floats; one number is a list of one.
        expected = tuple(value) if isinstance(value, list) else (value,)
        assert not any(isinstance(v, bool) for v in expected), got
        assert got == tuple(float(v) for v in expected), got
        return
    default = getattr(_env_config_reader(env_id)({}), key)
    assert_used(key, default, value, got)


LDP_GRADIENT = {"name": "laplace", "epsilon": 1.0, "clip": 1.0}


def _ldp_gradient_experiment(ldp_gradient: dict[str, Any]) -> dict[str, Any]:
    """Stock PPO with the privatizer mixin's settings (read when the learner is built)."""
    return {
        "run": "PPO",
        "env": "CartPole-v1",
        "config": {"learner_config_dict": {"ldp_gradient": ldp_gradient}},
    }


@FAST
@given(data=st.data())
def test_misspelled_ldp_gradient_key_is_named_before_ray_starts(data: Any) -> None:
    keys = (*LDP_GRADIENT, "reduced_dim", "debias")
    _, typo, _ = data.draw(misspelling(keys, frozenset(keys)))
    with pytest.raises(ExperimentFileError) as info:
        validate(_ldp_gradient_experiment({**LDP_GRADIENT, typo: 1}))
    assert_names(info.value, "ldp_gradient", typo)


@pytest.mark.parametrize("field", ["name", "epsilon", "clip", "reduced_dim", "debias"])
@PER_KEY
@given(value=BAD_VALUES)
@with_nasty_examples
def test_bad_ldp_gradient_value_is_rejected_naming_it_or_used(field: str, value: Any) -> None:
    from rllib_privacy.mechanisms import GradientMechanism

    try:
        experiments = validate(_ldp_gradient_experiment({**LDP_GRADIENT, field: value}))
    except ExperimentFileError as e:
        assert_names(e, "ldp_gradient", field)
        return
    learner_config = experiments.experiments[0].param_space["learner_config_dict"]
    got = getattr(GradientMechanism.from_dict(learner_config["ldp_gradient"]), field)
    if _is_number(value) and _is_number(got):  # Stored as a float.
        assert float(got) == float(value) and math.isfinite(float(value)), (field, value)
        return
    assert_used(field, GradientMechanism(**LDP_GRADIENT).__dict__[field], value, got)


# --- (c) malformed experiment files --------------------------------------------------------


@contextlib.contextmanager
def _ray_must_not_start(monkeypatch: pytest.MonkeyPatch):
    import ray

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("validation must not start Ray")

    monkeypatch.setattr(ray, "init", refuse)
    yield


def run_cli_on(text: str, *args: str, suffix: str = ".yaml") -> tuple[int, str, str]:
    """``rllib train -f FILE --dry-run ARGS`` in this process; returns (code, stderr, path)."""
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
        f.write(text)
        path = f.name
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = rllib_main(["train", "-f", path, "--dry-run", "--ray-num-gpus", "0", *args])
    Path(path).unlink()
    return code, err.getvalue(), path


def assert_usage_error(code: int, err: str, path: str, *fragments: str) -> None:
    assert code == 2, err
    assert err.startswith(f"error: {path}: "), err
    assert "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in: {err}"


def experiment_text(**changes: Any) -> str:
    spec = base_experiment("LDPA3C")
    spec["config"] = {"num_env_runners": 0}
    spec.update(changes)
    return yaml.safe_dump({"exp": spec})


@pytest.fixture(autouse=True)
def _no_ray(monkeypatch: pytest.MonkeyPatch):
    with _ray_must_not_start(monkeypatch):
        yield


JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
)


@FAST
@given(top=st.one_of(JSON_SCALARS, st.lists(JSON_SCALARS, max_size=3), st.just({})))
def test_top_level_that_is_not_a_mapping_is_rejected(top: Any) -> None:
    code, err, path = run_cli_on(yaml.safe_dump(top))
    assert_usage_error(code, err, path)
    assert "mapping" in err or "empty" in err, err


@FAST
@given(key=st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=12))
def test_unknown_experiment_key_is_named(key: str) -> None:
    assume(key not in EXPERIMENT_KEYS)
    code, err, path = run_cli_on(experiment_text(**{key: 1}))
    assert_usage_error(code, err, path, f"unknown key {key!r}", "experiment 'exp'")


@FAST
@given(
    stop=st.one_of(
        NOT_A_MAPPING,
        st.dictionaries(
            st.sampled_from(["training_iteration", "timesteps_total", "env_runners/x"]),
            st.one_of(
                st.text(max_size=4),
                st.none(),
                st.just(math.nan),
                st.booleans(),
                st.lists(st.integers(), max_size=2),
                st.dictionaries(st.just("a"), st.integers(), max_size=1),
            ),
            min_size=1,
            max_size=2,
        ),
    )
)
def test_bad_stop_is_rejected_naming_stop(stop: Any) -> None:
    code, err, path = run_cli_on(experiment_text(stop=stop))
    assert_usage_error(code, err, path, "stop")


def _known_stop_keys() -> frozenset[str]:
    from rllib_privacy.experiments import TOP_LEVEL_RESULT_KEYS

    return frozenset(TOP_LEVEL_RESULT_KEYS) | set(get_trainable_cls("LDPA3C").TOP_LEVEL_RESULT_KEYS)


@FAST
@given(data=st.data())
def test_misspelled_stop_key_is_rejected_with_a_suggestion(data: Any) -> None:
    # Tune only logs a warning for a stop key its results lack, and the trial runs on.
    from rllib_privacy.experiments import LEGACY_METRIC_KEYS

    known = _known_stop_keys()
    keys = tuple(sorted(k for k in known if len(k) >= 6))
    _, typo, _ = data.draw(misspelling(keys, known | set(LEGACY_METRIC_KEYS)))
    code, err, path = run_cli_on(experiment_text(stop={typo: 1}))
    assert_usage_error(code, err, path, f"stop key {typo!r}", "did you mean")


@FAST
@given(key=st.text(alphabet="qxz_", min_size=3, max_size=8))
def test_stop_key_far_from_any_result_key_gets_a_notice(key: str) -> None:
    code, err, _ = run_cli_on(experiment_text(stop={key: 1}))
    assert code == 0, err
    assert f"stop key {key!r} is not a top-level result key" in err, err


CHECKPOINT_KEYS = ["checkpoint_frequency", "checkpoint_at_end", "num_to_keep"]


@FAST
@given(
    checkpoint_config=st.one_of(
        NOT_A_MAPPING,
        st.dictionaries(
            st.sampled_from(CHECKPOINT_KEYS), BAD_VALUES.filter(lambda v: v is not None), min_size=1
        ),
    )
)
def test_bad_checkpoint_config_is_rejected_naming_the_key(checkpoint_config: Any) -> None:
    code, err, path = run_cli_on(experiment_text(checkpoint_config=checkpoint_config))
    if not isinstance(checkpoint_config, dict):
        assert_usage_error(code, err, path, "checkpoint_config")
        return
    valid = {
        "checkpoint_frequency": lambda v: _is_int(v) and v >= 0,
        "checkpoint_at_end": lambda v: isinstance(v, bool),
        "num_to_keep": lambda v: _is_int(v) and v >= 1,
    }
    bad = [k for k, v in checkpoint_config.items() if not valid[k](v)]
    if not bad:
        assert code == 0, err
        return
    assert code == 2, err
    assert_usage_error(code, err, path, "checkpoint_config")
    assert any(k in err for k in bad), err


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@FAST
@given(num_samples=BAD_VALUES.filter(lambda v: not (_is_int(v) and v >= 1)))
def test_bad_num_samples_is_rejected(num_samples: Any) -> None:
    code, err, path = run_cli_on(experiment_text(num_samples=num_samples))
    assert_usage_error(code, err, path, "num_samples")


@FAST
@given(run=st.one_of(st.text(alphabet=string.ascii_letters + "_-", max_size=10), BAD_VALUES))
def test_unknown_algorithm_is_rejected_naming_run(run: Any) -> None:
    assume(not (isinstance(run, str) and run in registered_algorithms()))
    code, err, path = run_cli_on(experiment_text(run=run))
    assert_usage_error(code, err, path, "'run'")


@FAST
@given(
    env=st.one_of(
        # A prefix no module has: resolving an env may import a 'module.Class' path.
        st.text(alphabet=string.ascii_letters + "-/:.", max_size=10).map(lambda s: "NoSuch" + s),
        BAD_VALUES.filter(lambda v: v is not None),
    )
)
def test_unknown_env_is_rejected_naming_env(env: Any) -> None:
    code, err, path = run_cli_on(experiment_text(env=env))
    assert_usage_error(code, err, path, "env")


JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2)
    ),
    max_leaves=4,
)


@FAST
@given(
    option=st.sampled_from(["--stop", "--config"]),
    value=st.one_of(
        st.text(max_size=12),  # Mostly not JSON at all.
        JSON_VALUES.map(json.dumps),
        st.dictionaries(
            st.sampled_from([*own_training_keys("LDPA3C"), "training_iteraton", "lr"]),
            BAD_VALUES.filter(lambda v: not (isinstance(v, float) and math.isnan(v))),
            min_size=1,
            max_size=2,
        ).map(json.dumps),
    ),
)
def test_bad_command_line_override_is_a_usage_error(option: str, value: str) -> None:
    code, err, path = run_cli_on(experiment_text(), option, value)
    if code == 0:
        return  # A valid override (e.g. {} or a valid value).
    assert code == 2, err
    assert err.startswith("error: "), err
    assert "Traceback" not in err, err
    assert option in err or path in err, err


def draw_rejected_value(algo_name: str, data: Any) -> tuple[str, Any]:
    """An own key and a value for it that the experiment's config rejects."""
    key = data.draw(st.sampled_from(own_training_keys(algo_name)))
    value = data.draw(BAD_VALUES)
    spec = base_experiment(algo_name)
    spec["config"][key] = value
    try:
        validate(spec)
    except ExperimentFileError:
        return key, value
    assume(False)  # A valid value: nothing to find.
    raise AssertionError("unreachable")


@pytest.mark.parametrize("placement", ["grid_search", "evaluation_config"])
@pytest.mark.parametrize("algo_name", ALGORITHM_NAMES)
@FAST
@given(data=st.data())
def test_rejected_value_is_named_in_a_grid_search_and_in_evaluation_config(
    placement: str, algo_name: str, data: Any
) -> None:
    key, value = draw_rejected_value(algo_name, data)
    spec = base_experiment(algo_name)
    if placement == "grid_search":  # Every variant is built and validated.
        valid = spec["config"].get(key, getattr(_default_config(algo_name), key))
        spec["config"][key] = {"grid_search": [valid, value]}
        names: tuple[str, ...] = ("variant 2 of 2", key)
    else:  # Evaluation EnvRunners get the config with evaluation_config merged in.
        spec["config"]["evaluation_config"] = {key: value}
        names = ("evaluation_config", key)
    with pytest.raises(ExperimentFileError) as info:
        validate(spec)
    assert_names(info.value, *names)


def _default_config(algo_name: str) -> Any:
    return get_trainable_cls(algo_name).get_default_config()


VALID_FILE = experiment_text()


@FAST
@given(
    position=st.integers(0, len(VALID_FILE)),
    junk=st.text(alphabet=":{}[]'\"&*!|>%@`\t\n -#", min_size=1, max_size=3),
)
def test_corrupted_yaml_never_crashes(position: int, junk: str) -> None:
    text = VALID_FILE[:position] + junk + VALID_FILE[position:]
    code, err, path = run_cli_on(text)
    if code == 0:
        return  # The edit left a valid file (e.g. a comment).
    assert_usage_error(code, err, path)


@FAST
@given(line=st.integers(0, VALID_FILE.count("\n") - 1))
def test_duplicate_key_is_rejected_with_its_line(line: int) -> None:
    lines = VALID_FILE.splitlines(keepends=True)
    assume(not lines[line].lstrip().startswith("- "))  # A list item is no key.
    text = "".join(lines[: line + 1] + [lines[line]] + lines[line + 1 :])
    code, err, path = run_cli_on(text)
    key = lines[line].strip().split(":")[0]
    assert_usage_error(code, err, path, f"duplicate key {key!r}", f"line {line + 2}")


# --- rllib-privacy tools ---------------------------------------------------------------------

NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e308", "1e200", "-0", "0", "abc", ""]),
)


@FAST
@given(
    gamma=NUMBER_TEXT,
    delta=NUMBER_TEXT,
    max_order=st.integers(-3, 10**9).map(str),
    queries=st.integers(-3, 10**6).map(str),
)
def test_pate_epsilon_tool_never_crashes_on_bad_options(
    gamma: str, delta: str, max_order: str, queries: str
) -> None:
    from rllib_privacy.cli import tools_main

    err = io.StringIO()
    argv = ["pate-epsilon", "--queries", queries, "--gamma", gamma, "--delta", delta]
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = tools_main([*argv, "--max-order", max_order])
    assert code in (0, 2), err.getvalue()
    if code == 2:
        assert "error: " in err.getvalue() and "Traceback" not in err.getvalue()


# --- regression tests: one per bug these properties found ---------------------------------

REGRESSIONS = [
    # CartPoleGravity/AcrobotMass env_config was only checked inside an EnvRunner (also for
    # LDPA3C's default env, which the experiment does not name).
    ("LDPA3C", {"env_config": {"gravity_choice": [9.8]}}, ("gravity_choice", "did you mean")),
    ("LDPA3C", {"env_config": {"gravity_choices": "98"}}, ("gravity_choices",)),
    ("LDPA3C", {"env_config": {"gravity_choices": [True]}}, ("gravity_choices",)),
    # ExplorationSpec: non-list primes/ae_hidden crashed; key_function was ignored.
    (
        "ExplorationPPO",
        {"count_exploration_config": {"primes": None}},
        ("count_exploration_config.primes",),
    ),
    (
        "ExplorationPPO",
        {"count_exploration_config": {"ae_hidden": ""}},
        ("count_exploration_config.ae_hidden",),
    ),
    (
        "ExplorationPPO",
        {"count_exploration_config": {"key_function": "m:f"}},
        ("count_exploration_config.key_function",),
    ),
    (
        "ExplorationPPO",
        {"count_exploration_config": {"key_function_kwargs": {"a": 1}}},
        ("count_exploration_config.key_function_kwargs",),
    ),
    # LDPA3C accepted numbers written as strings, which then reached the loss.
    ("LDPA3C", {"entropy_coeff": "0.01"}, ("entropy_coeff",)),
    # KickstartPPO: η >= 1/m failed in the teacher actor; bool seed; unbounded MC samples.
    ("KickstartPPO", {"teacher_eta": 0.6, "teacher_tau": 0.001}, ("teacher_eta",)),
    ("KickstartPPO", {"teacher_seed": True}, ("teacher_seed",)),
    ("KickstartPPO", {"teacher_delta_samples": 10**12}, ("teacher_delta_samples",)),
    # PATEPPO: -inf passed the budget check (as "no limit") and failed in the ledger,
    # naming 'epsilon_budget'; a huge moment order failed with "Maximum allowed size".
    ("PATEPPO", {"pate_epsilon_budget": -math.inf}, ("'pate_epsilon_budget'",)),
    # ... and a huge γ overflowed the accountant: an OverflowError traceback, no key.
    ("PATEPPO", {"pate_gamma": 1e154}, ("'pate_gamma'",)),
    ("PATEPPO", {"pate_max_order": 10**30}, ("pate_max_order",)),
    # ILM: a list dataset was a TypeError (unhashable) without the key.
    (
        "ExplorationDQN",
        {"env": INSTANCE_LAPLACE_ENV_ID, "env_config": {"dataset": []}},
        ("dataset",),
    ),
    # env_config that is no mapping failed without the key (ILM) or only in Ray (gymnasium
    # ids); a gymnasium env's constructor got unknown env_config keys inside every EnvRunner.
    ("ExplorationDQN", {"env": INSTANCE_LAPLACE_ENV_ID, "env_config": [1]}, ("'env_config'",)),
    ("ExplorationDQN", {"env_config": {"anything": 1}}, ("'anything'",)),
    ("ExplorationDQN", {"env": ATARI_RAM_ENV_ID, "env_config": {"gmae": "x"}}, ("'gmae'",)),
    # evaluation_config values were applied only when evaluation started, inside Ray.
    (
        "LDPA3C",
        {"evaluation_config": {"privacy_epsilon": -1.0}},
        ("evaluation_config", "'privacy_epsilon'"),
    ),
    # The privatizer mixin's settings were read only when the learner was built.
    ("PPO", {"learner_config_dict": {"ldp_gradient": {"name": "lap"}}}, ("ldp_gradient",)),
]


@pytest.mark.parametrize(("algo_name", "config", "fragments"), REGRESSIONS)
def test_regression_bad_value_is_named_before_ray_starts(
    algo_name: str, config: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    if algo_name == "PPO":
        spec: dict[str, Any] = {"run": "PPO", "env": "CartPole-v1", "config": {}}
    else:
        spec = base_experiment(algo_name)
    config = dict(config)
    if "env" in config:
        spec["env"] = config.pop("env")
    spec["config"].update(config)
    with pytest.raises(ExperimentFileError) as info:
        validate(spec)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        # Tune only warns about a stop key its results lack, and the trial never stops.
        ({"stop": {"training_iteraton": 2}}, ("'training_iteraton'", "did you mean")),
        # Tune's CheckpointConfig took "yes" as a flag and failed on "5" without the key.
        ({"checkpoint_config": {"checkpoint_at_end": "yes"}}, ("checkpoint_at_end",)),
        ({"checkpoint_config": {"checkpoint_frequency": "5"}}, ("checkpoint_frequency",)),
    ],
)
def test_regression_bad_experiment_key_is_named(
    change: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    code, err, path = run_cli_on(experiment_text(**change))
    assert_usage_error(code, err, path, *fragments)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        # An OverflowError traceback; and a huge order exhausted the memory.
        (["--gamma", "1e200"], "--gamma"),
        (["--gamma", "0.1", "--max-order", "1000000000"], "--max-order"),
    ],
)
def test_regression_pate_epsilon_tool_names_the_option(options: list[str], fragment: str) -> None:
    from rllib_privacy.cli import tools_main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = tools_main(["pate-epsilon", "--queries", "10", "--delta", "1e-5", *options])
    assert code == 2 and fragment in err.getvalue(), err.getvalue()


def test_regression_yaml_exponent_without_dot_is_a_float() -> None:
    # PyYAML (YAML 1.1) read `lr: 1e-5` as the string "1e-5", which failed inside Ray.
    text = experiment_text().replace("num_env_runners: 0", "num_env_runners: 0\n    lr: 1e-5")
    assert "lr: 1e-5" in text
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    from rllib_privacy.experiments import load_experiments

    experiment = load_experiments(f.name).experiments[0]
    Path(f.name).unlink()
    assert experiment.param_space["lr"] == 1e-5
    assert isinstance(experiment.param_space["lr"], float)
