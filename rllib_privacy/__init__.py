"""rllib_privacy: privacy-preserving deep RL components for Ray RLlib's new API stack.

The public classes are importable from the top level, e.g.
``from rllib_privacy import LDPA3CConfig, LDPPPOConfig, KickstartPPOConfig``. They are loaded lazily
(PEP 562): ``import rllib_privacy`` itself imports neither Ray nor torch, so that the
``rllib`` and ``rllib-privacy`` commands start quickly and the pure layers,
``rllib_privacy.mechanisms`` and ``rllib_privacy.accounting``, work without Ray.

Registration with Tune (algorithm names such as ``"LDPA3C"`` for ``tune.Tuner`` and
``run:`` in experiment files) and with gymnasium (``rllib_privacy/CartPoleGravity-v0``)
happens when ``register`` is called, and automatically when an algorithm or an
algorithm config class is taken from this top-level package and when ``rllib train``
runs. Call ``register`` yourself before naming an algorithm or env of this package
as a string in a script that imports nothing else of it.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

#: Public name -> the subpackage that defines or re-exports it.
_EXPORTS: dict[str, str] = {
    # Algorithms and their configs (taking one registers the package with Tune).
    "LDPA3C": "rllib_privacy.algorithms.ldp_a3c",
    "LDPA3CConfig": "rllib_privacy.algorithms.ldp_a3c",
    "LDPA3CEnvRunner": "rllib_privacy.algorithms.ldp_a3c",
    "LDPPPO": "rllib_privacy.algorithms.ldp_ppo",
    "LDPPPOConfig": "rllib_privacy.algorithms.ldp_ppo",
    "KickstartPPO": "rllib_privacy.algorithms.kickstart_ppo",
    "KickstartPPOConfig": "rllib_privacy.algorithms.kickstart_ppo",
    "PATEPPO": "rllib_privacy.algorithms.pate_ppo",
    "PATEPPOConfig": "rllib_privacy.algorithms.pate_ppo",
    "PipelinedPPO": "rllib_privacy.algorithms.pipelined_ppo",
    "PipelinedPPOConfig": "rllib_privacy.algorithms.pipelined_ppo",
    "ExplorationPPO": "rllib_privacy.algorithms.count_exploration",
    "ExplorationPPOConfig": "rllib_privacy.algorithms.count_exploration",
    "ExplorationDQN": "rllib_privacy.algorithms.count_exploration",
    "ExplorationDQNConfig": "rllib_privacy.algorithms.count_exploration",
    "CountExplorationConfigMixin": "rllib_privacy.algorithms.count_exploration",
    # Connectors, learners and callbacks that plug into stock RLlib algorithms.
    "AddTeacherAnswersToBatch": "rllib_privacy.connectors",
    "AddCountBonusToRewards": "rllib_privacy.connectors",
    "AddPATELabelsToBatch": "rllib_privacy.connectors",
    "LDPGradientPrivatizerMixin": "rllib_privacy.learners",
    "LDPPPOTorchLearner": "rllib_privacy.learners",
    "PATELabelLossMixin": "rllib_privacy.learners",
    "PATELabelingCallback": "rllib_privacy.callbacks",
    "ILMMetricsCallback": "rllib_privacy.callbacks",
    # Teachers (kickstarting's separate party).
    "DirichletTeacher": "rllib_privacy.teachers",
    "TeacherSettings": "rllib_privacy.teachers",
    # Ledgers and accountants (pure: no Ray).
    "LDPLedger": "rllib_privacy.accounting",
    "PATELedger": "rllib_privacy.accounting",
    "TeacherLedger": "rllib_privacy.accounting",
    "PrivacyJournal": "rllib_privacy.accounting",
    "pate_epsilon": "rllib_privacy.accounting",
    "dirichlet_privacy": "rllib_privacy.accounting",
    # Mechanisms (pure: no Ray).
    "GradientMechanism": "rllib_privacy.mechanisms",
    "dirichlet_mechanism": "rllib_privacy.mechanisms",
    "laplace_gradient": "rllib_privacy.mechanisms",
    "projected_random_sign": "rllib_privacy.mechanisms",
    "privunitg": "rllib_privacy.mechanisms",
    "privunit2": "rllib_privacy.mechanisms",
    "noisy_max": "rllib_privacy.mechanisms",
    "instance_laplace": "rllib_privacy.mechanisms",
    # Count-based exploration (pure).
    "SimHash": "rllib_privacy.exploration",
    "CountBasedExploration": "rllib_privacy.exploration",
    # Errors.
    "PrivacyConfigError": "rllib_privacy.errors",
    "ExperimentFileError": "rllib_privacy.errors",
    "BudgetExhaustedError": "rllib_privacy.errors",
}

#: Subpackages whose exports are only usable once the package is registered with Tune.
_REGISTERING_MODULES = frozenset(m for m in _EXPORTS.values() if ".algorithms." in m)

# Kept literal so that linters and type checkers read it; a test checks it against _EXPORTS.
__all__ = [
    "__version__",
    "register",
    "LDPA3C",
    "LDPA3CConfig",
    "LDPA3CEnvRunner",
    "LDPPPO",
    "LDPPPOConfig",
    "KickstartPPO",
    "KickstartPPOConfig",
    "PATEPPO",
    "PATEPPOConfig",
    "PipelinedPPO",
    "PipelinedPPOConfig",
    "ExplorationPPO",
    "ExplorationPPOConfig",
    "ExplorationDQN",
    "ExplorationDQNConfig",
    "CountExplorationConfigMixin",
    "AddTeacherAnswersToBatch",
    "AddCountBonusToRewards",
    "AddPATELabelsToBatch",
    "LDPGradientPrivatizerMixin",
    "LDPPPOTorchLearner",
    "PATELabelLossMixin",
    "PATELabelingCallback",
    "ILMMetricsCallback",
    "DirichletTeacher",
    "TeacherSettings",
    "LDPLedger",
    "PATELedger",
    "TeacherLedger",
    "PrivacyJournal",
    "pate_epsilon",
    "dirichlet_privacy",
    "GradientMechanism",
    "dirichlet_mechanism",
    "laplace_gradient",
    "projected_random_sign",
    "privunitg",
    "privunit2",
    "noisy_max",
    "instance_laplace",
    "SimHash",
    "CountBasedExploration",
    "PrivacyConfigError",
    "ExperimentFileError",
    "BudgetExhaustedError",
]


def register() -> None:
    """Register this package's algorithms with Tune and its envs with gymnasium and Tune.

    Idempotent. Needed before ``tune.Tuner("LDPA3C", ...)`` or an env id such as
    ``"rllib_privacy/CartPoleGravity-v0"`` is used by name; ``rllib train`` calls it.
    Imports Ray, RLlib and torch.
    """
    from rllib_privacy._registration import register_all

    register_all()


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562), so ``import rllib_privacy`` stays light."""
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'rllib_privacy' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    if module_name in _REGISTERING_MODULES:
        # A class taken from here is usually run by name next (tune.Tuner("LDPA3C")).
        register()
    globals()[name] = value  # Later lookups skip __getattr__.
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # Static type checkers and IDEs see the real names.
    from rllib_privacy.accounting import (
        LDPLedger,
        PATELedger,
        PrivacyJournal,
        TeacherLedger,
        dirichlet_privacy,
        pate_epsilon,
    )
    from rllib_privacy.algorithms.count_exploration import (
        CountExplorationConfigMixin,
        ExplorationDQN,
        ExplorationDQNConfig,
        ExplorationPPO,
        ExplorationPPOConfig,
    )
    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPO, KickstartPPOConfig
    from rllib_privacy.algorithms.ldp_a3c import LDPA3C, LDPA3CConfig, LDPA3CEnvRunner
    from rllib_privacy.algorithms.ldp_ppo import LDPPPO, LDPPPOConfig
    from rllib_privacy.algorithms.pate_ppo import PATEPPO, PATEPPOConfig
    from rllib_privacy.algorithms.pipelined_ppo import PipelinedPPO, PipelinedPPOConfig
    from rllib_privacy.callbacks import ILMMetricsCallback, PATELabelingCallback
    from rllib_privacy.connectors import (
        AddCountBonusToRewards,
        AddPATELabelsToBatch,
        AddTeacherAnswersToBatch,
    )
    from rllib_privacy.errors import (
        BudgetExhaustedError,
        ExperimentFileError,
        PrivacyConfigError,
    )
    from rllib_privacy.exploration import CountBasedExploration, SimHash
    from rllib_privacy.learners import (
        LDPGradientPrivatizerMixin,
        LDPPPOTorchLearner,
        PATELabelLossMixin,
    )
    from rllib_privacy.mechanisms import (
        GradientMechanism,
        dirichlet_mechanism,
        instance_laplace,
        laplace_gradient,
        noisy_max,
        privunit2,
        privunitg,
        projected_random_sign,
    )
    from rllib_privacy.teachers import DirichletTeacher, TeacherSettings


if "gymnasium" in sys.modules:
    # gymnasium imports this package to make an id written ``rllib_privacy:<id>``, which is
    # how `rllib train` passes the ALE RAM ids this package adds to every EnvRunner: register
    # the gymnasium ids then (gymnasium, not Ray or torch, is imported already).
    from rllib_privacy.envs import register_envs as _register_envs

    _register_envs()
