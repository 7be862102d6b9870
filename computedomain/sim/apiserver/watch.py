"""Watch fan-out: from store events to every interested watch stream.

:class:`WatchHub` is a :mod:`.store` listener. For each committed event it offers the event to
the watchers of that storage key; a :class:`Watcher` filters by namespace and selectors
(turning a change that moves an object into or out of its selector into ADDED or DELETED, as
kube-apiserver's watch cache does), renders the event line once per (type, view) — the same
bytes are reused for every watcher — and buffers it. :func:`serve_watch` (called by
:mod:`.rest`) drains the buffer into the HTTP response, adds bookmarks, and ends the stream on
timeout, disconnect, server stop or overflow (a watcher that falls ``max_pending`` lines behind
is closed, as the real server closes unresponsive watchers; the client resumes from its last
resourceVersion).

Fault-injection seam: :meth:`WatchHub.close_all` and :attr:`Watcher.fail` let a later stage
drop streams or end them with an early 410 without touching this module's callers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .selectors import FieldSelector, LabelSelector
from .store import Entry, Event, StorageKey, dumps

View = Callable[[bytes], bytes] | None  # re-renders stored JSON for a served version


def event_line(type_: str, raw: bytes) -> bytes:
    return b'{"type":"' + type_.encode() + b'","object":' + raw + b"}\n"


def error_line(status: dict[str, Any]) -> bytes:
    return event_line("ERROR", dumps(status))


def bookmark_line(kind: str, api_version: str, rv: int, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": kind, "apiVersion": api_version, "metadata": meta}
    return event_line("BOOKMARK", dumps(obj))


def _with_rv(raw: bytes, rv: int) -> bytes:
    obj = json.loads(raw)
    obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return dumps(obj)


class Watcher:
    """One watch stream's filter and pending output."""

    def __init__(
        self,
        skey: StorageKey,
        *,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        view: View,
        view_id: str,
        max_pending: int,
    ) -> None:
        self.skey = skey
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.view = view
        self.view_id = view_id
        self.max_pending = max_pending
        self.pending: list[bytes] = []
        self.wake = asyncio.Event()
        self.closed = False
        self.fail: bytes | None = None  # a final ERROR line to send, then close
        self.last_rv = 0
        self.start_rv = 0  # events at or below this were replayed or are in the snapshot
        self._filtered = bool(namespace is not None or not labels.empty or not fields.empty)

    def passes(self, e: Entry) -> bool:
        """Whether the entry matches this watch's namespace and selectors."""
        if self.namespace is not None and e.namespace != self.namespace:
            return False
        if not self.labels.empty and not self.labels.matches(e.labels):
            return False
        if not self.fields.empty:

            def get(field: str) -> str:
                if field == "metadata.name":
                    return e.name
                if field == "metadata.namespace":
                    return e.namespace
                return e.fields.get(field, "")

            return self.fields.matches(get)
        return True

    def render(self, ev: Event) -> bytes | None:
        """The line this watcher must send for ``ev``, or None if it is not interested."""
        if not self._filtered:
            return self._line(ev, ev.type, ev.new)
        new_ok = ev.type != "DELETED" and self.passes(ev.new)
        old_ok = ev.prev is not None and self.passes(ev.prev)
        if ev.type == "DELETED":
            return self._line(ev, "DELETED", ev.new) if old_ok else None
        if new_ok and old_ok:
            return self._line(ev, "MODIFIED", ev.new)
        if new_ok:
            return self._line(ev, "ADDED", ev.new)
        if old_ok:
            assert ev.prev is not None
            key = ("SELDEL", self.view_id)
            line = ev.cache.get(key)
            if line is None:
                raw = _with_rv(ev.prev.raw, ev.rv)
                line = ev.cache[key] = event_line("DELETED", self.view(raw) if self.view else raw)
            return line
        return None

    def _line(self, ev: Event, type_: str, entry: Entry) -> bytes:
        key = (type_, self.view_id)
        line = ev.cache.get(key)
        if line is None:
            raw = self.view(entry.raw) if self.view else entry.raw
            line = ev.cache[key] = event_line(type_, raw)
        return line

    def offer(self, ev: Event) -> None:
        if self.closed or ev.rv <= self.start_rv:
            return
        line = self.render(ev)
        self.last_rv = ev.rv
        if line is None:
            return
        self.pending.append(line)
        if len(self.pending) > self.max_pending:
            self.closed = True
        self.wake.set()

    def close(self, final: bytes | None = None) -> None:
        self.fail = final
        self.closed = True
        self.wake.set()


class WatchHub:
    """Routes every store event to the watchers of its storage key."""

    def __init__(self, *, max_pending: int = 20_000) -> None:
        self._by_key: dict[StorageKey, set[Watcher]] = {}
        self.max_pending = max_pending

    def on_event(self, ev: Event) -> None:
        watchers = self._by_key.get(ev.skey)
        if watchers:
            for w in tuple(watchers):
                w.offer(ev)

    def add(self, w: Watcher) -> None:
        self._by_key.setdefault(w.skey, set()).add(w)

    def remove(self, w: Watcher) -> None:
        ws = self._by_key.get(w.skey)
        if ws is not None:
            ws.discard(w)
            if not ws:
                del self._by_key[w.skey]

    def close_all(self, skey: StorageKey | None = None, final: bytes | None = None) -> None:
        """End every stream (of one storage key), optionally with a final ERROR line."""
        for key, ws in list(self._by_key.items()):
            if skey is None or key == skey:
                for w in tuple(ws):
                    w.close(final)

    def count(self) -> int:
        return sum(len(ws) for ws in self._by_key.values())


async def serve_watch(
    response: web.StreamResponse,
    watcher: Watcher,
    hub: WatchHub,
    *,
    initial: list[bytes],
    duration: float,
    bookmarks: bool,
    bookmark_interval: float,
    bookmark: Callable[[], bytes],
    stopping: asyncio.Event,
) -> None:
    """Write ``initial`` lines, then buffered events until the stream must end.

    The watcher must already be registered with ``hub``; it is removed on return. Never raises
    for a client that went away.
    """
    deadline = time.monotonic() + duration
    next_bookmark = time.monotonic() + bookmark_interval
    try:
        if initial:
            await response.write(b"".join(initial))
        while True:
            now = time.monotonic()
            if watcher.pending:
                chunk = b"".join(watcher.pending)
                watcher.pending.clear()
                await response.write(chunk)
                continue
            if watcher.closed or stopping.is_set():
                if watcher.fail is not None:
                    await response.write(watcher.fail)
                return
            if now >= deadline:
                return
            if bookmarks and now >= next_bookmark:
                await response.write(bookmark())
                next_bookmark = now + bookmark_interval
                continue
            wait_until = deadline
            if bookmarks:
                # A bookmark shortly before the deadline lets clients resume cheaply.
                wait_until = min(deadline, next_bookmark)
            watcher.wake.clear()
            if watcher.pending or watcher.closed:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watcher.wake.wait(), max(0.0, wait_until - now))
    except ConnectionError:
        return  # the client went away
    finally:
        hub.remove(watcher)
