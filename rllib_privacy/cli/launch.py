"""Running the validated experiments of ``rllib train``: Ray, then one Tuner each."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from rllib_privacy.cli.common import EXIT_TRIAL_ERROR, EXIT_USAGE, logger
from rllib_privacy.cli.scheduler import SchedulerSpec
from rllib_privacy.cli.summary import Outcome, last_line, report, trial_counts

if TYPE_CHECKING:
    from rllib_privacy import experiments as exps


def run_experiments(
    experiment_file: exps.ExperimentFile,
    args: argparse.Namespace,
    scheduler: SchedulerSpec | None,
) -> int:
    """Start or join Ray, run each experiment with Tune and report the outcomes.

    Args:
        experiment_file: The validated experiments.
        args: The parsed ``rllib train`` arguments.
        scheduler: The checked ``--scheduler``, or None.

    Returns:
        The exit code (see [rllib_privacy.cli.common][]).
    """
    import ray

    from rllib_privacy import experiments as exps

    exps.register_class_path_envs(experiment_file.experiments)
    address, source = ray_address_to_join(args.ray_address)
    try:
        ray.init(
            address=args.ray_address,
            num_cpus=args.ray_num_cpus,
            num_gpus=args.ray_num_gpus,
            include_dashboard=False,
            log_to_driver=args.verbose >= 1,
        )
    except Exception as e:  # noqa: BLE001 - Ray raises bare Exceptions (a node start timeout)
        problem = " ".join(str(e).split())[:400] or type(e).__name__  # one line
        what = join_failure(address, source, problem) if address else f"cannot start Ray: {problem}"
        print(f"error: {what}", file=sys.stderr)
        return EXIT_TRIAL_ERROR
    try:
        has_gpus = ray.cluster_resources().get("GPU", 0) > 0
        # Whatever the address: a trial asking for more than the cluster has would wait in
        # PENDING forever on a local instance (joined with --ray-address local, started by
        # `ray start`, or by us), with only Tune's autoscaler warning to tell.
        for exp in experiment_file.experiments:
            problem = unschedulable(exp, has_gpus, ray.cluster_resources())
            if problem:
                print(f"error: {experiment_file.path}: {problem}", file=sys.stderr)
                return EXIT_USAGE
        from rllib_privacy.cli.estimate import ResourceRequestError, estimate_line
        from rllib_privacy.cli.tune_output import tune_output_configured

        cpus = ray.cluster_resources().get("CPU", 1.0)
        outcomes = []
        # One TensorBoard command (ours); an interrupted sweep's pending trials are counted
        # in the summary, not listed as FileNotFoundErrors.
        with tune_output_configured():
            for exp in experiment_file.experiments:
                try:
                    print(estimate_line(exp, cpus=cpus, has_gpus=has_gpus), flush=True)
                except ResourceRequestError as e:
                    where = f"{experiment_file.path}: experiment {exp.name!r}"
                    print(f"error: {where}: {e}", file=sys.stderr)
                    return EXIT_USAGE
                outcomes.append(run_experiment(exp, has_gpus, args, scheduler))
                if outcomes[-1].interrupted:
                    break
    finally:
        ray.shutdown()
    return report(outcomes, experiment_file, args)


def ray_address_to_join(address: str | None) -> tuple[str | None, str]:
    """The cluster ``ray.init(address=address)`` joins, and where that address comes from.

    Ray's own order (``ray._private.services.get_ray_address_from_environment``): an
    explicit address other than ``auto``; else ``RAY_ADDRESS``; else the address file
    ``ray start`` writes (``/tmp/ray/ray_current_cluster``, under ``RAY_TMPDIR`` if set);
    else a new local instance. ``local`` always means a new local instance.

    Args:
        address: ``--ray-address``, or None.

    Returns:
        (The address, or None for a new local instance; its source, for messages.)
    """
    if address is not None and address != "auto":
        return (None, "--ray-address local") if address == "local" else (address, "--ray-address")
    from_env = os.environ.get("RAY_ADDRESS")
    if from_env:
        source = "the RAY_ADDRESS environment variable"
        return (None, source) if from_env == "local" else (from_env, source)
    address_file = _ray_address_file()
    try:
        with open(address_file, encoding="utf-8") as f:
            recorded = f.read().strip()
    except OSError:
        recorded = ""
    if recorded:
        return recorded, f"{address_file}, written by `ray start`"
    if address == "auto":
        return "auto", "--ray-address auto"
    return None, "no cluster registered by `ray start`"


def _ray_address_file() -> str:
    """Where ``ray start`` records the cluster to join.

    Ray's ``get_ray_address_file`` (``ray._common.utils``), written out so that it is known
    before Ray is imported: ``$RAY_TMPDIR``, else (on Linux) ``$TMPDIR``, else ``/tmp``,
    then ``ray/ray_current_cluster``.
    """
    if "RAY_TMPDIR" in os.environ:
        temp = os.environ["RAY_TMPDIR"]
    elif sys.platform.startswith("linux") and "TMPDIR" in os.environ:
        temp = os.environ["TMPDIR"]
    elif sys.platform.startswith(("linux", "darwin")):
        temp = "/tmp"
    else:
        temp = tempfile.gettempdir()
    return os.path.join(temp, "ray", "ray_current_cluster")


def check_ray_address(address: str | None) -> None:
    """Raise when the cluster ``rllib train`` would join does not answer (before Ray).

    Args:
        address: ``--ray-address``, or None.

    Raises:
        RayJoinError: Naming the address, where it came from and how to run locally.
    """
    joined, source = ray_address_to_join(address)
    problem = unreachable(joined)
    if problem:
        raise RayJoinError(join_failure(joined, source, problem))


class RayJoinError(RuntimeError):
    """The Ray cluster to join does not answer (exit code 1, like any failed Ray start)."""


def unreachable(address: str | None, timeout_s: float = 5.0) -> str:
    """Why nothing answers at ``address``'s host and port ("" if something does).

    ``ray.init`` retries a dead address for minutes; a TCP connect says it in seconds.
    ``auto`` and addresses without a port are left to ``ray.init``.
    """
    if not address or address == "auto":
        return ""
    host_port = address.split("://", 1)[-1].rsplit("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    if not host or not port.isdigit():
        return ""
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return ""
    except OSError as e:
        return f"nothing answers at {host_port} ({e.strerror or type(e).__name__})"


def join_failure(address: str | None, source: str, problem: str) -> str:
    """The one-line error for a cluster that cannot be joined."""
    return (
        f"cannot join the Ray cluster at {address} (from {source}): {problem}; start that "
        "cluster (`ray start --head`), or run on a new local Ray instance with "
        "--ray-address local"
    )


def unschedulable(exp: exps.Experiment, has_gpus: bool, cluster: dict[str, float]) -> str:
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


#: Files every complete RLlib Algorithm checkpoint holds (written by ``save_to_path``).
CHECKPOINT_FILES = ("rllib_checkpoint.json", "class_and_ctor_args.pkl", "algorithm_state.pkl")


def newest_complete_checkpoint(checkpoint: str) -> str:
    """The newest complete ``checkpoint_NNNNNN`` folder beside ``checkpoint`` (or itself).

    ``--resume`` promises the latest checkpoint, but Tune restores the one its experiment
    state names, and that state is saved on a timer: a run killed after writing
    ``checkpoint_000003`` and ``000004`` but before the next state save resumed from
    ``000002`` and repeated two checkpoints' iterations. Complete: every file of
    ``CHECKPOINT_FILES`` is there and not empty (a kill while Tune copied it leaves some
    out).
    """
    parent, name = os.path.split(os.path.normpath(checkpoint))
    if not name.startswith("checkpoint_") or not os.path.isdir(parent):
        return checkpoint
    # Tune's names are zero-padded (checkpoint_000004): their order is the numbers'.
    candidates = sorted(
        (entry for entry in os.listdir(parent) if entry.startswith("checkpoint_")), reverse=True
    )
    for entry in candidates:
        path = os.path.join(parent, entry)
        if entry >= name and _is_complete(path):
            return path
    return checkpoint


def _is_complete(path: str) -> bool:
    return all(
        os.path.isfile(file) and os.path.getsize(file) > 0
        for file in (os.path.join(path, f) for f in CHECKPOINT_FILES)
    )


def newest_checkpoints(experiment_path: str) -> dict[str, str]:
    """{trial folder: its newest complete checkpoint's name} under a local experiment."""
    if "://" in experiment_path or not os.path.isdir(experiment_path):
        return {}
    found = {}
    for trial in sorted(os.listdir(experiment_path)):
        trial_dir = os.path.join(experiment_path, trial)
        if not os.path.isdir(trial_dir):
            continue
        names = [e for e in os.listdir(trial_dir) if e.startswith("checkpoint_")]
        if names:
            newest = newest_complete_checkpoint(os.path.join(trial_dir, min(names)))
            if _is_complete(newest):
                found[trial_dir] = os.path.basename(newest)
    return found


def restore_from_newest_checkpoint(run: str) -> None:
    """Register ``run`` again so that a restored trial loads its newest complete checkpoint.

    A subclass of the registered Algorithm whose ``restore`` swaps the checkpoint Tune
    chose for `newest_complete_checkpoint`; RLlib's ``set_state`` then restores that
    checkpoint's own training iteration, so no iteration is repeated.
    """
    from ray.tune.registry import get_trainable_cls, register_trainable

    base = get_trainable_cls(run)
    if not getattr(base, "_restores_newest_checkpoint", False):  # once per name
        register_trainable(run, newest_checkpoint_trainable(base))


def newest_checkpoint_trainable(base: Any) -> type:
    """``base`` with a ``restore`` that takes the newest complete checkpoint (same name)."""

    def restore(self: Any, checkpoint_path: Any) -> Any:
        from ray import tune

        checkpoint = getattr(checkpoint_path, "checkpoint", checkpoint_path)
        path = checkpoint if isinstance(checkpoint, str) else getattr(checkpoint, "path", None)
        if isinstance(path, str) and os.path.isdir(path):
            newest = newest_complete_checkpoint(path)
            if newest != os.path.normpath(path):
                logger.warning("restoring from %s, the newest complete checkpoint", newest)
                return base.restore(self, tune.Checkpoint.from_directory(newest))
        return base.restore(self, checkpoint_path)

    attributes = {"restore": restore, "__module__": base.__module__}
    return type(base.__name__, (base,), {**attributes, "_restores_newest_checkpoint": True})


def run_experiment(
    exp: exps.Experiment,
    has_gpus: bool,
    args: argparse.Namespace,
    scheduler: SchedulerSpec | None,
) -> Outcome:
    """Run (or with ``--resume`` restore) one experiment with a Tuner.

    Args:
        exp: The experiment.
        has_gpus: Whether the cluster has GPUs (``gpu_config`` is merged then).
        args: The parsed ``rllib train`` arguments.
        scheduler: The checked ``--scheduler``, or None.

    Returns:
        Its outcome; interrupted if Ctrl-C stopped it.
    """
    from ray import tune

    from rllib_privacy.cli.tune_output import tune_callbacks
    from rllib_privacy.utils.progress import progress_callback
    from rllib_privacy.utils.tensorboard_layout import privacy_layout_callback

    # With --resume, an experiment with nothing saved was reported before Ray started.
    if args.resume and tune.Tuner.can_restore(exp.path):
        logger.info("resuming experiment %r from %s", exp.name, exp.path)
        restore_from_newest_checkpoint(exp.run)
        for trial_dir, newest in newest_checkpoints(exp.path).items():
            print(f"notice: --resume: {os.path.basename(trial_dir)} continues from {newest}")
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
                # Our loggers: Tune's own would print a second TensorBoard command. The
                # layout opens TensorBoard's custom scalars on the privacy figures.
                callbacks=[progress_callback(), *tune_callbacks(), privacy_layout_callback()],
            ),
        )
    try:
        grid = tuner.fit()
        return Outcome(exp, grid, interrupted=trial_counts(grid)[2] > 0)
    except KeyboardInterrupt:  # A second Ctrl-C skips Tune's graceful shutdown.
        return Outcome(exp, interrupted=True)
    except Exception as e:  # noqa: BLE001 - Tune itself failed; the summary still comes
        # E.g. on a full disk Tune writes an empty error.pkl, and reading the results back
        # raises `EOFError: Ran out of input`; the trials' own errors are in error.txt.
        return Outcome(exp, failure=f"{type(e).__name__}: {last_line(e)}")
