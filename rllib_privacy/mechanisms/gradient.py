"""A small, validated description of how a gradient is privatized before it leaves an agent.

``GradientMechanism`` is what configs and plug-ins hold: it names the mechanism
(``"laplace"`` = Ono & Takahashi Alg. 2, ``"prs"`` = Alg. 3, ``"privunitg"`` / ``"privunit2"``
= the optimal L2-ball mechanisms of docs/components/ldp-a3c.md, ``"none"`` = no privacy) with its
parameters, checks them once, and applies them with ``GradientMechanism.privatize`` (one
gradient) or ``GradientMechanism.privatize_rows`` (one release per row, vectorized).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np

from rllib_privacy._validation import (
    as_float64_array,
    check_bool,
    check_finite_positive,
    check_generator,
    check_int_in_range,
    encode_inf,
    is_torch_tensor,
    restore_kind,
)
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms.laplace import laplace_gradient
from rllib_privacy.mechanisms.output_checks import (
    DEFAULT_FALSE_REJECTION_RATE,
    check_finite_vector,
    laplace_bounds,
    max_inner_product_l1_linf,
    privunit2_t_second_moment,
    privunitg_alpha_second_moment,
    privunitg_norm_bound,
    relative_tolerance,
)
from rllib_privacy.mechanisms.privunit import (
    privunit2,
    privunit2_mse,
    privunit2_optimal_gamma,
    privunit2_rows,
    privunit2_scale,
    privunitg,
    privunitg_mse,
    privunitg_optimal_gamma,
    privunitg_rows,
    privunitg_scale,
)
from rllib_privacy.mechanisms.projected_random_sign import (
    projected_random_sign,
    prs_reduced_dim,
)
from rllib_privacy.mechanisms.secure_noise import os_entropy_generator, secure_laplace

__all__ = ["MECHANISM_NAMES", "GradientMechanism"]

GradT = TypeVar("GradT")

MECHANISM_NAMES: tuple[str, ...] = ("laplace", "prs", "privunitg", "privunit2", "none")
_PRIVUNIT_NAMES = ("privunitg", "privunit2")
_FIELDS = ("name", "epsilon", "clip", "reduced_dim", "debias", "secure_mode")
_INF_STRINGS = ("inf", "infinity")


def _copy(grad: Any) -> Any:
    """An unprivatized copy: a detached clone of a torch tensor, else a numpy copy."""
    if is_torch_tensor(grad):
        return grad.detach().clone()
    return np.array(grad, copy=True)


@dataclasses.dataclass(frozen=True)
class GradientMechanism:
    """How a gradient is privatized before submission; one call = one release.

    Attributes:
        name: One of ``MECHANISM_NAMES``: ``"laplace"`` (Alg. 2, Laplace noise of scale
            ``clip/epsilon`` after L1 clipping to ``clip/2``), ``"prs"`` (Alg. 3, projected
            random sign with projected coordinates clipped to ``[-clip, clip]``),
            ``"privunitg"`` / ``"privunit2"`` (PrivUnitG / PrivUnit2 after L2 clipping to
            ``clip``, with the MSE-optimal γ: unbiased, pure ε-LDP, docs/components/ldp-a3c.md) or
            ``"none"`` (no privacy: the gradient is passed on unchanged).
        epsilon: ε of one release, a finite number > 0 for every mechanism but ``"none"``,
            for which it must be ``math.inf``.
        clip: Clipping size C, a finite number > 0 (required but unused for ``"none"``):
            the L1 bound is ``C/2`` for ``"laplace"``, the L2 bound is ``C`` for
            ``"privunitg"``/``"privunit2"``, the bound on each projected coordinate for
            ``"prs"`` (see ``clip_norm``, ``clip_bound``).
        reduced_dim: PRS only: d̂ (an int >= 1, at most the gradient's size); None uses
            ``prs_reduced_dim``. Must be None otherwise.
        debias: PRS only: rescale the output to be unbiased when nothing is clipped (see
            ``projected_random_sign``). Must be False otherwise.
        secure_mode: Floating-point-safe noise from OpenDP / OS entropy
            (docs/secure-noise.md); same ε, the ``rng`` passed to ``privatize`` is then ignored.

    Raises:
        PrivacyConfigError: (a ``ValueError``) naming the offending field and what is
            allowed, on construction.

    """

    name: str
    epsilon: float
    clip: float
    reduced_dim: int | None = None
    debias: bool = False
    secure_mode: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or self.name not in MECHANISM_NAMES:
            raise PrivacyConfigError(
                f"name must be one of {', '.join(map(repr, MECHANISM_NAMES))}, got {self.name!r}"
            )
        if self.name == "none":
            if isinstance(self.epsilon, bool) or self.epsilon != math.inf:
                raise PrivacyConfigError(
                    "epsilon must be math.inf for name='none' (no privacy), "
                    f"got {self.epsilon!r}; use a private mechanism such as name='laplace' "
                    "for a finite epsilon"
                )
            epsilon = math.inf
        else:
            epsilon = check_finite_positive("epsilon", self.epsilon, error=PrivacyConfigError)
        clip = check_finite_positive("clip", self.clip, error=PrivacyConfigError)
        reduced_dim = self.reduced_dim
        if reduced_dim is not None:
            if self.name != "prs":
                raise PrivacyConfigError(
                    f"reduced_dim is only allowed with name='prs', got reduced_dim="
                    f"{reduced_dim!r} with name={self.name!r}; leave it None"
                )
            reduced_dim = check_int_in_range(
                "reduced_dim", reduced_dim, low=1, error=PrivacyConfigError
            )
        if not isinstance(self.debias, bool | np.bool_):
            raise PrivacyConfigError(f"debias must be True or False, got {self.debias!r}")
        if self.debias and self.name != "prs":
            raise PrivacyConfigError(
                f"debias=True is only allowed with name='prs', got name={self.name!r}"
            )
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "clip", clip)
        object.__setattr__(self, "reduced_dim", reduced_dim)
        object.__setattr__(self, "debias", bool(self.debias))
        secure_mode = check_bool("secure_mode", self.secure_mode, error=PrivacyConfigError)
        object.__setattr__(self, "secure_mode", secure_mode)

    @property
    def epsilon_per_release(self) -> float:
        """ε spent by one ``privatize`` call (``math.inf`` for ``"none"``)."""
        return self.epsilon

    @property
    def clip_norm(self) -> str | None:
        """Which norm ``clip_bound`` bounds.

        ``"l1"`` (``"laplace"``: the whole gradient's L1 norm), ``"linf_projected"``
        (``"prs"``: each coordinate of the random projection ``Mg``), ``"l2"``
        (``"privunitg"``/``"privunit2"``: the gradient's L2 norm) or None (``"none"``).
        """
        return {
            "laplace": "l1",
            "prs": "linf_projected",
            "privunitg": "l2",
            "privunit2": "l2",
        }.get(self.name)

    @property
    def clip_bound(self) -> float | None:
        """The bound gradients are clipped to, in ``clip_norm``.

        ``clip/2`` for ``"laplace"`` (any two clipped gradients are then at L1 distance at
        most ``clip``), ``clip`` for the others, None for ``"none"``.
        """
        if self.name == "none":
            return None
        if self.name == "laplace":
            return self.clip / 2.0
        return self.clip

    def reduced_dim_for(self, dim: int) -> int:
        """Return the d̂ PRS uses for a gradient of ``dim`` entries.

        Args:
            dim: Number of entries of the gradient, an int >= 1.

        Returns:
            ``reduced_dim`` if set, else ``prs_reduced_dim(epsilon, dim)``.

        Raises:
            ValueError: If this is not a ``"prs"`` mechanism, ``dim`` is not an int >= 1,
                or ``reduced_dim`` exceeds ``dim``.

        """
        if self.name != "prs":
            raise ValueError(f"reduced_dim_for needs name='prs', got name={self.name!r}")
        dim = check_int_in_range("dim", dim, low=1)
        if self.reduced_dim is None:
            return prs_reduced_dim(self.epsilon, dim)
        return check_int_in_range("reduced_dim", self.reduced_dim, low=1, high=dim)

    def noise_scale(self, dim: int) -> float:
        """Return the per-coordinate noise magnitude of one release, for logging.

        ``"laplace"``: the Laplace scale ``clip/epsilon``. ``"prs"``: the magnitude of each
        released projected coordinate, ``clip`` (``clip/(c·d̂)`` with ``debias``, where
        ``c = tanh(epsilon/(2·d̂))``). ``"privunitg"``/``"privunit2"``: the per-coordinate
        RMS error of one release of a gradient with ``‖g‖₂ = clip``,
        ``clip·sqrt(mse/dim)`` with ``mse`` from
        ``privunitg_mse`` /
        ``privunit2_mse`` (optimal γ). ``"none"``: 0.0.

        Args:
            dim: Number of entries of the gradient, an int >= 1.

        Returns:
            The scale, a float >= 0.

        Raises:
            ValueError: If ``dim`` is not an int >= 1 or is smaller than ``reduced_dim``.

        """
        dim = check_int_in_range("dim", dim, low=1)
        if self.name == "laplace":
            return self.clip / self.epsilon
        if self.name == "prs":
            reduced_dim = self.reduced_dim_for(dim)
            if self.debias:
                return self.clip / (math.tanh(self.epsilon / (2.0 * reduced_dim)) * reduced_dim)
            return self.clip
        if self.name == "privunitg":
            return self.clip * math.sqrt(privunitg_mse(self.epsilon, dim) / dim)
        if self.name == "privunit2":
            return self.clip * math.sqrt(privunit2_mse(self.epsilon, dim) / dim)
        return 0.0

    def privatize(self, grad: GradT, rng: np.random.Generator | None = None) -> GradT:
        """Release ``grad`` through this mechanism.

        Args:
            grad: numpy array or torch tensor (any shape/float dtype/device).
            rng: numpy Generator for the noise; None uses a fresh unseeded one. Ignored
                with ``secure_mode``.

        Returns:
            The released gradient, of the same kind, shape, dtype and device as ``grad``.
            For ``"none"`` a copy of ``grad`` (detached for torch), not validated.

        Raises:
            ValueError: As ``laplace_gradient``,
                ``projected_random_sign``,
                ``privunitg`` or
                ``privunit2``.

        """
        if self.name == "laplace":
            return laplace_gradient(
                grad, epsilon=self.epsilon, clip=self.clip, rng=rng, secure_mode=self.secure_mode
            )
        if self.name == "prs":
            return projected_random_sign(
                grad,
                epsilon=self.epsilon,
                clip=self.clip,
                reduced_dim=self.reduced_dim,
                rng=rng,
                debias=self.debias,
                secure_mode=self.secure_mode,
            )
        if self.name in _PRIVUNIT_NAMES:
            release = privunitg if self.name == "privunitg" else privunit2
            return release(
                grad, epsilon=self.epsilon, clip=self.clip, rng=rng, secure_mode=self.secure_mode
            )
        return _copy(grad)

    def privatize_rows(self, grads: GradT, rng: np.random.Generator | None = None) -> GradT:
        """Release every row of ``grads`` as its own gradient: ``n`` independent releases.

        Row ``i`` of the result has the law of ``privatize(grads[i], rng)`` and costs one
        release's ε (``epsilon_per_release``), so a ledger must record ``n`` releases.

        - ``"laplace"``: each row L1-clipped to ``clip/2``, plus Laplace noise of scale
          ``clip/epsilon`` per entry (vectorized; OpenDP's sampler in secure mode).
        - ``"prs"``: ``projected_random_sign`` on each row
          (a loop: every row draws its own projection).
        - ``"privunitg"``/``"privunit2"``: ``privunitg_rows``
          / ``privunit2_rows`` (vectorized).
        - ``"none"``: a copy (detached for torch), not validated.

        Args:
            grads: Shape ``(n, d)``: numpy array or torch tensor (float dtype, any device),
                all entries finite.
            rng: numpy Generator for the noise; None uses a fresh unseeded one. Ignored
                with ``secure_mode``.

        Returns:
            The ``(n, d)`` releases, of the same kind and floating dtype as ``grads`` (same
            device for torch).

        Raises:
            ValueError: If ``grads`` is not 2-D, is empty or contains NaN/inf (nothing is
                released), or ``rng`` is not a Generator or None.

        """
        if self.name == "none":
            return _copy(grads)
        if self.name == "privunitg":
            return privunitg_rows(
                grads, epsilon=self.epsilon, clip=self.clip, rng=rng, secure_mode=self.secure_mode
            )
        if self.name == "privunit2":
            return privunit2_rows(
                grads, epsilon=self.epsilon, clip=self.clip, rng=rng, secure_mode=self.secure_mode
            )
        rows = as_float64_array("grads", grads)
        if rows.ndim != 2:
            raise ValueError(
                f"grads must be a 2-D array of shape (n, d), one release per row, got shape "
                f"{rows.shape}"
            )
        rng = os_entropy_generator() if self.secure_mode else check_generator(rng)
        if self.name == "prs":
            output = np.stack(
                [
                    projected_random_sign(
                        row,
                        epsilon=self.epsilon,
                        clip=self.clip,
                        reduced_dim=self.reduced_dim,
                        rng=rng,
                        debias=self.debias,
                        secure_mode=self.secure_mode,
                    )
                    for row in rows
                ]
            )
            return restore_kind(output, grads)
        # "laplace": the L1 clip of laplace_gradient, per row (overflow-safe norms).
        bound = self.clip / 2.0
        largest = np.max(np.abs(rows), axis=1, keepdims=True)
        safe = np.where(largest > 0.0, largest, 1.0)
        with np.errstate(over="ignore"):
            l1_norm = largest * np.sum(np.abs(rows) / safe, axis=1, keepdims=True)
        rows *= np.where(l1_norm > bound, bound / np.where(l1_norm > 0.0, l1_norm, 1.0), 1.0)
        scale = self.clip / self.epsilon
        if self.secure_mode:
            return restore_kind(secure_laplace(rows, scale), grads)
        rows += rng.laplace(loc=0.0, scale=scale, size=rows.shape)
        return restore_kind(rows, grads)

    def check_output(
        self,
        vector: Any,
        *,
        dim: int | None = None,
        false_rejection_rate: float = DEFAULT_FALSE_REJECTION_RATE,
    ) -> str | None:
        """Whether ``vector`` is an output this mechanism can emit (``None``) or why not.

        Always: a 1-D float32/float64 numpy array of ``dim`` finite entries. Then, with
        the rounding tolerance of ``relative_tolerance``
        (``rllib_privacy.mechanisms.output_checks`` derives every set):

        - ``"privunit2"``: L2 norm exactly ``C/m``. Never refuses an honest output.
        - ``"privunitg"``: L2 norm at most ``C·privunitg_norm_bound`` (an honest output
          exceeds it w.p. at most ``false_rejection_rate``).
        - ``"prs"``: every entry a multiple ``k`` of ``√3·C`` (of ``√3·C/(c·d̂)`` with
          ``debias``) with ``|k| ≤ d̂``. Never refuses an honest output.
        - ``"laplace"``: L1 norm and largest entry within ``laplace_bounds`` (an honest
          output fails either w.p. at most ``false_rejection_rate``).
        - ``"none"``: nothing more (any finite vector).

        Args:
            vector: The received vector (a malicious sender chooses it freely).
            dim: Expected number of entries; None takes ``vector``'s (a 1-D array).
            false_rejection_rate: r in (0, 0.5]: the most that honest outputs may be
                refused (PrivUnitG, Laplace).

        Returns:
            None if the vector is in the output set, else a one-line reason.

        Raises:
            ValueError: If ``false_rejection_rate`` is not in (0, 0.5] or ``dim`` is not
                an int >= 1.

        """
        rate = _check_rate(false_rejection_rate)
        reason = check_finite_vector(vector, None if dim is None else _check_dim(dim))
        if reason is not None or self.name == "none":
            return reason
        size = int(vector.size)
        tolerance = relative_tolerance(vector.dtype, size)
        bounds = _output_bounds(self, size, rate)
        values = vector.astype(np.float64)
        if self.name == "prs":
            units = values / bounds.unit
            nearest = np.rint(units)
            # An entry k·unit rounded (sender cast, float64 sums of d̂ terms): |k|·tolerance.
            slack = (np.abs(nearest) + 1.0) * tolerance
            if np.any(np.abs(units - nearest) > slack) or np.any(np.abs(nearest) > bounds.count):
                return (
                    f"entries not in the PRS support {{k·{bounds.unit:.6g}: k integer, "
                    f"|k| <= {bounds.count}}}"
                )
            return None
        if self.name == "laplace":
            l1 = float(np.sum(np.abs(values)))
            largest = float(np.max(np.abs(values)))
            if l1 > bounds.norm * (1.0 + tolerance):
                return f"L1 norm {l1:.6g} above the Laplace bound {bounds.norm:.6g}"
            if largest > bounds.entry * (1.0 + tolerance):
                return f"entry {largest:.6g} above the Laplace per-entry bound {bounds.entry:.6g}"
            return None
        norm = float(np.linalg.norm(values))
        slack = bounds.norm * tolerance + bounds.secure_slack
        if self.name == "privunit2" and abs(norm - bounds.norm) > slack:
            return f"L2 norm {norm:.9g}, PrivUnit2 outputs have norm {bounds.norm:.9g}"
        if self.name == "privunitg" and norm > bounds.norm + slack:
            return f"L2 norm {norm:.6g} above the PrivUnitG bound {bounds.norm:.6g}"
        return None

    def worst_valid_output(
        self,
        direction: Any,
        *,
        false_rejection_rate: float = DEFAULT_FALSE_REJECTION_RATE,
    ) -> np.ndarray:
        """The output ``check_output`` accepts that reaches furthest along ``direction``.

        What a manipulation attacker sends (Cheu, Smith & Ullman 2021): the maximizer of
        ``⟨x, direction⟩`` over the accepted set. PrivUnitG/PrivUnit2: the norm bound (the
        exact norm) times the unit direction; PRS: ``d̂`` units with ``direction``'s sign
        in every entry (0 where it is 0); Laplace: the L1/L∞ linear program's vertex
        (``max_inner_product_l1_linf``).

        Args:
            direction: 1-D float array, not all zero, finite.
            false_rejection_rate: The rate ``check_output`` is called with.

        Returns:
            A float64 array of ``direction``'s shape.

        Raises:
            ValueError: For ``"none"`` (no bounded output set), or a zero or non-finite
                ``direction``.

        """
        if self.name == "none":
            raise ValueError("mechanism 'none' has no bounded output set: no worst output")
        rate = _check_rate(false_rejection_rate)
        vector = np.asarray(direction, dtype=np.float64)
        if check_finite_vector(vector) is not None or not np.any(vector):
            raise ValueError("direction must be a finite, non-zero 1-D vector")
        bounds = _output_bounds(self, int(vector.size), rate)
        if self.name == "prs":
            return np.sign(vector) * bounds.unit * bounds.count
        if self.name == "laplace":
            return max_inner_product_l1_linf(vector, bounds.norm, bounds.entry)
        return vector * (bounds.norm / float(np.linalg.norm(vector)))

    def output_std_bound(self, dim: int) -> float:
        """An upper bound on an honest output's standard deviation along any unit vector.

        ``sup_v sqrt(Var⟨x, v⟩)`` over unit ``v`` and every input gradient (from
        ``Cov(x) ≼ E[xxᵀ]``): ``"privunitg"``: ``(C/m)·sqrt(max(E[α²], 1))``, with
        ``E[α²] = p·(1 + γφ(γ)/Φ(-γ)) + (1 - p)·(1 - γφ(γ)/Φ(γ))`` (``E[xxᵀ] =
        (C/m)²·E[α²uuᵀ + I - uuᵀ]``); ``"laplace"``: ``sqrt((C/2)² + 2b²)`` (clipped gradient plus
        noise, ``b = C/ε``); ``"privunit2"``: ``(C/m)·sqrt(max(E[t²], (1 - E[t²])/(d-1)))``;
        ``"prs"``: ``(unit/√3)·sqrt(d̂·(1 + (d̂-1)·c²))`` (``unit = √3·C``, or
        ``√3·C/(c·d̂)`` with ``debias``, ``c = tanh(ε/(2d̂))``); ``"none"``: ``inf``.

        Args:
            dim: Number of entries d, an int >= 1.

        Returns:
            The bound, a float > 0 (``inf`` for ``"none"``).

        """
        dim = _check_dim(dim)
        if self.name == "none":
            return math.inf
        bounds = _output_bounds(self, dim, DEFAULT_FALSE_REJECTION_RATE)
        if self.name == "prs":
            # E[(Σ_i ũ_i⟨m_i, v⟩)²] ≤ d̂·C² + d̂(d̂-1)·c²·C² (the bits are independent given
            # M, E[ũ_i | M] = c·ū_i, |ū_i| ≤ C, E|⟨m_i, v⟩| ≤ 1), times the debias factor.
            reduced = bounds.count
            c = math.tanh(self.epsilon / (2.0 * reduced))
            second = reduced * (1.0 + (reduced - 1) * c * c)
            return bounds.unit / math.sqrt(3.0) * math.sqrt(second)
        if self.name == "laplace":
            return math.sqrt((self.clip / 2.0) ** 2 + 2.0 * (self.clip / self.epsilon) ** 2)
        return self.clip / bounds.scale * math.sqrt(bounds.second_moment)

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as JSON-able plain types (``epsilon = inf`` becomes ``"inf"``)."""
        return {
            "name": self.name,
            "epsilon": encode_inf(self.epsilon),
            "clip": self.clip,
            "reduced_dim": self.reduced_dim,
            "debias": self.debias,
            "secure_mode": self.secure_mode,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GradientMechanism:
        """Build a mechanism from ``to_dict``'s output (or a config mapping).

        Args:
            data: Mapping with keys ``name``, ``epsilon``, ``clip`` and optionally
                ``reduced_dim``, ``debias``, ``secure_mode``. ``epsilon`` may be the string
                ``"inf"``.

        Returns:
            The validated mechanism.

        Raises:
            PrivacyConfigError: If ``data`` is not a mapping, has unknown or missing keys,
                or a field is invalid.

        """
        if not isinstance(data, Mapping):
            raise PrivacyConfigError(
                f"GradientMechanism.from_dict needs a mapping, got {type(data).__name__}"
            )
        unknown = sorted(set(data) - set(_FIELDS), key=str)
        if unknown:
            raise PrivacyConfigError(
                f"unknown GradientMechanism key(s) {unknown}; allowed keys: {list(_FIELDS)}"
            )
        missing = [key for key in ("name", "epsilon", "clip") if key not in data]
        if missing:
            raise PrivacyConfigError(f"GradientMechanism needs key(s) {missing}")
        kwargs = dict(data)
        epsilon = kwargs["epsilon"]
        if isinstance(epsilon, str) and epsilon.strip().lower() in _INF_STRINGS:
            kwargs["epsilon"] = math.inf
        return cls(**kwargs)


@dataclasses.dataclass(frozen=True)
class _OutputBounds:
    """What ``check_output`` compares against, for one mechanism, d and rate."""

    norm: float = math.inf  # L2 (PrivUnit) or L1 (Laplace) bound
    entry: float = math.inf  # Laplace: largest |entry|
    unit: float = 1.0  # PRS: lattice step
    count: int = 0  # PRS: largest |k| (d̂)
    secure_slack: float = 0.0  # PrivUnit secure mode: √d grid steps on the norm
    scale: float = 1.0  # PrivUnit: m
    second_moment: float = 1.0  # PrivUnitG: max(E[α²], 1)


def _check_rate(rate: Any) -> float:
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 < rate <= 0.5:
        raise ValueError(f"false_rejection_rate must be a number in (0, 0.5], got {rate!r}")
    return float(rate)


def _check_dim(dim: Any) -> int:
    return check_int_in_range("dim", dim, low=1)


@functools.lru_cache(maxsize=64)
def _output_bounds(mechanism: GradientMechanism, dim: int, rate: float) -> _OutputBounds:
    """The bounds of ``check_output`` (cached: γ, m and quantiles are solved once)."""
    clip, epsilon = mechanism.clip, mechanism.epsilon
    if mechanism.name == "prs":
        reduced = mechanism.reduced_dim_for(dim)
        unit = math.sqrt(3.0) * clip
        if mechanism.debias:
            unit /= math.tanh(epsilon / (2.0 * reduced)) * reduced
        return _OutputBounds(unit=unit, count=reduced)
    if mechanism.name == "laplace":
        l1, linf = laplace_bounds(epsilon=epsilon, clip=clip, dim=dim, false_rejection_rate=rate)
        return _OutputBounds(norm=l1, entry=linf)
    second_moment = 1.0
    if mechanism.name == "privunit2":
        scale = privunit2_scale(epsilon, dim)
        norm = clip / scale
        if dim > 1:
            # E[zzᵀ | u] = E[t²]·uuᵀ + (1 - E[t²])/(d - 1)·(I - uuᵀ).
            t2 = privunit2_t_second_moment(epsilon, dim, privunit2_optimal_gamma(epsilon, dim))
            second_moment = max(t2, (1.0 - t2) / (dim - 1))
    else:
        gamma = privunitg_optimal_gamma(epsilon, dim)
        scale = privunitg_scale(epsilon, dim, gamma)
        norm = clip * privunitg_norm_bound(
            epsilon=epsilon, dim=dim, gamma=gamma, scale=scale, false_rejection_rate=rate
        )
        second_moment = max(1.0, privunitg_alpha_second_moment(epsilon, gamma))
    # Secure mode's grid step is at most 2^-20 of C/m per entry.
    secure = math.sqrt(dim) * (clip / scale) * 2.0**-20 if mechanism.secure_mode else 0.0
    return _OutputBounds(norm=norm, secure_slack=secure, scale=scale, second_moment=second_moment)
