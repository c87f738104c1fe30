"""Load, validate and normalize classic RLlib experiment files (see ``loading``)."""

from rllib_privacy.experiments.loading import *  # noqa: F403
from rllib_privacy.experiments.loading import (  # noqa: F401
    _GYM_MAKE_KEYWORDS,
    _check_gymnasium_env_config,
)
