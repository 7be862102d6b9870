"""The run loop every simulated controller shares: start its informers, wait for them to sync,
then work its queue until cancelled.

Called by the ``*_controller`` modules and :mod:`computedomain.sim.scheduler.scheduler`'s
siblings. Uses :mod:`computedomain.kube` only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from computedomain.kube.informer import Informer
from computedomain.kube.workqueue import RateLimitingQueue, run_workers

__all__ = ["run_controller"]


async def run_controller(
    informers: Sequence[Informer],
    queue: RateLimitingQueue[str],
    handler: Callable[[str], Awaitable[None]],
    *,
    workers: int = 1,
) -> None:
    """Run ``informers`` and ``workers`` handlers on ``queue`` until cancelled; on the way out
    shut the queue down and stop the informers."""
    tasks = [asyncio.create_task(i.run(), name=f"informer-{i.name}") for i in informers]
    try:
        for informer in informers:
            await informer.wait_for_sync()
        await run_workers(queue, handler, workers=workers)
    finally:
        queue.shutdown(drop_pending=True)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
