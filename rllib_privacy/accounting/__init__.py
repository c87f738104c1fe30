"""Privacy ledgers: what was released, at what ε; composition (no Ray import).

Every ledger has ``state_dict()``/``load_state_dict()`` so that checkpoints continue the
spent budget instead of resetting it.
"""

from rllib_privacy.accounting.ldp_ledger import LDPLedger, per_submission_epsilon
from rllib_privacy.accounting.pdp import (
    instance_privacy_losses,
    instance_privacy_losses_on_grid,
    uniform_laplace_loss_bound,
)

__all__ = [
    "LDPLedger",
    "instance_privacy_losses",
    "instance_privacy_losses_on_grid",
    "per_submission_epsilon",
    "uniform_laplace_loss_bound",
]
