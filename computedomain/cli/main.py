"""Entry point of the ``computedomain`` command.

A thin dispatcher: each sub-command lives in its own module listed in :data:`COMMAND_MODULES`,
whose ``register(commands)`` adds its parser (groups such as ``sim`` are shared through
:meth:`Commands.group`) and the function that runs it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

import computedomain

COMMAND_MODULES = (
    "computedomain.cli.demo.command",
    "computedomain.cli.sim_apiserver",
    "computedomain.cli.sim_cluster",
    "computedomain.cli.sim_imex",
    "computedomain.cli.doctor.command",
)

Run = Callable[[argparse.Namespace], int]


class Commands:
    """A level of sub-commands: ``add`` a command, or get a nested ``group``."""

    def __init__(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        self._subparsers = subparsers
        self._groups: dict[str, Commands] = {}

    def add(self, name: str, help_text: str, run: Run) -> argparse.ArgumentParser:
        parser = self._subparsers.add_parser(name, help=help_text, description=help_text)
        parser.set_defaults(run=run)
        return parser

    def group(self, name: str, help_text: str) -> Commands:
        """The nested command group ``name`` (created on first use)."""
        if name not in self._groups:
            parser = self._subparsers.add_parser(name, help=help_text, description=help_text)
            parser.set_defaults(run=lambda _args, p=parser: _usage(p))
            sub = parser.add_subparsers(dest=f"{name}_command", metavar="COMMAND")
            self._groups[name] = Commands(sub)
        return self._groups[name]


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every registered sub-command."""
    parser = argparse.ArgumentParser(prog="computedomain", description=__doc__)
    parser.add_argument("--version", action="version", version=computedomain.__version__)
    parser.set_defaults(run=lambda _args: _usage(parser))
    commands = Commands(parser.add_subparsers(dest="command", metavar="COMMAND"))
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen sub-command; returns the process exit code."""
    args = build_parser().parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
