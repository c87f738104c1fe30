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
    "per_submission_epsilon",
]
