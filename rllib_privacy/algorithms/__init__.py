"""RLlib algorithms shipped with rllib_privacy.

Importing this package registers the package's gymnasium ids. A config's
``rllib_privacy:<id>`` env makes gymnasium import ``rllib_privacy``, which registers the ids
only when gymnasium is already loaded; a Ray worker that unpickles one of these algorithms
imports ``rllib_privacy`` before gymnasium, so without this the ids would be missing there.
"""

from rllib_privacy.envs import register_envs as _register_envs

_register_envs()
