"""How the kickstarting benchmark runs: its grid through Ray Tune (resumable), and the overhead.

Sample efficiency: the teachers (one per task) in one Tuner, then the students of every
task in one Tuner per trainable. Every trial that reaches its target or step cap is
recorded as it finishes in ``kickstart_trials.json`` in the storage folder (a
``harness.TrialStore``); rerunning the same command with the same ``--storage-path`` runs
only the trials not recorded there (or whose settings changed) and reads the others back
from their Tune folders. A progress line per finished trial gives done/total and an ETA.

Overhead: KickstartPPO, PPO and (optionally) KickstartPPO with the teacher's answer cache,
built in one process and trained in turn, the order rotated every round.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import (
    INF,
    BenchmarkError,
    Progress,
    TrialStore,
    dump_json,
    format_duration,
    format_number,
    jsonable,
    load_json,
    log_algorithms_into_a_temporary_folder,
    nested_get,
    run_resumable,
)

from kickstart_bench.plan import (
    ARMS,
    QUICK_PPO,
    TASKS,
    TEACHER,
    Arm,
    GridPlan,
    PlannedTrial,
    arm_config,
    load_yaml_config,
    plan_grid,
    split_student_config,
    trial_key,
)
from kickstart_bench.report import format_steps, task_results
from kickstart_bench.results import (
    ANSWERED_KEY,
    ASKED_KEY,
    CACHE_SIZE_KEY,
    CACHED_KEY,
    STEPS_KEY,
    OverheadResult,
    RunResult,
    TaskResult,
    load_trial_folders,
    read_runs,
    run_of,
    student_folders,
    to_float,
    trial_summary,
    with_steps_to_target,
)

#: The store of finished trials, in the storage folder.
TRIALS_FILE = "kickstart_trials.json"
#: The training run's command and wall times, in the storage folder.
RUN_RECORD = "kickstart_benchmark_run.json"

#: Runs some planned trials of one trainable (``run_tuner``'s signature; a fake in tests).
Runner = Callable[..., None]
#: env → (the trial, its RunResult): the teachers, or one arm's students.
Trials = dict[str, tuple[Any, RunResult]]

# --------------------------------------------------------------------------------------
# Tune.
# --------------------------------------------------------------------------------------


def is_finished(result: Mapping[str, Any], stop: tuple[float, int]) -> bool:
    """Whether a (nested) result has reached the return target or the step cap."""
    target, cap = stop
    value = to_float((result.get("env_runners") or {}).get("episode_return_mean"))
    return (not math.isnan(value) and value >= target) or to_float(result.get(STEPS_KEY)) >= cap


def planned_of(config: Mapping[str, Any], trials: Sequence[PlannedTrial]) -> PlannedTrial | None:
    """The planned trial whose Tune point ``config`` (a trial's resolved config) carries.

    Values are compared as JSON (a tuple of the point is a list in Tune's config).
    """
    for trial in trials:
        if all(jsonable(config.get(key)) == jsonable(v) for key, v in trial.point.items()):
            return trial
    return None


def _callbacks(
    planned_trials: Sequence[PlannedTrial],
    on_finished: Callable[[str, Mapping[str, Any]], None] | None,
) -> tuple[Any, Any]:
    """(Tune callback, stopper): a trial stops at its env's target return or step cap.

    One Tuner runs trials of several envs, but Tune's ``stop`` dict is per Tuner and a
    stopper only sees ``(trial_id, result)``; the callback tells the stopper each trial's
    env when the trial starts. It also passes every trial that finished (reached its
    target or cap, not interrupted) to ``on_finished`` with what the store keeps of it.
    """
    from ray import tune

    stops = {trial.task.env: trial.stop for trial in planned_trials}
    env_of: dict[str, str] = {}

    class RecordTrials(tune.Callback):
        """Remembers every trial's env for the stopper; reports finished trials."""

        def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            env_of[trial.trial_id] = trial.config["env"]

        def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            result = trial.last_result or {}
            if on_finished is None or not is_finished(result, stops[trial.config["env"]]):
                return  # stopped early (interrupted): not a finished trial
            planned = planned_of(trial.config, planned_trials)
            if planned is None:  # cannot happen: every trial is a planned point
                print(f"[grid] note: finished trial {trial.path} matches no plan", flush=True)
                return
            on_finished(planned.key, {"path": str(trial.path), **trial_summary(result)})

    class TargetOrCapStopper(tune.Stopper):
        """Stops a trial at return ≥ its env's target or at its env's step cap."""

        def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
            return is_finished(result, stops[env_of[trial_id]])

        def stop_all(self) -> bool:
            return False

    return RecordTrials(), TargetOrCapStopper()


def tune_space(base: Mapping[str, Any], trials: Sequence[PlannedTrial]) -> dict[str, Any]:
    """The Tuner's param space: ``base`` with a slot for every list a trial's point sets.

    Tune writes a point's list into the space entry by entry (a schedule such as
    kickstart_coeff [[0, 1.0], [30000, 0.0]]), so the entry must have its shape. Its leaves
    are None: Tune compares a point's leaf with a non-empty space leaf to warn, and that
    warning fails on the list index in the key path (ray 2.60), so two arms with different
    schedules would stop the run.
    """
    space = dict(base)
    for t in trials:
        for key, value in t.point.items():
            if isinstance(value, list | tuple):
                space[key] = _skeleton(value)
    return space


def _skeleton(value: Any) -> Any:
    """``value``'s nested list shape with None at every leaf."""
    if isinstance(value, list | tuple):
        return [_skeleton(item) for item in value]
    return None


def run_tuner(
    trainable: str,
    base: Mapping[str, Any],
    trials: Sequence[PlannedTrial],
    *,
    storage_path: Path,
    name: str,
    checkpoint_at_end: bool,
    verbose: int,
    on_finished: Callable[[str, Mapping[str, Any]], None] | None = None,
) -> None:
    """One Tuner: every planned trial, in parallel.

    Args:
        trainable: Registered algorithm name.
        base: Param space shared by all trials.
        trials: The trials (each point sets env, seed and its arm's keys).
        storage_path: Tune storage folder; the experiment lands in ``storage_path/name``.
        name: Experiment name.
        checkpoint_at_end: Save each trial's final checkpoint (teachers).
        verbose: Tune verbosity.
        on_finished: Called with (key, what to record) as each trial finishes.

    Raises:
        BenchmarkError: A trial errored, or stopped before its target or cap (interrupted).

    """
    from ray import tune
    from ray.tune.search import BasicVariantGenerator

    callback, stopper = _callbacks(trials, on_finished)
    space = tune_space(base, trials)
    tuner = tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(
            # Each point is one trial.
            search_alg=BasicVariantGenerator(points_to_evaluate=[dict(t.point) for t in trials]),
            num_samples=len(trials),
            reuse_actors=False,
        ),
        run_config=tune.RunConfig(
            name=name,
            stop=stopper,
            callbacks=[callback],
            storage_path=str(storage_path),
            verbose=verbose,
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=checkpoint_at_end),
            failure_config=tune.FailureConfig(max_failures=0),
        ),
    )
    grid = tuner.fit()
    failed = [r for r in grid if r.error is not None]
    # An interrupted fit (Ctrl-C) returns without errors: every trial must have stopped
    # at its target or cap, or the run is incomplete and must not be reported.
    stops = {trial.task.env: trial.stop for trial in trials}
    # A trial that an interrupt caught before it started has no config (nor env) yet.
    unfinished = [
        r
        for r in grid
        if r.error is None
        and (
            (r.config or {}).get("env") not in stops
            or not is_finished(r.metrics or {}, stops[r.config["env"]])
        )
    ]
    if unfinished:
        raise BenchmarkError(
            f"{len(unfinished)} trial(s) stopped before their target or cap (interrupted?): "
            + ", ".join(str(r.path) for r in unfinished)
            + "; the finished ones are recorded: rerun the same command to resume"
        )
    if failed:
        lines = [f"{r.path}: {type(r.error).__name__}: {r.error}" for r in failed]
        raise BenchmarkError(
            f"{len(failed)} trial(s) failed; no results are reported:\n  " + "\n  ".join(lines)
        )


# --------------------------------------------------------------------------------------
# The resumable grid.
# --------------------------------------------------------------------------------------


def describe(key: str, result: Mapping[str, Any]) -> str:
    """The progress message of a finished trial."""
    return (
        f"{key}: return {format_number(to_float(result.get('final_return')))} after "
        f"{format_steps(to_float(result.get('env_steps')))} env steps "
        f"(trial {format_duration(to_float(result.get('wall_s')))})"
    )


@dataclasses.dataclass
class Grid:
    """One run of the grid: its plan, store of finished trials, progress and wall times.

    Attributes:
        plan: The trials.
        storage: The Tune storage folder (the store and the run record are in it).
        store: The finished trials.
        progress: One line per finished trial: done/total and an ETA.
        runner: Runs trials (``run_tuner``; tests pass a fake).
        verbose: Tune verbosity.
        walls: Wall seconds of the ``teachers`` and ``students`` Tuners of this run.
        reused: Trials taken from the store instead of run (a resumed grid when > 0).

    """

    plan: GridPlan
    storage: Path
    store: TrialStore
    progress: Progress
    runner: Runner
    verbose: int = 0
    walls: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"teachers": 0.0, "students": 0.0}
    )
    reused: int = 0

    def run(
        self, trials: Sequence[PlannedTrial], base: Mapping[str, Any], **tuner: Any
    ) -> dict[str, dict[str, Any]]:
        """Runs the trials the store does not hold (one runner call); reuses the others.

        Args:
            trials: The planned trials of one trainable.
            base: The Tuner's param space.
            **tuner: ``name`` and ``checkpoint_at_end`` of the Tuner; its wall seconds go
                to the phase its name starts with (also when it is interrupted).

        Returns:
            Key → recorded result of every trial, with its Tune folder as ``path``.

        """
        by_key = {trial.key: trial for trial in trials}
        phase = str(tuner["name"]).split("_", 1)[0]

        def run(keys: list[str], finished: Callable[[str, Mapping[str, Any]], None]) -> bool:
            self.reused += len(by_key) - len(keys)
            start = time.perf_counter()
            try:
                self.runner(
                    trials[0].algorithm,
                    base,
                    [by_key[key] for key in keys],
                    on_finished=lambda key, result: finished(key, self._relative(result)),
                    storage_path=self.storage,
                    verbose=self.verbose,
                    **tuner,
                )
            finally:
                self.walls[phase] += time.perf_counter() - start
            return True

        records, ran = run_resumable(
            {key: trial.spec for key, trial in by_key.items()},
            self.store,
            run,
            progress=self.progress,
            describe=describe,
            reusable=lambda result: self.folder(result).is_dir(),
        )
        if ran is None:  # every trial was reused
            self.reused += len(by_key)
        return records

    def _relative(self, result: Mapping[str, Any]) -> dict[str, Any]:
        # The store names trial folders relative to the storage folder, which may move.
        return {**result, "path": os.path.relpath(result["path"], self.storage)}

    def folder(self, record: Mapping[str, Any]) -> Path:
        """The Tune folder of a recorded trial."""
        return self.storage / str(record.get("path", ""))

    def load(self, record: Mapping[str, Any]) -> tuple[Any, RunResult]:
        """(trial, RunResult) of a recorded trial, read from its Tune folder."""
        (trial,) = load_trial_folders(self.folder(record))
        return trial, run_of(trial)


def train_teachers(
    args: argparse.Namespace, grid: Grid
) -> tuple[Trials, dict[str, Mapping[str, Any]]]:
    """The teachers: (env → trial and result with steps to T and T₂, env → spec).

    With ``--analyze-only``/``--reuse-teachers`` nothing trains: the teachers are read from
    ``storage/teachers`` (the store's where it has them).
    """
    plan = grid.plan
    planned = plan.teacher_trials()
    specs = {trial.task.env: trial.spec for trial in planned}
    if args.analyze_only or args.reuse_teachers:
        folder = grid.storage / "teachers"
        grid.progress.skip(len(planned), f"{len(planned)} teacher(s) read from {folder}")
        grid.walls["teachers"] = math.nan
        found = scan_runs([(folder, TEACHER)], grid)
    else:
        _, space = arm_config(
            ARMS["no-kickstart"],
            ppo=plan.teacher_ppo,
            kickstart={},
            env=plan.tasks[0].env,
            teacher_checkpoint="",
            smoothing=plan.smoothing,
        )
        names = ", ".join(task.env for task in plan.tasks)
        print(f"[teachers] {names}: PPO until T or {plan.teacher_cap} steps", flush=True)
        records = grid.run(planned, space, name="teachers", checkpoint_at_end=True)
        found = [(t.task.env, TEACHER, *grid.load(records[t.key])) for t in planned]
    teachers: Trials = {}
    for env, _, trial, run in found:
        if env in plan.targets:  # --analyze-only on a folder with more tasks
            teachers[env] = (trial, with_steps_to_target(trial, run, *plan.stop_bars(env)))
    return teachers, specs


def train_students(
    args: argparse.Namespace,
    grid: Grid,
    teachers: Mapping[str, tuple[str, Mapping[str, Any]]],
    caps: Mapping[str, int],
) -> list[tuple[str, str, Any, RunResult]]:
    """The students: (env, arm, trial, RunResult with steps to T and T₂) of each.

    Args:
        args: The run's arguments.
        grid: The grid being run.
        teachers: env → (teacher trial folder, teacher spec).
        caps: env → the students' step cap.

    """
    plan = grid.plan
    found: list[tuple[str, str, Any, RunResult]] = []
    for algorithm in ("KickstartPPO", "PPO"):
        if not any(arm.algorithm == algorithm for arm in plan.arms):
            continue
        first = plan.tasks[0].env
        _, base = arm_config(
            Arm("base", algorithm, {}, ""),
            ppo=plan.ppo,
            kickstart=plan.kickstart,
            env=first,
            teacher_checkpoint=teachers[first][0],
            smoothing=plan.smoothing,
        )
        planned = plan.student_trials(algorithm, base, teachers, caps)
        records = grid.run(planned, base, name=f"students_{algorithm}", checkpoint_at_end=False)
        for t in planned:
            trial, run = grid.load(records[t.key])
            run = with_steps_to_target(trial, run, *plan.stop_bars(t.task.env), caps[t.task.env])
            found.append((t.task.env, t.arm, trial, run))
        print(f"[students] {algorithm} done ({grid.walls['students']:.0f} s so far)", flush=True)
    return found


def scan_runs(
    folders: Sequence[tuple[Path, str]], grid: Grid
) -> list[tuple[str, str, Any, RunResult]]:
    """Every trial of the experiment folders as (env, arm, trial, RunResult).

    A trial that the store records at another folder is left out: an attempt that a
    resumed run replaced (e.g. one interrupted before its target or cap).
    """
    recorded = {key: grid.folder(r).resolve() for key, r in grid.store.recorded().items()}
    task_of = {task.env: name for name, task in TASKS.items()}
    out = []
    for folder, algorithm in folders:
        for env, arm, trial, run in read_runs(folder, algorithm):
            key = trial_key(task_of.get(env, env), arm, run.seed)
            if key in recorded and recorded[key] != Path(trial.path).resolve():
                continue
            out.append((env, arm, trial, run))
    return out


def analyzed_students(grid: Grid, caps: Mapping[str, int]) -> list[tuple[str, str, Any, RunResult]]:
    """The students an earlier run left in the storage folder (``--analyze-only``).

    ``students_<algorithm>`` folders, plus any ``students_<algorithm>_<suffix>`` linked
    in from elsewhere; a trial that neither reached T nor its cap (an interrupted run) is
    counted as not reached and marked unfinished.
    """
    found = []
    for folder, algorithm in student_folders(grid.storage):
        try:
            runs = scan_runs([(folder, algorithm)], grid)
        except BenchmarkError as e:
            print(f"[students] note: {e}; left out", flush=True)
            continue
        for env, arm, trial, run in runs:
            if env not in grid.plan.targets:
                continue
            # The cap also censors a linked-in trial that ran with a longer cap.
            run = with_steps_to_target(trial, run, *grid.plan.stop_bars(env), caps[env])
            if not math.isfinite(run.steps_to_target) and run.env_steps < caps[env]:
                # A trial that neither reached T nor its cap: counted as not reached, marked.
                run = dataclasses.replace(run, unfinished=True)
            found.append((env, arm, trial, run))
    return found


def run_sample_efficiency(
    args: argparse.Namespace, storage: Path, runner: Runner = run_tuner
) -> list[TaskResult]:
    """Teachers (one per task, in parallel), then the students of every task together.

    Every finished trial is recorded in ``storage``'s store as it finishes; a rerun of the
    same command skips those and reads them back (see the module docstring).
    """
    plan = plan_grid(args)
    grid = Grid(
        plan,
        storage,
        TrialStore(storage / TRIALS_FILE),
        Progress(plan.num_trials),
        runner,
        verbose=args.tune_verbose,
    )
    if args.analyze_only:
        grid.walls["students"] = math.nan
    try:
        teachers, teacher_specs = train_teachers(args, grid)
        _print_teachers(plan, teachers)
        caps = plan.caps({env: run.steps_to_target for env, (_, run) in teachers.items()})
        print(
            f"[students] {len(plan.tasks)} task(s) × {len(plan.arms)} arms × "
            f"{len(plan.seeds)} seeds; step caps "
            + ", ".join(f"{t.env} {caps[t.env]}" for t in plan.tasks),
            flush=True,
        )
        if args.analyze_only:
            students = analyzed_students(grid, caps)
        else:
            paths = {env: (run.path, teacher_specs[env]) for env, (_, run) in teachers.items()}
            students = train_students(args, grid, paths, caps)
    finally:
        # Also on an interrupted run: its time counts when the next run resumes it.
        teacher_wall, student_wall = record_run(
            args,
            storage,
            grid.walls["teachers"],
            grid.walls["students"],
            resumed=grid.reused > 0,
        )
    return task_results(args, plan, teachers, students, caps, wall_s=teacher_wall + student_wall)


def _print_teachers(plan: GridPlan, teachers: Trials) -> None:
    for task in plan.tasks:
        teacher = teachers[task.env][1]
        reached = (
            f"reached at {format_steps(teacher.steps_to_target)} steps"
            if math.isfinite(teacher.steps_to_target)
            else "not reached"
        )
        print(
            f"[teachers] {task.env}: T={format_number(plan.targets[task.env])} {reached} "
            f"(final return {teacher.final_return:.1f} after {teacher.env_steps} steps)",
            flush=True,
        )


def record_run(
    args: argparse.Namespace,
    storage: Path,
    teacher_wall: float,
    student_wall: float,
    *,
    resumed: bool = False,
) -> tuple[float, float]:
    """Saves the training run's command and wall times beside its Tune folders.

    A run that resumed an earlier one (``resumed``) adds its times to the recorded ones.
    With ``--analyze-only`` it reads them back instead, so that RESULTS.md names the
    command that trained (and how long it took), not only the one that re-analyzed.
    """
    path = storage / RUN_RECORD
    if not args.analyze_only:
        if resumed and path.is_file():
            earlier = load_json(path)
            teacher_wall += float(earlier.get("teachers_s", 0.0))
            student_wall += float(earlier.get("students_s", 0.0))
        record = {
            "command": args.command_line,
            "teachers_s": teacher_wall,
            "students_s": student_wall,
        }
        dump_json(path, record, indent=None)
        return teacher_wall, student_wall
    if not path.is_file():
        return math.nan, math.nan
    record = load_json(path)
    args.analyzed_by = args.command_line
    args.command_line = record["command"]
    args.run_note = record.get("note")  # e.g. how runs of several processes were combined
    return float(record["teachers_s"]), float(record["students_s"])


# --------------------------------------------------------------------------------------
# Overhead.
# --------------------------------------------------------------------------------------


class _TimedTeacher:
    """Wraps a TeacherClient's methods in place and adds up the seconds spent in them."""

    def __init__(self, client: Any) -> None:
        self.seconds = {"answer": 0.0, "rollout": 0.0}
        self.calls = {"answer": 0, "rollout": 0}
        for method, bucket in (
            ("answer", "answer"),
            ("start_rollout", "rollout"),
            ("stats", "rollout"),
        ):
            setattr(client, method, self._timed(getattr(client, method), bucket))

    def _timed(self, fn: Callable[..., Any], bucket: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[bucket] += time.perf_counter() - start
                self.calls[bucket] += 1

        return call

    def take(self) -> tuple[float, float, int]:
        """(answer s, rollout+stats s, answer calls) since the last take; resets."""
        out = (self.seconds["answer"], self.seconds["rollout"], self.calls["answer"])
        self.seconds = {"answer": 0.0, "rollout": 0.0}
        self.calls = {"answer": 0, "rollout": 0}
        return out


#: The overhead's algorithms (``ARMS`` names): KickstartPPO with the Dirichlet teacher, PPO.
KICKSTART_ARM, PPO_ARM = "privacy-aware", "no-kickstart"
#: The third one, with ``--overhead-cache-bits`` > 0: the same KickstartPPO with the
#: teacher's answer cache.
CACHE_ARM = "answer-cache"
#: Teacher counts the cache arm reports after each iteration (rllib_privacy.utils.metrics):
#: totals since it was built, the cache's size a level.
CACHE_COUNT_KEYS = {
    "asked": ASKED_KEY,
    "cached": CACHED_KEY,
    "answered": ANSWERED_KEY,
    "cache_size": CACHE_SIZE_KEY,
}


def rotation(names: Sequence[str], round_index: int) -> tuple[str, ...]:
    """The order in which ``names`` train in round ``round_index``: rotated by the round.

    Over any n consecutive rounds each of the n algorithms trains once in every position,
    so a drift linear in time adds the same to each one's total (for two this is ABBA:
    AB, BA, AB, ...; for three ABC, BCA, CAB).
    """
    shift = round_index % len(names)
    return (*names[shift:], *names[:shift])


def _overhead_algos(args: argparse.Namespace, teacher_checkpoint: str) -> tuple[dict, int]:
    """(arm → built algorithm, batch) of KickstartPPO (Dirichlet), PPO and the cache arm.

    The cache arm (``args.overhead_cache_bits`` > 0) is the privacy-aware arm with
    ``teacher_cache_bits`` set and nothing else changed.
    """
    ppo, kickstart = split_student_config(load_yaml_config(args.student_config))
    if args.quick:
        ppo.update(QUICK_PPO)
    # Budgets lifted: the teacher answers every measured iteration (the costly case).
    kickstart = {
        **kickstart,
        "teacher_epsilon_budget": INF,
        # rdp (the default composition) converts ε at this δ, which must stay below 1.
        "teacher_delta_budget": 0.5
        if kickstart.get("teacher_composition", "rdp") == "rdp"
        else 1.0,
        "teacher_seed": args.seed,
    }
    arms = {KICKSTART_ARM: ARMS[KICKSTART_ARM], PPO_ARM: ARMS[PPO_ARM]}
    if args.overhead_cache_bits:
        aware = ARMS[KICKSTART_ARM]
        arms[CACHE_ARM] = dataclasses.replace(
            aware,
            name=CACHE_ARM,
            overrides={**aware.overrides, "teacher_cache_bits": args.overhead_cache_bits},
        )
    algos = {}
    for name, arm in arms.items():
        config, _ = arm_config(
            arm,
            ppo=ppo,
            kickstart=kickstart,
            env=TASKS["cartpole"].env,
            teacher_checkpoint=teacher_checkpoint,
            smoothing=args.smoothing,
        )
        config.debugging(seed=args.seed)
        log_algorithms_into_a_temporary_folder("kickstart_overhead_")
        algos[name] = config.build_algo()
    return algos, int(ppo.get("train_batch_size_per_learner", 4000))


def run_overhead(args: argparse.Namespace, teacher_checkpoint: str | None) -> OverheadResult:
    """Seconds per iteration of KickstartPPO (Dirichlet), PPO and the cache arm, in turn.

    Each round trains every algorithm once, in an order rotated every round (``rotation``);
    the first ``args.overhead_warmup`` rounds are not counted. The cache arm's teacher
    counts (states asked, served from the cache, fresh releases) are per iteration: the
    differences of the cumulative counts it reports.
    """
    source = "this run's CartPole teacher"
    if teacher_checkpoint is None:
        teacher_checkpoint = _quick_teacher(args)
        source = "a (64, 64) PPO teacher trained for one iteration (weights do not change cost)"
    algos, batch = _overhead_algos(args, teacher_checkpoint)
    names = tuple(algos)
    timers = {name: _TimedTeacher(algos[name]._teacher) for name in names if name != PPO_ARM}
    times: dict[str, list[float]] = {name: [] for name in names}
    teacher_s: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in timers}
    sharing: list[float] = []
    counts: dict[str, list[float]] = {field: [] for field in CACHE_COUNT_KEYS}
    before = dict.fromkeys(CACHE_COUNT_KEYS, 0.0)  # the cache arm's counts so far
    try:
        total = args.overhead_warmup + args.overhead_iterations
        progress = Progress(total)
        for i in range(total):
            warmup = i < args.overhead_warmup
            for name in rotation(names, i):
                start = time.perf_counter()
                result = algos[name].train()
                elapsed = time.perf_counter() - start
                # Taken every iteration, so that warm-up seconds are not counted later.
                answer, rollout, calls = timers[name].take() if name in timers else (0.0, 0.0, 1)
                if name == CACHE_ARM:
                    now = _cache_counts(result)
                    if not warmup:
                        for field, value in now.items():
                            # The cache's size is a level, the others are cumulative counts.
                            step = value if field == "cache_size" else value - before[field]
                            counts[field].append(step)
                    before = now
                if warmup:
                    continue
                times[name].append(elapsed)
                if name in timers:
                    if calls == 0:
                        raise BenchmarkError(
                            f"overhead: {name}'s learner did not call the wrapped teacher "
                            "client; the teacher time breakdown would be wrong"
                        )
                    teacher_s[name][0].append(answer)
                    teacher_s[name][1].append(rollout)
                if name == KICKSTART_ARM:
                    sharing.append(float(result.get("teacher_sharing", math.nan)))
            progress.advance("overhead iteration" + (" (warm-up)" if warmup else ""))
    finally:
        for algo in algos.values():
            algo.stop()
    cache_answer_s, cache_rollout_s = teacher_s.get(CACHE_ARM, ([], []))
    return OverheadResult(
        kickstart_s=times[KICKSTART_ARM],
        ppo_s=times[PPO_ARM],
        teacher_answer_s=teacher_s[KICKSTART_ARM][0],
        teacher_rollout_s=teacher_s[KICKSTART_ARM][1],
        warmup=args.overhead_warmup,
        batch=batch,
        sharing=sharing,
        teacher_source=source,
        cache_bits=args.overhead_cache_bits if CACHE_ARM in algos else 0,
        cache_s=times.get(CACHE_ARM, []),
        cache_answer_s=cache_answer_s,
        cache_rollout_s=cache_rollout_s,
        cache_asked=counts["asked"],
        cache_cached=counts["cached"],
        cache_answered=counts["answered"],
        cache_size=counts["cache_size"],
    )


def _cache_counts(result: Mapping[str, Any]) -> dict[str, float]:
    """The cache arm's cumulative teacher counts from one result.

    Raises:
        BenchmarkError: A count is missing (the table would report what was not measured).

    """
    out = {field: to_float(nested_get(result, key)) for field, key in CACHE_COUNT_KEYS.items()}
    missing = [CACHE_COUNT_KEYS[field] for field, value in out.items() if math.isnan(value)]
    if missing:
        raise BenchmarkError(f"overhead: the answer-cache arm reported no {', '.join(missing)}")
    return out


def _quick_teacher(args: argparse.Namespace) -> str:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    config = (
        PPOConfig()
        .environment(TASKS["cartpole"].env)
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[64, 64]))
        .debugging(seed=args.teacher_seed, log_level="ERROR")
    )
    log_algorithms_into_a_temporary_folder("kickstart_overhead_")
    algo = config.build_algo()
    try:
        algo.train()
        path = Path(tempfile.mkdtemp(prefix="kickstart_overhead_teacher_")) / "checkpoint"
        algo.save_to_path(str(path))
    finally:
        algo.stop()
    return str(path)
