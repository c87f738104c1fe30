"""ConnectorV2 pieces shipped with rllib_privacy (one piece per module)."""

from rllib_privacy.connectors.count_bonus import AddCountBonusToRewards, observation_info
from rllib_privacy.connectors.kickstart_teacher import (
    TEACHER_K,
    TEACHER_MASK,
    TEACHER_POLICY,
    AddTeacherAnswersToBatch,
)
from rllib_privacy.connectors.pate_labels import (
    PATE_LABEL_MASK,
    PATE_LABELS,
    AddPATELabelsToBatch,
)
from rllib_privacy.connectors.proximal_policy import AddProximalPolicyToBatch

__all__ = [
    "AddPATELabelsToBatch",
    "AddProximalPolicyToBatch",
    "AddCountBonusToRewards",
    "AddTeacherAnswersToBatch",
    "PATE_LABELS",
    "PATE_LABEL_MASK",
    "TEACHER_K",
    "TEACHER_MASK",
    "TEACHER_POLICY",
    "observation_info",
]
