"""Acrobot whose link masses are a private, per-environment parameter.

The harder CPU task of the PATE ensemble (Papernot et al. 2017, applied to RL): each
teacher's private data is its environment's dynamics, here the masses of Acrobot's two
links drawn at every reset from that teacher's own set (disjoint across teachers), just
as ``CartPoleGravity-v0`` does for gravity. Acrobot-v1's observation and action spaces
are unchanged, so teachers trained on different mass sets can label the same student.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.envs.classic_control.acrobot import AcrobotEnv

from rllib_privacy.envs.cartpole_gravity import check_env_config, validate_positive_choices
from rllib_privacy.errors import PrivacyConfigError

#: Acrobot-v1's own link mass (both links).
DEFAULT_LINK_MASS_CHOICES: tuple[float, ...] = (1.0,)


class AcrobotMassEnv(AcrobotEnv):
    """Acrobot-v1 whose link masses are drawn from ``link_mass_choices`` at every reset.

    Both links get the same mass, drawn with the env's own seeded generator; it is not
    part of the observation or the info dict (it is the environment's private data).

    Args:
        link_mass_choices: Non-empty sequence of positive, finite masses.
        render_mode: Passed to gymnasium's AcrobotEnv.

    """

    def __init__(
        self,
        link_mass_choices: Sequence[float] = DEFAULT_LINK_MASS_CHOICES,
        render_mode: str | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise PrivacyConfigError(
                f"env_config key(s) {sorted(unknown)} are not known to AcrobotMassEnv; "
                "allowed: ['link_mass_choices']"
            )
        self.link_mass_choices = validate_link_mass_choices(link_mass_choices)
        super().__init__(render_mode=render_mode)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets the links and draws this episode's mass."""
        obs, info = super().reset(seed=seed, options=options)
        mass = float(self.np_random.choice(self.link_mass_choices))
        # AcrobotEnv reads these class constants through self in its dynamics.
        self.LINK_MASS_1 = self.LINK_MASS_2 = mass
        return obs, info


def validate_link_mass_choices(link_mass_choices: Any) -> tuple[float, ...]:
    """Returns ``link_mass_choices`` as a tuple of floats or raises a clear error."""
    return validate_positive_choices("link_mass_choices", link_mass_choices)


def validate_acrobot_mass_env_config(env_config: Any) -> Any:
    """The ``ENV_CONFIG_HOOKS`` check of AcrobotMass (run before Ray starts)."""
    return check_env_config(
        "AcrobotMassEnv", env_config, {"link_mass_choices": validate_link_mass_choices}
    )
