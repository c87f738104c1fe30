"""``rllib-privacy plot``: learning curves (median, band where seeds share x) from Tune results."""

from __future__ import annotations

import argparse
import sys

from rllib_privacy.cli.common import EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``rllib-privacy plot``."""
    from rllib_privacy import plotting

    parser.add_argument(
        "results_dirs",
        nargs="+",
        metavar="RESULTS_DIR",
        help="Tune results: trial folders, experiment folders, or folders of experiment folders",
    )
    parser.add_argument(
        "--group-by",
        default=plotting.SAME_CONFIG,
        metavar="KEY",
        help="config key with one curve per value; nested keys with '/', e.g. "
        "env_config/gravity (default: one curve per config, trials that differ only in "
        "their seed pooled)",
    )
    parser.add_argument(
        "--metric",
        default=plotting.DEFAULT_METRIC,
        metavar="M",
        help=f"result key on the y-axis (default: {plotting.DEFAULT_METRIC})",
    )
    parser.add_argument(
        "--x",
        metavar="X",
        help="result key on the x-axis (default: env steps: "
        + ", else ".join(plotting.DEFAULT_X_KEYS)
        + ")",
    )
    parser.add_argument(
        "--band",
        type=float,
        default=plotting.DEFAULT_BAND,
        metavar="P",
        help="the band spans the (100-P)th to the Pth percentile over seeds (default: 85)",
    )
    parser.add_argument(
        "--output",
        "-o",
        default="learning_curves.png",
        metavar="PNG",
        help="image file to write (default: learning_curves.png)",
    )
    parser.add_argument("--title", metavar="T", help="plot title")
    parser.add_argument(
        "--points",
        type=int,
        default=plotting.DEFAULT_POINTS,
        metavar="N",
        help=f"most x grid points per curve (default: {plotting.DEFAULT_POINTS})",
    )
    parser.add_argument(
        "--min-seeds",
        type=int,
        default=1,
        metavar="K",
        help="leave out x values fewer than K trials of a group reached (default: 1)",
    )


def run(args: argparse.Namespace) -> int:
    """Draw the curves to ``--output`` and print their table.

    Args:
        args: The parsed arguments.

    Returns:
        The exit code, 0.
    """
    import warnings

    from rllib_privacy import plotting

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", plotting.PlotWarning)
        trials = plotting.load_trials(args.results_dirs)
        curves = plotting.aggregate_curves(
            trials,
            group_by=args.group_by,
            metric=args.metric,
            x=args.x,
            band=args.band,
            points=args.points,
            min_seeds=args.min_seeds,
        )
        path = plotting.plot_learning_curves(curves, args.output, title=args.title)
    for warning in caught:
        print(f"notice: {warning.message}", file=sys.stderr)
    print(plotting.format_table(curves))
    print(f"wrote {path}")
    return EXIT_OK
