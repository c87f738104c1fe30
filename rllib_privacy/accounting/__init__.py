"""Privacy ledgers: what was released, at what ε; composition (no Ray import).

Also PATE's moments accountant and its budgeted query ledger (:mod:`.pate`).

Every ledger has ``state_dict()``/``load_state_dict()`` so that checkpoints continue the
spent budget instead of resetting it.
"""

from rllib_privacy.accounting.ldp_ledger import LDPLedger, per_submission_epsilon
from rllib_privacy.accounting.pate import (
    PATEEpsilon,
    PATELedger,
    advanced_composition_epsilon,
    data_dependent_log_moments,
    data_independent_log_moments,
    epsilon_from_log_moments,
    gnmax_epsilon,
    lemma4_q,
    pate_epsilon,
    theorem3_max_q,
)

__all__ = [
    "LDPLedger",
    "PATEEpsilon",
    "PATELedger",
    "advanced_composition_epsilon",
    "data_dependent_log_moments",
    "data_independent_log_moments",
    "epsilon_from_log_moments",
    "gnmax_epsilon",
    "lemma4_q",
    "pate_epsilon",
    "per_submission_epsilon",
    "theorem3_max_q",
]
