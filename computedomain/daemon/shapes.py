"""Where the membership list lives: the strategy objects of clique mode and status mode.

Upstream has two near-twin managers (one for ``ComputeDomainClique.daemons``, one for
``ComputeDomain.status.nodes``). We have one membership module
(:mod:`computedomain.daemon.membership`) and one apply loop
(:mod:`computedomain.daemon.registration`); what differs between the modes is only *where* the
list is and how it is written, which is all a :class:`Shape` says. ``main`` picks one shape
once, from the feature gates (:mod:`computedomain.daemon.modes`).

Reading is lenient (a malformed peer entry is read as best it can be and never dropped) and
writing touches only the own entry in the raw list, so fields we do not model, and entries we
cannot parse, survive our writes untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from computedomain.api import convert, names
from computedomain.api.models import DaemonInfo, Status
from computedomain.daemon.identity import Identity
from computedomain.daemon.membership import Change, Planned, Scope, find
from computedomain.kube import resources
from computedomain.kube.rest import Api, PatchType

_STATUSES = {status.value: status for status in Status}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def lenient_entry(raw: Mapping[str, Any], key: str) -> DaemonInfo:
    """A list item as a DaemonInfo, whatever its shape. Pure; never raises.

    A missing or non-integer index reads as -1 (outside every index space), an unknown status
    as None (absent).
    """
    index = raw.get("index")
    status = raw.get("status")
    pod_uid = raw.get("podUID")
    return DaemonInfo(
        node_name=_text(raw.get(key)),
        ip_address=_text(raw.get("ipAddress")),
        clique_id=_text(raw.get("cliqueID")),
        index=index if isinstance(index, int) and not isinstance(index, bool) else -1,
        status=_STATUSES.get(status) if isinstance(status, str) else None,
        pod_uid=pod_uid if isinstance(pod_uid, str) and pod_uid else None,
    )


def _wire_entry(entry: DaemonInfo, key: str) -> dict[str, Any]:
    wire = convert.to_wire(entry)
    if key != "nodeName":
        wire[key] = wire.pop("nodeName")
    return wire


def _own_position(items: list[Any], node_name: str, key: str) -> int | None:
    """Where the own item is in the raw list (None: absent). Pure."""
    return next(
        (i for i, it in enumerate(items) if isinstance(it, dict) and it.get(key) == node_name),
        None,
    )


def _has_owner(refs: Any, uid: str) -> bool:
    """Whether the raw ownerReferences ``refs`` name ``uid``. Pure."""
    return any(isinstance(r, dict) and r.get("uid") == uid for r in refs or ())


def _with_change(items: list[Any], planned: Planned, node_name: str, key: str) -> list[Any]:
    """The raw list after ``planned``: only the own item changes. Pure.

    A new list; items other than the own one are the same objects as in ``items`` (never
    mutated, only serialised), so a write costs no deep copy of the whole object.
    """
    result = list(items)
    pos = _own_position(result, node_name, key)
    if planned.change is Change.REMOVED:
        if pos is not None:
            del result[pos]
        return result
    assert planned.entry is not None
    wire = _wire_entry(planned.entry, key)
    if pos is None:
        result.append(wire)
    else:
        # Keep fields we do not model; drop the ones our entry no longer has (e.g. status).
        modelled = {"index", "ipAddress", "cliqueID", "status", "podUID", key}
        kept = {k: v for k, v in result[pos].items() if k not in modelled}
        result[pos] = kept | wire
    return result


def _status_patch(
    items: list[Any], planned: Planned, node_name: str, key: str, pointer: str
) -> list[dict[str, Any]] | None:
    """A JSON patch (RFC 6902) that sets only the own item's status, or None. Pure.

    Only for a status change of an own item found in ``items``. The patch first tests that the
    item at that position is still the own one as read (every identifying field we model, the
    status aside), then replaces or adds its status: concurrent writes to other entries leave it
    valid, so a readiness flip needs no resourceVersion and cannot lose a compare-and-swap race.
    A removal that shifts the list, or a change of the own item, fails the test (422).
    """
    if planned.change is not Change.STATUS_SET or planned.entry is None:
        return None
    pos = _own_position(items, node_name, key)
    if pos is None or planned.entry.status is None:
        return None
    item = items[pos]
    path = f"{pointer}/{pos}"
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": f"{path}/{field}", "value": item[field]}
        for field in (key, "index", "ipAddress", "cliqueID", "podUID")
        if field in item
    ]
    verb = "replace" if "status" in item else "add"
    ops.append({"op": verb, "path": f"{path}/status", "value": planned.entry.status.value})
    return ops


def _insert_patch(
    items: list[Any], planned: Planned, key: str, pointer: str
) -> list[dict[str, Any]] | None:
    """A JSON patch that appends the own new entry if the list still holds exactly the names
    and indices it was planned from, or None. Pure.

    Each item's name and index is tested in place, the entry is appended, and its position is
    tested to be right after them (no one appended meanwhile): so the index chosen is still
    free and the name still absent, which is all the compare-and-swap of the whole object
    guaranteed. A peer's status change or new IP does not touch these fields, so it does not
    make a join fail. Any other change fails a test (422) and the join is planned again.
    """
    if planned.change is not Change.INSERTED or planned.entry is None:
        return None
    ops: list[dict[str, Any]] = []
    for pos, item in enumerate(items):
        if not isinstance(item, dict) or key not in item or "index" not in item:
            return None  # an entry we cannot pin down: only the whole-object write is safe
        ops.append({"op": "test", "path": f"{pointer}/{pos}/{key}", "value": item[key]})
        ops.append({"op": "test", "path": f"{pointer}/{pos}/index", "value": item["index"]})
    wire = _wire_entry(planned.entry, key)
    ops.append({"op": "add", "path": f"{pointer}/-", "value": wire})
    ops.append({"op": "test", "path": f"{pointer}/{len(items)}/{key}", "value": wire[key]})
    return ops


class Shape(Protocol):
    """Where one daemon's membership list lives and how it is written."""

    @property
    def resource(self) -> resources.Resource: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def scope(self) -> Scope: ...
    @property
    def can_create(self) -> bool: ...
    @property
    def short_kind(self) -> str:
        """How upstream's log lines name the object."""
        ...

    def entries(self, obj: Mapping[str, Any]) -> tuple[DaemonInfo, ...]:
        """The list, leniently parsed, in list order. Pure."""
        ...

    def rejects(self, obj: Mapping[str, Any]) -> str | None:
        """Why ``obj`` is not ours to write (another domain's object), or None. Pure."""
        ...

    def body(self, obj: Mapping[str, Any], planned: Planned) -> dict[str, Any]:
        """The object to write back: ``obj`` with ``planned`` applied to the own entry. Pure."""
        ...

    def new_object(self, planned: Planned) -> dict[str, Any]:
        """A new object holding ``planned`` (only when ``can_create``). Pure."""
        ...

    async def write(self, api: Api, body: dict[str, Any]) -> dict[str, Any]:
        """Compare-and-swap ``body`` (it carries the resourceVersion read). Raises ApiError."""
        ...

    def patch_for(self, obj: Mapping[str, Any], planned: Planned) -> list[dict[str, Any]] | None:
        """A JSON patch that makes ``planned`` true on ``obj`` without a compare-and-swap, or
        None when the change needs the whole-object write. Pure."""
        ...

    async def patch(self, api: Api, ops: list[dict[str, Any]]) -> dict[str, Any]:
        """Apply a JSON patch of :meth:`patch_for`. Raises ApiError (Invalid: a test failed)."""
        ...

    def num_nodes(self, obj: Mapping[str, Any]) -> int | None:
        """``spec.numNodes`` when the object has it (IP mode waits for it). Pure."""
        ...


@attrs.frozen
class CliqueShape:
    """Clique mode: ``daemons`` of the ComputeDomainClique ``<cdUID>.<cliqueID>``."""

    identity: Identity
    limit: int
    resource: resources.Resource = resources.COMPUTE_DOMAIN_CLIQUES
    can_create: bool = True
    short_kind: str = "CDClique"

    @property
    def namespace(self) -> str:
        return self.identity.pod_namespace

    @property
    def name(self) -> str:
        return names.clique_object_name(self.identity.cd_uid, self.identity.clique_id)

    @property
    def scope(self) -> Scope:
        return Scope(limit=self.limit)  # one clique per object: every entry counts

    def entries(self, obj: Mapping[str, Any]) -> tuple[DaemonInfo, ...]:
        items = obj.get("daemons") or []
        return tuple(lenient_entry(i, "nodeName") for i in items if isinstance(i, dict))

    def rejects(self, obj: Mapping[str, Any]) -> str | None:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        owner = labels.get(names.COMPUTE_DOMAIN_LABEL)
        if owner != self.identity.cd_uid:
            return f"label {names.COMPUTE_DOMAIN_LABEL}={owner!r} is not {self.identity.cd_uid}"
        return None

    def _with_owner(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """``metadata`` with the own pod among the owners (a new dict, never a mutation)."""
        refs = list(metadata.get("ownerReferences") or [])
        if self.identity.pod_uid and not _has_owner(refs, self.identity.pod_uid):
            refs.append(self.identity.owner_reference())
        return {**metadata, "ownerReferences": refs} if refs else dict(metadata)

    def body(self, obj: Mapping[str, Any], planned: Planned) -> dict[str, Any]:
        result = dict(obj)  # only the changed path is copied; the rest is shared, not mutated
        items = list(obj.get("daemons") or [])
        result["daemons"] = _with_change(items, planned, self.identity.node_name, "nodeName")
        result["metadata"] = self._with_owner(dict(obj.get("metadata") or {}))
        return result

    def new_object(self, planned: Planned) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": {
                names.COMPUTE_DOMAIN_LABEL: self.identity.cd_uid,
                names.CLIQUE_LABEL: self.identity.clique_id,
            },
        }
        return {
            "apiVersion": names.GROUP_VERSION,
            "kind": names.CLIQUE_KIND,
            "metadata": self._with_owner(metadata),
            "daemons": _with_change([], planned, self.identity.node_name, "nodeName"),
        }

    async def write(self, api: Api, body: dict[str, Any]) -> dict[str, Any]:
        return await api.update(self.resource, body)

    def patch_for(self, obj: Mapping[str, Any], planned: Planned) -> list[dict[str, Any]] | None:
        refs = (obj.get("metadata") or {}).get("ownerReferences")
        uid = self.identity.pod_uid
        add_owner = bool(uid and not _has_owner(refs, uid))
        if add_owner and (planned.change is not Change.INSERTED or not isinstance(refs, list)):
            return None  # the whole-object write also adds the own pod as an owner
        items = list(obj.get("daemons") or [])
        if planned.change is Change.INSERTED:
            if not isinstance(obj.get("daemons"), list):
                return None  # nothing to append to
            ops = _insert_patch(items, planned, "nodeName", "/daemons")
            if ops is not None and add_owner:
                owner = self.identity.owner_reference()
                ops.append({"op": "add", "path": "/metadata/ownerReferences/-", "value": owner})
            return ops
        return _status_patch(items, planned, self.identity.node_name, "nodeName", "/daemons")

    async def patch(self, api: Api, ops: list[dict[str, Any]]) -> dict[str, Any]:
        return await api.patch(
            self.resource, self.name, ops, namespace=self.namespace, patch_type=PatchType.JSON
        )

    def num_nodes(self, obj: Mapping[str, Any]) -> int | None:
        return None


@attrs.frozen
class StatusShape:
    """Status mode: ``status.nodes`` of the ComputeDomain, written through ``/status``."""

    identity: Identity
    limit: int
    resource: resources.Resource = resources.COMPUTE_DOMAINS
    can_create: bool = False
    short_kind: str = "ComputeDomain"

    @property
    def namespace(self) -> str:
        return self.identity.cd_namespace

    @property
    def name(self) -> str:
        return self.identity.cd_name

    @property
    def scope(self) -> Scope:
        return Scope(limit=self.limit, clique_id=self.identity.clique_id)

    def entries(self, obj: Mapping[str, Any]) -> tuple[DaemonInfo, ...]:
        items = (obj.get("status") or {}).get("nodes") or []
        return tuple(lenient_entry(i, "name") for i in items if isinstance(i, dict))

    def rejects(self, obj: Mapping[str, Any]) -> str | None:
        uid = (obj.get("metadata") or {}).get("uid")
        if uid != self.identity.cd_uid:
            return f"ComputeDomain UID {uid!r} is not {self.identity.cd_uid} (recreated?)"
        return None

    def body(self, obj: Mapping[str, Any], planned: Planned) -> dict[str, Any]:
        result = dict(obj)  # only the changed path is copied; the rest is shared, not mutated
        status = dict(obj.get("status") or {})
        items = list(status.get("nodes") or [])
        status["nodes"] = _with_change(items, planned, self.identity.node_name, "name")
        status.setdefault("status", Status.NOT_READY.value)
        result["status"] = status
        return result

    def new_object(self, planned: Planned) -> dict[str, Any]:
        msg = "the daemon never creates a ComputeDomain"
        raise NotImplementedError(msg)

    async def write(self, api: Api, body: dict[str, Any]) -> dict[str, Any]:
        return await api.update_status(self.resource, body)

    def patch_for(self, obj: Mapping[str, Any], planned: Planned) -> list[dict[str, Any]] | None:
        status = obj.get("status") or {}
        if "status" not in status:
            return None  # the whole-object write also sets the domain's global status
        items = list(status.get("nodes") or [])
        ops = _status_patch(items, planned, self.identity.node_name, "name", "/status/nodes")
        if ops is None:
            return None
        # The domain is found by name: pin its UID, as the resourceVersion of a whole-object
        # write would (a domain deleted and recreated under the name is not ours).
        return [{"op": "test", "path": "/metadata/uid", "value": self.identity.cd_uid}, *ops]

    async def patch(self, api: Api, ops: list[dict[str, Any]]) -> dict[str, Any]:
        return await api.patch(
            self.resource,
            self.name,
            ops,
            namespace=self.namespace,
            patch_type=PatchType.JSON,
            subresource="status",
        )

    def num_nodes(self, obj: Mapping[str, Any]) -> int | None:
        value = (obj.get("spec") or {}).get("numNodes")
        return value if isinstance(value, int) else 0


def own_entry(shape: Shape, obj: Mapping[str, Any], node_name: str) -> DaemonInfo | None:
    """The own entry in ``obj``, if any. Pure."""
    entries = shape.entries(obj)
    pos = find(entries, node_name)
    return entries[pos] if pos is not None else None
