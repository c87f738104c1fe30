"""ConnectorV2 pieces shipped with rllib_privacy."""

from rllib_privacy.connectors.pate_labels import (
    PATE_LABEL_MASK,
    PATE_LABELS,
    AddPATELabelsToBatch,
)

__all__ = ["PATE_LABELS", "PATE_LABEL_MASK", "AddPATELabelsToBatch"]
