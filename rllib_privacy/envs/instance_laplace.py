"""``InstanceWiseLaplace``: choose a Laplace scale for every data instance (Ryu et al.).

The MDP of "Instance-Wise Laplace Mechanism via Deep Reinforcement Learning" (Ryu, Joo,
Jang and Yang, AAAI 2024 student abstract; docs/components/instance-laplace.md):

- **Episode**: every instance of a 1-D dataset gets a noise scale exactly once. The visiting
  order is a fresh permutation per episode drawn from the env's seeded generator
  (``shuffle: true``, the default) or the dataset's own order (``shuffle: false``).
- **Observation**: sinusoidal positional encoding (Vaswani et al. 2017) of the current
  instance's value, position ``p = 1000·(d - min)/Δf``, ``pe_dim`` entries
  ``sin(p/10000^{2k/pe_dim})``, ``cos(...)``; concatenated with the PMF (``bins`` shared
  bins, see ``rllib_privacy.mechanisms.instance_laplace``) of all query outputs under
  the current scale set.
- **Actions**: the paper's five scales ``b ∈ {3Δf/ε, 2Δf/ε, Δf/2, 0.01Δf/2, 0.001Δf/2}``
  (configurable, ``actions``), with ``Δf = max(D) - min(D)``; ``actions: "geometric:N"`` is
  a finer set of N scales spaced geometrically from ``0.0005·Δf`` to ``Δf/ε``
  (``rllib_privacy.accounting.ilm_scales.geometric_scales``).
- **Reward** ``R = R_E + R_U``. ``R_U = 1 - KL_DRL/KL_LAP`` if ``KL_DRL < KL_LAP`` else -1,
  where ``KL_DRL`` is the KL divergence between the data's PMF and the output PMF under
  the current scale set, and ``KL_LAP`` the same under uniform Laplace at ``Δf/ε``.
  ``R_E = +1`` if the pDP constraint holds, else -1, under this rule: mid-episode, the
  instances not assigned yet count at the uniform scale ``Δf/ε`` (``unassigned: uniform``,
  the default: the scale the mechanism falls back to, so every intermediate scale set is a
  real mechanism) or at the scale just chosen (``unassigned: same``: "if every remaining
  instance chose the same", less pessimistic about small scales), and the check is the
  exact loss (``rllib_privacy.accounting.pdp.instance_privacy_losses``) of the instance
  just assigned; at the last step, where every scale is final, every instance is checked
  exactly (an earlier instance can be pushed over ε by later choices, and only this
  terminal check sees it): ``R_E = +1`` if all are within ε, else ``-k`` for the k
  instances over ε (each violated constraint scores its -1).
- ``utility_reward: marginal`` (an option; ``paper`` is the default) replaces ``R_U`` by the
  step's KL improvement scaled to the episode, ``n·(KL_{t-1} - KL_t)/KL_LAP`` (potential-based
  shaping with potential ``-n·KL/KL_LAP``; the episode's sum is ``n·(1 - KL_final/KL_LAP)``).
  The paper's ``R_U`` scores the whole assignment at every step, so one instance's choice
  moves it by about ``1/n`` of the ±1 of ``R_E``: too little for a Q-function to tell the
  feasible actions apart.

**``formulation: improve``** (an option; ``assign``, the MDP above, is the default). In the
MDP above a small scale is safe only once many copies of a value share it, but the copies
are assigned one at a time, so the first to go narrow violates and every copy learns to stay
wide: DQN collapses to one scale. ``improve`` lets the agent make the joint move, as the
greedy baseline (``rllib_privacy.accounting.ilm_scales.greedy_scales``) does:

- start: every instance at the best single scale of the action set
  (``best_single_scale``; Δf/ε if none is feasible);
  an episode is ``passes`` sweeps over the G distinct values, most frequent first
  (``shuffle: true``: a fresh random order per sweep);
- action ``a`` moves every copy of the current value to scale ``a``; the move is kept only if
  every instance's exact loss stays ≤ ε
  (``feasible_losses``), else it is rejected (no
  change) with reward ``-1``; keeping the current scale is reward 0;
- an accepted move earns ``G·ln(KL_before/KL_after)`` (potential-based: an episode's rewards
  sum to ``G·ln(KL_start/KL_final)`` minus the rejected moves, so a move is worth O(1)
  whatever ε and the current KL);
- observation: the value's encoding ⊕ its share ``copies/max copies`` ⊕ one-hot of its current
  scale (the last slot: Δf/ε) ⊕ ``KL_a/KL - 1`` for every action ``a`` (clipped to [-1, 1]) ⊕
  its exact loss/ε, the largest of its neighbours' (adjacent distinct values) ⊕ the
  episode's progress, all in [-1, 1]. Feasibility is not in it: DQN learns it from rejections.

Every intermediate assignment is feasible. ``unassigned`` and ``utility_reward`` do not apply.

**Release.** Whatever the policy chose, the assignment that is released goes through
``rllib_privacy.accounting.ilm_scales.repair_scales`` (it widens scales until every
instance is within ε): ``InstanceWiseLaplaceEnv.release`` and the episode summary use
the repaired scales. The reward is computed on the policy's own scales (the repair is not
part of the MDP: the agent should learn not to need it).

``info`` carries ``loss``, ``kl``, ``kl_ratio`` every step, and at the end also
``pdp_violations``, ``pdp_pass_rate``, ``max_loss`` (the policy's scales), ``scales`` (the
released, repaired ones), ``policy_scales``, ``repaired_instances`` (how many the repair
widened) and ``kl_ratio_repaired``; with ``improve`` also ``accepted_moves``,
``rejected_moves`` and ``kl_ratio_start``.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import numbers
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from rllib_privacy._validation import did_you_mean
from rllib_privacy.accounting.ilm_scales import (
    best_single_scale,
    feasible_losses,
    geometric_scales,
    rejection_grid,
    repair_scales,
)
from rllib_privacy.accounting.pdp import instance_privacy_losses
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms.instance_laplace import (
    bin_edges,
    histogram_pmf,
    instance_laplace,
    kl_divergence,
    laplace_bin_masses,
    privatized_pmf,
)

#: The paper's action set: numbers are multiples of Δf, "K/eps" strings are K·Δf/ε.
PAPER_ACTIONS: tuple[float | str, ...] = ("3/eps", "2/eps", 0.5, 0.005, 0.0005)

#: Bundled datasets (no download): name -> (loader description, default column).
BUNDLED_DATASETS: dict[str, str] = {
    "diabetes": "age",  # sklearn.datasets.load_diabetes(scaled=False): 442 patients
    "linnerud": "Weight",  # sklearn.datasets.load_linnerud: 20 athletes
}

#: Scale of the positional encoding's position: values map to [0, 1000].
PE_POSITIONS = 1000.0

_ACTION_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*/\s*eps\s*$")
_GEOMETRIC_PATTERN = re.compile(r"^\s*geometric\s*:\s*([0-9]+)\s*$")


@dataclasses.dataclass(frozen=True)
class ILMSettings:
    """Validated ``env_config`` of ``InstanceWiseLaplaceEnv`` (keys as in YAML).

    Attributes:
        dataset: Bundled dataset name (see ``BUNDLED_DATASETS``); ignored when
            ``data_path`` is set.
        data_path: CSV file (with a header row) of the user's own data, or None.
        column: Column to use; None picks the bundled dataset's default column, or the
            only column of a one-column CSV.
        epsilon: Target ε of every instance's pDP.
        bins: Number of shared bins for the PMFs and the KL divergence.
        actions: Scale choices: numbers are multiples of Δf, ``"K/eps"`` is ``K·Δf/ε``; or
            the string ``"geometric:N"`` (N >= 2 scales from ``0.0005·Δf`` to ``Δf/ε``).
        pe_dim: Length of the positional encoding (even).
        shuffle: Visit instances in a fresh random order per episode (else dataset order).
        max_instances: Keep a fixed random subset of this many instances (None: all).
        subsample_seed: Seed of that subset.
        unassigned: Scale the mid-episode pDP check gives the instances not assigned yet:
            ``"uniform"`` (Δf/ε, the default) or ``"same"`` (the action just taken, i.e.
            "if every remaining instance chose the same").
        secure_mode: ``InstanceWiseLaplaceEnv.release`` draws OpenDP's
            floating-point-safe Laplace noise instead of numpy's.
        utility_reward: ``"paper"`` (``R_U`` of the whole assignment, the default) or
            ``"marginal"`` (the step's KL improvement × n / KL_LAP).
        formulation: ``"assign"`` (the paper's MDP, the default: one instance per step) or
            ``"improve"`` (one distinct value's copies per step, from the best single
            scale, infeasible moves rejected; see the module docstring).
        passes: ``improve`` only: sweeps over the distinct values per episode.

    """

    dataset: str = "diabetes"
    data_path: str | None = None
    column: str | None = None
    epsilon: float = 0.011
    bins: int = 50
    actions: tuple[float | str, ...] | str = PAPER_ACTIONS
    pe_dim: int = 16
    shuffle: bool = True
    max_instances: int | None = None
    subsample_seed: int = 0
    unassigned: str = "uniform"
    secure_mode: bool = False
    utility_reward: str = "paper"
    formulation: str = "assign"
    passes: int = 2


#: Allowed values of ``unassigned``.
UNASSIGNED_RULES: tuple[str, ...] = ("uniform", "same")
#: Allowed values of ``utility_reward``.
UTILITY_REWARDS: tuple[str, ...] = ("paper", "marginal")
#: Allowed values of ``formulation``.
FORMULATIONS: tuple[str, ...] = ("assign", "improve")
#: ``improve``: reward of a move the pDP check rejects.
REJECT_PENALTY = -1.0

ENV_CONFIG_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ILMSettings))


def _key_error(key: str, allowed: str, value: Any) -> PrivacyConfigError:
    return PrivacyConfigError(f"env_config key {key!r} must be {allowed}, got {value!r}")


def _int(key: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise _key_error(key, f"an int >= {low}", value)
    return int(value)


def parse_settings(env_config: Mapping[str, Any] | None) -> ILMSettings:
    """Validate an ``env_config`` mapping (unknown keys, types, ranges; not the data).

    Raises:
        PrivacyConfigError: Naming the key and what is allowed.

    """
    config = dict(env_config or {})
    unknown = sorted(set(config) - set(ENV_CONFIG_KEYS))
    if unknown:
        raise PrivacyConfigError(
            f"env_config key {unknown[0]!r} is not known to InstanceWiseLaplace"
            f"{did_you_mean(unknown[0], ENV_CONFIG_KEYS)}; allowed: {list(ENV_CONFIG_KEYS)}"
        )
    settings = ILMSettings(**config)
    # Checked first: a list or dict would make the membership test below a TypeError.
    if not isinstance(settings.dataset, str):
        raise _key_error("dataset", f"one of {sorted(BUNDLED_DATASETS)}", settings.dataset)
    if settings.data_path is None and settings.dataset not in BUNDLED_DATASETS:
        raise _key_error("dataset", f"one of {sorted(BUNDLED_DATASETS)}", settings.dataset)
    if settings.data_path is not None and not isinstance(settings.data_path, str | os.PathLike):
        raise _key_error("data_path", "a CSV file path", settings.data_path)
    if settings.column is not None and not isinstance(settings.column, str):
        raise _key_error("column", "a column name", settings.column)
    epsilon = settings.epsilon
    if (
        isinstance(epsilon, bool)
        or not isinstance(epsilon, numbers.Real)
        or not math.isfinite(epsilon)
        or epsilon <= 0
    ):
        raise _key_error("epsilon", "a finite number > 0", epsilon)
    _int("bins", settings.bins, 2)
    pe_dim = _int("pe_dim", settings.pe_dim, 2)
    if pe_dim % 2:
        raise _key_error("pe_dim", "an even int >= 2", pe_dim)
    if not isinstance(settings.shuffle, bool):
        raise _key_error("shuffle", "true or false", settings.shuffle)
    if settings.max_instances is not None:
        _int("max_instances", settings.max_instances, 2)
    _int("subsample_seed", settings.subsample_seed, 0)
    if not isinstance(settings.secure_mode, bool):
        raise _key_error("secure_mode", "true or false", settings.secure_mode)
    if settings.unassigned not in UNASSIGNED_RULES:
        raise _key_error("unassigned", f"one of {list(UNASSIGNED_RULES)}", settings.unassigned)
    if settings.utility_reward not in UTILITY_REWARDS:
        raise _key_error(
            "utility_reward", f"one of {list(UTILITY_REWARDS)}", settings.utility_reward
        )
    if settings.formulation not in FORMULATIONS:
        raise _key_error("formulation", f"one of {list(FORMULATIONS)}", settings.formulation)
    _int("passes", settings.passes, 1)
    actions = settings.actions
    if isinstance(actions, str):
        geometric_count(actions)
        return dataclasses.replace(settings, epsilon=float(epsilon))
    if isinstance(actions, bytes) or not isinstance(actions, Sequence) or len(actions) < 2:
        raise _key_error(
            "actions", 'a list of at least 2 scales or "geometric:N" (N >= 2)', actions
        )
    for action in actions:
        action_multiplier(action, 1.0)
    return dataclasses.replace(settings, epsilon=float(epsilon), actions=tuple(actions))


def geometric_count(actions: str) -> int:
    """N of an ``actions: "geometric:N"`` setting (N >= 2)."""
    match = _GEOMETRIC_PATTERN.match(actions)
    if not match or int(match.group(1)) < 2:
        raise _key_error(
            "actions", 'a list of at least 2 scales or "geometric:N" (N >= 2)', actions
        )
    return int(match.group(1))


def action_scales(settings: ILMSettings, delta_f: float) -> np.ndarray:
    """The scales of the ``actions`` setting for data of range ``delta_f``."""
    if isinstance(settings.actions, str):
        try:
            return geometric_scales(delta_f, settings.epsilon, geometric_count(settings.actions))
        except ValueError as e:  # ε ≥ 2000: the smallest scale would exceed Δf/ε
            allowed = f"a scale set that fits ε ({e})"
            raise _key_error("actions", allowed, settings.actions) from None
    return np.array([action_multiplier(a, settings.epsilon) * delta_f for a in settings.actions])


def action_multiplier(action: Any, epsilon: float) -> float:
    """The scale of one ``actions`` entry in units of Δf (``"K/eps"`` → ``K/ε``)."""
    allowed = 'a number > 0 (× Δf) or a string "K/eps" (K·Δf/ε)'
    if isinstance(action, str):
        match = _ACTION_PATTERN.match(action)
        if not match or float(match.group(1)) <= 0:
            raise _key_error("actions", f"a list of entries, each {allowed}", action)
        return float(match.group(1)) / epsilon
    if (
        isinstance(action, bool)
        or not isinstance(action, numbers.Real)
        or not math.isfinite(action)
        or action <= 0
    ):
        raise _key_error("actions", f"a list of entries, each {allowed}", action)
    return float(action)


def load_values(settings: ILMSettings) -> np.ndarray:
    """Load and check the dataset's column: numeric, finite, at least 2 distinct values.

    Raises:
        PrivacyConfigError: Naming ``data_path``/``column``/``dataset`` and the problem.

    """
    if settings.data_path is not None:
        values, where = _read_csv(str(settings.data_path), settings.column)
    else:
        values, where = _bundled(settings.dataset, settings.column)
    if values.size == 0:
        raise PrivacyConfigError(f"{where} has no values (empty dataset)")
    bad = np.nonzero(~np.isfinite(values))[0]
    if bad.size:
        raise PrivacyConfigError(
            f"{where} has {bad.size} NaN/inf value(s) (first at data row {bad[0] + 1}); "
            "remove or impute them"
        )
    if values.size < 2 or np.ptp(values) == 0.0:
        raise PrivacyConfigError(
            f"{where} needs at least 2 distinct values (Δf = max - min must be > 0), "
            f"got {values.size} value(s) all equal to {values[0]!r}"
        )
    if settings.max_instances is not None and settings.max_instances < values.size:
        rng = np.random.default_rng(settings.subsample_seed)
        values = values[np.sort(rng.choice(values.size, settings.max_instances, replace=False))]
        if np.ptp(values) == 0.0:
            raise PrivacyConfigError(
                f"env_config key 'max_instances': the subset of {settings.max_instances} "
                "values has a single distinct value; use more instances or another seed"
            )
    return values


def _bundled(dataset: str, column: str | None) -> tuple[np.ndarray, str]:
    from sklearn import datasets

    if dataset == "diabetes":
        frame = datasets.load_diabetes(scaled=False, as_frame=True).frame
    else:
        bunch = datasets.load_linnerud(as_frame=True)
        frame = bunch.frame
    column = column or BUNDLED_DATASETS[dataset]
    if column not in frame.columns:
        raise _key_error(
            "column", f"a column of dataset {dataset!r}: {list(frame.columns)}", column
        )
    where = f"env_config dataset {dataset!r} column {column!r}"
    return frame[column].to_numpy(dtype=np.float64), where


def _read_csv(path: str, column: str | None) -> tuple[np.ndarray, str]:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as e:
        raise PrivacyConfigError(f"env_config key 'data_path': cannot read {path!r}: {e}") from None
    if not rows or not rows[0]:
        raise PrivacyConfigError(f"env_config key 'data_path': {path!r} is empty (no header row)")
    header = [name.strip() for name in rows[0]]
    if column is None:
        if len(header) != 1:
            raise PrivacyConfigError(
                f"env_config key 'column' is needed: {path!r} has columns {header}"
            )
        column = header[0]
    if column not in header:
        raise _key_error("column", f"a column of {path!r}: {header}", column)
    index = header.index(column)
    where = f"env_config data_path {path!r} column {column!r}"
    values = []
    for line, row in enumerate(rows[1:], start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        cell = row[index].strip() if index < len(row) else ""
        try:
            values.append(float(cell))
        except ValueError:
            raise PrivacyConfigError(
                f"{where} has a non-numeric value {cell!r} at line {line}"
            ) from None
    return np.asarray(values, dtype=np.float64), where


def validate_env_config(env_config: Mapping[str, Any] | None) -> ILMSettings:
    """Check the settings and the data they point at (called before Ray starts)."""
    settings = parse_settings(env_config)
    load_values(settings)
    return settings


def absolute_data_path(env_config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Make a literal relative ``data_path`` absolute (Tune runs trials in their own dir)."""
    path = env_config.get("data_path")
    if isinstance(path, str | os.PathLike) and not os.path.isabs(path):
        return {**env_config, "data_path": os.path.abspath(path)}
    return env_config


def positional_encoding(position: float, dim: int) -> np.ndarray:
    """Sinusoidal encoding: ``[sin(p/10000^{2k/dim}), cos(p/10000^{2k/dim})]``, k < dim/2."""
    frequencies = 10000.0 ** (-2.0 * np.arange(dim // 2) / dim)
    angles = position * frequencies
    return np.concatenate([np.sin(angles), np.cos(angles)])


class InstanceWiseLaplaceEnv(gym.Env):
    """Assign a Laplace scale to every instance of a dataset (see the module docstring).

    Args:
        env_config: Optional mapping of the keys of ``ILMSettings`` (RLlib style).
        **kwargs: The same keys as keyword arguments (``gym.make`` style).

    """

    metadata = {"render_modes": []}

    def __init__(self, env_config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        settings = parse_settings({**dict(env_config or {}), **kwargs})
        values = load_values(settings)
        self.settings = settings
        self.values = values
        self.n = int(values.size)
        self.delta_f = float(np.ptp(values))
        self.epsilon = settings.epsilon
        self.uniform_scale = self.delta_f / self.epsilon
        self.action_scales = action_scales(settings, self.delta_f)
        self.edges = bin_edges(values, settings.bins)
        self.data_pmf = histogram_pmf(values, self.edges)
        # Bin masses per distinct value: one row per action, plus the uniform scale last.
        self._distinct, self._value_index = np.unique(values, return_inverse=True)
        all_scales = np.append(self.action_scales, self.uniform_scale)
        self._masses = np.stack(
            [
                laplace_bin_masses(self._distinct, np.full(self._distinct.size, s), self.edges)
                for s in all_scales
            ],
            axis=1,
        )  # (distinct values, actions + 1, bins)
        self.kl_laplace = kl_divergence(self.data_pmf, self._uniform_pmf())
        self._encodings = np.stack(
            [
                positional_encoding(
                    PE_POSITIONS * (v - values.min()) / self.delta_f, settings.pe_dim
                )
                for v in self._distinct
            ]
        )
        self.improve = settings.formulation == "improve"
        num_actions = self.action_scales.size
        if self.improve:
            self._setup_improve()
            # Encoding, share, current-scale one-hot (uniform slot last), KL changes, slack,
            # progress.
            dim = settings.pe_dim + 1 + (num_actions + 1) + num_actions + 3
            low = -np.ones(dim)
        else:
            dim = settings.pe_dim + settings.bins
            low = np.concatenate([-np.ones(settings.pe_dim), np.zeros(settings.bins)])
        self.observation_space: gym.spaces.Box = gym.spaces.Box(
            low=low.astype(np.float32), high=np.ones(dim, dtype=np.float32), dtype=np.float32
        )
        self.action_space: gym.spaces.Discrete = gym.spaces.Discrete(num_actions)
        self._order = self._visiting_order(shuffle=False)
        self._step = 0
        self._start_assignment()

    def _setup_improve(self) -> None:
        """``improve``: distinct-value groups, the start (best single scale), the pDP grid."""
        counts = np.bincount(self._value_index)
        self._groups = counts.size
        self._share = counts / counts.max()
        self._by_frequency = np.argsort(-counts, kind="stable")
        self._first_instance = np.unique(self._value_index, return_index=True)[1]
        # Each distinct value's bin masses weighted by its share of the data.
        self._weighted = self._masses * (counts / self.n)[:, None, None]
        start = best_single_scale(self.values, self.epsilon, self.action_scales, self.edges)
        self._start_row = self.action_scales.size if start.index is None else start.index
        self._start_scale = self.uniform_scale if start.scale is None else start.scale
        widest = max(float(self.action_scales.max()), self.uniform_scale)
        self._grid = rejection_grid(self.values, widest)
        self._start_losses = instance_privacy_losses(
            self.values, np.full(self.n, self._start_scale)
        )
        self._kl_start = kl_divergence(
            self.data_pmf, self._weighted[:, self._start_row].sum(axis=0)
        )

    def _visiting_order(self, *, shuffle: bool) -> np.ndarray:
        """Instances (``assign``) or ``passes`` sweeps of distinct values (``improve``)."""
        if not self.improve:
            return self.np_random.permutation(self.n) if shuffle else np.arange(self.n)
        sweeps = [
            self.np_random.permutation(self._groups) if shuffle else self._by_frequency
            for _ in range(self.settings.passes)
        ]
        return np.concatenate(sweeps)

    def _start_assignment(self) -> None:
        """Every instance at the start scale: uniform (``assign``) or best single (``improve``).

        ``assign``'s uniform scale is the last row of ``_masses``.
        """
        if self.improve:
            self._group_rows = np.full(self._groups, self._start_row)
            self.scales = np.full(self.n, self._start_scale)
            self._pmf = self._weighted[:, self._start_row].sum(axis=0)
            self._kl = self._kl_start
            self._losses = self._start_losses.copy()
            self._moves = {"accepted": 0, "rejected": 0}
            return
        self.scales = np.full(self.n, self.uniform_scale)
        self._rows = np.full(self.n, self.action_scales.size)
        self._pmf = self._uniform_pmf()
        self._kl = self.kl_laplace

    def _uniform_pmf(self) -> np.ndarray:
        return self._masses[self._value_index, -1].mean(axis=0)

    def _observation(self) -> np.ndarray:
        if self.improve:
            return self._improve_observation()
        index = self._order[min(self._step, self.n - 1)]
        obs = np.concatenate([self._encodings[self._value_index[index]], self._pmf])
        return np.clip(obs, self.observation_space.low, self.observation_space.high).astype(
            np.float32
        )

    def _alternative_kls(self, group: int) -> np.ndarray:
        """KL divergence if ``group``'s copies took each action's scale (others unchanged)."""
        current = self._weighted[group, self._group_rows[group]]
        pmfs = self._pmf[None, :] + self._weighted[group, : self.action_scales.size] - current
        return np.array([kl_divergence(self.data_pmf, q) for q in pmfs])

    def _improve_observation(self) -> np.ndarray:
        """``improve``: what tells this value's move apart (see the module docstring)."""
        group = self._order[min(self._step, self._order.size - 1)]
        current = np.zeros(self.action_scales.size + 1)
        current[self._group_rows[group]] = 1.0
        change = (self._alternative_kls(group) - self._kl) / self._kl
        group_loss = self._losses[self._first_instance] / self.epsilon
        neighbours = group_loss[max(group - 1, 0) : group + 2]
        obs = np.concatenate(
            [
                self._encodings[group],
                [self._share[group]],
                current,
                change,
                [group_loss[group], neighbours.max(), self._step / self._order.size],
            ]
        )
        return np.clip(obs, self.observation_space.low, self.observation_space.high).astype(
            np.float32
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode: every scale back to the start, a new visiting order."""
        super().reset(seed=seed)
        self._order = self._visiting_order(shuffle=self.settings.shuffle)
        self._step = 0
        self._start_assignment()
        return self._observation(), {"kl_laplace": self.kl_laplace}

    @property
    def move_counts(self) -> dict[str, int] | None:
        """``improve``: this episode's accepted and rejected moves so far; else None."""
        return dict(self._moves) if self.improve else None

    def released_scales(self) -> np.ndarray:
        """The current scales after ``repair_scales``.

        Every instance is within ε under them; instances not assigned yet are at Δf/ε.
        """
        return repair_scales(self.values, self.scales, self.epsilon).scales

    def release(self, rng: np.random.Generator | None = None) -> np.ndarray:
        """Release the data with ``released_scales``: ``y_i = d_i + Lap(b_i)``, one draw each.

        The scales are the current ones after the repair step, so every instance is within
        ε. The noise never comes from the env's (seeded) generator: ``rng`` or a fresh
        OS-seeded one, or OpenDP's sampler with the ``secure_mode`` env_config key.

        Args:
            rng: numpy Generator for the noise (ignored in secure mode); None: fresh.

        Returns:
            float64 noisy values in dataset order.

        """
        return instance_laplace(
            self.values, self.released_scales(), rng=rng, secure_mode=self.settings.secure_mode
        )

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Assign ``action_scales[action]`` to the current instance; see the reward rule."""
        if not self.action_space.contains(action):
            raise ValueError(f"action must be in {self.action_space}, got {action!r}")
        if self._step >= self._order.size:
            raise RuntimeError("episode is over; call reset()")
        action = int(action)
        if self.improve:
            return self._improve_step(action)
        index = self._order[self._step]
        self.scales[index] = self.action_scales[action]
        self._rows[index] = action
        self._pmf = self._masses[self._value_index, self._rows].mean(axis=0)
        self._step += 1
        terminated = self._step == self.n
        kl = kl_divergence(self.data_pmf, self._pmf)
        if self.settings.utility_reward == "marginal":
            reward_u = self.n * (self._kl - kl) / self.kl_laplace
        else:
            reward_u = 1.0 - kl / self.kl_laplace if kl < self.kl_laplace else -1.0
        self._kl = kl
        info: dict[str, Any] = {"kl": kl, "kl_ratio": kl / self.kl_laplace}
        if terminated:
            # Exact check of every instance, with every scale final.
            losses = instance_privacy_losses(self.values, self.scales)
            violations = int(np.count_nonzero(losses > self.epsilon))
            # Every instance still over ε at the end costs its -1 once more; a single -1
            # would let a policy trade a few violations for many cheap utility rewards.
            reward_e = 1.0 if violations == 0 else -float(violations)
            info.update(self._final_info(losses, index))
        else:
            checked = self.scales
            if self.settings.unassigned == "same":
                checked = self.scales.copy()
                checked[self._order[self._step :]] = self.action_scales[action]
            loss = float(instance_privacy_losses(self.values, checked, instances=[index])[0])
            reward_e = 1.0 if loss <= self.epsilon else -1.0
            info["loss"] = loss
        return self._observation(), reward_e + reward_u, terminated, False, info

    def _final_info(self, losses: np.ndarray, index: int) -> dict[str, Any]:
        """End-of-episode info: pDP of the policy's scales and the released assignment."""
        violations = int(np.count_nonzero(losses > self.epsilon))
        # The released assignment: the policy's scales, repaired (the reward judges the
        # policy's own scales).
        repair = repair_scales(self.values, self.scales, self.epsilon, losses=losses)
        repaired_pmf = self._pmf
        if repair.num_widened:
            repaired_pmf = privatized_pmf(self.values, repair.scales, self.edges)
        return {
            "loss": float(losses[index]),
            "pdp_violations": violations,
            "pdp_pass_rate": 1.0 - violations / self.n,
            "max_loss": float(losses.max()),
            "scales": repair.scales,
            "policy_scales": self.scales.copy(),
            "repaired_instances": repair.num_widened,
            "kl_ratio_repaired": kl_divergence(self.data_pmf, repaired_pmf) / self.kl_laplace,
        }

    def _improve_step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """``improve``: move the current value's copies to ``action``'s scale if pDP allows."""
        group = self._order[self._step]
        current = self._group_rows[group]
        reward = 0.0
        if action != current:
            trial = self.scales.copy()
            trial[self._value_index == group] = self.action_scales[action]
            losses = feasible_losses(self.values, trial, self.epsilon, self._grid)
            if losses is None:
                reward = REJECT_PENALTY
                self._moves["rejected"] += 1
            else:
                pmf = self._pmf + self._weighted[group, action] - self._weighted[group, current]
                kl = kl_divergence(self.data_pmf, pmf)
                reward = self._groups * math.log(self._kl / kl)
                self.scales, self._losses, self._pmf, self._kl = trial, losses, pmf, kl
                self._group_rows[group] = action
                self._moves["accepted"] += 1
        self._step += 1
        terminated = self._step == self._order.size
        index = int(self._first_instance[group])
        info: dict[str, Any] = {
            "kl": self._kl,
            "kl_ratio": self._kl / self.kl_laplace,
            "loss": float(self._losses[index]),
        }
        if terminated:
            info.update(self._final_info(self._losses, index))
            info.update(
                accepted_moves=self._moves["accepted"],
                rejected_moves=self._moves["rejected"],
                kl_ratio_start=self._kl_start / self.kl_laplace,
            )
        return self._observation(), reward, terminated, False, info
