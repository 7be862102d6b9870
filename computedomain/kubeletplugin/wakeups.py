"""Early wake-ups for waiting prepare requests.

A channel claim waits, between attempts, for its domain's daemon to turn Ready or for another
domain's label to leave the node. Instead of sleeping out the whole backoff, the waiting
request also wakes when an informer sees a change that may end the wait (the domain, its
clique, this node), so a workload starts within milliseconds of its daemon becoming Ready.
Waking early is always safe: the attempt re-checks everything. Single event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable


def domain_key(uid: str) -> str:
    return f"domain/{uid}"


NODE_KEY = "node"


class Wakeups:
    """Keyed wake-up signals: ``notify(key)`` ends every current ``wait`` on that key."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def notify(self, key: str) -> None:
        event = self._events.pop(key, None)
        if event is not None:
            event.set()

    async def wait(self, keys: Iterable[str], seconds: float) -> bool:
        """Sleep up to ``seconds``; True when woken by a notify of one of ``keys``."""
        events = [self._events.setdefault(k, asyncio.Event()) for k in keys]
        if not events:
            await asyncio.sleep(max(0.0, seconds))
            return False
        waiters = [asyncio.ensure_future(e.wait()) for e in events]
        try:
            done, _ = await asyncio.wait(waiters, timeout=max(0.0, seconds))
        finally:
            for waiter in waiters:
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter
        return bool(done)
