"""JSON Patch (RFC 6902) over JSON-like Python values, for the built-in kustomize renderer.

Called by :mod:`.kustomize` for the ``patches`` of a kustomization (kustomize applies JSON 6902
patches the same way). Pure: the input document is never changed; a patched deep copy is
returned.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["JsonPatchError", "apply_patch"]


class JsonPatchError(ValueError):
    """A patch that is malformed or does not apply; the message names the operation and path."""


def apply_patch(document: Any, operations: Sequence[Mapping[str, Any]]) -> Any:
    """Apply ``operations`` in order to a deep copy of ``document`` and return it.

    Pure. Raises :class:`JsonPatchError` for an unknown op, a missing path, an index out of
    range, or a failing ``test``: as RFC 6902 requires, the whole patch then fails.
    """
    doc = copy.deepcopy(document)
    for number, operation in enumerate(operations):
        op = operation.get("op")
        path = operation.get("path")
        if not isinstance(path, str):
            msg = f"operation {number} ({op}): 'path' must be a string"
            raise JsonPatchError(msg)
        where = f"operation {number} ({op} {path})"
        if op == "add":
            doc = _add(doc, _pointer(path, where), _value(operation, where), where)
        elif op == "remove":
            doc = _remove(doc, _pointer(path, where), where)[0]
        elif op == "replace":
            tokens = _pointer(path, where)
            doc = _remove(doc, tokens, where)[0]
            doc = _add(doc, tokens, _value(operation, where), where)
        elif op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                msg = f"{where}: 'from' must be a string"
                raise JsonPatchError(msg)
            value = copy.deepcopy(_get(doc, _pointer(source, where), where))
            if op == "move":
                doc = _remove(doc, _pointer(source, where), where)[0]
            doc = _add(doc, _pointer(path, where), value, where)
        elif op == "test":
            actual = _get(doc, _pointer(path, where), where)
            expected = _value(operation, where)
            if actual != expected:
                msg = f"{where}: test failed, found {actual!r}, expected {expected!r}"
                raise JsonPatchError(msg)
        else:
            msg = f"{where}: unknown op {op!r} (add, remove, replace, move, copy, test)"
            raise JsonPatchError(msg)
    return doc


def _value(operation: Mapping[str, Any], where: str) -> Any:
    if "value" not in operation:
        msg = f"{where}: 'value' is required"
        raise JsonPatchError(msg)
    return copy.deepcopy(operation["value"])


def _pointer(path: str, where: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        msg = f"{where}: a JSON pointer starts with '/'"
        raise JsonPatchError(msg)
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def _index(container: list[Any], token: str, where: str, *, for_add: bool) -> int:
    if for_add and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        msg = f"{where}: {token!r} is not an array index"
        raise JsonPatchError(msg)
    index = int(token)
    limit = len(container) if for_add else len(container) - 1
    if index > limit:
        msg = f"{where}: index {index} is out of range (length {len(container)})"
        raise JsonPatchError(msg)
    return index


def _get(doc: Any, tokens: list[str], where: str) -> Any:
    node = doc
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                msg = f"{where}: no member {token!r}"
                raise JsonPatchError(msg)
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, where, for_add=False)]
        else:
            msg = f"{where}: cannot descend into a {type(node).__name__} at {token!r}"
            raise JsonPatchError(msg)
    return node


def _add(doc: Any, tokens: list[str], value: Any, where: str) -> Any:
    if not tokens:
        return value
    parent = _get(doc, tokens[:-1], where)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, where, for_add=True), value)
    else:
        msg = f"{where}: the parent is a {type(parent).__name__}, not an object or array"
        raise JsonPatchError(msg)
    return doc


def _remove(doc: Any, tokens: list[str], where: str) -> tuple[Any, Any]:
    if not tokens:
        msg = f"{where}: cannot remove the whole document"
        raise JsonPatchError(msg)
    parent = _get(doc, tokens[:-1], where)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            msg = f"{where}: no member {last!r}"
            raise JsonPatchError(msg)
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, where, for_add=False))
    msg = f"{where}: the parent is a {type(parent).__name__}, not an object or array"
    raise JsonPatchError(msg)
