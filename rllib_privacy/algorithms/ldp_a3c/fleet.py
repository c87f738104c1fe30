"""A fleet of LDPA3C local agents simulated together in one EnvRunner.

On a real deployment every local agent is its own process or device. Simulating them one
episode at a time (``agents_per_env_runner: 1``) spends most of its time in Python per
step and per gradient. A fleet runs ``agents_per_env_runner`` agents in lockstep: one
vectorized CartPole (``CartPoleGravityVectorEnv``, each sub-environment with its agent's
private gravity), one batched forward pass per step, and per-agent gradients computed
together with ``torch.func.vmap`` over padded episodes. Each agent's episode and gradient
stay in that agent's row (slot) of the batch; the row is clipped and privatized by the
mechanism before anything is put into a ``GradientSubmission``
(docs/components/ldp-a3c.md#what-it-protects). Rows never mix: vmap computes each agent's gradient
from its own row only, and the mechanism privatizes each row as one release with independent noise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns

from rllib_privacy.algorithms.ldp_a3c.attacks import poison_rows
from rllib_privacy.algorithms.ldp_a3c.score_release import score_fields
from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission
from rllib_privacy.algorithms.ldp_a3c.torch.ldp_a3c_torch_learner import a3c_loss_parts
from rllib_privacy.envs.cartpole_gravity import CartPoleGravityVectorEnv
from rllib_privacy.mechanisms import GradientMechanism
from rllib_privacy.mechanisms.clipping import clip_rows

#: CartPole-v0's episode limit (the paper's maximum score).
CARTPOLE_V0_MAX_STEPS = 200


@dataclass
class FleetAgent:
    """One local agent of a fleet slot: its id, private gravity and release count."""

    agent_id: str
    gravity: float
    submissions: int = 0
    #: Simulation only (``agents_malicious_fraction``): sends ``poison_rows``' attack report.
    malicious: bool = False


@dataclass
class FleetEpisodes:
    """Padded episodes of a fleet round: row i is agent i's, never mixed with others.

    Arrays are ``(num_agents, num_steps, ...)``; ``mask`` is 1 on real steps.
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray
    terminated: np.ndarray
    last_obs: np.ndarray


class _PolicyAndValue(torch.nn.Module):
    """(logits, V) of an RLModule with RLlib's ValueFunctionAPI, for torch.func."""

    def __init__(self, rl_module: Any) -> None:
        super().__init__()
        self.rl_module = rl_module

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.rl_module._forward_train({Columns.OBS: obs})
        values = self.rl_module.compute_values(
            {Columns.OBS: obs}, embeddings=out.get(Columns.EMBEDDINGS)
        )
        return out[Columns.ACTION_DIST_INPUTS], values


def select_actions(
    logits: np.ndarray,
    *,
    sample: bool,
    alpha: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Sampled (softmax) or argmax actions, each replaced by a random one w.p. α."""
    num, num_actions = logits.shape
    if sample:
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        cdf = np.cumsum(shifted, axis=1)
        u = rng.random((num, 1)) * cdf[:, -1:]
        actions = (u > cdf).sum(axis=1).clip(0, num_actions - 1)
    else:
        actions = logits.argmax(axis=1)
    if alpha > 0.0:
        explore = rng.random(num) < alpha
        actions = np.where(explore, rng.integers(num_actions, size=num), actions)
    return actions.astype(np.int64)


def run_cartpole_episodes(
    env: CartPoleGravityVectorEnv,
    module: Any,
    *,
    gravities: np.ndarray,
    seed: int | None,
    sample: bool,
    alpha: float,
    rng: np.random.Generator,
) -> FleetEpisodes:
    """Runs one episode in every sub-environment of ``env``, in lockstep, until all end.

    Args:
        env: The vectorized environment (one sub-environment per agent).
        module: The RLModule whose ``forward_inference`` gives action logits.
        gravities: One private gravity per sub-environment.
        seed: Reset seed of the vectorized environment (None: continue its generator).
        sample: Sample actions from the policy (else argmax).
        alpha: Probability of a uniformly random action at each step.
        rng: Generator of the action choices.

    Returns:
        The padded episodes.

    """
    num, max_steps = env.num_envs, env.max_episode_steps
    assert env.single_observation_space.shape is not None  # the fleet's envs: Box observations
    obs_dim = int(np.prod(env.single_observation_space.shape))
    obs_buf = np.zeros((max_steps, num, obs_dim), dtype=np.float32)
    actions_buf = np.zeros((max_steps, num), dtype=np.int64)
    rewards_buf = np.zeros((max_steps, num), dtype=np.float32)
    lengths = np.zeros(num, dtype=np.int64)
    done = np.zeros(num, dtype=bool)
    terminated = np.zeros(num, dtype=bool)
    last_obs = np.zeros((num, obs_dim), dtype=np.float32)
    obs, _ = env.reset(seed=seed)
    env.set_gravities(gravities)
    # The learner's module may sit on a GPU (num_gpus_per_learner > 0): the observations go
    # to its device and the logits come back to the CPU.
    device = next(module.parameters()).device
    for t in range(max_steps):
        with torch.no_grad():
            # _forward_inference: forward_inference() would toggle eval() on every step.
            logits = module._forward_inference({Columns.OBS: torch.from_numpy(obs).to(device)})[
                Columns.ACTION_DIST_INPUTS
            ]
        actions = select_actions(logits.cpu().numpy(), sample=sample, alpha=alpha, rng=rng)
        active = ~done
        obs_buf[t] = obs
        actions_buf[t] = actions
        obs, reward, term, trunc, _ = env.step(actions)
        rewards_buf[t] = np.where(active, reward, 0.0)
        lengths += active
        ended = active & (term | trunc)
        terminated |= ended & term
        last_obs[ended] = obs[ended]
        done |= ended
        if done.all():
            break
    steps = int(lengths.max())
    mask = (np.arange(steps)[None, :] < lengths[:, None]).astype(np.float32)
    return FleetEpisodes(
        obs=np.ascontiguousarray(obs_buf[:steps].transpose(1, 0, 2)),
        actions=np.ascontiguousarray(actions_buf[:steps].T),
        rewards=np.ascontiguousarray(rewards_buf[:steps].T),
        mask=mask,
        lengths=lengths,
        terminated=terminated,
        last_obs=last_obs,
    )


def padded_value_targets(
    rewards: np.ndarray, lengths: np.ndarray, bootstrap: np.ndarray, *, gamma: float
) -> np.ndarray:
    """V̂_t of every row: Σ_{j≥t} γ^{j−t} r_j + γ^{T−t}·V(s_T) up to the row's length T.

    Args:
        rewards: ``(rows, steps)`` rewards, 0 past each row's length.
        lengths: ``(rows,)`` episode lengths T.
        bootstrap: ``(rows,)`` V(s_T): 0 at a terminal state.
        gamma: Discount γ.

    Returns:
        ``(rows, steps)`` float32 targets (0 past each row's length).

    """
    rows, steps = rewards.shape
    targets = np.zeros((rows, steps), dtype=np.float64)
    following = np.asarray(bootstrap, dtype=np.float64).copy()
    for t in range(steps - 1, -1, -1):
        # Past the end, the value that follows step T−1 is the bootstrap V(s_T).
        following = np.where(t + 1 < lengths, following, bootstrap)
        following = rewards[:, t] + gamma * following
        targets[:, t] = following
    targets *= np.arange(steps)[None, :] < lengths[:, None]
    return targets.astype(np.float32)


class AgentFleet:
    """``num_agents`` LDPA3C local agents of one EnvRunner, simulated together.

    Args:
        module: The EnvRunner's RLModule (weights set by the caller before each round).
        config: The LDPA3CConfig.
        num_agents: Agents simulated at once (``agents_per_env_runner``).
        new_agent_id: Returns a fresh, unique agent id.
        env_seed_rng: Generator of reset seeds (None: unseeded).
        explore_rng: Generator of the action choices and of private gravities.
        noise_rng: Returns a fresh noise generator for one round's releases.

    """

    def __init__(
        self,
        *,
        module: Any,
        config: Any,
        num_agents: int,
        new_agent_id: Callable[[], str],
        env_seed_rng: np.random.Generator | None,
        explore_rng: np.random.Generator,
        noise_rng: Callable[[], np.random.Generator],
    ) -> None:
        self._module = module
        self._config = config
        self._new_agent_id = new_agent_id
        self._env_seed_rng = env_seed_rng
        self._explore_rng = explore_rng
        self._noise_rng = noise_rng
        self._env = CartPoleGravityVectorEnv(
            num_agents,
            gravity_choices=(config.env_config or {}).get("gravity_choices", (9.7, 9.8, 9.9)),
            max_episode_steps=CARTPOLE_V0_MAX_STEPS,
        )
        self._slots: list[FleetAgent | None] = [None] * num_agents
        self._mechanism: GradientMechanism = config.get_gradient_mechanism()
        # None: the score leaves in the clear (the paper's setting).
        self._score_mechanism = config.get_score_mechanism()
        self._wrapper = _PolicyAndValue(module)
        names = [name for name, _ in self._wrapper.named_parameters()]
        self._per_agent_gradients = torch.func.vmap(
            torch.func.jacrev(self._loss_parts, argnums=0), in_dims=(None, 0, 0, 0, 0)
        )
        self._param_names = names

    @property
    def num_agents(self) -> int:
        """Agents simulated at once."""
        return self._env.num_envs

    def _loss_parts(
        self,
        params: dict[str, torch.Tensor],
        obs: torch.Tensor,
        actions: torch.Tensor,
        targets: torch.Tensor,
        mask: torch.Tensor,
    ) -> torch.Tensor:
        """[policy part, value part] of ONE agent's loss (vmap maps it over agents)."""
        logits, values = torch.func.functional_call(self._wrapper, params, (obs,))
        logp_all = torch.log_softmax(logits, dim=-1)
        logp = logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        policy, value = a3c_loss_parts(
            logp=logp,
            entropy=entropy,
            values=values,
            targets=targets,
            config=self._config,
            mask=mask,
            num_episodes=self._config.agents_episodes_per_submission,
        )
        return torch.stack([policy, value])

    def _agents(self, count: int) -> list[FleetAgent]:
        """The agents of the first ``count`` slots; a slot whose agent is done gets a new one."""
        limit = self._config.agents_submissions_per_agent
        stale = [i for i in range(count) if (a := self._slots[i]) is None or a.submissions >= limit]
        if stale:
            gravities = self._env.draw_gravities(self._explore_rng, size=len(stale))
            fraction = float(self._config.agents_malicious_fraction)
            # Drawn only in a simulated attack, so honest runs keep their random streams.
            malicious = (
                self._explore_rng.random(len(stale)) < fraction
                if fraction > 0.0
                else np.zeros(len(stale), dtype=bool)
            )
            for i, gravity, bad in zip(stale, gravities, malicious, strict=True):
                self._slots[i] = FleetAgent(
                    self._new_agent_id(), float(gravity), malicious=bool(bad)
                )
        return [agent for agent in self._slots[:count] if agent is not None]

    def submit(
        self, *, weights_version: int, alpha: Callable[[int], float], num_submissions: int
    ) -> list[GradientSubmission]:
        """Runs rounds of the fleet until ``num_submissions`` releases are made.

        Args:
            weights_version: Version of the weights loaded in the module (echoed back).
            alpha: The random-action probability for a given number of submissions made
                in this call (the aggregator's count is added by the caller).
            num_submissions: How many releases to return.

        Returns:
            One GradientSubmission per agent and round.

        """
        out: list[GradientSubmission] = []
        self._module.eval()
        while len(out) < num_submissions:
            count = min(self.num_agents, num_submissions - len(out))
            out.extend(self._round(self._agents(count), weights_version, alpha(len(out))))
        return out

    def _round(
        self, agents: list[FleetAgent], weights_version: int, alpha: float
    ) -> Iterator[GradientSubmission]:
        config, count = self._config, len(agents)
        gravities = np.array([a.gravity for a in agents])
        # Sub-environments past ``count`` run too (one vectorized step for all) but their
        # episodes are discarded: they belong to no agent and are never released.
        padded = np.resize(gravities, self.num_agents)
        episodes = [
            run_cartpole_episodes(
                self._env,
                self._module,
                gravities=padded,
                seed=None
                if self._env_seed_rng is None
                else int(self._env_seed_rng.integers(2**31 - 1)),
                sample=config.agents_action_selection == "sample",
                alpha=alpha,
                rng=self._explore_rng,
            )
            for _ in range(config.agents_episodes_per_submission)
        ]
        obs, actions, targets, mask = self._training_tensors(episodes, count)
        params = {name: p.detach() for name, p in self._wrapper.named_parameters()}
        jacobians = self._per_agent_gradients(params, obs, actions, targets, mask)
        # (agents, 2, d): row i = agent i's [policy-part, value-part] gradient.
        parts = torch.cat(
            [jacobians[name].reshape(count, 2, -1) for name in self._param_names], dim=2
        )
        gradients = self._clipped_sum(parts.detach().numpy().astype(np.float64))
        if config.privacy_zero_signal_control:
            # The no-signal control: what the mechanism's noise alone does to θ.
            gradients = np.zeros_like(gradients)
        noise = self._noise_rng()
        released = self._mechanism.privatize_rows(gradients, noise)
        released = poison_rows(
            gradients,
            np.asarray(released, dtype=np.float32),
            [agent.malicious for agent in agents],
            mechanism=self._mechanism,
            attack=config.agents_malicious_attack,
        )
        scores = np.mean([e.lengths[:count] for e in episodes], axis=0)
        steps = np.sum([e.lengths[:count] for e in episodes], axis=0)
        # Each agent's score is privatized here, with its own draw: no clear score leaves.
        score_fields_ = score_fields(self._score_mechanism, scores, steps, noise)
        epsilon = float(self._mechanism.epsilon_per_release)
        for i, agent in enumerate(agents):
            agent.submissions += 1
            yield GradientSubmission(
                agent_id=agent.agent_id,
                gradient=released[i],
                epsilon=epsilon,
                mechanism=self._mechanism.name,
                weights_version=int(weights_version),
                agent_sequence=agent.submissions,
                **score_fields_[i],
            )

    def _training_tensors(
        self, episodes: list[FleetEpisodes], count: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each agent's K episodes side by side along time, with value targets."""
        obs, actions, targets, mask = [], [], [], []
        for e in episodes:
            bootstrap = np.zeros(count, dtype=np.float32)
            truncated = ~e.terminated[:count]
            if truncated.any():
                with torch.no_grad():
                    values = self._module.compute_values(
                        {Columns.OBS: torch.from_numpy(e.last_obs[:count][truncated])}
                    )
                bootstrap[truncated] = values.numpy()
            targets.append(
                padded_value_targets(
                    e.rewards[:count], e.lengths[:count], bootstrap, gamma=self._config.gamma
                )
            )
            obs.append(e.obs[:count])
            actions.append(e.actions[:count])
            mask.append(e.mask[:count])
        return (
            torch.from_numpy(np.concatenate(obs, axis=1)),
            torch.from_numpy(np.concatenate(actions, axis=1)),
            torch.from_numpy(np.concatenate(targets, axis=1)),
            torch.from_numpy(np.concatenate(mask, axis=1)),
        )

    def _clipped_sum(self, parts: np.ndarray) -> np.ndarray:
        """Policy + value gradient of every agent, pre-clipped by part when configured."""
        share = self._config.privacy_policy_clip_share
        if share is None:
            return parts.sum(axis=1)
        bound, norm = self._config.policy_clip  # the learner path's split, same bounds
        policy = clip_rows(parts[:, 0], bound=share * bound, norm=norm)
        value = clip_rows(parts[:, 1], bound=(1.0 - share) * bound, norm=norm)
        return policy + value


def greedy_evaluation(
    module: Any,
    *,
    gravities: np.ndarray,
    seed: int | None,
) -> np.ndarray:
    """Returns the return of one greedy (argmax) episode per entry of ``gravities``.

    Runs on the aggregator with the current global weights only (public data): the
    gravities are the evaluator's own, not any agent's.
    """
    env = CartPoleGravityVectorEnv(len(gravities), gravity_choices=tuple(set(gravities)))
    module.eval()
    episodes = run_cartpole_episodes(
        env,
        module,
        gravities=np.asarray(gravities, dtype=np.float64),
        seed=seed,
        sample=False,
        alpha=0.0,
        rng=np.random.default_rng(0),
    )
    return episodes.lengths.astype(np.float64)


def evaluation_gravities(
    train: tuple[float, ...], heldout: tuple[float, ...], episodes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Gravities of ``episodes`` evaluation episodes, half on ``train``, half on ``heldout``.

    Returns:
        The gravities and a boolean mask (True = a held-out gravity).

    """
    num_heldout = episodes // 2 if heldout else 0
    train_part = np.resize(np.asarray(train, dtype=np.float64), episodes - num_heldout)
    heldout_part = np.resize(np.asarray(heldout or train, dtype=np.float64), num_heldout)
    is_heldout = np.r_[np.zeros(len(train_part), bool), np.ones(num_heldout, bool)]
    return np.r_[train_part, heldout_part], is_heldout
