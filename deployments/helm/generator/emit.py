"""Write a manifest object as the YAML text of a Helm template.

The object is plain JSON data in which some values are replaced by the markers below; each
marker becomes Go-template text at the place it stands, at the indentation it needs. Plain
values are written as YAML (block style, two spaces, list items indented under their key), so a
template renders, with the chart's default values, to the object it came from.

Markers:

* :class:`Expr`: a scalar computed by the template, ``key: {{ expr }}``;
* :class:`Optional`: a key written only when a value is set (``with``/``toYaml``), e.g. a
  nodeSelector, or only when a condition holds, with a fixed or marked value;
* :class:`Lines`: raw template lines appended to a list or a mapping (more env entries, the
  release labels), written at the indentation of the list's items or the mapping's keys;
  ``@N`` in them is replaced by that indentation as a number (for ``nindent``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["Expr", "Lines", "Optional", "document", "scalar"]


@dataclass(frozen=True)
class Expr:
    """A scalar value written as ``{{ text }}``."""

    text: str


@dataclass(frozen=True)
class Optional:
    """A mapping key written only when ``condition`` holds.

    With ``value`` None the key's value is ``toYaml`` of the condition's value (``with``
    binds it); otherwise ``value`` (plain data or markers) is written under an ``if``.
    """

    condition: str
    value: Any = None


@dataclass(frozen=True)
class Lines:
    """Raw template lines, indented as the surrounding items; ``@N`` is that indentation."""

    lines: tuple[str, ...]


def scalar(value: object) -> str:
    """A plain scalar as YAML text (strings quoted only where YAML needs it)."""
    if isinstance(value, str) and "{{" in value:
        return json.dumps(value)
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 16)
    text = text.removesuffix("\n...\n").removesuffix("\n")
    if "\n" in text:
        msg = f"cannot write {value!r} as one line"
        raise ValueError(msg)
    return text


def document(obj: Mapping[str, Any]) -> list[str]:
    """The lines of one YAML document."""
    return _mapping(obj, 0)


def _mapping(obj: Mapping[str, Any], indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    for key, value in obj.items():
        if isinstance(value, Lines):
            out.extend(_lines(value, indent))
        elif isinstance(value, Optional):
            out.extend(_optional(key, value, indent))
        else:
            out.extend(_entry(f"{pad}{key}:", value, indent))
    return out


def _lines(value: Lines, indent: int) -> list[str]:
    return [" " * indent + line.replace("@N", str(indent)) for line in value.lines]


def _optional(key: str, value: Optional, indent: int) -> list[str]:
    pad = " " * indent
    if value.value is None:
        return [
            f"{pad}{{{{- with {value.condition} }}}}",
            f"{pad}{key}:",
            f"{pad}  {{{{- toYaml . | nindent {indent + 2} }}}}",
            f"{pad}{{{{- end }}}}",
        ]
    return [
        f"{pad}{{{{- if {value.condition} }}}}",
        *_entry(f"{pad}{key}:", value.value, indent),
        f"{pad}{{{{- end }}}}",
    ]


def _entry(head: str, value: Any, indent: int) -> list[str]:
    """``head`` (``key:`` or ``-``) followed by the value, inline or as a block below it."""
    if isinstance(value, Expr):
        return [f"{head} {{{{ {value.text} }}}}"]
    if isinstance(value, Mapping) and value:
        return [head, *_mapping(value, indent + 2)]
    if isinstance(value, Sequence) and not isinstance(value, str) and value:
        return [head, *_sequence(value, indent + 2)]
    if isinstance(value, Mapping | Lines | Optional):
        if isinstance(value, Mapping):
            return [f"{head} {{}}"]
        msg = f"{head} a marker cannot stand for a whole value here"
        raise ValueError(msg)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [f"{head} []"]
    return [f"{head} {scalar(value)}"]


def _sequence(items: Sequence[Any], indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    for item in items:
        if isinstance(item, Lines):
            out.extend(_lines(item, indent))
        elif isinstance(item, Mapping) and item:
            body = _mapping(item, indent + 2)
            first = body[0]
            if not first.startswith(pad + "  ") or first.lstrip().startswith("{{"):
                msg = f"a list item cannot start with a template directive: {first.strip()}"
                raise ValueError(msg)
            out.append(f"{pad}- {first[indent + 2 :]}")
            out.extend(body[1:])
        else:
            out.extend(_entry(f"{pad}-", item, indent))
    return out
