"""PATE teacher ensembles for RL: find teacher checkpoints, load them, count their votes.

Each teacher is an RLlib RLModule trained on its own private data (e.g. its own set of
CartPole gravities, see ``tuned_configs/pate_teachers_cartpole.yaml``). A teacher's vote
on a state is its greedy action (argmax of its action-distribution inputs).

Teachers can be named by (see ``resolve_teacher_checkpoints``):

* an RLModule directory (written by ``RLModule.save_to_path``);
* an Algorithm checkpoint directory (``.../checkpoint_000009``): its module
  ``learner_group/learner/rl_module/default_policy`` is used;
* an experiment or trial directory: every trial's latest Algorithm checkpoint below it,
  sorted by trial directory name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rllib_privacy.errors import PrivacyConfigError

__all__ = [
    "MODULE_SUBPATH",
    "TeacherEnsemble",
    "resolve_teacher_checkpoints",
]

#: Where an Algorithm checkpoint keeps the default RLModule (RLlib 2.60 layout).
MODULE_SUBPATH = Path("learner_group", "learner", "rl_module", "default_policy")
_MODULE_MARKER = "class_and_ctor_args.pkl"
_TRAIN_HINT = (
    "train teachers first, e.g. `rllib train -f tuned_configs/pate_teachers_cartpole.yaml`"
)


def _is_module_dir(path: Path) -> bool:
    # An Algorithm checkpoint also has class_and_ctor_args.pkl at its root (for the
    # Algorithm class): only a folder with the module's own weights is an RLModule.
    return (path / _MODULE_MARKER).is_file() and any(path.glob("module_state*"))


def _checkpoint_number(path: Path) -> int:
    match = re.search(r"(\d+)$", path.name)
    return int(match.group(1)) if match else -1


def _modules_below(root: Path) -> list[Path]:
    """Latest checkpoint's module of every trial below ``root``, sorted by trial dir."""
    latest: dict[Path, Path] = {}
    for module_dir in root.rglob(str(MODULE_SUBPATH)):
        if not _is_module_dir(module_dir):
            continue
        checkpoint = module_dir.parents[len(MODULE_SUBPATH.parts) - 1]
        trial = checkpoint.parent
        best = latest.get(trial)
        if best is None or _checkpoint_number(checkpoint) > _checkpoint_number(best):
            latest[trial] = checkpoint
    return [latest[trial] / MODULE_SUBPATH for trial in sorted(latest)]


def resolve_teacher_checkpoints(
    spec: str | Sequence[str], *, num_teachers: int | None = None
) -> list[Path]:
    """Turn the ``pate_teacher_checkpoints`` setting into one RLModule directory per teacher.

    Args:
        spec: A path or a list of paths (``~`` is expanded): RLModule directories,
            Algorithm checkpoints, or experiment/trial directories (see module docstring).
        num_teachers: Use only the first this many teachers (None: all found).

    Returns:
        RLModule directories, in order.

    Raises:
        PrivacyConfigError: If a path does not exist or holds no checkpoint, if fewer than
            ``num_teachers`` (or fewer than 2) teachers are found, or one is listed twice.

    """
    paths = [spec] if isinstance(spec, str | Path) else list(spec)
    modules: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise PrivacyConfigError(
                f"config key 'pate_teacher_checkpoints': {str(raw)!r} does not exist; {_TRAIN_HINT}"
            )
        if _is_module_dir(path / MODULE_SUBPATH):
            modules.append(path / MODULE_SUBPATH)
        elif _is_module_dir(path):
            modules.append(path)
        else:
            found = _modules_below(path)
            if not found:
                raise PrivacyConfigError(
                    f"config key 'pate_teacher_checkpoints': no RLModule or Algorithm checkpoint "
                    f"under {str(raw)!r}; {_TRAIN_HINT} (with checkpoint_at_end: true)"
                )
            modules.extend(found)
    resolved = [m.resolve() for m in modules]
    if len(set(resolved)) != len(resolved):
        raise PrivacyConfigError("config key 'pate_teacher_checkpoints' names a teacher twice")
    if num_teachers is not None:
        if len(resolved) < num_teachers:
            raise PrivacyConfigError(
                f"config key 'pate_num_teachers' is {num_teachers} but only {len(resolved)} "
                "teacher checkpoints were found under 'pate_teacher_checkpoints'"
            )
        resolved = resolved[:num_teachers]
    if len(resolved) < 2:
        raise PrivacyConfigError(
            f"config key 'pate_teacher_checkpoints': PATE needs at least 2 teachers, found "
            f"{len(resolved)}"
        )
    return resolved


class TeacherEnsemble:
    """Teacher RLModules whose greedy actions are counted as votes.

    Args:
        module_dirs: RLModule directories (see ``resolve_teacher_checkpoints``).
        observation_space: The student's observation space; every teacher must have it.
        action_space: The student's action space, ``gymnasium.spaces.Discrete``; every
            teacher must have it.

    Raises:
        PrivacyConfigError: If the action space is not Discrete or a teacher's spaces
            differ from the student's.

    """

    def __init__(
        self,
        module_dirs: Sequence[str | Path],
        *,
        observation_space: gym.Space,
        action_space: gym.Space,
    ) -> None:
        from ray.rllib.core.rl_module.rl_module import RLModule

        if not isinstance(action_space, gym.spaces.Discrete):
            raise PrivacyConfigError(
                f"PATE labels discrete actions: the student's action space must be Discrete, "
                f"got {action_space}"
            )
        self.num_actions = int(action_space.n)
        self.modules = []
        for path in module_dirs:
            module = RLModule.from_checkpoint(str(path))
            for what, theirs, ours in (
                ("observation", module.observation_space, observation_space),
                ("action", module.action_space, action_space),
            ):
                if theirs != ours:
                    raise PrivacyConfigError(
                        f"config key 'pate_teacher_checkpoints': teacher {str(path)!r} has "
                        f"{what} space {theirs}, but the student's env has {ours}"
                    )
            module.eval()
            self.modules.append(module)

    def __len__(self) -> int:
        return len(self.modules)

    def votes(self, observations: Any) -> np.ndarray:
        """Vote histograms of the teachers' greedy actions, shape ``(N, num_actions)``."""
        import torch
        from ray.rllib.core.columns import Columns

        obs = torch.from_numpy(np.array(observations, dtype=np.float32))
        counts = np.zeros((obs.shape[0], self.num_actions), dtype=np.int64)
        rows = np.arange(obs.shape[0])
        with torch.no_grad():
            for module in self.modules:
                logits = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
                np.add.at(counts, (rows, logits.argmax(dim=-1).cpu().numpy()), 1)
        return counts
