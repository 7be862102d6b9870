"""Read-your-writes over an informer's store (client-go's mutation cache).

After a component writes an object, its informer may not have seen the change yet; reading the
store would return the old version and the next write would conflict or, worse, undo the first.
A :class:`MutationCache` remembers the objects the API server returned to our writes
(:meth:`MutationCache.mutation`) and, on read, returns whichever is newer — the store's object or
the recorded one — by comparing resourceVersions as integers (what kube-apiserver hands out).

An entry is dropped when the store catches up (its object is at least as new), when the watch
reports the object's deletion (register the cache as a handler on the informer:
``informer.add_handler(cache)``), when :meth:`MutationCache.forget` is called, or after ``ttl``
seconds. With ``include_adds`` (the default) an object we created is visible before the informer
sees it. Objects are returned as recorded: never mutate them. Single event loop; no I/O.
"""

from __future__ import annotations

import builtins
from typing import Any

import attrs

from computedomain.kube.store import Store, object_key, resource_version
from computedomain.runtime.clock import REAL_CLOCK, Clock

Obj = dict[str, Any]


@attrs.frozen
class _Entry:
    obj: Obj
    expires: float


def _rv_int(obj: Obj | None) -> int | None:
    try:
        return int(resource_version(obj))
    except ValueError:
        return None


def is_newer(candidate: Obj, than: Obj) -> bool:
    """True if ``candidate``'s integer resourceVersion is greater than ``than``'s. Pure.

    Non-integer versions are never considered newer (the store wins).
    """
    a, b = _rv_int(candidate), _rv_int(than)
    return a is not None and b is not None and a > b


class MutationCache:
    """The newer of the store's object and our last write, per key."""

    def __init__(
        self,
        store: Store,
        *,
        ttl: float = 3600.0,
        clock: Clock | None = None,
        include_adds: bool = True,
    ) -> None:
        self.store = store
        self.ttl = ttl
        self.include_adds = include_adds
        self._clock = clock or REAL_CLOCK
        self._entries: dict[str, _Entry] = {}

    # -- recording ---------------------------------------------------------------------------

    def mutation(self, obj: Obj) -> None:
        """Record an object the API server returned to one of our writes."""
        key = object_key(obj)
        current = self._entries.get(key)
        if current is not None and is_newer(current.obj, obj):
            return  # an even newer write is already recorded
        self._entries[key] = _Entry(obj, self._clock.monotonic() + self.ttl)

    def forget(self, key: str) -> None:
        """Drop the recorded write for ``key`` (e.g. after deleting the object ourselves)."""
        self._entries.pop(key, None)

    def __len__(self) -> int:
        self._expire()
        return len(self._entries)

    # -- reading -----------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        """The newest known version of ``key``, or None."""
        self._expire()
        backing = self.store.get(key)
        if backing is None:
            entry = self._entries.get(key)
            return entry.obj if entry is not None and self.include_adds else None
        return self._newer(key, backing)

    def list(self) -> builtins.list[Obj]:
        """Every object, each in its newest known version."""
        self._expire()
        result = {object_key(o): self._newer(object_key(o), o) for o in self.store.list()}
        if self.include_adds:
            for key, entry in self._entries.items():
                result.setdefault(key, entry.obj)
        return builtins.list(result.values())

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        """Objects whose newest known version the index function maps to ``value``."""
        self._expire()
        func = self.store.index_func(index_name)
        result: dict[str, Obj] = {}
        for obj in self.store.by_index(index_name, value):
            key = object_key(obj)
            newer = self._newer(key, obj)
            if newer is obj or value in _safe(func, newer):
                result[key] = newer
        for key, entry in builtins.list(self._entries.items()):
            if key in result:
                continue
            backing = self.store.get(key)
            if backing is None and not self.include_adds:
                continue
            newer = entry.obj if backing is None else self._newer(key, backing)
            if newer is entry.obj and value in _safe(func, newer):
                result[key] = newer
        return [result[k] for k in sorted(result)]

    # -- informer handler: drop entries the watch has caught up with -------------------------

    def on_add(self, obj: Obj) -> None:
        self._caught_up(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._caught_up(new)

    def on_delete(self, obj: Obj) -> None:
        key = object_key(obj)
        entry = self._entries.get(key)
        if entry is None:
            return
        same_uid = _uid(entry.obj) == _uid(obj) or not _uid(entry.obj) or not _uid(obj)
        if same_uid and not is_newer(entry.obj, obj):
            del self._entries[key]

    # -- internals ---------------------------------------------------------------------------

    def _newer(self, key: str, backing: Obj) -> Obj:
        entry = self._entries.get(key)
        if entry is None:
            return backing
        if is_newer(entry.obj, backing):
            return entry.obj
        del self._entries[key]  # the store has caught up
        return backing

    def _caught_up(self, obj: Obj) -> None:
        key = object_key(obj)
        entry = self._entries.get(key)
        if entry is not None and not is_newer(entry.obj, obj):
            del self._entries[key]

    def _expire(self) -> None:
        now = self._clock.monotonic()
        for key in [k for k, e in self._entries.items() if e.expires <= now]:
            del self._entries[key]


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _safe(func: Any, obj: Obj) -> builtins.list[str]:
    try:
        return builtins.list(func(obj))
    except Exception:
        return []
