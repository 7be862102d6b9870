"""Create, update (incl. the status subresource) and patch, with kube-apiserver semantics.

Called by :mod:`.rest` (HTTP) and by in-process controllers (:mod:`.gc`, :mod:`.crds`).
Functions take ownership of the object dicts they are given (they fill in and store them).
Every function here is synchronous: the read of the current object, the checks and the
commit happen without an await in between, which makes the resourceVersion precondition a
real compare-and-swap. Errors are :class:`.status.ApiStatusError`.

Semantics kept: uid/creationTimestamp/generation are server-owned; generation bumps only when
something outside metadata (and status, for kinds with a status subresource) changed; the main
endpoint keeps the stored status and ``/status`` keeps everything else; an update that changes
nothing is not written (no new resourceVersion, no watch event); an update that removes the
last finalizer of an object being deleted (with no grace period left) deletes it. A write
that names its field manager records field ownership (:mod:`.managedfields`); an apply patch
merges through it and creates the object when it is missing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from computedomain.api import jsoncodec

from . import admission, conversion, managedfields, objects, patching, status
from .crds import CRD_KEY
from .registry import ResourceType
from .state import ApiState
from .store import Entry, Event, dumps

_SERVER_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")


@attrs.frozen
class WriteResult:
    entry: Entry  # the stored (or, after a delete, the final) version
    created: bool = False
    deleted: bool = False
    warnings: tuple[str, ...] = ()


def commit(state: ApiState, rt: ResourceType, key: str, obj: dict[str, Any] | None) -> Event:
    """Store ``obj`` (None: remove) with fresh index values; not idempotent.

    In dry-run mode (``state.dry_run``, set around one synchronous write) nothing is stored:
    the returned event describes what would have been, with the current resourceVersion.
    """
    if state.dry_run:
        return _dry_commit(state, rt, key, obj)
    if obj is None:
        ev = state.store.commit(rt.storage_key, key, None)
    else:
        labels, fields, owners = objects.index_values(rt, obj)
        ev = state.store.commit(
            rt.storage_key, key, obj, labels=labels, fields=fields, owners=owners
        )
    return ev


@contextlib.contextmanager
def dry_run(state: ApiState, query: Any, also: Sequence[str] = ()) -> Iterator[None]:
    """Run the (synchronous) write inside in dry-run mode when ``dryRun=All`` was asked (in
    the query, or in a DeleteOptions body: ``also``): every check runs, nothing is stored (see
    :func:`.writes.commit`)."""
    values = [*(query.getall("dryRun", []) if hasattr(query, "getall") else []), *also]
    for value in values:
        if value != "All":
            raise status.invalid(
                "DryRun", "", "", [status.not_supported("dryRun", value, ("All",))]
            )
    state.dry_run = bool(values)
    try:
        yield
    finally:
        state.dry_run = False


def _dry_commit(state: ApiState, rt: ResourceType, key: str, obj: dict[str, Any] | None) -> Event:
    prev = state.store.get(rt.storage_key, key)
    if obj is None:
        assert prev is not None
        return Event(state.store.rv, "DELETED", rt.storage_key, prev, prev)
    meta = obj.get("metadata") or {}
    if prev is None:
        meta.pop("resourceVersion", None)  # a dry-run create has no version yet
    labels, fields, owners = objects.index_values(rt, obj)
    uid = str(meta.get("uid", ""))
    entry = Entry(key, dumps(obj), prev.rv if prev else 0, uid, labels, fields, owners)
    return Event(state.store.rv, "MODIFIED" if prev else "ADDED", rt.storage_key, entry, prev)


def check_kind(rt: ResourceType, obj: dict[str, Any]) -> None:
    """400 when the body's apiVersion/kind do not belong to the endpoint; fills them in for
    built-ins (kube-apiserver decodes typed bodies with the endpoint's defaults)."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if rt.custom and not kind:
        raw = status.bad_request(f"Object 'Kind' is missing in '{_short(obj)}'")
        raise raw
    if api_version and api_version != rt.group_version:
        msg = (
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.group_version})"
        )
        raise status.bad_request(msg)
    if kind and kind != rt.kind:
        msg = f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        raise status.bad_request(msg)
    obj["apiVersion"] = rt.group_version
    obj["kind"] = rt.kind
    if not isinstance(obj.get("metadata", {}), dict):
        raise status.bad_request("metadata must be an object")


def _short(obj: dict[str, Any]) -> str:
    text = str(obj)
    return text if len(text) < 200 else text[:200] + "..."


def _check_namespace(state: ApiState, rt: ResourceType, ns: str, name: str) -> None:
    if not rt.namespaced:
        return
    entry = state.store.get(("", "namespaces"), ns)
    if entry is None:
        raise status.not_found("namespaces", "", ns)
    if b'"deletionTimestamp"' in entry.raw and entry.decode()["metadata"].get("deletionTimestamp"):
        err = status.forbidden(
            f'{rt.qualified} "{name}" is forbidden: unable to create new content in namespace '
            f"{ns} because it is being terminated",
            resource=rt.plural,
            group=rt.group,
            name=name,
        )
        raise err


def _field_validation(rt: ResourceType, unknown: list[str], mode: str) -> tuple[str, ...]:
    if not unknown:
        return ()
    if mode == "Strict":
        raise admission.strict_error(rt, unknown)
    if mode == "Ignore":
        return ()
    return tuple(f'unknown field "{p}"' for p in unknown)


def create(
    state: ApiState,
    rt: ResourceType,
    namespace: str,
    obj: dict[str, Any],
    *,
    field_validation: str = "Warn",
    manager: str | None = None,
    operation: str = managedfields.UPDATE,
) -> WriteResult:
    """Create ``obj`` in ``namespace`` ("" for cluster-scoped); raises 409 AlreadyExists.
    ``manager`` (with ``operation``) becomes the owner of every field."""
    check_kind(rt, obj)
    meta = obj.setdefault("metadata", {})
    body_ns = meta.get("namespace")
    if rt.namespaced:
        if body_ns and body_ns != namespace:
            raise status.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
        namespace = ""
    if meta.get("resourceVersion"):
        raise status.bad_request("resourceVersion should not be set on objects to be created")
    if not meta.get("name") and isinstance(meta.get("generateName"), str):
        meta["name"] = objects.generated_name(meta["generateName"])
    name = meta.get("name")
    for field in (*_SERVER_META, "generation"):
        meta.pop(field, None)
    meta["uid"] = objects.new_uid()
    meta["creationTimestamp"] = objects.rfc3339(state.clock())
    if rt.generation or rt.custom:
        meta["generation"] = 1
    if rt.reset_status_on_create or (rt.custom and rt.has_status):
        obj.pop("status", None)
    author = _manager(rt, manager, operation) if manager is not None else None
    if author is not None and operation == managedfields.APPLY:
        managedfields.record_update(state, rt, None, obj, author)  # what was applied, no defaults
    obj, unknown = admission.mutate(state, rt, obj, create=True)
    warnings = _field_validation(rt, unknown, field_validation)
    if author is not None and operation != managedfields.APPLY:
        managedfields.record_update(state, rt, None, obj, author)
    admission.prepare(state, rt, obj, None)
    admission.validate(state, rt, obj, None)
    assert isinstance(name, str)
    if rt.namespaced:
        _check_namespace(state, rt, namespace, name)
    if rt.custom:
        crd = state.store.get(CRD_KEY, f"{rt.plural}.{rt.group}")
        if crd is not None and b'"deletionTimestamp"' in crd.raw:
            raise status.method_not_allowed(
                "create not allowed while custom resource definition is terminating"
            )
    key = objects.key_of(namespace, name)
    if state.store.get(rt.storage_key, key) is not None:
        raise status.already_exists(rt.plural, rt.group, name)
    ev = commit(state, rt, key, obj)
    return WriteResult(ev.new, created=True, warnings=warnings)


def get_current(state: ApiState, rt: ResourceType, namespace: str, name: str) -> Entry:
    entry = state.store.get(
        rt.storage_key, objects.key_of(namespace if rt.namespaced else "", name)
    )
    if entry is None:
        raise status.not_found(rt.plural, rt.group, name)
    return entry


def update(
    state: ApiState,
    rt: ResourceType,
    namespace: str,
    name: str,
    obj: dict[str, Any],
    *,
    subresource: str = "",
    field_validation: str = "Warn",
    manager: str | None = None,
) -> WriteResult:
    """Replace the object (PUT); ``metadata.resourceVersion`` in ``obj`` is a precondition."""
    check_kind(rt, obj)
    meta = obj.setdefault("metadata", {})
    if meta.get("name") not in (None, "", name):
        raise status.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({name})"
        )
    if rt.namespaced and meta.get("namespace") not in (None, "", namespace):
        raise status.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    current = get_current(state, rt, namespace, name)
    return replace(
        state,
        rt,
        current,
        obj,
        subresource=subresource,
        field_validation=field_validation,
        manager=manager,
    )


def _manager(
    rt: ResourceType, name: str, operation: str, subresource: str = ""
) -> managedfields.Manager:
    version = f"{rt.group}/{rt.version}" if rt.group else rt.version
    return managedfields.Manager(name, operation, version, subresource)


def replace(
    state: ApiState,
    rt: ResourceType,
    current: Entry,
    obj: dict[str, Any],
    *,
    subresource: str = "",
    field_validation: str = "Warn",
    manager: str | None = None,
) -> WriteResult:
    """The shared tail of update and patch: ``obj`` replaces ``current``. ``manager`` (an
    update's) gets the fields it changed; without one, ownership is left as ``obj`` has it."""
    old = current.decode()
    om = old["metadata"]
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise status.bad_request("metadata must be an object")
    name = om["name"]
    want_rv = meta.get("resourceVersion")
    if want_rv and str(want_rv) != om.get("resourceVersion"):
        raise status.conflict(rt.plural, rt.group, name)
    want_uid = meta.get("uid")
    if want_uid and want_uid != om.get("uid"):
        raise status.conflict(
            rt.plural,
            rt.group,
            name,
            f"Precondition failed: UID in precondition: {want_uid}, UID in object meta: "
            f"{om.get('uid')}",
        )
    if subresource == "status":
        obj = _status_merge(rt, obj, old)
        meta = obj["metadata"]
    elif rt.has_status:
        if "status" in old:
            obj["status"] = old["status"]
        else:
            obj.pop("status", None)
    meta["name"] = name
    if rt.namespaced:
        meta["namespace"] = om.get("namespace", "")
    else:
        meta.pop("namespace", None)
    for field in _SERVER_META:
        if field in om:
            meta[field] = om[field]
        else:
            meta.pop(field, None)
    meta.pop("generation", None)
    if "generation" in om:
        meta["generation"] = om["generation"]
    obj, unknown = admission.mutate(state, rt, obj, create=False, old=old)
    meta = obj["metadata"]  # mutation may have produced new dicts
    warnings = _field_validation(rt, unknown, field_validation)
    if "generation" in om and objects.spec_view(rt, obj) != objects.spec_view(rt, old):
        meta["generation"] = int(om["generation"]) + 1
    meta["resourceVersion"] = om.get("resourceVersion")
    if manager is not None:
        managedfields.record_update(
            state, rt, old, obj, _manager(rt, manager, managedfields.UPDATE, subresource)
        )
    elif "managedFields" in om:
        meta.setdefault("managedFields", om["managedFields"])
    admission.prepare(state, rt, obj, old)
    if obj == old:
        return WriteResult(current, warnings=warnings)
    admission.validate(state, rt, obj, old, status_only=subresource == "status")
    if (
        not meta.get("finalizers")
        and om.get("deletionTimestamp")
        and not om.get("deletionGracePeriodSeconds")
    ):
        commit(state, rt, current.key, obj)  # the final state, then the removal
        ev = commit(state, rt, current.key, None)
        return WriteResult(ev.new, deleted=True, warnings=warnings)
    ev = commit(state, rt, current.key, obj)
    return WriteResult(ev.new, warnings=warnings)


def _status_merge(rt: ResourceType, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The object a ``/status`` write stores: the old object with the new status (and, for
    built-ins, the new labels and annotations, as their status strategies allow)."""
    merged: dict[str, Any] = jsoncodec.copy(old)
    if "status" in new:
        merged["status"] = new["status"]
    else:
        merged.pop("status", None)
    nm = new.get("metadata") or {}
    mm = merged["metadata"]
    mm["resourceVersion"] = nm.get("resourceVersion")
    if nm.get("uid"):
        mm["uid"] = nm["uid"]
    if not rt.custom:
        for field in ("labels", "annotations"):
            if field in nm:
                mm[field] = nm[field]
            else:
                mm.pop(field, None)
    return merged


def patch(
    state: ApiState,
    rt: ResourceType,
    namespace: str,
    name: str,
    *,
    content_type: str,
    body: bytes,
    subresource: str = "",
    field_validation: str = "Warn",
    view: conversion.View = conversion.IDENTITY,
    served: ResourceType | None = None,
    manager: str | None = None,
    apply_manager: str | None = None,
    force: bool = False,
) -> WriteResult:
    """Apply a merge/JSON/strategic-merge patch, or an apply patch, to the current object.

    ``rt`` is the storage resource; with a version ``view`` the patch applies to the object
    as ``served`` (the requested resource) shows it, as clients wrote it against that form.
    ``manager`` owns what a patch changes; an apply patch needs ``apply_manager`` (named
    explicitly, as ``?fieldManager=``), and ``force`` takes conflicting fields from others.
    """
    if patching.is_apply(content_type):
        return _apply(
            state,
            rt,
            namespace,
            name,
            body,
            subresource=subresource,
            field_validation=field_validation,
            view=view,
            served=served or rt,
            manager=apply_manager,
            force=force,
        )
    current = get_current(state, rt, namespace, name)
    old = current.decode()
    shown = view.to_view(current.decode()) if view.id else old
    new = patching.apply_patch(served or rt, content_type, shown, body)
    if not isinstance(new, dict):
        raise status.bad_request("the patch produced something that is not an object")
    if view.id:
        if new.get("apiVersion") != shown.get("apiVersion"):
            raise status.bad_request("apiVersion cannot be changed by a patch")
        new = view.to_storage(new)
    nm = new.get("metadata")
    if not isinstance(nm, dict):
        raise status.bad_request("metadata must be an object")
    if nm.get("resourceVersion") == old["metadata"].get("resourceVersion"):
        nm.pop("resourceVersion", None)  # only an explicit RV in the patch is a precondition
    if nm.get("name") not in (None, name):
        raise status.bad_request(
            f"the name of the object ({nm.get('name')}) does not match the name on the URL ({name})"
        )
    for field in ("apiVersion", "kind"):
        if new.get(field) != old.get(field):
            raise status.bad_request(f"{field} cannot be changed by a patch")
    return replace(
        state,
        rt,
        current,
        new,
        subresource=subresource,
        field_validation=field_validation,
        manager=manager,
    )


def _apply(
    state: ApiState,
    rt: ResourceType,
    namespace: str,
    name: str,
    body: bytes,
    *,
    subresource: str,
    field_validation: str,
    view: conversion.View,
    served: ResourceType,
    manager: str | None,
    force: bool,
) -> WriteResult:
    """Server-side apply: create the object from the configuration, or merge it in."""
    if not manager:
        raise status.invalid_patch_options(
            "fieldManager", "Required value: is required for apply patch", "FieldValueRequired"
        )
    managedfields.check_name(manager)
    config = patching.decode_apply(body)
    check_kind(served, config)
    meta = config.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise status.bad_request("metadata must be an object")
    if meta.get("name") not in (None, name):
        raise status.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({name})"
        )
    meta["name"] = name
    key = objects.key_of(namespace if rt.namespaced else "", name)
    current = state.store.get(rt.storage_key, key)
    if current is None:
        if subresource:
            raise status.not_found(rt.plural, rt.group, name)
        obj = view.to_storage(config) if view.id else config
        return create(
            state,
            rt,
            namespace,
            obj,
            field_validation=field_validation,
            manager=manager,
            operation=managedfields.APPLY,
        )
    shown = view.to_view(current.decode()) if view.id else current.decode()
    who = _manager(served, manager, managedfields.APPLY, subresource)
    merged = managedfields.apply(state, served, shown, config, who, force=force)
    if view.id:
        merged = view.to_storage(merged)
    return replace(
        state, rt, current, merged, subresource=subresource, field_validation=field_validation
    )
