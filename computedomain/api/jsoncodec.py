"""JSON at the wire: response bodies and watch events decoded by every component, and the
embedded API server's request bodies and stored objects, decoded and encoded on every read,
write and watch.

Every component spends a good part of its CPU here: each watch event is decoded by every
watcher, and the embedded API server decodes, validates and re-encodes each object it stores.
orjson does the common case several times faster than the standard library.

The values are the standard library's, with the differences kube-apiserver has too: an integer
beyond 64 bits decodes as a float (Go's decoder for custom resources does the same), and
``NaN``, ``Infinity`` and numbers that overflow a double are not JSON and are refused (a
ValueError, as any syntax error), where ``json`` would return a float that no other client can
read back. A document orjson refuses is handed to ``json``, which accepts what only it accepts
(lone surrogates in strings) and words the error otherwise. Encoding spells some floats
differently (``1e-7`` for ``1e-07``); the value read back is the same. A NaN or infinite float,
which no document decoded here can hold, is encoded (and copied) as ``null``. Pure.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson


def _refuse_constant(name: str) -> Any:
    msg = f"{name} is not a JSON number"
    raise ValueError(msg)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        msg = f"number {text} overflows a 64-bit float"
        raise ValueError(msg)
    return value


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """A JSON document to Python values, as ``json.loads`` would, except for the refusals of
    the module doc. Raises ValueError (a ``json.JSONDecodeError`` for syntax errors)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass  # invalid, or valid only to json (lone surrogates): json decides and says why
    if isinstance(data, memoryview | bytearray):
        data = bytes(data)
    return json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON: the value of ``json.dumps(obj, separators=(",", ":"),
    ensure_ascii=False).encode()`` (non-finite floats aside, see the module doc), and that
    function's work (and error) where orjson cannot encode ``obj`` (integers beyond 64 bits,
    keys that are not strings)."""
    try:
        out = orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    # orjson's bytes keep the buffer they were written into, often many times their length
    # (28 MB of output held 341 MB); the API server keeps every object it stores as these
    # bytes, so they are copied to their size (about 0.5 us for 5 KB).
    return bytes(memoryview(out))


def canonical(obj: Any) -> bytes:
    """The canonical JSON of ``obj``, for checksums: keys sorted, no spaces, ASCII only (the
    standard library's encoder, whose spelling of floats a checksum depends on)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def copy(obj: Any) -> Any:
    """A deep copy of JSON values (dicts, lists, strings, numbers, booleans, None), exact:
    integers beyond 64 bits stay integers (the round trip goes through ``json`` then). A value
    that is neither a dict nor a list cannot change, so it is its own copy."""
    if not isinstance(obj, dict | list):
        return obj
    try:
        return orjson.loads(orjson.dumps(obj))
    except orjson.JSONEncodeError:
        return json.loads(json.dumps(obj))
