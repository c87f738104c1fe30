"""Pure privacy mechanisms (numpy/scipy/torch only; never imports Ray).

Gradient mechanisms of Ono & Takahashi, "Locally Private Distributed Reinforcement
Learning": the Laplace mechanism (Alg. 2) and Projected Random Sign (Alg. 3), plus
:class:`GradientMechanism`, a validated spec that applies either (or none).

The Dirichlet mechanism of Gohari et al., "Privacy-Preserving Kickstarting Deep Reinforcement
Learning with Privacy-Aware Learners" (η-restriction, log-space sampling, Lemma 1 radius and
the kickstart threshold α_λ), and a Lipschitz upper bound for torch MLPs (lazy torch import).
Instance-wise Laplace mechanism of Ryu et al. (:mod:`.instance_laplace`): per-instance
Laplace release and its exact output PMF / KL divergence on shared bins.
PATE's noisy-max vote aggregation (LNMax, GNMax).
"""

from rllib_privacy.mechanisms.dirichlet import (
    concentration_radius,
    dirichlet_mechanism,
    kickstart_threshold,
    norm_concentration_radius,
    restrict_policy,
    sample_dirichlet,
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
from rllib_privacy.mechanisms.lipschitz import lipschitz_upper_bound, restricted_lipschitz
from rllib_privacy.mechanisms.noisy_max import (
    gaussian_noisy_max,
    noisy_max,
    plurality,
    validate_votes,
)
from rllib_privacy.mechanisms.projected_random_sign import (
    projected_random_sign,
    prs_projection_matrix,
    prs_reduced_dim,
    prs_sign_probability,
    randomized_sign,
)

__all__ = [
    "GradientMechanism",
    "MECHANISM_NAMES",
    "bin_edges",
    "clip_l1",
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
    "noisy_max",
    "norm_concentration_radius",
    "plurality",
    "privatized_pmf",
    "projected_random_sign",
    "prs_projection_matrix",
    "prs_reduced_dim",
    "prs_sign_probability",
    "randomized_sign",
    "restrict_policy",
    "restricted_lipschitz",
    "sample_dirichlet",
    "validate_votes",
]
