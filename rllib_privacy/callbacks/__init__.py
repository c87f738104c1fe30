"""RLlibCallbacks shipped with rllib_privacy."""

from rllib_privacy.callbacks.pate_labeling import (
    PATE_LABEL_KEY,
    QUERY_SELECTIONS,
    PATELabelingCallback,
    select_query_states,
)

__all__ = ["PATE_LABEL_KEY", "QUERY_SELECTIONS", "PATELabelingCallback", "select_query_states"]
