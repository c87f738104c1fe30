"""Episode metrics of the InstanceWiseLaplace env for Tune and TensorBoard.

Use with any algorithm on ``rllib_privacy/InstanceWiseLaplace-v0`` (YAML:
``callbacks_class: rllib_privacy.callbacks.ILMMetricsCallback``). At the end of every
episode it logs the final scale set's KL ratio (DQN scales vs uniform Laplace), the number
of instances whose exact pDP loss exceeds ε, the pass rate and the largest loss (all of the
policy's own scales), and for the released assignment (after the repair step that widens
violating instances' scales) its KL ratio and how many instances the repair widened;
after every iteration it copies their means to the top-level ``ilm/...`` result keys, first
in the result, so that Tune's table and TensorBoard (``ray/tune/ilm/...``) show them.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.utils.annotations import override

from rllib_privacy.utils import metrics as keys

#: env info key → metric key, logged at the end of each episode.
_EPISODE_METRICS = {
    "kl_ratio": keys.ILM_KL_RATIO,
    "pdp_violations": keys.ILM_PDP_VIOLATIONS,
    "pdp_pass_rate": keys.ILM_PDP_PASS_RATE,
    "max_loss": keys.ILM_MAX_LOSS,
    "kl_ratio_repaired": keys.ILM_KL_RATIO_REPAIRED,
    "repaired_instances": keys.ILM_REPAIRED_INSTANCES,
}

#: Episodes averaged per metric (RLlib's usual episode window).
_WINDOW = 100


class ILMMetricsCallback(RLlibCallback):
    """Logs the InstanceWiseLaplace env's end-of-episode results (see module docstring)."""

    @override(RLlibCallback)
    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        """Logs the last step's info of an InstanceWiseLaplace episode."""
        info = episode.get_infos(-1)
        if metrics_logger is None or not isinstance(info, dict) or "pdp_violations" not in info:
            return  # Another env, or an episode cut before its end.
        for info_key, metric_key in _EPISODE_METRICS.items():
            metrics_logger.log_value(metric_key, float(info[info_key]), window=_WINDOW)

    @override(RLlibCallback)
    def on_train_result(self, *, result: dict, **kwargs: Any) -> None:
        """Copies ``env_runners/ilm/...`` to top-level ``ilm/...`` keys, placed first.

        ``kl_ratio`` and ``pdp_violations`` also go in as flat top-level numbers: Tune's
        progress table shows only the first few of those.
        """
        runner_results = result.get("env_runners", {})
        headline = {
            metric_key.split("/", 1)[1]: runner_results[metric_key]
            for metric_key in _EPISODE_METRICS.values()
            if metric_key in runner_results
        }
        if not headline:
            return
        rest = dict(result)
        result.clear()
        for flat in ("kl_ratio", "pdp_violations"):
            if flat in headline:
                result[flat] = headline[flat]
        result["ilm"] = headline
        result.update((k, v) for k, v in rest.items() if k not in result)
