"""Upper bounds on the L2→L2 Lipschitz constant of a feed-forward torch network.

Theorem 1 of Gohari et al. (privacy-preserving kickstarting) needs the Lipschitz constant L of
the map from observations to the released (restricted) policy: b-adjacent observations then
give policies at L2 distance at most L·b. For a chain f = f_n ∘ … ∘ f_1, Lip(f) <= Π Lip(f_i)
(Szegedy et al. 2014), with Lip(x ↦ Wx + c) = ‖W‖₂, the largest singular value. This product
is a valid but often loose bound; tighter estimates (e.g. LipSDP, Fazlyab et al. 2019) need
an SDP solver and are not provided.

For the policy s ↦ softmax(logits(s)), ``policy_lipschitz_upper_bound`` is tighter than the
logits' bound in two valid ways:

* softmax is 1/2-Lipschitz in L2: its Jacobian J = diag(p) − ppᵀ is symmetric, and by
  Gershgorin's theorem each eigenvalue lies in a disc of centre p_i(1 − p_i) and radius
  Σ_{j≠i} p_i·p_j = p_i(1 − p_i), so ‖J‖₂ <= max_i 2·p_i(1 − p_i) <= 1/2 (the bound is
  attained at p = (1/2, 1/2, 0, …)); Gao & Pavel (2017) give 1, which is also valid;
* softmax ignores a shift of all logits (J·1 = 0), so the last linear layer W acts through
  its centred rows W_c = (I − 11ᵀ/m)·W, with ‖W_c‖₂ <= ‖W‖₂.

It is also tighter than the product along the chain, by a bound of Combettes & Pesquet
("Lipschitz certificates for layered network structures driven by averaged activation
operators", SIAM J. Math. Data Sci. 2020, §3): an element-wise activation whose slope lies in
[0, c] (tanh, ReLU, softplus, sigmoid with c = 1/4, …) is c·(I + N)/2 with N non-expansive
(N = 2σ/c − I has slopes in [−1, 1]). Expanding the chain W_n ∘ σ_{n−1} ∘ … ∘ σ_1 ∘ W_1 over
the 2^(n−1) choices of I or N at each activation, each term is bounded by the product of the
spectral norms of the merged linear stretches between its N's, so

    Lip <= Π_t (c_t/2) · Σ_{J ⊆ activations} Π_{stretches between J} ‖W_j ⋯ W_{i+1}‖₂.

The J = ∅ term is the linear map ‖W_n ⋯ W_1‖₂, J = all gives the plain product, and every term
is at most the plain product, so the bound never exceeds it. The sum is computed by dynamic
programming over split points (O(n²) spectral norms). An activation whose slope can be
negative (SiLU) is not averaged: there the chain is always split, at its constant.

The η-restriction π̃ = (1 − mη)·π + η multiplies the constant by (1 − mη)
(``restricted_lipschitz``; docs/components/kickstarting.md).
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import TYPE_CHECKING, Any

from rllib_privacy._validation import check_int_in_range
from rllib_privacy.mechanisms.dirichlet import _check_eta

if TYPE_CHECKING:
    from torch import nn

__all__ = ["lipschitz_upper_bound", "policy_lipschitz_upper_bound", "restricted_lipschitz"]

#: ‖diag(p) − ppᵀ‖₂ <= 1/2 for every probability vector p (module docstring).
SOFTMAX_LIPSCHITZ = 0.5

# Lipschitz constant of SiLU, x·σ(x): max |d/dx| = 1.099839… (at x ≈ 2.40), rounded UP.
# (1.0998, the value often quoted, is slightly below the true maximum, so not a valid bound.)
_SILU_LIPSCHITZ = 1.0999


@functools.cache
def _fixed_constants() -> dict[type, float]:
    """Element-wise activations and shape-only layers with a fixed L2 Lipschitz constant."""
    # torch is imported lazily so that `import rllib_privacy.mechanisms` stays torch-free.
    from torch import nn

    return {
        nn.ReLU: 1.0,
        nn.ReLU6: 1.0,
        nn.Tanh: 1.0,
        nn.Hardtanh: 1.0,
        nn.Softplus: 1.0,
        nn.SiLU: _SILU_LIPSCHITZ,
        nn.Sigmoid: 0.25,
        nn.Softmax: 1.0,
        nn.Identity: 1.0,
        nn.Flatten: 1.0,
    }


def _averaged_slope(module: nn.Module) -> float | None:
    """The largest slope c of an activation whose slopes all lie in [0, c], else None."""
    from torch import nn

    if type(module) in (nn.ReLU, nn.ReLU6, nn.Tanh, nn.Hardtanh, nn.Softplus):
        return 1.0
    if type(module) is nn.Sigmoid:
        return 0.25
    if type(module) is nn.LeakyReLU and float(module.negative_slope) >= 0.0:
        return max(1.0, float(module.negative_slope))
    if type(module) is nn.ELU and float(module.alpha) >= 0.0:
        return max(1.0, float(module.alpha))
    return None


def _leaf_constant(module: nn.Module) -> float:
    """Return the Lipschitz constant of one leaf module, or raise for unsupported ones."""
    import torch
    from torch import nn

    # Exact type checks: a subclass may override forward() and change the constant.
    if type(module) is nn.Linear:
        weight = module.weight.detach().to(dtype=torch.float64)
        return float(torch.linalg.matrix_norm(weight, ord=2))
    if type(module) is nn.LeakyReLU:
        # Slopes 1 and negative_slope: Lip = max(1, |negative_slope|).
        return max(1.0, abs(float(module.negative_slope)))
    if type(module) is nn.ELU:
        # Derivative is 1 for x > 0 and α·eˣ < α for x < 0.
        return max(1.0, abs(float(module.alpha)))
    if type(module) is nn.Dropout:
        if module.training and module.p > 0.0:
            raise ValueError(
                "lipschitz_upper_bound: Dropout in training mode is random and rescales by "
                "1/(1 - p); call .eval() on the network first"
            )
        return 1.0
    constant = _fixed_constants().get(type(module))
    if constant is not None:
        return constant
    raise ValueError(
        f"lipschitz_upper_bound: unsupported layer type {type(module).__name__} ({module!r}); "
        "supported: Linear, ReLU, ReLU6, LeakyReLU, ELU, Tanh, Hardtanh, Softplus, SiLU, "
        "Sigmoid, Softmax, Identity, Dropout (eval), Flatten"
    )


def lipschitz_upper_bound(*modules: nn.Module) -> float:
    """Return an upper bound on the L2→L2 Lipschitz constant of a feed-forward torch chain.

    Walks the leaf modules of ``modules`` in order (``module.modules()`` order, i.e. the order
    in which the layers were registered), treating them as one chain x ↦ f_n(…f_1(x)), and
    multiplies ‖W‖₂ (``torch.linalg.matrix_norm(W, ord=2)``) of every ``nn.Linear`` with the
    constants of the activations: ReLU/ReLU6/Tanh/Hardtanh/Softplus/Identity/Flatten/Softmax
    1, LeakyReLU max(1, |slope|), ELU max(1, α), SiLU 1.0999, Sigmoid 1/4, Dropout 1 (eval
    mode only). Biases do not change the constant.

    Only pass the modules on the path from the observation to the logits, in order (e.g. the
    encoder and the policy head of an RLModule, not the value head): the function cannot see
    a module's ``forward`` and trusts that it applies its children in registration order,
    without skip connections. Layers it cannot bound (Conv, normalization, attention, …) are
    rejected rather than guessed.

    Args:
        *modules: One or more ``torch.nn.Module`` forming the chain, first layer first.

    Returns:
        The product of the per-layer constants (1.0 for a chain with no layers), a float >= 0.

    Raises:
        ValueError: If no module is given, an argument is not an ``nn.Module``, or a leaf layer
            is of an unsupported type (the message names the type), or Dropout is in
            training mode.

    """
    bound = 1.0
    for leaf in _leaves(modules):
        bound *= _leaf_constant(leaf)
    return bound


def _leaves(modules: tuple[nn.Module, ...]) -> list[nn.Module]:
    from torch import nn

    if not modules:
        raise ValueError("lipschitz_upper_bound needs at least one torch.nn.Module")
    leaves: list[nn.Module] = []
    for position, module in enumerate(modules):
        if not isinstance(module, nn.Module):
            raise ValueError(
                f"lipschitz_upper_bound: argument {position} must be a torch.nn.Module, "
                f"got {type(module).__name__}"
            )
        leaves.extend(leaf for leaf in module.modules() if next(leaf.children(), None) is None)
    return leaves


def policy_lipschitz_upper_bound(*modules: nn.Module) -> float:
    """Upper bound on the L2 Lipschitz constant of s ↦ softmax(chain(s)), chain ending in logits.

    Formula: (1/2)·B, with B the layered bound of Combettes & Pesquet (module docstring) on the
    chain whose last layer is W_c = (I − 11ᵀ/m)·W, W the weight of the last ``nn.Linear`` (the
    logits layer, m outputs); activations are bounded as in ``lipschitz_upper_bound``, and one
    whose slope can be negative (SiLU) splits the chain at its constant. Valid because softmax
    is 1/2-Lipschitz and ignores a common shift of its inputs, and because every activation
    with slopes in [0, c] is c·(I + N)/2 with N non-expansive (module docstring). Never above
    ``lipschitz_upper_bound(*modules) / 2``; for a linear chain it is half the norm of the
    centred product matrix, which for two outputs the policy attains where p = (1/2, 1/2).

    Args:
        *modules: The chain from the observation to the logits, first layer first; its last
            leaf must be the ``nn.Linear`` that outputs the logits.

    Returns:
        The bound, a float >= 0.

    Raises:
        ValueError: As ``lipschitz_upper_bound``, or if the last leaf is not an ``nn.Linear``.

    """
    import torch
    from torch import nn

    leaves = _leaves(modules)
    last = leaves[-1] if leaves else None
    if type(last) is not nn.Linear:
        raise ValueError(
            "policy_lipschitz_upper_bound: the chain must end in the nn.Linear layer that "
            f"outputs the logits, got {type(last).__name__ if last is not None else 'no layer'}"
        )
    weight = last.weight.detach().to(dtype=torch.float64)
    centred = weight - weight.mean(dim=0, keepdim=True)
    return SOFTMAX_LIPSCHITZ * _layered_bound(leaves[:-1], centred)


def _layered_bound(leaves: list[nn.Module], last_weight: Any) -> float:
    """Combettes-Pesquet bound (module docstring) for ``leaves`` followed by ``last_weight``.

    Consecutive linear layers merge into one matrix (exact); consecutive element-wise
    activations merge into one (slopes multiply, and it stays averaged if each is); an
    activation before the first linear layer and one that is not averaged are always split.
    """
    import torch
    from torch import nn

    matrices: list[Any] = []  # W_1 … W_n
    junctions: list[tuple[float, bool]] = []  # (c, averaged) between W_i and W_{i+1}
    leading = 1.0
    pending: tuple[float, bool] | None = None

    def add_linear(weight: Any) -> None:
        if not matrices:
            matrices.append(weight)
        elif pending is None:
            matrices[-1] = weight @ matrices[-1]
        else:
            junctions.append(pending)
            matrices.append(weight)

    for leaf in leaves:
        if type(leaf) is nn.Linear:
            add_linear(leaf.weight.detach().to(dtype=torch.float64))
            pending = None
            continue
        constant = _leaf_constant(leaf)  # validates the layer (raises for unsupported ones)
        if type(leaf) in (nn.Identity, nn.Flatten, nn.Dropout):
            continue  # the identity on the flat vectors the linear layers act on
        if not matrices:
            leading *= constant
            continue
        slope = _averaged_slope(leaf)
        step = (constant, False) if slope is None else (slope, True)
        pending = step if pending is None else (pending[0] * step[0], pending[1] and step[1])
    add_linear(last_weight)
    return leading * _split_sum(matrices, junctions)


def _split_sum(matrices: list[Any], junctions: list[tuple[float, bool]]) -> float:
    """Σ over split sets of the weighted products of merged stretches' spectral norms."""
    import torch

    count = len(matrices)
    # best[j]: the bound of W_j ⋯ W_1 with a split right after W_j (best[0] = 1).
    best = [1.0] + [0.0] * count
    for j in range(1, count + 1):
        stretch = matrices[j - 1]
        merged_weight = 1.0
        for i in range(j - 1, -1, -1):
            if i < j - 1:
                stretch = stretch @ matrices[i]
            norm = float(torch.linalg.matrix_norm(stretch, ord=2))
            split = 1.0
            if j < count:
                c, averaged = junctions[j - 1]
                split = c / 2.0 if averaged else c
            best[j] += best[i] * merged_weight * norm * split
            if i == 0:
                break
            c, averaged = junctions[i - 1]
            if not averaged:
                break  # a non-averaged activation cannot be merged through
            merged_weight *= c / 2.0
    return best[count]


def restricted_lipschitz(lipschitz: float, *, eta: float, num_actions: int) -> float:
    """Lipschitz constant of π̃ = (1 − mη)·π + η given that of π: (1 − mη)·L.

    Args:
        lipschitz: Lipschitz constant L of the unrestricted policy map, a finite number >= 0.
        eta: Restriction η in [0, 1/m).
        num_actions: m, an int >= 2.

    Returns:
        (1 − mη)·L.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    num_actions = check_int_in_range("num_actions", num_actions, low=2)
    if (
        isinstance(lipschitz, bool)
        or not isinstance(lipschitz, numbers.Real)
        or not 0.0 <= lipschitz < math.inf
    ):
        raise ValueError(f"lipschitz must be a finite number >= 0, got {lipschitz!r}")
    eta = _check_eta(eta, num_actions)
    return (1.0 - num_actions * eta) * float(lipschitz)
