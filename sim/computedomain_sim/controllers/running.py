"""What every simulated controller of the control plane shares: its construction
(:class:`ControlPlaneController`: the client, the event recorder, the clock and the informer
factory it shares with the others) and its run loop (:func:`run_controller`: run its informers,
wait for them to sync, then work its queue until cancelled).

Called by the ``*_controller`` modules and :mod:`computedomain_sim.scheduler.scheduler`'s
siblings. Uses :mod:`computedomain.kube` only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from computedomain.kube.events import EventRecorder
from computedomain.kube.informer import Informer
from computedomain.kube.informerfactory import InformerFactory
from computedomain.kube.rest import Api
from computedomain.kube.workqueue import RateLimitingQueue, run_workers
from computedomain.runtime.clock import REAL_CLOCK, Clock

__all__ = ["ControlPlaneController", "run_controller"]


class ControlPlaneController:
    """The parts every simulated controller is built from; a subclass makes its informers,
    queue and handlers in :meth:`_wire`. Without ``informers`` the controller gets a factory of
    its own (as in tests that run one controller alone)."""

    def __init__(
        self,
        api: Api,
        *,
        events: EventRecorder,
        clock: Clock | None = None,
        informers: InformerFactory | None = None,
    ) -> None:
        self.api = api
        self.events = events
        self.clock = clock or REAL_CLOCK
        self.factory = informers or InformerFactory(api)
        self._wire()

    def _wire(self) -> None:
        """Make the informers (through :attr:`factory`), the queue and the handlers."""
        raise NotImplementedError


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
