"""Command-line flags that each have an environment-variable twin (upstream's convention).

The three programs declare their settings the same way: a tuple of :class:`Option` (flag, env
var, value type, default, required, help, and upstream's other names for it) in the program's
``config`` module, read by one :class:`FlagSet`. Precedence: a flag on the command line, else
its environment variable (the first of its names that is set), else the default.

:meth:`FlagSet.parse` is pure over ``argv`` and an environment mapping and raises
:class:`~computedomain.api.errors.ConfigError` naming the setting as ``--flag/ENV`` and the
reason; :meth:`FlagSet.load` is what a program's ``main`` calls: it parses, lets the program
check and resolve the values, and turns any ConfigError into argparse's usage message and exit
status 2, the same for every program. ``--help`` and ``--version`` print and exit 0. A program
with sub-commands (``cd-imex-daemon run|check``) declares them here too; flags may come before
or after the sub-command.

The declarations are plain data (:meth:`FlagSet.describe`), so the configuration reference
(``docs/configuration.md``) is generated from them and a test keeps it current.

Value types: :func:`string`, :func:`integer`, :func:`number`, :func:`boolean` (``true/false/1/0``,
case-insensitive; a bare ``--flag`` means true), :func:`duration` (Go syntax ``300ms``, ``15s``,
``1h30m``; a bare number is seconds), :func:`string_list` (comma-separated).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

import attrs

from computedomain.api.errors import ConfigError

T = TypeVar("T")
Parser = Callable[[str], Any]

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_DURATION_UNITS |= {"m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


class Values(types.SimpleNamespace):
    """What :meth:`FlagSet.parse` resolved: one attribute per option, named by its ``dest``,
    and ``command`` for a program with sub-commands."""


def string(value: str) -> str:
    return value


def integer(value: str) -> int:
    try:
        return int(value.strip(), 10)
    except ValueError:
        msg = f"{value!r} is not an integer"
        raise ValueError(msg) from None


def number(value: str) -> float:
    try:
        return float(value.strip())
    except ValueError:
        msg = f"{value!r} is not a number"
        raise ValueError(msg) from None


def boolean(value: str) -> bool:
    """``true``/``false``/``1``/``0`` (also ``t``/``f``/``yes``/``no``), case-insensitive."""
    text = value.strip().lower()
    if text in {"true", "t", "1", "yes"}:
        return True
    if text in {"false", "f", "0", "no"}:
        return False
    msg = f"{value!r} is not a boolean (use true/false/1/0)"
    raise ValueError(msg)


def duration(value: str) -> float:
    """Seconds from a Go duration (``1h30m``, ``15s``, ``250ms``, ``-1s``) or a bare number."""
    text = value.strip()
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    try:
        return sign * float(body)  # a bare number: seconds
    except ValueError:
        pass
    total, pos = 0.0, 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if not body or pos != len(body):
        msg = f"{value!r} is not a duration (e.g. 300ms, 15s, 2m, 1h30m)"
        raise ValueError(msg)
    return sign * total


def string_list(value: str) -> tuple[str, ...]:
    """Comma-separated values, blanks dropped."""
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _check_flag(_: Option, __: attrs.Attribute[Any], value: str) -> None:
    if not value.startswith("--"):
        msg = f"flag {value!r} must start with --"
        raise ValueError(msg)


def _check_env(option: Option, _: attrs.Attribute[Any], value: str) -> None:
    if not _ENV_NAME.fullmatch(value):
        msg = f"environment variable {value!r} for {option.flag} must be UPPER_SNAKE_CASE"
        raise ValueError(msg)


def _check_aliases(_: Option, __: attrs.Attribute[Any], value: tuple[str, ...]) -> None:
    for name in value:
        if not name.startswith("-"):
            msg = f"flag alias {name!r} must start with -"
            raise ValueError(msg)


def _check_env_aliases(
    option: Option, attribute: attrs.Attribute[Any], value: tuple[str, ...]
) -> None:
    for name in value:
        _check_env(option, attribute, name)


@attrs.frozen
class Option:
    """One setting: ``--flag`` on the command line or ``ENV`` in the environment.

    ``aliases`` are more flags for it (``-v`` for ``--v``, upstream's old names) and
    ``env_aliases`` more variables, read when ``env`` is not set. ``dest`` names it in the
    parsed :class:`Values` (by default the flag without ``--``, dashes as underscores). Raises
    ValueError for a malformed flag or variable name.
    """

    flag: str = attrs.field(validator=_check_flag)
    env: str = attrs.field(validator=_check_env)
    type: Parser = string
    default: Any = attrs.field(default=None, kw_only=True)
    required: bool = attrs.field(default=False, kw_only=True)
    help: str = attrs.field(default="", kw_only=True)
    metavar: str | None = attrs.field(default=None, kw_only=True)
    aliases: tuple[str, ...] = attrs.field(default=(), kw_only=True, validator=_check_aliases)
    env_aliases: tuple[str, ...] = attrs.field(
        default=(), kw_only=True, validator=_check_env_aliases
    )
    dest: str = attrs.field(kw_only=True)

    @dest.default
    def _dest(self) -> str:
        return self.flag[2:].replace("-", "_")

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.flag, *self.aliases)

    @property
    def envs(self) -> tuple[str, ...]:
        return (self.env, *self.env_aliases)

    @property
    def label(self) -> str:
        """How messages name the setting: ``--flag/ENV``."""
        return f"{self.flag}/{self.env}"


def _env_counts(option: Option, value: str | None) -> bool:
    """Whether an environment value sets ``option``, as upstream's flag library decides: a
    string setting is set by a present variable even when empty (``METRICS_PATH=""`` turns
    metrics off), any other type ignores an empty value."""
    if value is None:
        return False
    return value != "" or option.type is string


class FlagSet:
    """Parses options (and a sub-command, if declared) from argv and the environment; see the
    module docstring."""

    def __init__(
        self,
        prog: str,
        options: Iterable[Option],
        *,
        description: str = "",
        version: str | None = None,
        commands: Sequence[str] = (),
    ) -> None:
        self.prog = prog
        self.options: tuple[Option, ...] = tuple(options)
        self.commands = tuple(commands)
        self._by_name: dict[str, Option] = {}
        for option in self.options:
            for name in {*option.flags, *option.envs, option.dest, option.label}:
                if name in self._by_name:
                    msg = f"{prog}: {name!r} is declared twice"
                    raise ValueError(msg)
                self._by_name[name] = option
        self._parser = argparse.ArgumentParser(
            prog=prog, description=description, allow_abbrev=False, exit_on_error=False
        )
        if version is not None:
            self._parser.add_argument("--version", action="version", version=version)
        if self.commands:
            self._parser.add_argument(
                "command", nargs="?", choices=self.commands, metavar=" | ".join(self.commands)
            )
        for option in self.options:
            if option.type is boolean:  # Go style: a bare --flag means true
                self._parser.add_argument(
                    *option.flags, dest=option.dest, default=None, metavar="BOOL",
                    nargs="?", const="true", help=self._help(option),
                )  # fmt: skip
            else:
                self._parser.add_argument(
                    *option.flags, dest=option.dest, default=None,
                    metavar=option.metavar or option.env, help=self._help(option),
                )  # fmt: skip

    def parse(
        self, argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None
    ) -> Values:
        """Resolve every option (flag > env > default). Pure but for ``--help`` and
        ``--version`` (print and exit 0); raises ConfigError naming the setting."""
        environ = os.environ if env is None else env
        args = sys.argv[1:] if argv is None else list(argv)
        try:
            raw, extra = self._parser.parse_known_args(args)
        except argparse.ArgumentError as exc:
            raise ConfigError("", str(exc)) from None
        if extra:
            raise ConfigError("", f"unrecognized arguments: {' '.join(extra)}")
        result = Values()
        if self.commands:
            if raw.command is None:
                raise ConfigError("", f"a sub-command is required: {' | '.join(self.commands)}")
            result.command = raw.command
        missing: list[str] = []
        for option in self.options:
            given: str | None = getattr(raw, option.dest)
            source = f"flag {option.flag}"
            if given is None:
                for name in option.envs:
                    if _env_counts(option, environ.get(name)):
                        given, source = environ[name], f"environment variable {name}"
                        break
            if given is None or (option.required and given == ""):
                if option.required:
                    missing.append(option.label)
                setattr(result, option.dest, option.default)
                continue
            try:
                setattr(result, option.dest, option.type(given))
            except ValueError as exc:
                raise ConfigError(option.label, f"{exc} (from the {source})") from None
        if missing:
            raise ConfigError(
                ", ".join(missing), "is required" if len(missing) == 1 else "are required"
            )
        return result

    def load(
        self,
        resolve: Callable[[Values], T],
        argv: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> T:
        """``resolve(parse(argv, env))``, the program's checks included; any ConfigError
        exits through :meth:`fail` (status 2)."""
        try:
            return resolve(self.parse(argv, env))
        except ConfigError as exc:
            self.fail(exc)

    def message(self, error: ConfigError) -> str:
        """``error`` with its field as the setting's ``--flag/ENV`` when it names one."""
        option = self._by_name.get(error.field)
        if option is None or error.field == option.label:
            return str(error)
        return f"{option.label}: {error.reason}"

    def fail(self, error: ConfigError | str) -> NoReturn:
        """Print the usage and the error to stderr and exit with status 2 (argparse's)."""
        text = self.message(error) if isinstance(error, ConfigError) else error
        self._parser.error(text)

    def describe(self) -> list[dict[str, Any]]:
        """One row per option: flag, flags, env, envs, type, default, required, help (for the
        generated docs)."""
        return [
            {
                "flag": o.flag,
                "flags": o.flags,
                "env": o.env,
                "envs": o.envs,
                "type": getattr(o.type, "__name__", str(o.type)),
                "default": o.default,
                "required": o.required,
                "help": o.help,
            }
            for o in self.options
        ]

    @staticmethod
    def _help(option: Option) -> str:
        parts = [option.help] if option.help else []
        parts.append(f"[env {', '.join(option.envs)}]")
        if option.required:
            parts.append("(required)")
        elif option.default not in (None, "", ()):
            parts.append(f"(default {option.default})")
        return " ".join(parts).replace("%", "%%")
