"""The ``rllib`` command: ``rllib train -f FILE`` runs a classic experiment file.

RLlib 2.60 no longer ships a command line; this command runs classic experiment files
(see [rllib_privacy.experiments][]), always on RLlib's new API stack with torch.
Everything in the file is validated before Ray starts; problems are reported on stderr as
``error: FILE: experiment 'NAME': ...`` with exit code 2 (the exit codes are in
[rllib_privacy.cli.common][]).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rllib_privacy.cli import preflight
from rllib_privacy.cli.common import (
    EXIT_OK,
    EXIT_TRIAL_ERROR,
    EXIT_USAGE,
    find_experiment_file,
    parse_command_line,
    setup_logging,
)
from rllib_privacy.cli.estimate import print_dry_run_estimates
from rllib_privacy.cli.launch import RayJoinError, check_ray_address, run_experiments
from rllib_privacy.cli.scheduler import SchedulerSpec, json_option, scheduler_spec
from rllib_privacy.errors import PrivacyConfigError

if TYPE_CHECKING:
    from rllib_privacy import experiments as exps

# Only the standard library and this package's constant modules are imported at the top:
# `rllib --help` must answer without importing Ray, torch or gymnasium (seconds). Each
# step imports what it needs when it runs.


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
    args = parse_command_line(build_rllib_parser(), argv)
    return args if isinstance(args, int) else args.func(args)


def _train(args: argparse.Namespace) -> int:
    from rllib_privacy import experiments as exps
    from rllib_privacy import register

    setup_logging(args.verbose)
    notices: list[str] = []
    try:
        path = _experiment_file(args)
        _check_ray_arguments(args)
        # The cheap checks first, with nothing heavy imported: a typo costs well under a
        # second (Ray, RLlib and torch take seconds to import).
        parsed = exps.load_experiment_file(path)
        override_config = json_option(args.config, "--config")
        json_option(args.stop, "--stop")
        exps.precheck_experiments(parsed, path=path, override_config=override_config)
        if not args.dry_run:
            preflight.check_storage_paths(parsed, args.storage_path)
            check_ray_address(args.ray_address)  # ray.init retries a dead one for minutes
        scheduler = scheduler_spec(args.scheduler, args.scheduler_config)
        register()  # Before validation: `run:` and `env:` name our algorithms and envs.
        raw, override_config = preflight.resolve_teacher_paths(
            parsed, storage_override=args.storage_path, override_config=override_config
        )
        overrides = exps.Overrides(
            stop=json_option(args.stop, "--stop"),
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
        notices += _check_before_ray(args, experiment_file, scheduler)
    except PrivacyConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except RayJoinError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_TRIAL_ERROR
    for notice in dict.fromkeys([*experiment_file.notices, *notices]):
        print(f"notice: {notice}", file=sys.stderr)
    if args.dry_run:
        joined = args.ray_address if _joins_a_cluster(args) else None
        _print_dry_run(experiment_file, has_gpus, joined)
        try:
            print_dry_run_estimates(
                experiment_file,
                ray_num_cpus=args.ray_num_cpus,
                ray_address=joined,
                has_gpus=bool(has_gpus),
            )
        except PrivacyConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    return run_experiments(experiment_file, args, scheduler)


def _check_before_ray(
    args: argparse.Namespace, experiment_file: exps.ExperimentFile, scheduler: SchedulerSpec | None
) -> list[str]:
    """The checks of [rllib_privacy.cli.preflight][] that need validated experiments."""
    from rllib_privacy import experiments as exps

    notices = []
    _check_resume_overrides(args, experiment_file)
    if scheduler is not None:
        with exps.quiet_rllib():
            classes = [exps.resolve_algorithm(exp.run) for exp in experiment_file.experiments]
        try:
            notices += preflight.check_scheduler_metric(scheduler.kwargs, classes)
        except PrivacyConfigError as e:
            raise PrivacyConfigError(f"{experiment_file.path}: {e}") from None
    if args.dry_run:
        return notices  # Teachers may be trained later; nothing is resumed.
    try:
        preflight.check_pate_teachers(experiment_file.experiments)
    except PrivacyConfigError as e:
        raise PrivacyConfigError(f"{experiment_file.path}: {e}") from None
    if args.resume:
        from ray import tune

        notices += preflight.check_resume(experiment_file.experiments, tune.Tuner.can_restore)
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
    return find_experiment_file(path)


def _joins_a_cluster(args: argparse.Namespace) -> bool:
    """Whether ``--ray-address`` names a cluster to join (``local`` starts a new instance)."""
    return bool(args.ray_address) and args.ray_address != "local"


def _check_ray_arguments(args: argparse.Namespace) -> None:
    # `--ray-address local` starts a new instance, which these size (the error for a trial
    # too large for it says to raise --ray-num-cpus).
    if _joins_a_cluster(args) and (args.ray_num_cpus is not None or args.ray_num_gpus is not None):
        raise PrivacyConfigError(
            "--ray-num-cpus/--ray-num-gpus size a new local Ray; they cannot be used "
            "with --ray-address other than local"
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
    if _joins_a_cluster(args):
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
