"""Object storage: compact JSON entries, one cluster-wide resourceVersion, and event windows.

The store is the single source of truth of the server. Handlers (:mod:`.rest`) read entries
and commit new object dicts; the store assigns the resourceVersion, serialises the object once
into compact JSON bytes (what GET, LIST and every watch event reuse), records a watch event in
the resource's bounded window and notifies listeners (:mod:`.watch` fan-out, :mod:`.gc`,
:mod:`.persistence`) synchronously, in commit order.

Everything here runs on the server's event loop and never awaits, so a read followed by a
commit inside one handler step is atomic (that is how compare-and-swap on resourceVersion is
implemented without locks).

Memory: an entry keeps the JSON bytes plus what the indexes need (labels, selectable field
values, owner uids); decoded dicts are never retained.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from computedomain.api import jsoncodec

StorageKey = tuple[str, str]  # (group, plural)
EMPTY: Mapping[str, str] = {}


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes, the server's one serialisation of an object."""
    return jsoncodec.dumps(obj)


class Entry:
    """One stored object version: immutable once created."""

    __slots__ = ("fields", "key", "labels", "owners", "raw", "rv", "uid")

    def __init__(  # noqa: PLR0917 - a hot-path constructor, called positionally
        self,
        key: str,
        raw: bytes,
        rv: int,
        uid: str,
        labels: Mapping[str, str],
        fields: Mapping[str, str],
        owners: tuple[str, ...],
    ) -> None:
        self.key = key
        self.raw = raw
        self.rv = rv
        self.uid = uid
        self.labels = labels
        self.fields = fields
        self.owners = owners

    @property
    def namespace(self) -> str:
        ns, _, _name = self.key.rpartition("/")
        return ns

    @property
    def name(self) -> str:
        return self.key.rpartition("/")[2]

    def decode(self) -> dict[str, Any]:
        """A fresh, caller-owned dict of the object."""
        out: dict[str, Any] = jsoncodec.loads(self.raw)
        return out


class Event:
    """One change, as recorded in a window: the entry after (for DELETED: the final state
    with the deletion's resourceVersion) and the entry before (None for ADDED)."""

    __slots__ = ("cache", "new", "prev", "rv", "skey", "type")

    def __init__(
        self, rv: int, type_: str, skey: StorageKey, new: Entry, prev: Entry | None
    ) -> None:
        self.rv = rv
        self.type = type_
        self.skey = skey
        self.new = new
        self.prev = prev
        # Watch chunks, rendered once per (type, view); created by the first watcher.
        self.cache: dict[Any, bytes] | None = None


class TooOldError(Exception):
    """The requested resourceVersion is older than the event window (410 to clients)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class Bucket:
    """The objects and recent events of one storage key."""

    __slots__ = ("_sorted", "events", "objects", "window_start")

    def __init__(self, window_start: int) -> None:
        self.objects: dict[str, Entry] = {}
        self.events: deque[Event] = deque()
        self.window_start = window_start  # every event with rv > this is still in `events`
        self._sorted: list[str] | None = None

    def sorted_keys(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.objects)
        return self._sorted

    def invalidate(self) -> None:
        self._sorted = None


Listener = Callable[[Event], None]


class Store:
    """All objects of the server, keyed by storage key and ``namespace/name``."""

    def __init__(self, *, event_window: int = 10_000, initial_rv: int = 1) -> None:
        self.rv = initial_rv
        # Events before this resourceVersion are unknown (0 for a fresh store; the loaded
        # resourceVersion after a restart), so no window reaches further back.
        self.history_start = 0
        self.event_window = max(1, event_window)
        self._buckets: dict[StorageKey, Bucket] = {}
        self.uids: dict[str, tuple[StorageKey, str]] = {}
        self.listeners: list[Listener] = []
        # Listeners that need the bucket's new state but must not see partial commits
        # (persistence) are plain listeners too: they run after the state changed.

    # ---------------------------------------------------------------- reading

    def bucket(self, skey: StorageKey) -> Bucket:
        b = self._buckets.get(skey)
        if b is None:
            b = self._buckets[skey] = Bucket(self.history_start)
        return b

    def start_history(self, skey: StorageKey) -> None:
        """A resource's storage starts now (a CRD is first served): its window begins at the
        current resourceVersion, as kube-apiserver's watch cache for it does, so a watch from
        an older version is 410 Expired. A resource already stored keeps its window."""
        if skey not in self._buckets:
            self._buckets[skey] = Bucket(self.rv)

    def get(self, skey: StorageKey, key: str) -> Entry | None:
        b = self._buckets.get(skey)
        return None if b is None else b.objects.get(key)

    def by_uid(self, uid: str) -> Entry | None:
        loc = self.uids.get(uid)
        return None if loc is None else self.get(*loc)

    def storage_keys(self) -> list[StorageKey]:
        return list(self._buckets)

    def keys(self, skey: StorageKey, namespace: str | None = None) -> list[str]:
        """Sorted object keys, optionally those of one namespace."""
        keys = self.bucket(skey).sorted_keys()
        if namespace is None:
            return keys
        prefix = namespace + "/"
        lo = bisect.bisect_left(keys, prefix)
        hi = bisect.bisect_left(keys, namespace + "0")  # "0" sorts right after "/"
        return keys[lo:hi]

    def snapshot(self, skey: StorageKey, at_rv: int | None) -> Mapping[str, Entry]:
        """The objects of ``skey`` as of ``at_rv`` (None: now), rebuilt from the window.

        Raises :class:`TooOldError` when the window no longer reaches back to ``at_rv``.
        The returned mapping must not be kept across an await (it may be live).
        """
        b = self.bucket(skey)
        if at_rv is None:
            return b.objects
        if at_rv < b.window_start:
            raise TooOldError(at_rv, b.window_start + 1)
        if not b.events or b.events[-1].rv <= at_rv:
            return b.objects
        state = dict(b.objects)
        for ev in reversed(b.events):
            if ev.rv <= at_rv:
                break
            if ev.type == "ADDED":
                state.pop(ev.new.key, None)
            elif ev.prev is not None:
                state[ev.prev.key] = ev.prev
        return state

    def events_since(self, skey: StorageKey, rv: int) -> list[Event]:
        """Events of ``skey`` with resourceVersion > ``rv``, oldest first.

        Raises :class:`TooOldError` if some of them have left the window.
        """
        b = self.bucket(skey)
        if rv < b.window_start:
            raise TooOldError(rv, b.window_start + 1)
        out: list[Event] = []
        for ev in reversed(b.events):
            if ev.rv <= rv:
                break
            out.append(ev)
        out.reverse()
        return out

    def count(self, skey: StorageKey) -> int:
        return len(self.bucket(skey).objects)

    # ---------------------------------------------------------------- writing

    def next_rv(self) -> int:
        """The resourceVersion the next commit will get (the caller writes it into the object)."""
        return self.rv + 1

    def commit(
        self,
        skey: StorageKey,
        key: str,
        obj: dict[str, Any] | None,
        *,
        labels: Mapping[str, str] = EMPTY,
        fields: Mapping[str, str] = EMPTY,
        owners: tuple[str, ...] = (),
    ) -> Event:
        """Store ``obj`` under ``key`` (None: delete it) with the next resourceVersion.

        ``obj`` is owned by the store afterwards; its ``metadata.resourceVersion`` is set here.
        Not idempotent. The caller has already done every precondition check.
        """
        b = self.bucket(skey)
        prev = b.objects.get(key)
        self.rv += 1
        rv = self.rv
        if obj is None:
            if prev is None:
                msg = f"commit: delete of absent {skey} {key}"
                raise KeyError(msg)
            final = prev.decode()
            final.setdefault("metadata", {})["resourceVersion"] = str(rv)
            entry = Entry(key, dumps(final), rv, prev.uid, prev.labels, prev.fields, prev.owners)
            del b.objects[key]
            b.invalidate()
            self.uids.pop(prev.uid, None)
            ev = Event(rv, "DELETED", skey, entry, prev)
        else:
            meta = obj.setdefault("metadata", {})
            meta["resourceVersion"] = str(rv)
            uid = meta.get("uid", "")
            entry = Entry(key, dumps(obj), rv, uid, labels or EMPTY, fields or EMPTY, owners)
            b.objects[key] = entry
            if prev is None:
                b.invalidate()
                ev = Event(rv, "ADDED", skey, entry, None)
            else:
                ev = Event(rv, "MODIFIED", skey, entry, prev)
            if uid:
                self.uids[uid] = (skey, key)
        b.events.append(ev)
        while len(b.events) > self.event_window:
            b.window_start = b.events.popleft().rv
        for listener in self.listeners:
            listener(ev)
        return ev

    def load(self, skey: StorageKey, entries: Iterable[Entry]) -> None:
        """Bulk-load entries at start (persistence); no events, no listeners."""
        b = self.bucket(skey)
        for e in entries:
            b.objects[e.key] = e
            if e.uid:
                self.uids[e.uid] = (skey, e.key)
        b.invalidate()

    def drop(self, skey: StorageKey) -> None:
        """Forget a storage key entirely (a CRD's objects after they were deleted)."""
        b = self._buckets.pop(skey, None)
        if b is not None:
            for e in b.objects.values():
                self.uids.pop(e.uid, None)

    def reset_windows(self) -> None:
        """After a restart: no events before the current resourceVersion are available."""
        self.history_start = self.rv
        for b in self._buckets.values():
            b.events.clear()
            b.window_start = self.rv
