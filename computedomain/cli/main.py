"""Entry point of the ``computedomain`` command.

Sub-commands are wired here; each lives in a sibling module.
"""

from __future__ import annotations

import argparse
import sys

import computedomain


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser; each sub-command module adds its own sub-parser."""
    parser = argparse.ArgumentParser(prog="computedomain", description=__doc__)
    parser.add_argument("--version", action="version", version=computedomain.__version__)
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen sub-command; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
