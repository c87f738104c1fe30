"""``rllib-privacy pate-epsilon``: PATE's ε of noisy-max queries on the command line."""

from __future__ import annotations

import argparse

from rllib_privacy.cli.common import EXIT_OK
from rllib_privacy.errors import PrivacyConfigError

#: Largest --max-order of pate-epsilon (as PATEPPO's pate_max_order).
_MAX_MOMENT_ORDER = 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``rllib-privacy pate-epsilon``."""
    parser.add_argument(
        "--votes",
        metavar="FILE.npy",
        help="teacher vote histograms, shape (queries, classes) (numpy .npy); without it, "
        "--queries gives the data-independent epsilon only",
    )
    parser.add_argument("--gamma", type=float, required=True, help="inverse Laplace scale γ")
    parser.add_argument("--delta", type=float, required=True, help="δ of the (ε, δ) bound")
    parser.add_argument(
        "--queries", type=int, metavar="N", help="number of queries (with --votes: the first N)"
    )
    parser.add_argument("--max-order", type=int, default=8, help="largest moment order (8)")


def run(args: argparse.Namespace) -> int:
    """Print the data-dependent and data-independent ε and the composition bound.

    Args:
        args: The parsed arguments.

    Returns:
        The exit code, 0.

    Raises:
        PrivacyConfigError: For bad options or an unreadable ``--votes`` file.
    """
    import numpy as np

    from rllib_privacy.accounting import advanced_composition_epsilon, pate_epsilon

    if args.votes is None and args.queries is None:
        raise PrivacyConfigError("give --votes FILE.npy or --queries N (or both)")
    if args.queries is not None and args.queries < 0:
        raise PrivacyConfigError(f"--queries must be >= 0, got {args.queries}")
    # One moment per order is kept per query: a huge order would exhaust memory.
    if args.max_order > _MAX_MOMENT_ORDER:
        raise PrivacyConfigError(
            f"--max-order must be at most {_MAX_MOMENT_ORDER}, got {args.max_order}"
        )
    votes = None
    if args.votes is not None:
        try:
            votes = np.load(args.votes, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise PrivacyConfigError(
                f"--votes: cannot read {args.votes!r} as a .npy file: {e}"
            ) from None
        if votes.ndim != 2:
            raise PrivacyConfigError(
                f"--votes: {args.votes!r} must hold a 2-D array (queries x classes), "
                f"got shape {votes.shape}"
            )
        votes = votes[: args.queries] if args.queries is not None else votes
    try:
        source = args.queries if votes is None else votes
        kwargs = {"gamma": args.gamma, "delta": args.delta, "max_order": args.max_order}
        independent = pate_epsilon(source, data_dependent=False, **kwargs)
        dependent = pate_epsilon(votes, **kwargs) if votes is not None else None
        composition = advanced_composition_epsilon(
            independent.num_queries, gamma=args.gamma, delta=args.delta
        )
    except ArithmeticError as e:  # e.g. 2γ²l(l+1) overflowing for a huge --gamma
        raise PrivacyConfigError(
            f"--gamma {args.gamma:g} / --max-order {args.max_order}: the moments overflow ({e})"
        ) from None
    except ValueError as e:
        # The accountant names its arguments; name the command-line options instead.
        message = str(e).replace("votes_or_count", "--votes").replace("max_order", "--max-order")
        for name in ("gamma", "delta"):
            message = message.replace(f"{name} must", f"--{name} must")
        raise PrivacyConfigError(message) from None
    print(
        f"queries: {independent.num_queries}  gamma: {args.gamma:g}  delta: {args.delta:g}  "
        f"max order: {args.max_order}"
    )
    if dependent is not None:
        print(f"data-dependent epsilon:   {dependent.epsilon:.4f} (order {dependent.order})")
    else:
        print("data-dependent epsilon:   n/a (needs --votes)")
    print(f"data-independent epsilon: {independent.epsilon:.4f} (order {independent.order})")
    print(f"advanced composition:     {composition:.4f} (the paper's comparison bound)")
    return EXIT_OK
