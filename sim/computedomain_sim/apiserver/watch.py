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

Routing: a watch whose field selector pins ``metadata.name`` (an informer of one object, as
every daemon and kubelet plugin runs) can only ever match events of that name, so the hub files
it under the name and never offers it other objects' events. With hundreds of such watches on
one resource (288 daemons each watching its clique object) this spares a selector test per
watcher and event: only the watchers of that object, plus the unpinned ones, see an event.

Fault-injection seam: :meth:`WatchHub.close_all` and :attr:`Watcher.fail` let a later stage
drop streams or end them with an early 410 without touching this module's callers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from computedomain.api import jsoncodec

from .selectors import FieldSelector, LabelSelector
from .store import Entry, Event, StorageKey, dumps

View = Callable[[bytes], bytes] | None  # re-renders stored JSON for a served version


def frame(data: bytes) -> bytes:
    """One HTTP/1.1 chunk (watch responses are chunked; see :func:`serve_watch`)."""
    return b"%x\r\n" % len(data) + data + b"\r\n"


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
    obj = jsoncodec.loads(raw)
    obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return dumps(obj)


def _new_cache(ev: Event) -> dict[Any, bytes]:
    cache: dict[Any, bytes] = {}
    ev.cache = cache
    return cache


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
        self.pending: list[bytes] = []  # framed chunks, until the stream is live
        self.transport: asyncio.Transport | None = None  # set once the stream is live
        self.max_buffer = 16 * 1024 * 1024
        self.waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.fail: bytes | None = None  # a final ERROR line to send, then close
        self.last_rv = 0
        self.start_rv = 0  # events at or below this were replayed or are in the snapshot
        self.timer_armed = False
        self._prefix = None if namespace is None else namespace + "/"
        self._selects = not labels.empty or not fields.empty
        # The one object name this watch can match, if its field selector pins it.
        self.pinned_name = fields.exact("metadata.name")
        self._filtered = namespace is not None or self._selects

    def passes(self, e: Entry) -> bool:
        """Whether the entry matches this watch's namespace and selectors."""
        if self._prefix is not None and not e.key.startswith(self._prefix):
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
        if not self._selects:  # namespace only: an object never changes namespace
            prefix = self._prefix
            return self._line(ev, ev.type, ev.new) if ev.new.key.startswith(prefix or "") else None
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
            cache = ev.cache if ev.cache is not None else _new_cache(ev)
            line = cache.get(key)
            if line is None:
                raw = _with_rv(ev.prev.raw, ev.rv)
                line = cache[key] = frame(
                    event_line("DELETED", self.view(raw) if self.view else raw)
                )
            return line
        return None

    def _line(self, ev: Event, type_: str, entry: Entry) -> bytes:
        key = (type_, self.view_id)
        cache = ev.cache if ev.cache is not None else _new_cache(ev)
        line = cache.get(key)
        if line is None:
            raw = self.view(entry.raw) if self.view else entry.raw
            line = cache[key] = frame(event_line(type_, raw))
        return line

    def offer(self, ev: Event) -> bool:
        """Queue the event's chunk if this watch wants it; True when something was queued
        for a live stream (the hub then flushes it)."""
        if self.closed or ev.rv <= self.start_rv:
            return False
        chunk = self.render(ev)
        self.last_rv = ev.rv
        if chunk is None:
            return False
        self.pending.append(chunk)
        if len(self.pending) > self.max_pending:
            self.close()  # an unresponsive client: end the stream, it resumes from its last RV
            return False
        return self.transport is not None

    def flush(self) -> None:
        """Write everything queued to the live stream in one send."""
        transport = self.transport
        if transport is None or not self.pending:
            return
        if transport.is_closing():
            self.close()
            return
        pending = self.pending
        transport.write(pending[0] if len(pending) == 1 else b"".join(pending))
        pending.clear()
        if transport.get_write_buffer_size() > self.max_buffer:
            self.close()

    def poke(self) -> None:
        """Wake the stream's task (close, stop, or its timer)."""
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self, final: bytes | None = None) -> None:
        """End the stream, optionally with a last (unframed) line such as an ERROR event."""
        if not self.closed:
            self.fail = final
        self.closed = True
        self.poke()


class WatchHub:
    """Routes every store event to the watchers of its storage key.

    Chunks are queued per watcher during a commit and written by one :meth:`flush` scheduled
    on the event loop after it: the writer's own response goes out first, and every event
    committed until the flush reaches a watcher in one send. Flushes are at least
    ``flush_interval`` apart, so under a high event rate several events share one send per
    watcher (the syscall is the cost of fan-out), at a latency cost bounded by the interval;
    at low rates an event is flushed at once.
    """

    def __init__(self, *, max_pending: int = 20_000, flush_interval: float = 0.005) -> None:
        self._by_key: dict[StorageKey, set[Watcher]] = {}  # watchers of any name
        self._by_name: dict[StorageKey, dict[str, set[Watcher]]] = {}  # name-pinned watchers
        self.max_pending = max_pending
        self.flush_interval = flush_interval
        self._dirty: set[Watcher] = set()
        self._scheduled = False
        self._last_flush = 0.0

    def _interested(self, ev: Event) -> tuple[Watcher, ...]:
        """The watchers that may want ``ev``: the unpinned ones and those pinned to its name
        (an object keeps its name, so ``ev.prev`` has the same one)."""
        anyname = self._by_key.get(ev.skey)
        by_name = self._by_name.get(ev.skey)
        pinned = by_name.get(ev.new.name) if by_name else None
        if not pinned:
            return tuple(anyname) if anyname else ()
        return (*anyname, *pinned) if anyname else tuple(pinned)

    def on_event(self, ev: Event) -> None:
        watchers = self._interested(ev)
        if not watchers:
            return
        dirty = self._dirty
        for w in watchers:
            if w.offer(ev):
                dirty.add(w)
        if dirty and not self._scheduled:
            self._scheduled = True
            loop = asyncio.get_running_loop()
            due = self._last_flush + self.flush_interval
            if due <= loop.time():
                loop.call_soon(self.flush)
            else:
                loop.call_at(due, self.flush)

    def flush(self) -> None:
        self._scheduled = False
        self._last_flush = asyncio.get_running_loop().time()
        dirty, self._dirty = self._dirty, set()
        for w in dirty:
            w.flush()

    def add(self, w: Watcher) -> None:
        if w.pinned_name is None:
            self._by_key.setdefault(w.skey, set()).add(w)
        else:
            self._by_name.setdefault(w.skey, {}).setdefault(w.pinned_name, set()).add(w)

    def remove(self, w: Watcher) -> None:
        if w.pinned_name is None:
            ws = self._by_key.get(w.skey)
            if ws is not None:
                ws.discard(w)
                if not ws:
                    del self._by_key[w.skey]
            return
        names = self._by_name.get(w.skey)
        pinned = names.get(w.pinned_name) if names is not None else None
        if names is None or pinned is None:
            return
        pinned.discard(w)
        if not pinned:
            del names[w.pinned_name]
            if not names:
                del self._by_name[w.skey]

    def _all(self) -> list[tuple[StorageKey, Watcher]]:
        out = [(key, w) for key, ws in self._by_key.items() for w in ws]
        out += [
            (key, w) for key, names in self._by_name.items() for ws in names.values() for w in ws
        ]
        return out

    def close_all(self, skey: StorageKey | None = None, final: bytes | None = None) -> None:
        """End every stream (of one storage key), optionally with a final ERROR line."""
        for key, w in self._all():
            if skey is None or key == skey:
                w.close(final)

    def count(self) -> int:
        return len(self._all())


async def serve_watch(
    request: web.BaseRequest,
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
    """Stream ``initial`` lines, then every event the watcher accepts, until the stream ends.

    The response must be prepared (chunked, headers sent). From then on the watcher writes
    each event's pre-framed chunk straight to the connection's transport from the store's
    commit (no task switch per event and watcher); this task only waits for the deadline, a
    bookmark, a close or server stop. aiohttp writes the terminating chunk when the handler
    returns. The watcher must already be registered with ``hub``; it is removed on return.
    """
    loop = asyncio.get_running_loop()
    transport = request.transport
    deadline = loop.time() + duration
    next_bookmark = loop.time() + bookmark_interval if bookmarks else deadline
    timer: asyncio.TimerHandle | None = None
    try:
        if transport is None or transport.is_closing():
            return
        head = frame(b"".join(initial)) if initial else b""
        transport.write(head + b"".join(watcher.pending))
        watcher.pending.clear()
        watcher.transport = transport
        watcher.flush()
        while True:
            if watcher.closed or stopping.is_set() or transport.is_closing():
                if watcher.fail is not None and not transport.is_closing():
                    transport.write(frame(watcher.fail))
                return
            now = loop.time()
            if now >= deadline:
                return
            if bookmarks and now >= next_bookmark:
                transport.write(frame(bookmark()))
                next_bookmark = now + bookmark_interval
            if timer is None:
                timer = loop.call_at(min(deadline, next_bookmark), _fire, watcher)
                watcher.timer_armed = True
            waiter = watcher.waiter = loop.create_future()
            await waiter
            watcher.waiter = None
            if not watcher.timer_armed:
                timer = None
    finally:
        watcher.transport = None
        watcher.closed = True
        if timer is not None:
            timer.cancel()
        hub.remove(watcher)


def _fire(watcher: Watcher) -> None:
    watcher.timer_armed = False
    watcher.poke()
