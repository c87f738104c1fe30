"""Pure privacy mechanisms (numpy/scipy/torch only; never imports Ray).

Gradient mechanisms of Ono & Takahashi, "Locally Private Distributed Reinforcement
Learning": the Laplace mechanism (Alg. 2) and Projected Random Sign (Alg. 3); the optimal
unbiased ε-LDP mechanisms for L2-bounded vectors (``privunit``, docs/components/ldp-a3c.md):
PrivUnitG (Asi, Feldman & Talwar, ICML 2022) and PrivUnit2 (Bhowmick et al. 2018), with
vectorized row variants, their MSE-optimal γ, debiasing scale m and closed-form MSE; plus
``GradientMechanism``, a validated spec that applies any of them (or none), to one
gradient or to a stack of rows.

The Dirichlet mechanism of Gohari et al., "Privacy-Preserving Kickstarting Deep Reinforcement
Learning with Privacy-Aware Learners" (η-restriction, log-space sampling, Lemma 1 radius and
the kickstart threshold α_λ), and a Lipschitz upper bound for torch MLPs (lazy torch import).
Instance-wise Laplace mechanism of Ryu et al. (``instance_laplace``): per-instance
Laplace release and its exact output PMF / KL divergence on shared bins.
PATE's noisy-max vote aggregation (LNMax, GNMax, Confident-GNMax). Duchi et al.'s one-bit
mechanism for a bounded scalar (``one_bit``: LDPA3C's private scores).
Secure noise (``secure_noise``): OpenDP's floating-point-safe samplers behind every
mechanism's ``secure_mode``, OS-entropy generators, per-agent noise streams and the
fixed-seed ``PrivacyWarning``.
"""

from rllib_privacy.mechanisms.dirichlet import (
    SECURE_GRID_BITS,
    argmax_label_distribution,
    concentration_radius,
    dirichlet_mechanism,
    kickstart_threshold,
    norm_concentration_radius,
    restrict_policy,
    sample_dirichlet,
    snap_to_grid,
)
from rllib_privacy.mechanisms.gradient import MECHANISM_NAMES, GradientMechanism
from rllib_privacy.mechanisms.instance_laplace import (
    bin_edges,
    histogram_pmf,
    instance_laplace,
    kl_divergence,
    laplace_bin_masses,
    privatized_pmf,
)
from rllib_privacy.mechanisms.laplace import clip_l1, laplace_gradient, laplace_noise_scale
from rllib_privacy.mechanisms.lipschitz import (
    lipschitz_upper_bound,
    policy_lipschitz_upper_bound,
    restricted_lipschitz,
)
from rllib_privacy.mechanisms.noisy_max import (
    UNANSWERED,
    confident_gnmax,
    gaussian_noisy_max,
    noisy_max,
    plurality,
    validate_votes,
)
from rllib_privacy.mechanisms.one_bit import OneBitMechanism
from rllib_privacy.mechanisms.privunit import (
    privunit2,
    privunit2_mse,
    privunit2_optimal_gamma,
    privunit2_rows,
    privunit2_scale,
    privunitg,
    privunitg_mse,
    privunitg_optimal_gamma,
    privunitg_rows,
    privunitg_scale,
)
from rllib_privacy.mechanisms.projected_random_sign import (
    projected_random_sign,
    prs_projection_matrix,
    prs_reduced_dim,
    prs_sign_probability,
    randomized_sign,
)
from rllib_privacy.mechanisms.secure_noise import (
    NoiseStreams,
    PrivacyWarning,
    noise_generator,
    os_entropy_generator,
    secure_bernoulli,
    secure_discrete_gaussian,
    secure_discrete_laplace,
    secure_gaussian,
    secure_laplace,
    warn_fixed_seed,
)

__all__ = [
    "argmax_label_distribution",
    "OneBitMechanism",
    "GradientMechanism",
    "MECHANISM_NAMES",
    "NoiseStreams",
    "PrivacyWarning",
    "SECURE_GRID_BITS",
    "UNANSWERED",
    "bin_edges",
    "clip_l1",
    "confident_gnmax",
    "concentration_radius",
    "dirichlet_mechanism",
    "gaussian_noisy_max",
    "histogram_pmf",
    "instance_laplace",
    "kickstart_threshold",
    "kl_divergence",
    "laplace_bin_masses",
    "laplace_gradient",
    "laplace_noise_scale",
    "lipschitz_upper_bound",
    "policy_lipschitz_upper_bound",
    "noise_generator",
    "noisy_max",
    "norm_concentration_radius",
    "os_entropy_generator",
    "plurality",
    "privatized_pmf",
    "privunit2",
    "privunit2_mse",
    "privunit2_optimal_gamma",
    "privunit2_rows",
    "privunit2_scale",
    "privunitg",
    "privunitg_mse",
    "privunitg_optimal_gamma",
    "privunitg_rows",
    "privunitg_scale",
    "projected_random_sign",
    "prs_projection_matrix",
    "prs_reduced_dim",
    "prs_sign_probability",
    "randomized_sign",
    "restrict_policy",
    "restricted_lipschitz",
    "sample_dirichlet",
    "secure_bernoulli",
    "secure_discrete_gaussian",
    "secure_discrete_laplace",
    "secure_gaussian",
    "secure_laplace",
    "snap_to_grid",
    "validate_votes",
    "warn_fixed_seed",
]
