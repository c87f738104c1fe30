"""A plain-RLlib reference implementation of LDPA3C's local agents (speed baseline).

``RLlibSamplingLDPA3CEnvRunner`` produces the same kind of submissions as
``LDPA3CEnvRunner`` (one privatized A3C
gradient per episode, same loss, same mechanism, same ``GradientSubmission``), but
gets there the way a straightforward RLlib EnvRunner would:

1. θ is written into the runner's own RLModule and into its local Learner's module;
2. each episode comes from RLlib's regular sampling path,
   ``self.sample(num_episodes=1, explore=True)`` (env-to-module connectors,
   ``forward_exploration``, module-to-env connectors, ``SingleAgentEpisode``);
3. the train batch is built by the local Learner's learner connector pipeline
   (``learner._learner_connector(...)``); only the value targets V̂_t, which RLlib's
   default pipeline does not compute, are added from the episode's rewards;
4. the gradient is computed and privatized by the Learner exactly as in
   ``LDPA3CEnvRunner`` (the shared ``_privatized_submission`` step).

It exists as a correctness and speed reference (``benchmarks/pgc_a3c.py --speed``),
not for training runs. Differences to ``LDPA3CEnvRunner``:

* Actions are always sampled from π (the module's exploration path through RLlib's
  connectors): ``agents_action_selection`` and the α random-action schedule
  (``agents_exploration_alpha``) are ignored. That is fine for a speed baseline; the
  learning curves differ.
* One episode per ``sample()`` call on the first finished sub-environment; with
  ``num_envs_per_env_runner > 1`` the other sub-environments' partial episodes are
  discarded (use 1 environment per runner).
* Multi-round agents (``agents_submissions_per_agent > 1``) are not supported: RLlib's reset
  path cannot pin an agent's private gravity across episodes.

Use it with ``config.env_runners(env_runner_cls=RLlibSamplingLDPA3CEnvRunner)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override

from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_env_runner import LDPA3CEnvRunner, _LocalAgent
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c_learner import VALUE_TARGETS
from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission
from rllib_privacy.errors import PrivacyConfigError


class RLlibSamplingLDPA3CEnvRunner(LDPA3CEnvRunner):
    """Reference local agents: RLlib's own sampling and learner connector pipeline.

    Same remote interface and output as ``LDPA3CEnvRunner.submit_gradients``; see
    the module docstring for what differs (sampled actions, no α schedule).
    """

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        if self.config.agents_submissions_per_agent != 1:
            raise PrivacyConfigError(
                "config key 'agents_submissions_per_agent' must be 1 with "
                "RLlibSamplingLDPA3CEnvRunner (RLlib's reset cannot keep an agent's "
                f"private environment), got {self.config.agents_submissions_per_agent!r}"
            )

    @override(LDPA3CEnvRunner)
    def submit_gradients(
        self,
        *,
        weights: np.ndarray,
        weights_version: int,
        submissions_so_far: int,
        num_submissions: int,
    ) -> list[GradientSubmission]:
        """Samples ``num_submissions`` episodes with RLlib and returns their noisy gradients.

        Args:
            weights: The aggregator's flat parameter vector θ.
            weights_version: Version number of ``weights`` (echoed back).
            submissions_so_far: Unused (actions are sampled from π; no α schedule).
            num_submissions: How many episodes (one gradient each) to run.

        Returns:
            One GradientSubmission per episode.

        """
        del submissions_so_far
        learner = self._learner()
        learner_module = learner.module[DEFAULT_MODULE_ID]
        theta = torch.as_tensor(weights)
        torch.nn.utils.vector_to_parameters(theta, learner_module.parameters())
        torch.nn.utils.vector_to_parameters(theta, self.module.parameters())
        out: list[GradientSubmission] = []
        for _ in range(num_submissions):
            episode = self.sample(num_episodes=1, explore=True)[0]
            batch = self._episode_batch(learner, episode)
            out.append(
                self._privatized_submission(
                    learner,
                    learner_module,
                    _LocalAgent(agent_id=next(self._agent_ids)),
                    batch,
                    score=float(episode.get_return()),
                    env_steps=len(episode),
                    weights_version=weights_version,
                )
            )
        # Nobody reads these metrics (the aggregator counts submissions itself):
        # reduce them, as RLlib does once per iteration, so they do not accumulate.
        learner.metrics.reduce()
        self.get_metrics()
        return out

    def _episode_batch(self, learner: Learner, episode: Any) -> dict[str, Any]:
        """The train batch of one episode: RLlib's learner connector plus V̂_t."""
        batch = learner._learner_connector(
            rl_module=learner.module,
            batch={},
            episodes=[episode],
            shared_data={},
            metrics=learner.metrics,
        )
        batch[DEFAULT_MODULE_ID][VALUE_TARGETS] = self._value_targets(
            learner.module[DEFAULT_MODULE_ID],
            np.asarray(episode.get_rewards(), dtype=np.float64),
            last_obs=episode.get_observations(-1),
            terminated=episode.is_terminated,
        )
        return batch
