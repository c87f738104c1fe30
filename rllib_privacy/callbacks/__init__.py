"""RLlibCallbacks shipped with rllib_privacy."""

from rllib_privacy.callbacks.ilm_metrics import ILMMetricsCallback

__all__ = ["ILMMetricsCallback"]
