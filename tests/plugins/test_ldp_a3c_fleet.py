"""LDPA3C's agent fleet without Ray: vectorized episodes, per-agent gradients, config.

The fleet (``agents_per_env_runner > 1``) must release, for every agent, exactly the
gradient the one-agent-at-a-time learner path would compute from that agent's own
episode(s), and nothing from any other agent's row or from padding.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns

import rllib_privacy.algorithms.ldp_a3c.fleet as fleet_mod
from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.fleet import (
    CARTPOLE_V0_MAX_STEPS,
    AgentFleet,
    FleetEpisodes,
    evaluation_gravities,
    greedy_evaluation,
    padded_value_targets,
    run_cartpole_episodes,
)
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c import LDPA3C
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_config import DEFAULT_HELDOUT_GRAVITIES
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_learner import (
    VALUE_TARGETS,
    discounted_value_targets,
)
from rllib_privacy.algorithms.ldp_a3c.score_tracker import SOLVED_WINDOW, ScoreTracker
from rllib_privacy.algorithms.ldp_a3c.torch.ldp_a3c_torch_learner import _clip, a3c_loss_parts
from rllib_privacy.envs.cartpole_gravity import PAPER_GRAVITY_CHOICES, CartPoleGravityVectorEnv
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms import GradientMechanism

OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACTION_SPACE = gym.spaces.Discrete(2)
PAPER_DIM = 4 * 16 + 16 * 2 + 16 * 1


# --------------------------------------------------------------------------- helpers


def _config(**training: Any) -> LDPA3CConfig:
    settings: dict[str, Any] = {"mechanism": "none", "epsilon": math.inf}
    settings.update(training)
    config = LDPA3CConfig().training(**settings)
    config.validate_ldp_settings()
    return config


def _module(*, seed: int = 0, controller: bool = False) -> Any:
    """The paper's network on CartPole; ``controller`` makes it a decent balancer.

    The controller (push right iff θ + θ̇ > 0, through two opposite ReLU units) gives a
    mix of truncated (200-step) and terminated episodes under random actions, so both
    bootstrap branches of the value targets are exercised.
    """
    spec = LDPA3CConfig().get_default_rl_module_spec()
    spec.observation_space, spec.action_space, spec.model_config = OBS_SPACE, ACTION_SPACE, {}
    torch.manual_seed(seed)
    module = spec.build()
    if controller:
        _make_controller(module)
    return module


def _make_controller(module: Any) -> None:
    with torch.no_grad():
        for p in module.parameters():
            p.mul_(0.1)
        weight = torch.tensor([0.0, 0.0, 10.0, 10.0])
        module._trunk[0].weight[0] = weight
        module._trunk[0].weight[1] = -weight
        module._pi_head.weight[1, 0] += 1.0
        module._pi_head.weight[1, 1] -= 1.0
        module._vf_head.weight.add_(0.5)  # a clearly non-zero bootstrap V(s_T)


def _fleet(config: LDPA3CConfig, module: Any, num_agents: int, *, seed: int = 0) -> AgentFleet:
    ids = itertools.count()
    return AgentFleet(
        module=module,
        config=config,
        num_agents=num_agents,
        new_agent_id=lambda: f"agent-{next(ids)}",
        env_seed_rng=np.random.default_rng(seed),
        explore_rng=np.random.default_rng(seed + 1),
        noise_rng=lambda: np.random.default_rng(seed + 2),
    )


class _Recorder:
    """Records every episode batch the fleet runs and every input to the mechanism."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.episodes: list[FleetEpisodes] = []
        self.gravities: list[np.ndarray] = []
        self.env_gravities: list[np.ndarray] = []
        self.mechanism_inputs: list[np.ndarray] = []
        real_run = fleet_mod.run_cartpole_episodes
        real_privatize = GradientMechanism.privatize_rows

        def run(env: Any, module: Any, **kwargs: Any) -> FleetEpisodes:
            episodes = real_run(env, module, **kwargs)
            self.episodes.append(episodes)
            self.gravities.append(np.array(kwargs["gravities"], dtype=np.float64))
            self.env_gravities.append(np.array(env.gravity, dtype=np.float64))
            return episodes

        def privatize_rows(mechanism: Any, grads: Any, rng: Any = None) -> Any:
            self.mechanism_inputs.append(np.array(grads, dtype=np.float64, copy=True))
            return real_privatize(mechanism, grads, rng)

        monkeypatch.setattr(fleet_mod, "run_cartpole_episodes", run)
        monkeypatch.setattr(GradientMechanism, "privatize_rows", privatize_rows)


def _episode(episodes: FleetEpisodes, i: int) -> dict[str, Any]:
    """Agent ``i``'s unpadded episode, as the one-agent learner path would see it."""
    length = int(episodes.lengths[i])
    return {
        "obs": episodes.obs[i, :length],
        "actions": episodes.actions[i, :length],
        "rewards": episodes.rewards[i, :length],
        "terminated": bool(episodes.terminated[i]),
        "last_obs": episodes.last_obs[i],
    }


def _value_targets(module: Any, episode: dict[str, Any], gamma: float) -> torch.Tensor:
    """LDPA3CEnvRunner._value_targets: bootstrap with V(s_T) unless terminated."""
    bootstrap = 0.0
    if not episode["terminated"]:
        with torch.no_grad():
            last = torch.as_tensor(episode["last_obs"], dtype=torch.float32)[None]
            bootstrap = float(module.compute_values({Columns.OBS: last})[0])
    return torch.as_tensor(
        discounted_value_targets(episode["rewards"], bootstrap_value=bootstrap, gamma=gamma)
    )


def _loss_parts(
    module: Any, config: LDPA3CConfig, episodes: list[dict[str, Any]], *, num_episodes: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """LDPA3CTorchLearner.compute_loss_for_module on the concatenated episodes."""
    obs = torch.as_tensor(np.concatenate([e["obs"] for e in episodes]), dtype=torch.float32)
    actions = torch.as_tensor(np.concatenate([e["actions"] for e in episodes]), dtype=torch.int64)
    targets = torch.cat([_value_targets(module, e, config.gamma) for e in episodes])
    batch = {Columns.OBS: obs, Columns.ACTIONS: actions}
    fwd_out = module.forward_train(batch)
    dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
    values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
    return a3c_loss_parts(
        logp=dist.logp(actions),
        entropy=dist.entropy(),
        values=values,
        targets=targets,
        config=config,
        num_episodes=num_episodes,
    )


def _flat_grad(loss: torch.Tensor, module: Any) -> torch.Tensor:
    params = list(module.parameters())
    grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return torch.cat(
        [
            (torch.zeros_like(p) if g is None else g).reshape(-1)
            for p, g in zip(params, grads, strict=True)
        ]
    )


def _reference_gradient(
    module: Any, config: LDPA3CConfig, episodes: list[dict[str, Any]]
) -> np.ndarray:
    """The learner path's pre-mechanism gradient of one agent (plain autograd).

    K episodes of ``loss_reduction: sum`` give the mean of their per-episode losses; of
    ``mean``, the mean over all their steps (one concatenated batch). Advantages are
    normalized (``normalize_advantages``) over all K episodes' steps of the agent.
    """
    if config.agents_loss_reduction == "sum":
        policy, value = _loss_parts(module, config, episodes, num_episodes=len(episodes))
    else:
        policy, value = _loss_parts(module, config, episodes)
    policy_grad, value_grad = _flat_grad(policy, module), _flat_grad(value, module)
    share = config.privacy_policy_clip_share
    if share is None:
        total = policy_grad + value_grad
    else:
        bound, norm = config.policy_clip
        total = _clip(policy_grad, bound=share * bound, norm=norm) + _clip(
            value_grad, bound=(1 - share) * bound, norm=norm
        )
    return total.detach().numpy().astype(np.float64)


def _assert_rows_close(got: np.ndarray, want: np.ndarray) -> None:
    scale = max(float(np.abs(want).max()), 1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


def _submit(fleet: AgentFleet, num: int, *, alpha: float = 0.3) -> list[Any]:
    return fleet.submit(weights_version=7, alpha=lambda made: alpha, num_submissions=num)


# --------------------------------------------------------------------------- value targets


@pytest.mark.parametrize("gamma", [0.0, 0.9, 0.99, 1.0])
@pytest.mark.parametrize("garbage_past_end", [False, True])
def test_padded_value_targets_equal_the_per_episode_targets(
    gamma: float, garbage_past_end: bool
) -> None:
    rng = np.random.default_rng(int(gamma * 100) + garbage_past_end)
    rows = 12
    lengths = rng.integers(1, 40, size=rows)
    lengths[0], lengths[1] = 1, 39  # the shortest and the longest row
    steps = int(lengths.max())
    rewards = rng.normal(size=(rows, steps)).astype(np.float32)
    past_end = np.arange(steps)[None, :] >= lengths[:, None]
    rewards[past_end] = rng.normal(size=past_end.sum()) * 100 if garbage_past_end else 0.0
    bootstrap = rng.normal(size=rows).astype(np.float32)
    bootstrap[::3] = 0.0  # terminal rows
    got = padded_value_targets(rewards, lengths, bootstrap, gamma=gamma)
    assert got.shape == (rows, steps) and got.dtype == np.float32
    for i in range(rows):
        want = discounted_value_targets(
            rewards[i, : lengths[i]], bootstrap_value=float(bootstrap[i]), gamma=gamma
        )
        np.testing.assert_allclose(got[i, : lengths[i]], want, rtol=1e-5, atol=1e-5)
        assert np.all(got[i, lengths[i] :] == 0.0)


# --------------------------------------------------------------------------- gradients


@pytest.mark.parametrize(
    ("loss_reduction", "episodes_per_submission", "normalize_advantages"),
    [
        ("sum", 1, False),
        ("mean", 1, False),
        ("sum", 2, False),
        ("mean", 2, False),
        ("sum", 1, True),
        ("mean", 2, True),
    ],
)
def test_fleet_gradient_of_each_agent_is_the_learner_path_gradient(
    monkeypatch: pytest.MonkeyPatch,
    loss_reduction: str,
    episodes_per_submission: int,
    normalize_advantages: bool,
) -> None:
    config = _config(
        loss_reduction=loss_reduction,
        episodes_per_submission=episodes_per_submission,
        normalize_advantages=normalize_advantages,
        agents_per_env_runner=6,
    )
    module = _module(controller=True)
    recorder = _Recorder(monkeypatch)
    out = _submit(_fleet(config, module, 6), 6, alpha=0.35)
    assert len(out) == 6 and len(recorder.episodes) == episodes_per_submission
    lengths = np.stack([e.lengths for e in recorder.episodes])
    terminated = np.stack([e.terminated for e in recorder.episodes])
    # Both bootstrap branches and different lengths are covered.
    assert terminated.any() and not terminated.all(), (lengths, terminated)
    assert len(set(lengths.ravel().tolist())) > 1
    for i, submission in enumerate(out):
        want = _reference_gradient(module, config, [_episode(e, i) for e in recorder.episodes])
        assert np.abs(want).max() > 0
        # mechanism "none": the release is the raw gradient row.
        _assert_rows_close(submission.gradient.astype(np.float64), want)
        _assert_rows_close(recorder.mechanism_inputs[0][i], want)


@pytest.mark.parametrize(
    ("mechanism", "clip", "loss_reduction"),
    [("laplace", 0.01, "sum"), ("laplace", 0.2, "mean"), ("privunitg", 0.05, "sum")],
)
@pytest.mark.parametrize("share", [0.3, 0.8])
def test_fleet_policy_clip_share_matches_the_learner_path(
    monkeypatch: pytest.MonkeyPatch, mechanism: str, clip: float, loss_reduction: str, share: float
) -> None:
    """The pre-mechanism (clipped) sums equal the learner's _part_clipped_gradients."""
    config = _config(
        mechanism=mechanism,
        epsilon=1.0,
        clip=clip,
        policy_clip_share=share,
        loss_reduction=loss_reduction,
        agents_per_env_runner=5,
    )
    module = _module(controller=True)
    recorder = _Recorder(monkeypatch)
    _submit(_fleet(config, module, 5), 5)
    (rows,) = recorder.mechanism_inputs
    bound, norm = config.policy_clip
    for i in range(5):
        want = _reference_gradient(module, config, [_episode(recorder.episodes[0], i)])
        _assert_rows_close(rows[i], want)
        assert np.linalg.norm(rows[i], ord=1 if norm == "l1" else 2) <= bound * (1 + 1e-5)


def test_fleet_row_equals_the_real_learner_compute_gradients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fleet on a local learner's module (as the EnvRunner builds it) vs. that learner."""
    config = _config(
        mechanism="laplace", epsilon=1.0, clip=0.05, policy_clip_share=0.4, agents_per_env_runner=4
    )
    learner = config.build_learner(spaces={DEFAULT_MODULE_ID: (OBS_SPACE, ACTION_SPACE)})
    module = learner.module[DEFAULT_MODULE_ID]
    _make_controller(module)
    recorder = _Recorder(monkeypatch)
    _submit(_fleet(config, module, 4), 4)
    (rows,) = recorder.mechanism_inputs
    for i in range(4):
        episode = _episode(recorder.episodes[0], i)
        batch = {
            Columns.OBS: torch.as_tensor(episode["obs"], dtype=torch.float32),
            Columns.ACTIONS: torch.as_tensor(episode["actions"], dtype=torch.int64),
            VALUE_TARGETS: _value_targets(module, episode, config.gamma),
        }
        batch = {DEFAULT_MODULE_ID: batch}
        fwd_out = learner.module.forward_train(batch)
        grads = learner.compute_gradients(learner.compute_losses(fwd_out=fwd_out, batch=batch))
        want = torch.cat([grads[learner.get_param_ref(p)].reshape(-1) for p in module.parameters()])
        _assert_rows_close(rows[i], want.detach().numpy().astype(np.float64))


@pytest.mark.parametrize(("mechanism", "epsilon"), [("none", math.inf), ("prs", 2.0)])
def test_fleet_policy_clip_share_with_non_l1_l2_mechanisms(
    monkeypatch: pytest.MonkeyPatch, mechanism: str, epsilon: float
) -> None:
    config = _config(
        mechanism=mechanism, epsilon=epsilon, policy_clip_share=0.5, agents_per_env_runner=3
    )
    module = _module(controller=True)
    recorder = _Recorder(monkeypatch)
    _submit(_fleet(config, module, 3), 3)
    (rows,) = recorder.mechanism_inputs
    for i in range(3):
        want = _reference_gradient(module, config, [_episode(recorder.episodes[0], i)])
        _assert_rows_close(rows[i], want)


def test_rows_do_not_leak_across_agents_or_from_padding(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(agents_per_env_runner=4)
    module = _module(controller=True)
    base_run = run_cartpole_episodes(
        CartPoleGravityVectorEnv(4, max_episode_steps=CARTPOLE_V0_MAX_STEPS),
        module,
        gravities=np.array([9.7, 9.8, 9.9, 9.8]),
        seed=3,
        sample=False,
        alpha=0.4,
        rng=np.random.default_rng(3),
    )
    other_run = run_cartpole_episodes(
        CartPoleGravityVectorEnv(4, max_episode_steps=CARTPOLE_V0_MAX_STEPS),
        _module(seed=5),
        gravities=np.full(4, 9.9),
        seed=11,
        sample=True,
        alpha=0.9,
        rng=np.random.default_rng(11),
    )

    def with_row(base: FleetEpisodes, j: int, src: FleetEpisodes, k: int) -> FleetEpisodes:
        """``base`` with row j replaced by ``src``'s row k (re-padded to the new width)."""
        lengths = base.lengths.copy()
        lengths[j] = src.lengths[k]
        steps = int(lengths.max())
        rng = np.random.default_rng(j)
        # Padded steps hold large garbage: they must not reach any gradient.
        obs = rng.normal(size=(4, steps, 4)).astype(np.float32) * 3
        actions = rng.integers(2, size=(4, steps))
        rewards = rng.normal(size=(4, steps)).astype(np.float32) * 50
        for i in range(4):
            episodes, row = (src, k) if i == j else (base, i)
            n = int(episodes.lengths[row])
            obs[i, :n], actions[i, :n] = episodes.obs[row, :n], episodes.actions[row, :n]
            rewards[i, :n] = episodes.rewards[row, :n]
        terminated, last_obs = base.terminated.copy(), base.last_obs.copy()
        terminated[j], last_obs[j] = src.terminated[k], src.last_obs[k]
        mask = (np.arange(steps)[None, :] < lengths[:, None]).astype(np.float32)
        return FleetEpisodes(obs, actions, rewards, mask, lengths, terminated, last_obs)

    variants = [base_run] + [
        with_row(base_run, j, other_run, k) for j in range(4) for k in range(4) if k != j
    ]
    # One variant is much longer and one much shorter than the base: the padded width changes.
    assert {int(v.lengths.max()) for v in variants} != {int(base_run.lengths.max())}
    queue = list(variants)
    monkeypatch.setattr(fleet_mod, "run_cartpole_episodes", lambda *a, **k: queue.pop(0))
    fleet = _fleet(config, module, 4)
    rows = [np.stack([s.gradient for s in _submit(fleet, 4)]) for _ in variants]
    assert not queue
    index = 1
    for j in range(4):
        for k in range(4):
            if k == j:
                continue
            changed = rows[index]
            index += 1
            assert not np.allclose(changed[j], rows[0][j]), (j, k)
            for i in range(4):
                if i != j:
                    np.testing.assert_allclose(changed[i], rows[0][i], rtol=1e-5, atol=1e-7)


def test_zero_signal_control_feeds_exact_zeros_to_the_mechanism(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorder = _Recorder(monkeypatch)
    for zero in (False, True):
        config = _config(
            mechanism="laplace", epsilon=1.0, zero_signal_control=zero, agents_per_env_runner=4
        )
        out = _submit(_fleet(config, _module(controller=True), 4), 6)
        assert len(out) == 6 and all(np.any(s.gradient != 0) for s in out)
    signal, control = recorder.mechanism_inputs[:2], recorder.mechanism_inputs[2:]
    assert [r.shape for r in control] == [(4, PAPER_DIM), (2, PAPER_DIM)]
    assert all(np.abs(r).max() > 0 for r in signal)
    assert all(np.all(r == 0.0) for r in control)


# --------------------------------------------------------------------------- rounds


def test_rounds_submissions_agents_gravities_scores_and_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    epsilon, rounds_per_agent, num_agents, k = 3.0, 3, 4, 2
    config = _config(
        mechanism="laplace",
        epsilon=epsilon,
        submissions_per_agent=rounds_per_agent,
        episodes_per_submission=k,
        agents_per_env_runner=num_agents,
    )
    # The paper's public score: the clear score and length are checked below (the
    # private score's fields: tests/plugins/test_ldp_a3c_private_scores.py).
    config.privacy(privacy_score_mechanism="public")
    recorder = _Recorder(monkeypatch)
    fleet = _fleet(config, _module(), num_agents)
    calls = [10, 10, 3, 8]
    out: list[Any] = []
    for num in calls:
        got = fleet.submit(weights_version=num, alpha=lambda made: 0.5, num_submissions=num)
        assert len(got) == num and all(s.weights_version == num for s in got)
        out.extend(got)
    assert len({(s.agent_id, s.agent_sequence) for s in out}) == len(out)
    assert all(s.epsilon == pytest.approx(epsilon / rounds_per_agent) for s in out)
    assert all(s.mechanism == "laplace" and s.gradient.shape == (PAPER_DIM,) for s in out)
    # Every round releases one row per agent in slot order; a call of n runs
    # ceil(n / num_agents) rounds of K episodes each.
    sizes = [min(num_agents, n - start) for n in calls for start in range(0, n, num_agents)]
    assert len(recorder.episodes) == k * len(sizes)
    gravity_of: dict[str, float] = {}
    sequences: dict[str, list[int]] = {}
    position = 0
    for r, size in enumerate(sizes):
        episodes = recorder.episodes[k * r : k * r + k]
        for e in recorder.env_gravities[k * r : k * r + k]:
            np.testing.assert_array_equal(e, recorder.env_gravities[k * r])
        env_gravity = recorder.env_gravities[k * r]
        for slot in range(size):
            s = out[position]
            position += 1
            sequences.setdefault(s.agent_id, []).append(s.agent_sequence)
            gravity = gravity_of.setdefault(s.agent_id, float(env_gravity[slot]))
            assert env_gravity[slot] == gravity  # the agent keeps its private gravity
            assert gravity in PAPER_GRAVITY_CHOICES
            lengths = [int(e.lengths[slot]) for e in episodes]
            assert s.score == pytest.approx(np.mean(lengths))
            assert s.env_steps == sum(lengths)
    assert position == len(out)
    for seq in sequences.values():
        # Numbered 1, 2, ... with no gaps; renewed after T releases.
        assert seq == list(range(1, len(seq) + 1)) and len(seq) <= rounds_per_agent
    assert max(len(seq) for seq in sequences.values()) == rounds_per_agent
    # Each agent's gravities differ across agents at least sometimes (a private draw).
    assert len(set(gravity_of.values())) > 1


def test_an_agent_submits_at_most_once_per_round(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(
        mechanism="laplace", epsilon=4.0, submissions_per_agent=4, agents_per_env_runner=3
    )
    recorder = _Recorder(monkeypatch)
    out = _submit(_fleet(config, _module(), 3), 12)
    assert len(recorder.episodes) == 4
    for r in range(4):
        agents = [s.agent_id for s in out[3 * r : 3 * r + 3]]
        assert (
            len(set(agents)) == 3
            and [s.agent_sequence for s in out[3 * r : 3 * r + 3]] == [r + 1] * 3
        )


# --------------------------------------------------------------------------- episodes


class _RecordingVectorEnv(CartPoleGravityVectorEnv):
    """Keeps the initial state of every reset, to replay it in single environments."""

    def reset(self, **kwargs: Any) -> Any:
        out = super().reset(**kwargs)
        self.initial_state = self.state.copy()
        return out


def test_run_cartpole_episodes_matches_single_gymnasium_cartpoles() -> None:
    gravities = np.array([9.7, 9.8, 9.9, 9.8, 9.7, 4.0, 15.0, 9.9, 9.8, 9.7, 9.8, 20.0])
    env = _RecordingVectorEnv(len(gravities), gravity_choices=(9.8,), max_episode_steps=200)
    seen_terminated = seen_truncated = False
    for seed, alpha in ((0, 0.3), (1, 0.0), (2, 1.0)):
        episodes = run_cartpole_episodes(
            env,
            _module(controller=True),
            gravities=gravities,
            seed=seed,
            sample=False,
            alpha=alpha,
            rng=np.random.default_rng(seed),
        )
        steps = int(episodes.lengths.max())
        assert episodes.obs.shape == (len(gravities), steps, 4)
        np.testing.assert_array_equal(
            episodes.mask, np.arange(steps)[None, :] < episodes.lengths[:, None]
        )
        for i, gravity in enumerate(gravities):
            length = int(episodes.lengths[i])
            single = CartPoleEnv()
            single.reset(seed=0)
            single.gravity = float(gravity)
            single.state = env.initial_state[:, i].copy()
            obs = np.array(single.state, dtype=np.float32)
            terminated = truncated = False
            for t in range(CARTPOLE_V0_MAX_STEPS):
                if t < length:
                    np.testing.assert_allclose(episodes.obs[i, t], obs, atol=1e-5, rtol=0)
                    assert episodes.rewards[i, t] == 1.0
                obs, reward, terminated, _, _ = single.step(int(episodes.actions[i, t]))
                truncated = t + 1 >= CARTPOLE_V0_MAX_STEPS  # CartPole-v0's TimeLimit
                if terminated or truncated:
                    break
            assert t + 1 == length, (i, gravity, t + 1, length)
            assert bool(episodes.terminated[i]) == terminated
            np.testing.assert_allclose(episodes.last_obs[i], obs, atol=1e-5, rtol=0)
            assert np.all(episodes.rewards[i, length:] == 0.0)
            seen_terminated |= terminated
            seen_truncated |= not terminated
            if not terminated:
                assert length == CARTPOLE_V0_MAX_STEPS
    assert seen_terminated and seen_truncated


def test_run_cartpole_episodes_uses_each_sub_environments_gravity() -> None:
    """Same seed (starts), same constant actions: only the gravities differ between runs."""
    module = _module()
    with torch.no_grad():
        for p in module.parameters():
            p.zero_()  # all logits 0: argmax always picks action 0
    env = CartPoleGravityVectorEnv(3, max_episode_steps=200)

    def run(gravities: list[float]) -> FleetEpisodes:
        return run_cartpole_episodes(
            env, module, gravities=np.array(gravities), seed=0, sample=False, alpha=0.0,
            rng=np.random.default_rng(0),
        )  # fmt: skip

    same, mixed = run([9.8, 9.8, 9.8]), run([1.0, 9.8, 50.0])
    assert np.all(mixed.actions[mixed.mask > 0] == 0)
    np.testing.assert_array_equal(env.gravity, [1.0, 9.8, 50.0])
    np.testing.assert_array_equal(mixed.obs[1], same.obs[1])
    assert mixed.lengths[1] == same.lengths[1]
    for i in (0, 2):
        n = min(mixed.lengths[i], same.lengths[i])
        # θ̇ after the first step already differs (gravity enters θ̈).
        assert not np.allclose(mixed.obs[i, 1:n, 3], same.obs[i, 1:n, 3])


# --------------------------------------------------------------------------- evaluation


def test_evaluation_gravities_split_half_heldout() -> None:
    train, heldout = PAPER_GRAVITY_CHOICES, DEFAULT_HELDOUT_GRAVITIES
    for episodes in (100, 7, 2, 1):
        gravities, is_heldout = evaluation_gravities(train, heldout, episodes)
        assert gravities.shape == is_heldout.shape == (episodes,)
        assert is_heldout.sum() == episodes // 2
        assert set(gravities[~is_heldout].tolist()) <= set(train)
        assert set(gravities[is_heldout].tolist()) <= set(heldout)
    gravities, is_heldout = evaluation_gravities(train, heldout, 100)
    assert set(gravities[~is_heldout].tolist()) == set(train)
    assert set(gravities[is_heldout].tolist()) == set(heldout)
    assert not set(gravities[is_heldout].tolist()) & set(train)
    gravities, is_heldout = evaluation_gravities(train, (), 10)
    assert not is_heldout.any() and set(gravities.tolist()) == set(train)


def test_greedy_evaluation_returns_are_episode_lengths() -> None:
    gravities, _ = evaluation_gravities(PAPER_GRAVITY_CHOICES, DEFAULT_HELDOUT_GRAVITIES, 40)
    for module, expect_all_solved in ((_module(seed=1), False), (_module(controller=True), True)):
        returns = greedy_evaluation(module, gravities=gravities, seed=5)
        assert returns.shape == (40,) and returns.dtype == np.float64
        assert np.all((returns >= 1) & (returns <= 200)) and np.all(returns == np.round(returns))
        np.testing.assert_array_equal(
            returns, greedy_evaluation(module, gravities=gravities, seed=5)
        )
        if expect_all_solved:
            assert np.all(returns == 200)
        else:
            assert returns.mean() < 200


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"agents_per_env_runner": 0}, "agents_per_env_runner"),
        ({"agents_per_env_runner": 1.5}, "agents_per_env_runner"),
        ({"agents_per_env_runner": True}, "agents_per_env_runner"),
        ({"agents_per_env_runner": "4"}, "agents_per_env_runner"),
        ({"agents_per_env_runner": 100_001}, "agents_per_env_runner"),
        ({"episodes_per_submission": 0}, "episodes_per_submission"),
        ({"episodes_per_submission": 2}, "episodes_per_submission"),
        ({"episodes_per_submission": 2, "agents_per_env_runner": 1}, "episodes_per_submission"),
        ({"eval_episodes": -1}, "eval_episodes"),
        ({"eval_episodes": 2.5}, "eval_episodes"),
        ({"shuffle_delta": 0}, "shuffle_delta"),
        ({"shuffle_delta": 0.0}, "shuffle_delta"),
        ({"shuffle_delta": 1.5}, "shuffle_delta"),
        ({"shuffle_delta": "x"}, "shuffle_delta"),
        ({"shuffle_delta": float("nan")}, "shuffle_delta"),
        ({"shuffle_delta": True}, "shuffle_delta"),
        ({"zero_signal_control": 1}, "zero_signal_control"),
        ({"zero_signal_control": "true"}, "zero_signal_control"),
        ({"zero_signal_control": None}, "zero_signal_control"),
        ({"normalize_advantages": 1}, "normalize_advantages"),
        ({"normalize_advantages": "false"}, "normalize_advantages"),
    ],
)
def test_bad_fleet_settings_name_the_key(settings: dict, key: str) -> None:
    config = LDPA3CConfig().training(**settings)  # old keywords: still accepted
    key = LDPA3CConfig.legacy_config_keys().get(key, key)  # messages name the new key
    with pytest.raises(PrivacyConfigError, match=f"'{key}'"):
        config.validate_ldp_settings()


@pytest.mark.parametrize("heldout", [[], [0.0], [-9.8], [float("nan")], "x", [True], ["9.8"]])
def test_bad_eval_heldout_gravities_are_rejected(heldout: Any) -> None:
    config = LDPA3CConfig().training(eval_heldout_gravities=heldout)
    with pytest.raises(PrivacyConfigError):
        config.validate_ldp_settings()


def test_bad_eval_heldout_gravities_message_names_the_key() -> None:
    config = LDPA3CConfig().training(eval_heldout_gravities=[])
    with pytest.raises(PrivacyConfigError, match="'scoring_eval_heldout_gravities'"):
        config.validate_ldp_settings()


def test_scalar_eval_heldout_gravity_accepted_by_validation_works_in_evaluation() -> None:
    config = LDPA3CConfig().training(eval_heldout_gravities=9.8, eval_episodes=4)
    config.validate_ldp_settings()  # accepted

    class _Algo:
        iteration = 0

        def __init__(self) -> None:
            self.config = config

        def _on_learner(self, func: Any, **kwargs: Any) -> np.ndarray:
            return greedy_evaluation(_module(), gravities=kwargs["gravities"], seed=kwargs["seed"])

    metrics = LDPA3C._evaluation_metrics(_Algo())  # type: ignore[arg-type]
    assert "ldp/eval_return_mean_heldout_gravities" in metrics


def test_fleet_needs_cartpole_gravity_and_no_count_exploration() -> None:
    config = LDPA3CConfig().environment("CartPole-v1").training(agents_per_env_runner=4)
    with pytest.raises(PrivacyConfigError, match="'agents_per_env_runner'.*CartPoleGravity"):
        config.validate_ldp_settings()
    # The one-agent path still accepts another env.
    LDPA3CConfig().environment("CartPole-v1").validate_ldp_settings()
    config = (
        LDPA3CConfig()
        .training(agents_per_env_runner=4)
        .count_based_exploration(count_exploration={"beta": 0.01})
    )
    with pytest.raises(PrivacyConfigError, match="'count_exploration_config'"):
        config.validate_ldp_settings()
    # Each alone is fine.
    LDPA3CConfig().count_based_exploration(count_exploration={}).validate_ldp_settings()
    good = LDPA3CConfig().training(
        agents_per_env_runner=4,
        episodes_per_submission=3,
        zero_signal_control=True,
        eval_episodes=0,
        eval_heldout_gravities=[9.5, 10.5],
        shuffle_delta=1e-9,
        normalize_advantages=True,
    )
    good.validate_ldp_settings()


# --------------------------------------------------------------------------- solved_at


def _brute_force_solved_at(scores: list[float], target: float) -> int | None:
    for n in range(SOLVED_WINDOW, len(scores) + 1):
        if sum(scores[n - SOLVED_WINDOW : n]) / SOLVED_WINDOW >= target:
            return n
    return None


def test_solved_at_needs_a_full_window_of_100() -> None:
    tracker = ScoreTracker(target=195.0)
    for _ in range(SOLVED_WINDOW - 1):
        tracker.add(200.0, 200)
    assert tracker.solved_at is None
    tracker.add(195.0, 195)  # exactly the target: reached
    assert tracker.solved_at == SOLVED_WINDOW
    for _ in range(300):
        tracker.add(0.0, 1)
    assert tracker.solved_at == SOLVED_WINDOW  # never changes afterwards
    # The paper's FST (window 10) was reached much earlier; solved_at is not the FST.
    assert tracker.fst == 1


def test_solved_at_is_the_first_full_window_reaching_the_target() -> None:
    rng = np.random.default_rng(0)
    scores = list(rng.uniform(0, 120, size=150)) + [200.0] * 60 + list(rng.uniform(0, 200, 300))
    scores = [float(round(s)) for s in scores]
    tracker = ScoreTracker(target=150.0)
    history = []
    for s in scores:
        tracker.add(s, int(s))
        history.append(tracker.solved_at)
    want = _brute_force_solved_at(scores, 150.0)
    assert want is not None and want > SOLVED_WINDOW
    assert tracker.solved_at == want
    assert history[: want - 1] == [None] * (want - 1)
    assert set(history[want - 1 :]) == {want}


def test_solved_at_survives_state_dict_and_old_checkpoints_load_as_none() -> None:
    scores = [10.0] * 50 + [200.0] * 200
    whole = ScoreTracker(target=195.0)
    for s in scores:
        whole.add(s, int(s))
    assert whole.solved_at == _brute_force_solved_at(scores, 195.0)
    # Interrupted before, restored, continued: the same solved_at.
    for cut in (20, 140, 160, 250):
        first = ScoreTracker(target=195.0)
        for s in scores[:cut]:
            first.add(s, int(s))
        resumed = ScoreTracker(target=195.0)
        resumed.load_state_dict(first.state_dict())
        assert resumed.solved_at == first.solved_at
        for s in scores[cut:]:
            resumed.add(s, int(s))
        assert resumed.state_dict() == whole.state_dict()
    old = whole.state_dict()
    del old["solved_at"]  # a checkpoint from before solved_at existed
    loaded = ScoreTracker(target=195.0)
    loaded.load_state_dict(old)
    assert loaded.solved_at is None
    assert loaded.submissions == whole.submissions and loaded.fst == whole.fst


class _ModuleOnAnotherDevice(torch.nn.Module):
    """A stand-in for a learner's module on a GPU: parameters on ``meta``, logits real."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(2, 4, device="meta"))
        self.devices_seen: list[torch.device] = []

    def _forward_inference(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = batch[Columns.OBS]
        self.devices_seen.append(obs.device)
        return {Columns.ACTION_DIST_INPUTS: torch.zeros(obs.shape[0], 2)}


def test_episodes_send_observations_to_the_modules_device() -> None:
    """The greedy evaluation runs the learner's module, which sits on a GPU when
    num_gpus_per_learner > 0: observations must go to its device (on an H200 they did not,
    and the first evaluation failed with "Expected all tensors to be on the same device")."""
    module = _ModuleOnAnotherDevice()
    episodes = run_cartpole_episodes(
        CartPoleGravityVectorEnv(3, max_episode_steps=CARTPOLE_V0_MAX_STEPS),
        module,
        gravities=np.full(3, 9.8),
        seed=0,
        sample=False,
        alpha=0.0,
        rng=np.random.default_rng(0),
    )
    assert module.devices_seen and set(module.devices_seen) == {torch.device("meta")}
    assert episodes.lengths.min() >= 1
