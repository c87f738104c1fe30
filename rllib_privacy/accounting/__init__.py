"""Privacy ledgers: what was released, at what ε; composition (no Ray import).

Every ledger has ``state_dict()``/``load_state_dict()`` so that checkpoints continue the
spent budget instead of resetting it.
"""

from rllib_privacy.accounting.dirichlet import (
    DirichletPrivacy,
    dirichlet_delta,
    dirichlet_delta_estimate,
    dirichlet_delta_union_bound,
    dirichlet_epsilon,
    dirichlet_privacy,
)
from rllib_privacy.accounting.ldp_ledger import LDPLedger, per_submission_epsilon
from rllib_privacy.accounting.pdp import (
    instance_privacy_losses,
    instance_privacy_losses_on_grid,
    uniform_laplace_loss_bound,
)
from rllib_privacy.accounting.teacher_ledger import (
    COMPOSITIONS,
    TeacherLedger,
    compose_advanced,
    compose_basic,
)

__all__ = [
    "COMPOSITIONS",
    "DirichletPrivacy",
    "LDPLedger",
    "TeacherLedger",
    "compose_advanced",
    "compose_basic",
    "dirichlet_delta",
    "dirichlet_delta_estimate",
    "dirichlet_delta_union_bound",
    "dirichlet_epsilon",
    "dirichlet_privacy",
    "instance_privacy_losses",
    "instance_privacy_losses_on_grid",
    "per_submission_epsilon",
    "uniform_laplace_loss_bound",
]
