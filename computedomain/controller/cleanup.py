"""Orphan passes: find UIDs whose domain is gone but whose objects or node labels remain.

A pass scans the synced caches for every domain UID a DaemonSet, a Daemon/Workload template or
a node is labelled with, and queues each UID that has no domain in the cache; the reconcile of
such a UID confirms with a live read and tears the remains down (:mod:`~.deletion`). Passes run
once at start (after the caches synced: before that "absent" means nothing), every
``cleanup_interval`` (10 min, upstream's period), and on request; the reconciler requests a
node-label pass after each reconcile of a living domain (upstream's guard against a kubelet
plugin labelling a node after the domain's teardown removed its labels). At most one request is
pending at a time. A pass only reads caches and queues keys, so it is cheap.

Run by :class:`~computedomain.controller.controller.Controller`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Protocol

from computedomain.controller.caches import Caches
from computedomain.runtime import logs
from computedomain.runtime.clock import REAL_CLOCK, Clock

_log = logs.get_logger(__name__)


class Queue(Protocol):
    def add(self, key: str) -> None: ...


def orphan_uids(labelled: Iterable[str], exists: Callable[[str], bool]) -> list[str]:
    """The UIDs in ``labelled`` for which ``exists`` is False, sorted. Pure if ``exists`` is."""
    return sorted(uid for uid in set(labelled) if not exists(uid))


class Cleanup:
    """The orphan-pass loop."""

    def __init__(
        self, caches: Caches, queue: Queue, *, interval: float, clock: Clock | None = None
    ) -> None:
        self.caches = caches
        self.queue = queue
        self.interval = interval
        self.clock = clock or REAL_CLOCK
        self._requested = asyncio.Event()
        self._full_requested = False
        self.passes = 0

    def request(self, *, labels_only: bool = False) -> None:
        """Ask for a pass soon; requests made before it starts merge into one."""
        self._full_requested = self._full_requested or not labels_only
        self._requested.set()

    def run_pass(self, *, labels_only: bool = False) -> list[str]:
        """Queue every orphan UID now; returns them."""
        labelled = self.caches.labelled_uids(nodes_only=labels_only)
        found = orphan_uids(labelled, self.caches.domain_exists)
        for uid in found:
            self.queue.add(uid)
        self.passes += 1
        if found:
            _log.info("orphans found", count=len(found), labels_only=labels_only)
        return found

    async def run(self) -> None:
        """One pass now, then one per interval or request, until cancelled."""
        self.run_pass()
        while True:
            requested = await self._next()
            labels_only = requested and not self._full_requested
            self._requested.clear()
            self._full_requested = False
            self.run_pass(labels_only=labels_only)

    async def _next(self) -> bool:
        """Wait for the interval or a request, whichever comes first; True for a request."""
        if self._requested.is_set():
            return True
        sleeper = asyncio.ensure_future(self.clock.sleep(self.interval))
        waiter = asyncio.ensure_future(self._requested.wait())
        try:
            await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waiter.cancel()
            # Not ``suppress(CancelledError)`` around an await: that would also swallow a
            # cancellation of this task arriving meanwhile, and the loop would never end.
            await asyncio.gather(sleeper, waiter, return_exceptions=True)
        return self._requested.is_set()
