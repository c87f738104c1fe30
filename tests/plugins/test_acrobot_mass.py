"""rllib_privacy/AcrobotMass-v0: Acrobot with private per-environment link masses."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rllib_privacy.envs import ACROBOT_MASS_ENV_ID, AcrobotMassEnv, register_envs
from rllib_privacy.errors import PrivacyConfigError


def test_masses_come_from_the_private_set_and_change_the_dynamics() -> None:
    register_envs()
    env = gym.make(ACROBOT_MASS_ENV_ID, link_mass_choices=[0.8, 1.2])
    acrobot = gym.make("Acrobot-v1")
    assert env.observation_space == acrobot.observation_space
    assert env.action_space == acrobot.action_space
    seen = set()
    for seed in range(40):
        env.reset(seed=seed)
        seen.add(env.unwrapped.LINK_MASS_1)
        assert env.unwrapped.LINK_MASS_2 == env.unwrapped.LINK_MASS_1
    assert seen == {0.8, 1.2}
    # Same start state and actions, different mass -> different trajectory.
    light = AcrobotMassEnv(link_mass_choices=[0.5])
    heavy = AcrobotMassEnv(link_mass_choices=[2.0])
    obs_light, _ = light.reset(seed=3)
    obs_heavy, _ = heavy.reset(seed=3)
    np.testing.assert_array_equal(obs_light, obs_heavy)
    for _ in range(10):
        obs_light, *_ = light.step(2)
        obs_heavy, *_ = heavy.step(2)
    assert not np.allclose(obs_light, obs_heavy)
    check_env(light, skip_render_check=True)


@pytest.mark.parametrize("bad", [[], [0.0], [-1.0], ["heavy"], [float("nan")]])
def test_bad_mass_choices_name_the_key(bad: list) -> None:
    with pytest.raises(PrivacyConfigError, match="link_mass_choices"):
        AcrobotMassEnv(link_mass_choices=bad)


def test_unknown_env_config_key_is_named() -> None:
    with pytest.raises(PrivacyConfigError, match="'link_mass'"):
        AcrobotMassEnv(link_mass=[1.0])


@pytest.mark.ray
@pytest.mark.slow
def test_shipped_acrobot_pate_yamls_train_one_iteration(ray_session, tmp_path) -> None:
    """Teacher and student YAMLs, as `rllib train` normalizes them, one tiny iteration each."""
    import copy
    from pathlib import Path

    from ray.tune.registry import get_trainable_cls
    from ray.tune.search.variant_generator import generate_variants

    from rllib_privacy.experiments import Overrides, load_experiments

    repo = Path(__file__).resolve().parents[2]
    tiny = {
        "train_batch_size_per_learner": 100,
        "minibatch_size": 50,
        "num_epochs": 1,
        "num_env_runners": 0,
    }

    def build(yaml_name: str, extra: dict):
        file = load_experiments(
            repo / "tuned_configs" / yaml_name, overrides=Overrides(config={**tiny, **extra})
        )
        experiment = file.experiments[0]
        variant = next(generate_variants(copy.deepcopy(experiment.config_for(False))))[1]
        algo_cls = get_trainable_cls(experiment.run)
        return algo_cls(config=algo_cls.get_default_config().update_from_dict(variant))

    checkpoints = []
    for mass in (0.8, 1.2):  # two teachers on disjoint private masses
        teacher = build("pate_teachers_acrobot.yaml", {"env_config": {"link_mass_choices": [mass]}})
        try:
            teacher.train()
            checkpoints.append(str(tmp_path / f"teacher_{mass}"))
            teacher.save_to_path(checkpoints[-1])
        finally:
            teacher.stop()
    student = build("pate_ppo_acrobot.yaml", {"teacher_checkpoints": checkpoints})
    try:
        result = student.train()
    finally:
        student.stop()
    assert result["pate"]["num_teachers"] == 2
    assert 0 < result["pate_queries"] <= 50
