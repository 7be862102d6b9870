"""Informer: keep a :class:`~computedomain.kube.store.Store` in step with the API server.

``Informer.run()`` lists the resource (paginated), then watches from the list's resourceVersion
with bookmarks, applying each event to the store and calling the registered handlers. It is the
only writer of its store. Behaviour, as client-go's reflector and shared informer:

- the watch is restarted from the last seen resourceVersion (bookmarks included) whenever the
  server ends it (server-side timeout of 5-10 minutes, chosen at random per watch);
- a 410 Gone (expired resourceVersion) triggers a relist, and the new list is diffed against the
  store: deletes for vanished keys, updates for objects whose resourceVersion changed, adds for
  new ones;
- other failures (connection lost, 5xx, 429) are retried after the server's ``Retry-After`` or
  with jittered exponential backoff (:data:`RETRY_BACKOFF`), re-watching from the last
  resourceVersion, relisting if that fails;
- with ``resync_period`` every cached object is redelivered as ``on_update(obj, obj)`` — the
  same object as old and new, so consumers can drop it (see :func:`is_resync`).
- :meth:`Informer.reselect` changes the label selector of a running informer: it ends the
  watch and relists with the new selector, so objects no longer selected are deleted from the
  store (``on_delete``) and newly selected ones added.

Handlers are plain synchronous callables that should only enqueue keys; an exception in one is
logged and does not stop the informer or the other handlers. Handlers receive the store's own
objects: never mutate them.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from computedomain.kube import errors
from computedomain.kube.resources import Resource
from computedomain.kube.rest import Api, WatchEvent
from computedomain.kube.store import IndexFunc, Store, object_key, resource_version
from computedomain.runtime import logs
from computedomain.runtime.backoff import Backoff
from computedomain.runtime.clock import REAL_CLOCK, Clock

_log = logs.get_logger(__name__)

Obj = dict[str, Any]

# client-go's reflector: 0.8 s doubling to 30 s, jittered up to twice that.
RETRY_BACKOFF = Backoff(base=0.8, cap=30.0, jitter=(1.0, 2.0))


class EventHandler(Protocol):
    """What an informer calls on changes. Keep these cheap: enqueue and return."""

    def on_add(self, obj: Obj) -> None: ...
    def on_update(self, old: Obj, new: Obj) -> None: ...
    def on_delete(self, obj: Obj) -> None: ...


def is_resync(old: Obj, new: Obj) -> bool:
    """True for an update that carries no change (a resync, or a relist of an unchanged object)."""
    return old is new or resource_version(old) == resource_version(new) != ""


@attrs.frozen
class FuncHandler:
    """An :class:`EventHandler` from optional functions (missing ones ignore the event)."""

    add: Callable[[Obj], None] | None = None
    update: Callable[[Obj, Obj], None] | None = None
    delete: Callable[[Obj], None] | None = None

    def on_add(self, obj: Obj) -> None:
        if self.add is not None:
            self.add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self.update is not None:
            self.update(old, new)

    def on_delete(self, obj: Obj) -> None:
        if self.delete is not None:
            self.delete(obj)


class _Adder(Protocol):
    def add(self, key: str) -> None: ...


@attrs.frozen
class EnqueueHandler:
    """Enqueue a key per event: ``key(obj)`` (default ``ns/name``; None skips the object).

    Resyncs and unchanged updates are dropped unless ``include_resync``. Use ``key`` to map an
    owned object to its owner's key.
    """

    queue: _Adder
    key: Callable[[Obj], str | None] = object_key
    include_resync: bool = False

    def _enqueue(self, obj: Obj) -> None:
        key = self.key(obj)
        if key:
            self.queue.add(key)

    def on_add(self, obj: Obj) -> None:
        self._enqueue(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self.include_resync or not is_resync(old, new):
            self._enqueue(new)
            old_key = self.key(old)
            if old_key and old_key != self.key(new):
                self.queue.add(old_key)  # e.g. a label that maps to another owner changed

    def on_delete(self, obj: Obj) -> None:
        self._enqueue(obj)


class Informer:
    """List+watch cache of one resource (optionally one namespace / selector)."""

    def __init__(
        self,
        api: Api,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        name: str | None = None,
        page_size: int = 500,
        watch_timeout: tuple[int, int] = (300, 600),
        clock: Clock | None = None,
    ) -> None:
        self.api = api
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_period = resync_period
        self.name = name or resource.plural
        self.store = Store(indexers)
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self._clock = clock or REAL_CLOCK
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        self._reselected = asyncio.Event()
        self._rv = ""
        self.relists = 0  # how many times a 410 forced a relist (for tests and metrics)

    @property
    def has_synced(self) -> bool:
        """True once the first list has been stored and its adds delivered."""
        return self._synced.is_set()

    @property
    def last_resource_version(self) -> str:
        """The newest resourceVersion seen (list, event or bookmark)."""
        return self._rv

    def add_handler(self, handler: EventHandler) -> None:
        """Register a handler; after sync it first gets an add for every cached object."""
        self._handlers.append(handler)
        if self.has_synced:
            for obj in self.store.list():
                self._call(handler, "on_add", obj)

    def reselect(self, label_selector: str | None) -> None:
        """Select objects by ``label_selector`` from now on (see the module doc). A running
        informer relists at once; one not running yet lists with it when started. No-op when
        the selector is unchanged."""
        if label_selector == self.label_selector:
            return
        self.label_selector = label_selector
        self._reselected.set()

    async def wait_for_sync(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109
        """Wait until the first list is in the store; False if ``timeout`` seconds pass first."""
        if timeout is None:
            await self._synced.wait()
            return True
        try:
            async with asyncio.timeout(timeout):
                await self._synced.wait()
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        """List, then watch, until cancelled (see the module docstring). Never returns.

        Run it again after cancelling and it resumes watching from the last resourceVersion
        (relisting, with a diff, if that version has expired meanwhile).
        """
        resyncer = (
            asyncio.create_task(self._resync_loop(), name=f"resync:{self.name}")
            if self.resync_period
            else None
        )
        failures = 0
        relist = not (self.has_synced and self._rv)  # a restarted run resumes its watch
        try:
            while True:
                if self._reselected.is_set():
                    self._reselected.clear()
                    relist = True
                try:
                    if relist:
                        await self._list()
                        relist = False
                        failures = 0
                    await self._watch_until_reselected()
                    failures = 0  # the server ended a healthy watch; resume from our RV
                except errors.Gone as exc:
                    self.relists += 1
                    _log.info("resourceVersion expired; relisting", informer=self.name, error=exc)
                    relist = True
                except errors.ApiError as exc:
                    failures += 1
                    delay = (
                        exc.retry_after
                        if exc.retry_after is not None
                        else RETRY_BACKOFF.delay(failures - 1)
                    )
                    _log.warning(
                        "list/watch failed; retrying",
                        informer=self.name,
                        attempt=failures,
                        delay=round(delay, 3),
                        error=str(exc),
                    )
                    relist = relist or not self._rv
                    await self._clock.sleep(delay)
        finally:
            if resyncer is not None:
                resyncer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await resyncer

    # -- internals ---------------------------------------------------------------------------

    async def _list(self) -> None:
        items, rv = await self.api.list_all(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self._page_size,
        )
        self._replace(items)
        self._rv = rv
        if not self._synced.is_set():
            _log.debug("synced", informer=self.name, objects=len(items), rv=rv)
            self._synced.set()

    def _replace(self, items: list[Obj]) -> None:
        """Make the store equal to a fresh list and tell handlers what changed."""
        old_objects: dict[str, Obj | None] = {object_key(o): o for o in self.store.list()}
        self.store.replace(items)
        for obj in items:
            key = object_key(obj)
            old = old_objects.pop(key, None)
            if old is None:
                self._notify("on_add", obj)
            elif resource_version(old) != resource_version(obj):
                self._notify("on_update", old, obj)
        for gone in old_objects.values():
            if gone is not None:
                self._notify("on_delete", gone)

    async def _watch_until_reselected(self) -> None:
        """:meth:`_watch`, ended early when :meth:`reselect` is called meanwhile."""
        if self._reselected.is_set():
            return
        watch = asyncio.create_task(self._watch(), name=f"watch:{self.name}")
        reselected = asyncio.create_task(self._reselected.wait(), name=f"reselect:{self.name}")
        try:
            await asyncio.wait({watch, reselected}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (watch, reselected):
                task.cancel()
            await asyncio.gather(watch, reselected, return_exceptions=True)
        if not watch.cancelled():
            watch.result()  # the watch's own error, if it failed

    async def _watch(self) -> None:
        """Watch from the current resourceVersion until the server ends the stream."""
        low, high = self._watch_timeout
        stream = self.api.watch(
            self.resource,
            self.namespace,
            resource_version=self._rv,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            allow_bookmarks=True,
            timeout_seconds=random.randint(low, high),
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                self._apply(event)

    def _apply(self, event: WatchEvent) -> None:
        obj = event.object
        rv = resource_version(obj)
        if event.type == "BOOKMARK":
            self._rv = rv or self._rv
            return
        try:
            key = object_key(obj)
        except ValueError:
            _log.warning("ignoring watch event without a name", informer=self.name, type=event.type)
            return
        if event.type in ("ADDED", "MODIFIED"):
            old = self.store.upsert(obj)
            if old is None:
                self._notify("on_add", obj)
            else:
                self._notify("on_update", old, obj)
        elif event.type == "DELETED":
            self.store.delete(key)
            self._notify("on_delete", obj)
        else:
            _log.warning("ignoring unknown watch event type", informer=self.name, type=event.type)
        self._rv = rv or self._rv

    async def _resync_loop(self) -> None:
        assert self.resync_period is not None
        await self._synced.wait()
        while True:
            await self._clock.sleep(self.resync_period)
            for obj in self.store.list():
                self._notify("on_update", obj, obj)

    def _notify(self, method: str, *objs: Obj) -> None:
        for handler in list(self._handlers):
            self._call(handler, method, *objs)

    def _call(self, handler: EventHandler, method: str, *objs: Obj) -> None:
        try:
            getattr(handler, method)(*objs)
        except Exception:
            _log.exception("event handler failed", informer=self.name, handler_method=method)
