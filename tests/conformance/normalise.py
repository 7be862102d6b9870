"""Normalisation of a step's result: the values either API server generates differently on
every run (uids, resourceVersions, timestamps and ages, generated name suffixes, allocated IPs
and node ports, the server's address) become placeholders, so that two results compare equal
exactly when the servers behaved the same; managedFields entries, which servers order by their
time, are put in the order of their manager. Structured output (``-o json``/``-o yaml``, the
Python client's objects) is compared as data; text keeps its words and loses only column
padding, which follows the width of the replaced values."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import yaml

_SERVER = re.compile(r"https?://(?:127\.0\.0\.1|localhost|\[::1\]):\d+")
_UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_TIMES = (
    re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"),
    # Go's time.Time.String() (helm list and status), and its ANSIC form (helm's LAST DEPLOYED)
    re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [+-]\d{4} [A-Z]+"),
    re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"),
)
_IP = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_RV_IN_TEXT = re.compile(r"((?:resourceVersion|resource version)\W{1,4})\d+")
_TOO_OLD = re.compile(r"(too old resource version: )\d+ \(\d+\)")
_AGE = re.compile(r"(?<=\s)(?:\d+(?:\.\d+)?[smhd])+(?=\s|$)")
_PADDING = re.compile(r" {2,}")

PLACEHOLDER_KEYS = {
    "resourceVersion": "<rv>",
    "uid": "<uid>",
    "nodePort": "<port>",
    "continue": "<continue>",
}


def text(value: str, generated: Sequence[str] = ()) -> str:
    """A string with the generated values replaced."""
    value = _SERVER.sub("<server>", value)
    value = _UID.sub("<uid>", value)
    for pattern in _TIMES:
        value = pattern.sub("<time>", value)
    value = _IP.sub("<ip>", value)
    value = _TOO_OLD.sub(r"\1<rv> (<rv>)", value)
    value = _RV_IN_TEXT.sub(r"\1<rv>", value)
    for prefix in generated:
        value = re.sub(re.escape(prefix) + r"[a-z0-9]{5}\b", prefix + "<gen>", value)
    return value


def table(value: str, generated: Sequence[str] = ()) -> str:
    """Command output meant for people: ``text``, ages replaced and column padding collapsed."""
    lines = []
    for line in text(value, generated).splitlines():
        aged = _AGE.sub("<age>", " " + line)[1:]
        lines.append(_PADDING.sub("  ", aged).rstrip())
    return "\n".join(lines)


def data(value: Any, generated: Sequence[str] = (), drop: Sequence[tuple[str, ...]] = ()) -> Any:
    """Structured output with the generated values replaced and the ``drop`` paths (keys
    from any object carrying them, e.g. ``("metadata", "annotations", "x")``) left out."""
    out = _data(value, generated, set(drop), ())
    return {} if out is _GONE else out


_GONE = object()  # a map left empty by ``drop``: left out too


def _data(
    value: Any, generated: Sequence[str], drop: set[tuple[str, ...]], at: tuple[str, ...]
) -> Any:
    if isinstance(value, dict):
        out = {}
        dropped = False
        for key, item in value.items():
            path = (*at, key)
            if any(path[-len(p) :] == p for p in drop):
                dropped = True
                continue
            if key in PLACEHOLDER_KEYS and item not in (None, "", 0):
                out[key] = PLACEHOLDER_KEYS[key]
                continue
            kept = _data(item, generated, drop, path)
            if key == "managedFields" and isinstance(kept, list):
                kept = sorted(kept, key=_entry_order)  # servers order entries by their time
            if kept is not _GONE:
                out[key] = kept
        return _GONE if dropped and not out else out
    if isinstance(value, list):
        return [_data(item, generated, drop, at) for item in value]
    if isinstance(value, str):
        return text(value, generated)
    return value


def _entry_order(entry: Any) -> tuple[str, ...]:
    if not isinstance(entry, dict):
        return (str(entry),)
    return tuple(str(entry.get(k, "")) for k in ("manager", "operation", "subresource"))


def output(
    value: str, args: Sequence[str], generated: Sequence[str], drop: Sequence[tuple[str, ...]]
) -> Any:
    """A command's standard output: data when it printed JSON or YAML (``-o json|yaml``),
    else a table or message."""
    wants = _output_format(args)
    if wants in ("json", "yaml") and value.strip():
        try:
            parsed = json.loads(value) if wants == "json" else yaml.safe_load(value)
        except (ValueError, yaml.YAMLError):
            return table(value, generated)
        return data(parsed, generated, drop)
    if wants is not None and wants.startswith("jsonpath"):
        return text(value, generated)
    return table(value, generated)


def _output_format(args: Sequence[str]) -> str | None:
    for index, arg in enumerate(args):
        if arg in ("-o", "--output") and index + 1 < len(args):
            return args[index + 1]
        for flag in ("-o", "--output="):
            if arg.startswith(flag) and len(arg) > len(flag):
                return arg[len(flag) :].lstrip("=")
    return None
