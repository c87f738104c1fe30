"""Tests for the Lipschitz upper bound of feed-forward torch networks."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

from rllib_privacy.mechanisms import (
    lipschitz_upper_bound,
    policy_lipschitz_upper_bound,
    restrict_policy,
    restricted_lipschitz,
)

ACTIVATIONS = [
    nn.ReLU,
    nn.Tanh,
    lambda: nn.LeakyReLU(0.1),
    nn.ELU,
    nn.SiLU,
    nn.Sigmoid,
    nn.Softplus,
]


def random_mlp(seed: int, sizes: list[int], activation: type[nn.Module]) -> nn.Sequential:
    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:], strict=False)):
        layers.append(nn.Linear(fan_in, fan_out))
        if i < len(sizes) - 2:
            layers.append(activation())
    return nn.Sequential(*layers).double()


def largest_slope(f: nn.Module, dim: int, seed: int) -> float:
    """Largest ‖f(x) − f(y)‖₂ / ‖x − y‖₂ over random far and near pairs, and Jacobian norms."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(1000, dim, generator=generator, dtype=torch.float64) * 3.0
    far = torch.randn(1000, dim, generator=generator, dtype=torch.float64) * 3.0
    near = x + 1e-4 * torch.randn(1000, dim, generator=generator, dtype=torch.float64)
    with torch.no_grad():
        slopes = [(f(x) - f(y)).norm(dim=1) / (x - y).norm(dim=1) for y in (far, near)]
    # Rows are independent, so the Jacobian of the column sums holds every row's Jacobian.
    jacobians = torch.autograd.functional.jacobian(lambda z: f(z).sum(0), x[:200])
    jacobians = jacobians.permute(1, 0, 2)  # (row, output, input)
    jacobian_norm = float(torch.linalg.matrix_norm(jacobians, ord=2).max())
    return max(float(torch.cat(slopes).max()), jacobian_norm)


def test_one_layer_scalar_map_is_abs_weight() -> None:
    layer = nn.Linear(1, 1)
    with torch.no_grad():
        layer.weight.fill_(-2.5)
        layer.bias.fill_(7.0)
    assert lipschitz_upper_bound(layer) == pytest.approx(2.5, rel=1e-15)


def test_linear_chain_is_product_of_largest_singular_values() -> None:
    net = random_mlp(0, [5, 7, 3, 2], nn.Identity)
    expected = math.prod(
        float(np.linalg.svd(layer.weight.detach().numpy(), compute_uv=False)[0])
        for layer in net
        if isinstance(layer, nn.Linear)
    )
    assert lipschitz_upper_bound(net) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("seed", range(2))
def test_bound_dominates_finite_difference_slopes(activation: type[nn.Module], seed: int) -> None:
    net = random_mlp(seed, [4, 16, 16, 3], activation)
    policy = nn.Sequential(net, nn.Softmax(dim=-1))
    bound = lipschitz_upper_bound(policy)
    assert bound == pytest.approx(lipschitz_upper_bound(net), rel=1e-15)  # softmax: factor 1
    assert largest_slope(net, 4, seed) <= bound * (1 + 1e-9)
    assert largest_slope(policy, 4, seed) <= bound * (1 + 1e-9)


def test_activation_constants() -> None:
    first, second = nn.Linear(3, 4).double(), nn.Linear(4, 2).double()
    norms = lipschitz_upper_bound(first) * lipschitz_upper_bound(second)
    assert lipschitz_upper_bound(first, nn.Sigmoid(), second) == pytest.approx(norms / 4)
    assert lipschitz_upper_bound(first, nn.LeakyReLU(3.0), second) == pytest.approx(3 * norms)
    assert lipschitz_upper_bound(first, nn.ELU(alpha=2.0), second) == pytest.approx(2 * norms)
    assert lipschitz_upper_bound(first, nn.SiLU(), second) == pytest.approx(1.0999 * norms)
    for layer in (nn.ReLU(), nn.Tanh(), nn.Identity(), nn.Flatten(), nn.Dropout(0.5).eval()):
        assert lipschitz_upper_bound(first, layer, second) == pytest.approx(norms)


def test_silu_constant_is_a_tight_upper_bound() -> None:
    x = torch.linspace(-20, 20, 400_001, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(nn.functional.silu(x).sum(), x)
    # The often-quoted 1.0998 is below the true maximum 1.099839…: the bound uses 1.0999.
    assert 1.0998 < float(grad.abs().max()) <= 1.0999


def test_several_modules_form_one_chain() -> None:
    encoder = nn.Sequential(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), nn.Linear(8, 8), nn.Tanh())
    head = nn.Sequential(nn.Linear(8, 2))
    assert lipschitz_upper_bound(encoder, head) == pytest.approx(
        lipschitz_upper_bound(encoder) * lipschitz_upper_bound(head), rel=1e-15
    )


@pytest.mark.parametrize(
    ("layer", "name"),
    [
        (nn.Conv1d(1, 1, 3), "Conv1d"),
        (nn.BatchNorm1d(4), "BatchNorm1d"),
        (nn.LayerNorm(4), "LayerNorm"),
        (nn.GELU(), "GELU"),
    ],
)
def test_unsupported_layers_are_rejected(layer: nn.Module, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        lipschitz_upper_bound(nn.Sequential(nn.Linear(4, 4), layer))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least one"):
        lipschitz_upper_bound()
    with pytest.raises(ValueError, match="argument 1"):
        lipschitz_upper_bound(nn.Linear(2, 2), "relu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Dropout"):
        lipschitz_upper_bound(nn.Dropout(0.1).train())


def test_restricted_lipschitz_bounds_restricted_policy_slopes() -> None:
    eta, m = 0.05, 4
    net = random_mlp(3, [6, 32, 32, m], nn.ReLU)
    bound = restricted_lipschitz(lipschitz_upper_bound(net), eta=eta, num_actions=m)
    assert bound == pytest.approx((1 - m * eta) * lipschitz_upper_bound(net), rel=1e-15)
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(4000, 6, generator=generator, dtype=torch.float64)
    y = x + 0.05 * torch.randn(4000, 6, generator=generator, dtype=torch.float64)
    with torch.no_grad():
        px = restrict_policy(torch.softmax(net(x), dim=-1), eta=eta)
        py = restrict_policy(torch.softmax(net(y), dim=-1), eta=eta)
    slopes = (px - py).norm(dim=1) / (x - y).norm(dim=1)
    assert float(slopes.max()) <= bound


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"lipschitz": -1.0, "eta": 0.1, "num_actions": 2}, "lipschitz"),
        ({"lipschitz": math.inf, "eta": 0.1, "num_actions": 2}, "lipschitz"),
        ({"lipschitz": 1.0, "eta": 0.5, "num_actions": 2}, "eta"),
        ({"lipschitz": 1.0, "eta": 0.1, "num_actions": 1}, "num_actions"),
    ],
)
def test_restricted_lipschitz_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    lipschitz = kwargs.pop("lipschitz")
    with pytest.raises(ValueError, match=match):
        restricted_lipschitz(lipschitz, **kwargs)


# ---- the policy bound: softmax is 1/2-Lipschitz and ignores a common shift of the logits --


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize(("seed", "actions"), [(0, 2), (1, 3), (2, 6)])
def test_policy_bound_dominates_the_policy_slopes_and_halves_the_chain_bound(
    activation: type[nn.Module], seed: int, actions: int
) -> None:
    net = random_mlp(seed, [4, 16, 16, actions], activation)
    policy = nn.Sequential(net, nn.Softmax(dim=-1))
    bound = policy_lipschitz_upper_bound(net)
    assert bound <= lipschitz_upper_bound(net) / 2 * (1 + 1e-12)
    assert largest_slope(policy, 4, seed) <= bound * (1 + 1e-9)


def test_softmax_jacobian_norm_never_exceeds_one_half_and_reaches_it() -> None:
    generator = torch.Generator().manual_seed(3)
    logits = torch.randn(5000, 6, generator=generator, dtype=torch.float64) * 4.0
    p = torch.softmax(logits, dim=-1)
    jacobians = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)
    assert float(torch.linalg.matrix_norm(jacobians, ord=2).max()) <= 0.5
    half = torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64)
    at_half = torch.diag(half) - torch.outer(half, half)
    assert float(torch.linalg.matrix_norm(at_half, ord=2)) == pytest.approx(0.5, rel=1e-12)


def test_two_action_linear_policy_bound_is_attained() -> None:
    torch.manual_seed(4)
    layer = nn.Linear(3, 2).double()
    weight = layer.weight.detach()
    bound = policy_lipschitz_upper_bound(layer)
    assert bound == pytest.approx(math.sqrt(2) / 4 * float((weight[0] - weight[1]).norm()))
    # On the decision boundary (p = (1/2, 1/2)), along w₁ − w₂, the slope is the bound.
    direction = (weight[0] - weight[1]) / (weight[0] - weight[1]).norm()
    bias = layer.bias.detach()
    on_boundary = -(bias[0] - bias[1]) / (weight[0] - weight[1]).norm() * direction
    step = 1e-6 * direction
    policy = nn.Sequential(layer, nn.Softmax(dim=-1))
    with torch.no_grad():
        slope = (policy(on_boundary + step) - policy(on_boundary - step)).norm() / (2e-6)
    assert float(slope) == pytest.approx(bound, rel=1e-6)


def test_policy_bound_ignores_a_common_shift_of_the_logits() -> None:
    net = random_mlp(5, [4, 8, 3], nn.Tanh)
    before = policy_lipschitz_upper_bound(net)
    with torch.no_grad():
        net[-1].weight += torch.tensor([[1.0, -2.0, 0.5, 3.0, 0.0, 1.0, 2.0, -1.0]]).double()
    assert policy_lipschitz_upper_bound(net) == pytest.approx(before, rel=1e-12)
    assert lipschitz_upper_bound(net) > 2 * before  # the plain chain bound grew with the shift


def test_policy_bound_needs_the_logits_layer_last() -> None:
    with pytest.raises(ValueError, match="must end in the nn.Linear"):
        policy_lipschitz_upper_bound(nn.Sequential(nn.Linear(3, 2), nn.Softmax(dim=-1)))
    with pytest.raises(ValueError, match="at least one"):
        policy_lipschitz_upper_bound()


# ---- the layered bound (Combettes & Pesquet 2020) along the chain ------------------------


def _centred(weight: torch.Tensor) -> torch.Tensor:
    return weight - weight.mean(dim=0, keepdim=True)


def _spectral(matrix: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(matrix, ord=2))


def _subset_enumeration(weights: list[torch.Tensor], slope: float) -> float:
    """2^(n−1) terms written out: at each activation either I or N, weight (c/2) each."""
    total = 0.0
    for splits in itertools.product((False, True), repeat=len(weights) - 1):
        term, stretch = 1.0, weights[0]
        for weight, split in zip(weights[1:], splits, strict=True):
            if split:
                term *= _spectral(stretch)
                stretch = weight
            else:
                stretch = weight @ stretch
        total += term * _spectral(stretch)
    return total * (slope / 2.0) ** (len(weights) - 1)


def _vertex_maximum(weights: list[torch.Tensor], slope: float) -> float:
    """max ‖W_n D_{n−1} ⋯ D_1 W_1‖₂ over 0/1 diagonals times the slope: every Jacobian's bound.

    The Jacobian at any input is W_n·diag(σ')⋯diag(σ')·W_1 with σ' in [0, c]; its norm is
    convex in each diagonal, so the maximum over the box is at a vertex.
    """
    widths = [weight.shape[0] for weight in weights[:-1]]
    best = 0.0
    for mask in itertools.product((0.0, slope), repeat=sum(widths)):
        product, start = weights[0], 0
        for width, weight in zip(widths, weights[1:], strict=True):
            diagonal = torch.tensor(mask[start : start + width], dtype=torch.float64)
            product = weight @ (diagonal[:, None] * product)
            start += width
        best = max(best, _spectral(product))
    return best


@pytest.mark.parametrize(
    ("activation", "slope"), [(nn.Tanh, 1.0), (nn.ReLU, 1.0), (nn.Sigmoid, 0.25)]
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_layered_bound_matches_its_enumeration_and_dominates_every_jacobian(
    activation: type[nn.Module], slope: float, seed: int
) -> None:
    net = random_mlp(seed, [3, 5, 4, 3], activation)
    weights = [layer.weight.detach() for layer in net if isinstance(layer, nn.Linear)]
    weights[-1] = _centred(weights[-1])
    bound = policy_lipschitz_upper_bound(net)
    assert bound == pytest.approx(0.5 * _subset_enumeration(weights, slope), rel=1e-12)
    # Sound: at least the largest Jacobian norm any choice of slopes gives (then ½ for
    # softmax); tighter than the plain product.
    assert 0.5 * _vertex_maximum(weights, slope) <= bound * (1 + 1e-12)
    plain = 0.5 * slope ** (len(weights) - 1) * math.prod(_spectral(w) for w in weights)
    assert bound < plain


def test_layered_bound_of_a_linear_chain_is_its_product_matrix() -> None:
    torch.manual_seed(6)
    first, second = nn.Linear(4, 6).double(), nn.Linear(6, 2).double()
    product = second.weight.detach() @ first.weight.detach()
    bound = policy_lipschitz_upper_bound(first, nn.Identity(), second)
    assert bound == pytest.approx(0.5 * _spectral(_centred(product)), rel=1e-12)
    # Two actions: the composed linear policy attains it (see the one-layer test above).
    assert bound == pytest.approx(math.sqrt(2) / 4 * float((product[0] - product[1]).norm()))


def test_layered_bound_keeps_the_plain_product_through_a_non_monotone_activation() -> None:
    net = random_mlp(7, [4, 8, 8, 3], nn.SiLU)
    weights = [layer.weight.detach() for layer in net if isinstance(layer, nn.Linear)]
    expected = 0.5 * 1.0999**2 * _spectral(_centred(weights[-1]))
    expected *= _spectral(weights[0]) * _spectral(weights[1])
    assert policy_lipschitz_upper_bound(net) == pytest.approx(expected, rel=1e-12)


def test_layered_bound_merges_stacked_activations_and_splits_at_a_non_averaged_one() -> None:
    torch.manual_seed(8)
    first, second, third = (nn.Linear(a, b).double() for a, b in ((3, 5), (5, 4), (4, 3)))
    w1, w2, w3 = first.weight.detach(), second.weight.detach(), _centred(third.weight.detach())
    # Tanh then ReLU: one averaged activation (slopes in [0, 1]); then SiLU: always split.
    bound = policy_lipschitz_upper_bound(first, nn.Tanh(), nn.ReLU(), second, nn.SiLU(), third)
    stacked = 0.5 * (_spectral(w2 @ w1) + _spectral(w2) * _spectral(w1))
    assert bound == pytest.approx(0.5 * 1.0999 * _spectral(w3) * stacked, rel=1e-12)
    # SiLU then Tanh between two layers: the merged activation is not averaged.
    mixed = policy_lipschitz_upper_bound(first, nn.SiLU(), nn.Tanh(), second, nn.Tanh(), third)
    assert mixed == pytest.approx(
        0.5 * 1.0999 * _spectral(w1) * 0.5 * (_spectral(w3 @ w2) + _spectral(w3) * _spectral(w2)),
        rel=1e-12,
    )
