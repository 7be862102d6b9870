"""How :class:`~computedomain.kube.rest.Api` encodes requests and decodes answers. Pure apart
from reading a response stream.

Query strings in the API's spelling, the resource plural of a path (for request counters), type
meta for list items, JSON bodies, and newline-delimited watch events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from computedomain.api import jsoncodec
from computedomain.kube import errors
from computedomain.kube.resources import Resource


def query(**params: str | int | bool | None) -> list[tuple[str, str]]:
    """Query items in the API's spelling (camelCase keys, lowercase booleans), Nones dropped."""
    out: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        out.append((key, text))
    return out


def plural_of(path: str) -> str:
    """The resource plural in a REST path, for request counters (best effort). Pure."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    start = 2 if parts[:1] == ["api"] else 3 if parts[:1] == ["apis"] else len(parts)
    rest = parts[start:]
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    return rest[0] if rest else (parts[-1] if parts else "")


def with_type_meta(list_obj: dict[str, Any], resource: Resource) -> dict[str, Any]:
    """List items come without apiVersion/kind; fill them in so cached objects are complete."""
    for item in list_obj.get("items") or []:
        if isinstance(item, dict):
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
    return list_obj


def decode_body(data: bytes, status: int, what: str) -> dict[str, Any]:
    if not data.strip():
        return {}
    try:
        decoded = jsoncodec.loads(data)
    except ValueError as exc:
        msg = f"{what}: answer is not JSON: {data[:200]!r}"
        raise errors.ApiServerError(status, "InvalidResponse", msg) from exc
    if not isinstance(decoded, dict):
        msg = f"{what}: expected a JSON object, got {type(decoded).__name__}"
        raise errors.ApiServerError(status, "InvalidResponse", msg)
    return decoded


def decode_event(line: bytes, path: str) -> tuple[str, dict[str, Any]]:
    try:
        event = jsoncodec.loads(line)
        kind = event["type"]
        obj = event["object"]
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"WATCH {path}: undecodable event {line[:200]!r}"
        raise errors.ApiServerError(500, "InvalidWatchEvent", msg) from exc
    if not isinstance(obj, dict) or not isinstance(kind, str):
        msg = f"WATCH {path}: malformed event {line[:200]!r}"
        raise errors.ApiServerError(500, "InvalidWatchEvent", msg)
    if kind == "ERROR":
        raise errors.from_status_object(obj)
    return kind, obj


async def lines(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Newline-delimited records from a byte stream, however the chunks fall."""
    buffer = b""
    async for chunk in stream.iter_any():
        buffer += chunk
        if b"\n" not in chunk:
            continue
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer
