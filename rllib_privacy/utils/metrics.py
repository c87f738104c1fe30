"""Metric key names shared by all rllib_privacy components.

Namespaced keys go into RLlib's MetricsLogger; the headline ones are copied to
top-level result keys (``HEADLINE_*``) so that Tune's progress table shows them
and TensorBoard logs them as ``ray/tune/<key>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# privacy/...
PRIVACY_EPSILON_SPENT = "privacy/epsilon_spent"
PRIVACY_DELTA_SPENT = "privacy/delta_spent"
PRIVACY_RELEASES = "privacy/releases"
#: Data owners with one budget (docs/privacy-journal.md#owner-ledgers): ε of this trial's own
#: releases; ``privacy/epsilon_spent`` is then the owner's, over every trial and run.
PRIVACY_TRIAL_EPSILON_SPENT = "privacy/trial_epsilon_spent"
#: 1 when each trial has its own budget (``*_budget_scope: trial``), 0 for the owner's.
PRIVACY_BUDGET_PER_TRIAL = "privacy/budget_per_trial"

# pate/...
PATE_QUERIES = "pate/queries"
PATE_EPSILON = "pate/epsilon"
PATE_EPSILON_DATA_INDEPENDENT = "pate/epsilon_data_independent"
#: NON-PRIVATE diagnostic: the un-noised data-dependent ε (a function of the votes).
PATE_EPSILON_DATA_DEPENDENT = "pate/epsilon_data_dependent"
#: Queries that got a label (Confident-GNMax leaves some unanswered).
PATE_ANSWERED = "pate/answered"
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
#: Submissions when the mean (debiased) score of the solved window first reached the target.
LDP_SOLVED_AT = "ldp/solved_at"
#: The solved criterion's value when it fired: the (debiased) mean of the window that solved.
LDP_SOLVED_SCORE = "ldp/solved_score"
#: Scores in that window (``ldp/score_mean`` is the mean of the last this many).
LDP_SCORE_WINDOW = "ldp/score_window"
#: 1 when the scores left the agents privatized (counted in ε), 0 when public (the paper's).
LDP_SCORE_PRIVATE = "ldp/score_private"
#: 0/1, always present (a Tune stop key); ``ldp/solved_at`` exists only once reached.
LDP_SOLVED = "ldp/solved"
#: Mean return of greedy evaluation episodes of the current weights (all gravities).
LDP_EVAL_RETURN_MEAN = "ldp/eval_return_mean"
LDP_EVAL_RETURN_MEAN_TRAIN = "ldp/eval_return_mean_train_gravities"
LDP_EVAL_RETURN_MEAN_HELDOUT = "ldp/eval_return_mean_heldout_gravities"
#: Old name (until 0.2) of ``privacy/epsilon_central_if_shuffled``: result files written
#: before still carry it, so readers fall back to it.
PRIVACY_EPSILON_SHUFFLED = "privacy/epsilon_shuffled"
PRIVACY_DELTA_SHUFFLED = "privacy/delta_shuffled"
#: LDPA3C without the shuffler: the central (ε, δ) a shuffler WOULD give. Hypothetical.
PRIVACY_EPSILON_CENTRAL_IF_SHUFFLED = "privacy/epsilon_central_if_shuffled"
PRIVACY_DELTA_CENTRAL_IF_SHUFFLED = "privacy/delta_central_if_shuffled"
#: LDPA3C with the shuffler: every agent's central (ε, δ) against the aggregator, recorded.
PRIVACY_EPSILON_CENTRAL = "privacy/epsilon_central"
PRIVACY_DELTA_CENTRAL = "privacy/delta_central"
#: ε₀: the total ε of one report (gradient and everything released with it).
PRIVACY_EPSILON_PER_REPORT = "privacy/epsilon_per_report"
#: Shuffled batches the aggregator recorded and applied.
PRIVACY_SHUFFLED_BATCHES = "privacy/shuffled_batches"
#: Reports the shuffler holds for a later batch; refused over an agent's budget; replayed
#: from its journal after a restart.
SHUFFLER_PENDING = "shuffler/pending"
SHUFFLER_REFUSED_OVER_BUDGET = "shuffler/refused_over_budget"
SHUFFLER_RELEASES_REPLAYED = "shuffler/releases_replayed"

# kickstart/...  (privacy-preserving kickstarting, Gohari et al.)
KICKSTART_K = "kickstart/k"
KICKSTART_ALPHA_LAMBDA = "kickstart/alpha_lambda"
KICKSTART_ACTIVE_FRACTION = "kickstart/active_fraction"
KICKSTART_ANSWERED_FRACTION = "kickstart/answered_fraction"
KICKSTART_LOSS = "kickstart/loss"
KICKSTART_TEACHER_ANSWERED = "kickstart/teacher_answered"
KICKSTART_TEACHER_REFUSED = "kickstart/teacher_refused"
KICKSTART_TEACHER_SHARING = "kickstart/teacher_sharing"
#: 1 when the last batch held teacher answers (new releases or cached ones), else 0: cached
#: answers are still served after ``teacher_sharing`` (new releases) has stopped.
KICKSTART_TEACHER_SERVING = "kickstart/teacher_serving"
#: Released answers the student remembers for answer replay.
KICKSTART_ANSWERS_REMEMBERED = "kickstart/answers_remembered"
KICKSTART_COEFF = "kickstart/coeff"
KICKSTART_TEACHER_STOPPED_AT = "kickstart/teacher_stopped_at_iteration"
KICKSTART_EPSILON_PER_RELEASE = "kickstart/epsilon_per_release"
KICKSTART_DELTA_PER_RELEASE = "kickstart/delta_per_release"
#: States sent to the teacher, served from its answer cache (free), and its cache's size.
KICKSTART_TEACHER_ASKED = "kickstart/teacher_asked"
KICKSTART_TEACHER_CACHED = "kickstart/teacher_cached"
KICKSTART_TEACHER_CACHE_SIZE = "kickstart/teacher_cache_size"
#: (ε, δ) of the same releases under basic composition of Theorem 1 (the pre-RDP accounting).
KICKSTART_EPSILON_BASIC = "kickstart/epsilon_basic_composition"
KICKSTART_DELTA_BASIC = "kickstart/delta_basic_composition"


def headline_first(results: dict[str, Any], headline_keys: Iterable[str]) -> dict[str, Any]:
    """``results`` with the headline keys first (Tune's progress table shows the first ones)."""
    head = {k: results[k] for k in headline_keys if k in results}
    return {**head, **{k: v for k, v in results.items() if k not in head}}


#: RLlib's result keys (``ray.rllib.utils.metrics``), spelled out so that this module stays
#: importable without Ray (the CLI reads the headline keys at start-up); a test compares them.
RLLIB_ENV_RUNNER_RESULTS = "env_runners"
RLLIB_EPISODE_RETURN_MEAN = "episode_return_mean"
RLLIB_NUM_ENV_STEPS_SAMPLED_LIFETIME = "num_env_steps_sampled_lifetime"


def ppo_family_results(results: dict[str, Any], headline_keys: Iterable[str]) -> dict[str, Any]:
    """A PPO-family iteration's results with the return and env steps at the top level.

    Copies the EnvRunners' mean episode return to ``episode_return_mean`` and the lifetime
    env steps to ``timesteps_total`` (Tune's TensorBoard x-axis), then puts the headline keys
    first (Tune's progress table shows the first few).
    """
    env_runners = results.get(RLLIB_ENV_RUNNER_RESULTS, {})
    results["episode_return_mean"] = env_runners.get(RLLIB_EPISODE_RETURN_MEAN, float("nan"))
    results["timesteps_total"] = results.get(
        RLLIB_NUM_ENV_STEPS_SAMPLED_LIFETIME,
        env_runners.get(RLLIB_NUM_ENV_STEPS_SAMPLED_LIFETIME, 0),
    )
    return headline_first(results, headline_keys)


# ilm/... (instance-wise Laplace env, logged by rllib_privacy.callbacks.ILMMetricsCallback)
ILM_KL_RATIO = "ilm/kl_ratio"
ILM_PDP_VIOLATIONS = "ilm/pdp_violations"
ILM_PDP_PASS_RATE = "ilm/pdp_pass_rate"
ILM_MAX_LOSS = "ilm/max_loss"
ILM_KL_RATIO_REPAIRED = "ilm/kl_ratio_repaired"
ILM_REPAIRED_INSTANCES = "ilm/repaired_instances"
# exploration/... (count-based exploration, Tang et al. 2017)
EXPLORATION_EXTRINSIC_RETURN_MEAN = "exploration/extrinsic_return_mean"
EXPLORATION_BONUS_MEAN = "exploration/bonus_mean"
EXPLORATION_UNIQUE_CODES = "exploration/unique_codes"
EXPLORATION_COUNTED_STATES = "exploration/counted_states"
EXPLORATION_EXTRINSIC_REWARD_MEAN = "exploration/extrinsic_reward_mean"
EXPLORATION_TRAINED_REWARD_MEAN = "exploration/trained_reward_mean"
EXPLORATION_AE_RECONSTRUCTION_LOSS = "exploration/ae_reconstruction_loss"
EXPLORATION_AE_BIT_FLIP_RATE = "exploration/ae_bit_flip_rate"

# Budgets that survive crashes (docs/privacy-journal.md: the write-ahead privacy journal)
#: Releases a restored run learned from the journal (made after its last checkpoint).
PRIVACY_RELEASES_REPLAYED = "privacy/releases_replayed_from_journal"
#: LDPA3C: submissions whose update was lost with a rollback (counted, never re-applied).
LDP_SUBMISSIONS_DROPPED = "ldp/submissions_dropped"
#: LDPA3C: submissions whose gradient went into the buffer in this model's history.
LDP_APPLIED_SUBMISSIONS = "ldp/applied_submissions"
#: LDPA3C: submissions received again with an id already recorded (never applied twice).
LDP_DUPLICATE_SUBMISSIONS = "ldp/duplicate_submissions"
#: LDPA3C: reports refused before they were applied, outside their mechanism's output set
#: (docs/components/ldp-a3c.md#untrusted-agents); charged, never applied.
LDP_REJECTED_SUBMISSIONS = "ldp/rejected_submissions"
#: LDPA3C: valid reports the robust mean (``aggregator_robust``) left out.
LDP_FILTERED_SUBMISSIONS = "ldp/filtered_submissions"
#: LDPA3C: requests lost because their EnvRunner died (no release reached the aggregator).
LDP_LOST_REQUESTS = "ldp/lost_requests"
