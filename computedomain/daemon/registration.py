"""Applying one own-entry change to the API: compare-and-swap on a fresh read, re-planned on
conflict.

:class:`Registrar` is the thin, effectful half of the membership rules
(:mod:`computedomain.daemon.membership` is the pure half). Called by
:mod:`computedomain.daemon.reconcile` (join, IP update, readiness) and at shutdown
(deregistration); calls the API through a :class:`~computedomain.daemon.shapes.Shape`.

Every write carries the resourceVersion of the object it was planned from, so a write can never
replace a list it did not see (upstream #1050, #1418). On 409 we wait, then re-plan only the own
change on a newer object: the one the watch has delivered meanwhile if it is newer than the one
we tried, otherwise a fresh GET. Nothing is retried from a stale list.

Keeping writes and conflicts low when a whole clique joins at once
(docs/compatibility.md#stable-conflict-light-membership): the wait
after a conflict is drawn uniformly from a window of ``2 * contenders * slot``, capped at 6 s
like upstream's backoff. ``contenders`` is the number of still-free indices (an upper bound on
the daemons that may still race for this object); ``slot`` is how long one contender holds the
object: a moving average of this daemon's write round trips, 409s included (a lost race costs
the same trip), each trip counted between 1 ms and 250 ms, starting from 20 ms (so that one
stalled first request does not stretch the first windows to seconds). Spreading the retries
over about twice as many slots as racers makes most of them land alone, so a joining daemon
needs about two writes on average instead of the O(N) of a fixed short backoff.

Why an average of recent trips and not the fastest trip seen: when hundreds of daemons start
at once a write takes far longer than on an idle server, and the object cannot take more than
one write per trip, so windows sized from a best-case trip make the retries collide again and
again, each lost race adding load. The average follows the load both ways within a few writes;
the window only doubles from the third conflict in a row on, as a guard should the estimate
still be too short. Starting from a fixed 20 ms rather than from the first trip keeps a single
descheduled request on a loaded machine from stretching a small clique's join.
``bench/daemon_join.py`` measures writes and conflicts per joining daemon.

Two changes are sent as JSON patches instead (:meth:`~computedomain.daemon.shapes.Shape.
patch_for`), which carry no resourceVersion and test only what the change depends on:

- a status change (the readiness flip): a ``test`` that the own entry is still where and what
  it was, then a ``replace`` of its status. Daemons turning Ready together, or joining
  meanwhile, do not make each other's flips fail;
- a join in clique mode: a ``test`` of every entry's name and index in place, the ``add`` of
  the own entry at the end, and a ``test`` that it landed right after them. That is what the
  compare-and-swap guaranteed (the index still free, the name still absent); a peer's readiness
  flip or new IP does not fail it.

A test that fails (422) is handled like a conflict: wait, read again, plan again; after
:data:`MAX_STALE_PATCHES` in a row the operation is written whole (a guard: a fresh read cures a
lost race, not a server that refuses the patch for another reason). Nothing is written from a
stale list. A role without ``patch`` falls back to the compare-and-swap (logged once).

The same spreading is applied before creating the object: when a domain forms, every daemon of
a clique finds it absent at once and only one create can succeed. A write is only made when
the plan changes something (no writes on resync, invariant S7 of
docs/compatibility.md#membership-invariants).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from computedomain.api.errors import TemporaryError
from computedomain.daemon import membership
from computedomain.daemon.shapes import Shape
from computedomain.kube import errors
from computedomain.kube.rest import Api
from computedomain.policies.hookspecs import IndexPolicy
from computedomain.runtime import logs

log = logs.get_logger(__name__)

MAX_DELAY = 6.0  # upstream's cap on the daemon's retry backoff
FIRST_SLOT = 0.020  # before this daemon has timed a write of its own
MIN_SLOT = 0.001
MAX_SLOT = 0.250
NEWEST_WEIGHT = 0.3  # of the newest round trip in the moving average
# Failed patch tests in a row after which one operation is written whole: a guard against a
# server that answers a patch 422 for a reason a fresh read cannot cure.
MAX_STALE_PATCHES = 3


class ObjectMissing(TemporaryError):
    """The object holding the list does not exist (status mode: the ComputeDomain)."""


class StalePatch(Exception):
    """A JSON patch's test failed: the list changed since it was read. Handled like a
    conflict (wait, read again, plan again); never leaves :meth:`Registrar.apply`."""


class Rejected(TemporaryError):
    """The object is another domain's (label or UID mismatch); wait for ours."""


@attrs.define
class WriteStats:
    """API traffic of one daemon's registration, for the benchmark and metrics."""

    writes: int = 0  # every create/update/patch sent, successful or not
    conflicts: int = 0  # 409s (resourceVersion conflicts and AlreadyExists)
    reads: int = 0  # GETs
    stale_patches: int = 0  # patches whose test failed (then planned again on a newer read)


def resource_version(obj: Mapping[str, Any] | None) -> int | None:
    """The integer resourceVersion of ``obj`` (None when absent or not an integer). Pure."""
    if obj is None:
        return None
    text = (obj.get("metadata") or {}).get("resourceVersion")
    try:
        return int(text) if text is not None else None
    except (TypeError, ValueError):
        return None


def conflict_delay(attempt: int, contenders: int, slot: float, rng: random.Random) -> float:
    """Seconds to wait after the ``attempt``-th conflict in a row. Pure given ``rng``.

    Uniform in a window of ``2 * contenders`` slots, the same after the first and the second
    conflict (the slot follows the measured trips), doubled for every further conflict in a row
    (a guard should the slot still be too short), at most :data:`MAX_DELAY`.
    """
    window = slot * 2 * max(contenders, 1) * 2 ** min(max(attempt - 2, 0), 16)
    return rng.uniform(0.0, min(window, MAX_DELAY))


def next_slot(slot: float, took: float) -> float:
    """The slot after a write that took ``took`` seconds. Pure.

    A moving average giving the newest trip :data:`NEWEST_WEIGHT`, each trip first bounded to
    [:data:`MIN_SLOT`, :data:`MAX_SLOT`] (one stalled request must not freeze a daemon for the
    6 s cap).
    """
    took = min(max(took, MIN_SLOT), MAX_SLOT)
    return (1 - NEWEST_WEIGHT) * slot + NEWEST_WEIGHT * took


@attrs.frozen
class Outcome:
    """The object after the operation (None if it does not exist) and what was written."""

    obj: dict[str, Any] | None
    planned: membership.Planned | None


class Registrar:
    """Applies own-entry operations through one shape. One operation at a time."""

    def __init__(
        self,
        api: Api,
        shape: Shape,
        policy: IndexPolicy,
        *,
        cached: Callable[[], dict[str, Any] | None] = lambda: None,
        rng: random.Random | None = None,
    ) -> None:
        self.api = api
        self.shape = shape
        self.policy = policy
        self._cached = cached
        self._rng = rng or random.Random()
        self._slot = FIRST_SLOT
        self._patch_allowed = True
        self.stats = WriteStats()

    async def read(self) -> dict[str, Any] | None:
        """A fresh GET of the object (None when it does not exist). Raises ApiError."""
        self.stats.reads += 1
        try:
            return await self.api.get(self.shape.resource, self.shape.name, self.shape.namespace)
        except errors.NotFound:
            return None

    @property
    def slot(self) -> float:
        """Seconds one contender needs the object for: see the module docstring."""
        return self._slot

    async def apply(self, op: membership.Op, *, known: bool = False) -> Outcome:
        """Make ``op`` true in the API; return the resulting object. Idempotent.

        Starts from the newest object known: the ``cached`` one, which counts even when absent
        if ``known`` (the watch has listed it: no object), else a fresh GET. Retries conflicts
        until done. Raises the planning errors of :func:`membership.plan`, ObjectMissing,
        Rejected, and ApiError other than a conflict.
        """
        obj = self._cached()
        if obj is None and not known:
            obj = await self.read()
        if obj is None and isinstance(op, membership.Register) and self.shape.can_create:
            # Nobody has created the object yet, and when a domain forms every daemon of the
            # clique finds it absent at the same moment: only one create can succeed, so spread
            # the attempts as if they had already collided, then look again.
            limit = self.shape.scope.limit
            await asyncio.sleep(conflict_delay(1, limit, self.slot, self._rng))
            obj = self._cached()
        attempt = stale = 0
        while True:
            tried = resource_version(obj)
            try:
                return await self._attempt(obj, op, patch=stale < MAX_STALE_PATCHES)
            except errors.Conflict:
                self.stats.conflicts += 1
                attempt += 1
            except StalePatch:
                attempt += 1
                stale += 1
            entries = self.shape.entries(obj) if obj is not None else ()
            free = self.shape.scope.limit - sum(1 for e in entries if self.shape.scope.counts(e))
            await asyncio.sleep(conflict_delay(attempt, free, self.slot, self._rng))
            newer = self._cached()
            seen = resource_version(newer)
            if newer is not None and seen is not None and (tried is None or seen > tried):
                obj = newer  # the watch already brought the version that beat us
            else:
                obj = await self.read()

    async def _attempt(
        self, obj: dict[str, Any] | None, op: membership.Op, *, patch: bool = True
    ) -> Outcome:
        if obj is None:
            return await self._create(op)
        reason = self.shape.rejects(obj)
        if reason is not None:
            msg = f"{self.shape.resource.kind} {self.shape.namespace}/{self.shape.name}: {reason}"
            raise Rejected(msg)
        planned = membership.plan(
            self.shape.entries(obj), op, policy=self.policy, scope=self.shape.scope
        )
        if planned is None:
            return Outcome(obj, None)
        written = await self._patch(obj, planned) if patch else None
        if written is None:
            written = await self._timed_write(
                self.shape.write(self.api, self.shape.body(obj, planned))
            )
        entry = planned.entry
        log.info(
            f"Successfully {planned.change} own entry",
            object=f"{self.shape.resource.kind} {self.shape.namespace}/{self.shape.name}",
            index=entry.index if entry else None,
            ip=entry.ip_address if entry else None,
            status=entry.status if entry else None,
        )
        return Outcome(written, planned)

    async def _patch(
        self, obj: dict[str, Any], planned: membership.Planned
    ) -> dict[str, Any] | None:
        """``planned`` as a JSON patch (see the module doc); None when it must be written whole
        instead: a change the shape has no patch for, or no ``patch`` permission (an older
        role). Raises :class:`StalePatch` when a test of the patch failed."""
        if not self._patch_allowed:
            return None
        ops = self.shape.patch_for(obj, planned)
        if ops is None:
            return None
        try:
            return await self._timed_write(self.shape.patch(self.api, ops))
        except errors.Forbidden as exc:
            log.warning(
                "Cannot patch own entry; writing the whole object from now on",
                object=f"{self.shape.resource.kind} {self.shape.namespace}/{self.shape.name}",
                error=str(exc),
            )
            self._patch_allowed = False
            return None
        except errors.ApiClientError as exc:
            # 422: a test failed; 400: an older server's answer to a test on a missing path.
            if not isinstance(exc, errors.Invalid) and exc.status != 400:
                raise
            self.stats.stale_patches += 1
            raise StalePatch(str(exc)) from exc

    async def _create(self, op: membership.Op) -> Outcome:
        # Nothing to remove from (None), no status to set (NotListed), or an insert.
        planned = membership.plan((), op, policy=self.policy, scope=self.shape.scope)
        if planned is None:
            return Outcome(None, None)
        if not self.shape.can_create:
            msg = f"{self.shape.resource.kind} {self.shape.namespace}/{self.shape.name} not found"
            raise ObjectMissing(msg)
        body = self.shape.new_object(planned)
        written = await self._timed_write(
            self.api.create(self.shape.resource, body, self.shape.namespace)
        )
        log.info("Created", object=f"{self.shape.resource.kind} {body['metadata']['name']}")
        return Outcome(written, planned)

    async def _timed_write(self, write: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        self.stats.writes += 1
        try:
            result = await write
        finally:
            self._slot = next_slot(self._slot, loop.time() - start)
        return result
