"""Privacy ledgers: what was released, at what ε; composition (no Ray import).

Releases are typed events (``rllib_privacy.accounting.events``: a Dirichlet answer,
an (ε, δ) release, an LDP report, PATE queries). Every ledger (TeacherLedger, LDPLedger,
PATELedger) implements [Ledger][rllib_privacy.accounting.ledger.Ledger] (privacy unit,
identity, ``record(event)``/``can_afford(event)``/``replay(events)``, spent/remaining/releases,
state), composing through an accountant where it has a choice of composition
(``rllib_privacy.accounting.accountants``: basic, advanced, RDP, by name), and
every journaled component uses the one write-ahead journal,
[ReplayJournal][rllib_privacy.accounting.journal.ReplayJournal], which stores events
generically.

Rényi DP of the Dirichlet mechanism (``dirichlet_renyi``: one release's RDP curve, exact for
two actions and a safe bound beyond, composition over releases and conversion to (ε, δ)).

Also PATE's moments accountant (``pate_moments``) and its budgeted query ledger
(``pate_ledger``), the Rényi-DP
analysis of PATE 2018 (``gnmax``: GNMax, Confident-GNMax, smooth-sensitivity release of the
data-dependent ε; ``gnmax_rdp`` is one answer's data-dependent bound), and privacy
amplification by shuffling (``shuffle``: the central (ε, δ) of n shuffled ε₀-LDP
reports by the stronger clone of Feldman, McMillan & Talwar, SODA 2023, or their FOCS 2021
clones; composition over rounds; the local ε₀ for a central target).

Every ledger has ``state_dict()``/``load_state_dict()`` so that checkpoints continue the
spent budget instead of resetting it.
"""

from rllib_privacy.accounting.accountants import (
    ACCOUNTANTS,
    Accountant,
    AdvancedAccountant,
    BasicAccountant,
    RDPAccountant,
    compose_advanced,
    compose_basic,
    create_accountant,
    register_accountant,
)
from rllib_privacy.accounting.dirichlet import (
    DirichletPrivacy,
    dirichlet_delta,
    dirichlet_delta_estimate,
    dirichlet_delta_union_bound,
    dirichlet_epsilon,
    dirichlet_privacy,
)
from rllib_privacy.accounting.dirichlet_renyi import (
    DEFAULT_ORDERS,
    compose_dirichlet_rdp,
    dirichlet_rdp,
    dirichlet_rdp_max_order,
    dirichlet_renyi_divergence,
    rdp_to_epsilon,
)
from rllib_privacy.accounting.events import (
    DirichletAnswer,
    EpsilonDeltaRelease,
    LDPReport,
    PATEQueries,
    PrivacyEvent,
    ShuffledBatch,
    event_from_dict,
    event_to_dict,
)
from rllib_privacy.accounting.gnmax import (
    GNMAX_ORDERS,
    SmoothSensitivityRelease,
    confident_gnmax_rdp,
    gnmax_data_independent_rdp,
    gnmax_local_sensitivities,
    gnmax_log_q,
    gnmax_rdp,
    gnmax_rdp_from_log_q,
    gnss_rdp,
    release_data_dependent_epsilon,
    smooth_sensitivity,
    threshold_data_independent_rdp,
    threshold_local_sensitivities,
    threshold_log_pr_answered,
    threshold_rdp,
)
from rllib_privacy.accounting.journal import (
    JournalNotFoundError,
    PrivacyJournal,
    PrivacyJournalError,
    ReplayJournal,
    default_journal_dir,
    journal_file,
)
from rllib_privacy.accounting.ldp_ledger import LDPLedger, per_submission_epsilon
from rllib_privacy.accounting.ledger import Ledger
from rllib_privacy.accounting.pate_ledger import PATELedger
from rllib_privacy.accounting.pate_moments import (
    PATEEpsilon,
    advanced_composition_epsilon,
    data_dependent_log_moments,
    data_independent_log_moments,
    epsilon_from_log_moments,
    gnmax_epsilon,
    lemma4_log_q,
    lemma4_q,
    pate_epsilon,
    theorem3_max_q,
)
from rllib_privacy.accounting.pdp import (
    instance_privacy_losses,
    instance_privacy_losses_on_grid,
    uniform_laplace_loss_bound,
)
from rllib_privacy.accounting.shuffle import (
    binary_rr_shuffle_epsilon,
    local_epsilon_for_central,
    shuffle_epsilon,
    shuffle_epsilon_closed_form,
    shuffled_rounds_epsilon,
)
from rllib_privacy.accounting.shuffle_ledger import ShuffleLedger
from rllib_privacy.accounting.teacher_ledger import COMPOSITIONS, TeacherLedger

__all__ = [
    "ACCOUNTANTS",
    "Accountant",
    "AdvancedAccountant",
    "BasicAccountant",
    "DirichletAnswer",
    "EpsilonDeltaRelease",
    "LDPReport",
    "PATEQueries",
    "PrivacyEvent",
    "ShuffleLedger",
    "ShuffledBatch",
    "RDPAccountant",
    "create_accountant",
    "event_from_dict",
    "event_to_dict",
    "register_accountant",
    "COMPOSITIONS",
    "DEFAULT_ORDERS",
    "DirichletPrivacy",
    "JournalNotFoundError",
    "LDPLedger",
    "Ledger",
    "PATEEpsilon",
    "PATELedger",
    "PrivacyJournal",
    "PrivacyJournalError",
    "ReplayJournal",
    "TeacherLedger",
    "advanced_composition_epsilon",
    "compose_advanced",
    "compose_basic",
    "compose_dirichlet_rdp",
    "data_dependent_log_moments",
    "data_independent_log_moments",
    "dirichlet_delta",
    "dirichlet_delta_estimate",
    "dirichlet_delta_union_bound",
    "dirichlet_epsilon",
    "default_journal_dir",
    "dirichlet_privacy",
    "dirichlet_rdp",
    "dirichlet_rdp_max_order",
    "dirichlet_renyi_divergence",
    "epsilon_from_log_moments",
    "gnmax_epsilon",
    "instance_privacy_losses",
    "instance_privacy_losses_on_grid",
    "journal_file",
    "lemma4_q",
    "pate_epsilon",
    "rdp_to_epsilon",
    "per_submission_epsilon",
    "shuffle_epsilon",
    "shuffle_epsilon_closed_form",
    "shuffled_rounds_epsilon",
    "local_epsilon_for_central",
    "binary_rr_shuffle_epsilon",
    "theorem3_max_q",
    "uniform_laplace_loss_bound",
    "GNMAX_ORDERS",
    "SmoothSensitivityRelease",
    "confident_gnmax_rdp",
    "gnmax_data_independent_rdp",
    "gnmax_local_sensitivities",
    "gnmax_log_q",
    "gnmax_rdp",
    "gnmax_rdp_from_log_q",
    "gnss_rdp",
    "release_data_dependent_epsilon",
    "smooth_sensitivity",
    "threshold_data_independent_rdp",
    "threshold_local_sensitivities",
    "threshold_log_pr_answered",
    "threshold_rdp",
    "lemma4_log_q",
]
