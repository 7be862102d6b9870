"""Decoding of Kubernetes protobuf request bodies, for every built-in kind.

client-go's typed clients (kubectl's ``create``, ``run``, ``auth``, typed DeleteOptions, and any
client-go program from v0.35 on) send ``application/vnd.kubernetes.protobuf`` bodies and do not
fall back to JSON on a 415. A body is the ``k8s\\0`` magic and a ``runtime.Unknown`` envelope
whose ``typeMeta`` names the kind; the message types come from the descriptors compiled at
build time (:mod:`.protodescriptors`). The result is the JSON dict the rest of the server
handles, written as Go's JSON encoding writes the same object: times as RFC 3339, quantities and
int-or-strings as their scalars, embedded objects and ``fieldsV1`` as JSON, bytes as base64, and
the empty strings of Go's non-pointer fields left out. Kinds outside ``k8s.io/api`` (custom
resources) stay JSON-only. Called by :mod:`.wire`; raises :class:`ProtobufError`.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any, Final

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from . import protodescriptors

MAGIC: Final = b"k8s\x00"
MEDIA_TYPE: Final = "application/vnd.kubernetes.protobuf"
_META: Final = "k8s.io.apimachinery.pkg.apis.meta.v1"
_UNKNOWN: Final = "k8s.io.apimachinery.pkg.runtime.Unknown"
# Kinds of meta.k8s.io that clients send as bodies, whatever apiVersion they name.
_META_KINDS: Final = frozenset({"DeleteOptions", "CreateOptions", "PatchOptions", "UpdateOptions"})
# Groups whose folder in k8s.io/api is not their first label.
_GROUP_FOLDERS: Final = {"": "core", "internal.apiserver.k8s.io": "apiserverinternal"}
# Go's non-pointer integer fields whose zero value JSON leaves out.
_ZERO_OMITTED: Final = frozenset({f"{_META}.ObjectMeta.generation"})


class ProtobufError(ValueError):
    pass


def _message_name(api_version: str, kind: str) -> str:
    if kind in _META_KINDS:
        return f"{_META}.{kind}"
    group, _, version = api_version.rpartition("/")
    folder = _GROUP_FOLDERS.get(group, group.split(".", 1)[0])
    return f"k8s.io.api.{folder}.{version}.{kind}"


def _parse(descriptor: Descriptor, data: bytes) -> Message:
    cls = message_factory.GetMessageClass(descriptor)
    msg: Message = cls()
    try:
        msg.ParseFromString(data)
    except DecodeError as exc:
        text = f"malformed protobuf body: {exc}"
        raise ProtobufError(text) from None
    return msg


def _time(seconds: int, nanos: int, *, micro: bool) -> str | None:
    if not seconds and not nanos:
        return None  # Go's zero time, which JSON writes as null
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC) + dt.timedelta(microseconds=nanos // 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _duration(nanos: int) -> str:
    """Go's ``time.Duration`` text (``1h0m5s``, ``300ms``)."""
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return f"{sign}{nanos / size:g}{unit}"
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = f"{rest / 1e9:.9f}".rstrip("0").rstrip(".")
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


def _special(msg: Any) -> tuple[bool, Any]:
    """(handled, value) for the apimachinery types whose JSON form is not an object."""
    name = msg.DESCRIPTOR.full_name
    if name in (f"{_META}.Time", f"{_META}.MicroTime"):
        return True, _time(msg.seconds, msg.nanos, micro=name.endswith("MicroTime"))
    if name == f"{_META}.Duration":
        return True, _duration(msg.duration)
    if name == "k8s.io.apimachinery.pkg.util.intstr.IntOrString":
        return True, msg.strVal if msg.type == 1 else msg.intVal
    if name == "k8s.io.apimachinery.pkg.api.resource.Quantity":
        return True, msg.string
    if name in ("k8s.io.apimachinery.pkg.runtime.RawExtension", f"{_META}.FieldsV1"):
        raw = msg.raw if name.endswith("RawExtension") else msg.Raw
        return True, json.loads(raw) if raw else None
    return False, None


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return to_json(value)
    return value


def to_json(msg: Any) -> Any:
    """One decoded message as Go's JSON encoding writes the same value."""
    handled, value = _special(msg)
    if handled:
        return value
    out: dict[str, Any] = {}
    for field, raw in msg.ListFields():
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {k: _scalar(value_field, v) for k, v in raw.items()}
        elif field.is_repeated:
            out[field.name] = [_scalar(field, item) for item in raw]
        else:
            value = _scalar(field, raw)
            if value is None or value == "":
                continue
            if value == 0 and field.full_name in _ZERO_OMITTED:
                continue
            out[field.name] = value
    return out


def decode(body: bytes) -> dict[str, Any]:
    """A Kubernetes protobuf body → JSON dict with apiVersion and kind."""
    if not body.startswith(MAGIC):
        msg = "missing the k8s protobuf prefix"
        raise ProtobufError(msg)
    try:
        pool = protodescriptors.load()
    except protodescriptors.DescriptorsMissing as exc:
        raise ProtobufError(str(exc)) from None
    unknown: Any = _parse(pool.FindMessageTypeByName(_UNKNOWN), body[len(MAGIC) :])
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    try:
        descriptor = pool.FindMessageTypeByName(_message_name(api_version, kind))
    except KeyError:
        msg = f"protobuf bodies of kind {kind or '(none)'!r} are not supported; send JSON"
        raise ProtobufError(msg) from None
    obj = to_json(_parse(descriptor, unknown.raw))
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return dict(obj)


# Messages whose JSON form is not an object of their proto fields (see :func:`_special`).
_OPAQUE: Final = frozenset({
    f"{_META}.Time", f"{_META}.MicroTime", f"{_META}.Duration", f"{_META}.FieldsV1",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "k8s.io.apimachinery.pkg.api.resource.Quantity",
    "k8s.io.apimachinery.pkg.runtime.RawExtension",
})  # fmt: skip


def prune_unknown(api_version: str, kind: str, obj: dict[str, Any]) -> list[str]:
    """Remove the fields of a built-in object its Go type does not have, as kube-apiserver's
    decoding drops them, and return their paths (``spec.containers[0].bogus``) for
    ``fieldValidation``. Kinds without descriptors (or with none built) are left alone."""
    try:
        descriptor = protodescriptors.load().FindMessageTypeByName(_message_name(api_version, kind))
    except (KeyError, protodescriptors.DescriptorsMissing):
        return []
    unknown: list[str] = []
    for key in list(obj):
        if key in ("apiVersion", "kind"):
            continue
        _prune(descriptor, obj, key, key, unknown)
    return unknown


# Fields whose Go struct is inlined in JSON (``json:",inline"``): their fields sit beside
# their parent's, e.g. a Probe's ``exec`` (ProbeHandler). Besides these, a field named after
# its own type (``volumeSource``, ``deviceConfiguration`` ...) is taken as possibly inline: at
# worst an unknown field under it is kept, never a known one dropped.
_INLINE: Final = frozenset({"handler", "rule"})


def _field(descriptor: Descriptor, key: str) -> FieldDescriptor | None:
    """The field ``key`` names in JSON: by name, or case apart (a few proto fields are
    capitalised, e.g. a ValidatingAdmissionPolicy variable's ``Name``), or in an inlined
    struct."""
    field = descriptor.fields_by_name.get(key)
    if field is not None:
        return field
    lowered = key.lower()
    for candidate in descriptor.fields:
        if candidate.name.lower() == lowered:
            return candidate
    for candidate in descriptor.fields:
        inner = candidate.message_type
        if inner is None or candidate.is_repeated:
            continue
        if candidate.name in _INLINE or candidate.name.lower() == inner.name.lower():
            found = _field(inner, key)
            if found is not None:
                return found
    return None


def _prune(
    descriptor: Descriptor, holder: dict[str, Any], key: str, path: str, out: list[str]
) -> None:
    field = _field(descriptor, key)
    if field is None:
        out.append(path)
        del holder[key]
        return
    value = holder[key]
    message = field.message_type
    if message is None or message.full_name in _OPAQUE:
        return
    if message.GetOptions().map_entry:
        inner = message.fields_by_name["value"].message_type
        if inner is not None and inner.full_name not in _OPAQUE and isinstance(value, dict):
            for name, item in value.items():
                if isinstance(item, dict):
                    _prune_object(inner, item, f"{path}.{name}", out)
        return
    if field.is_repeated and isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                _prune_object(message, item, f"{path}[{index}]", out)
    elif isinstance(value, dict):
        _prune_object(message, value, path, out)


def _prune_object(descriptor: Descriptor, obj: dict[str, Any], path: str, out: list[str]) -> None:
    for key in list(obj):
        _prune(descriptor, obj, key, f"{path}.{key}", out)
