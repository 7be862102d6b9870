"""One reconcile of one ComputeDomain UID: snapshot, plan, (live read, plan), coalesce, apply.

The work queue hands a UID to :meth:`Reconciler.reconcile`. It builds a snapshot from the
caches and asks :func:`planning.plan` for actions. Two answers ask for a live read first: the
domain's daemon pods, before dropping a node whose pod is missing from the cache (upstream
#1418); and the domain itself, before tearing down the remains of a UID the domain cache does
not know (it may only lag). The reconciler reads, then plans again. A status write that comes
sooner than the domain's coalescing window allows is taken out and the key re-queued for the
end of the window, so a burst of daemon changes costs one write. Then
:class:`~.applying.Applier` runs the actions.

Called by the work queue's workers (:mod:`~computedomain.controller.controller`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

import attrs

from computedomain.api import names
from computedomain.api.errors import PermanentError, TemporaryError
from computedomain.controller import coalescing, objects, planning
from computedomain.controller.actions import Action, ConfirmGone, Kind, ReadLivePods, WriteStatus
from computedomain.controller.applying import Applier
from computedomain.controller.caches import Caches
from computedomain.controller.coalescing import Coalescer
from computedomain.controller.metrics import ControllerMetrics
from computedomain.controller.objects import JsonObject
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.kube.workqueue import RateLimitingQueue
from computedomain.runtime import logs
from computedomain.runtime.clock import REAL_CLOCK, Clock

_log = logs.get_logger(__name__)

OUTCOME_DONE: Final = "done"
OUTCOME_RETRY: Final = "retry"
OUTCOME_FAILED: Final = "failed"


class Reconciler:
    """The work queue's handler. Holds no per-domain state beyond the coalescer's."""

    def __init__(
        self,
        api: Api,
        caches: Caches,
        applier: Applier,
        queue: RateLimitingQueue[str],
        *,
        coalescer: Coalescer,
        metrics: ControllerMetrics,
        clock: Clock | None = None,
    ) -> None:
        self.api = api
        self.caches = caches
        self.applier = applier
        self.queue = queue
        self.coalescer = coalescer
        self.metrics = metrics
        self.clock = clock or REAL_CLOCK

    async def reconcile(self, uid: str) -> None:
        """Bring the domain ``uid`` (or its remains) one step closer to the planned state.

        Raises what :meth:`Applier.apply` raises; the work queue decides what to do with it.
        """
        started = self.clock.monotonic()
        outcome = OUTCOME_RETRY
        try:
            await self._reconcile(uid)
            outcome = OUTCOME_DONE
        except PermanentError:
            outcome = OUTCOME_FAILED
            raise
        finally:
            self.metrics.reconciled(outcome, self.clock.monotonic() - started)

    async def _reconcile(self, uid: str) -> None:
        now = datetime.fromtimestamp(self.clock.time(), UTC)
        snapshot = self.caches.snapshot(uid, now=now)
        actions = planning.plan(snapshot)
        if actions == (ConfirmGone(uid),):
            found = await self.live_domain(uid)
            if found is not None:
                self.caches.record(Kind.COMPUTE_DOMAIN, found)
                snapshot = self.caches.snapshot(uid, now=now)
            else:
                snapshot = attrs.evolve(snapshot, confirmed_gone=True)
            actions = planning.plan(snapshot)
        if actions == (ReadLivePods(uid),):
            live = await self.live_pods(uid)
            snapshot = attrs.evolve(snapshot, live_pods=live)
            actions = planning.plan(snapshot)
        if any(isinstance(a, ReadLivePods | ConfirmGone) for a in actions):
            msg = f"domain {uid}: the planner asked for the same live read twice"
            raise TemporaryError(msg)
        actions = self._coalesce(uid, actions)
        if actions:
            _log.debug("reconcile", domain=uid, actions=len(actions))
        await self.applier.apply(actions, snapshot.domain)

    def _coalesce(self, uid: str, actions: tuple[Action, ...]) -> tuple[Action, ...]:
        """Defer a status write that comes too soon; re-queue the key for when it may.

        A write that users wait on is urgent (see :func:`.coalescing.urgent`).
        """
        writes = [a for a in actions if isinstance(a, WriteStatus)]
        if not writes:
            return actions
        urgent = any(coalescing.urgent(a.based_on, a.status) for a in writes)
        wait = self.coalescer.wait(uid, urgent=urgent)
        if wait <= 0:
            return actions
        self.coalescer.deferred(uid)
        self.queue.add_after(uid, wait)
        return tuple(a for a in actions if not isinstance(a, WriteStatus))

    async def live_domain(self, uid: str) -> JsonObject | None:
        """The domain with this UID, read live (a full LIST: domains are found by name only)."""
        items, _ = await self.api.list_all(resources.COMPUTE_DOMAINS)
        return next((d for d in items if objects.uid(d) == uid), None)

    async def live_pods(self, uid: str) -> tuple[JsonObject, ...]:
        """This domain's daemon pods in every managed namespace, read live."""
        selector = f"{names.COMPUTE_DOMAIN_LABEL}={uid}"
        found: list[JsonObject] = []
        for namespace in self.caches.config.managed_namespaces:
            page = await self.api.list(resources.PODS, namespace, label_selector=selector)
            found.extend(page.get("items") or [])
        return tuple(found)
