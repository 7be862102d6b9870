"""The run loop every simulated controller shares: run its informers (shared through an
:class:`~computedomain.kube.informerfactory.InformerFactory`), wait for them to sync, then work
its queue until cancelled.

Called by the ``*_controller`` modules and :mod:`computedomain.sim.scheduler.scheduler`'s
siblings. Uses :mod:`computedomain.kube` only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from computedomain.kube.informer import Informer
from computedomain.kube.informerfactory import InformerFactory
from computedomain.kube.workqueue import RateLimitingQueue, run_workers

__all__ = ["run_controller"]


async def run_controller(
    factory: InformerFactory,
    informers: Sequence[Informer],
    queue: RateLimitingQueue[str],
    handler: Callable[[str], Awaitable[None]],
    *,
    workers: int = 1,
) -> None:
    """Run ``informers`` and ``workers`` handlers on ``queue`` until cancelled; on the way out
    shut the queue down and leave the informers (the factory stops those nobody else runs)."""
    try:
        async with factory.running(informers):
            await run_workers(queue, handler, workers=workers)
    finally:
        queue.shutdown(drop_pending=True)
