"""Lease-based leader election (coordination.k8s.io/v1 Lease), client-go's algorithm in asyncio.

The controller's wiring runs ``await LeaderElector(...).run(lead)`` when leader election is on:
the elector acquires the Lease, runs ``lead()`` while it holds it, renews every
``retry_period``, and if renewing keeps failing for ``renew_deadline`` it cancels ``lead``. On any
exit (``lead`` returned or raised, lease lost, ``run`` cancelled) it releases the Lease — clears
``holderIdentity`` — so a standby takes over at once instead of waiting for expiry (unless
``release_on_cancel`` is False). ``run`` returns after losing the lease; the program then exits,
as upstream's controller does, so each term starts from fresh state.

Why not ``kubernetes.aio.leaderelection``: it never releases the lease, cannot be cancelled
cleanly (its leading task is cancelled but not awaited), keeps renewing after the leading
coroutine ends, reads wall-clock time directly (no virtual time in tests), and its LeaseLock
writes local time labelled as UTC. This module keeps its protocol (same Lease fields, client-go's
expiry rule: a follower waits ``leaseDurationSeconds`` from when *it* last saw the record change)
and talks to the Lease through our JSON :class:`~computedomain.kube.rest.Api`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import math
import random
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from computedomain.kube import errors
from computedomain.kube.resources import LEASES
from computedomain.kube.rest import Api
from computedomain.runtime import logs
from computedomain.runtime.clock import REAL_CLOCK, Clock

_log = logs.get_logger(__name__)

JITTER_FACTOR = 1.2
T = TypeVar("T")


def micro_time(epoch_seconds: float) -> str:
    """A Kubernetes MicroTime string (RFC 3339, microseconds, UTC). Pure."""
    moment = datetime.datetime.fromtimestamp(epoch_seconds, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _record(lease: dict[str, Any]) -> tuple[Any, ...]:
    spec = lease.get("spec") or {}
    return (
        spec.get("holderIdentity") or "",
        spec.get("leaseDurationSeconds"),
        spec.get("acquireTime"),
        spec.get("renewTime"),
        spec.get("leaseTransitions"),
    )


class LeaderElector:
    """One candidate for one Lease. Reusable only sequentially (one ``run`` at a time)."""

    def __init__(
        self,
        api: Api,
        *,
        lease_name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        clock: Clock | None = None,
        on_new_leader: Callable[[str], None] | None = None,
    ) -> None:
        if not identity:
            msg = "leader election identity must not be empty"
            raise ValueError(msg)
        if min(lease_duration, renew_deadline, retry_period) <= 0:
            msg = "lease_duration, renew_deadline and retry_period must be positive"
            raise ValueError(msg)
        if lease_duration <= renew_deadline:
            msg = f"lease_duration ({lease_duration}) must exceed renew_deadline ({renew_deadline})"
            raise ValueError(msg)
        if renew_deadline <= JITTER_FACTOR * retry_period:
            msg = (
                f"renew_deadline ({renew_deadline}) must exceed {JITTER_FACTOR} x retry_period "
                f"({retry_period})"
            )
            raise ValueError(msg)
        self.api = api
        self.lease_name = lease_name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self._clock = clock or REAL_CLOCK
        self._on_new_leader = on_new_leader
        self.is_leader = False
        self.observed_leader = ""
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None  # the last Lease we read or wrote

    async def run(self, lead: Callable[[], Awaitable[None]]) -> None:
        """Acquire, lead, renew; release on exit. Returns when leadership ends.

        Raises what ``lead`` raised (after releasing); CancelledError when cancelled.
        """
        try:
            await self._acquire()
            self.is_leader = True
            _log.info("became leader", lease=self.lease_name, identity=self.identity)
            leading = asyncio.ensure_future(lead())
            renewing = asyncio.ensure_future(self._renew_loop())
            try:
                await asyncio.wait({leading, renewing}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (renewing, leading):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await _quietly(task)
            if renewing.done() and not renewing.cancelled():
                _log.warning("lost the lease; stopped leading", lease=self.lease_name)
            failure = leading.exception() if leading.done() and not leading.cancelled() else None
            if failure is not None:
                raise failure
        finally:
            was_leader = self.is_leader
            self.is_leader = False
            if was_leader and self.release_on_cancel:
                await self._release()

    # -- the protocol ------------------------------------------------------------------------

    async def _acquire(self) -> None:
        while True:
            if await self._bounded(self._try_acquire_or_renew(), self.renew_deadline, False):
                return
            jitter = self.retry_period * random.uniform(0.0, JITTER_FACTOR)
            await self._clock.sleep(self.retry_period + jitter)

    async def _renew_loop(self) -> None:
        """Renew every retry_period; return once renewal has failed for renew_deadline."""
        while True:
            deadline = self._clock.monotonic() + self.renew_deadline
            while True:
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    return
                if await self._bounded(self._try_acquire_or_renew(), remaining, False):
                    break
                await self._clock.sleep(min(self.retry_period, max(0.0, remaining)))
            await self._clock.sleep(self.retry_period)

    async def _try_acquire_or_renew(self) -> bool:
        now = micro_time(self._clock.time())
        duration = max(1, math.ceil(self.lease_duration))
        try:
            lease = await self.api.get(LEASES, self.lease_name, self.namespace)
        except errors.NotFound:
            body = {
                "apiVersion": LEASES.api_version,
                "kind": LEASES.kind,
                "metadata": {"name": self.lease_name, "namespace": self.namespace},
                "spec": self._spec(now, now, duration, 0),
            }
            try:
                self._lease = await self.api.create(LEASES, body)
            except errors.ApiError as exc:
                _log.debug("could not create lease", lease=self.lease_name, error=str(exc))
                return False
            self._observe(self._lease)
            return True
        except errors.ApiError as exc:
            _log.info("could not read lease", lease=self.lease_name, error=str(exc))
            return False

        self._observe(lease)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record_duration = spec.get("leaseDurationSeconds") or duration
        expires = self._observed_at + float(record_duration)
        if holder and holder != self.identity and expires > self._clock.monotonic():
            return False  # someone else holds an unexpired lease
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.identity:
            acquired = spec.get("acquireTime") or now
        else:
            acquired, transitions = now, transitions + 1
        updated = {**lease, "spec": {**spec, **self._spec(acquired, now, duration, transitions)}}
        try:
            self._lease = await self.api.update(LEASES, updated)
        except errors.ApiError as exc:
            _log.debug("could not update lease", lease=self.lease_name, error=str(exc))
            return False
        self._observe(self._lease)
        return True

    async def _release(self) -> None:
        """Clear holderIdentity if the lease still names us (so a standby need not wait).

        Reads the lease first: a renewal cancelled in flight may have been applied by the server
        without us seeing its answer, leaving our copy one resourceVersion behind.
        """
        for _ in range(3):
            try:
                lease = await self.api.get(LEASES, self.lease_name, self.namespace)
            except errors.ApiError as exc:
                _log.info("could not read the lease to release it", error=str(exc))
                return
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return  # someone else holds it now
            now = micro_time(self._clock.time())
            spec.pop("holderIdentity", None)
            spec.update({"leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now})
            try:
                self._lease = await self.api.update(LEASES, {**lease, "spec": spec})
            except errors.Conflict:
                continue  # changed under us: look again
            except errors.ApiError as exc:
                _log.info("could not release the lease", lease=self.lease_name, error=str(exc))
                return
            _log.info("released the lease", lease=self.lease_name, identity=self.identity)
            return

    def _spec(self, acquired: str, renewed: str, duration: int, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": duration,
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        }

    def _observe(self, lease: dict[str, Any]) -> None:
        record = _record(lease)
        if record != self._observed:
            self._observed = record
            self._observed_at = self._clock.monotonic()
            holder = record[0]
            if holder != self.observed_leader:
                self.observed_leader = holder
                if holder and self._on_new_leader is not None:
                    self._on_new_leader(holder)

    async def _bounded(self, coro: Coroutine[Any, Any, T], seconds: float, default: T) -> T:
        """Run ``coro`` for at most ``seconds`` of this elector's clock; ``default`` on timeout."""
        work = asyncio.ensure_future(coro)
        timer = asyncio.ensure_future(self._clock.sleep(seconds))
        try:
            await asyncio.wait({work, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not work.done():
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await _quietly(work)
        if work.cancelled():
            return default
        return work.result()


async def _quietly(task: asyncio.Future[Any]) -> None:
    """Await a finished or cancelled task without raising its outcome."""
    with contextlib.suppress(Exception):
        await task
