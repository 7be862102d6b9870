"""Structured logs: one line per event, ``time=... level=... logger=... msg="..." key=value``.

Every program calls :func:`setup` once from its wiring (verbosity from ``-v``/``LOG_VERBOSITY``,
klog-style 0-10) and every module logs through :func:`get_logger`, whose methods take fields as
keyword arguments::

    log = logs.get_logger(__name__)
    log.info("reconciled", key="ns/cd", actions=3)

Verbosity maps onto levels: 0-3 → INFO, 4-5 → DEBUG, 6+ → TRACE (5). :func:`v` tells whether a
klog-style ``V(n)`` message would be shown, for chatty loops that want to skip formatting.
Values are quoted when they contain spaces, quotes or ``=``, so each line stays machine-parsable.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, MutableMapping
from typing import IO, Any

TRACE = 5
logging.addLevelName(TRACE, "TRACE")

_FIELDS_ATTR = "cd_fields"
_RESERVED = frozenset({"exc_info", "stack_info", "stacklevel", "extra"})
_state = {"verbosity": 0}


def level_for(verbosity: int) -> int:
    """The stdlib logging level for a klog verbosity. Pure."""
    if verbosity >= 6:
        return TRACE
    if verbosity >= 4:
        return logging.DEBUG
    return logging.INFO


def v(level: int) -> bool:
    """Whether klog-style ``V(level)`` messages are enabled under the configured verbosity."""
    return _state["verbosity"] >= level


def format_value(value: object) -> str:
    """Render one field value: bare when safe, otherwise double-quoted with escapes. Pure."""
    text = value if isinstance(value, str) else repr(value) if value is None else str(value)
    if text and not any(c in text for c in ' "=\n\t\\') and text.isprintable():
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped.replace(chr(9), chr(92) + "t")}"'


class KeyValueFormatter(logging.Formatter):
    """Formats a record as ``time=... level=... logger=... msg="..." k=v ...`` on one line."""

    def __init__(self, component: str = "") -> None:
        super().__init__()
        self.component = component

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        parts = [
            f"time={stamp}.{int(record.msecs):03d}Z",
            f"level={record.levelname.lower()}",
        ]
        if self.component:
            parts.append(f"component={format_value(self.component)}")
        parts.append(f"logger={format_value(record.name)}")
        parts.append(f"msg={format_value(record.getMessage())}")
        fields: Mapping[str, Any] = getattr(record, _FIELDS_ATTR, None) or {}
        parts.extend(f"{k}={format_value(val)}" for k, val in fields.items())
        if record.exc_info:
            parts.append(f"error={format_value(self.formatException(record.exc_info))}")
        return " ".join(parts)


class FieldLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger whose methods accept fields as keyword arguments (``log.info("x", key=k)``)."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, Any]:
        fields = {k: kwargs.pop(k) for k in list(kwargs) if k not in _RESERVED}
        if self.extra:
            fields = {**self.extra, **fields}
        extra = dict(kwargs.get("extra") or {})
        extra[_FIELDS_ATTR] = fields
        kwargs["extra"] = extra
        return msg, kwargs

    def bind(self, **fields: Any) -> FieldLogger:
        """A logger that adds ``fields`` to every line (e.g. the object key being handled)."""
        return FieldLogger(self.logger, {**(self.extra or {}), **fields})

    def trace(self, msg: str, **fields: Any) -> None:
        self.log(TRACE, msg, **fields)


def get_logger(name: str, **fields: Any) -> FieldLogger:
    """The field-aware logger for a module (``__name__``), optionally with bound fields."""
    return FieldLogger(logging.getLogger(name), fields)


def setup(verbosity: int, component: str, *, stream: IO[str] | None = None) -> None:
    """Configure the root logger once for a program: key=value lines on stderr.

    Idempotent: a second call replaces the handler this function installed earlier.
    """
    if not 0 <= verbosity <= 10:
        msg = f"log verbosity must be between 0 and 10 (got {verbosity})"
        raise ValueError(msg)
    _state["verbosity"] = verbosity
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_cd_installed", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(KeyValueFormatter(component))
    handler._cd_installed = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level_for(verbosity))
    # aiohttp's access log, the kubernetes client and grpc (a DEBUG line per call: "Loaded
    # running loop") are noisy below WARNING unless asked.
    quiet = logging.WARNING if verbosity < 6 else TRACE
    for name in ("aiohttp.access", "kubernetes", "urllib3", "grpc"):
        logging.getLogger(name).setLevel(quiet)
