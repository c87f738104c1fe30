"""PipelinedPPO: RLlib's PPO with sampling and learning overlapped.

User guide: docs/components/pipelined-ppo.md. RLlib's PPO alternates: its EnvRunners sample
a batch, then wait while the learner runs its epochs on it. On a machine with few cores that
leaves the cores the runners hold idle for the whole update (on AirRaid RAM with two runners
on two cores, about a third of every iteration). PipelinedPPO asks the runners for the next
batch before it updates on the current one, so the two run at once.

The price is one update of policy lag: the batch an update trains on was sampled with the
weights from before the previous update. PPO's clipped objective (Schulman et al. 2017) would
clip around that older policy, which on AirRaid RAM cost 2.0-2.8× the env steps to learn. By
default (``pipeline_decoupled_objective``) the learner trains the decoupled objective of
Hilton, Cobbe & Schulman (2021) instead: the clip is centred on the learner's policy at the
start of the update and each sample is weighted by that policy's probability over the acting
one's (``rllib_privacy.connectors.proximal_policy``); with it AirRaid learned as fast in env
steps as with RLlib's PPO step (docs/components/pipelined-ppo.md, "Learning on AirRaid").
APPO (Espeholt et al. 2018's IMPALA with PPO's clip) is RLlib's answer for lags of many
updates, with V-trace and a target network, neither of which this algorithm uses.
``pipeline_sampling: false`` gives RLlib's PPO step unchanged.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core import (
    COMPONENT_ENV_TO_MODULE_CONNECTOR,
    COMPONENT_LEARNER,
    COMPONENT_MODULE_TO_ENV_CONNECTOR,
    COMPONENT_RL_MODULE,
)
from ray.rllib.core.learner.learner import Learner
from ray.rllib.env.env_runner import EnvRunner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)
from typing_extensions import Self

from rllib_privacy.algorithms.config_keys import GroupedConfigMixin
from rllib_privacy.errors import PrivacyConfigError

#: The tag of the sample requests in flight (RLlib's actor manager counts requests per tag).
SAMPLE_TAG = "pipelined_ppo_sample"
#: The tag RLlib's EnvRunnerGroup gives its (asynchronous) ``set_state`` broadcasts.
SET_STATE_TAG = "set_state"
#: Result key: 1.0 when this iteration's update ran while the runners sampled the next batch.
PIPELINED_METRIC = "pipelined"


def sample_with_states(env_runner: EnvRunner) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """One ``sample()`` of a remote EnvRunner, with its connector states and metrics.

    All three come back in one remote call: a separate ``get_state`` would queue behind the
    next sample request and wait for it.
    """
    episodes = env_runner.sample()
    states = env_runner.get_state(
        components=[COMPONENT_ENV_TO_MODULE_CONNECTOR, COMPONENT_MODULE_TO_ENV_CONNECTOR]
    )
    return episodes, states, env_runner.get_metrics()


class PipelinedPPOConfig(GroupedConfigMixin, PPOConfig):
    """PPO's config plus ``pipeline_sampling`` (set by ``.pipeline()``).

    Example::

        config = (
            PipelinedPPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=2)
            .pipeline(pipeline_sampling=True)
        )
        algo = config.build_algo()
    """

    CONFIG_GROUPS = {"pipeline": ("pipeline_sampling", "pipeline_decoupled_objective")}

    def __init__(self, algo_class: type[Algorithm] | None = None) -> None:
        super().__init__(algo_class=algo_class or PipelinedPPO)
        self.pipeline_sampling = True
        self.pipeline_decoupled_objective = True

    def pipeline(
        self,
        *,
        pipeline_sampling: bool = NotProvided,
        pipeline_decoupled_objective: bool = NotProvided,
    ) -> Self:
        """Sets whether the runners sample the next batch while the learner updates.

        User guide: docs/components/pipelined-ppo.md.

        Args:
            pipeline_sampling: ``True``: each update trains on the batch sampled during the
                previous update (one update of policy lag), and needs remote EnvRunners
                (``num_env_runners`` >= 1). ``False``: RLlib's PPO step (sample, then
                update).
            pipeline_decoupled_objective: With ``pipeline_sampling``: ``True`` (default)
                centres PPO's clip on the learner's policy at the start of each update and
                weights each sample's advantage by that policy's probability of the action
                over the sampling policy's (the decoupled objective of Hilton, Cobbe &
                Schulman 2021); ``False`` keeps PPO's loss, clipped around the one update
                older policy that sampled the batch (on AirRaid RAM it learned 2-3× slower).
                Without pipelining the two objectives are the same and the key is ignored.

        Returns:
            This updated config.

        """
        self.set_provided(locals())
        return self

    @override(PPOConfig)
    def get_default_learner_class(self) -> type[Learner]:
        """PPO's torch learner, which adds the decoupled objective's piece when asked."""
        from rllib_privacy.algorithms.pipelined_ppo.torch.pipelined_ppo_torch_learner import (
            PipelinedPPOTorchLearner,
        )

        return PipelinedPPOTorchLearner

    @override(PPOConfig)
    def validate(self) -> None:
        """PPO's checks plus ``pipeline_sampling``'s; every message names the key."""
        super().validate()
        self.validate_pipeline_settings()
        # Algorithm.step's own connector sync asks every runner for its states and waits,
        # which would queue behind the sample request in flight: with pipeline_sampling the
        # training step syncs them itself (RLlib's IMPALA config sets the same flag).
        # (Compared first: a frozen config that validates again must not be written to.)
        if getattr(self, "_dont_auto_sync_env_runner_states", None) != self.pipeline_sampling:
            self._dont_auto_sync_env_runner_states = self.pipeline_sampling

    def validate_pipeline_settings(self) -> None:
        """Raises PrivacyConfigError for a bad ``pipeline_sampling`` setting (no Ray needed)."""
        if not isinstance(self.pipeline_sampling, bool):
            raise PrivacyConfigError(
                f"config key 'pipeline_sampling' must be true or false, "
                f"got {self.pipeline_sampling!r}"
            )
        if not isinstance(self.pipeline_decoupled_objective, bool):
            raise PrivacyConfigError(
                f"config key 'pipeline_decoupled_objective' must be true or false, "
                f"got {self.pipeline_decoupled_objective!r}"
            )
        # The evaluation config (in_evaluation) never trains, so it needs no runners.
        if self.pipeline_sampling and not self.in_evaluation and self.num_env_runners < 1:
            raise PrivacyConfigError(
                "config key 'pipeline_sampling': sampling during the update needs remote "
                f"EnvRunners (num_env_runners >= 1), got num_env_runners="
                f"{self.num_env_runners}; set pipeline_sampling: false to sample in the "
                "main process"
            )


class PipelinedPPO(PPO):
    """PPO that samples the next batch while it updates (see the module docstring)."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> PipelinedPPOConfig:
        """Returns the default PipelinedPPOConfig."""
        return PipelinedPPOConfig()

    @override(PPO)
    def training_step(self) -> None:
        """Collect the batch in flight, ask for the next one, then update on the first."""
        if not self.config.pipeline_sampling:
            super().training_step()
            return
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, connector_states, env_runner_metrics = self._collect_batch()
            # The runners sample the next batch with the weights they hold now (one update
            # behind) while the learner trains on this one.
            self._request_samples()
            if not episodes:
                return
            self.metrics.aggregate(env_runner_metrics, key=ENV_RUNNER_RESULTS)

        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = self.learner_group.update(
                episodes=episodes,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                        (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME)
                    ),
                    NUM_MODULE_STEPS_TRAINED_LIFETIME: self.metrics.peek(
                        (LEARNER_RESULTS, ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME),
                        default=0,
                    ),
                },
                num_epochs=self.config.num_epochs,
                minibatch_size=self.config.minibatch_size,
                shuffle_batch_per_epoch=self.config.shuffle_batch_per_epoch,
            )
            self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        self.metrics.log_value(PIPELINED_METRIC, 1.0, window=1)

        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            # As PPO: the learner results' keys name the modules that were updated.
            modules = set(learner_results[0].keys()) - {ALL_MODULES}
            # Each runner ran the previous broadcast right after the batch collected above.
            self._await_last_broadcast()
            # Weights and merged connector states go out without waiting: each runner
            # applies them after the sample it is running, before the next one.
            self.env_runner_group.sync_env_runner_states(
                config=self.config,
                connector_states=connector_states,
                rl_module_state=self._runner_weights(modules),
                env_steps_sampled=self.metrics.peek(
                    (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0
                ),
                env_to_module=self.env_to_module_connector,
                module_to_env=self.module_to_env_connector,
            )

    def _runner_weights(self, modules: Collection[str] | None = None) -> dict[str, Any]:
        """The learner's inference-only weights as a runner state, applied unconditionally.

        Without a ``weights_seq_no`` a runner applies them whatever number it last saw: after
        a restore the learner's number is lower than the runners' and RLlib's numbered
        broadcast would be ignored.
        """
        prefix = f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}"
        components = [prefix] if modules is None else [f"{prefix}/{m}" for m in modules]
        state = self.learner_group.get_state(components=components, inference_only=True)
        return {COMPONENT_RL_MODULE: state[COMPONENT_LEARNER][COMPONENT_RL_MODULE]}

    def _request_samples(self) -> None:
        """Ask every healthy runner without a request in flight for one ``sample()``."""
        self.env_runner_group.foreach_env_runner_async(sample_with_states, tag=SAMPLE_TAG)

    def _collect_batch(self) -> tuple[list[Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """Wait for the requests in flight, asking again until a full batch has come back.

        The requests in flight were all sent after the same weights broadcast, so the batch
        comes from one policy. Only when they fall short of a full batch (a runner failed)
        are more requests sent, and those run with the newer weights already broadcast.

        Returns:
            The episodes, the runners' connector states and their metrics; all empty when
            no healthy runner is left (the step then ends, as PPO's does).

        """
        group = self.env_runner_group
        episodes: list[Any] = []
        states: list[dict[str, Any]] = []
        runner_metrics: list[dict[str, Any]] = []
        steps = 0
        while steps < self.config.total_train_batch_size:
            if not group.num_in_flight_async_reqs(tag=SAMPLE_TAG):
                self._request_samples()
                if not group.num_in_flight_async_reqs(tag=SAMPLE_TAG):
                    break  # no healthy runner to ask
            for _, (sampled, state, metrics) in group.fetch_ready_async_reqs(
                tags=SAMPLE_TAG, timeout_seconds=self.config.sample_timeout_s
            ):
                episodes.extend(sampled)
                states.append(state)
                runner_metrics.append(metrics)
                steps += sum(episode.env_steps() for episode in sampled)
        return episodes, states, runner_metrics

    def _settle_runners(self) -> None:
        """Discard the batches in flight and wait for the last weights broadcast to land.

        Before a restore: the batches were sampled with weights the restore replaces, and a
        broadcast still unacknowledged would make RLlib drop the restore's own.
        """
        group = getattr(self, "env_runner_group", None)
        if group is None:
            return
        while group.num_in_flight_async_reqs(tag=SAMPLE_TAG):
            if not group.fetch_ready_async_reqs(
                tags=SAMPLE_TAG, timeout_seconds=self.config.sample_timeout_s
            ):
                break  # a runner that does not answer within the timeout is RLlib's to restart
        self._await_last_broadcast()

    def _await_last_broadcast(self) -> None:
        """Wait until every runner has acknowledged the last ``set_state`` broadcast.

        RLlib keeps one ``set_state`` per runner in flight and drops a new one while the last
        is unacknowledged: a runner left with old weights would mix two policies into a batch.
        """
        self.env_runner_group.fetch_ready_async_reqs(
            tags=SET_STATE_TAG, timeout_seconds=self.config.sample_timeout_s
        )

    @override(Algorithm)
    def restore_from_path(self, path: str | Path, *args: Any, **kwargs: Any) -> None:
        """Restores from a checkpoint; no batch sampled before the restore is trained on.

        RLlib restores the learner first and then calls ``set_state``, which gives the
        runners the restored weights.
        """
        self._settle_runners()
        super().restore_from_path(path, *args, **kwargs)

    @override(Algorithm)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores RLlib's state; no batch sampled before the restore is trained on."""
        self._settle_runners()
        super().set_state(state)
        self._push_weights_now()

    def _push_weights_now(self) -> None:
        """Give every runner the learner's weights and wait until each has them."""
        group = getattr(self, "env_runner_group", None)
        if group is None or not group.num_remote_env_runners():
            return
        # A direct call, not RLlib's tagged broadcast: nothing can drop it, and each runner
        # runs it after any set_state already queued there.
        state = self._runner_weights()
        group.foreach_env_runner(
            lambda runner: runner.set_state(state),
            local_env_runner=False,
            timeout_seconds=self.config.sample_timeout_s,
        )
