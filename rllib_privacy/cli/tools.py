"""The ``rllib-privacy`` command: one subcommand per [Tool][rllib_privacy.cli.tools.Tool].

Each tool lives in its own module (``list_registered``, ``pate_epsilon``, ``plot``,
``ilm_evaluate``) with an ``add_arguments(parser)`` and a ``run(args)``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence

from rllib_privacy.cli import configs, ilm_evaluate, list_registered, pate_epsilon, plot
from rllib_privacy.cli.common import EXIT_USAGE, parse_command_line
from rllib_privacy.errors import PrivacyConfigError


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


#: The subcommands of ``rllib-privacy``; add a Tool here to add one.
TOOLS: tuple[Tool, ...] = (
    Tool(
        "pate-epsilon",
        "PATE's data-dependent and data-independent epsilon of noisy-max queries",
        pate_epsilon.add_arguments,
        pate_epsilon.run,
    ),
    Tool(
        "list",
        "list this package's registered algorithms and envs",
        list_registered.add_arguments,
        list_registered.run,
    ),
    Tool(
        "configs",
        "list the experiment files shipped with the package, or copy one to edit it",
        configs.add_arguments,
        configs.run,
    ),
    Tool(
        "plot",
        "draw learning curves (median and percentile band over seeds) from Tune results",
        plot.add_arguments,
        plot.run,
    ),
    Tool(
        "ilm-evaluate",
        "roll out a trained instance-wise Laplace policy greedily, check every instance's "
        "pDP and compare its KL with uniform Laplace",
        ilm_evaluate.add_arguments,
        ilm_evaluate.run,
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
    args = parse_command_line(build_tools_parser(), argv)
    if isinstance(args, int):
        return args
    try:
        return args.tool.run(args)
    except PrivacyConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
