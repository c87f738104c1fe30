"""What the kickstarting benchmark runs: tasks, student arms, configs and the grid of trials.

The arms are in one place, ``ARMS``: a new arm is one entry there (its trainable,
the config keys that make it, a line for RESULTS.md, the tasks it runs on). Everything
else (the Tune points, the tables, the arm of a trial read back from its folder) follows.

Every trial of the grid (a teacher, or a student of one task, arm and seed) gets a key and
a spec (what makes it: the YAML settings, the arm's keys, seed, stop rule, its teacher's
spec); a rerun reuses a recorded trial only while its spec is unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import REPO_ROOT, BenchmarkError, format_number

STUDENT_YAML = REPO_ROOT / "tuned_configs" / "kickstart_dirichlet_cartpole.yaml"
TEACHER_YAML = REPO_ROOT / "tuned_configs" / "kickstart_teacher_cartpole.yaml"
AIRRAID_STUDENT_YAML = REPO_ROOT / "tuned_configs" / "kickstart_dirichlet_airraid.yaml"
AIRRAID_TEACHER_YAML = REPO_ROOT / "tuned_configs" / "kickstart_teacher_airraid.yaml"


@dataclasses.dataclass(frozen=True)
class Task:
    """A benchmark environment and the return that counts as "reached".

    Attributes:
        name: Short name (CLI, file names).
        env: Gymnasium id.
        target: Return T that teacher and students must reach.
        why: Why this target (written into RESULTS.md).
        lower: A lower bar T₂ reported next to T (steps to T₂ and the speed-up there), for
            runs where T is mostly not reached within the cap.
        student_yaml: Experiment file whose first config gives the students' settings.
        teacher_yaml: Experiment file whose first config gives the teacher's settings.
        floor: The return the 0.75·T bar is measured from: 0, as the paper measures fractions
            of AirRaid's return, or the worst return of a task whose returns are negative
            (there 0.75·T would lie above T).

    """

    name: str
    env: str
    target: float
    why: str
    lower: float
    student_yaml: Path = STUDENT_YAML
    teacher_yaml: Path = TEACHER_YAML
    floor: float = 0.0


TASKS: dict[str, Task] = {
    "cartpole": Task(
        "cartpole",
        "CartPole-v1",
        450.0,
        "the tuned teacher YAML's stop value (episodes end at 500)",
        250.0,
    ),
    "acrobot": Task(
        "acrobot",
        "Acrobot-v1",
        -100.0,
        "Gymnasium's reward_threshold for Acrobot-v1 (swing-up in ≤ 100 steps on average; "
        "a random policy scores about −500)",
        -250.0,
        floor=-500.0,
    ),
    # The paper's setting (Gohari et al. §5): run alone (its own YAMLs), on many cores.
    "airraid": Task(
        "airraid",
        # The prefix makes every Ray worker import the package, which registers the RAM ids.
        "rllib_privacy:ALE/AirRaid-ram-v5",
        3700.0,
        "the final return of the shipped teacher YAML's 4M-step teacher (3,726: mean over its "
        "last 200,000 env steps; random play scores 537; benchmarks/airraid_teacher.py); the "
        "lower bar is half of it",
        1850.0,
        student_yaml=AIRRAID_STUDENT_YAML,
        teacher_yaml=AIRRAID_TEACHER_YAML,
    ),
}


@dataclasses.dataclass(frozen=True)
class Arm:
    """One kind of student.

    Attributes:
        name: Label in tables and plots.
        algorithm: Registered Tune trainable (``KickstartPPO`` or ``PPO``).
        overrides: Config keys that make this arm (on top of the student base config).
        description: One line for RESULTS.md.
        tasks: The tasks it runs on (None: all). The paper's c-arms run on AirRaid only, the
            budget arms on the classic-control tasks; this also keeps arm_of unambiguous
            where an arm's overrides equal a task YAML's own values.

    """

    name: str
    algorithm: str
    overrides: Mapping[str, Any]
    description: str
    tasks: tuple[str, ...] | None = None

    def runs_on(self, task: str) -> bool:
        """Whether this arm is part of ``task``'s grid."""
        return self.tasks is None or task in self.tasks


#: The classic-control tasks (CartPole, Acrobot), where the budget arms run.
CLASSIC = ("cartpole", "acrobot")
#: With a cache the budget lasts: the help ends when k = k₀·c^t falls below min_k = k₀/10
#: (after about 11 rollouts, about when the ε-1000 arm's budget runs out).
CACHE_SCHEDULE = {"teacher_vanishing_coefficient": 0.8, "teacher_min_k": 5.0}


def _budgeted_arm(
    task: str,
    eta: float,
    k: float,
    fade: int | None,
    *,
    spread: bool,
    target: str = "debiased",
    named_k: bool = False,
    named_fade: bool = False,
    budget: float = 10.0,
    loss: str | None = None,
) -> Arm:
    """A privacy-aware student at η near 1/m, k constant, with debiased or argmax answers.

    ``named_k`` and ``named_fade`` put k and the fade's length into the arm's name (for arms
    that differ from another only in those).
    """
    overrides: dict[str, Any] = {
        "teacher_mechanism": "dirichlet",
        "kickstart_lambda": 0.5,
        "teacher_epsilon_budget": budget,
        "teacher_eta": eta,
        "teacher_k": k,
        "teacher_vanishing_coefficient": 1.0,
        "teacher_cache_bits": 256,
        "kickstart_answer_replay_size": 256,
        "kickstart_answer_target": target,
    }
    name = f"aware-eps{budget:g}-{target}-eta{eta:g}" + (f"-k{k:g}" if named_k else "")
    description = (
        f"privacy-aware, ε budget {budget:g}, η = {eta:g}, k = {k:g} (constant), a 256-bit answer "
        "cache (one release per state until the budget is spent), answer replay of 256 per "
        "minibatch, "
        + (
            "debiased target (x − η)/(1 − mη)"
            if target == "debiased"
            else "argmax target (the one-hot action of the answer's largest entry)"
        )
    )
    if spread:
        overrides.update(kickstart_query_rule="random", kickstart_query_fraction=0.1)
        name += "-spread"
        description += ", a random tenth of each rollout's states asked"
    if loss is not None:
        overrides["kickstart_loss"] = loss
        name += "-ce" if loss == "cross_entropy" else f"-{loss}"
        description += f", kickstart_loss {loss}"
    if fade is not None:
        overrides["kickstart_coeff"] = [[0, 1.0], [fade, 0.0]]
        name += f"-fade{fade // 1000}k" if named_fade else "-fade"
        description += f", kickstart_coeff 1 → 0 over {fade:,} env steps"
    return Arm(name, "KickstartPPO", overrides, description, (task,))


ARMS: dict[str, Arm] = {
    "privacy-aware": Arm(
        "privacy-aware",
        "KickstartPPO",
        {"teacher_mechanism": "dirichlet", "kickstart_lambda": 0.5},
        "KickstartPPO, Dirichlet teacher, λ = 0.5",
        CLASSIC,
    ),
    "privacy-unaware": Arm(
        "privacy-unaware",
        "KickstartPPO",
        {"teacher_mechanism": "dirichlet", "kickstart_lambda": 0.0},
        "KickstartPPO, Dirichlet teacher, λ = 0",
        CLASSIC,
    ),
    "plain-kickstart": Arm(
        "plain-kickstart",
        "KickstartPPO",
        {"teacher_mechanism": "none", "kickstart_lambda": 0.0},
        "KickstartPPO, non-private teacher (`teacher_mechanism: none`), λ = 0",
    ),
    "no-kickstart": Arm("no-kickstart", "PPO", {}, "plain RLlib PPO, no teacher"),
    # The paper's vanishing coefficients (AirRaid figures), for both kinds of student.
    **{
        f"{kind}-c{c}": Arm(
            f"{kind}-c{c}",
            "KickstartPPO",
            {
                "teacher_mechanism": "dirichlet",
                "kickstart_lambda": lam,
                "teacher_vanishing_coefficient": c,
            },
            f"KickstartPPO, Dirichlet teacher, λ = {lam}, c = {c}",
            ("airraid",),
        )
        for kind, lam in (("aware", 0.5), ("unaware", 0.0))
        for c in (0.1, 0.3, 0.9)
    },
    # Points of the privacy-utility curve: smaller budgets, made usable by the answer cache.
    "aware-eps100-cache32": Arm(
        "aware-eps100-cache32",
        "KickstartPPO",
        {
            "teacher_mechanism": "dirichlet",
            "kickstart_lambda": 0.5,
            "teacher_epsilon_budget": 100.0,
            "teacher_cache_bits": 32,
            **CACHE_SCHEDULE,
        },
        "privacy-aware, ε budget 100, a 32-bit answer cache, c = 0.8, min_k = 5",
        CLASSIC,
    ),
    "aware-eps10-cache16": Arm(
        "aware-eps10-cache16",
        "KickstartPPO",
        {
            "teacher_mechanism": "dirichlet",
            "kickstart_lambda": 0.5,
            "teacher_epsilon_budget": 10.0,
            "teacher_cache_bits": 16,
            **CACHE_SCHEDULE,
        },
        "privacy-aware, ε budget 10, a 16-bit answer cache, c = 0.8, min_k = 5",
        CLASSIC,
    ),
    "aware-eps10-k5-cache24": Arm(
        "aware-eps10-k5-cache24",
        "KickstartPPO",
        {
            "teacher_mechanism": "dirichlet",
            "kickstart_lambda": 0.5,
            "teacher_epsilon_budget": 10.0,
            "teacher_cache_bits": 24,
            "teacher_k": 5.0,
            **CACHE_SCHEDULE,
            "teacher_min_k": 0.5,
        },
        "privacy-aware, ε budget 10, k₀ = 5, a 24-bit answer cache, c = 0.8, min_k = 0.5",
        CLASSIC,
    ),
    # Answer replay: every released answer is trained on again in later minibatches
    # (post-processing, no budget), so the few answers a small ε buys keep teaching.
    **{
        f"aware-eps{budget:g}-replay": Arm(
            f"aware-eps{budget:g}-replay",
            "KickstartPPO",
            {
                "teacher_mechanism": "dirichlet",
                "kickstart_lambda": 0.5,
                "teacher_epsilon_budget": budget,
                "teacher_cache_bits": 24,
                "teacher_k": 5.0,
                **CACHE_SCHEDULE,
                "teacher_min_k": 0.5,
                "kickstart_answer_replay_size": 256,
            },
            f"privacy-aware, ε budget {budget:g}, k₀ = 5, a 24-bit answer cache, c = 0.8, "
            "min_k = 0.5, answer replay of 256 remembered answers per minibatch",
        )
        for budget in (10.0, 1.0)
    },
    # Budgeted ε-10 students: a large η makes each release cheap (the Rényi cost falls steeply
    # as η approaches 1/m), a large k makes each answer informative, and the student reads the
    # answer for free as (x − η)/(1 − mη) ("debiased") or as its largest entry ("argmax").
    # A 256-bit cache answers one release per state until the budget is spent; replay keeps
    # the answers. "-spread" asks about a random tenth of each rollout's states (the budget
    # then lasts several rollouts, at the states the improving student visits); "-fade" ends
    # the help with a kickstart_coeff schedule.
    **{
        arm.name: arm
        for target in ("debiased", "argmax")
        for spread, fade_out in ((False, False), (True, False), (False, True), (True, True))
        for task, eta, k, fade in (
            ("cartpole", 0.4, 100.0, 30_000),
            ("acrobot", 0.3, 200.0, 30_000),
            ("airraid", 0.16, 100.0, 200_000),
        )
        for arm in [
            _budgeted_arm(task, eta, k, fade if fade_out else None, spread=spread, target=target)
        ]
    },
    # Every state asked, k lowered so that the budget lasts about as long as the help (the
    # fade): many noisier labels instead of a few sharp ones. Near η = 1/m the information a
    # budget buys (releases × the mutual information of one label) changes little with k,
    # but every visited state of the help window then gets a label.
    **{
        arm.name: arm
        for task, eta, k, fade in (
            ("acrobot", 0.3, 80.0, 30_000),
            ("acrobot", 0.32, 560.0, 30_000),
        )
        for arm in [_budgeted_arm(task, eta, k, fade, spread=False, target="argmax", named_k=True)]
    },
    # Shorter fades: with the labels' help the students reach the lower bars within a few
    # rollouts; does an earlier end of the help let them reach T sooner? (Measured: no.)
    **{
        arm.name: arm
        for task, eta, k, spread, fade in (
            ("acrobot", 0.3, 200.0, True, 15_000),
            ("acrobot", 0.3, 200.0, True, 10_000),
            ("acrobot", 0.3, 80.0, False, 15_000),
        )
        for arm in [
            _budgeted_arm(
                task,
                eta,
                k,
                fade,
                spread=spread,
                target="argmax",
                named_k=not spread,
                named_fade=True,
            )
        ]
    },
    # Cross-entropy to the labels (the kickstarting paper's loss) instead of the thresholded
    # L2 distance: a sharper pull towards the teacher's greedy action.
    **{
        arm.name: arm
        for task, eta, k in (("acrobot", 0.3, 200.0), ("cartpole", 0.4, 100.0))
        for arm in [
            _budgeted_arm(task, eta, k, 30_000, spread=True, target="argmax", loss="cross_entropy")
        ]
    },
    # The moonshot, ε = 1: the same recipe with a k that buys several hundred labels
    # (η = 0.45, k = 30: about 890 on the benchmark's CartPole teacher, each right 71% of
    # the time for a confident teacher; Acrobot η = 0.3, k = 100: about 700, right 81%).
    **{
        arm.name: arm
        for task, eta, k, fade in (
            ("cartpole", 0.45, 30.0, 30_000),
            ("acrobot", 0.3, 100.0, 15_000),
        )
        for arm in [
            _budgeted_arm(
                task,
                eta,
                k,
                fade,
                spread=True,
                target="argmax",
                named_k=True,
                named_fade=True,
                budget=1.0,
            )
        ]
    },
}


#: Arms that KickstartPPOConfig now refuses, kept so that their stored trials still analyze:
#: on AirRaid (m = 6, η = 0.16, k = 100) the debiased term's threshold α_λ/(1 − mη) = 1.5
#: exceeds every distance between two policies, so the term never acted (measured: the same
#: final returns as no kickstart, seed for seed).
RETIRED_ARMS: frozenset[str] = frozenset(
    f"aware-eps10-debiased-eta0.16{suffix}" for suffix in ("", "-spread", "-fade", "-spread-fade")
)


#: Variants measured once against the default arms (benchmarks/RESULTS.md, "More seeds,
#: ε = 1, and what did not help"): every state asked with a smaller k, shorter fades and
#: cross-entropy to the labels. None reached T reliably sooner than the arm it varies; they
#: run by name (``--arms``).
VARIANT_ARMS: frozenset[str] = frozenset(
    {
        "aware-eps10-argmax-eta0.3-k80-fade",
        "aware-eps10-argmax-eta0.32-k560-fade",
        "aware-eps10-argmax-eta0.3-spread-fade15k",
        "aware-eps10-argmax-eta0.3-spread-fade10k",
        "aware-eps10-argmax-eta0.3-k80-fade15k",
        "aware-eps10-argmax-eta0.3-spread-ce-fade",
        "aware-eps10-argmax-eta0.4-spread-ce-fade",
    }
)


def default_arms(tasks: Sequence[str]) -> list[str]:
    """Every arm that runs on one of ``tasks``, in ``ARMS`` order (not retired, not variants)."""
    return [
        name
        for name, arm in ARMS.items()
        if name not in RETIRED_ARMS | VARIANT_ARMS and any(arm.runs_on(task) for task in tasks)
    ]


def is_private(arm_name: str) -> bool:
    """Whether the arm's teacher answers through the Dirichlet mechanism (spends ε)."""
    arm = ARMS.get(arm_name)
    return arm is not None and arm.overrides.get("teacher_mechanism") == "dirichlet"


def is_kickstart(arm_name: str) -> bool:
    """Whether the arm is a KickstartPPO student (has a teacher)."""
    arm = ARMS.get(arm_name)
    return arm is not None and arm.algorithm == "KickstartPPO"


def arm_of(algorithm: str, config: Mapping[str, Any]) -> str:
    """The arm a trial belongs to, from its trainable and its (resolved) config.

    Raises:
        BenchmarkError: The config matches no arm.

    """
    # The most specific arm wins: every privacy-utility point also matches "privacy-aware".
    task = next((t.name for t in TASKS.values() if t.env == config.get("env")), None)
    matches = [
        arm
        for arm in ARMS.values()
        if arm.algorithm == algorithm
        and (task is None or arm.runs_on(task))
        and all(config.get(k) == v for k, v in arm.overrides.items())
    ]
    if matches:
        return max(matches, key=lambda arm: len(arm.overrides)).name
    raise BenchmarkError(f"a {algorithm} trial whose config matches no arm: {dict(config)!r}")


def student_cap(teacher_steps: float, *, factor: float, cap: int, batch: int) -> int:
    """Steps a student may take: ``factor`` × the teacher's, whole batches, at most ``cap``.

    A teacher that never reached T gives no reference: the students get ``cap``.
    """
    if not math.isfinite(teacher_steps):
        return int(cap)
    batches = max(1, math.ceil(factor * teacher_steps / batch))
    return int(min(cap, batches * batch))


def target_of(args: argparse.Namespace, task: Task) -> float:
    """The return T of ``task`` in this run (``--targets`` or the task's default)."""
    override = (args.targets or {}).get(task.name)
    return float(override) if override is not None else task.target


def with_target(task: Task, target: float) -> Task:
    """``task`` with the target used in this run (its reason rewritten if overridden)."""
    if target == task.target:
        return task
    why = f"set by --targets/--quick (default {format_number(task.target)}: {task.why})"
    return dataclasses.replace(task, target=target, why=why)


# --------------------------------------------------------------------------------------
# Configs.
# --------------------------------------------------------------------------------------


def load_yaml_config(path: Path) -> dict[str, Any]:
    """The first experiment's ``config:`` of a YAML experiment file (plain ``yaml``).

    Not ``rllib_privacy.experiments.load_experiments``: that validates the student's
    ``teacher_checkpoint``, which only exists once this run's teacher is trained.
    """
    import yaml

    if not path.is_file():
        raise BenchmarkError(f"experiment file {str(path)!r} not found")
    with path.open(encoding="utf-8") as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict) or not data:
        raise BenchmarkError(f"{path}: expected a mapping of experiment names to experiments")
    experiment = next(iter(data.values()))
    config = experiment.get("config") if isinstance(experiment, dict) else None
    if not isinstance(config, dict):
        raise BenchmarkError(f"{path}: the first experiment has no config mapping")
    return dict(config)


#: Keys the benchmark sets itself (per arm, task, seed) or that would start more processes.
_BENCH_KEYS = frozenset(
    {"teacher_checkpoint", "teacher_budget_scope", "num_env_runners", "env", "seed"}
)

#: PPO hyperparameters a student's no-kickstart twin shares with it.
PPO_KEYS = ("train_batch_size_per_learner", "minibatch_size", "num_epochs", "lr", "gamma")


def split_student_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(PPO keys incl. ``model_config``, teacher_*/kickstart_* keys) of a student config."""
    ppo: dict[str, Any] = {}
    kickstart: dict[str, Any] = {}
    for key, value in config.items():
        if key in _BENCH_KEYS:
            continue
        if key.startswith(("teacher_", "kickstart_")):
            kickstart[key] = value
        else:
            ppo[key] = value
    return ppo, kickstart


QUICK_PPO = {"train_batch_size_per_learner": 400, "minibatch_size": 100, "num_epochs": 2}


def arm_config(
    arm: Arm,
    *,
    ppo: Mapping[str, Any],
    kickstart: Mapping[str, Any],
    env: str,
    teacher_checkpoint: str,
    smoothing: int,
) -> tuple[Any, dict[str, Any]]:
    """(RLlib AlgorithmConfig, its dict for Tune) of one arm on one task, before seeding."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPOConfig

    ppo = dict(ppo)
    model = dict(ppo.pop("model_config", {}) or {})
    if arm.algorithm == "KickstartPPO":
        config: Any = KickstartPPOConfig()
        # Teacher and kickstart keys go through update_from_dict, which sends each key to
        # its builder method (.teacher()/.kickstart()); .training() takes only PPO's own.
        # update_from_dict also takes the env-runner keys of a YAML (num_envs_per_env_runner),
        # which .training() would reject.
        # Each seed stands for an independent deployment of the teacher (a simulation): every
        # trial spends its own budget, not one owner budget shared by the whole grid.
        config.update_from_dict(ppo).update_from_dict(
            {
                **kickstart,
                **arm.overrides,
                "teacher_checkpoint": teacher_checkpoint,
                "teacher_budget_scope": "trial",
            }
        )
    elif arm.algorithm == "PPO":
        config = PPOConfig().update_from_dict(ppo)
    else:
        raise BenchmarkError(f"arm {arm.name}: unknown algorithm {arm.algorithm!r}")
    config.environment(env).env_runners(num_env_runners=0).rl_module(
        model_config=DefaultModelConfig(**model)
    )
    config.reporting(metrics_num_episodes_for_smoothing=smoothing)
    config.debugging(log_level="ERROR")
    return config, config.to_dict()


# --------------------------------------------------------------------------------------
# The grid of trials.
# --------------------------------------------------------------------------------------

#: The arm name of a teacher trial (keys, stores, tables).
TEACHER = "teacher"


def trial_key(task: str, arm: str, seed: int) -> str:
    """``cartpole/privacy-aware/seed=0``: a trial's name in the store of finished trials."""
    return f"{task}/{arm}/seed={seed}"


@dataclasses.dataclass(frozen=True)
class PlannedTrial:
    """One trial of the grid.

    Attributes:
        key: Its ``trial_key``.
        task: The task it runs on.
        arm: Its arm's name (``TEACHER`` for a teacher).
        seed: Its seed (a student's teacher answers with the same seed).
        algorithm: Registered Tune trainable.
        point: Its Tune config on top of its Tuner's base (env, seed, the arm's keys, ...).
        stop: (target return, env-step cap): it stops at whichever comes first.
        spec: What makes it, as JSON-able data: a recorded trial is reused only while its
            spec is unchanged.

    """

    key: str
    task: Task
    arm: str
    seed: int
    algorithm: str
    point: Mapping[str, Any]
    stop: tuple[float, int]
    spec: Mapping[str, Any]


@dataclasses.dataclass
class GridPlan:
    """The sample-efficiency grid of one run: teachers first, then students.

    Attributes:
        tasks: The tasks, in ``--tasks`` order.
        arms: The student arms, in ``--arms`` order.
        seeds: Student seeds.
        ppo: PPO settings of the students (``model_config`` included).
        kickstart: teacher_*/kickstart_* settings of the KickstartPPO students.
        teacher_ppo: PPO settings of the teachers.
        targets: env → return T.
        teacher_seed: The teachers' seed.
        teacher_cap: Env steps after which a teacher that has not reached T stops.
        cap: Hard cap on a student's env steps.
        cap_factor: Students stop at this multiple of their teacher's steps to T.
        smoothing: ``metrics_num_episodes_for_smoothing``.

    """

    tasks: list[Task]
    arms: list[Arm]
    seeds: list[int]
    ppo: dict[str, Any]
    kickstart: dict[str, Any]
    teacher_ppo: dict[str, Any]
    targets: dict[str, float]
    teacher_seed: int
    teacher_cap: int
    cap: int
    cap_factor: float
    smoothing: int

    @property
    def batch(self) -> int:
        return int(self.ppo.get("train_batch_size_per_learner", 4000))

    @property
    def lowers(self) -> dict[str, float]:
        """env → the lower bar T₂."""
        return {task.env: task.lower for task in self.tasks}

    @property
    def floors(self) -> dict[str, float]:
        """env → the return the 0.75·T bar is measured from."""
        return {task.env: task.floor for task in self.tasks}

    def stop_bars(self, env: str) -> tuple[float, float, float]:
        """(T, T₂, floor) of the task of ``env``: the target, the lower bar, the 0.75·T floor."""
        return self.targets[env], self.lowers[env], self.floors[env]

    def arms_of(self, task: Task, algorithm: str | None = None) -> list[Arm]:
        """The arms that run on ``task`` (of one trainable, or all)."""
        return [
            arm
            for arm in self.arms
            if arm.runs_on(task.name) and algorithm in (None, arm.algorithm)
        ]

    @property
    def num_trials(self) -> int:
        """Teachers and students of the whole grid."""
        students = sum(len(self.arms_of(task)) for task in self.tasks) * len(self.seeds)
        return len(self.tasks) + students

    def teacher_trials(self) -> list[PlannedTrial]:
        """One teacher per task: plain PPO with the teacher YAML's settings, one fixed seed."""
        out = []
        for task in self.tasks:
            stop = (self.targets[task.env], int(self.teacher_cap))
            spec = {
                "algorithm": "PPO",
                "env": task.env,
                "seed": self.teacher_seed,
                "config": self.teacher_ppo,
                "smoothing": self.smoothing,
                "stop": stop,
            }
            out.append(
                PlannedTrial(
                    key=trial_key(task.name, TEACHER, self.teacher_seed),
                    task=task,
                    arm=TEACHER,
                    seed=self.teacher_seed,
                    algorithm="PPO",
                    point={"env": task.env, "seed": self.teacher_seed},
                    stop=stop,
                    spec=spec,
                )
            )
        return out

    def caps(self, teacher_steps: Mapping[str, float]) -> dict[str, int]:
        """env → a student's step cap, from its teacher's env steps to T."""
        return {
            task.env: student_cap(
                teacher_steps[task.env], factor=self.cap_factor, cap=self.cap, batch=self.batch
            )
            for task in self.tasks
        }

    def student_trials(
        self,
        algorithm: str,
        base: Mapping[str, Any],
        teachers: Mapping[str, tuple[str, Mapping[str, Any]]],
        caps: Mapping[str, int],
    ) -> list[PlannedTrial]:
        """The students of one trainable: task × arm × seed, seeds innermost.

        Args:
            algorithm: ``KickstartPPO`` or ``PPO`` (one Tuner each).
            base: The Tuner's param space, with no arm's keys.
            teachers: env → (the teacher's trial folder, the teacher's spec).
            caps: env → the students' step cap.

        """
        arms = [arm for arm in self.arms if arm.algorithm == algorithm]
        # Each point sets every key any arm overrides (the YAML's value where its arm does
        # not), so no arm inherits another's settings from the base.
        varied = {key for arm in arms for key in arm.overrides}
        out = []
        for task in self.tasks:
            stop = (self.targets[task.env], int(caps[task.env]))
            teacher_path, teacher_spec = teachers[task.env]
            for arm in self.arms_of(task, algorithm):
                point = {"env": task.env, **{key: base[key] for key in varied}, **arm.overrides}
                spec: dict[str, Any] = {
                    "algorithm": algorithm,
                    "env": task.env,
                    "config": self.ppo,
                    "arm": dict(arm.overrides),
                    "smoothing": self.smoothing,
                    "stop": stop,
                }
                if algorithm == "KickstartPPO":
                    point["teacher_checkpoint"] = teacher_path
                    spec.update(kickstart=self.kickstart, teacher=teacher_spec)
                for seed in self.seeds:
                    seeded = {**point, "seed": seed}
                    if algorithm == "KickstartPPO":
                        # The teacher's seed follows the student's; its noise also mixes in
                        # a fresh OS-entropy nonce per start (NoiseStreams), so reruns differ.
                        seeded["teacher_seed"] = seed
                    out.append(
                        PlannedTrial(
                            key=trial_key(task.name, arm.name, seed),
                            task=task,
                            arm=arm.name,
                            seed=seed,
                            algorithm=algorithm,
                            point=seeded,
                            stop=stop,
                            spec={**spec, "seed": seed},
                        )
                    )
        return out


def plan_grid(args: argparse.Namespace) -> GridPlan:
    """The grid of a run from its arguments (reads the experiment files).

    Raises:
        BenchmarkError: An experiment file is missing or invalid.

    """
    ppo, kickstart = split_student_config(load_yaml_config(args.student_config))
    teacher_ppo, _ = split_student_config(load_yaml_config(args.teacher_config))
    if args.quick:
        ppo.update(QUICK_PPO)
        teacher_ppo.update(QUICK_PPO)
    tasks = [TASKS[name] for name in args.tasks]
    return GridPlan(
        tasks=tasks,
        arms=[ARMS[name] for name in args.arms],
        seeds=[args.seed + k for k in range(args.seeds)],
        ppo=ppo,
        kickstart=kickstart,
        teacher_ppo=teacher_ppo,
        targets={task.env: target_of(args, task) for task in tasks},
        teacher_seed=args.teacher_seed,
        teacher_cap=args.teacher_cap,
        cap=args.cap,
        cap_factor=args.student_cap_factor,
        smoothing=args.smoothing,
    )
