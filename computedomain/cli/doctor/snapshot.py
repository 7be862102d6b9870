"""The objects a diagnosis looks at, as read from the API, and lookups over them.

:class:`Snapshot` is plain data (JSON dicts as the API returns them), filled by
:mod:`.gathering` or written by hand in tests. :class:`Index` builds the lookups every check
needs once (objects by UID, pods by node, events by the object they concern, the other
domains by UID) so the checks in :mod:`.workloads` and :mod:`.daemons` stay short. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from computedomain.api import names

Obj = Mapping[str, Any]


def _tuple(items: Iterable[Obj]) -> tuple[Obj, ...]:
    return tuple(items)


@attrs.frozen
class Snapshot:
    """Everything :func:`~.diagnosis.diagnose` reads.

    ``domains`` are the ComputeDomains to examine; ``all_domains`` every domain visible (so a
    node labelled for another domain can be named). ``workload_pods`` and ``claims`` may hold
    objects of other domains or none: the checks pick their own by the claims' opaque config.
    """

    domains: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    all_domains: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    cliques: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    daemon_sets: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    daemon_pods: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    workload_pods: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    claims: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    slices: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    nodes: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    plugin_pods: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)
    events: tuple[Obj, ...] = attrs.field(default=(), converter=_tuple)


def meta(obj: Obj | None) -> Mapping[str, Any]:
    raw = (obj or {}).get("metadata")
    return raw if isinstance(raw, Mapping) else {}


def name(obj: Obj | None) -> str:
    return str(meta(obj).get("name") or "")


def namespace(obj: Obj | None) -> str:
    return str(meta(obj).get("namespace") or "")


def uid(obj: Obj | None) -> str:
    return str(meta(obj).get("uid") or "")


def labels(obj: Obj | None) -> Mapping[str, str]:
    """The object's labels; a malformed entry (a key or value that is not a string, which the
    API server would never store) is left out rather than reaching code that hashes it."""
    raw = meta(obj).get("labels")
    if not isinstance(raw, Mapping):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}


def ref(obj: Obj | None) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
    ns = namespace(obj)
    return f"{ns}/{name(obj)}" if ns else name(obj)


def section(obj: Obj | None, key: str) -> Mapping[str, Any]:
    raw = (obj or {}).get(key)
    return raw if isinstance(raw, Mapping) else {}


def items(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a list field (anything else is ignored: bad data never crashes)."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def event_time(event: Obj) -> str:
    """When an event was last seen, as an RFC 3339 string that sorts in time order."""
    series = section(event, "series")
    for value in (
        series.get("lastObservedTime"),
        event.get("lastTimestamp"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        meta(event).get("creationTimestamp"),
    ):
        if value:
            return str(value)
    return ""


def slice_node(obj: Obj) -> str:
    """The node a ResourceSlice belongs to (``spec.nodeName``), "" for network slices."""
    return str(section(obj, "spec").get("nodeName") or "")


def slice_clique(obj: Obj) -> str:
    """The ``cliqueID`` device attribute our plugin publishes ("" when absent)."""
    for device in items(section(obj, "spec").get("devices")):
        attrs_ = device.get("attributes")
        if isinstance(attrs_, Mapping):
            value = attrs_.get(names.ATTRIBUTE_CLIQUE_ID)
            if isinstance(value, Mapping) and value.get("string"):
                return str(value["string"])
    return ""


class Index:
    """Lookups over one snapshot, built once. Pure."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.domain_by_uid: dict[str, Obj] = {uid(d): d for d in snapshot.all_domains}
        for domain in snapshot.domains:
            self.domain_by_uid.setdefault(uid(domain), domain)
        self.node_by_name: dict[str, Obj] = {name(n): n for n in snapshot.nodes}
        self.slices_by_node: dict[str, list[Obj]] = defaultdict(list)
        for item in snapshot.slices:
            if section(item, "spec").get("driver") == names.DRIVER_NAME and slice_node(item):
                self.slices_by_node[slice_node(item)].append(item)
        self.plugin_pods_by_node: dict[str, list[Obj]] = defaultdict(list)
        for pod in snapshot.plugin_pods:
            node = str(section(pod, "spec").get("nodeName") or "")
            if node:
                self.plugin_pods_by_node[node].append(pod)
        self.claim_by_ref: dict[tuple[str, str], Obj] = {
            (namespace(c), name(c)): c for c in snapshot.claims
        }
        self._events: dict[tuple[str, ...], list[Obj]] = defaultdict(list)
        for event in sorted(snapshot.events, key=event_time):
            involved = section(event, "involvedObject")
            kind = str(involved.get("kind") or "")
            if involved.get("uid"):
                self._events[(kind, str(involved["uid"]))].append(event)
            else:
                key = (kind, str(involved.get("namespace") or ""), str(involved.get("name") or ""))
                self._events[key].append(event)

    def domain_ref(self, domain_uid: str) -> str | None:
        """``namespace/name`` of the domain with this UID, None when no such domain exists."""
        domain = self.domain_by_uid.get(domain_uid)
        return ref(domain) if domain is not None else None

    def events_of(self, kind: str, obj: Obj) -> list[Obj]:
        """Events about ``obj`` (matched by UID, or by name where an event has no UID), oldest
        first. Events about an earlier object of the same name (another UID) are left out."""
        by_uid = self._events.get((kind, uid(obj)), []) if uid(obj) else []
        by_name = self._events.get((kind, namespace(obj), name(obj)), [])
        return sorted([*by_uid, *by_name], key=event_time)

    def latest_event(
        self, kind: str, obj: Obj, reasons: Sequence[str] = (), *, contains: str = ""
    ) -> Obj | None:
        """The newest event about ``obj`` with one of ``reasons`` (any when empty) or whose
        message contains ``contains``; None when there is none."""
        found = None
        for event in self.events_of(kind, obj):
            reason = str(event.get("reason") or "")
            message = str(event.get("message") or "")
            wanted = not reasons and not contains
            if wanted or reason in reasons or (contains and contains in message):
                found = event
        return found
