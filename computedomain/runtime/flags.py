"""Command-line flags that each have an environment-variable twin (upstream's convention).

Each program declares its settings as a tuple of :class:`Option` (flag, env var, type, default,
required, help) and parses them with :class:`FlagSet`; its ``main`` turns the result into the
program's frozen ``Config``. Precedence: a flag on the command line, else its environment
variable, else the default. A required setting that is missing, or a value that does not parse,
exits with status 2 and a message naming both the flag and the variable.

The declarations are plain data (:attr:`FlagSet.options`, :meth:`FlagSet.describe`) so the
configuration reference can be generated from them and checked against the docs.

``cd-imex-daemon check`` parses its settings here once per probe, a fresh process every second
per daemon pod while a domain forms, so start-up is its cost: :class:`Option` is a plain frozen
class rather than attrs (importing attrs would cost that process more than the rest of it), and
this module imports neither argparse nor ``re`` nor ``typing`` at load (together 15-20 ms of the
probe's CPU). A command line made only of ``--flag value`` and ``--flag=value`` items that name
declared options exactly (the probe's ``--v N``) is read directly; anything else (help,
abbreviations, boolean flags, positionals, values that look like flags) goes to argparse, whose
parser is built then, with its full rules and messages. Both readers give the same result
(a property test), and a usage error always prints argparse's usage.

Value types: :func:`string`, :func:`integer`, :func:`number`, :func:`boolean` (``true/false/1/0``,
case-insensitive; a bare ``--flag`` means true), :func:`duration` (Go syntax ``300ms``, ``15s``,
``1h30m``; a bare number is seconds), :func:`string_list` (comma-separated).
"""

from __future__ import annotations

import os
import sys
import types

TYPE_CHECKING = False  # typing's constant without importing typing
if TYPE_CHECKING:  # see the module docstring: none of these is imported at run time
    import argparse
    import re
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any, NoReturn

    Parser = Callable[[str], Any]

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_DURATION_UNITS |= {"m": 60.0, "h": 3600.0}
_DURATION_PART: list[re.Pattern[str]] = []  # compiled on first use


class Values(types.SimpleNamespace):
    """What :meth:`FlagSet.parse` resolved: one attribute per option, named by its ``dest``."""


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
    if not _DURATION_PART:
        import re  # noqa: PLC0415 -- see the module docstring

        _DURATION_PART.append(re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)"))
    total, pos = 0.0, 0
    for match in _DURATION_PART[0].finditer(body):
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


def _help_width() -> int:
    """What argparse computes by default (``shutil.get_terminal_size().columns - 2``), with
    shutil's rules but not its import (3 ms, with bz2 and lzma, of every probe process):
    ``$COLUMNS`` when positive, else the width of the terminal on stdout, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns if columns > 0 else 80) - 2


_FORMATTER: list[type[argparse.HelpFormatter]] = []  # made on first use, once per process


def _formatter() -> type[argparse.HelpFormatter]:
    """argparse's formatter with the terminal's width looked up once per process: argparse
    makes a formatter for every ``add_argument`` (to check its metavar), and each one asked the
    terminal for its size (a hollow-node process builds a parser per simulated daemon)."""
    if not _FORMATTER:
        import argparse  # noqa: PLC0415 -- see the module docstring

        width = _help_width()

        class HelpFormatter(argparse.HelpFormatter):
            def __init__(self, prog: str) -> None:
                super().__init__(prog, width=width)

        _FORMATTER.append(HelpFormatter)
    return _FORMATTER[0]


class Option:
    """One setting: ``--flag`` on the command line or ``ENV`` in the environment.

    Immutable, equal and hashed by value (what ``attrs.frozen`` gave it; see the module docstring
    for why it is hand-written). Raises ValueError for a malformed flag or variable name.
    """

    __slots__ = ("default", "env", "flag", "help", "metavar", "required", "type")
    _FIELDS = ("flag", "env", "type", "default", "required", "help", "metavar")

    flag: str
    env: str
    type: Parser
    default: Any
    required: bool
    help: str
    metavar: str | None

    def __init__(
        self,
        flag: str,
        env: str,
        type: Parser = string,
        *,
        default: Any = None,
        required: bool = False,
        help: str = "",
        metavar: str | None = None,
    ) -> None:
        if not flag.startswith("--"):
            msg = f"flag {flag!r} must start with --"
            raise ValueError(msg)
        if not env or not env.replace("_", "").isalnum() or not env.isupper():
            msg = f"environment variable {env!r} for {flag} must be UPPER_SNAKE_CASE"
            raise ValueError(msg)
        values = (flag, env, type, default, required, help, metavar)
        for name, value in zip(self._FIELDS, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        msg = f"Option is immutable: cannot set {name!r}"
        raise AttributeError(msg)

    def __delattr__(self, name: str) -> NoReturn:
        msg = f"Option is immutable: cannot delete {name!r}"
        raise AttributeError(msg)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __getstate__(self) -> tuple[Any, ...]:  # copy and pickle, as with attrs
        return self._values()

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(self._FIELDS, state, strict=True):
            object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Option) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"Option({fields})"

    @property
    def dest(self) -> str:
        """The attribute name in the parsed result (``--kube-api-qps`` → ``kube_api_qps``)."""
        return self.flag[2:].replace("-", "_")

    @property
    def names(self) -> str:
        return f"{self.flag} (env {self.env})"


def _env_counts(option: Option, value: str | None) -> bool:
    """Whether an environment value sets ``option``, as upstream's flag library decides: a
    string setting is set by a present variable even when empty (``METRICS_PATH=""`` turns
    metrics off), any other type ignores an empty value."""
    if value is None:
        return False
    return value != "" or option.type is string


class FlagSet:
    """Parses options from argv and the environment; see the module docstring."""

    def __init__(self, prog: str, options: Iterable[Option], *, description: str = "") -> None:
        self.prog = prog
        self.options: tuple[Option, ...] = tuple(options)
        seen: set[str] = set()
        for option in self.options:
            for name in (option.flag, option.env, option.dest):
                if name in seen:
                    msg = f"{prog}: {name!r} is declared twice"
                    raise ValueError(msg)
                seen.add(name)
        self._description = description
        self._parser: argparse.ArgumentParser | None = None
        self._by_flag = {option.flag: option for option in self.options}

    def _argparser(self) -> argparse.ArgumentParser:
        """The argparse parser, built on first use (see the module docstring)."""
        if self._parser is not None:
            return self._parser
        import argparse  # noqa: PLC0415 -- see the module docstring

        parser = argparse.ArgumentParser(
            prog=self.prog, description=self._description, formatter_class=_formatter()
        )
        for option in self.options:
            metavar = option.metavar or option.dest.upper()
            if option.type is boolean:  # Go style: a bare --flag means true
                parser.add_argument(
                    option.flag, dest=option.dest, default=None, metavar="BOOL",
                    nargs="?", const="true", help=self._help(option),
                )  # fmt: skip
            else:
                parser.add_argument(
                    option.flag, dest=option.dest, default=None, metavar=metavar,
                    help=self._help(option),
                )  # fmt: skip
        self._parser = parser
        return parser

    def parse(
        self, argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None
    ) -> Values:
        """Resolve every option (flag > env > default). Exits with status 2 on bad input."""
        environ = os.environ if env is None else env
        args = sys.argv[1:] if argv is None else list(argv)
        flags = self.read_simple(args)
        if flags is None:
            raw = self._argparser().parse_args(args)
            flags = {o.dest: getattr(raw, o.dest) for o in self.options}
        result = Values()
        missing: list[str] = []
        for option in self.options:
            given: str | None = flags.get(option.dest)
            source = f"flag {option.flag}"
            if given is None and _env_counts(option, environ.get(option.env)):
                given, source = environ[option.env], f"environment variable {option.env}"
            if given is None or (option.required and given == ""):
                if option.required:
                    missing.append(option.names)
                setattr(result, option.dest, option.default)
                continue
            try:
                setattr(result, option.dest, option.type(given))
            except (ValueError, TypeError) as exc:
                self.fail(f"invalid value for {source}: {exc}")
        if missing:
            self.fail("missing required setting(s): " + ", ".join(missing))
        return result

    def read_simple(self, args: Sequence[str]) -> dict[str, str] | None:
        """The flag values of a command line made only of ``--flag value`` and
        ``--flag=value`` items naming declared, non-boolean options exactly (the last of a
        repeated flag wins), by ``dest``; None for any other command line, which argparse then
        reads (see the module docstring). Pure."""
        given: dict[str, str] = {}
        i = 0
        while i < len(args):
            name, eq, value = args[i].partition("=")
            option = self._by_flag.get(name)
            if option is None or option.type is boolean:
                return None
            if not eq:
                if i + 1 == len(args) or args[i + 1].startswith("-"):
                    return None
                i += 1
                value = args[i]
            given[option.dest] = value
            i += 1
        return given

    def fail(self, message: str) -> NoReturn:
        """Print usage and ``message`` to stderr and exit with status 2."""
        self._argparser().error(message)

    def describe(self) -> list[dict[str, Any]]:
        """One row per option: flag, env, type, default, required, help (for generated docs)."""
        return [
            {
                "flag": o.flag,
                "env": o.env,
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
        parts.append(f"[env {option.env}]")
        if option.required:
            parts.append("(required)")
        elif option.default not in (None, "", ()):
            parts.append(f"(default {option.default})")
        return " ".join(parts).replace("%", "%%")
