"""Metric key names shared by all rllib_privacy components (DESIGN §6).

Namespaced keys go into RLlib's MetricsLogger; the headline ones are copied to
top-level result keys (``HEADLINE_*``) so that Tune's progress table shows them
and TensorBoard logs them as ``ray/tune/<key>``.
"""

from __future__ import annotations

# privacy/...
PRIVACY_EPSILON_SPENT = "privacy/epsilon_spent"
PRIVACY_DELTA_SPENT = "privacy/delta_spent"
PRIVACY_RELEASES = "privacy/releases"

# pate/...
PATE_QUERIES = "pate/queries"
PATE_EPSILON = "pate/epsilon"
PATE_EPSILON_DATA_INDEPENDENT = "pate/epsilon_data_independent"
#: NON-PRIVATE diagnostic: share of answered queries whose noisy label is the plurality.
PATE_LABEL_AGREEMENT = "pate/label_agreement"
PATE_BUDGET_EXHAUSTED = "pate/budget_exhausted"
PATE_NUM_TEACHERS = "pate/num_teachers"

# ldp/...
LDP_SUBMISSIONS = "ldp/submissions"
LDP_SCORE_MEAN = "ldp/score_mean"
LDP_SCORE_MOVING_MEAN = "ldp/score_moving_mean"
LDP_FST = "ldp/fst"
LDP_FST_REACHED = "ldp/fst_reached"
LDP_NOISE_SCALE = "ldp/noise_scale"
LDP_BUFFER_SIZE = "ldp/buffer_size"
LDP_EPSILON_PER_AGENT = "ldp/epsilon_per_agent"
LDP_UPDATES = "ldp/updates"
LDP_SUBMISSIONS_PER_SECOND = "ldp/submissions_per_second"
LDP_EXPLORATION_ALPHA = "ldp/exploration_alpha"
LDP_GRADIENT_L1_NORM = "ldp/raw_gradient_l1_norm_mean"
