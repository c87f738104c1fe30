"""What the PGC-A3C benchmark runs: arms (a mechanism on a base config), rows, trial variants.

An arm is LDPA3C with one mechanism on one base config (a tuned YAML file, or the paper's
settings: LDPA3CConfig's defaults); it runs at every ε of ``--epsilons`` (a row), with
``--trials`` seeds each (a variant per row × seed). The arms are in one place,
``default_arms``; ``ARM_NAMES`` gives their priority order.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from harness import (
    INF,
    BenchmarkError,
    format_number,
    load_experiment_config,
)

#: Submissions within which the paper counts a success (its FST cap), and its trials.
PAPER_CAP = 90_000
PAPER_TRIALS = 20
#: Seeds per arm × ε of the protocol (issue): rows with fewer are marked incomplete.
PROTOCOL_TRIALS = 10
#: Default size of the agent fleet of the paper arms (``--paper-fleet``).
DEFAULT_PAPER_FLEET = 32
#: Base of the paper arms: LDPA3CConfig's defaults.
PAPER_BASE = "paper"
#: The two base families; each has its own ε = ∞ baseline arm.
FAMILIES = ("tuned", "paper")


@dataclasses.dataclass(frozen=True)
class Arm:
    """One configuration of LDPA3C run at every ε: a mechanism on a base config.

    Attributes:
        name: Row name in the tables (``privunitg_tuned``, ``laplace_paper``, ...).
        mechanism: LDPA3C ``mechanism``.
        base: A YAML experiment file (its first experiment's ``config``), or
            ``PAPER_BASE`` for LDPA3CConfig's defaults (the paper's settings).
        family: ``tuned`` or ``paper``: whose ε = ∞ baseline its relative AUC uses.
        zero_signal_control: Replace every gradient by zeros before the mechanism.
        overrides: Config keys set on top of the base (after the benchmark's own).
        description: One line for the table notes.
        baseline: True for the ε = ∞ arms (``nonprivate_tuned``, ``nonprivate_paper``).

    """

    name: str
    mechanism: str
    base: str
    family: str
    zero_signal_control: bool = False
    overrides: tuple[tuple[str, Any], ...] = ()
    description: str = ""
    baseline: bool = False

    @property
    def is_paper_base(self) -> bool:
        return self.base == PAPER_BASE

    def build_config(self, base_config: Mapping[str, Any], *, paper_fleet: int) -> dict[str, Any]:
        """The arm's LDPA3C config (without ε, seed and the per-trial resource keys).

        Paper arms get ``agents_per_env_runner = aggregator_submissions_per_request = paper_fleet``
        (one fleet round per request); a base with a fleet but no
        ``aggregator_submissions_per_request`` gets one round per request too (else every round
        would release one gradient and discard the other agents' episodes).
        """
        config = dict(base_config)
        config["privacy_mechanism"] = self.mechanism
        if self.is_paper_base:
            # The paper's setting: the score in the clear, outside ε (its FST, a mean of 10
            # scores, means nothing on private scores).
            config.setdefault("privacy_score_mechanism", "public")
        if self.zero_signal_control:
            config["privacy_zero_signal_control"] = True
        if self.is_paper_base or int(config.get("agents_per_env_runner", 1) or 1) == 1:
            # Paper arms and one-agent-at-a-time bases (laplace_tuned, prs_tuned): a fleet
            # of paper_fleet agents, else 90,000 submissions take hours per trial.
            config["agents_per_env_runner"] = int(paper_fleet)
            config["aggregator_submissions_per_request"] = int(paper_fleet)
        config.update(dict(self.overrides))
        fleet = int(config.get("agents_per_env_runner", 1) or 1)
        if fleet > 1 and "aggregator_submissions_per_request" not in config:
            config["aggregator_submissions_per_request"] = fleet
        return config

    def to_json(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "base": self.base,
            "family": self.family,
            "zero_signal_control": self.zero_signal_control,
            "overrides": dict(self.overrides),
            "description": self.description,
            "baseline": self.baseline,
        }


#: Arm names in priority order (the issue's): PrivUnitG, Laplace, zero-signal, PRS, PrivUnit2.
ARM_NAMES = (
    "privunitg_tuned",
    "laplace_paper",
    "laplace_tuned",
    "zero_paper",
    "zero_privunitg",
    "prs_paper",
    "prs_tuned",
    "privunit2_tuned",
)
BASELINE_ARMS = {"tuned": "nonprivate_tuned", "paper": "nonprivate_paper"}
#: Row order of the tables: each family's ε = ∞ row after that family's first arm.
DISPLAY_ORDER = (
    "privunitg_tuned",
    "nonprivate_tuned",
    "laplace_paper",
    "nonprivate_paper",
    "laplace_tuned",
    "zero_paper",
    "zero_privunitg",
    "prs_paper",
    "prs_tuned",
    "privunit2_tuned",
)


def default_arms(
    *,
    tuned_config: str = "tuned_configs/ldp_a3c.yaml",
    laplace_config: str = "tuned_configs/ldp_a3c_laplace.yaml",
    prs_config: str = "tuned_configs/ldp_a3c_prs.yaml",
) -> dict[str, Arm]:
    """Every arm (and the two ε = ∞ baselines) by name, priority order first."""
    arms = [
        Arm(
            "privunitg_tuned",
            "privunitg",
            tuned_config,
            "tuned",
            description="PrivUnitG on the tuned quick start",
        ),
        Arm(
            "laplace_paper",
            "laplace",
            PAPER_BASE,
            "paper",
            description="Laplace, the paper's settings (LDPA3CConfig defaults)",
        ),
        Arm("laplace_tuned", "laplace", laplace_config, "tuned", description="Laplace, tuned"),
        Arm(
            "zero_paper",
            "laplace",
            PAPER_BASE,
            "paper",
            zero_signal_control=True,
            description="zero-signal control of laplace_paper (noise only)",
        ),
        Arm(
            "zero_privunitg",
            "privunitg",
            tuned_config,
            "tuned",
            zero_signal_control=True,
            description="zero-signal control of privunitg_tuned (noise only)",
        ),
        Arm(
            "prs_paper",
            "prs",
            PAPER_BASE,
            "paper",
            description="PRS, the paper's settings (LDPA3CConfig defaults)",
        ),
        Arm("prs_tuned", "prs", prs_config, "tuned", description="PRS, tuned"),
        Arm(
            "privunit2_tuned",
            "privunit2",
            tuned_config,
            "tuned",
            description="PrivUnit2 on the tuned quick start (mechanism swapped)",
        ),
        Arm(
            "nonprivate_tuned",
            "none",
            tuned_config,
            "tuned",
            baseline=True,
            description="ε = ∞: the tuned quick start with mechanism none",
        ),
        Arm(
            "nonprivate_paper",
            "laplace",
            PAPER_BASE,
            "paper",
            baseline=True,
            description="ε = ∞: the paper's settings with Laplace at ε = ∞ (no noise)",
        ),
    ]
    return {arm.name: arm for arm in arms}


def parse_arm_names(text: str) -> list[str]:
    """``--arms``: comma-separated names of ``ARM_NAMES`` (or ``all``), deduplicated,
    in the given order."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list of arms")
    if items == ["all"]:
        return list(ARM_NAMES)
    unknown = [item for item in items if item not in ARM_NAMES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown arm(s) {', '.join(unknown)}; choose from {', '.join(ARM_NAMES)} "
            "(ε = ∞ runs with --epsilons ...,inf, once per base family)"
        )
    return list(dict.fromkeys(items))


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of the tables: an arm at one ε."""

    arm: str
    epsilon: float

    @property
    def label(self) -> str:
        return f"{self.arm} ε={format_number(self.epsilon)}"


def plan_rows(
    arm_names: Sequence[str], epsilons: Sequence[float], arms: Mapping[str, Arm]
) -> list[Row]:
    """The rows to run, in priority order.

    Every selected arm at every finite ε; zero-signal arms skip ε = ∞ (no gradient, no
    mechanism: nothing to control). If ε = ∞ is requested, the family baseline of each
    selected arm runs once, right after the first selected arm of that family.
    """
    finite = sorted({float(e) for e in epsilons if math.isfinite(e)})
    with_inf = any(math.isinf(e) for e in epsilons)
    rows: list[Row] = []
    families_done: set[str] = set()
    for name in arm_names:
        arm = arms[name]
        rows.extend(Row(name, e) for e in finite)
        if with_inf and arm.family not in families_done:
            families_done.add(arm.family)
            rows.append(Row(BASELINE_ARMS[arm.family], INF))
    return rows


def row_sort_key(row: Row) -> tuple[int, str, float]:
    """Display order: ``DISPLAY_ORDER``, unknown arms after, then ε (∞ last)."""
    rank = DISPLAY_ORDER.index(row.arm) if row.arm in DISPLAY_ORDER else len(DISPLAY_ORDER)
    return (rank, row.arm, row.epsilon)


def trial_config(
    arm_config: Mapping[str, Any],
    *,
    epsilon: float,
    seed: int,
    submissions_per_iteration: int,
    eval_episodes: int | None,
) -> dict[str, Any]:
    """One trial's full LDPA3C config: the arm's, at ``epsilon`` and ``seed``, run inside
    the trial's own process (``num_env_runners: 0``, one CPU), quiet."""
    config = dict(arm_config)
    config.update(
        privacy_epsilon=float(epsilon),
        seed=int(seed),
        num_env_runners=0,
        num_cpus_for_main_process=1,
        aggregator_submissions_per_iteration=int(submissions_per_iteration),
    )
    if eval_episodes is not None:
        config["scoring_eval_episodes"] = int(eval_episodes)
    return config


#: Key of the benchmark's per-trial variant in the Tune config (stripped before LDPA3C).
VARIANT_KEY = "pgc_a3c_bench"


def strip_variant(config: Any) -> Any:
    """The LDPA3C config of a benchmark trial (its variant's ``config``), else unchanged."""
    if isinstance(config, Mapping) and VARIANT_KEY in config:
        rest = {k: v for k, v in config.items() if k != VARIANT_KEY}
        return {**dict(config[VARIANT_KEY]["config"]), **rest}
    return config


def load_base_config(path: str) -> dict[str, Any]:
    """The first experiment's ``config:`` of a YAML experiment file (env folded in),
    validated as ``rllib train -f`` does; it must not sweep (no ``grid_search``)."""
    config = load_experiment_config(path)
    for key, value in config.items():
        if _has_grid_search(value):
            raise BenchmarkError(
                f"{path}: config key {key!r} is a grid_search; the benchmark needs one "
                "fixed base config (it sets mechanism, epsilon and seed itself)"
            )
    return config


def _has_grid_search(value: Any) -> bool:
    if isinstance(value, dict):
        return "grid_search" in value or any(_has_grid_search(v) for v in value.values())
    return False


def paper_base_config() -> dict[str, Any]:
    """The paper's settings: LDPA3CConfig's defaults (clip/|B| per mechanism, lr 0.5, ...)."""
    from rllib_privacy.envs import CARTPOLE_GRAVITY_ENV_ID

    return {"env": CARTPOLE_GRAVITY_ENV_ID}


#: |B| of the arms on the tuned quick-start base, per ε: the quick start's 2048 is what ε = 1
#: needs; a larger ε has less noise per report, so fewer reports per update suffice and
#: more updates fit in the cap (ε = 5 at 512 measured in tuning: 10 of 10 seeds solved).
TUNED_MAX_BUFFER: dict[float, int] = {1.0: 2048, 2.0: 1024, 5.0: 512, 10.0: 256, INF: 64}
TUNED_BUFFER_ARMS = ("privunitg_tuned", "zero_privunitg", "privunit2_tuned", "nonprivate_tuned")


def variants(
    rows: Sequence[Row],
    arm_configs: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    *,
    submissions_per_iteration: int,
    eval_episodes: int | None,
) -> list[dict[str, Any]]:
    """One Tune variant per row × seed, rows in priority order, seeds inside."""
    out = []
    for row in rows:
        for seed in seeds:
            config = trial_config(
                arm_configs[row.arm],
                epsilon=row.epsilon,
                seed=seed,
                submissions_per_iteration=submissions_per_iteration,
                eval_episodes=eval_episodes,
            )
            if row.arm in TUNED_BUFFER_ARMS and row.epsilon in TUNED_MAX_BUFFER:
                config["aggregator_max_buffer"] = TUNED_MAX_BUFFER[row.epsilon]
            out.append({"arm": row.arm, "epsilon": row.epsilon, "seed": seed, "config": config})
    return out


def arm_metadata(
    arm_names: Sequence[str], rows: Sequence[Row], args: argparse.Namespace
) -> tuple[dict[str, Arm], dict[str, dict[str, Any]]]:
    """The arms of the planned rows and their configs (loads the YAML files once).

    Raises:
        BenchmarkError: A base YAML file is missing or invalid (named in the message).

    """
    arms = default_arms(
        tuned_config=args.tuned_config,
        laplace_config=args.laplace_config,
        prs_config=args.prs_config,
    )
    needed = list(dict.fromkeys([row.arm for row in rows] + list(arm_names)))
    bases: dict[str, dict[str, Any]] = {}
    configs: dict[str, dict[str, Any]] = {}
    for name in needed:
        arm = arms[name]
        if arm.base not in bases:
            if arm.is_paper_base:
                bases[arm.base] = paper_base_config()
            else:
                try:
                    bases[arm.base] = load_base_config(arm.base)
                except BenchmarkError as e:
                    raise BenchmarkError(f"arm {name}: {e}") from None
        configs[name] = arm.build_config(bases[arm.base], paper_fleet=args.paper_fleet)
    return {name: arms[name] for name in needed}, configs


def validate_configs(trial_variants: Sequence[Mapping[str, Any]]) -> None:
    """Builds every distinct trial config as an LDPA3CConfig and validates it."""
    from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig

    seen: set[str] = set()
    for variant in trial_variants:
        config = dict(variant["config"])
        config.pop("seed", None)
        key = json.dumps(config, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        try:
            LDPA3CConfig().update_from_dict(config).validate()
        except Exception as e:  # noqa: BLE001 (PrivacyConfigError, ValueError, ...)
            where = f"{variant['arm']} ε={format_number(variant['epsilon'])}"
            raise BenchmarkError(f"{where}: invalid config: {e}") from None
