"""Accountants: composition over privacy events, registered by name (no Ray import).

``"basic"`` ([BasicAccountant][rllib_privacy.accounting.accountants.basic.BasicAccountant]),
``"advanced"``
([AdvancedAccountant][rllib_privacy.accounting.accountants.advanced.AdvancedAccountant])
and ``"rdp"`` ([RDPAccountant][rllib_privacy.accounting.accountants.rdp.RDPAccountant]);
[create_accountant][rllib_privacy.accounting.accountants.base.create_accountant] builds one
by name, and [register_accountant][rllib_privacy.accounting.accountants.base.register_accountant]
adds another.
"""

from rllib_privacy.accounting.accountants.advanced import (
    DEFAULT_DELTA_SLACK,
    AdvancedAccountant,
    compose_advanced,
)
from rllib_privacy.accounting.accountants.base import (
    ACCOUNTANTS,
    Accountant,
    create_accountant,
    register_accountant,
)
from rllib_privacy.accounting.accountants.basic import BasicAccountant, compose_basic
from rllib_privacy.accounting.accountants.rdp import RDPAccountant

__all__ = [
    "ACCOUNTANTS",
    "DEFAULT_DELTA_SLACK",
    "Accountant",
    "AdvancedAccountant",
    "BasicAccountant",
    "RDPAccountant",
    "compose_advanced",
    "compose_basic",
    "create_accountant",
    "register_accountant",
]
