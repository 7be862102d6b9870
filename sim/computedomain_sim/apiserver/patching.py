"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902, incl. ``test``) and
strategic merge patch (built-ins only, see :mod:`.strategic`).

Called by :mod:`.writes`; pure (the input object is not changed); raises
:class:`.status.ApiStatusError` worded as kube-apiserver: 400 for a body that does not parse,
422 for a JSON patch that does not apply, 415 for an unsupported patch type.
"""

from __future__ import annotations

from typing import Any

import yaml

from computedomain.api import jsoncodec

from . import status, strategic
from .registry import ResourceType

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _decode(body: bytes) -> Any:
    try:
        return jsoncodec.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise status.bad_request(f"error decoding patch: {exc}") from None


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: returns a new document; ``target`` is not changed."""
    if not isinstance(patch, dict):
        return jsoncodec.copy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class JsonPatchError(Exception):
    pass


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        msg = f'JSON pointer must be empty or start with a "/": {path!r}'
        raise JsonPatchError(msg)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], op: str, path: str) -> tuple[Any, str]:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            msg = f'{op} operation does not apply: doc is missing path: "{path}": missing value'
            raise JsonPatchError(msg)
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
        msg = f'{op} operation does not apply: doc is missing path: "{path}": missing value'
        raise JsonPatchError(msg)
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
    msg = f'{op} operation does not apply: doc is missing path: "{path}": missing value'
    raise JsonPatchError(msg)


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 on a deep copy of ``doc``; raises :class:`JsonPatchError`."""
    if not isinstance(ops, list):
        msg = "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        raise JsonPatchError(msg)
    doc = jsoncodec.copy(doc)
    for op in ops:
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
            doc = _add(doc, path, jsoncodec.copy(op["value"]))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            try:
                _get(doc, path)
            except JsonPatchError:
                msg = f"replace operation does not apply: doc is missing key: {path}: missing value"
                raise JsonPatchError(msg) from None
            if _pointer(path):
                _remove(doc, path, "replace")
            doc = _add(doc, path, jsoncodec.copy(op["value"]), "replace")
        elif kind in ("move", "copy"):
            src = op.get("from")
            if not isinstance(src, str):
                msg = f"{kind} operation: missing from"
                raise JsonPatchError(msg)
            value = _remove(doc, src, kind) if kind == "move" else jsoncodec.copy(_get(doc, src))
            doc = _add(doc, path, value, kind)
        elif kind == "test":
            try:
                have = _get(doc, path)
            except JsonPatchError:
                have = None
            if have != op["value"]:
                msg = f"testing value {path} failed: test failed"
                raise JsonPatchError(msg)
        else:
            msg = f"Unexpected kind: {kind}"
            raise JsonPatchError(msg)
    return doc


def is_apply(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == APPLY


def decode_apply(body: bytes) -> dict[str, Any]:
    """The configuration of an apply patch (YAML, of which JSON is a subset)."""
    try:
        config = yaml.safe_load(body.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise status.bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(config, dict):
        raise status.bad_request("an apply patch must be an object")
    return config


def apply_patch(rt: ResourceType, content_type: str, old: dict[str, Any], body: bytes) -> Any:
    """The patched object for a PATCH request; ``old`` is not changed."""
    media = content_type.split(";", 1)[0].strip().lower()
    accepted = [JSON_PATCH, MERGE, APPLY] if rt.custom else [JSON_PATCH, MERGE, STRATEGIC, APPLY]
    if media == MERGE:
        patch = _decode(body)
        if not isinstance(patch, dict):
            raise status.bad_request("json: cannot unmarshal non-object into a merge patch")
        return merge_patch(old, patch)
    if media == JSON_PATCH:
        ops = _decode(body)
        try:
            return json_patch(old, ops)
        except JsonPatchError as exc:
            raise status.ApiStatusError(422, "Invalid", str(exc)) from None
    if media == STRATEGIC and not rt.custom:
        patch = _decode(body)
        if not isinstance(patch, dict):
            raise status.bad_request(
                "json: cannot unmarshal non-object into a strategic merge patch"
            )
        try:
            return strategic.apply(old, patch)
        except strategic.StrategicError as exc:
            raise status.bad_request(str(exc)) from None
    raise status.unsupported_media_type(content_type, accepted)
