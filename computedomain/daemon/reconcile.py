"""The daemon's registration loop: keep the own entry right, publish the membership list.

One task (:meth:`MembershipLoop.run`) is the daemon's only API writer while it runs (as
upstream's single work-queue worker was), so its writes never race each other. It is
level-triggered: watch events of the membership object and of the own pod only record the
newest state and wake it; each pass then

1. publishes the current list to the IMEX side (:class:`~computedomain.daemon.imexsync.Mailbox`,
   latest value wins, never blocks: upstream's hazard H8),
2. decides the one change the own entry needs (register, then status) and applies it through
   the :class:`~computedomain.daemon.registration.Registrar`.

A pass that finds nothing to change makes no API call, so watch resyncs cost nothing (invariant
S7; hazards and invariants: docs/compatibility.md).
Failures are retried with upstream's backoff (5 ms doubling to 6 s, ±25 % jitter); a new event
retries at once. :meth:`deregister` removes the own entry at shutdown, by node name and pod
UID, retrying conflicts until its deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Mapping
from typing import Any

from computedomain.api.errors import ComputeDomainError, PermanentError, TemporaryError
from computedomain.api.models import DaemonInfo
from computedomain.daemon import membership, pod
from computedomain.daemon.identity import Identity
from computedomain.daemon.imexsync import Snapshot
from computedomain.daemon.registration import MAX_DELAY, Registrar, resource_version
from computedomain.kube import errors
from computedomain.runtime import logs
from computedomain.runtime.backoff import Backoff

log = logs.get_logger(__name__)

# Upstream's per-item backoff: 5 ms doubling to 6 s, with ±25 % jitter.
RETRY_BACKOFF = Backoff(base=0.005, cap=MAX_DELAY, jitter=(0.75, 1.25))


class LatestObject:
    """The newest version seen of one object, from the watch or from our own writes.

    Read-your-writes without waiting for the watch (what upstream's mutation cache gives):
    :meth:`offer` keeps whichever of the current and the offered object has the larger integer
    resourceVersion.
    """

    def __init__(self) -> None:
        self._obj: dict[str, Any] | None = None

    def get(self) -> dict[str, Any] | None:
        return self._obj

    def offer(self, obj: dict[str, Any]) -> bool:
        """Keep ``obj`` if it is newer; whether it was kept."""
        new, old = resource_version(obj), resource_version(self._obj)
        if self._obj is not None and new is not None and old is not None and new <= old:
            return False
        self._obj = obj
        return True

    def deleted(self, obj: Mapping[str, Any]) -> None:
        """The object was deleted (as of ``obj``'s version)."""
        new, old = resource_version(obj), resource_version(self._obj)
        if new is None or old is None or new >= old:
            self._obj = None


class MembershipLoop:
    """Registers this daemon and keeps its entry's IP, pod UID and status current."""

    def __init__(
        self,
        registrar: Registrar,
        cache: LatestObject,
        identity: Identity,
        *,
        publish: Callable[[Snapshot], None],
        listed: Callable[[], bool] = lambda: False,
        blocked: Callable[[], bool] = lambda: False,
        report: Callable[[ComputeDomainError], None] = lambda _: None,
        rng: random.Random | None = None,
        remembered: int | None = None,
        on_index: Callable[[int], None] = lambda _: None,
    ) -> None:
        """``remembered``: the index this node held before this process (the domain
        directory's memory, :mod:`.indexmemory`); ``on_index`` is told each new own index."""
        self.registrar = registrar
        self.shape = registrar.shape
        self.cache = cache
        self.identity = identity
        self._publish = publish
        self._listed = listed
        self._blocked = blocked
        self._report = report
        self._rng = rng or random.Random()
        self._wake = asyncio.Event()
        self._pod: Mapping[str, Any] | None = None
        self._published: Snapshot | None = None
        self._registered = False
        self._superseded = False
        self._last_index: int | None = remembered
        self._on_index = on_index
        self._failures = 0
        self._rejected_rv: int | None = None
        self._parsed: tuple[Mapping[str, Any] | None, tuple[DaemonInfo, ...]] = (None, ())
        self.registered = asyncio.Event()  # set once the own entry has been written

    # --- inputs (watch handlers call these; they never block) ---------------------------------

    def observe(self, obj: dict[str, Any]) -> None:
        self.cache.offer(obj)
        self._wake.set()

    def observe_deleted(self, obj: dict[str, Any]) -> None:
        self.cache.deleted(obj)
        self._wake.set()

    def observe_pod(self, obj: Mapping[str, Any]) -> None:
        self._pod = obj
        self._wake.set()

    def poke(self) -> None:
        """Something the decision depends on changed (e.g. a host conflict appeared)."""
        self._wake.set()

    # --- the loop -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Reconcile until cancelled. Raises only CancelledError."""
        delay: float | None = 0.0
        while True:
            if delay is None or delay > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
            self._wake.clear()
            delay = await self.step()

    def entries(self, obj: Mapping[str, Any]) -> tuple[DaemonInfo, ...]:
        """``obj``'s list, parsed once per object (events outnumber writes by far)."""
        if self._parsed[0] is not obj:
            self._parsed = (obj, self.shape.entries(obj))
        return self._parsed[1]

    async def step(self) -> float | None:
        """One pass; returns when to pass again (None: on the next event, 0: at once)."""
        obj = self.cache.get()
        self._publish_snapshot(obj)
        op = self.next_op(obj)
        if op is None:
            return None
        try:
            outcome = await self.registrar.apply(op, known=self._listed())
        except membership.Superseded as exc:
            log.warning("Not writing the own entry any more", reason=str(exc))
            self._superseded = True
            self._report(exc)
            return None
        except (TemporaryError, errors.ApiError) as exc:
            self._failures += 1
            delay = RETRY_BACKOFF.delay(self._failures, self._rng)
            log.info(
                "Reconcile", error=str(exc), attempt=self._failures, retry_in_s=round(delay, 3)
            )
            if isinstance(exc, TemporaryError):
                self._report(exc)
            return delay
        except PermanentError as exc:
            # Bad data or a broken policy: report it, and try again slowly (peers may fix it).
            self._failures += 1
            log.error("Reconcile", error=str(exc), retry_in_s=RETRY_BACKOFF.cap)
            self._report(exc)
            return RETRY_BACKOFF.cap
        self._failures = 0
        if outcome.obj is not None:
            self.cache.offer(outcome.obj)
        if outcome.planned is not None and outcome.planned.entry is not None:
            self._registered = True
            self._own_index(outcome.planned.entry.index)
            self.registered.set()
        return 0.0

    def _own_index(self, index: int) -> None:
        if index != self._last_index:
            self._last_index = index
            self._on_index(index)

    def next_op(self, obj: Mapping[str, Any] | None) -> membership.Op | None:
        """The change the own entry needs in ``obj`` (register before status), or None.

        No I/O; it only notes, the first time it sees the own entry in place, that this daemon
        is registered (from then on it never takes its entry back from another pod).
        """
        if self._superseded:
            return None
        me = self.identity
        own: DaemonInfo | None = None
        if obj is not None:
            reason = self.shape.rejects(obj)
            if reason is not None:
                rv = resource_version(obj)
                if rv != self._rejected_rv:
                    self._rejected_rv = rv
                    log.warning(
                        "Skipping",
                        object=f"{self.shape.namespace}/{self.shape.name}",
                        reason=reason,
                    )
                return None
            entries = self.entries(obj)
            pos = membership.find(entries, me.node_name)
            own = entries[pos] if pos is not None else None
        if (
            own is None
            or own.ip_address != me.pod_ip
            or own.clique_id != me.clique_id
            or (me.pod_uid and own.pod_uid != me.pod_uid)
        ):
            return membership.Register(
                node_name=me.node_name,
                ip_address=me.pod_ip,
                clique_id=me.clique_id,
                pod_uid=me.pod_uid or None,
                previous_index=self._last_index,
                takeover=not self._registered,
            )
        if not self._registered and (not me.pod_uid or own.pod_uid == me.pod_uid):
            # Already ours (a restarted container finds its entry): never take it back later.
            self._registered = True
            self._own_index(own.index)
            self.registered.set()
        desired = pod.desired_status(self._pod, blocked=self._blocked())
        if desired is not None and own.status != desired:
            return membership.SetStatus(me.node_name, desired, me.pod_uid or None)
        return None

    def _publish_snapshot(self, obj: Mapping[str, Any] | None) -> None:
        if obj is None or self.shape.rejects(obj) is not None:
            return
        snapshot = Snapshot(self.entries(obj), self.shape.num_nodes(obj))
        if snapshot != self._published:
            self._published = snapshot
            self._publish(snapshot)

    async def deregister(self, *, within: float = 10.0) -> bool:
        """Remove the own entry (shutdown). Retries conflicts for ``within`` s; whether the
        entry is gone. Never raises (the controller's cleanup is the safety net)."""
        me = self.identity
        op = membership.Deregister(me.node_name, me.pod_ip, me.pod_uid or None)
        try:
            async with asyncio.timeout(within):
                outcome = await self.registrar.apply(op)
        except (TimeoutError, TemporaryError, PermanentError, errors.ApiError) as exc:
            log.warning("Failed to remove the own entry during shutdown", error=str(exc))
            return False
        if outcome.planned is not None:
            log.info(
                "Successfully removed daemon with IP %s from %s %s (from ComputeDomain %s/%s)",
                me.pod_ip,
                self.shape.short_kind,
                self.shape.name,
                me.cd_namespace,
                me.cd_name,
            )
        return True
