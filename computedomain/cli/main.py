"""Entry point of the ``computedomain`` command.

A thin dispatcher: each sub-command lives in its own module listed in :data:`COMMAND_MODULES`,
whose ``register(commands)`` adds its parser (groups such as ``sim`` are shared through
:meth:`Commands.group`) and the function that runs it. Only the module of the command being run
is imported: importing them all (the simulation, the Kubernetes client) cost more than a second
of CPU per call, and the tests and the demo call ``sim up`` and ``sim down`` for every cluster.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Final

import computedomain

# Each command (its words) and the module that registers it, in the order of the help.
COMMAND_MODULES: Final = {
    "demo": "computedomain.cli.demo.command",
    "sim apiserver": "computedomain.cli.sim_apiserver",
    "sim up": "computedomain.cli.sim_cluster",
    "sim down": "computedomain.cli.sim_cluster",
    "sim run": "computedomain.cli.sim_host",
    "sim status": "computedomain.cli.sim_host",
    "sim imex-path": "computedomain.cli.sim_imex",
    "sim hollow": "computedomain.cli.sim_hollow",
    "doctor": "computedomain.cli.doctor.command",
}

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


def modules_for(argv: Sequence[str] | None) -> list[str]:
    """The command modules a parser for ``argv`` needs: the one registering the command that
    ``argv`` starts with, or every module (for help, a group alone, or an unknown command, so
    that the usage lists them all)."""
    words = []
    for arg in argv or ():
        if arg.startswith("-"):
            break
        words.append(arg)
    for command, module in COMMAND_MODULES.items():
        parts = command.split()
        if words[: len(parts)] == parts:
            return [module]
    return list(dict.fromkeys(COMMAND_MODULES.values()))


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
