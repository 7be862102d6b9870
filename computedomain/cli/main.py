"""Entry point of the ``computedomain`` command.

Sub-commands are wired here; each lives in a sibling module.
"""

from __future__ import annotations

import argparse
import sys

import computedomain
from computedomain.cli import sim_imex


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser; each sub-command module adds its own sub-parser."""
    parser = argparse.ArgumentParser(prog="computedomain", description=__doc__)
    parser.add_argument("--version", action="version", version=computedomain.__version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    sim = commands.add_parser("sim", help="the embedded simulated cluster")
    sim_commands = sim.add_subparsers(dest="sim_command", metavar="SIM_COMMAND", required=True)
    sim_imex.register(sim_commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen sub-command; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    handler = getattr(args, "handler", None)
    return int(handler(args)) if handler is not None else 0


if __name__ == "__main__":
    sys.exit(main())
