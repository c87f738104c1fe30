"""A Learner mixin that privatizes gradients with an LDP mechanism.

This is the "policy wrapper for LDP gradient noise": mix
it in front of any TorchLearner and every gradient the learner computes is clipped
and noised by the configured mechanism in ``postprocess_gradients_for_module``,
i.e. after RLlib's own postprocessing (``grad_clip``) and before the optimizer
sees it. All of a module's gradients are flattened into one vector first, so the
mechanism's clipping bound and sensitivity apply to the whole gradient, as in
Ono & Takahashi's Algorithms 2 and 3.

The mechanism comes from, in this order:

1. ``config.get_gradient_mechanism()`` if the AlgorithmConfig has it (LDPA3CConfig);
2. ``config.learner_config_dict["ldp_gradient"]``: a dict with the fields of
   ``rllib_privacy.mechanisms.GradientMechanism`` (``name``, ``epsilon``,
   ``clip``, ``reduced_dim``, ``debias``, ``secure_mode``), e.g. for PPO:
   ``learner_config_dict: {ldp_gradient: {name: laplace, epsilon: 5.0, clip: 0.01}}``.

If neither is set the mixin is a no-op. A config attribute ``privacy_epsilon_budget``
(LDPPPOConfig) caps the module's spent ε: an update that would exceed it raises
``BudgetExhaustedError`` before anything is noised or applied.

Every privatized gradient is one release, recorded in a per-module
``LDPLedger`` (privacy unit: the learner's training data,
everything its gradients are computed from, as one "agent"; updates compose sequentially).
The learner reports ``privacy/epsilon_spent``, ``privacy/delta_spent`` and
``privacy/releases`` from it under its module's results, and the ledgers are part of the
Learner's checkpointed state (a restored run continues the spent budget).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.typing import ModuleID, ParamDict

from rllib_privacy.accounting import LDPLedger, LDPReport
from rllib_privacy.errors import BudgetExhaustedError, PrivacyConfigError
from rllib_privacy.mechanisms import GradientMechanism, os_entropy_generator
from rllib_privacy.utils import metrics as keys

#: ``learner_config_dict`` key read by the mixin when the config has no
#: ``get_gradient_mechanism()``.
LEARNER_CONFIG_KEY = "ldp_gradient"
#: Learner state key of the privatizer's ledgers (``{module_id: LDPLedger.state_dict()}``).
COMPONENT_PRIVACY_LEDGERS = "privacy_ledgers"
#: The one "agent" of a learner's ledger: all of the learner's training data.
LEARNER_AGENT_ID = "learner"
#: Config attribute read as the module's ε budget (absent = no limit).
BUDGET_CONFIG_KEY = "privacy_epsilon_budget"


def gradient_mechanism_from_config(config: Any) -> GradientMechanism | None:
    """Returns the gradient mechanism an AlgorithmConfig asks for, or None."""
    getter = getattr(config, "get_gradient_mechanism", None)
    if callable(getter):
        return getter()
    spec = (getattr(config, "learner_config_dict", None) or {}).get(LEARNER_CONFIG_KEY)
    if spec is None:
        return None
    if isinstance(spec, GradientMechanism):
        return spec
    if not isinstance(spec, dict):
        raise PrivacyConfigError(
            f"learner_config_dict key '{LEARNER_CONFIG_KEY}' must be a dict with keys "
            f"name, epsilon, clip[, reduced_dim, debias, secure_mode], got {spec!r}"
        )
    return GradientMechanism.from_dict(spec)


if TYPE_CHECKING:
    # mypy checks the mixin against the class it is mixed into; at run time it is a plain mixin.
    from ray.rllib.core.learner.learner import Learner as _MixinBase
else:
    _MixinBase = object


class LDPGradientPrivatizerMixin(_MixinBase):
    """Privatizes every gradient of a TorchLearner with an LDP mechanism.

    Usage::

        class PrivatePPOTorchLearner(LDPGradientPrivatizerMixin, PPOTorchLearner):
            pass

    Noise is drawn from a numpy Generator that is seeded from OS entropy
    (``secrets``) unless ``set_privatizer_rng`` gives one (LDPA3C gives every local
    agent its own independent stream). With the mechanism's ``secure_mode`` the generator
    is ignored: OpenDP's samplers and per-release OS entropy draw the noise.
    """

    _privatizer_rng: np.random.Generator | None = None
    _privatizer_mechanisms: dict[ModuleID, GradientMechanism | None]
    _privacy_ledgers: dict[ModuleID, LDPLedger]

    def set_privatizer_rng(self, rng: np.random.Generator) -> None:
        """Sets the generator the mechanism draws its noise from."""
        self._privatizer_rng = rng

    def gradient_mechanism_for_module(
        self, module_id: ModuleID, config: Any
    ) -> GradientMechanism | None:
        """Returns (and caches) the mechanism configured for ``module_id``."""
        cache = self.__dict__.setdefault("_privatizer_mechanisms", {})
        if module_id not in cache:
            cache[module_id] = gradient_mechanism_from_config(config)
        return cache[module_id]

    def privacy_ledger(self, module_id: ModuleID) -> LDPLedger:
        """The ledger of ``module_id``'s releases (created empty on first use)."""
        ledgers = self.__dict__.setdefault("_privacy_ledgers", {})
        if module_id not in ledgers:
            ledgers[module_id] = LDPLedger()
        return ledgers[module_id]

    @override(Learner)
    def get_state(
        self, components: Any = None, *, not_components: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        """RLlib's learner state plus the privatizer's ledgers (the spent budget)."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        ledgers = self.__dict__.get("_privacy_ledgers")
        if ledgers and self._check_component(COMPONENT_PRIVACY_LEDGERS, components, not_components):
            state[COMPONENT_PRIVACY_LEDGERS] = {
                str(module_id): ledger.state_dict() for module_id, ledger in ledgers.items()
            }
        return state

    @override(Learner)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores RLlib's learner state and the ledgers (the spent budget never resets)."""
        super().set_state(state)
        for module_id, ledger_state in state.get(COMPONENT_PRIVACY_LEDGERS, {}).items():
            self.privacy_ledger(module_id).load_state_dict(ledger_state)

    @override(Learner)
    def postprocess_gradients_for_module(
        self,
        *,
        module_id: ModuleID,
        config: Any = None,
        module_gradients_dict: ParamDict,
    ) -> ParamDict:
        """Clips and noises the module's whole gradient vector (one release)."""
        grads = super().postprocess_gradients_for_module(
            module_id=module_id, config=config, module_gradients_dict=module_gradients_dict
        )
        mechanism = self.gradient_mechanism_for_module(module_id, config)
        if mechanism is None or mechanism.name == "none" or not grads:
            return grads
        num_learners = getattr(getattr(self, "config", None), "num_learners", 0) or 0
        if num_learners > 1:
            # DDP all-reduces the raw gradients in backward(); every learner would then noise
            # the same average with its own noise, and the model copies would drift apart.
            raise PrivacyConfigError(
                f"config key 'num_learners' is {num_learners}: LDP gradient noise needs 0 or 1 "
                "learners (with several, each would add its own noise after DDP's all-reduce)"
            )
        ledger = self.privacy_ledger(module_id)
        _check_budget(ledger, mechanism, getattr(config, BUDGET_CONFIG_KEY, math.inf))
        if self._privatizer_rng is None:
            self._privatizer_rng = os_entropy_generator()
        refs = list(grads)
        flat = torch.cat([grads[ref].reshape(-1) for ref in refs])
        noisy = mechanism.privatize(flat, self._privatizer_rng)
        out: ParamDict = {}
        offset = 0
        for ref in refs:
            size = grads[ref].numel()
            out[ref] = noisy[offset : offset + size].view_as(grads[ref])
            offset += size
        ledger.record(
            LDPReport(
                agent_id=LEARNER_AGENT_ID,
                epsilon=mechanism.epsilon_per_release,
                mechanism=mechanism.name,
            )
        )
        metrics = self.metrics
        metrics.log_value(
            (module_id, *keys.LDP_NOISE_SCALE.split("/")),
            mechanism.noise_scale(flat.numel()),
            window=1,
        )
        for key, value in ledger.privacy_metrics().items():
            metrics.log_value((module_id, *key.split("/")), value, window=1)
        return out


def _check_budget(ledger: LDPLedger, mechanism: GradientMechanism, budget: float) -> None:
    """Raise before a release that would take the learner's data over ``budget``."""
    if budget is None or math.isinf(budget):
        return
    spent = ledger.epsilon_spent(LEARNER_AGENT_ID)
    cost = mechanism.epsilon_per_release
    # The same relative slack as LDPLedger's own budget: 3 releases of 1/3 fit 1.
    if spent + cost <= budget + 1e-9 * max(1.0, budget):
        return
    raise BudgetExhaustedError(
        f"privacy_epsilon_budget {budget!r} reached: the learner's data has spent "
        f"epsilon={spent!r} in {ledger.releases} updates and one more update costs "
        f"{cost!r}; no further update is made"
    )
