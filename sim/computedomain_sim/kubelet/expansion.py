"""Kubernetes' ``$(VAR)`` expansion in container env values, command and args, and in exec
probe commands.

Called by :mod:`.launch` and :mod:`.probers`. Pure. As the kubelet does it: ``$(NAME)``
becomes the value of ``NAME`` if it is defined and stays as written otherwise, ``$$`` becomes
``$``, and any other ``$`` is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["expand", "static_variables"]


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Expand ``$(NAME)`` references in ``text`` from ``variables``. Pure."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            end = text.find(")", i + 2)
            if end == -1:
                out.append(text[i:])
                break
            name = text[i + 2 : end]
            out.append(variables[name] if name in variables else text[i : end + 1])
            i = end + 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def static_variables(container: Mapping[str, Any]) -> dict[str, str]:
    """The variables an exec probe's command is expanded with. Pure.

    The kubelet expands probe commands with the container's ``env`` as written, not as
    resolved: each name maps to its literal ``value`` (unexpanded), and a ``valueFrom`` variable
    maps to the empty string.
    """
    return {
        str(item.get("name", "")): str(item.get("value") or "")
        for item in container.get("env") or []
    }
