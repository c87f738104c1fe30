"""The smallest ε each mechanism can still be computed with in float64.

An ε can be legal (a number > 0) and still meaningless: ``1e-320`` is a subnormal float
(below ``sys.float_info.min`` = 2.2e-308), its per-release share ε/T can underflow to 0,
and a gradient mechanism's noise grows like 1/ε until the released vector, or its squared
norm, overflows to ``inf`` inside a worker. Such values are refused before a run starts,
with the smallest meaningful value named:

* every ε (and ε budget): a normal float, ``ε >= SMALLEST_NORMAL_EPSILON``;
* a gradient mechanism (``GradientMechanism``: Laplace, PRS, PrivUnitG, PrivUnit2): the
  smallest ε per release at which its per-coordinate noise scale ``s``
  (``GradientMechanism.noise_scale``) keeps ``dim·(TAIL·s)²`` finite for a gradient of up
  to ``DIM_BOUND`` entries (``TAIL`` scales: a Laplace draw exceeds ``TAIL·s`` with
  probability ``e^-TAIL``). Laplace's ``s = clip/ε`` gives ``ε ≥ TAIL·clip·sqrt(dim/max)``
  with ``max = sys.float_info.max``; PrivUnitG's and PrivUnit2's scale grows like ``1/ε``
  too (Asi, Feldman & Talwar, ICML 2022, §3), and PRS's debiased ``1/tanh(ε/(2d̂))``; the
  floor is found by bisection on ``noise_scale`` itself, so it follows the formulas the
  mechanisms use. PRS without debiasing releases ``±clip`` whatever ε is: only the normal
  float floor applies.

Pure (numpy/scipy through the mechanisms; no Ray).
"""

from __future__ import annotations

import functools
import math
import sys

from rllib_privacy._validation import SMALLEST_NORMAL_EPSILON, check_normal_epsilon

__all__ = [
    "DIM_BOUND",
    "SMALLEST_NORMAL_EPSILON",
    "TAIL",
    "check_normal_epsilon",
    "gradient_epsilon_floor",
]

#: Gradient entries the floors allow for (a 100M-parameter model).
DIM_BOUND = 10**8
#: Noise scales a released entry may reach (a Laplace draw beyond it: probability e^-TAIL).
TAIL = 100.0


def _round_up(value: float) -> float:
    """``value`` rounded up to two significant digits (a floor to quote and to pass)."""
    exponent = math.floor(math.log10(value)) - 1
    return math.ceil(value / 10.0**exponent) * 10.0**exponent


@functools.lru_cache(maxsize=64)
def gradient_epsilon_floor(
    name: str, *, clip: float, debias: bool = False, dim: int = DIM_BOUND
) -> float:
    """The smallest ε per release with which mechanism ``name`` stays finite (see module doc).

    Args:
        name: A ``GradientMechanism`` name (``"none"`` has no floor: 0.0).
        clip: The clipping bound C (the noise scales with it).
        debias: PRS's debiasing (its output grows like 1/ε only then).
        dim: Gradient entries to allow for.

    Returns:
        The floor, rounded up to two significant digits; at least
        ``SMALLEST_NORMAL_EPSILON`` for a private mechanism.
    """
    from rllib_privacy.mechanisms.gradient import GradientMechanism  # scipy: imported late

    if name == "none":
        return 0.0

    def finite(log_epsilon: float) -> bool:
        try:
            mechanism = GradientMechanism(
                name=name, epsilon=math.exp(log_epsilon), clip=clip, debias=debias
            )
            scale = mechanism.noise_scale(dim)
            return math.isfinite(scale) and math.isfinite(dim * (TAIL * scale) ** 2)
        except (ArithmeticError, ValueError):  # OverflowError, a formula giving up
            return False

    # The scales grow like 1/ε for small ε: one scale at ε0 puts the floor near
    # ε0·s(ε0)·TAIL·sqrt(dim/max); a short bisection around that estimate pins it down
    # (a bisection over the whole float range costs seconds for PrivUnit2's optimal γ).
    smallest = math.log(SMALLEST_NORMAL_EPSILON)
    if finite(smallest):
        return SMALLEST_NORMAL_EPSILON
    epsilon0 = 1e-3
    scale0 = GradientMechanism(name=name, epsilon=epsilon0, clip=clip, debias=debias).noise_scale(
        dim
    )
    estimate = epsilon0 * scale0 * TAIL * math.sqrt(dim / sys.float_info.max)
    low = max(smallest, math.log(max(estimate, SMALLEST_NORMAL_EPSILON)) - 5.0)
    high = math.log(max(estimate, SMALLEST_NORMAL_EPSILON)) + 5.0
    while not finite(high):  # The estimate was off: widen until finite (rarely runs).
        low, high = high, high + 10.0
    while finite(low) and low > smallest:
        low, high = max(smallest, low - 10.0), low
    for _ in range(12):  # a range of 10 in log space to 0.25 %: two significant digits
        middle = (low + high) / 2.0
        low, high = (low, middle) if finite(middle) else (middle, high)
    return max(_round_up(math.exp(high)), SMALLEST_NORMAL_EPSILON)
