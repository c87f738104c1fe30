"""Learner ConnectorV2 piece adding the count-based bonus r⁺ = β·f(n(φ(s))) to rewards.

Tang et al. 2017, Alg. 1: all states of the batch are hashed and counted first, then
every transition's reward becomes r + r⁺(s) with s the state the action was taken in.
The piece writes r + r⁺ into the episodes before RLlib's default pieces (GAE for PPO)
turn them into the train batch, so the policy trains on the shaped reward while the
EnvRunners' ``episode_return_mean`` (computed when the episodes were sampled) stays
the extrinsic return.

Unlike RLlib's ``CountBasedCuriosity`` example (a Python dict update per state), the
whole batch is hashed and counted with array operations (rllib_privacy.exploration).
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger
from ray.rllib.utils.typing import EpisodeType

from rllib_privacy.exploration import CountBasedExploration, ExplorationSpec, ObservationInfo
from rllib_privacy.utils import metrics as keys

__all__ = ["AddCountBonusToRewards", "observation_info"]


def observation_info(space: gym.Space) -> ObservationInfo:
    """The plain description of ``space`` the pure-layer hashers need."""
    if isinstance(space, gym.spaces.Discrete):
        return ObservationInfo(shape=(), discrete_n=int(space.n))
    if isinstance(space, gym.spaces.Box):
        return ObservationInfo(
            shape=tuple(space.shape),
            low=np.asarray(space.low, dtype=np.float64).reshape(-1),
            high=np.asarray(space.high, dtype=np.float64).reshape(-1),
        )
    flat = gym.spaces.flatten_space(space)
    assert flat.shape is not None  # flatten_space returns a Box
    return ObservationInfo(shape=tuple(flat.shape))


def _with_own_rewards(episode: SingleAgentEpisode) -> SingleAgentEpisode:
    """A shallow copy of ``episode`` whose reward buffer (and its data) is its own."""
    clone = copy.copy(episode)
    clone.rewards = copy.copy(episode.rewards)
    data = episode.rewards.data
    clone.rewards.data = data.copy() if isinstance(data, np.ndarray) else list(data)
    return clone


class AddCountBonusToRewards(ConnectorV2):
    """Hashes, counts and adds the exploration bonus to every episode's rewards.

    One instance holds one global count table. PPO's learner inserts it (see
    ``CountExplorationLearnerMixin``); off-policy algorithms call ``apply`` on
    freshly sampled episodes before they enter the replay buffer (``ExplorationDQN``),
    so a state is counted once when collected, never again when replayed.

    Args:
        input_observation_space: The (raw) observation space of the episodes.
        input_action_space: The action space.
        spec: The ``count_exploration_config`` settings (dict or ExplorationSpec).

    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        spec: ExplorationSpec | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(input_observation_space, input_action_space, **kwargs)
        if input_observation_space is None:
            raise ValueError("AddCountBonusToRewards needs the observation space to build its hash")
        self.exploration = CountBasedExploration(
            ExplorationSpec.from_dict(spec), observation_info(input_observation_space)
        )

    @override(ConnectorV2)
    def __call__(
        self,
        *,
        rl_module: RLModule,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: MetricsLogger | None = None,
        **kwargs: Any,
    ) -> Any:
        """Replaces ``episodes`` (in the list) by copies with r + r⁺; ``batch`` passes through."""
        episodes[:] = self.apply(episodes, metrics=metrics)
        return batch

    def apply(
        self, episodes: list[EpisodeType], *, metrics: MetricsLogger | None = None
    ) -> list[EpisodeType]:
        """Counts every state of ``episodes`` (whole batch first), then adds the bonuses.

        Returns:
            The episodes with r + r⁺ as rewards. Single-agent episodes are shallow copies
            with their own reward buffer: a local EnvRunner keeps the chunks it returned
            to sum the episode's return once it ends, and that return must stay the
            extrinsic one. Multi-agent episodes are changed in place.
        """
        shaped = [
            _with_own_rewards(e) if isinstance(e, SingleAgentEpisode) else e for e in episodes
        ]
        sa_episodes = [
            e
            for e in self.single_agent_episode_iterator(shaped, agents_that_stepped_only=False)
            if len(e.get_rewards())
        ]
        if not sa_episodes:
            return shaped
        # s_t of each transition: all observations but the last (the next chunk's first).
        obs = np.concatenate([np.asarray(e.get_observations(slice(None, -1))) for e in sa_episodes])
        actions = None
        if self.exploration.spec.count_actions:
            actions = np.concatenate([np.asarray(e.get_actions()).reshape(-1) for e in sa_episodes])
        ae_metrics = self.exploration.before_update(obs)
        bonus, _ = self.exploration.increment_and_bonus(obs, actions)
        extrinsic = np.concatenate(
            [np.asarray(e.get_rewards(), dtype=np.float64) for e in sa_episodes]
        )
        trained = extrinsic + bonus
        start = 0
        for episode in sa_episodes:  # one write per episode chunk, not per state
            n = len(episode.get_rewards())
            if (
                isinstance(episode.rewards.data, np.ndarray)
                and not episode.rewards.data.flags["WRITEABLE"]
            ):  # a read-only view of Ray's object store (episodes from remote EnvRunners)
                episode.rewards.data = episode.rewards.data.copy()
            episode.set_rewards(new_data=trained[start : start + n].astype(np.float32))
            start += n
        if metrics is not None:
            self._log(metrics, bonus, extrinsic, trained, ae_metrics)
        return shaped

    def _log(
        self,
        metrics: MetricsLogger,
        bonus: np.ndarray,
        extrinsic: np.ndarray,
        trained: np.ndarray,
        ae_metrics: dict[str, float],
    ) -> None:
        values = {
            keys.EXPLORATION_BONUS_MEAN: float(bonus.mean()),
            keys.EXPLORATION_EXTRINSIC_REWARD_MEAN: float(extrinsic.mean()),
            keys.EXPLORATION_TRAINED_REWARD_MEAN: float(trained.mean()),
            keys.EXPLORATION_UNIQUE_CODES: self.exploration.counter.num_unique,
            keys.EXPLORATION_COUNTED_STATES: self.exploration.counter.total,
        }
        if ae_metrics:
            values[keys.EXPLORATION_AE_RECONSTRUCTION_LOSS] = ae_metrics["reconstruction_loss"]
            values[keys.EXPLORATION_AE_BIT_FLIP_RATE] = ae_metrics["bit_flip_rate"]
        for key, value in values.items():
            metrics.log_value(tuple(key.split("/")), value, window=1)

    @override(ConnectorV2)
    def get_state(self, components: Any = None, *, not_components: Any = None, **kwargs: Any):
        """The count table and hasher.

        Never empty: RLlib merges the connector states of several EnvRunners by position,
        and an empty state can make it drop a later piece's state.
        """
        return {"count_exploration": self.exploration.state_dict()}

    @override(ConnectorV2)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores what ``get_state`` returned."""
        if "count_exploration" in state:
            self.exploration.load_state_dict(state["count_exploration"])
