"""RLlib algorithms shipped with rllib_privacy."""
