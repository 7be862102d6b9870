"""Early wake-ups for waiting prepare requests.

A channel claim waits, between attempts, for its domain's daemon to turn Ready or for another
domain's label to leave the node. Instead of sleeping out the whole backoff, the waiting
request also wakes when an informer sees a change that may end the wait, so a workload starts
within milliseconds of its daemon becoming Ready. Waking early is always safe (the attempt
re-checks everything) but not free: a forming domain's clique and status change once or twice
per daemon, so waking every waiter of the domain on each change would cost each node an attempt
per peer (quadratic in the domain's size). So the keys are per node where the change says which
node it concerns:

- :func:`domain_node_key` (domain, node): this node's entry in the domain's clique or status,
  or its daemon pod, changed;
- :func:`domain_key` (domain): the domain or a clique of it appeared or went away, or the
  domain changed outside its status;
- :data:`NODE_KEY`: the Node changed (the label waiters).

:func:`changed_entries` finds the nodes whose entries differ between two versions of a list.
Single event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from typing import Any


def domain_key(uid: str) -> str:
    return f"domain/{uid}"


def domain_node_key(uid: str, node: str) -> str:
    return f"domain/{uid}/node/{node}"


def changed_entries(old: Any, new: Any, name_field: str) -> set[str]:
    """Names (``entry[name_field]``) of the entries that differ between two lists. Pure.

    Anything that is not a list counts as empty; entries that are not mappings are ignored.
    """

    def by_name(entries: Any) -> dict[str, Any]:
        if not isinstance(entries, list):
            return {}
        return {
            str(e.get(name_field)): e
            for e in entries
            if isinstance(e, Mapping) and e.get(name_field)
        }

    before, after = by_name(old), by_name(new)
    return {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}


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
            # The first key rung ends the wait (asyncio.wait's default waits for all of them:
            # a claim woken for its node then slept out the rest of its backoff, up to 3 s).
            done, _ = await asyncio.wait(
                waiters, timeout=max(0.0, seconds), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in waiters:
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter
        return bool(done)
