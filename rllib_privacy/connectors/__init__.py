"""ConnectorV2 pieces shipped with rllib_privacy (one piece per module)."""

from rllib_privacy.connectors.count_bonus import CountBasedBonus, observation_info

__all__ = ["CountBasedBonus", "observation_info"]
