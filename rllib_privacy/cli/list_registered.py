"""``rllib-privacy list``: the algorithms and envs this package registers."""

from __future__ import annotations

import argparse
from typing import Any

from rllib_privacy.cli.common import EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``rllib-privacy list``."""
    parser.add_argument(
        "--all",
        action="store_true",
        help="also list the Atari RAM ids this package adds, RLlib's own algorithms and "
        "other Tune envs (after this package's own)",
    )


def run(args: argparse.Namespace) -> int:
    """Print this package's algorithms and envs (with ``--all`` the others too).

    Args:
        args: The parsed arguments.

    Returns:
        The exit code, 0.
    """
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
