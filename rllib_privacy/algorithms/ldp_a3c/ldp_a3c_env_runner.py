"""The local agents of LDPA3C: EnvRunners that submit privatized gradients."""

from __future__ import annotations

import itertools
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.special
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import Learner
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

import rllib_privacy.mechanisms.secure_noise as secure_noise
from rllib_privacy.algorithms.ldp_a3c.fleet import AgentFleet
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_learner import (
    VALUE_TARGETS,
    discounted_value_targets,
)
from rllib_privacy.algorithms.ldp_a3c.score_release import score_fields
from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission
from rllib_privacy.connectors.count_bonus import observation_info
from rllib_privacy.exploration import CountBasedExploration


def exploration_alpha(submissions_so_far: int, *, initial: float, zero_at: int) -> float:
    """The paper's random-action probability α = max{0, α₀·(1 − n/zero_at)}.

    With α₀ = 0.5 and zero_at = 900 this is α = max{0, 0.5 − n/1800} (§4).
    """
    if initial <= 0.0 or zero_at <= 0:
        return 0.0
    return max(0.0, initial * (1.0 - submissions_so_far / zero_at))


@dataclass
class _LocalAgent:
    """One local agent n: its private environment parameter and its releases."""

    agent_id: str
    #: This agent's own noise stream (never shared with another agent).
    noise_rng: np.random.Generator | None = None
    submissions: int = 0
    pinned_options: dict[str, Any] = field(default_factory=dict)
    #: This agent's own visit counts (``count_exploration_scope: agent``); private data.
    counts: CountBasedExploration | None = None


@dataclass
class _Trajectory:
    obs: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    last_obs: np.ndarray | None = None
    terminated: bool = False
    done: bool = False


class LDPA3CEnvRunner(SingleAgentEnvRunner):
    """An EnvRunner whose every episode is one local agent's private submission.

    ``submit_gradients`` runs episodes in this runner's own environments with
    the global weights it is sent, computes each episode's A3C gradient with a
    Learner that lives on this runner, privatizes it (the Learner's
    ``LDPGradientPrivatizerMixin``), and returns only
    ``GradientSubmission`` objects. Episodes, rewards, losses and raw
    gradients never leave this process.

    Each of the runner's ``num_envs_per_env_runner`` environments hosts one
    local agent at a time; their episodes run in lockstep so that actions are
    computed in one batched forward pass.

    With ``count_exploration_config`` set, each episode's rewards get the count bonus before
    its A3C loss (see ``LDPA3CConfig.count_based_exploration``); the counts stay here.
    """

    #: The one table of ``count_exploration_scope: env_runner`` (built on first use).
    _runner_counts: CountBasedExploration | None = None
    #: Submissions this runner has produced (compared with the aggregator's ledger).
    _num_releases: int = 0

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self._local_learner: Learner | None = None
        seed = self.config.seed
        entropy = None if seed is None else [int(seed), int(self.worker_index or 0)]
        explore_seq, _, env_seq = np.random.SeedSequence(entropy).spawn(3)
        self._explore_rng = np.random.default_rng(explore_seq)
        # Privacy noise does not follow [seed, worker_index] alone: a restarted runner (same
        # worker_index) or a resumed run would repeat earlier noise. NoiseStreams mixes in a
        # per-incarnation OS-entropy nonce (unless the test-only deterministic flag is set)
        # and spawns one independent stream per local agent.
        self._noise_streams = secure_noise.NoiseStreams(seed, key=[int(self.worker_index or 0)])
        self._env_seed_rng = np.random.default_rng(env_seq) if seed is not None else None
        self._agent_ids = (
            f"{self.worker_index or 0}-{uuid.uuid4().hex[:8]}-{i}" for i in itertools.count()
        )
        self._agents: list[_LocalAgent | None] = []
        self._fleet: AgentFleet | None = None
        # None: the score leaves in the clear (the paper's setting).
        self._score_mechanism = self.config.get_score_mechanism()

    def _learner(self) -> Learner:
        if self._local_learner is None:
            spaces = self.get_spaces()
            learner = self.config.build_learner(
                spaces={DEFAULT_MODULE_ID: spaces[DEFAULT_MODULE_ID]}
            )
            self._local_learner = learner
        return self._local_learner

    def submit_gradients(
        self,
        *,
        weights: np.ndarray,
        weights_version: int,
        submissions_so_far: int,
        num_submissions: int,
    ) -> list[GradientSubmission]:
        """Runs ``num_submissions`` local episodes and returns their noisy gradients.

        Args:
            weights: The aggregator's flat parameter vector θ.
            weights_version: Version number of ``weights`` (echoed back).
            submissions_so_far: Submissions the aggregator has received (drives
                the exploration schedule α).
            num_submissions: How many episodes (one gradient each) to run.

        Returns:
            One GradientSubmission per episode.

        """
        learner = self._learner()
        module = learner.module[DEFAULT_MODULE_ID]
        torch.nn.utils.vector_to_parameters(torch.as_tensor(weights), module.parameters())
        if self.config.agents_per_env_runner > 1:
            fleet_size = self.config.agents_per_env_runner
            # Whole fleet rounds only: a partial round would simulate agents it discards.
            num_submissions = -(-num_submissions // fleet_size) * fleet_size
            submissions = self._agent_fleet(module).submit(
                weights_version=weights_version,
                alpha=lambda made: exploration_alpha(
                    submissions_so_far + made,
                    initial=self.config.agents_exploration_alpha,
                    zero_at=self.config.agents_exploration_alpha_zero_at,
                ),
                num_submissions=num_submissions,
            )
            self._num_releases += len(submissions)
            return submissions
        envs = self.env.unwrapped.envs
        if len(self._agents) != len(envs):
            self._agents = [None] * len(envs)
        out: list[GradientSubmission] = []
        while len(out) < num_submissions:
            num_parallel = min(len(envs), num_submissions - len(out))
            alpha = exploration_alpha(
                submissions_so_far + len(out),
                initial=self.config.agents_exploration_alpha,
                zero_at=self.config.agents_exploration_alpha_zero_at,
            )
            agents = [self._next_agent(i) for i in range(num_parallel)]
            trajectories = self._run_episodes(envs[:num_parallel], agents, module, alpha)
            for agent, trajectory in zip(agents, trajectories, strict=True):
                out.append(self._submission(learner, module, agent, trajectory, weights_version))
        # The local learner's own metrics (noise scale, releases) are not needed
        # here and are never sent: drop them so they do not accumulate.
        learner.metrics.reduce()
        return out

    def _agent_fleet(self, module: Any) -> AgentFleet:
        """The fleet of ``agents_per_env_runner`` local agents (built on first use)."""
        if self._fleet is None:
            self._fleet = AgentFleet(
                module=module,
                config=self.config,
                num_agents=self.config.agents_per_env_runner,
                new_agent_id=lambda: next(self._agent_ids),
                env_seed_rng=self._env_seed_rng,
                explore_rng=self._explore_rng,
                # One fresh stream per fleet round: every row (agent) of the round gets
                # independent noise from it, and no stream is ever reused.
                noise_rng=self._noise_streams.spawn,
            )
        return self._fleet

    def _next_agent(self, slot: int) -> _LocalAgent:
        agent = self._agents[slot]
        if agent is None or agent.submissions >= self.config.agents_submissions_per_agent:
            agent = _LocalAgent(
                agent_id=next(self._agent_ids), noise_rng=self._noise_streams.spawn()
            )
            self._agents[slot] = agent
        return agent

    def _reset(self, env: Any, agent: _LocalAgent) -> np.ndarray:
        seed = None
        if self._env_seed_rng is not None:
            seed = int(self._env_seed_rng.integers(2**31 - 1))
        obs, _ = env.reset(seed=seed, options=agent.pinned_options or None)
        gravity = getattr(env.unwrapped, "gravity_choices", None) and env.unwrapped.gravity
        if gravity and not agent.pinned_options:
            # Multi-round agents keep their private environment across submissions.
            agent.pinned_options = {"gravity": float(gravity)}
        return obs

    def _run_episodes(
        self, envs: list[Any], agents: list[_LocalAgent], module: Any, alpha: float
    ) -> list[_Trajectory]:
        trajectories = [_Trajectory() for _ in envs]
        obs = [self._reset(env, agent) for env, agent in zip(envs, agents, strict=True)]
        num_actions = int(self.env.single_action_space.n)
        sample = self.config.agents_action_selection == "sample"
        # forward_inference() toggles eval()/train() unless the module is already in
        # eval mode; doing it once here keeps that off the per-step path.
        module.eval()
        while True:
            active = [i for i, t in enumerate(trajectories) if not t.done]
            if not active:
                return trajectories
            batch = torch.as_tensor(np.stack([obs[i] for i in active]), dtype=torch.float32)
            with torch.no_grad():
                logits = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
            logits = logits.cpu().numpy().astype(np.float64)
            if sample:
                probs = scipy.special.softmax(logits, axis=1)
                u = self._explore_rng.random((len(active), 1))
                actions = (u > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, num_actions - 1)
            else:
                actions = logits.argmax(axis=1)
            if alpha > 0.0:
                explore = self._explore_rng.random(len(active)) < alpha
                actions = np.where(
                    explore, self._explore_rng.integers(num_actions, size=len(active)), actions
                )
            for i, action in zip(active, actions, strict=True):
                t = trajectories[i]
                t.obs.append(obs[i])
                t.actions.append(int(action))
                obs[i], reward, terminated, truncated, _ = envs[i].step(int(action))
                t.rewards.append(float(reward))
                if terminated or truncated:
                    t.done, t.terminated, t.last_obs = True, bool(terminated), obs[i]

    def _submission(
        self,
        learner: Learner,
        module: Any,
        agent: _LocalAgent,
        trajectory: _Trajectory,
        weights_version: int,
    ) -> GradientSubmission:
        batch = {
            Columns.OBS: torch.as_tensor(np.stack(trajectory.obs), dtype=torch.float32),
            Columns.ACTIONS: torch.as_tensor(trajectory.actions, dtype=torch.int64),
            VALUE_TARGETS: self._value_targets(
                module,
                self._trained_rewards(agent, trajectory),
                last_obs=trajectory.last_obs,
                terminated=trajectory.terminated,
            ),
        }
        submission = self._privatized_submission(
            learner,
            module,
            agent,
            {DEFAULT_MODULE_ID: batch},
            score=float(sum(trajectory.rewards)),
            env_steps=len(trajectory.actions),
            weights_version=weights_version,
        )
        self._num_releases += 1  # counted once released (a mechanism error releases nothing)
        return submission

    def _count_table(self, agent: _LocalAgent) -> CountBasedExploration | None:
        """The table ``agent``'s states are counted in (None: no count bonus)."""
        if self.config.count_exploration_config is None:
            return None
        if self.config.count_exploration_scope == "env_runner":
            if self._runner_counts is None:
                self._runner_counts = self._new_count_table()
            return self._runner_counts
        if agent.counts is None:
            # A fresh table per local agent: no other agent's states can reach its gradient.
            agent.counts = self._new_count_table()
        return agent.counts

    def _new_count_table(self) -> CountBasedExploration:
        spec = self.config.get_exploration_spec()
        info = observation_info(self.env.single_observation_space)
        return CountBasedExploration(spec, info)

    def _trained_rewards(self, agent: _LocalAgent, trajectory: _Trajectory) -> np.ndarray:
        """r_t + β·f(n(φ(s_t))) with s_t the state a_t was taken in; r_t without a bonus."""
        rewards = np.asarray(trajectory.rewards, dtype=np.float64)
        table = self._count_table(agent)
        if table is None:
            return rewards
        bonus, _ = table.increment_and_bonus(np.stack(trajectory.obs), trajectory.actions)
        return rewards + bonus

    def count_exploration_stats(self) -> dict[str, Any]:
        """Sizes of this runner's live count tables and its number of releases.

        An operator's diagnostic (``benchmarks/soak.py``): it is never called by the
        aggregator and carries sizes only, no states or counts.
        """
        tables = [self._runner_counts] if self._runner_counts is not None else []
        tables += [a.counts for a in self._agents if a is not None and a.counts is not None]
        return {
            "pid": os.getpid(),
            "scope": self.config.count_exploration_scope,
            "tables": len(tables),
            "entries": sum(t.counter.num_unique for t in tables),
            "bytes": sum(t.counter.nbytes for t in tables),
            "counted_states": sum(t.counter.total for t in tables),
            "releases": self._num_releases,
        }

    def _value_targets(
        self, module: Any, rewards: np.ndarray, *, last_obs: Any, terminated: bool
    ) -> torch.Tensor:
        """V̂_t of one episode, bootstrapped with V(s_T) unless it terminated."""
        bootstrap = 0.0
        if not terminated:
            with torch.no_grad():
                last = torch.as_tensor(last_obs, dtype=torch.float32)[None]
                bootstrap = float(module.compute_values({Columns.OBS: last})[0])
        return torch.as_tensor(
            discounted_value_targets(rewards, bootstrap_value=bootstrap, gamma=self.config.gamma)
        )

    def _privatized_submission(
        self,
        learner: Learner,
        module: Any,
        agent: _LocalAgent,
        batch: dict[str, Any],
        *,
        score: float,
        env_steps: int,
        weights_version: int,
    ) -> GradientSubmission:
        """One release of ``agent``: the batch's A3C gradient, privatized by the learner."""
        learner.set_privatizer_rng(agent.noise_rng)  # the agent's own noise stream
        fwd_out = learner.module.forward_train(batch)
        losses = learner.compute_losses(fwd_out=fwd_out, batch=batch)
        gradients = learner.postprocess_gradients(learner.compute_gradients(losses))
        flat = torch.cat(
            [gradients[learner.get_param_ref(p)].reshape(-1) for p in module.parameters()]
        )
        # The mechanism the learner just applied (built once and cached there).
        mechanism = learner.gradient_mechanism_for_module(DEFAULT_MODULE_ID, self.config)
        # The score is privatized here, from the agent's own noise stream.
        (fields,) = score_fields(
            self._score_mechanism, np.array([score]), np.array([env_steps]), agent.noise_rng
        )
        agent.submissions += 1
        return GradientSubmission(
            agent_id=agent.agent_id,
            gradient=flat.detach().cpu().numpy().astype(np.float32),
            epsilon=float(mechanism.epsilon_per_release),
            mechanism=mechanism.name,
            weights_version=int(weights_version),
            agent_sequence=agent.submissions,
            **fields,
        )
