"""RLlibCallbacks shipped with rllib_privacy."""

from rllib_privacy.callbacks.ilm_metrics import ILMMetricsCallback
from rllib_privacy.callbacks.pate_labeling import (
    PATE_LABEL_KEY,
    QUERY_SELECTIONS,
    PATELabelingCallback,
    select_query_states,
)

__all__ = [
    "ILMMetricsCallback",
    "PATELabelingCallback",
    "PATE_LABEL_KEY",
    "QUERY_SELECTIONS",
    "select_query_states",
]
