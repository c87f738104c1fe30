"""ConnectorV2 pieces shipped with rllib_privacy (one piece per module)."""

from rllib_privacy.connectors.count_bonus import CountBasedBonus, observation_info
from rllib_privacy.connectors.kickstart_teacher import (
    TEACHER_K,
    TEACHER_MASK,
    TEACHER_POLICY,
    KickstartTeacherConnector,
)

__all__ = [
    "TEACHER_K",
    "TEACHER_MASK",
    "TEACHER_POLICY",
    "CountBasedBonus",
    "KickstartTeacherConnector",
    "observation_info",
]
