"""Decoding of Kubernetes protobuf request bodies for the few kinds kubectl sends that way.

kubectl's typed clients (``kubectl create token|configmap|secret|namespace|serviceaccount``,
``kubectl create role|clusterrole|rolebinding|clusterrolebinding``, ``kubectl auth
whoami|can-i``, typed DeleteOptions) send ``application/vnd.kubernetes.protobuf`` bodies and
do not fall back to JSON on a 415. This module turns such a body — the ``k8s\\0`` magic
followed by a ``runtime.Unknown`` envelope — into the JSON dict the rest of the server
handles, for the kinds in :data:`SCHEMAS` (field numbers from the Kubernetes
``generated.proto`` files).
Other kinds stay 415. Responses are always JSON (clients accept it). Called by :mod:`.wire`;
pure; raises :class:`ProtobufError`.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

# field number -> (json name, kind, sub-schema name)
Schema = dict[int, tuple[str, str, str]]


class ProtobufError(ValueError):
    pass


_OBJECT_META: Schema = {
    1: ("name", "string", ""),
    2: ("generateName", "string", ""),
    3: ("namespace", "string", ""),
    5: ("uid", "string", ""),
    6: ("resourceVersion", "string", ""),
    7: ("generation", "int", ""),
    8: ("creationTimestamp", "time", ""),
    9: ("deletionTimestamp", "time", ""),
    10: ("deletionGracePeriodSeconds", "int", ""),
    11: ("labels", "map", "string"),
    12: ("annotations", "map", "string"),
    13: ("ownerReferences", "repeated", "OwnerReference"),
    14: ("finalizers", "repeated", "string"),
}

SCHEMAS: dict[str, Schema] = {
    "ObjectMeta": _OBJECT_META,
    "OwnerReference": {
        5: ("apiVersion", "string", ""),
        1: ("kind", "string", ""),
        3: ("name", "string", ""),
        4: ("uid", "string", ""),
        6: ("controller", "bool", ""),
        7: ("blockOwnerDeletion", "bool", ""),
    },
    "ConfigMap": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("data", "map", "string"),
        3: ("binaryData", "map", "bytes"),
        4: ("immutable", "bool", ""),
    },
    "Secret": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("data", "map", "bytes"),
        3: ("type", "string", ""),
        4: ("stringData", "map", "string"),
        5: ("immutable", "bool", ""),
    },
    "Namespace": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("spec", "message", "NamespaceSpec"),
    },
    "NamespaceSpec": {1: ("finalizers", "repeated", "string")},
    "ServiceAccount": {
        1: ("metadata", "message", "ObjectMeta"),
        4: ("automountServiceAccountToken", "bool", ""),
    },
    "TokenRequest": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("spec", "message", "TokenRequestSpec"),
    },
    "TokenRequestSpec": {
        1: ("audiences", "repeated", "string"),
        4: ("expirationSeconds", "int", ""),
        3: ("boundObjectRef", "message", "BoundObjectReference"),
    },
    "BoundObjectReference": {
        1: ("kind", "string", ""),
        2: ("apiVersion", "string", ""),
        3: ("name", "string", ""),
        4: ("uid", "string", ""),
    },
    "SelfSubjectReview": {1: ("metadata", "message", "ObjectMeta")},
    "SelfSubjectAccessReview": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("spec", "message", "SelfSubjectAccessReviewSpec"),
    },
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "message", "ResourceAttributes"),
        2: ("nonResourceAttributes", "message", "NonResourceAttributes"),
    },
    "ResourceAttributes": {
        1: ("namespace", "string", ""),
        2: ("verb", "string", ""),
        3: ("group", "string", ""),
        4: ("version", "string", ""),
        5: ("resource", "string", ""),
        6: ("subresource", "string", ""),
        7: ("name", "string", ""),
    },
    "NonResourceAttributes": {1: ("path", "string", ""), 2: ("verb", "string", "")},
    "Role": {1: ("metadata", "message", "ObjectMeta"), 2: ("rules", "repeated", "PolicyRule")},
    "ClusterRole": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("rules", "repeated", "PolicyRule"),
    },
    "PolicyRule": {
        1: ("verbs", "repeated", "string"),
        2: ("apiGroups", "repeated", "string"),
        3: ("resources", "repeated", "string"),
        4: ("resourceNames", "repeated", "string"),
        5: ("nonResourceURLs", "repeated", "string"),
    },
    "RoleBinding": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("subjects", "repeated", "Subject"),
        3: ("roleRef", "message", "RoleRef"),
    },
    "ClusterRoleBinding": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("subjects", "repeated", "Subject"),
        3: ("roleRef", "message", "RoleRef"),
    },
    "Subject": {
        1: ("kind", "string", ""),
        2: ("apiGroup", "string", ""),
        3: ("name", "string", ""),
        4: ("namespace", "string", ""),
    },
    "RoleRef": {
        1: ("apiGroup", "string", ""),
        2: ("kind", "string", ""),
        3: ("name", "string", ""),
    },
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int", ""),
        2: ("preconditions", "message", "Preconditions"),
        3: ("orphanDependents", "bool", ""),
        4: ("propagationPolicy", "string", ""),
        5: ("dryRun", "repeated", "string"),
    },
    "Preconditions": {1: ("uid", "string", ""), 2: ("resourceVersion", "string", "")},
    "Time": {1: ("seconds", "int", ""), 2: ("nanos", "int", "")},
    "Unknown": {1: ("typeMeta", "message", "RuntimeTypeMeta"), 2: ("raw", "raw", "")},
    "RuntimeTypeMeta": {1: ("apiVersion", "string", ""), 2: ("kind", "string", "")},
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            msg = "truncated varint"
            raise ProtobufError(msg)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) triples of one message."""
    out = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                msg = "truncated field"
                raise ProtobufError(msg)
            value, pos = data[pos : pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            msg = f"unsupported wire type {wire}"
            raise ProtobufError(msg)
        out.append((number, wire, value))
    return out


def _scalar(kind: str, value: Any) -> Any:
    if kind == "string":
        return bytes(value).decode()
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return value - (1 << 64) if value >= 1 << 63 else value
    return value


def decode_message(data: bytes, schema_name: str) -> dict[str, Any]:
    schema = SCHEMAS[schema_name]
    out: dict[str, Any] = {}
    for number, _wire, value in _fields(data):
        spec = schema.get(number)
        if spec is None:
            continue
        name, kind, sub = spec
        if kind == "message":
            decoded = decode_message(value, sub)
            out[name] = _time(decoded) if sub == "Time" else decoded
        elif kind == "time":
            out[name] = _time(decode_message(value, "Time"))
        elif kind == "map":
            entry = {n: v for n, _w, v in _fields(value)}
            out.setdefault(name, {})[_scalar("string", entry.get(1, b""))] = _scalar(
                sub, entry.get(2, b"")
            )
        elif kind == "repeated":
            item = decode_message(value, sub) if sub in SCHEMAS else _scalar(sub, value)
            out.setdefault(name, []).append(item)
        elif kind == "raw":
            out[name] = bytes(value)
        else:
            scalar = _scalar(kind, value)
            # Go always encodes its non-pointer fields; JSON omits their zero values.
            if scalar != "" and not (name == "generation" and scalar == 0):
                out[name] = scalar
    return out


def _time(t: dict[str, Any]) -> str:
    moment = dt.datetime.fromtimestamp(int(t.get("seconds", 0)), dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def decode(body: bytes) -> dict[str, Any]:
    """A Kubernetes protobuf body → JSON dict with apiVersion and kind."""
    if not body.startswith(MAGIC):
        msg = "missing the k8s protobuf prefix"
        raise ProtobufError(msg)
    try:
        unknown = decode_message(body[len(MAGIC) :], "Unknown")
        type_meta = unknown.get("typeMeta") or {}
        kind = str(type_meta.get("kind", ""))
        if kind not in SCHEMAS or kind in ("ObjectMeta", "Unknown", "Time"):
            msg = f"protobuf bodies of kind {kind or '(none)'!r} are not supported; send JSON"
            raise ProtobufError(msg)
        obj = decode_message(unknown.get("raw", b""), kind)
    except (UnicodeDecodeError, KeyError, IndexError) as exc:
        msg = f"malformed protobuf body: {exc}"
        raise ProtobufError(msg) from None
    obj["apiVersion"] = type_meta.get("apiVersion", "")
    obj["kind"] = kind
    return obj
