"""Resource requests: from a classified request (:mod:`.requestinfo`) to the verb handlers.

Called by :mod:`.app` for every ``/api/...`` and ``/apis/...`` request that names a resource,
after the pipeline stages (authentication, authorization) ran. Reads go to :mod:`.reads`,
writes to :mod:`.writes` / :mod:`.deletion`, subresources to :mod:`.subresources`; tables to
:mod:`.tables` when the client asks for ``as=Table``.
"""

from __future__ import annotations

from typing import Any

import attrs
from aiohttp import web

from . import (
    conversion,
    deletion,
    managedfields,
    reads,
    reviews,
    status,
    subresources,
    tables,
    wire,
    writes,
)
from .pipeline import USER
from .registry import ResourceType
from .requestinfo import RequestInfo
from .selectors import FieldSelector
from .state import ApiState


def not_found_generic() -> status.ApiStatusError:
    return status.ApiStatusError(
        404, "NotFound", "the server could not find the requested resource"
    )


def resolve(
    state: ApiState, info: RequestInfo
) -> tuple[ResourceType, ResourceType, conversion.View]:
    """(served resource, storage resource, view) for a request; 404 if not served."""
    rt, srt, view = _resolve(state, info)
    key = (rt.group, rt.version, rt.plural)
    if rt.custom and key in state.default_on_read:
        view = conversion.defaulting(view, state.schemas[key].default)
    return rt, srt, view


def _resolve(
    state: ApiState, info: RequestInfo
) -> tuple[ResourceType, ResourceType, conversion.View]:
    rt = state.registry.get(info.group, info.version, info.resource)
    if rt is None:
        raise not_found_generic()
    if not rt.namespaced and info.namespace and info.resource != "namespaces":
        raise not_found_generic()
    if rt.conversion:
        storage = state.registry.by_storage(rt.storage_key)
        if storage is None:
            raise not_found_generic()
        return rt, storage, conversion.view_for(rt, storage)
    if rt.custom and rt.storage_version and rt.storage_version != rt.version:
        # Objects are stored in the storage version (conversion strategy None: only the
        # apiVersion differs), as kube-apiserver stores them.
        storage = state.registry.get(rt.group, rt.storage_version, rt.plural)
        storage = storage or attrs.evolve(rt, version=rt.storage_version)
        return rt, storage, conversion.view_for(rt, storage)
    return rt, rt, conversion.IDENTITY


def _field_validation(query: Any) -> str:
    value = query.get("fieldValidation", "Warn") or "Warn"
    if value not in ("Ignore", "Warn", "Strict"):
        raise status.bad_request(
            f'fieldValidation {value} is invalid: valid values are "Ignore", "Warn", "Strict"'
        )
    return str(value)


async def handle(
    request: web.BaseRequest, state: ApiState, info: RequestInfo
) -> web.StreamResponse:
    """Serve one resource request; raises :class:`.status.ApiStatusError` on failure."""
    rt, srt, view = resolve(state, info)
    query = request.query
    ns = info.namespace if rt.namespaced else ""
    if info.subresource:
        if info.subresource not in rt.subresources or not info.name:
            raise not_found_generic()
        return await subresources.handle(request, state, info, rt=rt, srt=srt, view=view)
    verb = info.verb
    if verb not in rt.verbs:
        raise status.method_not_allowed(
            f'{verb} is not supported on resources of kind "{rt.qualified}"'
        )
    if verb == "get":
        raw = reads.get(state, srt, view, reads.object_key(rt, ns, info.name))
        return tables.respond_object(request, state, rt, raw)
    if verb in ("list", "watch"):
        flt = reads.parse_filter(rt, ns if rt.namespaced and ns else None, query)
        if verb == "watch":
            if info.name:
                flt = reads.Filter(flt.namespace, flt.labels, _name_pin(flt, info.name))
            return await reads.watch(request, state, srt, view=view, f=flt, query=query)
        body = await reads.list_(state, srt, view, flt, query)
        return tables.respond_list(request, state, rt, body)
    if rt.namespaced and not ns and verb in ("create", "update", "patch", "delete"):
        raise not_found_generic()
    if rt.group in reviews.REVIEW_GROUPS:
        review = await _body_object(request, state)
        manager = managedfields.of_request(request)
        return reviews.handle(state, rt, request[USER], review, manager)
    if verb == "create":
        obj = await _body_object(request, state)
        if view.id:
            writes.check_kind(rt, obj)
            obj = view.to_storage(obj)
        with writes.dry_run(state, query):
            result = writes.create(
                state,
                _write_rt(rt, srt),
                ns,
                obj,
                field_validation=_field_validation(query),
                manager=managedfields.of_request(request),
            )
        return wire.raw_response(view.render(result.entry.raw), 201, result.warnings)
    if verb == "update":
        obj = await _body_object(request, state)
        if view.id:
            writes.check_kind(rt, obj)
            obj = view.to_storage(obj)
        with writes.dry_run(state, query):
            result = writes.update(
                state,
                _write_rt(rt, srt),
                ns,
                info.name,
                obj,
                field_validation=_field_validation(query),
                manager=managedfields.of_request(request),
            )
        return wire.raw_response(view.render(result.entry.raw), 200, result.warnings)
    if verb == "patch":
        body = await wire.read_body(request, state.config.max_body_bytes)
        with writes.dry_run(state, query):
            result = writes.patch(
                state,
                _write_rt(rt, srt),
                ns,
                info.name,
                content_type=request.headers.get("Content-Type", ""),
                body=body,
                field_validation=_field_validation(query),
                view=view,
                served=rt,
                manager=managedfields.of_request(request),
                apply_manager=query.get("fieldManager"),
                force=query.get("force") == "true",
            )
        code = 201 if result.created else 200
        return wire.raw_response(view.render(result.entry.raw), code, result.warnings)
    if verb == "delete":
        opts = await _delete_options(request, state)
        with writes.dry_run(state, query, opts.dry_run):
            res = deletion.delete(state, _write_rt(rt, srt), ns, info.name, opts)
        if res.deleted and not deletion.returns_object(rt):
            return wire.json_response(deletion.success_status(rt, res.entry))
        code = 202 if (not res.deleted and opts.orphan_dependents is False) else 200
        return wire.raw_response(view.render(res.entry.raw), code)
    if verb == "deletecollection":
        opts = await _delete_options(request, state)
        flt = reads.parse_filter(rt, ns if rt.namespaced and ns else None, query)
        with writes.dry_run(state, query, opts.dry_run):
            body = _delete_collection(state, rt, srt=srt, view=view, flt=flt, opts=opts)
        return wire.raw_response(body)
    raise status.method_not_allowed(
        "the server does not allow this method on the requested resource"
    )


def _write_rt(rt: ResourceType, srt: ResourceType) -> ResourceType:
    """The resource type writes are checked against: the storage one for converted views."""
    return srt


def _name_pin(flt: reads.Filter, name: str) -> FieldSelector:
    return FieldSelector((*flt.fields.terms, ("metadata.name", "=", name)))


async def _body_object(request: web.BaseRequest, state: ApiState) -> dict[str, Any]:
    body = await wire.read_body(request, state.config.max_body_bytes)
    return wire.decode_object(body, request.headers.get("Content-Type", ""))


async def _delete_options(request: web.BaseRequest, state: ApiState) -> deletion.DeleteOptions:
    body = await wire.read_body(request, state.config.max_body_bytes)
    data: Any = None
    if body.strip():
        data = wire.decode(body, request.headers.get("Content-Type", ""))
    return deletion.DeleteOptions.from_json(data, request.query)


def _delete_collection(
    state: ApiState,
    rt: ResourceType,
    *,
    srt: ResourceType,
    view: conversion.View,
    flt: reads.Filter,
    opts: deletion.DeleteOptions,
) -> bytes:
    """Delete every matching object; the body is the list of what was deleted."""
    items: list[bytes] = []
    for key in list(state.store.keys(srt.storage_key, flt.namespace)):
        entry = state.store.get(srt.storage_key, key)
        if entry is None or not reads._passes(flt, entry):
            continue
        ns, _, name = key.rpartition("/")
        try:
            res = deletion.delete(state, _write_rt(rt, srt), ns, name, opts)
        except status.ApiStatusError as exc:
            if exc.code == 404:
                continue
            raise
        items.append(view.render(res.entry.raw))
    return wire.list_body(rt.list_kind, rt.group_version, state.store.rv, items)
