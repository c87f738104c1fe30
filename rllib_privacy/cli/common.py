"""What both commands share: exit codes, the package logger and argument parsing.

Exit codes: 0 success, 1 a trial errored (or Ray could not start), 2 invalid arguments
or experiment file, 130 interrupted (Ctrl-C; resume with ``--resume``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rllib_privacy._validation import did_you_mean
from rllib_privacy.errors import ExperimentFileError

logger = logging.getLogger("rllib_privacy")

EXIT_OK = 0
EXIT_TRIAL_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def shipped_configs_dir() -> Path:
    """The experiment files shipped with the package (``rllib_privacy/tuned_configs``).

    In a clone it is a symlink to the repository's ``tuned_configs/``; a wheel holds copies.
    """
    return Path(__file__).resolve().parents[1] / "tuned_configs"


def shipped_configs() -> dict[str, Path]:
    """The shipped experiment files by name (the file name without ``.yaml``), sorted."""
    folder = shipped_configs_dir()
    if not folder.is_dir():
        return {}
    files = [p for p in folder.iterdir() if p.suffix in SHIPPED_SUFFIXES and p.is_file()]
    return {p.stem: p for p in sorted(files)}


#: Suffixes of experiment files (the shipped ones are YAML).
SHIPPED_SUFFIXES = (".yaml", ".yml", ".json")


def find_experiment_file(name: str) -> str:
    """The file ``rllib train -f NAME`` runs: a path that exists, else a shipped file.

    A path that exists always wins. Otherwise a name of a shipped file (``ldp_a3c``,
    ``ldp_a3c.yaml`` or ``tuned_configs/ldp_a3c.yaml``) gives that file, so the quick start
    runs from any folder after ``pip install``.

    Args:
        name: What ``-f`` was given.

    Returns:
        The path to read.

    Raises:
        PrivacyConfigError: Neither a file nor a shipped name; lists the shipped names.
    """
    if os.path.exists(name):
        return name
    shipped = shipped_configs()
    stem = Path(name).stem if Path(name).suffix in SHIPPED_SUFFIXES else Path(name).name
    in_shipped_folder = Path(name).parent in (Path("."), Path("tuned_configs"))
    if in_shipped_folder and stem in shipped:
        return str(shipped[stem])
    if not in_shipped_folder:
        raise ExperimentFileError(name, "file not found")
    raise ExperimentFileError(
        name,
        f"file not found, and not the name of a shipped experiment file{shipped_names_hint(stem)}",
    )


def shipped_names_hint(name: str) -> str:
    """``"; did you mean 'x'?; shipped: a, b, ..."`` for an unknown shipped-file name."""
    shipped = list(shipped_configs())
    names = ", ".join(shipped) or "none (the package's tuned_configs folder is missing)"
    hint = did_you_mean(name, shipped) if name else ""
    return f"{hint}; shipped: {names} (`rllib-privacy configs list`)"


def setup_logging(verbose: int) -> None:
    """Log the package's messages to stderr: warnings, ``-v`` info, ``-vv`` debug.

    Args:
        verbose: How often ``-v`` was given.
    """
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logger.setLevel(level)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)


def parse_command_line(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> Any:
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
