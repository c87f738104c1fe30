"""The ``rllib`` command (``rllib train -f FILE``) and the ``rllib-privacy`` tools.

RLlib 2.60 no longer ships a command line; this package provides ``rllib train`` for
classic experiment files (see :mod:`rllib_privacy.experiments`), always on RLlib's new
API stack with torch. Everything in the file is validated before Ray starts; problems
are reported on stderr as ``error: FILE: experiment 'NAME': ...`` with exit code 2.

Exit codes: 0 success, 1 a trial errored (or Ray could not start), 2 invalid arguments
or experiment file, 130 interrupted (Ctrl-C; resume with ``--resume``).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.utils import metrics as metric_keys

if TYPE_CHECKING:
    from rllib_privacy import experiments as exps

# Only the standard library and this package's constant modules are imported at the top:
# `rllib --help` and `rllib-privacy --help` must answer without importing Ray, torch or
# gymnasium (seconds). Each command imports what it needs when it runs.

logger = logging.getLogger("rllib_privacy")

EXIT_OK = 0
EXIT_TRIAL_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Scheduler names accepted besides those of ``ray.tune.schedulers.SCHEDULER_IMPORT``.
SCHEDULER_ALIASES = {"asha": "async_hyperband", "median": "median_stopping_rule"}

#: The metric by which the summary picks the best trial (maximized).
BEST_TRIAL_METRIC = "env_runners/episode_return_mean"

#: Result keys shown for the best trial in the summary, when present.
HEADLINE_METRICS = (
    "training_iteration",
    "num_env_steps_sampled_lifetime",
    "env_runners/episode_return_mean",
    "evaluation/env_runners/episode_return_mean",
    metric_keys.PRIVACY_EPSILON_SPENT,
    metric_keys.PRIVACY_DELTA_SPENT,
    metric_keys.PRIVACY_EPSILON_SHUFFLED,
    metric_keys.LDP_SOLVED_AT,
    metric_keys.LDP_EVAL_RETURN_MEAN,
    metric_keys.KICKSTART_TEACHER_STOPPED_AT,
    metric_keys.PATE_QUERIES,
    metric_keys.PATE_EPSILON,
    # Instance-wise Laplace (ILMMetricsCallback): KL against uniform Laplace and pDP.
    metric_keys.ILM_KL_RATIO,
    metric_keys.ILM_PDP_VIOLATIONS,
    metric_keys.ILM_PDP_PASS_RATE,
    # Count-based exploration: the return without bonus is the performance.
    metric_keys.EXPLORATION_EXTRINSIC_RETURN_MEAN,
    metric_keys.EXPLORATION_UNIQUE_CODES,
    metric_keys.EXPLORATION_BONUS_MEAN,
    "time_total_s",
)


# --------------------------------------------------------------------------------------
# `rllib`
# --------------------------------------------------------------------------------------


def build_rllib_parser() -> argparse.ArgumentParser:
    """Build the argument parser of the ``rllib`` command."""
    parser = argparse.ArgumentParser(
        prog="rllib",
        description="Run RLlib experiment files (new API stack, torch) through Ray Tune.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    train = commands.add_parser(
        "train",
        help="run the experiments of a YAML/JSON experiment file",
        description="Run the experiments of a classic RLlib YAML/JSON experiment file, "
        "one after another, with Ray Tune.",
    )
    _add_train_arguments(train)
    train.set_defaults(func=_train)
    return parser


def _add_train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        nargs="*",
        metavar="file FILE",
        help="the experiment file, as in the classic `rllib train file FILE`",
    )
    parser.add_argument("-f", "--config-file", metavar="FILE", help="the experiment file")
    parser.add_argument(
        "--stop", metavar="JSON", help="stop criteria replacing every experiment's `stop`"
    )
    parser.add_argument(
        "--config", metavar="JSON", help="config deep-merged into every experiment's `config`"
    )
    parser.add_argument(
        "--storage-path", metavar="DIR", help="results directory (default: ~/ray_results)"
    )
    parser.add_argument("--num-samples", type=int, metavar="N", help="Tune's num_samples")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the experiments saved under STORAGE_PATH/NAME (unfinished and "
        "errored trials) with their saved stop/config; refuses --stop, --config, --num-samples",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more output (-v, -vv)")
    parser.add_argument("--ray-address", metavar="ADDR", help="join this Ray cluster")
    parser.add_argument("--ray-num-cpus", type=int, metavar="N", help="CPUs of a local Ray")
    parser.add_argument(
        "--ray-num-gpus",
        type=float,
        metavar="N",
        help="GPUs of a local Ray (gpu_config is merged when > 0)",
    )
    parser.add_argument(
        "--scheduler", metavar="NAME", help="Tune trial scheduler, e.g. FIFO, ASHA, PBT"
    )
    parser.add_argument(
        "--scheduler-config",
        metavar="JSON",
        help="keyword arguments of the scheduler, e.g. metric and mode",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="validate and print the normalized experiments; start nothing",
    )


def rllib_main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rllib`` command.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code (see the module docstring).

    """
    args = _parse(build_rllib_parser(), argv)
    return args if isinstance(args, int) else args.func(args)


@dataclasses.dataclass(frozen=True)
class _SchedulerSpec:
    name: str
    kwargs: dict[str, Any]

    def create(self) -> Any:
        from ray.tune.schedulers import create_scheduler

        return create_scheduler(self.name, **self.kwargs)


@dataclasses.dataclass
class _Outcome:
    experiment: exps.Experiment
    grid: Any = None  # ray.tune.ResultGrid, None when interrupted before it returned.
    interrupted: bool = False


def _train(args: argparse.Namespace) -> int:
    from rllib_privacy import cli_preflight, register
    from rllib_privacy import experiments as exps

    _setup_logging(args.verbose)
    notices: list[str] = []
    try:
        path = _experiment_file(args)
        scheduler = _scheduler_spec(args.scheduler, args.scheduler_config)
        _check_ray_arguments(args)
        register()  # Before the file is read: `run:` and `env:` name our algorithms and envs.
        raw, override_config = cli_preflight.resolve_teacher_paths(
            exps.load_experiment_file(path),
            storage_override=args.storage_path,
            override_config=_json_option(args.config, "--config"),
        )
        overrides = exps.Overrides(
            stop=_json_option(args.stop, "--stop"),
            config=override_config,
            storage_path=args.storage_path,
            num_samples=args.num_samples,
        )
        # Unknown (None) when running without --ray-num-gpus: validate with and without
        # gpu_config, and decide once the cluster is up.
        known = args.dry_run or args.ray_num_gpus is not None
        has_gpus = _expected_gpus(args) if known else None
        experiment_file = exps.normalize_experiments(
            raw, path=path, overrides=overrides, has_gpus=has_gpus
        )
        notices += _preflight(args, experiment_file, scheduler)
    except PrivacyConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    for notice in dict.fromkeys([*experiment_file.notices, *notices]):
        print(f"notice: {notice}", file=sys.stderr)
    if args.dry_run:
        _print_dry_run(experiment_file, has_gpus, args.ray_address)
        return EXIT_OK
    return _run(experiment_file, args, scheduler)


def _preflight(
    args: argparse.Namespace, experiment_file: exps.ExperimentFile, scheduler: _SchedulerSpec | None
) -> list[str]:
    """The checks of :mod:`rllib_privacy.cli_preflight` that need validated experiments."""
    from rllib_privacy import cli_preflight
    from rllib_privacy import experiments as exps

    notices = []
    _check_resume_overrides(args, experiment_file)
    if scheduler is not None:
        with exps.quiet_rllib():
            classes = [exps.resolve_algorithm(exp.run) for exp in experiment_file.experiments]
        try:
            notices += cli_preflight.check_scheduler_metric(scheduler.kwargs, classes)
        except PrivacyConfigError as e:
            raise PrivacyConfigError(f"{experiment_file.path}: {e}") from None
    if args.dry_run:
        return notices  # Teachers may be trained later; nothing is resumed.
    try:
        cli_preflight.check_pate_teachers(experiment_file.experiments)
    except PrivacyConfigError as e:
        raise PrivacyConfigError(f"{experiment_file.path}: {e}") from None
    if args.resume:
        from ray import tune

        notices += cli_preflight.check_resume(experiment_file.experiments, tune.Tuner.can_restore)
    return notices


def _check_resume_overrides(args: argparse.Namespace, experiment_file: Any) -> None:
    """``--resume`` of a saved experiment cannot apply --stop/--config/--num-samples.

    Tune's ``Tuner.restore`` keeps the saved experiment's stop criteria, param space and
    sample count, so these options would be dropped without a word.
    """
    if not args.resume:
        return
    given = [
        option
        for option, value in (
            ("--stop", args.stop),
            ("--config", args.config),
            ("--num-samples", args.num_samples),
        )
        if value is not None
    ]
    if not given:
        return
    from ray import tune

    for exp in experiment_file.experiments:
        if tune.Tuner.can_restore(exp.path):
            raise PrivacyConfigError(
                f"{', '.join(given)} cannot change experiment {exp.name!r} on --resume: "
                f"Tune restores it from {exp.path} with its saved stop criteria, config and "
                "num_samples; resume without them, or start a new experiment (another "
                "--storage-path or name)"
            )


def _experiment_file(args: argparse.Namespace) -> str:
    target = list(args.target)
    if target and (len(target) != 2 or target[0] != "file"):
        raise PrivacyConfigError(
            f"unexpected arguments {' '.join(target)!r}; use `rllib train -f FILE` or "
            "`rllib train file FILE`"
        )
    from_target = target[1] if target else None
    if from_target and args.config_file and from_target != args.config_file:
        raise PrivacyConfigError("two different experiment files given (-f and `file`)")
    path = from_target or args.config_file
    if not path:
        raise PrivacyConfigError("no experiment file given; use `rllib train -f FILE`")
    return path


def _json_option(text: str | None, option: str) -> dict[str, Any] | None:
    from rllib_privacy import experiments as exps

    return None if text is None else exps.parse_json_mapping(text, option)


def _scheduler_spec(name: str | None, config_json: str | None) -> _SchedulerSpec | None:
    """Check the scheduler name and its keyword arguments before Ray starts."""
    import inspect

    from ray._common.utils import get_function_args
    from ray.tune.schedulers import SCHEDULER_IMPORT

    from rllib_privacy import cli_preflight
    from rllib_privacy import experiments as exps

    kwargs = _json_option(config_json, "--scheduler-config") or {}
    if name is None:
        if kwargs:
            raise PrivacyConfigError("--scheduler-config needs --scheduler")
        return None
    key = SCHEDULER_ALIASES.get(name.lower(), name.lower())
    names = sorted(set(SCHEDULER_IMPORT) | set(SCHEDULER_ALIASES))
    if key not in SCHEDULER_IMPORT:
        raise PrivacyConfigError(
            f"--scheduler: unknown scheduler {name!r}{exps.did_you_mean(name, names)}; "
            f"known: {', '.join(names)}"
        )
    scheduler_cls = SCHEDULER_IMPORT[key]
    if inspect.isfunction(scheduler_cls):
        scheduler_cls = scheduler_cls()  # A lazy importer (PB2).
    allowed = get_function_args(scheduler_cls)
    for arg in kwargs:
        if arg not in allowed:
            raise PrivacyConfigError(
                f"--scheduler-config: {scheduler_cls.__name__} has no argument {arg!r}"
                f"{exps.did_you_mean(arg, allowed)}; arguments: {', '.join(allowed)}"
            )
    missing = [a for a in ("metric", "mode") if a in allowed and a not in kwargs]
    if missing:
        raise PrivacyConfigError(
            f"--scheduler-config: {scheduler_cls.__name__} needs {' and '.join(missing)}, "
            'e.g. {"metric": "env_runners/episode_return_mean", "mode": "max"}'
        )
    # Before Tune's own constructor check, whose message names no allowed value.
    cli_preflight.check_scheduler_metric({"mode": kwargs.get("mode")}, [])
    metric = kwargs.get("metric")
    if isinstance(metric, str) and exps.translate_metric_key(metric) != metric:
        kwargs["metric"] = exps.translate_metric_key(metric)
        print(
            f"notice: --scheduler-config: metric {metric!r} is an old API stack key; "
            f"using {kwargs['metric']!r}",
            file=sys.stderr,
        )
    spec = _SchedulerSpec(key, kwargs)
    try:
        spec.create()
    except (ValueError, TypeError, AssertionError) as e:
        raise PrivacyConfigError(f"--scheduler-config: {e}") from None
    return spec


def _check_ray_arguments(args: argparse.Namespace) -> None:
    if args.ray_address and (args.ray_num_cpus is not None or args.ray_num_gpus is not None):
        raise PrivacyConfigError(
            "--ray-num-cpus/--ray-num-gpus size a new local Ray; they cannot be used "
            "with --ray-address"
        )
    for option, value in (
        ("--ray-num-cpus", args.ray_num_cpus),
        ("--ray-num-gpus", args.ray_num_gpus),
    ):
        if value is not None and value < 0:
            raise PrivacyConfigError(f"{option} must be >= 0, got {value}")


def _expected_gpus(args: argparse.Namespace) -> bool | None:
    """Whether the cluster will have GPUs, as far as it is known before Ray starts."""
    if args.ray_num_gpus is not None:
        return args.ray_num_gpus > 0
    if args.ray_address:
        return None
    try:
        import torch

        return torch.cuda.device_count() > 0  # What a local ray.init would detect.
    except Exception:  # A broken CUDA setup means: no GPUs.
        return False


def _print_dry_run(
    experiment_file: exps.ExperimentFile, expected_gpus: bool | None, address: str | None
) -> None:
    import yaml

    has_gpus = bool(expected_gpus)
    specs = {exp.name: exp.to_spec(has_gpus) for exp in experiment_file.experiments}
    print(f"# {experiment_file.path}: validated, normalized experiments (nothing was run)")
    for exp in experiment_file.experiments:
        print(
            f"# {exp.name!r}: {_gpu_config_note(exp, expected_gpus, address)}; "
            f"{exp.num_variants} variant(s) x {exp.num_samples} sample(s)"
        )
    print(yaml.safe_dump(specs, sort_keys=False, default_flow_style=False), end="")


def _gpu_config_note(exp: exps.Experiment, expected_gpus: bool | None, address: str | None) -> str:
    if exp.gpu_param_space is None:
        return "no gpu_config"
    if expected_gpus is None:
        return f"gpu_config not shown: merged only if the cluster at {address} has GPUs"
    return "gpu_config merged" if expected_gpus else "gpu_config not merged (no GPUs)"


# --------------------------------------------------------------------------------------
# Running.
# --------------------------------------------------------------------------------------


def _run(
    experiment_file: exps.ExperimentFile,
    args: argparse.Namespace,
    scheduler: _SchedulerSpec | None,
) -> int:
    import ray

    from rllib_privacy import experiments as exps

    exps.register_class_path_envs(experiment_file.experiments)
    try:
        ray.init(
            address=args.ray_address,
            num_cpus=args.ray_num_cpus,
            num_gpus=args.ray_num_gpus,
            include_dashboard=False,
            log_to_driver=args.verbose >= 1,
        )
    except (ConnectionError, RuntimeError, ValueError) as e:
        print(f"error: cannot start or join Ray: {e}", file=sys.stderr)
        return EXIT_TRIAL_ERROR
    try:
        has_gpus = ray.cluster_resources().get("GPU", 0) > 0
        if args.ray_address is None:
            # A local cluster never grows: a trial asking for more than it has would wait
            # in PENDING forever.
            for exp in experiment_file.experiments:
                problem = _unschedulable(exp, has_gpus, ray.cluster_resources())
                if problem:
                    print(f"error: {experiment_file.path}: {problem}", file=sys.stderr)
                    return EXIT_USAGE
        outcomes = []
        for exp in experiment_file.experiments:
            outcomes.append(_run_experiment(exp, has_gpus, args, scheduler))
            if outcomes[-1].interrupted:
                break
    finally:
        ray.shutdown()
    return _report(outcomes, experiment_file, args)


def _unschedulable(exp: exps.Experiment, has_gpus: bool, cluster: dict[str, float]) -> str:
    """Why a trial of ``exp`` can never start on ``cluster`` ("" if every one can)."""
    import copy
    import itertools

    from ray.tune.registry import get_trainable_cls
    from ray.tune.search.variant_generator import generate_variants

    from rllib_privacy import experiments as exps

    algo_cls = get_trainable_cls(exp.run)
    variants = generate_variants(copy.deepcopy(exp.config_for(has_gpus)))
    for _, variant in itertools.islice(variants, exps.MAX_VALIDATED_VARIANTS):
        needed = algo_cls.default_resource_request(variant).required_resources
        for resource, option in (("CPU", "--ray-num-cpus"), ("GPU", "--ray-num-gpus")):
            if needed.get(resource, 0) > cluster.get(resource, 0) + 1e-9:
                return (
                    f"experiment {exp.name!r}: one trial needs {needed[resource]:g} "
                    f"{resource}s (the algorithm, its EnvRunners and Learners), but this Ray "
                    f"cluster has {cluster.get(resource, 0):g}; lower num_env_runners / "
                    f"num_learners / num_gpus_per_learner, or raise {option}"
                )
    return ""


def _run_experiment(
    exp: exps.Experiment,
    has_gpus: bool,
    args: argparse.Namespace,
    scheduler: _SchedulerSpec | None,
) -> _Outcome:
    from ray import tune

    from rllib_privacy.utils.progress import progress_callback

    # With --resume, an experiment with nothing saved was reported before Ray started.
    if args.resume and tune.Tuner.can_restore(exp.path):
        logger.info("resuming experiment %r from %s", exp.name, exp.path)
        tuner = tune.Tuner.restore(
            exp.path, trainable=exp.run, resume_unfinished=True, resume_errored=True
        )
    else:
        tuner = tune.Tuner(
            exp.run,
            param_space=exp.config_for(has_gpus),
            tune_config=tune.TuneConfig(
                num_samples=exp.num_samples,
                scheduler=scheduler.create() if scheduler else None,
            ),
            run_config=tune.RunConfig(
                name=exp.name,
                storage_path=exp.storage_path,
                stop=exp.stop,
                checkpoint_config=tune.CheckpointConfig(**exp.checkpoint_config),
                verbose=min(1 + args.verbose, 3),
                callbacks=[progress_callback()],
            ),
        )
    try:
        grid = tuner.fit()
    except KeyboardInterrupt:  # A second Ctrl-C skips Tune's graceful shutdown.
        return _Outcome(exp, interrupted=True)
    return _Outcome(exp, grid, interrupted=_trial_counts(grid)[2] > 0)


def _trial_counts(grid: Any) -> tuple[int, int, int]:
    """Count (finished, errored, unfinished) trials of a ResultGrid.

    Tune marks the trials it stops on Ctrl-C as TERMINATED in the returned grid (the
    saved experiment state still says RUNNING, so that they resume); only a trial that
    met its stop criteria has ``done`` set in its last result.
    """
    errored = sum(1 for result in grid if result.error is not None)
    finished = sum(1 for r in grid if r.error is None and (r.metrics or {}).get("done"))
    return finished, errored, len(grid) - finished - errored


def _report(
    outcomes: list[_Outcome], experiment_file: exps.ExperimentFile, args: argparse.Namespace
) -> int:
    errored = False
    for outcome in outcomes:
        errored |= _print_summary(outcome)
    privacy = [line for outcome in outcomes if (line := _privacy_line(outcome))]
    if privacy:
        # Last, so that the privacy spent is the run's last word (and what `tail -1` shows).
        print("\n" + "\n".join(privacy))
    if outcomes and outcomes[-1].interrupted:
        command = ["rllib", "train", "-f", experiment_file.path, "--resume"]
        if args.storage_path:
            command += ["--storage-path", args.storage_path]
        print(
            "\nInterrupted; Tune saved the experiment state. Resume with:\n  "
            + shlex.join(command)
            + "\n(trials continue from their latest checkpoint; "
            "checkpoint_config.checkpoint_frequency sets how often one is written)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return EXIT_TRIAL_ERROR if errored else EXIT_OK


def _print_summary(outcome: _Outcome) -> bool:
    """Print one experiment's summary; return whether any of its trials errored."""
    exp, grid = outcome.experiment, outcome.grid
    print(f"\nExperiment {exp.name!r}: {exp.path}")
    if grid is None:
        print("  interrupted before Tune returned its results")
        return False
    finished, errored, unfinished = _trial_counts(grid)
    print(f"  trials: {finished} finished, {errored} errored, {unfinished} unfinished")
    for result in grid:
        if result.error is not None:
            print(f"  errored: {result.path}: {_last_line(result.error)} (see error.txt there)")
    best = _best_result(grid)
    if best is not None:
        values = _headline_values(best.metrics)
        shown = ", ".join(f"{k}={_format_number(v)}" for k, v in values.items())
        print(f"  best trial: {os.path.basename(best.path)}" + (f": {shown}" if shown else ""))
        if best.checkpoint is not None:
            print(f"  checkpoint: {best.checkpoint.path}")
    print(f"  tensorboard --logdir {shlex.quote(exp.path)}")
    return errored > 0


def _privacy_line(outcome: _Outcome) -> str | None:
    """``privacy: '<exp>' spent ε = … at δ = …``, the largest over its trials, or None.

    The largest, not the best trial's: a sweep's privacy cost is that of its most
    expensive trial (each trial's spend is its own ledger's).
    """
    from ray.tune.utils import flatten_dict

    spent = []
    for result in outcome.grid or []:
        flat = flatten_dict(result.metrics or {}, delimiter="/")
        epsilon = flat.get(metric_keys.PRIVACY_EPSILON_SPENT)
        if isinstance(epsilon, int | float) and not isinstance(epsilon, bool):
            spent.append((float(epsilon), flat.get(metric_keys.PRIVACY_DELTA_SPENT)))
    if not spent:
        return None
    epsilon, delta = max(spent, key=lambda pair: pair[0])
    at_delta = f" at δ = {_format_number(float(delta))}" if isinstance(delta, int | float) else ""
    trials = f" (largest of {len(spent)} trials)" if len(spent) > 1 else ""
    return (
        f"privacy: {outcome.experiment.name!r} spent ε = {_format_number(epsilon)}{at_delta}"
        f"{trials}"
    )


def _best_result(grid: Any) -> Any:
    """Pick the result with the highest BEST_TRIAL_METRIC, else the first with metrics."""
    from ray.tune.utils import flatten_dict

    with_metrics = [r for r in grid if r.metrics and r.error is None]
    scored = [
        (flatten_dict(r.metrics, delimiter="/").get(BEST_TRIAL_METRIC), r) for r in with_metrics
    ]
    scored = [(v, r) for v, r in scored if isinstance(v, int | float) and v == v]
    if scored:
        return max(scored, key=lambda pair: pair[0])[1]
    return with_metrics[0] if with_metrics else None


def _headline_values(result_metrics: dict[str, Any]) -> dict[str, Any]:
    from ray.tune.utils import flatten_dict

    flat = flatten_dict(result_metrics, delimiter="/")
    values = {}
    for key in HEADLINE_METRICS:
        matches = [k for k in flat if k == key or k.endswith("/" + key)]
        if matches and isinstance(flat[min(matches, key=len)], int | float):
            values[key] = flat[min(matches, key=len)]
    return values


def _last_line(error: BaseException) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    text = lines[-1].strip() if lines else type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _format_number(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logger.setLevel(level)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> Any:
    """Parse arguments, or return an exit code (--help, errors, no subcommand given).

    argparse's own exit is turned into its exit code instead of leaving the process.
    """
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return args


# --------------------------------------------------------------------------------------
# `rllib-privacy`
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Tool:
    """A subcommand of ``rllib-privacy``.

    Attributes:
        name: The subcommand name.
        help: One line for ``rllib-privacy --help``.
        add_arguments: Adds the subcommand's arguments to its parser.
        run: Runs the subcommand with the parsed arguments; returns the exit code. May
            raise PrivacyConfigError for bad input (printed as ``error: ...``, exit 2).

    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--all",
        action="store_true",
        help="also list the Atari RAM ids this package adds, RLlib's own algorithms and "
        "other Tune envs (after this package's own)",
    )


def _list_run(args: argparse.Namespace) -> int:
    from ray.tune.registry import get_trainable_cls

    from rllib_privacy import experiments as exps
    from rllib_privacy import register

    register()
    with exps.quiet_rllib():
        algorithms = exps.registered_algorithms()
        ours = [name for name in algorithms if _is_ours(get_trainable_cls(name))]
        descriptions = {name: _first_line(get_trainable_cls(name)) for name in ours}
    others = [name for name in algorithms if name not in ours]
    own_envs, atari_envs, other_envs = _package_envs()
    width = max(map(len, ours), default=0)
    print("algorithms of rllib_privacy (`run:` in experiment files):")
    for name in ours:
        print(f"  {name.ljust(width)}  {descriptions[name]}".rstrip())
    print("envs of rllib_privacy (`env:` in experiment files):")
    for name in own_envs:
        print(f"  {name}")
    if args.all:
        print(f"Atari RAM envs added by rllib_privacy ({len(atari_envs)}):")
        print("".join(f"  {name}\n" for name in atari_envs) or "  (none: ale-py missing)\n", end="")
        print(f"RLlib's own algorithms ({len(others)}):")
        print("".join(f"  {name}\n" for name in others), end="")
        print(f"other Tune envs ({len(other_envs)}):")
        print("".join(f"  {name}\n" for name in other_envs) or "  (none)\n", end="")
        return EXIT_OK
    hidden = [f"{len(atari_envs)} Atari RAM envs (ALE/<Game>-ram-v5)"] if atari_envs else []
    hidden.append(f"{len(others)} RLlib algorithms")
    if other_envs:
        hidden.append(f"{len(other_envs)} other Tune envs")
    print(f"not shown: {', '.join(hidden)}; `rllib-privacy list --all` lists them")
    return EXIT_OK


def _first_line(obj: Any) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    line = doc.splitlines()[0] if doc else ""
    return line.replace(" (see module docstring)", "").rstrip(".")


#: Largest --max-order of pate-epsilon (as PATEPPO's pate_max_order).
_MAX_MOMENT_ORDER = 1024


def _pate_epsilon_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--votes",
        metavar="FILE.npy",
        help="teacher vote histograms, shape (queries, classes) (numpy .npy); without it, "
        "--queries gives the data-independent epsilon only",
    )
    parser.add_argument("--gamma", type=float, required=True, help="inverse Laplace scale γ")
    parser.add_argument("--delta", type=float, required=True, help="δ of the (ε, δ) bound")
    parser.add_argument(
        "--queries", type=int, metavar="N", help="number of queries (with --votes: the first N)"
    )
    parser.add_argument("--max-order", type=int, default=8, help="largest moment order (8)")


def _pate_epsilon_run(args: argparse.Namespace) -> int:
    import numpy as np

    from rllib_privacy.accounting import advanced_composition_epsilon, pate_epsilon

    if args.votes is None and args.queries is None:
        raise PrivacyConfigError("give --votes FILE.npy or --queries N (or both)")
    if args.queries is not None and args.queries < 0:
        raise PrivacyConfigError(f"--queries must be >= 0, got {args.queries}")
    # One moment per order is kept per query: a huge order would exhaust memory.
    if args.max_order > _MAX_MOMENT_ORDER:
        raise PrivacyConfigError(
            f"--max-order must be at most {_MAX_MOMENT_ORDER}, got {args.max_order}"
        )
    votes = None
    if args.votes is not None:
        try:
            votes = np.load(args.votes, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise PrivacyConfigError(
                f"--votes: cannot read {args.votes!r} as a .npy file: {e}"
            ) from None
        if votes.ndim != 2:
            raise PrivacyConfigError(
                f"--votes: {args.votes!r} must hold a 2-D array (queries x classes), "
                f"got shape {votes.shape}"
            )
        votes = votes[: args.queries] if args.queries is not None else votes
    try:
        source = args.queries if votes is None else votes
        kwargs = {"gamma": args.gamma, "delta": args.delta, "max_order": args.max_order}
        independent = pate_epsilon(source, data_dependent=False, **kwargs)
        dependent = pate_epsilon(votes, **kwargs) if votes is not None else None
        composition = advanced_composition_epsilon(
            independent.num_queries, gamma=args.gamma, delta=args.delta
        )
    except ArithmeticError as e:  # e.g. 2γ²l(l+1) overflowing for a huge --gamma
        raise PrivacyConfigError(
            f"--gamma {args.gamma:g} / --max-order {args.max_order}: the moments overflow ({e})"
        ) from None
    except ValueError as e:
        # The accountant names its arguments; name the command-line options instead.
        message = str(e).replace("votes_or_count", "--votes").replace("max_order", "--max-order")
        for name in ("gamma", "delta"):
            message = message.replace(f"{name} must", f"--{name} must")
        raise PrivacyConfigError(message) from None
    print(
        f"queries: {independent.num_queries}  gamma: {args.gamma:g}  delta: {args.delta:g}  "
        f"max order: {args.max_order}"
    )
    if dependent is not None:
        print(f"data-dependent epsilon:   {dependent.epsilon:.4f} (order {dependent.order})")
    else:
        print("data-dependent epsilon:   n/a (needs --votes)")
    print(f"data-independent epsilon: {independent.epsilon:.4f} (order {independent.order})")
    print(f"advanced composition:     {composition:.4f} (the paper's comparison bound)")
    return EXIT_OK


def _package_envs() -> tuple[list[str], list[str], list[str]]:
    """(this package's own env ids, the Atari RAM ids it adds, other Tune envs)."""
    import gymnasium as gym
    from ray.tune.registry import ENV_CREATOR, _global_registry

    from rllib_privacy import experiments as exps

    tune_envs = exps.registered_envs()
    ours = {name for name in tune_envs if _is_ours(_global_registry.get(ENV_CREATOR, name))}
    ours |= {
        env_id
        for env_id, spec in gym.registry.items()
        if str(getattr(spec.entry_point, "__module__", spec.entry_point)).startswith(
            "rllib_privacy"
        )
    }
    atari = {name for name in ours if _is_ale_ram(name)}
    own = sorted(ours - atari)
    return own, sorted(atari), sorted(set(tune_envs) - ours)


def _is_ale_ram(env_id: str) -> bool:
    import gymnasium as gym

    spec = gym.registry.get(env_id)
    entry = str(getattr(spec, "entry_point", ""))
    return env_id.startswith("ALE/") and entry.startswith("rllib_privacy.envs.atari_ram")


def _is_ours(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "")).startswith("rllib_privacy")


def _plot_arguments(parser: argparse.ArgumentParser) -> None:
    from rllib_privacy import plotting

    parser.add_argument(
        "results_dirs",
        nargs="+",
        metavar="RESULTS_DIR",
        help="Tune results: trial folders, experiment folders, or folders of experiment folders",
    )
    parser.add_argument(
        "--group-by",
        default=plotting.SAME_CONFIG,
        metavar="KEY",
        help="config key with one curve per value; nested keys with '/', e.g. "
        "env_config/gravity (default: one curve per config, trials that differ only in "
        "their seed pooled)",
    )
    parser.add_argument(
        "--metric",
        default=plotting.DEFAULT_METRIC,
        metavar="M",
        help=f"result key on the y-axis (default: {plotting.DEFAULT_METRIC})",
    )
    parser.add_argument(
        "--x",
        metavar="X",
        help="result key on the x-axis (default: env steps: "
        + ", else ".join(plotting.DEFAULT_X_KEYS)
        + ")",
    )
    parser.add_argument(
        "--band",
        type=float,
        default=plotting.DEFAULT_BAND,
        metavar="P",
        help="the band spans the (100-P)th to the Pth percentile over seeds (default: 85)",
    )
    parser.add_argument(
        "--output",
        "-o",
        default="learning_curves.png",
        metavar="PNG",
        help="image file to write (default: learning_curves.png)",
    )
    parser.add_argument("--title", metavar="T", help="plot title")
    parser.add_argument(
        "--points",
        type=int,
        default=plotting.DEFAULT_POINTS,
        metavar="N",
        help=f"most x grid points per curve (default: {plotting.DEFAULT_POINTS})",
    )
    parser.add_argument(
        "--min-seeds",
        type=int,
        default=1,
        metavar="K",
        help="leave out x values fewer than K trials of a group reached (default: 1)",
    )


def _plot_run(args: argparse.Namespace) -> int:
    import warnings

    from rllib_privacy import plotting

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", plotting.PlotWarning)
        trials = plotting.load_trials(args.results_dirs)
        curves = plotting.aggregate_curves(
            trials,
            group_by=args.group_by,
            metric=args.metric,
            x=args.x,
            band=args.band,
            points=args.points,
            min_seeds=args.min_seeds,
        )
        path = plotting.plot_learning_curves(curves, args.output, title=args.title)
    for warning in caught:
        print(f"notice: {warning.message}", file=sys.stderr)
    print(plotting.format_table(curves))
    print(f"wrote {path}")
    return EXIT_OK


def _ilm_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    from rllib_privacy import ilm_evaluate

    ilm_evaluate.add_arguments(parser)


def _ilm_evaluate_run(args: argparse.Namespace) -> int:
    from rllib_privacy import ilm_evaluate

    return ilm_evaluate.run(args)


#: The subcommands of ``rllib-privacy``; add a Tool here to add one.
TOOLS: tuple[Tool, ...] = (
    Tool(
        "pate-epsilon",
        "PATE's data-dependent and data-independent epsilon of noisy-max queries",
        _pate_epsilon_arguments,
        _pate_epsilon_run,
    ),
    Tool("list", "list this package's registered algorithms and envs", _list_arguments, _list_run),
    Tool(
        "plot",
        "draw learning curves (median and percentile band over seeds) from Tune results",
        _plot_arguments,
        _plot_run,
    ),
    Tool(
        "ilm-evaluate",
        "roll out a trained instance-wise Laplace policy greedily, check every instance's "
        "pDP and compare its KL with uniform Laplace",
        _ilm_evaluate_arguments,
        _ilm_evaluate_run,
    ),
)


def build_tools_parser(tools: Sequence[Tool] = TOOLS) -> argparse.ArgumentParser:
    """Build the argument parser of the ``rllib-privacy`` command from ``tools``."""
    parser = argparse.ArgumentParser(
        prog="rllib-privacy", description="Tools of the rllib_privacy package."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for tool in tools:
        sub = commands.add_parser(tool.name, help=tool.help, description=tool.help)
        tool.add_arguments(sub)
        sub.set_defaults(tool=tool)
    return parser


def tools_main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rllib-privacy`` command.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 success, 2 bad arguments, otherwise the tool's own code.

    """
    args = _parse(build_tools_parser(), argv)
    if isinstance(args, int):
        return args
    try:
        return args.tool.run(args)
    except PrivacyConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(rllib_main())
