"""LDPA3C's actor-critic network, PGC-A3C's (Ono & Takahashi, §4 "Implementation")."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.annotations import override
from ray.rllib.utils.typing import TensorType

from rllib_privacy.errors import PrivacyConfigError

#: ``model_config`` of the paper's network: 4 -> 16 (ReLU) shared, 16 -> 2 policy,
#: 16 -> 1 value, no biases: d = 64 + 32 + 16 = 112 parameters on CartPole.
PAPER_MODEL_CONFIG: dict[str, Any] = {
    "hiddens": [16],
    "activation": "relu",
    "use_bias": False,
    "init_std": None,
}

_ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "elu": torch.nn.ELU}


class LDPA3CTorchRLModule(TorchRLModule, ValueFunctionAPI):
    """Shared MLP trunk with a policy head and a value head.

    ``model_config`` keys (all optional, defaults = the paper's network):

    - ``hiddens`` (list[int]): trunk layer sizes, default ``[16]``.
    - ``activation`` (str): ``relu``, ``tanh`` or ``elu``.
    - ``use_bias`` (bool): biases in every layer; the paper has none.
    - ``init_std`` (float | None): if set, every weight is drawn from N(0, init_std²)
      and biases start at 0; ``None`` keeps torch's default initialization.

    Any other RLModule that implements RLlib's ``ValueFunctionAPI`` and returns
    ``action_dist_inputs`` from its forward pass (e.g. RLlib's default PPO module)
    also works with LDPA3C through ``config.rl_module(rl_module_spec=...)``.
    """

    @override(RLModule)
    def setup(self) -> None:
        """Builds the trunk and the two heads from ``model_config``."""
        cfg = {**PAPER_MODEL_CONFIG, **(self.model_config or {})}
        unknown = set(cfg) - set(PAPER_MODEL_CONFIG)
        if unknown:
            raise PrivacyConfigError(
                f"model_config key(s) {sorted(unknown)} are not known to LDPA3CTorchRLModule; "
                f"allowed: {sorted(PAPER_MODEL_CONFIG)}"
            )
        if cfg["activation"] not in _ACTIVATIONS:
            raise PrivacyConfigError(
                f"model_config key 'activation' must be one of {sorted(_ACTIVATIONS)}, "
                f"got {cfg['activation']!r}"
            )
        hiddens = list(cfg["hiddens"])
        if not hiddens or any(int(h) != h or h < 1 for h in hiddens):
            raise PrivacyConfigError(
                "model_config key 'hiddens' must be a non-empty list of positive ints, "
                f"got {hiddens!r}"
            )
        use_bias = bool(cfg["use_bias"])
        in_dim = int(self.observation_space.shape[0])
        layers: list[torch.nn.Module] = []
        for size in hiddens:
            layers += [
                torch.nn.Linear(in_dim, int(size), bias=use_bias),
                _ACTIVATIONS[cfg["activation"]](),
            ]
            in_dim = int(size)
        self._trunk = torch.nn.Sequential(*layers)
        self._pi_head = torch.nn.Linear(in_dim, int(self.action_space.n), bias=use_bias)
        self._vf_head = torch.nn.Linear(in_dim, 1, bias=use_bias)
        if cfg["init_std"] is not None:
            std = float(cfg["init_std"])
            if not std > 0:
                raise PrivacyConfigError(f"model_config key 'init_std' must be > 0, got {std!r}")
            for layer in self.modules():
                if isinstance(layer, torch.nn.Linear):
                    torch.nn.init.normal_(layer.weight, mean=0.0, std=std)
                    if layer.bias is not None:
                        torch.nn.init.zeros_(layer.bias)

    @override(TorchRLModule)
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self._pi_head(self._trunk(batch[Columns.OBS]))}

    @override(TorchRLModule)
    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        embeddings = self._trunk(batch[Columns.OBS])
        return {
            Columns.ACTION_DIST_INPUTS: self._pi_head(embeddings),
            Columns.EMBEDDINGS: embeddings,
        }

    @override(ValueFunctionAPI)
    def compute_values(
        self, batch: dict[str, Any], embeddings: TensorType | None = None
    ) -> TensorType:
        """Returns V(s) for ``batch[obs]`` (reusing trunk embeddings when given)."""
        if embeddings is None:
            embeddings = self._trunk(batch[Columns.OBS])
        return self._vf_head(embeddings).squeeze(-1)
