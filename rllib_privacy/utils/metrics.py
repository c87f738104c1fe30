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

# exploration/... (count-based exploration, Tang et al. 2017)
EXPLORATION_EXTRINSIC_RETURN_MEAN = "exploration/extrinsic_return_mean"
EXPLORATION_BONUS_MEAN = "exploration/bonus_mean"
EXPLORATION_UNIQUE_CODES = "exploration/unique_codes"
EXPLORATION_COUNTED_STATES = "exploration/counted_states"
EXPLORATION_EXTRINSIC_REWARD_MEAN = "exploration/extrinsic_reward_mean"
EXPLORATION_TRAINED_REWARD_MEAN = "exploration/trained_reward_mean"
EXPLORATION_AE_RECONSTRUCTION_LOSS = "exploration/ae_reconstruction_loss"
EXPLORATION_AE_BIT_FLIP_RATE = "exploration/ae_bit_flip_rate"
