"""What both commands share: exit codes, the package logger and argument parsing.

Exit codes: 0 success, 1 a trial errored (or Ray could not start), 2 invalid arguments
or experiment file, 130 interrupted (Ctrl-C; resume with ``--resume``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

logger = logging.getLogger("rllib_privacy")

EXIT_OK = 0
EXIT_TRIAL_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


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
