"""rllib_privacy: privacy-preserving deep RL components for Ray RLlib's new API stack.

Importing the package registers its algorithms with Tune (``LDPA3C``) and its
environments with gymnasium (``rllib_privacy/CartPoleGravity-v0``) when Ray is
installed. The pure layers, ``rllib_privacy.mechanisms`` and
``rllib_privacy.accounting``, import no Ray and work without it.
"""

from __future__ import annotations

__version__ = "0.1.0"

try:
    import ray  # noqa: F401
except ImportError:  # The pure layers stay usable without Ray.
    pass
else:
    from rllib_privacy._registration import register_all

    register_all()
