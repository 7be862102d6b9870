"""Field ownership (``metadata.managedFields``) and server-side apply.

Every write records who set which fields, as kube-apiserver does: a create or an update
(operation ``Update``) gives its manager the fields it added or changed and takes them from the
others; fields that disappear leave every manager. An apply (operation ``Apply``, a PATCH of
``application/apply-patch+yaml``) declares the fields its manager wants: the object becomes the
live one merged with the applied configuration, fields this manager applied before and no
longer applies are removed unless another manager owns them, and a field another manager owns
with a different value is a conflict (409, each field named) unless the apply forces it.
Managers are named by ``?fieldManager=`` or, for updates, by the User-Agent's program name.
Pure; called by :mod:`.writes`. Field sets and shapes are in :mod:`.fieldsets`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

import attrs

from computedomain.api import jsoncodec

from . import fieldsets, objects, status
from .fieldsets import FieldSet, Shape
from .registry import ResourceType
from .state import ApiState

APPLY: Final = "Apply"
UPDATE: Final = "Update"
_MAX_MANAGER: Final = 128
# Fields of the object no manager owns: identity and what the server sets.
_IGNORED_META: Final = frozenset({
    "name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink",
})  # fmt: skip


@attrs.frozen
class Manager:
    """Who writes: a manager name, the operation, the API version written and the
    subresource ("" for the object itself)."""

    name: str
    operation: str = UPDATE
    api_version: str = ""
    subresource: str = ""


def manager_name(query_value: str | None, user_agent: str) -> str:
    """The manager of an update: ``?fieldManager=``, else the User-Agent's program (the part
    before the first ``/``), as kube-apiserver derives it."""
    if query_value:
        return check_name(query_value)
    return user_agent.split("/", 1)[0][:_MAX_MANAGER]


def of_request(request: Any) -> str:
    """The manager an HTTP request names (its ``query`` and ``headers``)."""
    return manager_name(request.query.get("fieldManager"), request.headers.get("User-Agent", ""))


def check_name(name: str) -> str:
    if len(name) > _MAX_MANAGER:
        raise status.invalid_patch_options(
            "fieldManager", f"Too long: may not be more than {_MAX_MANAGER} bytes"
        )
    if not name.isprintable():
        raise status.invalid_patch_options(
            "fieldManager", "Invalid value: must only contain printable characters"
        )
    return name


def shape_of(state: ApiState, rt: ResourceType) -> Shape:
    """How objects of ``rt`` are structured: the CRD's schema, or the built-in rules."""
    if rt.custom:
        schema = state.schemas.get((rt.group, rt.version, rt.plural))
        return fieldsets.SchemaShape(getattr(schema, "node", None), root=True)
    return fieldsets.BuiltinShape()


_META_IGNORED: Final = dict.fromkeys(_IGNORED_META, True)
_OBJECT_IGNORED: Final = {"apiVersion": True, "kind": True, "metadata": _META_IGNORED}
_OBJECT_IGNORED_NO_STATUS: Final = {**_OBJECT_IGNORED, "status": True}


def _ignored(rt: ResourceType, subresource: str, *objs: dict[str, Any]) -> fieldsets.Ignored:
    """The fields of ``objs`` nobody owns: identity and server fields; everything but the
    status on ``/status``, and the status on the object itself (for kinds with a status)."""
    if subresource == "status":
        others = {name: True for obj in objs for name in obj if name not in ("status", "metadata")}
        return {**others, "metadata": _META_IGNORED}
    return _OBJECT_IGNORED_NO_STATUS if rt.has_status else _OBJECT_IGNORED


def _tracked(rt: ResourceType, obj: dict[str, Any], subresource: str) -> dict[str, Any]:
    """The part of ``obj`` whose fields are owned (see :func:`_ignored`)."""
    return fieldsets.without(obj, _ignored(rt, subresource, obj))


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    entries = (obj.get("metadata") or {}).get("managedFields")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _same(entry: dict[str, Any], manager: Manager) -> bool:
    return (
        entry.get("manager") == manager.name
        and entry.get("operation") == manager.operation
        and entry.get("subresource", "") == manager.subresource
    )


def _fields(entry: dict[str, Any]) -> FieldSet:
    fields = entry.get("fieldsV1")
    return fields if isinstance(fields, dict) else {}


def _stamp(now: datetime) -> str:
    return objects.rfc3339(now.replace(microsecond=0))


def _sorted(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        entries,
        key=lambda e: (
            e.get("operation", ""),
            e.get("time", ""),
            e.get("manager", ""),
            e.get("apiVersion", ""),
            e.get("subresource", ""),
        ),
    )


def _entry(manager: Manager, fields: FieldSet, now: datetime) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "manager": manager.name,
        "operation": manager.operation,
        "apiVersion": manager.api_version,
        "time": _stamp(now),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if manager.subresource:
        entry["subresource"] = manager.subresource
    return entry


def new_entry(manager: Manager, fields: FieldSet, now: datetime) -> dict[str, Any]:
    """One managedFields entry (for objects answered but not stored, such as reviews)."""
    return _entry(manager, fields, now)


def starting_entries(old: dict[str, Any] | None, new: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries a write starts from: those it sends when it sends any (``[{}]`` clears
    them), else the stored ones. Not copies: entries are replaced, never changed in place."""
    sent = (new.get("metadata") or {}).get("managedFields")
    if isinstance(sent, list) and sent:
        return [] if sent == [{}] else [e for e in sent if isinstance(e, dict)]
    return _entries(old) if old is not None else []


def record_update(
    state: ApiState,
    rt: ResourceType,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: Manager,
) -> None:
    """Set ``new``'s managedFields after a create (``old`` None) or an update by ``manager``."""
    shape = shape_of(state, rt)
    entries = starting_entries(old, new)
    removed: FieldSet = {}
    if old is None:
        tracked = _tracked(rt, new, manager.subresource)
        added = fieldsets.of_value(tracked, shape, apply=manager.operation == APPLY)
    else:
        ignored = _ignored(rt, manager.subresource, old, new)
        added, removed = fieldsets.changed(old, new, shape, ignored)
    _store(new, _updated(entries, manager, added, removed, state.clock))


def _updated(
    entries: list[dict[str, Any]],
    manager: Manager,
    added: FieldSet,
    removed: FieldSet,
    clock: Callable[[], datetime],
) -> list[dict[str, Any]]:
    """The entries once ``manager`` has added and removed fields (the clock is read only for
    an entry that changes)."""
    if not added and not removed:
        return entries
    out = []
    mine: dict[str, Any] | None = None
    for entry in entries:
        if _same(entry, manager):
            mine = entry
            continue
        fields = _fields(entry)
        if manager.operation == UPDATE:
            fields = fieldsets.difference(fields, added)
        if removed:
            fields = fieldsets.difference(fields, removed)
        if fields:
            out.append(entry if fields == _fields(entry) else {**entry, "fieldsV1": fields})
    own = _fields(mine or {})
    if not fieldsets.covers(own, added):
        own = fieldsets.union(own, added)
    if removed:
        own = fieldsets.difference(own, removed)
    if own:
        if mine is not None and own == _fields(mine):
            out.append(mine)
        else:
            out.append(_entry(manager, own, clock()))
    return _sorted(out) if len(out) > 1 else out


def _store(obj: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    meta = obj.setdefault("metadata", {})
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


def _manager_label(entry: dict[str, Any]) -> str:
    """A manager as kube-apiserver prints it in a conflict."""
    label = f'"{entry.get("manager", "")}"'
    if entry.get("subresource"):
        label = f'{label} with subresource "{entry["subresource"]}"'
    if entry.get("operation") == UPDATE:
        label = f"{label} using {entry.get('apiVersion', '')}"
        if entry.get("time"):
            label = f"{label} at {entry['time']}"
    return label


# (the owning manager's entry, the conflicting path)
Conflicts = list[tuple[dict[str, Any], tuple[str, ...]]]


def conflict_error(conflicts: Conflicts) -> status.ApiStatusError:
    """The 409 of an apply that conflicts: each field and the manager that owns it."""
    causes = [
        status.FieldCause(
            "FieldManagerConflict",
            fieldsets.path_string(path),
            f"conflict with {_manager_label(entry)}",
        )
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {_manager_label(entry)}: "
            f"{fieldsets.path_string(path)}"
        )
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(_manager_label(entry), []).append(fieldsets.path_string(path))
        lines = []
        for label in sorted(by_manager):
            lines.append(f"conflicts with {label}:")
            lines.extend(f"- {p}" for p in by_manager[label])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return status.ApiStatusError(409, "Conflict", message, causes=causes)


def apply(
    state: ApiState,
    rt: ResourceType,
    live: dict[str, Any],
    config: dict[str, Any],
    manager: Manager,
    *,
    force: bool,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` to ``live`` (with its managedFields).
    Raises the 409 of :func:`conflict_error` unless ``force``."""
    shape = shape_of(state, rt)
    applied = fieldsets.of_value(_tracked(rt, config, manager.subresource), shape, apply=True)
    entries = [jsoncodec.copy(e) for e in _entries(live)]
    conflicts: Conflicts = []
    for entry in entries:
        if _same(entry, manager):
            continue
        for path in fieldsets.leaves(fieldsets.intersection(_fields(entry), applied)):
            had, current = fieldsets.value_at(live, path, shape)
            _, wanted = fieldsets.value_at(config, path, shape)
            if had and current != wanted and not _both_granular(current, wanted):
                conflicts.append((entry, path))
    if conflicts and not force:
        raise conflict_error(conflicts)
    merged: dict[str, Any] = _merge(jsoncodec.copy(live), config, shape)
    previous = next((_fields(e) for e in entries if _same(e, manager)), {})
    taken: dict[int, FieldSet] = {}
    for entry, path in conflicts:  # forced: the conflicting fields leave their owners
        taken[id(entry)] = fieldsets.union(taken.get(id(entry), {}), _path_set(path))
    others: FieldSet = {}
    kept = []
    for entry in entries:
        if _same(entry, manager):
            continue
        fields = fieldsets.difference(_fields(entry), taken.get(id(entry), {}))
        if fields:
            kept.append({**entry, "fieldsV1": fields} if fields != _fields(entry) else entry)
            others = fieldsets.union(others, fields)
    gone = fieldsets.difference(fieldsets.difference(previous, applied), others)
    for path in sorted(fieldsets.leaves(gone), key=len):  # parents first: items by key
        fieldsets.remove(merged, path, shape)
    mine = next((e for e in entries if _same(e, manager)), None)
    if mine is not None and _fields(mine) == applied:
        kept.append(mine)
    elif applied:
        kept.append(_entry(manager, applied, state.clock()))
    _store(merged, _sorted(kept))
    return merged


def _path_set(path: tuple[str, ...]) -> FieldSet:
    node: FieldSet = {}
    for element in reversed(path):
        node = {element: node}
    return node


def _both_granular(a: Any, b: Any) -> bool:
    """Map or list members (``.``) conflict only through their children."""
    return isinstance(a, dict | list) and isinstance(b, dict | list)


def _merge(live: Any, config: Any, shape: Shape) -> Any:
    """``config`` merged into ``live``: objects by field, keyed and set lists by item, the
    rest replaced."""
    if isinstance(live, dict) and isinstance(config, dict) and not fieldsets.atomic(config, shape):
        for name, value in config.items():
            live[name] = _merge(live.get(name), value, shape.child(name)) if name in live else value
        return live
    if isinstance(live, list) and isinstance(config, list):
        keys = shape.list_keys()
        if keys is None:
            return config
        field = shape.name if isinstance(shape, fieldsets.BuiltinShape) else ""
        item = shape.item()
        index = {fieldsets.item_key(v, keys, field): i for i, v in enumerate(live)}
        for value in config:
            key = fieldsets.item_key(value, keys, field)
            if key in index:
                live[index[key]] = _merge(live[index[key]], value, item) if keys else value
            else:
                index[key] = len(live)
                live.append(value)
        return live
    return config
