"""Version views: how a served version's objects differ from their stored form.

* CRD versions other than the storage version (conversion strategy ``None``): only
  ``apiVersion`` differs.
* ``events.k8s.io/v1`` Events are stored as ``core/v1`` Events (as kube-apiserver does) with
  renamed fields (``regarding`` ↔ ``involvedObject``, ``note`` ↔ ``message`` …).

Called by :mod:`.rest` for bodies in and out and by :mod:`.watch` (through the ``view``
function) for watch events. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from computedomain.api import jsoncodec

from .registry import ResourceType
from .store import dumps

# events.k8s.io/v1 field -> core/v1 field
_EVENT_FIELDS = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
_EVENT_FIELDS_BACK = {v: k for k, v in _EVENT_FIELDS.items()}


@attrs.frozen
class View:
    """Converters between a served version and storage; identity when ``id`` is ""."""

    id: str
    to_view: Callable[[dict[str, Any]], dict[str, Any]]
    to_storage: Callable[[dict[str, Any]], dict[str, Any]]

    def raw(self) -> Callable[[bytes], bytes] | None:
        """The watch-line renderer (None for the identity view)."""
        if not self.id:
            return None
        to_view = self.to_view
        return lambda raw: dumps(to_view(jsoncodec.loads(raw)))

    def render(self, raw: bytes) -> bytes:
        return raw if not self.id else dumps(self.to_view(jsoncodec.loads(raw)))


def _identity(obj: dict[str, Any]) -> dict[str, Any]:
    return obj


IDENTITY = View("", _identity, _identity)


def _rename(obj: dict[str, Any], table: dict[str, str], api_version: str) -> dict[str, Any]:
    out = {table.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = api_version
    return out


def view_for(rt: ResourceType, storage: ResourceType | None) -> View:
    """The view of ``rt`` over its storage (``storage``: the storage-version resource)."""
    if rt.conversion == "events.k8s.io/v1":
        return View(
            rt.group_version,
            lambda o: _rename(o, _EVENT_FIELDS_BACK, "events.k8s.io/v1"),
            lambda o: _rename(o, _EVENT_FIELDS, "v1"),
        )
    if storage is None or storage.version == rt.version or storage.group != rt.group:
        return IDENTITY
    gv, sgv = rt.group_version, storage.group_version

    def to_view(o: dict[str, Any]) -> dict[str, Any]:
        o["apiVersion"] = gv
        return o

    def to_storage(o: dict[str, Any]) -> dict[str, Any]:
        o["apiVersion"] = sgv
        return o

    return View(gv, to_view, to_storage)


def defaulting(view: View, default: Callable[[dict[str, Any]], dict[str, Any]]) -> View:
    """``view`` followed by schema defaulting (objects stored before a schema change)."""
    to_view = view.to_view
    return View(view.id + "+defaults", lambda o: default(to_view(o)), view.to_storage)


def field_label(rt: ResourceType, label: str) -> str:
    """Field-selector label of a view, translated to the stored field path."""
    if rt.conversion == "events.k8s.io/v1":
        head, _, rest = label.partition(".")
        mapped = _EVENT_FIELDS.get(head, head)
        return f"{mapped}.{rest}" if rest else mapped
    return label
