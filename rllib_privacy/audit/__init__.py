"""Empirical privacy auditing of mechanisms (pure: numpy/scipy only, never imports Ray).

``audit_mechanism`` draws many releases of a mechanism on two adjacent inputs, searches
output events on one half of the draws and reports, from the other half, the largest ε that
is statistically supported (a Clopper–Pearson lower confidence bound). Use it on the
package's mechanisms (``tests/unit/test_audit_mechanisms.py``) or on your own.
"""

from rllib_privacy.audit.auditor import (
    DEFAULT_MAX_DISCRETE_VALUES,
    DEFAULT_NUM_THRESHOLDS,
    AuditResult,
    audit_mechanism,
)
from rllib_privacy.audit.bounds import clopper_pearson, epsilon_lower_bound

__all__ = [
    "DEFAULT_MAX_DISCRETE_VALUES",
    "DEFAULT_NUM_THRESHOLDS",
    "AuditResult",
    "audit_mechanism",
    "clopper_pearson",
    "epsilon_lower_bound",
]
