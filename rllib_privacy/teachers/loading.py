"""Finding and loading a teacher's RLModule from what ``rllib train`` writes to disk.

A teacher is named in YAML by a path (``teacher_checkpoint``). Accepted, in this order:

* an RLModule folder (``.../rl_module/default_policy``, written by ``RLModule.save_to_path``);
* an Algorithm checkpoint (a folder with ``rllib_checkpoint.json`` and
  ``learner_group/learner/rl_module/<module_id>``);
* a Tune trial folder: its newest ``checkpoint_*`` is used;
* a Tune experiment folder with exactly one trial: that trial's newest checkpoint.

Paths are resolved to absolute paths before Ray starts, because Tune runs each trial in
its own working directory (``rllib train`` first resolves a relative path against the
storage path; see ``docs/cli.md``).

A teacher must be a PPO-family policy (PPO, KickstartPPO, PATEPPO, ExplorationPPO: RLlib's
default PPO module, an MLP encoder and a ``pi`` head whose Lipschitz constant the Dirichlet
mechanism needs). A checkpoint of another algorithm, e.g. LDPA3C or DQN, is refused by name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rllib_privacy.errors import PrivacyConfigError

DEFAULT_MODULE_ID = "default_policy"
_MODULE_SUBPATH = ("learner_group", "learner", "rl_module")
_CHECKPOINT_DIR = re.compile(r"^checkpoint_(\d+)$")


def resolve_teacher_checkpoint(
    path: str | Path, *, module_id: str = DEFAULT_MODULE_ID, key: str = "teacher_checkpoint"
) -> Path:
    """Return the absolute RLModule folder that ``path`` designates.

    Args:
        path: One of the forms listed in the module docstring (``~`` is expanded).
        module_id: Which RLModule of an Algorithm checkpoint to use.
        key: Config key named in error messages.

    Raises:
        PrivacyConfigError: Nothing loadable at ``path``; the message says what was found.

    """
    if not isinstance(path, str | Path) or not str(path):
        raise PrivacyConfigError(f"{key} must be a path, got {path!r}")
    root = Path(path).expanduser().resolve()
    if not root.exists():
        raise PrivacyConfigError(
            f"{key} {str(path)!r} does not exist (train the teacher first, e.g. "
            "`rllib train -f tuned_configs/kickstart_teacher_cartpole.yaml`)"
        )
    if _is_module_dir(root):
        _check_teacher_kind(root, path=path, key=key)
        return root
    checkpoint = _newest_checkpoint(root, key=key) if not _is_algorithm_checkpoint(root) else root
    module_dir = checkpoint.joinpath(*_MODULE_SUBPATH, module_id)
    if not _is_module_dir(module_dir):
        found = sorted(p.name for p in checkpoint.joinpath(*_MODULE_SUBPATH).glob("*"))
        raise PrivacyConfigError(
            f"{key}: checkpoint {str(checkpoint)!r} has no RLModule {module_id!r} "
            f"(modules found: {found or 'none'})"
        )
    _check_teacher_kind(module_dir, path=path, key=key)
    return module_dir


def _pickled_class(ctor_file: Path) -> type | None:
    """The class stored in a ``class_and_ctor_args.pkl``; None if it cannot be read."""
    import pickle

    try:
        with open(ctor_file, "rb") as f:
            cls = pickle.load(f).get("class")
    except Exception:  # Unreadable or foreign files: loading the module reports them.
        return None
    return cls if isinstance(cls, type) else None


def _check_teacher_kind(module_dir: Path, *, path: str | Path, key: str) -> None:
    """Refuse a module that is not a PPO-family policy, naming the algorithm that wrote it.

    Without this, e.g. an LDPA3C checkpoint fails much later with a misleading message
    about the teacher's Lipschitz constant.
    """
    module_cls = _pickled_class(module_dir / "class_and_ctor_args.pkl")
    if module_cls is None:
        return
    from ray.rllib.algorithms.ppo.default_ppo_rl_module import DefaultPPORLModule

    if issubclass(module_cls, DefaultPPORLModule):
        return
    algorithm = next(
        (
            cls.__name__
            for folder in module_dir.parents
            if (folder / "rllib_checkpoint.json").is_file()
            and (cls := _pickled_class(folder / "class_and_ctor_args.pkl")) is not None
            and not issubclass(cls, DefaultPPORLModule)
            and cls.__name__ != module_cls.__name__
        ),
        None,
    )
    # Algorithm names are acronyms: "an LDPA3C", "a DQN".
    article = "an" if algorithm and algorithm[0] in "AEFHILMNORSX" else "a"
    what = f"{article} {algorithm} checkpoint" if algorithm else "a checkpoint"
    raise PrivacyConfigError(
        f"{key} {str(path)!r} is {what} (its policy module is {module_cls.__name__}); a teacher "
        "must be a policy trained with PPO, KickstartPPO, PATEPPO or ExplorationPPO (RLlib's "
        "default PPO module), e.g. `rllib train -f tuned_configs/kickstart_teacher_cartpole.yaml`"
    )


def load_teacher_module(module_dir: str | Path) -> Any:
    """Load the teacher's RLModule (inference only, eval mode) from an RLModule folder."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    module = RLModule.from_checkpoint(str(module_dir))
    module.eval()
    return module


def load_teacher_spaces(module_dir: str | Path) -> tuple[Any, Any]:
    """(observation space, action space) stored with an RLModule checkpoint.

    Reads the module's constructor arguments only; no weights leave the teacher's folder.
    """
    import pickle

    with open(Path(module_dir) / "class_and_ctor_args.pkl", "rb") as f:
        ctor = pickle.load(f)
    kwargs = ctor.get("ctor_args_and_kwargs", ((), {}))[1]
    if "observation_space" in kwargs and "action_space" in kwargs:
        return kwargs["observation_space"], kwargs["action_space"]
    module = load_teacher_module(module_dir)
    return module.observation_space, module.action_space


def check_teacher_spaces(
    *, teacher_obs: Any, teacher_act: Any, student_obs: Any, student_act: Any, where: str
) -> None:
    """Raise if the teacher was trained on other observation or action spaces.

    Raises:
        PrivacyConfigError: The spaces differ; the message shows both.

    """
    for what, teacher, student in (
        ("observation", teacher_obs, student_obs),
        ("action", teacher_act, student_act),
    ):
        if teacher != student:
            raise PrivacyConfigError(
                f"teacher_checkpoint {where!r} was trained with {what} space {teacher}, "
                f"but the student's environment has {student}"
            )


def _is_module_dir(path: Path) -> bool:
    return (path / "module_state.pkl").exists() or (
        (path / "class_and_ctor_args.pkl").exists() and any(path.glob("module_state*"))
    )


def _is_algorithm_checkpoint(path: Path) -> bool:
    return (path / "rllib_checkpoint.json").exists() and path.joinpath(*_MODULE_SUBPATH).is_dir()


def _checkpoints_in(trial: Path) -> list[Path]:
    found = [
        (int(match.group(1)), p)
        for p in trial.iterdir()
        if (match := _CHECKPOINT_DIR.match(p.name)) and _is_algorithm_checkpoint(p)
    ]
    return [p for _, p in sorted(found, key=lambda pair: pair[0])]


def _newest_checkpoint(root: Path, *, key: str) -> Path:
    if not root.is_dir():
        raise PrivacyConfigError(f"{key} {str(root)!r} is not a folder")
    checkpoints = _checkpoints_in(root)
    if checkpoints:
        return checkpoints[-1]
    trials = [p for p in sorted(root.iterdir()) if p.is_dir() and _checkpoints_in(p)]
    if len(trials) == 1:
        return _checkpoints_in(trials[0])[-1]
    if not trials:
        raise PrivacyConfigError(
            f"{key} {str(root)!r} holds no RLlib checkpoint (expected an RLModule folder, "
            "an Algorithm checkpoint, or a Tune trial/experiment folder with checkpoint_*)"
        )
    names = ", ".join(t.name for t in trials)
    raise PrivacyConfigError(
        f"{key} {str(root)!r} holds {len(trials)} trials ({names}); point it at one of them"
    )
