"""Pure privacy mechanisms (numpy/scipy/torch only; never imports Ray).

Gradient mechanisms of Ono & Takahashi, "Locally Private Distributed Reinforcement
Learning": the Laplace mechanism (Alg. 2) and Projected Random Sign (Alg. 3), plus
:class:`GradientMechanism`, a validated spec that applies either (or none).
PATE's noisy-max vote aggregation (LNMax, GNMax).
"""

from rllib_privacy.mechanisms.gradient import MECHANISM_NAMES, GradientMechanism
from rllib_privacy.mechanisms.laplace import clip_l1, laplace_gradient, laplace_noise_scale
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
    "MECHANISM_NAMES",
    "GradientMechanism",
    "clip_l1",
    "gaussian_noisy_max",
    "laplace_gradient",
    "laplace_noise_scale",
    "noisy_max",
    "plurality",
    "projected_random_sign",
    "prs_projection_matrix",
    "prs_reduced_dim",
    "prs_sign_probability",
    "randomized_sign",
    "validate_votes",
]
