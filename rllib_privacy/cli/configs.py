"""``rllib-privacy configs``: the experiment files shipped with the package.

``configs list`` prints each shipped file's name and first comment line; ``configs copy
NAME [DEST]`` copies one (to edit it) into the current folder or ``DEST``. ``rllib train
-f NAME`` runs a shipped file by the same name (a path that exists wins).
"""

from __future__ import annotations

import argparse
import os
import shutil

from rllib_privacy.cli.common import EXIT_OK, shipped_configs, shipped_names_hint
from rllib_privacy.errors import PrivacyConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``rllib-privacy configs``."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="list the shipped experiment files")
    copy = actions.add_parser("copy", help="copy a shipped experiment file to edit it")
    copy.add_argument("name", help="its name, e.g. ldp_a3c (see `rllib-privacy configs list`)")
    copy.add_argument(
        "dest", nargs="?", default=".", help="a folder or a file name (default: this folder)"
    )
    copy.add_argument("--force", action="store_true", help="replace an existing file")


def run(args: argparse.Namespace) -> int:
    """List or copy the shipped experiment files (``args.action``: list or copy).

    Raises:
        PrivacyConfigError: An unknown name, or a destination that exists (without
            ``--force``) or cannot be written; exit code 2.
    """
    if args.action == "list":
        for name, path in shipped_configs().items():
            print(f"{name:32s} {_description(path)}")
        return EXIT_OK
    source = shipped_configs().get(args.name)
    if source is None:
        raise PrivacyConfigError(
            f"configs copy: {args.name!r} is not a shipped experiment file"
            f"{shipped_names_hint(args.name)}"
        )
    dest = os.path.join(args.dest, source.name) if os.path.isdir(args.dest) else args.dest
    if os.path.exists(dest) and not args.force:
        raise PrivacyConfigError(
            f"configs copy: {dest} exists; pass --force to replace it, or another DEST"
        )
    try:
        shutil.copyfile(source, dest)
    except OSError as e:
        raise PrivacyConfigError(f"configs copy: cannot write {dest}: {e.strerror}") from None
    print(f"copied {args.name} to {dest}; run it with: rllib train -f {dest}")
    return EXIT_OK


def _description(path: os.PathLike[str]) -> str:
    """The file's first comment line (the shipped files start with one)."""
    with open(path, encoding="utf-8") as f:
        first = f.readline().strip()
    return first.lstrip("#").strip() if first.startswith("#") else ""
