"""How many trials an experiment runs and about how long: what ``rllib train`` says first.

``--dry-run`` and the start of a run print, per experiment, the number of trials, how many
run at once on the machine's CPUs and, where a measured rate applies, an upper bound of
the wall time: every trial running to its submission cap. The rates are measured ones,
from ``benchmarks/RESULTS.md`` (2 CPU cores, two trials at a time): LDPA3C with a fleet of
128 agents per EnvRunner (the quick start's settings, which the sweeps share). For other
algorithms and settings only the trial count is printed.
"""

from __future__ import annotations

import copy
import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rllib_privacy import experiments as exps

#: Seconds per 1,000 submissions of one LDPA3C trial with a fleet of 128 agents, two trials
#: at a time on 2 CPU cores: the PGC-A3C per-arm table of benchmarks/RESULTS.md, the
#: ``privunitg_tuned`` rows whose trials ran to the 90,000-submission cap (ε = 1: 25.3 s,
#: ε = 2: 27.7 s per trial; the slower one, rounded up).
LDPA3C_SECONDS_PER_1000_SUBMISSIONS = 0.31

#: Smallest fleet the rate above applies to (it was measured with 128 agents per runner;
#: one agent at a time is about 18 times slower per submission).
LDPA3C_MEASURED_FLEET = 128

#: Seconds from the command to the first iteration (Ray's start-up, the trial's processes):
#: the quick start's median wall time minus its training time, benchmarks/RESULTS.md.
STARTUP_SECONDS = 30


class ResourceRequestError(ValueError):
    """An experiment's config gives no resource request (a resource key of the wrong type)."""


def trial_cpus(exp: exps.Experiment, has_gpus: bool) -> float:
    """CPUs one trial of ``exp`` reserves (its algorithm's resource request), at least 1."""
    from ray.tune.registry import get_trainable_cls
    from ray.tune.search.variant_generator import generate_variants

    variant = next(iter(generate_variants(copy.deepcopy(exp.config_for(has_gpus)))))[1]
    try:
        request = get_trainable_cls(exp.run).default_resource_request(variant)
    except (TypeError, ValueError) as e:
        # RLlib computes the request from resource keys (num_env_runners, ...) that the
        # package's checks leave to RLlib: a value of the wrong type fails here first.
        raise ResourceRequestError(
            "its resource keys (num_env_runners, num_cpus_per_env_runner, num_learners, ...) "
            f"do not give a resource request: {e}"
        ) from None
    return max(1.0, float(request.required_resources.get("CPU", 1.0)))


def _first_value(value: Any) -> Any:
    """A grid-searched value's first choice, anything else as is."""
    if isinstance(value, dict) and "grid_search" in value:
        return value["grid_search"][0]
    return value


def submission_cap(exp: exps.Experiment) -> int | None:
    """Most submissions an LDPA3C trial of ``exp`` runs before a stop criterion ends it."""
    caps = []
    if isinstance(exp.stop.get("submissions"), int | float):
        caps.append(int(exp.stop["submissions"]))
    per_iteration = _first_value(exp.param_space.get("aggregator_submissions_per_iteration"))
    if isinstance(exp.stop.get("training_iteration"), int | float) and isinstance(
        per_iteration, int
    ):
        caps.append(int(exp.stop["training_iteration"]) * per_iteration)
    return min(caps) if caps else None


def estimate_line(exp: exps.Experiment, *, cpus: float, has_gpus: bool = False) -> str:
    """``experiment 'NAME': 9 trials, 2 at a time on 2 CPUs; at most about 4 min (...)``.

    Args:
        exp: The validated experiment.
        cpus: CPUs of the Ray cluster (or of this machine, before Ray starts).
        has_gpus: Whether ``gpu_config`` is merged.

    Returns:
        One line: the trial count, how many run at once and, where a measured rate
        applies, an upper bound of the wall time.
    """
    trials = exp.num_variants * exp.num_samples
    at_once = max(1, min(trials, int(cpus // trial_cpus(exp, has_gpus))))
    text = (
        f"experiment {exp.name!r}: {trials} trial{'s' if trials != 1 else ''}"
        f" ({exp.num_variants} variant(s) x {exp.num_samples} sample(s)),"
        f" {at_once} at a time on {cpus:g} CPUs"
    )
    cap = submission_cap(exp) if exp.run == "LDPA3C" else None
    fleet = _first_value(exp.param_space.get("agents_per_env_runner"))
    if cap is None or not isinstance(fleet, int) or fleet < LDPA3C_MEASURED_FLEET:
        return text + "; no measured time per trial for these settings (benchmarks/RESULTS.md)"
    per_trial = cap / 1000 * LDPA3C_SECONDS_PER_1000_SUBMISSIONS
    seconds = STARTUP_SECONDS + math.ceil(trials / at_once) * per_trial
    return (
        f"{text}; at most about {format_duration(seconds)} if every trial runs to its cap of "
        f"{cap:,} submissions ({LDPA3C_SECONDS_PER_1000_SUBMISSIONS:g} s per 1,000 "
        f"submissions per trial, measured on 2 CPU cores: benchmarks/RESULTS.md)"
    )


def format_duration(seconds: float) -> str:
    """``40 s``, ``4 min``, ``2.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{math.ceil(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def print_dry_run_estimates(
    experiment_file: exps.ExperimentFile,
    *,
    ray_num_cpus: float | None,
    ray_address: str | None,
    has_gpus: bool,
) -> None:
    """``# experiment 'NAME': 9 trials ...`` per experiment, for ``--dry-run``.

    The CPUs are those a local Ray would get (``--ray-num-cpus``, else this machine's);
    with ``--ray-address`` the cluster's are unknown before it is joined, so the estimate
    assumes this machine's and says so.
    """
    cpus = float(ray_num_cpus) if ray_num_cpus else float(os.cpu_count() or 1)
    from rllib_privacy.errors import ExperimentFileError

    for exp in experiment_file.experiments:
        try:
            line = estimate_line(exp, cpus=cpus, has_gpus=has_gpus)
        except ResourceRequestError as e:
            raise ExperimentFileError(experiment_file.path, str(e), exp.name) from None
        if ray_address:
            line += f" (CPUs of this machine; the cluster at {ray_address} may have more)"
        print(f"# {line}")
