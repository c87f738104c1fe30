"""Rényi DP of the Dirichlet mechanism: one release, composition, conversion to (ε, δ).

Setting (Gohari et al., "Privacy-Preserving Kickstarting Deep Reinforcement Learning with
Privacy-Aware Learners", §3): the teacher releases x ~ Dir(k·π̃(s)), where the restricted
policy π̃(s) lies in Δ_{m,η} = {x : Σx = 1, x_i ≥ η}. Two observations are adjacent when the
restricted policies they produce are at L2 distance at most ``radius`` (for a teacher whose
restricted map is L-Lipschitz and adjacency radius b in observation space, radius = L·b with
L = (1 − mη)·L_network, see ``rllib_privacy.mechanisms.restricted_lipschitz``).

One release is (a, ε(a))-RDP (Mironov, "Rényi Differential Privacy", CSF 2017) with

    ε(a) = sup { D_a(Dir(k·x) ‖ Dir(k·x')) : x, x' ∈ Δ_{m,η}, ‖x − x'‖₂ <= radius }.

The Rényi divergence between two Dirichlet distributions has a closed form (the
exponential-family formula; for m = 2, Beta, it is tabulated by Gil, Alajaji & Linder,
"Rényi divergence measures for commonly used univariate continuous distributions",
Information Sciences 2013): with ln B(v) = Σ lnΓ(v_i) − lnΓ(Σv_i),

    D_a(Dir(p) ‖ Dir(q)) = [ln B(a·p + (1−a)·q) − a·ln B(p) − (1−a)·ln B(q)] / (a − 1),

infinite when a·p + (1−a)·q has an entry <= 0. When Σp = Σq (here both are k) the lnΓ(Σ)
terms cancel and the divergence is a sum over coordinates,

    D_a = Σ_i g_a(p_i, q_i) / (a − 1),  g_a(u, v) = lnΓ(a·u + (1−a)·v) − a·lnΓ(u) − (1−a)·lnΓ(v),

with every g_a >= 0 (lnΓ is convex). Two facts about g_a drive the suprema below, both from
∂g_a/∂v = (a − 1)·(ψ(v) − ψ(w)) and ∂g_a/∂u = a·(ψ(w) − ψ(u)), w = a·u + (1−a)·v, ψ increasing:
for fixed u, g_a grows as v moves away from u (either way), and for fixed v it grows as u
moves away from v. Two more fix where the worst pair sits. Write one coordinate's pair as its
lower value l and l + d: g_a is then lnΓ at three points x_0, x_1, x_2 with weights 1, −a,
a − 1 and x_1 = (x_0 + (a − 1)·x_2)/a, namely k·(l − (a−1)d, l, l + d) when u = l (the
coordinate moves up) and k·(l + a·d, l + d, l) when u = l + d (it moves down). By Jensen's
inequality for the digamma ψ (concave) and the trigamma ψ' (convex), dg_a/dl =
k·(ψ(x_0) − a·ψ(x_1) + (a − 1)·ψ(x_2)) <= 0 and d²g_a/dl² = k²·(ψ'(x_0) − a·ψ'(x_1) +
(a − 1)·ψ'(x_2)) >= 0: **for a fixed move d, g_a falls and is convex as the pair's lower value
rises.**

* **m = 2 (exact).** Write x = (t, 1−t), x' = (t', 1−t'); ‖x − x'‖₂ = √2·|t − t'|. By the two
  monotonicity facts (each coordinate moves away from its partner when |t − t'| grows) the
  supremum is attained at the largest displacement s = min(radius/√2, 1 − 2η); by the
  symmetry x ↔ (x_2, x_1) it suffices to take t' = t + s, so the supremum is a 1-D maximum of
  F(t) = D_a(Beta(kt, k(1−t)) ‖ Beta(k(t+s), k(1−t−s))) over t ∈ [η, 1 − η − s]. F is the
  sum of coordinate 1's g_a (lower value t) and coordinate 2's (lower value 1 − t − s), each
  convex in t, so the maximum is at t = η or t = 1 − η − s, in closed form (a floating-point
  slack of a few ulps of the lnΓ terms is added, so that cancellation cannot put the result
  below the supremum).
* **m > 2 (safe upper bound).** Relax the pair to its coordinates: each (x_i, x'_i) lies in
  the box [η, 1 − (m−1)η]², the displacements d_i = x'_i − x_i satisfy Σd_i² <= radius² and,
  since Σd_i = 0, |d_i| <= d_max = min(radius·√((m−1)/m), 1 − mη). With G(σ) the largest
  coordinate term g_a(k·u, k·v)/(a − 1) over the box with |u − v| <= √σ (attained at the
  extreme displacement, as above, and at the lower value η, since g_a falls as the lower value
  rises; G⁺ >= G adds the rounding slack and is made nondecreasing),
  every admissible pair has D_a <= Σ_i G(d_i²) with Σ_i d_i² <= radius² and
  d_i² <= d_max². On the grid σ_j = j·d_max²/n a coordinate with d_i² ∈ (σ_{j−1}, σ_j]
  gains at most G⁺(σ_j) and its d_i² is at least σ_{j−1}: rounding every d_i² down to its
  grid point keeps the allocation within the budget, so the exact maximum of the discrete
  knapsack (m picks of j, Σ(j − 1) units <= radius²·n/d_max², solved by max-plus dynamic
  programming) bounds every admissible pair. The bound is finite exactly when the true
  supremum is ((a−1)·d_max < η).
  How loose: measured against the best admissible pairs that SLSQP finds from adversarial
  and random starts (``tests/unit/test_dirichlet_renyi.py``), the bound is 1.07-1.40 times the
  best pair at m = 3, 4, 6 (k = 1-20, η = 0.02-0.1, radius 0.05-0.2, orders at 30% and 80%
  of the finite range), loosest for m = 3 and low orders. The slack comes from the
  relaxation: each coordinate takes its own worst position x_i (near η, where lnΓ is
  steepest), while Σx_i = 1 lets at most m − 1 of them be small, and Σd_i = 0 is kept only
  through d_max.

Composition: RDP composes by addition at each order (Mironov 2017, Prop. 1), each release with
its own k (``compose_dirichlet_rdp``). Conversion to (ε, δ) (``rdp_to_epsilon``) uses
by default the bound of Canonne, Kamath & Steinke 2020 (Prop. 12) / Balle et al. 2020 (Thm. 21),
the one ``dp_accounting``'s RDP accountant uses, or Mironov's standard bound on request. The
result has no per-release δ and no ln(1/τ) term, unlike Theorem 1
(``rllib_privacy.accounting.dirichlet``).

The divergence is finite only below the order 1 + η/s (m = 2) or 1 + η/d_max (m > 2)
(``dirichlet_rdp_max_order``): pick orders below it, e.g. from ``DEFAULT_ORDERS``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np
from scipy import special

from rllib_privacy._validation import check_finite_positive, check_int_in_range
from rllib_privacy.accounting.dirichlet import _check_nonnegative

__all__ = [
    "DEFAULT_ORDERS",
    "compose_dirichlet_rdp",
    "dirichlet_renyi_divergence",
    "dirichlet_rdp",
    "dirichlet_rdp_max_order",
    "rdp_to_epsilon",
]

# Orders from 1.01 to 1001, 10% apart in a − 1: the Dirichlet curve is often finite only up to
# an order below 2, so the grid is dense close to 1.
DEFAULT_ORDERS: tuple[float, ...] = tuple(float(a) for a in 1.0 + np.geomspace(1e-2, 1e3, 121))

# Grid of σ = d² for the m > 2 bound (its step costs about one grid cell per coordinate).
_NUM_SIGMA = 256
# Orders within this relative margin below the finite limit are reported as infinite.
_FINITE_MARGIN = 1e-12
# Floating-point slack added to certified bounds, relative to the magnitude of the lnΓ sum.
_ROUNDING = 64 * np.finfo(float).eps


def _check_orders(orders: Any) -> np.ndarray:
    try:
        array = np.asarray(orders, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"orders must be finite numbers > 1, got {orders!r}") from exc
    if array.size == 0:
        raise ValueError("orders must have at least one entry, got an empty sequence")
    bad = ~(np.isfinite(array) & (array > 1.0))
    if np.any(bad):
        raise ValueError(f"orders must be finite numbers > 1, got {array[bad][0]!r}")
    return array


def _check_eta(eta: Any, num_actions: int) -> float:
    eta = check_finite_positive("eta", eta)
    if eta >= 1.0 / num_actions:
        raise ValueError(
            f"eta must be below 1/m = {1.0 / num_actions!r} (m = {num_actions} actions), "
            f"got {eta!r}"
        )
    return eta


def _check_common(eta: Any, radius: Any, num_actions: Any) -> tuple[float, float, int]:
    num_actions = check_int_in_range("num_actions", num_actions, low=2)
    return _check_eta(eta, num_actions), _check_nonnegative("radius", radius), num_actions


def _max_displacement(eta: float, radius: float, m: int) -> float:
    """Largest |x'_i − x_i| of one coordinate over admissible pairs (s for m = 2)."""
    return min(radius * math.sqrt((m - 1) / m), 1.0 - m * eta)


def dirichlet_rdp_max_order(*, eta: float, radius: float, num_actions: int) -> float:
    """The order at and above which one release's RDP ε is infinite.

    Some admissible pair makes a·k·x + (1−a)·k·x' non-positive exactly when
    (a − 1)·d_max >= η, d_max = min(radius·√((m−1)/m), 1 − mη) being the largest move of one
    coordinate (a coordinate at η moving up by d_max, the others making room). So ε(a) is
    finite iff a < 1 + η/d_max, for every k.

    Args:
        eta: Restriction η in (0, 1/m).
        radius: L2 distance allowed between adjacent restricted policies, >= 0.
        num_actions: m, an int >= 2.

    Returns:
        1 + η/d_max (``inf`` when radius is 0).

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    eta, radius, m = _check_common(eta, radius, num_actions)
    d_max = _max_displacement(eta, radius, m)
    return math.inf if d_max == 0.0 else 1.0 + eta / d_max


def dirichlet_renyi_divergence(alpha_order: float, p: Any, q: Any) -> float:
    """Rényi divergence D_a(Dir(p) ‖ Dir(q)) of order a > 1, in closed form.

    D_a = [ln B(a·p + (1−a)·q) − a·ln B(p) − (1−a)·ln B(q)] / (a − 1) with
    ln B(v) = Σ lnΓ(v_i) − lnΓ(Σv_i) (``scipy.special.gammaln``); ``inf`` when a·p + (1−a)·q
    has an entry <= 0 (the integral of p^a·q^(1−a) diverges). Gil, Alajaji & Linder (2013)
    give the Beta case; the Dirichlet case is the same exponential-family computation.

    Args:
        alpha_order: The order a, a finite number > 1.
        p: Concentration parameters of the first Dirichlet, positive finite, length m >= 2.
        q: Concentration parameters of the second Dirichlet, same length.

    Returns:
        D_a >= 0 in nats, or ``inf``.

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    if not _is_real(alpha_order) or not 1.0 < float(alpha_order) < math.inf:
        raise ValueError(f"alpha_order must be a finite number > 1, got {alpha_order!r}")
    order = float(alpha_order)
    p = _check_concentration("p", p)
    q = _check_concentration("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length, got {p.size} and {q.size}")
    if np.array_equal(p, q):
        return 0.0
    mixed = order * p + (1.0 - order) * q
    if np.any(mixed <= 0.0):
        return math.inf
    value = (_log_beta(mixed) - order * _log_beta(p) - (1.0 - order) * _log_beta(q)) / (order - 1.0)
    # >= 0 exactly (convexity of ln B); clip the round-off.
    return max(float(value), 0.0)


def _is_real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


def _check_concentration(name: str, value: Any) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 1-D array of finite numbers > 0") from exc
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"{name} must be a 1-D array with at least 2 entries, got {value!r}")
    if not np.all(np.isfinite(array) & (array > 0.0)):
        raise ValueError(f"{name} must contain only finite numbers > 0, got {value!r}")
    return array


def _log_beta(v: np.ndarray) -> float:
    return math.fsum(special.gammaln(v)) - float(special.gammaln(math.fsum(v)))


def _pair_terms(
    orders: np.ndarray, k: float, lower: Any, d: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """g_a(k·u, k·v) for one coordinate whose two values are ``lower`` and ``lower + d``.

    Returns:
        (up, down, magnitude): up has (u, v) = (l, l + d), down (u, v) = (l + d, l), and
        magnitude bounds the lnΓ terms' sizes (for the rounding slack). Shapes broadcast
        ``orders[:, None]`` against ``lower`` and ``d``.

    """
    a = orders[:, None]
    at_lower = special.gammaln(k * lower)
    at_upper = special.gammaln(k * (lower + d))
    up_first = special.gammaln(k * (lower - (a - 1.0) * d))
    down_first = special.gammaln(k * (lower + a * d))
    up = up_first - a * at_lower + (a - 1.0) * at_upper
    down = down_first - a * at_upper + (a - 1.0) * at_lower
    magnitude = (
        np.abs(a * at_lower)
        + np.abs(a * at_upper)
        + np.maximum(np.abs(up_first), np.abs(down_first))
    )
    return up, down, magnitude


def _exact_two_actions(orders: np.ndarray, k: float, eta: float, radius: float) -> np.ndarray:
    """Exact supremum for m = 2 at finite orders (module docstring)."""
    s = min(radius / math.sqrt(2.0), 1.0 - 2.0 * eta)
    # x = (t, 1−t), x' = (t+s, 1−t−s): coordinate 1 moves up from t, coordinate 2 down to
    # 1 − t − s. F(t) is convex, so its maximum over [η, 1 − η − s] is at an end.
    ends = np.array([eta, 1.0 - eta - s])
    first_up, _, first_size = _pair_terms(orders, k, ends, np.array(s))
    _, second_down, second_size = _pair_terms(orders, k, 1.0 - ends - s, np.array(s))
    value = np.max(first_up + second_down + _ROUNDING * (first_size + second_size), axis=1)
    return np.maximum(value, 0.0) / (orders - 1.0)


def _max_plus_knapsack(values: np.ndarray, budget: int, items: int) -> np.ndarray:
    """Per row r, the maximum of Σ_i values[r, w_i] over ``items`` picks with Σ_i w_i <= budget.

    Every row must be nondecreasing in w (then more budget never hurts, and a budget of at least
    ``items·(n − 1)`` lets every pick take the last weight).

    Args:
        values: Gains, shape (R, n), nondecreasing along each row.
        budget: Total weight allowed, an int >= 0.
        items: Number of picks, an int >= 1.

    Returns:
        The maxima, shape (R,).

    """
    rows, n = values.shape
    if budget >= items * (n - 1):
        return items * values[:, -1]
    # best[r, b]: the maximum over the picks made so far with total weight <= b.
    best = np.zeros((rows, budget + 1))
    reversed_values = values[:, ::-1]
    # Rows in chunks keep the (rows, budget + 1, n) window within a few tens of MB.
    chunk = max(1, 4_000_000 // ((budget + 1) * n))
    for _ in range(items - 1):
        padded = np.concatenate([np.full((rows, n - 1), -np.inf), best], axis=1)
        # windows[r, b, j] = best[r, b + j − (n − 1)], paired with the weight w = n − 1 − j.
        windows = np.lib.stride_tricks.sliding_window_view(padded, n, axis=1)
        for start in range(0, rows, chunk):
            stop = start + chunk
            best[start:stop] = (windows[start:stop] + reversed_values[start:stop, None, :]).max(
                axis=2
            )
    # The last pick only needs the full budget: max over w of best[budget − w] + values[w].
    weights = np.arange(min(n, budget + 1))
    return (best[:, budget - weights] + values[:, weights]).max(axis=1)


def _coordinate_maxima(
    orders: np.ndarray, k: float, eta: float, displacements: np.ndarray
) -> np.ndarray:
    """Upper bounds on G: the largest g_a(k·u, k·v) over the box with |u − v| = d, per (a, d).

    The maximum over the pair's lower point l ∈ [η, 1 − (m−1)η − d] is at l = η (module
    docstring), in closed form plus a rounding slack of a few ulps of the lnΓ terms, so that
    cancellation cannot put it below the maximum.

    Returns:
        Shape (orders, displacements).

    """
    up, down, magnitude = _pair_terms(orders, k, np.array(eta), displacements[None, :])
    return np.maximum(up, down) + _ROUNDING * magnitude


def _relaxed_bound(orders: np.ndarray, k: float, eta: float, radius: float, m: int) -> np.ndarray:
    """Safe upper bound for m > 2 at finite orders (module docstring)."""
    d_max = _max_displacement(eta, radius, m)
    # σ_j = j·Δ, Δ = d_max²/n: a coordinate with σ ∈ (σ_{j−1}, σ_j] uses j − 1 budget units
    # (rounded down, so every admissible allocation fits) and gains at most G⁺(σ_j).
    unit = d_max**2 / _NUM_SIGMA
    displacements = np.sqrt(unit * np.arange(1, _NUM_SIGMA + 1))
    per_sigma = _coordinate_maxima(orders, k, eta, displacements)
    # Σσ_i <= radius²; the relative margin only widens the budget (safe) against rounding.
    budget = math.floor(radius**2 / unit * (1.0 + 1e-12))
    # G is nondecreasing, so a running maximum of upper bounds is still an upper bound.
    values = np.maximum.accumulate(np.maximum(per_sigma, 0.0), axis=1)
    return _max_plus_knapsack(values, budget, m) / (orders - 1.0)


def dirichlet_rdp(
    orders: Any, *, k: float, eta: float, radius: float, num_actions: int
) -> np.ndarray:
    """RDP ε of one Dirichlet release Dir(k·x), x ∈ Δ_{m,η}, at each order.

    ε(a) = sup D_a(Dir(k·x) ‖ Dir(k·x')) over x, x' ∈ Δ_{m,η} with ‖x − x'‖₂ <= radius (the
    adjacency assumption: adjacent observations give restricted policies at most ``radius``
    apart, radius = (1 − mη)·L·b for a teacher network with Lipschitz constant L and
    adjacency radius b). Exact for m = 2 (plus a rounding slack that keeps it above the
    supremum), a safe upper bound for m > 2 (module docstring: the argument, and how loose it
    is). Orders at or above ``dirichlet_rdp_max_order`` give ``inf``.

    ε(a) is nondecreasing in k but does not vanish as k → 0: with lnΓ(z) ≈ −ln z for small z
    the k cancels and D_a tends to Σ_i ln(x_i^a·x'_i^(1−a) / (a·x_i + (1−a)·x'_i))/(a − 1)
    (0.59 at a = 1.05 for m = 2, η = 0.05, radius = 0.1, against 0.67 at k = 5), so a
    vanishing k lowers the cost of a release only down to that floor.

    Args:
        orders: Rényi orders a, finite numbers > 1 (a scalar or a sequence).
        k: Concentration k, a finite number > 0.
        eta: Restriction η in (0, 1/m).
        radius: L2 distance allowed between the two restricted policies, a finite number >= 0.
        num_actions: m, an int >= 2.

    Returns:
        float64 array of ε(a), one per order (0 everywhere when radius is 0).

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    orders = _check_orders(orders)
    k = check_finite_positive("k", k)
    eta, radius, m = _check_common(eta, radius, num_actions)
    result = np.zeros(orders.size)
    if radius == 0.0:
        return result
    # The margin keeps an order that rounds to just below 1 + η/d_max infinite (the value
    # there would be a huge finite number that rests on the rounding).
    finite = (orders - 1.0) * _max_displacement(eta, radius, m) < eta * (1.0 - _FINITE_MARGIN)
    result[~finite] = math.inf
    if np.any(finite):
        if m == 2:
            result[finite] = _exact_two_actions(orders[finite], k, eta, radius)
        else:
            result[finite] = _relaxed_bound(orders[finite], k, eta, radius, m)
    return result


def _release_counts(ks: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(ks, Mapping):
        items = list(ks.items())
        ks_values = [check_finite_positive("ks (a key)", key) for key, _ in items]
        ks_counts = [check_int_in_range("ks (a count)", count, low=0) for _, count in items]
        return np.asarray(ks_values, dtype=np.float64), np.asarray(ks_counts, dtype=np.int64)
    if isinstance(ks, numbers.Real) or not isinstance(ks, Iterable | np.ndarray):
        raise ValueError(
            f"ks must be a sequence of k (one per release) or a mapping k -> count, got {ks!r}"
        )
    try:
        array = np.asarray(ks, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"ks must contain only finite numbers > 0, got {ks!r}") from exc
    bad = ~(np.isfinite(array) & (array > 0.0))
    if np.any(bad):
        raise ValueError(f"ks must contain only finite numbers > 0, got {array[bad][0]!r}")
    values, counts = np.unique(array, return_counts=True)
    return values, counts


def compose_dirichlet_rdp(
    orders: Any, ks: Any, *, eta: float, radius: float, num_actions: int
) -> np.ndarray:
    """RDP ε of a sequence of Dirichlet releases, each with its own k (Mironov 2017, Prop. 1).

    ε_total(a) = Σ_releases ε_k(a) with ε_k from ``dirichlet_rdp``. Releases that share a
    k are counted, not looped over: ``dirichlet_rdp`` runs once per distinct k.

    Args:
        orders: Rényi orders a, finite numbers > 1.
        ks: Either one k per release (a sequence, e.g. 10⁵ entries) or a mapping
            ``{k: number of releases}``.
        eta: Restriction η in (0, 1/m).
        radius: L2 distance allowed between adjacent restricted policies, >= 0.
        num_actions: m, an int >= 2.

    Returns:
        float64 array of the composed ε(a), one per order (0 for no releases).

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    orders = _check_orders(orders)
    eta, radius, m = _check_common(eta, radius, num_actions)
    values, counts = _release_counts(ks)
    total = np.zeros(orders.size)
    for k, count in zip(values, counts, strict=True):
        if count:
            total += count * dirichlet_rdp(orders, k=k, eta=eta, radius=radius, num_actions=m)
    return total


def rdp_to_epsilon(
    orders: Any,
    rdp: Any,
    delta: float,
    *,
    conversion: Literal["tight", "standard"] = "tight",
) -> float:
    """Convert an RDP curve to ε at δ, minimising over the orders.

    * ``"tight"`` (default; Canonne, Kamath & Steinke 2020, Prop. 12; Balle et al. 2020,
      Thm. 21; what ``dp_accounting.rdp.compute_epsilon`` uses):
      ε(a) = rdp(a) + ln(1 − 1/a) − (ln δ + ln a)/(a − 1), and ε = 0 at an order where
      δ² + e^(−rdp(a)) − 1 > 0 (the total variation bound sqrt(1 − e^(−KL)) is below δ).
      Unlike ``dp_accounting`` (which returns ``inf`` below a = 1.01 for numerical
      reasons) every order > 1 is used; the formula is valid there.
    * ``"standard"`` (Mironov 2017, Prop. 3): ε(a) = rdp(a) + ln(1/δ)/(a − 1); never smaller.

    Args:
        orders: Rényi orders, finite numbers > 1.
        rdp: RDP ε at each order, numbers >= 0 (``inf`` allowed), same length.
        delta: Target δ in (0, 1).
        conversion: ``"tight"`` or ``"standard"``.

    Returns:
        ε >= 0 (``inf`` when every order is infinite).

    Raises:
        ValueError: If an argument is out of range (the message names it).

    """
    orders = _check_orders(orders)
    try:
        curve = np.asarray(rdp, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"rdp must be numbers >= 0 (inf allowed), got {rdp!r}") from exc
    if curve.shape != orders.shape:
        raise ValueError(
            f"rdp must have one entry per order, got {curve.size} for {orders.size} orders"
        )
    if np.any(np.isnan(curve) | (curve < 0.0)):
        raise ValueError(f"rdp must be numbers >= 0 (inf allowed), got {rdp!r}")
    if not _is_real(delta) or not 0.0 < float(delta) < 1.0:
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
    if conversion not in ("tight", "standard"):
        raise ValueError(f"conversion must be 'tight' or 'standard', got {conversion!r}")
    delta = float(delta)
    if conversion == "tight":
        return max(0.0, float(np.min(_tight_epsilons(orders, curve, delta))))
    with np.errstate(over="ignore", invalid="ignore"):
        eps = curve + math.log(1.0 / delta) / (orders - 1.0)
    eps = np.where(np.isinf(curve), math.inf, eps)
    return max(0.0, float(np.min(eps)))


def _tight_conversion(orders: Any, delta: float) -> Any:
    """ln(1 − 1/a) − (ln δ + ln a)/(a − 1): what the tight conversion adds to rdp(a)."""
    return np.log1p(-1.0 / orders) - (math.log(delta) + np.log(orders)) / (orders - 1.0)


def _tight_epsilons(orders: np.ndarray, curves: np.ndarray, delta: float) -> np.ndarray:
    """ε(a) of the tight conversion at every order (the last axis of ``curves``).

    0 where δ² + e^(−rdp(a)) − 1 > 0, ``inf`` where rdp(a) is; validated inputs only.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        eps = curves + _tight_conversion(orders, delta)
        eps = np.where(delta**2 + np.expm1(-curves) > 0.0, 0.0, eps)
    return np.where(np.isinf(curves), math.inf, eps)
