"""Bytes on the wire: reading request bodies (with the 3 MiB limit), decoding JSON or YAML,
and building JSON responses (including ``Status`` error bodies).

Called by :mod:`.rest`, :mod:`.discovery` and :mod:`.pipeline`. Decoding raises
:class:`.status.ApiStatusError` (400/413/415); nothing here crashes on bad input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml
from aiohttp import web

from computedomain.api import jsoncodec

from . import protobuf, status
from .store import dumps

JSON = "application/json"
_YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


async def read_body(request: web.BaseRequest, limit: int) -> bytes:
    """The whole request body; 413 once it exceeds ``limit`` bytes."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise status.request_entity_too_large(limit)
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = await request.content.read(256 * 1024)
        if not chunk:
            break
        total += len(chunk)
        if total > limit:
            raise status.request_entity_too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def decode(body: bytes, content_type: str) -> Any:
    """JSON (default) or YAML document → Python value; 400 when it does not parse."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media in _YAML_TYPES:
        try:
            return yaml.load(body, Loader=_YAML_LOADER)
        except yaml.YAMLError as exc:
            raise status.bad_request(f"error converting YAML to JSON: {exc}") from None
    if media == protobuf.MEDIA_TYPE:
        try:
            return protobuf.decode(body)
        except protobuf.ProtobufError as exc:
            raise status.ApiStatusError(415, "UnsupportedMediaType", str(exc)) from None
    if media not in ("", JSON, "*/*") and not media.endswith("+json"):
        raise status.unsupported_media_type(content_type, [JSON, "application/yaml"])
    try:
        return jsoncodec.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise status.bad_request(f"couldn't get version/kind; json parse error: {exc}") from None


def decode_object(body: bytes, content_type: str) -> dict[str, Any]:
    """Like :func:`decode`, and the document must be a JSON object."""
    if not body.strip():
        raise status.bad_request("the body of the request was empty")
    value = decode(body, content_type)
    if not isinstance(value, dict):
        raise status.bad_request(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{_json_type(value)} into Go value of type struct"
        )
    return value


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "null"


def raw_response(raw: bytes, code: int = 200, warnings: Iterable[str] = ()) -> web.Response:
    resp = web.Response(body=raw, status=code, content_type=JSON)
    for w in warnings:
        resp.headers.add("Warning", f'299 - "{_escape(w)}"')
    return resp


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def json_response(obj: Any, code: int = 200) -> web.Response:
    return raw_response(dumps(obj), code)


def status_response(err: status.ApiStatusError) -> web.Response:
    resp = json_response(err.to_status(), err.code)
    if err.retry_after_seconds is not None:
        resp.headers["Retry-After"] = str(err.retry_after_seconds)
    return resp


_TYPE_META = re.compile(rb'^\{(?:"(?:apiVersion|kind)":"[^"\\]*",){2}')


def without_type_meta(raw: bytes) -> bytes:
    """A stored built-in object as a list item: kube-apiserver's typed lists carry
    ``apiVersion`` and ``kind`` once, on the list, not on each item (custom resources' lists
    keep them). Cheap when the object starts with both, as stored objects mostly do."""
    head = _TYPE_META.match(raw)
    if head is not None:
        return b"{" + raw[head.end() :]
    obj = jsoncodec.loads(raw)
    if isinstance(obj, dict):
        obj.pop("apiVersion", None)
        obj.pop("kind", None)
    return dumps(obj)


def list_body(
    kind: str,
    api_version: str,
    rv: int,
    items: list[bytes],
    *,
    cont: str = "",
    remaining: int | None = None,
    custom: bool = False,
) -> bytes:
    """A ``<Kind>List`` built from stored JSON without decoding the items. A custom resource's
    list says ``continue`` even when empty, as kube-apiserver's unstructured lists do."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if cont or custom:
        meta["continue"] = cont
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    head = dumps({"kind": kind, "apiVersion": api_version, "metadata": meta})
    return head[:-1] + b',"items":[' + b",".join(items) + b"]}"
