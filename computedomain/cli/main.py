"""Entry point of the ``computedomain`` command.

A thin dispatcher: each sub-command lives in its own module, whose ``register(commands)`` adds
its parser (groups such as ``sim`` are shared through :meth:`Commands.group`) and the function
that runs it. The product's own commands are listed in :data:`BUILTIN_COMMANDS`; other
distributions add theirs through the ``computedomain.commands`` entry-point group (the
simulation's ``demo`` and ``sim ...`` commands come from ``computedomain-sim`` that way), so the
product never imports them. Only the module of the command being run is imported.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import Final

import computedomain

# The product's own commands (their words) and the modules that register them.
BUILTIN_COMMANDS: Final = {
    "doctor": "computedomain.cli.doctor.command",
}

# Entry points of this group name a command by its words joined with dots ("sim.up") and point
# at the module that registers it.
ENTRY_POINT_GROUP: Final = "computedomain.commands"


def command_modules() -> dict[str, str]:
    """Every command this installation has (words -> module), in the order of the help: the
    installed distributions' commands by name, then the built-in ones."""
    found = {
        entry.name.replace(".", " "): entry.value
        for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    }
    return {**found, **BUILTIN_COMMANDS}


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


def modules_for(argv: Sequence[str] | None, commands: Mapping[str, str] | None = None) -> list[str]:
    """The command modules a parser for ``argv`` needs: the one registering the command that
    ``argv`` starts with, or every module (for help, a group alone, or an unknown command, so
    that the usage lists them all)."""
    if commands is None:
        commands = command_modules()
    words = []
    for arg in argv or ():
        if arg.startswith("-"):
            break
        words.append(arg)
    for command, module in commands.items():
        parts = command.split()
        if words[: len(parts)] == parts:
            return [module]
    return list(dict.fromkeys(commands.values()))


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Return the top-level parser with the sub-commands ``argv`` may need (all by default)."""
    parser = argparse.ArgumentParser(prog="computedomain", description=__doc__)
    parser.add_argument("--version", action="version", version=computedomain.__version__)
    parser.set_defaults(run=lambda _args: _usage(parser))
    commands = Commands(parser.add_subparsers(dest="command", metavar="COMMAND"))
    for module in modules_for(argv):
        importlib.import_module(module).register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen sub-command; returns the process exit code."""
    if argv is None:
        argv = sys.argv[1:]
    args = build_parser(argv).parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
