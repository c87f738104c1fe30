"""``rllib-privacy ilm-evaluate``: roll out a trained ILM policy and check it.

Restores the RLModule of a checkpoint written by ``rllib train -f tuned_configs/ilm_dqn.yaml``
(``RLModule.from_checkpoint``; no Algorithm, no Ray cluster), assigns a scale to every
instance of the data greedily (dataset order), and reports:

- every instance's exact pDP loss
  ([rllib_privacy.accounting.pdp.instance_privacy_losses][]) under the policy's scales
  against ε, and the number of violations;
- the released assignment: the policy's scales after the repair step
  ([rllib_privacy.accounting.ilm_scales.repair_scales][], which widens scales until every
  instance is within ε) and how many instances it widened;
- KL(data ‖ output) for the policy's scales before and after the repair, for uniform
  Laplace at Δf/ε, for the best single scale of the action set that satisfies pDP for
  every instance, and for the greedy per-instance assignment over the action set
  ([rllib_privacy.accounting.ilm_scales.greedy_scales][]), with the ratios to uniform
  Laplace;
- the chosen-scale histogram,

as a table on stdout, ``ilm_evaluation.json`` and ``ilm_evaluation.png`` in the output
directory. The data is a CSV file (``--data``), else a bundled dataset (``--dataset``,
default: the diabetes ages that ``tuned_configs/ilm_dqn.yaml`` trains on). Exit codes: 0
the policy's own scales keep every instance within ε, 1 some instance is over ε under
them (the released, repaired scales never are), 2 bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rllib_privacy.errors import PrivacyConfigError

if TYPE_CHECKING:
    from rllib_privacy.envs.instance_laplace import InstanceWiseLaplaceEnv

# The env (gymnasium) and the pDP accountant (scipy) are imported where they are used, so
# that `rllib-privacy --help` builds this command's arguments without them.

#: Bundled dataset used when neither --data nor --dataset is given (as in ilm_dqn.yaml).
DEFAULT_DATASET = "diabetes"

#: The bundled datasets (name -> default column); see the env's ``BUNDLED_DATASETS``.
BUNDLED_DATASET_NAMES = ("diabetes", "linnerud")

#: Where an Algorithm checkpoint keeps the default module (new API stack layout).
MODULE_SUBDIRS = (
    Path("learner_group", "learner", "rl_module", "default_policy"),
    Path("rl_module", "default_policy"),
    Path("default_policy"),
    Path(),
)

EXIT_OK = 0
EXIT_VIOLATION = 1


@dataclasses.dataclass
class ILMEvaluation:
    """Outcome of one evaluation (all KL values in nats).

    Attributes:
        n: Number of instances.
        epsilon: Target ε.
        delta_f: The data's range Δf.
        action_scales: The action set's scales.
        scales: The scale chosen for every instance.
        losses: Every instance's exact pDP loss under ``scales``.
        released_scales: ``scales`` after the repair step (every instance within ε).
        repaired_instances: How many instances the repair widened.
        released_violations: Instances over ε under ``released_scales`` (checked again).
        kl_policy: KL divergence for the policy's scales.
        kl_released: KL divergence for the released (repaired) scales.
        kl_laplace: KL divergence for uniform Laplace at Δf/ε.
        best_single_action: Index of the best pDP-satisfying single scale, or None.
        kl_best_single: Its KL divergence (inf when no single scale satisfies pDP).
        kl_greedy: KL divergence of the greedy assignment over the action set.
        action_counts: How many instances got each action.
        pmfs: ``data``, ``policy``, ``released``, ``laplace``, ``best_single`` and
            ``greedy`` output PMFs on the bins.
        edges: The shared bin edges.

    """

    n: int
    epsilon: float
    delta_f: float
    action_scales: np.ndarray
    scales: np.ndarray
    losses: np.ndarray
    released_scales: np.ndarray
    repaired_instances: int
    released_violations: int
    kl_policy: float
    kl_released: float
    kl_laplace: float
    best_single_action: int | None
    kl_best_single: float
    kl_greedy: float
    action_counts: np.ndarray
    pmfs: dict[str, np.ndarray]
    edges: np.ndarray

    @property
    def violations(self) -> int:
        """Instances whose loss exceeds ε."""
        return int(np.count_nonzero(self.losses > self.epsilon))

    def summary(self) -> dict[str, Any]:
        """JSON-safe summary (no per-instance arrays except the counts)."""
        finite = float(self.losses.max()) if np.isfinite(self.losses.max()) else "inf"
        return {
            "n": self.n,
            "epsilon": self.epsilon,
            "delta_f": self.delta_f,
            "pdp_violations": self.violations,
            "pdp_pass_rate": 1.0 - self.violations / self.n,
            "max_loss": finite,
            "kl_policy": self.kl_policy,
            "kl_laplace": self.kl_laplace,
            "kl_ratio_policy": self.kl_policy / self.kl_laplace,
            "repaired_instances": self.repaired_instances,
            "pdp_violations_released": self.released_violations,
            "kl_released": self.kl_released,
            "kl_ratio_released": self.kl_released / self.kl_laplace,
            "kl_greedy": self.kl_greedy,
            "kl_ratio_greedy": self.kl_greedy / self.kl_laplace,
            "best_single_action": self.best_single_action,
            "best_single_scale": (
                None
                if self.best_single_action is None
                else float(self.action_scales[self.best_single_action])
            ),
            "kl_best_single": self.kl_best_single if np.isfinite(self.kl_best_single) else "inf",
            "kl_ratio_best_single": (
                self.kl_best_single / self.kl_laplace if np.isfinite(self.kl_best_single) else "inf"
            ),
            "action_scales": self.action_scales.tolist(),
            "action_counts": self.action_counts.tolist(),
        }


def find_module_dir(checkpoint: str | os.PathLike[str]) -> Path:
    """The RLModule directory inside an Algorithm (or RLModule) checkpoint.

    Raises:
        PrivacyConfigError: If ``checkpoint`` is not a directory holding an RLModule.

    """
    root = Path(checkpoint)
    if not root.is_dir():
        raise PrivacyConfigError(f"--checkpoint: {str(root)!r} is not a directory")
    for sub in MODULE_SUBDIRS:
        candidate = root / sub
        if (candidate / "class_and_ctor_args.pkl").is_file() and any(
            p.name.startswith("module_state") for p in candidate.iterdir()
        ):
            return candidate
    raise PrivacyConfigError(
        f"--checkpoint: {str(root)!r} holds no RLModule (expected an RLlib Algorithm "
        "checkpoint, e.g. .../checkpoint_000000, or its "
        "learner_group/learner/rl_module/default_policy directory)"
    )


def _checkpoint_ctor(checkpoint: str | os.PathLike[str]) -> tuple[Any, Any] | None:
    """``(Algorithm class, config)`` from ``class_and_ctor_args.pkl`` (None if unreadable)."""
    import pickle

    path = Path(checkpoint) / "class_and_ctor_args.pkl"
    if not path.is_file():
        return None
    try:
        with path.open("rb") as file:
            state = pickle.load(file)
        args, kwargs = state["ctor_args_and_kwargs"]
        return state.get("class"), (args[0] if args else kwargs.get("config"))
    except Exception:  # An unreadable file means "not recorded", not a bad checkpoint.
        return None


def check_ilm_checkpoint(checkpoint: str | os.PathLike[str]) -> None:
    """Refuse a checkpoint that was not trained on the instance-wise Laplace env.

    Looked up first, from the Algorithm checkpoint's ``class_and_ctor_args.pkl`` (the
    algorithm and its ``env``): another algorithm's module would otherwise fail later
    with a message about its shapes (``'bins' must be an int >= 2, got -12`` for an
    LDPA3C checkpoint). A bare RLModule folder records neither and is not checked.

    Raises:
        PrivacyConfigError: Naming the algorithm and env the checkpoint was trained with.
    """
    from rllib_privacy.envs.registry import INSTANCE_LAPLACE_ENV_ID

    ctor = _checkpoint_ctor(checkpoint)
    if ctor is None:
        return
    algo_cls, config = ctor
    env = config.get("env") if isinstance(config, dict) else getattr(config, "env", None)
    if env is None or (isinstance(env, str) and env.endswith(INSTANCE_LAPLACE_ENV_ID)):
        return
    name = getattr(algo_cls, "__name__", "an unknown algorithm")
    raise PrivacyConfigError(
        f"--checkpoint: {str(checkpoint)!r} is not an instance-wise Laplace checkpoint: it "
        f"was written by {name} on env {env!r}; ilm-evaluate evaluates policies trained on "
        f"{INSTANCE_LAPLACE_ENV_ID} (e.g. `rllib train -f ilm_dqn`)"
    )


def checkpoint_env_config(checkpoint: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``env_config`` an Algorithm checkpoint was trained with (None if not recorded).

    RLlib writes the Algorithm's config into ``class_and_ctor_args.pkl`` at the top of its
    checkpoint (the file RLlib itself unpickles to restore the Algorithm). A bare RLModule
    directory has no env_config: None.
    """
    ctor = _checkpoint_ctor(checkpoint)
    if ctor is None:
        return None
    config = ctor[1]
    env_config = config.get("env_config") if isinstance(config, dict) else None
    if env_config is None:
        env_config = getattr(config, "env_config", None)
    return dict(env_config) if isinstance(env_config, dict) else None


def resolve_trained_settings(
    args: argparse.Namespace, env_config: dict[str, Any] | None
) -> tuple[str, int, Any]:
    """``(formulation, passes, actions)``: the options, else the checkpoint's, else defaults.

    Raises:
        PrivacyConfigError: If ``--formulation`` differs from the formulation the checkpoint
            was trained with (an improve policy rolled out as assign, or the reverse, runs
            but its numbers mean nothing).

    """
    recorded = env_config or {}
    formulation = args.formulation
    trained = recorded.get("formulation", "assign") if env_config is not None else None
    if formulation is None:
        formulation = trained or "assign"
    elif trained is not None and formulation != trained:
        raise PrivacyConfigError(
            f"--formulation {formulation}: the checkpoint was trained with formulation "
            f"{trained!r} (its env_config); leave --formulation out or pass {trained}"
        )
    passes = args.passes if args.passes is not None else int(recorded.get("passes", 2))
    actions = parse_actions(args.actions)
    if actions is None and recorded.get("actions") is not None:
        recorded_actions = recorded["actions"]
        actions = recorded_actions if isinstance(recorded_actions, str) else tuple(recorded_actions)
    return formulation, passes, actions


def load_module(checkpoint: str | os.PathLike[str]) -> Any:
    """Restore the RLModule of ``checkpoint`` with ``RLModule.from_checkpoint``."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    module_dir = find_module_dir(checkpoint)
    try:
        module = RLModule.from_checkpoint(str(module_dir.resolve()))
    except Exception as e:  # Any unpickling/shape problem is a bad checkpoint to the user.
        raise PrivacyConfigError(
            f"--checkpoint: cannot restore the RLModule from {str(module_dir)!r}: "
            f"{type(e).__name__}: {e}"
        ) from None
    module.eval()
    return module


def greedy_scales(module: Any, env: InstanceWiseLaplaceEnv) -> np.ndarray:
    """Run one episode with the module's greedy (inference) actions; return the scales."""
    import torch

    obs, _ = env.reset(seed=0)
    terminated = False
    with torch.no_grad():
        while not terminated:
            out = module.forward_inference({"obs": torch.as_tensor(obs[None])})
            action = int(np.asarray(out["actions"]).reshape(-1)[0])
            obs, _, terminated, _, _ = env.step(action)
    return env.scales.copy()


def evaluate(
    module: Any,
    *,
    data: str | None = None,
    epsilon: float,
    dataset: str = DEFAULT_DATASET,
    column: str | None = None,
    bins: int | None = None,
    pe_dim: int = 16,
    actions: tuple[Any, ...] | str | None = None,
    formulation: str = "assign",
    passes: int = 2,
) -> ILMEvaluation:
    """Evaluate a restored module on a CSV dataset or a bundled one (see the module docstring).

    Args:
        module: The restored RLModule.
        data: A CSV file with a header row; None uses the bundled ``dataset``.
        epsilon: Target ε of every instance.
        dataset: Bundled dataset name, used when ``data`` is None.
        column: Column of the data (None: the only column, or the dataset's default).
        bins: Shared bins (None: from the module's observation size).
        pe_dim: Positional encoding length.
        actions: The action set (None: the paper's five scales; ``"geometric:N"`` as in the
            env's ``actions`` key).
        formulation: The env's ``formulation`` the policy was trained with (``assign`` or
            ``improve``).
        passes: The env's ``passes`` (``improve`` only).

    Raises:
        PrivacyConfigError: Bad data/arguments, or a module whose observation or action
            space does not fit the environment built from them.

    """
    from rllib_privacy.envs.instance_laplace import (
        PAPER_ACTIONS,
        ILMSettings,
        InstanceWiseLaplaceEnv,
    )

    obs_dim = int(np.prod(module.observation_space.shape))
    if bins is None:
        # ``improve`` observations do not contain the PMF: the env's default bins.
        bins = obs_dim - pe_dim if formulation == "assign" else ILMSettings().bins
    env = InstanceWiseLaplaceEnv(
        {
            "data_path": data,
            "dataset": dataset,
            "column": column,
            "epsilon": epsilon,
            "bins": bins,
            "pe_dim": pe_dim,
            "actions": (actions if isinstance(actions, str) else list(actions or PAPER_ACTIONS)),
            "shuffle": False,
            "formulation": formulation,
            "passes": passes,
        }
    )
    if env.observation_space.shape != (obs_dim,):
        raise PrivacyConfigError(
            f"--bins/--pe-dim/--formulation/--actions: the checkpoint's module expects "
            f"observations of size {obs_dim}, but --formulation {formulation} with --pe-dim "
            f"{pe_dim}, --bins {bins} and {env.action_space.n} actions gives "
            f"{env.observation_space.shape[0]}"
        )
    if getattr(module.action_space, "n", None) != env.action_space.n:
        raise PrivacyConfigError(
            f"the checkpoint's module has {getattr(module.action_space, 'n', '?')} actions, "
            f"the action set has {env.action_space.n}"
        )
    scales = greedy_scales(module, env)
    return assess(env, scales)


def assess(env: InstanceWiseLaplaceEnv, scales: np.ndarray) -> ILMEvaluation:
    """Check a scale set on the env's data: pDP, repair, KLs, baselines, histogram."""
    from rllib_privacy.accounting.ilm_scales import (
        best_single_scale,
        greedy_scales,
        pdp_violations,
        repair_scales,
    )
    from rllib_privacy.accounting.pdp import instance_privacy_losses
    from rllib_privacy.mechanisms.instance_laplace import kl_divergence, privatized_pmf

    losses = instance_privacy_losses(env.values, scales)
    repair = repair_scales(env.values, scales, env.epsilon, losses=losses)
    pmfs = {"data": env.data_pmf}
    for key, assignment in (
        ("policy", scales),
        ("released", repair.scales),
        ("laplace", np.full(env.n, env.uniform_scale)),
    ):
        pmfs[key] = privatized_pmf(env.values, assignment, env.edges)
    best = best_single_scale(env.values, env.epsilon, env.action_scales, env.edges)
    pmfs["best_single"] = (
        np.full(env.edges.size - 1, np.nan)
        if best.scale is None
        else privatized_pmf(env.values, np.full(env.n, best.scale), env.edges)
    )
    greedy = greedy_scales(env.values, env.epsilon, env.action_scales, env.edges)
    pmfs["greedy"] = privatized_pmf(env.values, greedy.scales, env.edges)
    counts = np.array([np.count_nonzero(scales == s) for s in env.action_scales])
    return ILMEvaluation(
        n=env.n,
        epsilon=env.epsilon,
        delta_f=env.delta_f,
        action_scales=env.action_scales.copy(),
        scales=scales,
        losses=losses,
        released_scales=repair.scales,
        repaired_instances=repair.num_widened,
        released_violations=pdp_violations(env.values, repair.scales, env.epsilon),
        kl_policy=kl_divergence(env.data_pmf, pmfs["policy"]),
        kl_released=kl_divergence(env.data_pmf, pmfs["released"]),
        kl_laplace=kl_divergence(env.data_pmf, pmfs["laplace"]),
        best_single_action=best.index,
        kl_best_single=best.kl,
        kl_greedy=greedy.kl,
        action_counts=counts,
        pmfs=pmfs,
        edges=env.edges,
    )


def format_table(result: ILMEvaluation) -> str:
    """The evaluation as a plain-text table."""
    summary = result.summary()
    lines = [
        f"instances: {result.n}   ε = {result.epsilon:g}",
        f"pDP check: {result.violations} of {result.n} instances over ε "
        f"(max loss {summary['max_loss']}) -> {'PASS' if result.violations == 0 else 'FAIL'}",
        "",
        f"{'mechanism':<34}{'KL(data||output)':>18}{'ratio to Laplace':>18}",
        f"{'policy (per-instance scales)':<34}{result.kl_policy:>18.4f}"
        f"{result.kl_policy / result.kl_laplace:>18.3f}",
        f"{'released (repaired: ' + str(result.repaired_instances) + ' widened)':<34}"
        f"{result.kl_released:>18.4f}{result.kl_released / result.kl_laplace:>18.3f}",
        f"{'uniform Laplace Δf/ε':<34}{result.kl_laplace:>18.4f}{1.0:>18.3f}",
        f"{'greedy per-instance (action set)':<34}{result.kl_greedy:>18.4f}"
        f"{result.kl_greedy / result.kl_laplace:>18.3f}",
    ]
    if result.best_single_action is None:
        lines.append(f"{'best single scale (none pDP-ok)':<34}{'-':>18}{'-':>18}")
    else:
        scale = result.action_scales[result.best_single_action]
        label = f"best single pDP-ok scale b={scale:.4g}"
        lines.append(
            f"{label:<34}{result.kl_best_single:>18.4f}"
            f"{result.kl_best_single / result.kl_laplace:>18.3f}"
        )
    lines += ["", f"{'action':<8}{'scale':>14}{'instances':>12}"]
    for action, (scale, count) in enumerate(
        zip(result.action_scales, result.action_counts, strict=True)
    ):
        lines.append(f"{action:<8}{scale:>14.4g}{count:>12d}")
    return "\n".join(lines)


def plot(result: ILMEvaluation, path: str | os.PathLike[str]) -> None:
    """Write the PMFs and the chosen-scale histogram as a PNG (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    centers = 0.5 * (result.edges[:-1] + result.edges[1:])
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for key, label in (
        ("data", "data"),
        ("policy", f"policy (KL {result.kl_policy:.3f})"),
        ("released", f"released, repaired (KL {result.kl_released:.3f})"),
        ("laplace", f"uniform Laplace (KL {result.kl_laplace:.3f})"),
        ("best_single", f"best single scale (KL {result.kl_best_single:.3f})"),
        ("greedy", f"greedy per-instance (KL {result.kl_greedy:.3f})"),
    ):
        if np.all(np.isfinite(result.pmfs[key])):
            left.step(centers, result.pmfs[key], where="mid", label=label)
    left.set_xlabel("output (outer bins hold everything outside the data range)")
    left.set_ylabel("probability")
    left.set_title(f"Output PMFs, ε = {result.epsilon:g}")
    left.legend(fontsize=8)
    labels = [f"{s:.3g}" for s in result.action_scales]
    right.bar(labels, result.action_counts)
    right.set_xlabel("Laplace scale b")
    right.set_ylabel("instances")
    right.set_title(f"Chosen scales ({result.violations} pDP violations)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``rllib-privacy ilm-evaluate``."""
    parser.add_argument("--checkpoint", required=True, metavar="PATH", help="Algorithm checkpoint")
    data = parser.add_mutually_exclusive_group()
    data.add_argument(
        "--data", metavar="CSV", help="CSV file with a header row (default: --dataset)"
    )
    data.add_argument(
        "--dataset",
        choices=BUNDLED_DATASET_NAMES,
        default=DEFAULT_DATASET,
        help=f"bundled dataset used without --data (default: {DEFAULT_DATASET}, the one "
        "tuned_configs/ilm_dqn.yaml trains on)",
    )
    parser.add_argument("--epsilon", required=True, type=float, help="target ε of every instance")
    parser.add_argument(
        "--column",
        metavar="NAME",
        help="column of the data (needed for a CSV with several; default for --dataset: "
        "diabetes 'age', linnerud 'Weight')",
    )
    parser.add_argument(
        "--bins", type=int, metavar="N", help="shared bins (default: from the checkpoint)"
    )
    parser.add_argument(
        "--pe-dim", type=int, default=16, metavar="N", help="positional encoding length (16)"
    )
    parser.add_argument(
        "--actions",
        metavar="SET",
        help='the action set the policy was trained with: "geometric:N", or comma-separated '
        'entries (a number × Δf, or "K/eps"); default: the checkpoint\'s env_config, else '
        "the paper's five scales",
    )
    parser.add_argument(
        "--formulation",
        choices=("assign", "improve"),
        default=None,
        help="the env formulation the policy was trained with (default: the checkpoint's "
        "env_config, else assign; a value that contradicts the checkpoint is an error)",
    )
    parser.add_argument(
        "--passes",
        type=int,
        default=None,
        metavar="N",
        help="sweeps over the distinct values, --formulation improve only (default: the "
        "checkpoint's env_config, else 2)",
    )
    parser.add_argument(
        "--output-dir",
        default="ilm_evaluation",
        metavar="DIR",
        help="where ilm_evaluation.json and ilm_evaluation.png go (default: ./ilm_evaluation)",
    )


def parse_actions(text: str | None) -> tuple[Any, ...] | str | None:
    """``--actions``: None, ``"geometric:N"`` as is, else comma-separated entries."""
    if text is None or text.strip().startswith("geometric"):
        return text
    entries: list[Any] = []
    for entry in text.split(","):
        try:
            entries.append(float(entry))
        except ValueError:
            entries.append(entry.strip())
    return tuple(entries)


def run(args: argparse.Namespace) -> int:
    """Run ``rllib-privacy ilm-evaluate`` (exit 0 pass, 1 pDP violated, 2 bad input)."""
    if not (np.isfinite(args.epsilon) and args.epsilon > 0):
        raise PrivacyConfigError(f"--epsilon must be a finite number > 0, got {args.epsilon}")
    if args.data is not None and not os.path.isfile(args.data):
        raise PrivacyConfigError(f"--data: {args.data!r} is not a file")
    check_ilm_checkpoint(args.checkpoint)
    module = load_module(args.checkpoint)
    formulation, passes, actions = resolve_trained_settings(
        args, checkpoint_env_config(args.checkpoint)
    )
    result = evaluate(
        module,
        data=args.data,
        dataset=args.dataset,
        epsilon=args.epsilon,
        column=args.column,
        bins=args.bins,
        pe_dim=args.pe_dim,
        actions=actions,
        formulation=formulation,
        passes=passes,
    )
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ilm_evaluation.json").write_text(json.dumps(result.summary(), indent=2) + "\n")
    plot(result, out / "ilm_evaluation.png")
    print(format_table(result))
    print(f"\nwrote {out / 'ilm_evaluation.json'} and {out / 'ilm_evaluation.png'}")
    return EXIT_OK if result.violations == 0 else EXIT_VIOLATION
