"""GET, LIST and WATCH of resources: selectors, ``limit``/``continue`` with consistent
snapshots, ``resourceVersion``/``resourceVersionMatch`` semantics, and watch streams with
initial events, bookmarks and 410 Gone.

Called by :mod:`.rest`; uses :mod:`.store` snapshots (never decoding stored JSON unless a
version view needs it) and :mod:`.watch` for streams.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import bisect
import json
import time
from collections.abc import Iterable, Mapping

import attrs
from aiohttp import web

from . import conversion, selectors, status, wire
from .registry import ResourceType
from .state import ApiState
from .store import Entry, TooOldError
from .watch import Watcher, bookmark_line, error_line, event_line, serve_watch

_CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


@attrs.frozen
class Filter:
    namespace: str | None
    labels: selectors.LabelSelector
    fields: selectors.FieldSelector


def parse_filter(rt: ResourceType, namespace: str | None, query: Mapping[str, str]) -> Filter:
    """Selectors from query parameters; 400 on a bad selector or unsupported field label."""
    try:
        labels = selectors.parse_labels(query.get("labelSelector", ""))
        fields = selectors.parse_fields(query.get("fieldSelector", ""))
    except selectors.SelectorError as exc:
        raise status.bad_request(str(exc)) from None
    allowed = rt.field_labels()
    terms = []
    for field, op, value in fields.terms:
        if field not in allowed:
            known = ", ".join(f'"{f}"' for f in _known_first(allowed))
            raise status.bad_request(f'"{field}" is not a known field selector: only {known}')
        terms.append((conversion.field_label(rt, field), op, value))
    return Filter(namespace, labels, selectors.FieldSelector(tuple(terms)))


def _known_first(labels: Iterable[str]) -> list[str]:
    """Field labels as kube-apiserver lists them: the object's name and namespace first."""
    first = [f for f in ("metadata.name", "metadata.namespace") if f in labels]
    return first + sorted(set(labels) - set(first))


def _passes(f: Filter, e: Entry) -> bool:
    if not f.labels.empty and not f.labels.matches(e.labels):
        return False
    if not f.fields.empty:

        def get(field: str) -> str:
            if field == "metadata.name":
                return e.name
            if field == "metadata.namespace":
                return e.namespace
            return e.fields.get(field, "")

        return f.fields.matches(get)
    return True


def get(state: ApiState, rt: ResourceType, view: conversion.View, key: str) -> bytes:
    entry = state.store.get(rt.storage_key, key)
    if entry is None:
        raise status.not_found(rt.plural, rt.group, key.rpartition("/")[2])
    return view.render(entry.raw)


def _encode_continue(rv: int, key: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": key + "\x00"}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        rv, start = int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise status.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version "
            "meta.k8s.io/v1)"
        ) from None
    return rv, start.rstrip("\x00")


def _int_param(query: Mapping[str, str], name: str) -> int | None:
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise status.bad_request(f"invalid {name}: {value!r}") from None


async def _wait_for_rv(state: ApiState, rv: int) -> None:
    deadline = time.monotonic() + state.config.future_rv_wait
    while state.store.rv < rv:
        if time.monotonic() > deadline:
            raise status.ApiStatusError(
                504,
                "Timeout",
                f"Too large resource version: {rv}, current: {state.store.rv}",
                causes=[
                    status.FieldCause("ResourceVersionTooLarge", "", "Too large resource version")
                ],
                retry_after_seconds=1,
            )
        await asyncio.sleep(0.02)


async def list_(
    state: ApiState,
    rt: ResourceType,
    view: conversion.View,
    f: Filter,
    query: Mapping[str, str],
) -> bytes:
    """The ``<Kind>List`` body for a LIST request."""
    limit = _int_param(query, "limit") or 0
    token = query.get("continue", "")
    rv_param = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    if match and not rv_param:
        raise status.bad_request(
            "resourceVersionMatch is forbidden unless resourceVersion is provided"
        )
    if match not in ("", "Exact", "NotOlderThan"):
        raise status.bad_request(f"unsupported resourceVersionMatch: {match!r}")
    at: int | None = None
    start = ""
    if token:
        if rv_param not in ("", "0"):
            raise status.bad_request(
                "specifying resource version is not allowed when using continue"
            )
        at, start = _decode_continue(token)
    elif rv_param not in ("", "0"):
        try:
            want = int(rv_param)
        except ValueError:
            raise status.bad_request(f"invalid resource version: {rv_param!r}") from None
        if match == "Exact":
            at = want
        elif want > state.store.rv:
            await _wait_for_rv(state, want)
    try:
        snap = state.store.snapshot(rt.storage_key, at)
    except TooOldError:
        if token:
            raise status.gone(_CONTINUE_TOO_OLD) from None
        raise status.gone("The resourceVersion for the provided list is too old.") from None
    list_rv = state.store.rv if at is None else at
    keys = _keys(state, rt, snap, f, at is None)
    if start:
        keys = keys[bisect.bisect_right(keys, start) :]
    items: list[bytes] = []
    items_last = ""
    cont = ""
    remaining: int | None = None
    for i, key in enumerate(keys):
        entry = snap[key]
        if not _passes(f, entry):
            continue
        if limit and len(items) == limit:
            cont = _encode_continue(list_rv, items_last)
            if f.labels.empty and f.fields.empty:
                remaining = len(keys) - i
            break
        rendered = view.render(entry.raw)
        items.append(rendered if rt.custom else wire.without_type_meta(rendered))
        items_last = key
    return wire.list_body(
        rt.list_kind,
        rt.group_version,
        list_rv,
        items,
        cont=cont,
        remaining=remaining,
        custom=rt.custom,
    )


def _keys(
    state: ApiState,
    rt: ResourceType,
    snap: Mapping[str, Entry],
    f: Filter,
    live: bool,
) -> list[str]:
    """The sorted keys a list must look at: one key when the selector pins the name within
    a namespace (an informer of one object), else the namespace's or all keys."""
    namespace = f.namespace
    name = f.fields.exact("metadata.name")
    if name is not None and namespace is not None:
        key = f"{namespace}/{name}"
        return [key] if key in snap else []
    if live:
        return state.store.keys(rt.storage_key, namespace)
    keys = sorted(snap)
    if namespace is not None:
        keys = [k for k in keys if k.startswith(namespace + "/")]
    return keys


def _truthy(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("true", "1")


async def watch(
    request: web.BaseRequest,
    state: ApiState,
    rt: ResourceType,
    *,
    view: conversion.View,
    f: Filter,
    query: Mapping[str, str],
) -> web.StreamResponse:
    """Serve a watch stream until timeout, disconnect or server stop."""
    timeout = _int_param(query, "timeoutSeconds")
    rv_param = query.get("resourceVersion", "")
    bookmarks = _truthy(query, "allowWatchBookmarks")
    send_initial = query.get("sendInitialEvents", "").lower()
    if send_initial == "true" and (
        query.get("resourceVersionMatch") != "NotOlderThan" or not bookmarks
    ):
        raise status.invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            [
                status.forbidden_field(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for watch unless resourceVersionMatch is "
                    "set to NotOlderThan and allowWatchBookmarks is true",
                )
            ],
        )
    watcher = Watcher(
        rt.storage_key,
        namespace=f.namespace,
        labels=f.labels,
        fields=f.fields,
        view=view.raw(),
        view_id=view.id,
        max_pending=state.config.max_watch_pending,
    )
    initial: list[bytes] = []
    initial_events = send_initial == "true" or (send_initial == "" and rv_param in ("", "0"))
    # Everything below until state.hub.add runs without awaiting: no event can slip between
    # the snapshot (or the replayed window) and the live stream.
    if initial_events:
        start_rv = state.store.rv
        for key in state.store.keys(rt.storage_key, f.namespace):
            entry = state.store.get(rt.storage_key, key)
            if entry is not None and _passes(f, entry):
                initial.append(event_line("ADDED", view.render(entry.raw)))
        if send_initial == "true":
            initial.append(bookmark_line(rt.kind, rt.group_version, start_rv, initial_end=True))
    else:
        try:
            start_rv = int(rv_param)
        except ValueError:
            raise status.bad_request(f"invalid resource version: {rv_param!r}") from None
        try:
            replay = state.store.events_since(rt.storage_key, start_rv)
        except TooOldError as exc:
            initial.append(error_line(status.gone(str(exc)).to_status()))
            watcher.closed = True
            replay = []
        for ev in replay:
            chunk = watcher.render(ev)  # framed, like the live events that follow
            if chunk is not None:
                watcher.pending.append(chunk)
    watcher.start_rv = max(start_rv, state.store.rv)
    if not watcher.closed:
        state.hub.add(watcher)
    response = web.StreamResponse(headers={"Content-Type": wire.JSON})
    response.enable_chunked_encoding()
    try:
        await response.prepare(request)
    except BaseException:  # the client went away (or was cancelled) before the stream began
        state.hub.remove(watcher)
        raise

    def bookmark() -> bytes:
        return bookmark_line(rt.kind, rt.group_version, state.store.rv)

    await serve_watch(
        request,
        watcher,
        state.hub,
        initial=initial,
        duration=float(timeout) if timeout else state.config.default_watch_timeout,
        bookmarks=bookmarks,
        bookmark_interval=state.config.bookmark_interval,
        bookmark=bookmark,
        stopping=state.stopping,
    )
    return response


def object_key(rt: ResourceType, namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if rt.namespaced else name
