"""The ComputeDomain controller: caches, one de-duplicating work queue, workers, cleanup.

:class:`Controller` is built with an :class:`~computedomain.kube.rest.Api` (the real client,
pointed at any API server) and a :class:`~.config.ControllerConfig`; ``await controller.run()``
runs it until cancelled. The order matters: start every informer, wait for
the domain cache and then the others to sync, and only then start the orphan passes (which
read "absent" as "gone") and the workers. Events that arrive earlier wait in the queue.

Tests drive this object in-process; ``main`` wraps it in leader election and an HTTP server.
"""

from __future__ import annotations

import asyncio

from computedomain.api.errors import PermanentError
from computedomain.controller import triggers
from computedomain.controller.applying import Applier, Recorder, Reported
from computedomain.controller.caches import Caches
from computedomain.controller.cleanup import Cleanup
from computedomain.controller.coalescing import Coalescer
from computedomain.controller.config import ControllerConfig
from computedomain.controller.metrics import ControllerMetrics
from computedomain.controller.reconciling import Reconciler
from computedomain.kube.rest import Api
from computedomain.kube.workqueue import RateLimitingQueue, run_workers
from computedomain.runtime import logs
from computedomain.runtime.clock import REAL_CLOCK, Clock

_log = logs.get_logger(__name__)

QUEUE_NAME = "computedomain"


class Controller:
    """One controller instance; see the module docstring."""

    def __init__(
        self,
        api: Api,
        config: ControllerConfig,
        *,
        metrics: ControllerMetrics | None = None,
        recorder: Recorder | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.api = api
        self.config = config
        self.clock = clock or REAL_CLOCK
        self.metrics = metrics or ControllerMetrics()
        self.recorder = recorder
        self.caches = Caches(api, config, clock=clock)
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            name=QUEUE_NAME, clock=clock, metrics=self.metrics.queue
        )
        self.coalescer = Coalescer(
            config.status_coalesce_window,
            self.clock.monotonic,
            max_window=config.status_coalesce_max_window,
        )
        self.applier = Applier(
            api, self.caches, recorder=recorder, metrics=self.metrics, coalescer=self.coalescer
        )
        self.reconciler = Reconciler(
            api,
            self.caches,
            self.applier,
            self.queue,
            coalescer=self.coalescer,
            metrics=self.metrics,
            clock=clock,
        )
        self.cleanup = Cleanup(
            self.caches, self.queue, interval=config.cleanup_interval, clock=clock
        )
        triggers.install(self.caches, self.queue)
        self._started = False

    @property
    def synced(self) -> bool:
        """True once every cache has synced and the workers run."""
        return self._started

    async def run(self) -> None:
        """Run until cancelled; an unexpected failure of a part ends it with that error."""
        try:
            async with asyncio.TaskGroup() as group:
                for informer in self.caches.informers:
                    group.create_task(informer.run(), name=f"informer:{informer.name}")
                await self.caches.wait_for_sync()
                _log.info(
                    "caches synced",
                    domains=len(self.caches.domains.store),
                    namespaces=",".join(self.config.managed_namespaces),
                    mode=str(self.caches.mode),
                )
                group.create_task(self.cleanup.run(), name="cleanup")
                group.create_task(
                    run_workers(
                        self.queue,
                        self._handle,
                        workers=self.config.workers,
                        on_permanent=self._permanent,
                    ),
                    name="workers",
                )
                self._started = True
        finally:
            self._started = False
            self.queue.shutdown(drop_pending=True)

    async def _handle(self, uid: str) -> None:
        await self.reconciler.reconcile(uid)
        self.cleanup.request(labels_only=True)

    def _permanent(self, uid: str, error: PermanentError) -> None:
        """Report a permanent failure on the domain, unless the plan already did."""
        if isinstance(error, Reported) or self.recorder is None:
            return
        domain = self.caches.domain_by_uid(uid)
        if domain is not None:
            self.recorder.event(dict(domain), "Warning", "ReconcileFailed", str(error))
