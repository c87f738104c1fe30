"""A Learner mixin that privatizes gradients with an LDP mechanism.

This is the "policy wrapper for LDP gradient noise" of the design (DESIGN §1): mix
it in front of any TorchLearner and every gradient the learner computes is clipped
and noised by the configured mechanism in ``postprocess_gradients_for_module``,
i.e. after RLlib's own postprocessing (``grad_clip``) and before the optimizer
sees it. All of a module's gradients are flattened into one vector first, so the
mechanism's clipping bound and sensitivity apply to the whole gradient, as in
Ono & Takahashi's Algorithms 2 and 3.

The mechanism comes from, in this order:

1. ``config.get_gradient_mechanism()`` if the AlgorithmConfig has it (LDPA3CConfig);
2. ``config.learner_config_dict["ldp_gradient"]``: a dict with the fields of
   :class:`rllib_privacy.mechanisms.GradientMechanism` (``name``, ``epsilon``,
   ``clip``, ``reduced_dim``, ``debias``, ``secure_mode``), e.g. for PPO:
   ``learner_config_dict: {ldp_gradient: {name: laplace, epsilon: 5.0, clip: 0.01}}``.

If neither is set the mixin is a no-op.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.typing import ModuleID, ParamDict

from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms import GradientMechanism, os_entropy_generator
from rllib_privacy.utils import metrics as keys

#: ``learner_config_dict`` key read by the mixin when the config has no
#: ``get_gradient_mechanism()``.
LEARNER_CONFIG_KEY = "ldp_gradient"


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


class LDPGradientPrivatizerMixin:
    """Privatizes every gradient of a TorchLearner with an LDP mechanism.

    Usage::

        class PrivatePPOTorchLearner(LDPGradientPrivatizerMixin, PPOTorchLearner):
            pass

    Noise is drawn from a numpy Generator that is seeded from OS entropy
    (``secrets``) unless :meth:`set_privatizer_rng` gives one (LDPA3C gives every local
    agent its own independent stream). With the mechanism's ``secure_mode`` the generator
    is ignored: OpenDP's samplers and per-release OS entropy draw the noise.
    """

    _privatizer_rng: np.random.Generator | None = None
    _privatizer_mechanisms: dict[ModuleID, GradientMechanism | None]

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

    @override(Learner)
    def postprocess_gradients_for_module(
        self,
        *,
        module_id: ModuleID,
        config: Any = None,
        module_gradients_dict: ParamDict,
    ) -> ParamDict:
        """Clips and noises the module's whole gradient vector (one release)."""
        grads = super().postprocess_gradients_for_module(  # type: ignore[misc]
            module_id=module_id, config=config, module_gradients_dict=module_gradients_dict
        )
        mechanism = self.gradient_mechanism_for_module(module_id, config)
        if mechanism is None or mechanism.name == "none" or not grads:
            return grads
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
        metrics = self.metrics  # type: ignore[attr-defined]
        metrics.log_value(
            (module_id, *keys.LDP_NOISE_SCALE.split("/")),
            mechanism.noise_scale(flat.numel()),
            window=1,
        )
        metrics.log_value((module_id, *keys.PRIVACY_RELEASES.split("/")), 1, reduce="sum")
        return out
