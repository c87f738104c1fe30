"""Count-based exploration (Tang et al. 2017, "#Exploration"): pure layer, no Ray import.

Hashers map states to codes (``SimHash``, ``AutoencoderHash``, ``BASS``
features + SimHash, ``KeyFunctionHash``), counters count codes
(``ExactCounter``, ``CountMinSketch``), ``count_bonus`` turns counts into
r⁺ = β·f(n), and ``CountBasedExploration`` chains the three as configured by an
``ExplorationSpec`` (the ``count_exploration_config`` config dict). The RLlib plug-ins are
in ``rllib_privacy.connectors.count_bonus`` and ``rllib_privacy.algorithms.count_exploration``.
"""

from rllib_privacy.exploration.autoencoder import AE_ARCHITECTURES, AutoencoderHash
from rllib_privacy.exploration.bass import BASS
from rllib_privacy.exploration.bonus import BONUS_KINDS, count_bonus
from rllib_privacy.exploration.counters import (
    PAPER_PRIMES,
    CountMinSketch,
    ExactCounter,
    code_keys,
)
from rllib_privacy.exploration.key_function import (
    KeyFunctionHash,
    import_key_function,
    ram_grid_key,
)
from rllib_privacy.exploration.simhash import BoxNormalizer, OneHot, SimHash
from rllib_privacy.exploration.spec import (
    COUNTER_KINDS,
    HASH_KINDS,
    PREPROCESSORS,
    CountBasedExploration,
    ExplorationSpec,
    ObservationInfo,
)

__all__ = [
    "AE_ARCHITECTURES",
    "BASS",
    "BONUS_KINDS",
    "COUNTER_KINDS",
    "HASH_KINDS",
    "PAPER_PRIMES",
    "PREPROCESSORS",
    "AutoencoderHash",
    "BoxNormalizer",
    "CountBasedExploration",
    "CountMinSketch",
    "ExactCounter",
    "ExplorationSpec",
    "KeyFunctionHash",
    "ObservationInfo",
    "OneHot",
    "SimHash",
    "code_keys",
    "count_bonus",
    "import_key_function",
    "ram_grid_key",
]
