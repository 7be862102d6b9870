"""Command-line flags that each have an environment-variable twin (upstream's convention).

Each program declares its settings as a tuple of :class:`Option` (flag, env var, type, default,
required, help) and parses them with :class:`FlagSet`; its ``main`` turns the result into the
program's frozen ``Config``. Precedence: a flag on the command line, else its environment
variable, else the default. A required setting that is missing, or a value that does not parse,
exits with status 2 and a message naming both the flag and the variable.

The declarations are plain data (:attr:`FlagSet.options`, :meth:`FlagSet.describe`) so the
configuration reference can be generated from them and checked against the docs.

Value types: :func:`string`, :func:`integer`, :func:`number`, :func:`boolean` (``true/false/1/0``,
case-insensitive; a bare ``--flag`` means true), :func:`duration` (Go syntax ``300ms``, ``15s``,
``1h30m``; a bare number is seconds), :func:`string_list` (comma-separated).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn

import attrs

Parser = Callable[[str], Any]

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_DURATION_UNITS |= {"m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


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


@attrs.frozen
class Option:
    """One setting: ``--flag`` on the command line or ``ENV`` in the environment."""

    flag: str
    env: str
    type: Parser = string
    default: Any = None
    required: bool = False
    help: str = ""
    metavar: str | None = None

    def __attrs_post_init__(self) -> None:
        if not self.flag.startswith("--"):
            msg = f"flag {self.flag!r} must start with --"
            raise ValueError(msg)
        if not self.env or not self.env.replace("_", "").isalnum() or not self.env.isupper():
            msg = f"environment variable {self.env!r} for {self.flag} must be UPPER_SNAKE_CASE"
            raise ValueError(msg)

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
        self._parser = argparse.ArgumentParser(prog=prog, description=description)
        for option in self.options:
            metavar = option.metavar or option.dest.upper()
            if option.type is boolean:  # Go style: a bare --flag means true
                self._parser.add_argument(
                    option.flag, dest=option.dest, default=None, metavar="BOOL",
                    nargs="?", const="true", help=self._help(option),
                )  # fmt: skip
            else:
                self._parser.add_argument(
                    option.flag, dest=option.dest, default=None, metavar=metavar,
                    help=self._help(option),
                )  # fmt: skip

    def parse(
        self, argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None
    ) -> argparse.Namespace:
        """Resolve every option (flag > env > default). Exits with status 2 on bad input."""
        environ = os.environ if env is None else env
        raw = self._parser.parse_args(argv)
        result = argparse.Namespace()
        missing: list[str] = []
        for option in self.options:
            given: str | None = getattr(raw, option.dest)
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

    def fail(self, message: str) -> NoReturn:
        """Print usage and ``message`` to stderr and exit with status 2."""
        self._parser.error(message)

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
