"""The ``computedomain`` dispatcher loads only the module of the command being run, and still
knows every command."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from computedomain.cli import main


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> set[str]:
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                words = f"{prefix} {name}".strip()
                nested = _commands(sub, words)
                found |= nested or {words}
    return found


COMMANDS = main.command_modules()


def test_the_table_names_every_registered_command_and_no_other() -> None:
    assert _commands(main.build_parser()) == set(COMMANDS)


def test_the_simulation_adds_its_commands_through_entry_points() -> None:
    """The product lists only its own commands; the installed simulation adds the others."""
    assert set(main.BUILTIN_COMMANDS) == {"doctor"}
    assert {"demo", "sim up", "sim down", "sim run", "sim apiserver"} <= set(COMMANDS)
    assert all(
        module.startswith("computedomain_sim.")
        for words, module in COMMANDS.items()
        if words not in main.BUILTIN_COMMANDS
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_needs_only_its_own_module(command: str) -> None:
    argv = [*command.split(), "--flag"]
    assert main.modules_for(argv) == [COMMANDS[command]]
    assert _commands(main.build_parser(argv)) >= {command}


@pytest.mark.parametrize("argv", [[], ["sim"], ["--help"], ["sim", "nope"], ["nope"]])
def test_help_a_bare_group_or_an_unknown_command_load_everything(argv: list[str]) -> None:
    assert len(main.modules_for(argv)) == len(set(COMMANDS.values()))


def test_without_other_distributions_only_the_builtin_commands_exist() -> None:
    assert main.modules_for(["demo"], main.BUILTIN_COMMANDS) == list(main.BUILTIN_COMMANDS.values())


def test_sim_up_and_down_do_not_import_the_simulation_or_the_client() -> None:
    code = (
        "import json, sys\n"
        "from computedomain.cli import main\n"
        "for argv in (['sim', 'up'], ['sim', 'down']):\n"
        "    main.build_parser(argv).parse_args([*argv, '--state-dir=/nonexistent'])\n"
        "heavy = ('kubernetes', 'aiohttp', 'computedomain_sim.cluster.cluster')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
