"""Small pure helpers about API objects: keys, uids, timestamps, index values.

Used by the write path (:mod:`.writes`, :mod:`.deletion`, :mod:`.gc`) and by persistence to
rebuild indexes from stored JSON.
"""

from __future__ import annotations

import datetime as dt
import secrets
import uuid
from collections.abc import Mapping
from typing import Any

from .registry import ResourceType
from .selectors import field_value
from .store import EMPTY

_GEN_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's generateName alphabet


def key_of(namespace: str, name: str) -> str:
    """Storage key of an object: ``namespace/name`` or ``name`` for cluster-scoped kinds."""
    return f"{namespace}/{name}" if namespace else name


def new_uid() -> str:
    return str(uuid.uuid4())


def generated_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_GEN_ALPHABET) for _ in range(5))


def rfc3339(t: dt.datetime) -> str:
    """Kubernetes' metav1.Time wire form (second precision, UTC, ``Z``)."""
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(t: dt.datetime) -> str:
    """metav1.MicroTime wire form (leases, events.k8s.io eventTime)."""
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def index_values(
    rt: ResourceType, obj: Mapping[str, Any]
) -> tuple[Mapping[str, str], Mapping[str, str], tuple[str, ...]]:
    """(labels, selectable field values, owner uids) of ``obj`` for the store's indexes."""
    m = meta(obj)
    labels = m.get("labels") or EMPTY
    if not isinstance(labels, dict):
        labels = EMPTY
    fields: Mapping[str, str] = EMPTY
    if rt.selectable_fields:
        fields = {}
        for path in rt.selectable_fields:
            value = _event_source(obj) if path == "source" else field_value(obj, path)
            if value:
                fields[path] = value
    owners: tuple[str, ...] = ()
    refs = m.get("ownerReferences")
    if isinstance(refs, list) and refs:
        owners = tuple(str(r.get("uid", "")) for r in refs if isinstance(r, dict))
    return labels, fields, owners


def _event_source(obj: Mapping[str, Any]) -> str:
    src = obj.get("source")
    return str(src.get("component", "")) if isinstance(src, dict) else ""


def spec_view(rt: ResourceType, obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a change of bumps ``metadata.generation``: everything except metadata (and
    status when the kind has a status subresource)."""
    skip = ("metadata", "status") if rt.has_status else ("metadata",)
    return {k: v for k, v in obj.items() if k not in skip}
