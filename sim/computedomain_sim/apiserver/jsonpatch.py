"""JSON Patch (RFC 6902, ``test`` included) over decoded JSON values: the one implementation.

The API server applies ``application/json-patch+json`` bodies with it (:mod:`.patching`), and
the built-in kustomize renderer its ``patches`` (kustomize applies RFC 6902 the same way).
Messages are kube-apiserver's wording, so a client sees what a real server says; each error
also carries the index of the operation that failed, for callers (kustomize) that name the
patch and operation. Pure: the input document is not changed.
"""

from __future__ import annotations

from typing import Any

from computedomain.api import jsoncodec

__all__ = ["JsonPatchError", "json_patch"]


class JsonPatchError(ValueError):
    """A patch that is malformed or does not apply; ``operation`` is the failing op's index
    (``None`` when the patch as a whole is malformed)."""

    def __init__(self, message: str, operation: int | None = None) -> None:
        super().__init__(message)
        self.operation = operation


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply ``ops`` in order to a copy of ``doc`` and return it; raises :class:`JsonPatchError`
    (as RFC 6902 requires, the whole patch then fails)."""
    if not isinstance(ops, list):
        msg = "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        raise JsonPatchError(msg)
    doc = jsoncodec.copy(doc)
    for number, op in enumerate(ops):
        try:
            doc = _apply(doc, op)
        except JsonPatchError as exc:
            raise JsonPatchError(str(exc), number) from None
    return doc


def _apply(doc: Any, op: Any) -> Any:
    if not isinstance(op, dict) or not isinstance(op.get("op"), str):
        msg = "Unexpected kind: missing op"
        raise JsonPatchError(msg)
    kind = op["op"]
    path = op.get("path")
    if not isinstance(path, str):
        msg = f"{kind} operation: missing path"
        raise JsonPatchError(msg)
    if kind in ("add", "replace", "test") and "value" not in op:
        msg = f"{kind} operation: missing value"
        raise JsonPatchError(msg)
    if kind == "add":
        return _add(doc, path, jsoncodec.copy(op["value"]))
    if kind == "remove":
        _remove(doc, path)
        return doc
    if kind == "replace":
        try:
            _get(doc, path)
        except JsonPatchError:
            msg = f"replace operation does not apply: doc is missing key: {path}: missing value"
            raise JsonPatchError(msg) from None
        if _pointer(path):
            _remove(doc, path, "replace")
        return _add(doc, path, jsoncodec.copy(op["value"]), "replace")
    if kind in ("move", "copy"):
        src = op.get("from")
        if not isinstance(src, str):
            msg = f"{kind} operation: missing from"
            raise JsonPatchError(msg)
        value = _remove(doc, src, kind) if kind == "move" else jsoncodec.copy(_get(doc, src))
        return _add(doc, path, value, kind)
    if kind == "test":
        try:
            have = _get(doc, path)
        except JsonPatchError:
            have = None
        if have != op["value"]:
            msg = f"testing value {path} failed: test failed"
            raise JsonPatchError(msg)
        return doc
    msg = f"Unexpected kind: {kind}"
    raise JsonPatchError(msg)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        msg = f'JSON pointer must be empty or start with a "/": {path!r}'
        raise JsonPatchError(msg)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _missing_path(op: str, path: str) -> JsonPatchError:
    return JsonPatchError(
        f'{op} operation does not apply: doc is missing path: "{path}": missing value'
    )


def _parent(doc: Any, parts: list[str], op: str, path: str) -> tuple[Any, str]:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise _missing_path(op, path)
    return cur, parts[-1]


def _index(container: list[Any], token: str, *, allow_end: bool, path: str) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        msg = f"invalid array index {token!r} in {path}"
        raise JsonPatchError(msg)
    idx = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if idx > limit:
        msg = f"Unable to access invalid index: {idx}: invalid index referenced"
        raise JsonPatchError(msg)
    return idx


def _get(doc: Any, path: str) -> Any:
    cur = doc
    for part in _pointer(path):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list):
            cur = cur[_index(cur, part, allow_end=False, path=path)]
        else:
            msg = f"doc is missing key: {path}: missing value"
            raise JsonPatchError(msg)
    return cur


def _add(doc: Any, path: str, value: Any, op: str = "add") -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts, op, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True, path=path), value)
    else:
        raise _missing_path(op, path)
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> Any:
    parts = _pointer(path)
    if not parts:
        msg = "cannot remove the whole document"
        raise JsonPatchError(msg)
    parent, last = _parent(doc, parts, op, path)
    if isinstance(parent, dict):
        if last not in parent:
            msg = f"Unable to remove nonexistent key: {last}: missing value"
            raise JsonPatchError(msg)
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, allow_end=False, path=path))
    raise _missing_path(op, path)
