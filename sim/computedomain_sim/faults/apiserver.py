"""Fault injection in the embedded API server: a pipeline stage with runtime controls.

:class:`ApiFaults` is an ``EmbeddedApiServer(stages=[faults])`` stage (see
:mod:`computedomain_sim.apiserver.pipeline`: it runs after classification, before
authentication). For each resource request it asks :func:`.decide.decide` what to do and then

- waits the decided latency;
- answers the decided error itself (409 Conflict, 429 with ``Retry-After``, 500, 503 with
  ``Retry-After``), worded as kube-apiserver words them, without serving the request;
- for a 504, serves the request and replaces the answer with a 504 Timeout;
- for a watch with a watch fault, serves it and, at the decided moment, drops its connection
  or expires the resource's window (:mod:`.watches`).

Everything injected is counted (:attr:`ApiFaults.counts`). The spec can be replaced and the
injector paused at run time — from a test (:meth:`ApiFaults.configure`, :meth:`ApiFaults.paused`)
or over HTTP through ``/debug/faults`` (:mod:`.control`, admin only), which this stage serves.
The seed is fixed when the spec is set (random when the spec has none) and is part of
:meth:`ApiFaults.report`, so every run can be replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from computedomain_sim.apiserver import security, status, wire
from computedomain_sim.apiserver.pipeline import INFO, STATE, Handler
from computedomain_sim.apiserver.requestinfo import RequestInfo
from computedomain_sim.apiserver.state import ApiState
from computedomain_sim.faults import control, decide, watches
from computedomain_sim.faults import spec as faultspec
from computedomain_sim.faults.counts import FaultCounts
from computedomain_sim.faults.schedule import Injected

log = logging.getLogger(__name__)


def _retry_header(seconds: float) -> str:
    return str(int(seconds)) if seconds == int(seconds) else f"{seconds:.3f}".rstrip("0")


def error_response(kind: str, info: RequestInfo, retry_after: float) -> web.Response:
    """The Status answer of an injected error, as kube-apiserver words it. Pure."""
    resource = info.resource
    retry_seconds = max(1, int(-(-retry_after // 1))) if retry_after > 0 else None
    if kind == "409":
        err = status.conflict(resource, info.group, info.name or "")
    elif kind == "429":
        err = status.too_many_requests(retry_seconds or 1)
    elif kind == "500":
        err = status.internal_error("injected fault (computedomain_sim.faults)")
    elif kind == "503":
        err = status.ApiStatusError(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
            retry_after_seconds=retry_seconds,
        )
    else:
        err = status.ApiStatusError(
            504,
            "Timeout",
            "Timeout: request did not complete within requested timeout - context deadline "
            "exceeded",
        )
    response = wire.status_response(err)
    if kind in ("429", "503") and retry_after > 0:
        response.headers["Retry-After"] = _retry_header(retry_after)
    return response


def request_facts(
    state: ApiState, request: web.BaseRequest, info: RequestInfo, need_user: bool
) -> decide.Request:
    """The facts rules match on. The user is looked up only when a rule scopes by user (an
    invalid token gives no user: the authentication stage answers 401 anyway)."""
    user = None
    if need_user:
        with contextlib.suppress(status.ApiStatusError):
            found = security.authenticate(state, request.headers.get("Authorization", ""))
            user = found.name if found is not None else None
    resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
    return decide.Request(
        verb=info.verb,
        resource=resource,
        namespace=info.namespace,
        user=user,
        agent=request.headers.get("User-Agent", ""),
        path=info.path,
    )


class ApiFaults:
    """The fault-injection stage of one server (see the module doc)."""

    def __init__(self, fault_spec: faultspec.FaultSpec | str = "", *, enabled: bool = True) -> None:
        self.counts = FaultCounts()
        self.enabled = enabled
        self.state: ApiState | None = None  # the server's, seen on the first request
        self._spec = faultspec.FaultSpec()
        self._occurrences: dict[str, int] = {}
        self._watches: set[watches.LiveWatch] = set()
        self.configure(fault_spec)

    # -- runtime controls -------------------------------------------------------------------

    @property
    def spec(self) -> faultspec.FaultSpec:
        """The spec in force, its seed always set."""
        return self._spec

    @property
    def seed(self) -> int:
        assert self._spec.seed is not None
        return self._spec.seed

    def configure(self, fault_spec: faultspec.FaultSpec | str) -> faultspec.FaultSpec:
        """Replace the spec (text is parsed: SpecError) and start counting occurrences anew.
        A spec without a seed keeps the seed in force (the first gets a random one), so one
        run has one seed across its phases. Counts are kept. Returns the spec in force."""
        parsed = faultspec.parse(fault_spec) if isinstance(fault_spec, str) else fault_spec
        if parsed.seed is None:
            parsed = parsed.with_seed(
                self._spec.seed if self._spec.seed is not None else secrets.randbelow(2**31)
            )
        self._spec = parsed
        self._occurrences.clear()
        log.info("faults: %s", faultspec.render(parsed))
        return parsed

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No faults inside the block (e.g. quiescence before checking invariants)."""
        before, self.enabled = self.enabled, False
        try:
            yield
        finally:
            self.enabled = before

    def report(self) -> dict[str, Any]:
        """JSON-ready: the spec (canonical text, seed included), whether enabled, the counts."""
        return {
            "spec": faultspec.render(self._spec),
            "seed": self.seed,
            "enabled": self.enabled,
            **self.counts.snapshot(),
        }

    def watched(self) -> list[str]:
        """The plurals of the live watches (each once, sorted)."""
        return sorted({w.resource for w in self._watches if not w.transport.is_closing()})

    def drop_watches(self, resource: str | None = None) -> int:
        """Drop the connection of every live watch (of one plural); returns how many."""
        dropped = 0
        for watch in list(self._watches):
            if (resource is None or watch.resource == resource) and watches.drop(watch):
                self.counts.record(decide.DROP, f"watch {watch.resource}")
                dropped += 1
        return dropped

    def expire_watches(self, resource: str | None = None) -> int:
        """Expire the window of every watched resource (or one plural); returns how many."""
        if self.state is None:
            return 0
        keys = {
            w.skey for w in self._watches if w.skey is not None and not w.transport.is_closing()
        }
        expired = 0
        for skey in sorted(keys):
            if resource is None or skey[1] == resource:
                watches.expire(self.state, skey)
                self.counts.record(decide.EXPIRE, f"watch {skey[1]}")
                expired += 1
        return expired

    # -- the stage ----------------------------------------------------------------------------

    async def __call__(self, request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
        state = self.state = request[STATE]
        if request.path.rstrip("/") == control.PATH:
            return await control.handle(self, state, request)
        info: RequestInfo = request[INFO]
        if not info.is_resource:
            return await handler(request)
        if not self.enabled or not self._spec.rules:
            return await self._serve(state, request, info, handler)  # watches stay tracked
        need_user = any(rule.scope.needs_user for rule in self._spec.rules)
        facts = request_facts(state, request, info, need_user)
        occurrence = self._occurrences.get(facts.key, 0)
        self._occurrences[facts.key] = occurrence + 1
        self.counts.requests += 1
        decision = decide.decide(self._spec, facts, occurrence, self.seed)
        if decision.empty:
            return await self._serve(state, request, info, handler)
        target = f"{facts.verb} {facts.resource}"
        if decision.latency:
            self.counts.record(decide.LATENCY, target)
            await asyncio.sleep(decision.latency)
        if decision.error is not None and decision.error != "504":
            self.counts.record(decision.error, target)
            return error_response(decision.error, info, decision.retry_after)
        if decision.error == "504":
            served = await handler(request)
            if served.status >= 300:  # nothing landed: the real answer stands
                return served
            self.counts.record("504", target)
            return error_response("504", info, 0.0)
        return await self._serve(state, request, info, handler, decision)

    async def _serve(
        self,
        state: ApiState,
        request: web.BaseRequest,
        info: RequestInfo,
        handler: Handler,
        decision: decide.Decision = decide.NOTHING,
    ) -> web.StreamResponse:
        if info.verb != "watch" or request.transport is None:
            return await handler(request)
        rt = state.registry.get(info.group, info.version, info.resource)
        watch = watches.LiveWatch(
            request.transport, rt.storage_key if rt is not None else None, info.resource
        )
        self._watches.add(watch)
        timer = None
        if decision.watch is not None:
            timer = asyncio.get_running_loop().call_later(
                decision.watch_after, self._strike, decision.watch, watch
            )
        try:
            return await handler(request)
        finally:
            self._watches.discard(watch)
            if timer is not None:
                timer.cancel()

    def _strike(self, kind: str, watch: watches.LiveWatch) -> None:
        if not self.enabled:
            return
        target = f"watch {watch.resource}"
        if kind == decide.DROP:
            if watches.drop(watch):
                self.counts.record(decide.DROP, target)
        elif watch.skey is not None and self.state is not None:
            watches.expire(self.state, watch.skey)
            self.counts.record(decide.EXPIRE, target)


class WatchFault:
    """Watch faults at random moments, for a :class:`~.schedule.FaultScheduler`: drop every
    watch of one watched resource (``watch-drop``) or expire its window (``watch-expire``).
    Per-request rates only strike watches as they start; this strikes long-lived ones."""

    def __init__(self, faults: ApiFaults, kind: str = decide.DROP) -> None:
        if kind not in (decide.DROP, decide.EXPIRE):
            msg = f"kind must be {decide.DROP} or {decide.EXPIRE}, not {kind!r}"
            raise ValueError(msg)
        self._faults = faults
        self._kind = kind

    @property
    def kind(self) -> str:
        return self._kind

    def targets(self) -> list[str]:
        return self._faults.watched() if self._faults.enabled else []

    async def inject(self, target: str) -> Injected | None:
        if self._kind == decide.DROP:
            count = self._faults.drop_watches(target)
        else:
            count = self._faults.expire_watches(target)
        return Injected(f"{count} watch(es) of {target}") if count else None
