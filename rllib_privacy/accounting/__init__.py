"""Privacy ledgers: what was released, at what ε; composition (no Ray import).

Every ledger has ``state_dict()``/``load_state_dict()`` so that checkpoints continue the
spent budget instead of resetting it.
"""

from rllib_privacy.accounting.ldp_ledger import LDPLedger, per_submission_epsilon

__all__ = ["LDPLedger", "per_submission_epsilon"]
