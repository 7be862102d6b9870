"""Creating a controller's pods in slow-start batches, as kube-controller-manager does.

Called by the DaemonSet and Deployment controllers for the creates of one sync. The pods go in
batches of 1, 2, 4, ... each batch at once, the next only once the whole previous one has
succeeded: when a domain's nodes are labelled together (or a job of many workers is created),
its pods no longer wait for each other's round trips (36 nodes under load: one create about
every half second), and an API that refuses every create still sees only one request per sync.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

__all__ = ["create_all"]

T = TypeVar("T")


async def create_all(items: Sequence[T], create: Callable[[T], Awaitable[None]]) -> None:
    """``await create(item)`` for every item, in slow-start batches (module doc). The first
    failure of a batch is raised once that batch is done; the items after it are not tried."""
    size, start = 1, 0
    while start < len(items):
        batch = items[start : start + size]
        outcomes = await asyncio.gather(*(create(item) for item in batch), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        start += size
        size *= 2
