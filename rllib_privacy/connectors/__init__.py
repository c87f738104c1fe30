"""ConnectorV2 pieces of rllib_privacy (one piece per module)."""

from rllib_privacy.connectors.kickstart_teacher import (
    TEACHER_K,
    TEACHER_MASK,
    TEACHER_POLICY,
    KickstartTeacherConnector,
)

__all__ = ["TEACHER_K", "TEACHER_MASK", "TEACHER_POLICY", "KickstartTeacherConnector"]
