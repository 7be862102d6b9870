"""The configuration reference, generated from the programs' own flag declarations.

``python -m computedomain.cli.docs`` (or ``make docs``) writes ``docs/configuration.md``;
``--check`` exits 1 when the file differs from what the declarations give (the test suite does
the same, so a flag added without regenerating the reference fails the build).

Sources: each program's :class:`~computedomain.runtime.flags.FlagSet`, its
``config.flag_set()`` (every flag and variable of each setting, upstream's other names
included), and the ``computedomain`` command's own argparse parser. A program whose package
is not installed yet is listed as such rather than skipped silently; one whose declarations
fail to import raises.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from computedomain.runtime import flags

REPOSITORY: Final = Path(__file__).resolve().parents[2]
REFERENCE: Final = REPOSITORY / "docs" / "configuration.md"


@attrs.frozen
class Row:
    flags: tuple[str, ...]
    envs: tuple[str, ...]
    default: str
    help: str


@attrs.frozen
class Program:
    name: str
    upstream_name: str
    module: str  # where its declarations live
    summary: str
    rows: Callable[[Any], list[Row]]


def go_duration(seconds: float) -> str:
    """``15s``, ``250ms``, ``10m``, ``1h30m`` from seconds. Pure."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{int(hours)}h" if hours else ""
    text += f"{int(minutes)}m" if minutes else ""
    text += f"{secs:g}s" if secs else ""
    return text


def _default(row: dict[str, Any]) -> str:
    value = row["default"]
    if row["required"]:
        return "required"
    if value is None or value in ("", ()):
        return "(empty)"
    if row["type"] == "duration" and isinstance(value, (int, float)):
        return go_duration(float(value))
    if row["type"] == "boolean":
        return str(value).lower()
    return str(value)


def rows_of(flag_set: flags.FlagSet) -> list[Row]:
    """One row per declared option, with all its flags and variables."""
    return [
        Row(
            flags=tuple(row["flags"]),
            envs=tuple(row["envs"]),
            default=_default(row),
            help=str(row["help"]),
        )
        for row in flag_set.describe()
    ]


def _rows(module: Any) -> list[Row]:
    return rows_of(module.flag_set())


PROGRAMS: Final = (
    Program(
        "cd-controller",
        "compute-domain-controller",
        "computedomain.controller.config",
        "One per cluster (Deployment, leader-elected when replicated).",
        _rows,
    ),
    Program(
        "cd-kubelet-plugin",
        "compute-domain-kubelet-plugin",
        "computedomain.kubeletplugin.config",
        "One per GPU node (DaemonSet).",
        _rows,
    ),
    Program(
        "cd-imex-daemon",
        "compute-domain-daemon",
        "computedomain.daemon.config",
        "One per node per ComputeDomain (the controller's DaemonSet); sub-commands `run` and "
        "`check`. The controller sets these variables in the DaemonSet it renders; the kubelet "
        "plugin injects the domain's identity through CDI.",
        _rows,
    ),
)


def _cell(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(rows: Sequence[Row]) -> list[str]:
    lines = ["| flag | environment variable | default | meaning |", "|---|---|---|---|"]
    for row in rows:
        default = row.default if row.default in ("required", "(empty)") else f"`{row.default}`"
        lines.append(
            f"| {_cell(row.flags)} | {_cell(row.envs)} | {_escape(default)} | {_escape(row.help)} |"
        )
    return lines


def _program_section(program: Program) -> list[str]:
    lines = [f"## `{program.name}`", ""]
    lines.append(
        f"{program.summary} Upstream's name `{program.upstream_name}` runs the same program "
        "(`bin/`)."
    )
    lines.append("")
    if importlib.util.find_spec(program.module) is None:
        return [*lines, f"Not in this tree yet (`{program.module}` is missing).", ""]
    rows = program.rows(importlib.import_module(program.module))
    return [*lines, *_table(rows), ""]


def _subcommands(
    parser: argparse.ArgumentParser, prefix: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.extend(_subcommands(sub, f"{prefix} {name}"))
    return found or [(prefix, parser)]


def _cli_section() -> list[str]:
    from computedomain.cli import main  # noqa: PLC0415 - the dispatcher imports this package

    lines = [
        "## `computedomain`",
        "",
        "The command-line tool (`demo`, `sim`, `doctor`); its options have no environment "
        "twins except where a row says so.",
        "",
    ]
    for command, parser in _subcommands(main.build_parser(), "computedomain"):
        if command == "computedomain":
            continue
        lines.extend([f"### `{command}`", "", "| option | default | meaning |", "|---|---|---|"])
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            names = action.option_strings or [str(action.metavar or action.dest)]
            lines.append(
                f"| {_cell(names)} | {_escape(_cli_default(action))} | "
                f"{_escape(action.help or '')} |"
            )
        lines.append("")
    return lines


def _cli_default(action: argparse.Action) -> str:
    default = action.default
    if action.required:
        return "required"
    if action.nargs == 0:
        return "off (a switch)"
    if default is None or (isinstance(default, (str, list)) and not default):
        return "(empty)"
    if isinstance(default, Path) and default.is_absolute():
        with contextlib.suppress(ValueError):  # a file of this checkout: say where in it
            default = default.relative_to(REPOSITORY)
    return f"`{default}`"


def render() -> str:
    """The whole reference. Pure apart from importing the programs' declarations."""
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `python -m computedomain.cli.docs` (`make docs`) from the programs' "
        "own declarations. Do not edit by hand: tests/unit/test_docs_configuration.py fails "
        "when this file is stale. -->",
        "",
        "Every setting of the three programs is a command-line flag with an environment "
        "variable twin; a flag beats its variable, which beats the default. Upstream's flags "
        "and variables keep their names and defaults; ours are marked in their description. "
        "Durations use Go syntax (`300ms`, `15s`, `2m`, `1h30m`). Every default path is the "
        "production path and every path is overridable.",
        "",
        "A value that does not parse, a required setting that is missing, or a value the "
        "program refuses stops it at start with exit status 2, its usage line and a message "
        "naming the setting as `--flag/VARIABLE` and the reason, the same in all three "
        "programs. `--help` and `--version` print and exit 0.",
        "",
    ]
    for program in PROGRAMS:
        lines.extend(_program_section(program))
    lines.extend(_cli_section())
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m computedomain.cli.docs", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    parser.add_argument("--output", type=Path, default=REFERENCE, help="where to write")
    args = parser.parse_args(argv)
    text = render()
    current = args.output.read_text() if args.output.exists() else ""
    if args.check:
        if current != text:
            print(f"{args.output} is stale: run make docs", file=sys.stderr)
            return 1
        return 0
    if current != text:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
