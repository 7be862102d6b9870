"""``apply(actions)``: the thin layer that turns planned actions into API calls.

Actions run in plan order, except that consecutive creates, deletes, finalizer removals and
status writes of different objects are sent together (:func:`batches`): a new domain's three
objects and its first status cost one round trip, not four, and none waits for another's
echo. Each action is carried out on the
*latest* copy of its object (the cache, or what the server returned to our last write), never
on the copy the plan read, and every write is a compare-and-swap on that copy's
resourceVersion. A 409 Conflict re-reads the object live,
records it, and asks for a re-plan (:class:`TemporaryError` with no delay): the plan is cheap
and pure, so re-planning from fresh state is the safe answer to any surprise. Creates and
deletes are idempotent (AlreadyExists of our own object and NotFound count as done). Every
response is recorded in the read-your-writes caches, which is how the first status write of a
new domain uses the object returned by the finalizer update (upstream reused the copy it read
before adding the finalizer, so that write always failed once with a conflict).

``Wait`` and ``Fail`` actions raise after the other actions ran (a wait re-queues the domain
only for its recheck: the informer event of what it waits for queues it sooner). Called by
:mod:`~computedomain.controller.reconciling`; calls the kube layer.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any, Protocol

from computedomain.api import names
from computedomain.api.errors import PermanentError, TemporaryError
from computedomain.controller import objects
from computedomain.controller.actions import (
    Action,
    AddFinalizer,
    ConfirmGone,
    Create,
    Delete,
    Emit,
    Fail,
    ForgetDomain,
    Kind,
    PruneClique,
    ReadLivePods,
    Ref,
    RemoveFinalizer,
    RemoveNodeLabels,
    Wait,
    WriteStatus,
)
from computedomain.controller.caches import Caches
from computedomain.controller.coalescing import Coalescer
from computedomain.controller.metrics import ControllerMetrics
from computedomain.controller.objects import JsonObject
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api
from computedomain.runtime import logs

_log = logs.get_logger(__name__)

RESOURCES = {
    Kind.COMPUTE_DOMAIN: resources.COMPUTE_DOMAINS,
    Kind.DAEMON_SET: resources.DAEMON_SETS,
    Kind.RESOURCE_CLAIM_TEMPLATE: resources.RESOURCE_CLAIM_TEMPLATES,
    Kind.CLIQUE: resources.COMPUTE_DOMAIN_CLIQUES,
}
NODE_LABEL_ATTEMPTS = 3


class Recorder(Protocol):
    """What apply needs from an event recorder (``kube.events.EventRecorder``)."""

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None: ...


class Reported(PermanentError):
    """A permanent problem the plan already reported (event and condition)."""


class Replan(TemporaryError):
    """The state moved under a write; plan again from the (refreshed) cache at once."""

    def __init__(self, message: str) -> None:
        super().__init__(message, delay=0.0)


# Writes that never depend on each other when they name different objects.
_INDEPENDENT = (Create, Delete, RemoveFinalizer, WriteStatus)
Independent = Create | Delete | RemoveFinalizer | WriteStatus


def _object(action: Independent) -> tuple[str, str, str]:
    """The object an action writes, by name (an old and a new incarnation are one object)."""
    return (action.ref.kind, action.ref.namespace, action.ref.name)


def batches(actions: Sequence[Action]) -> list[list[Action]]:
    """``actions`` in order, with each run of consecutive independent writes (creates,
    deletes, finalizer removals, status writes) on distinct objects in one batch, to be sent
    together: a new domain's three creates and its status, a teardown's deletes, then its
    finalizer removals. Every other action (a domain's finalizer, node labels, events) is a
    batch of its own, so the writes before it are done when it runs. Pure."""
    result: list[list[Action]] = []
    for action in actions:
        last = result[-1] if result else None
        if (
            last is not None
            and isinstance(action, _INDEPENDENT)
            and isinstance(last[0], _INDEPENDENT)
            and all(_object(a) != _object(action) for a in last)  # type: ignore[arg-type]
        ):
            last.append(action)
        else:
            result.append([action])
    return result


async def _together(writes: Iterable[Awaitable[None]]) -> None:
    """Run independent writes at once; all of them finish, then the first failure (in plan
    order) is raised, so a conflict on one never cancels a write already sent for another."""
    outcomes = await asyncio.gather(*writes, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


class Applier:
    """Executes actions against the API; holds no state of its own."""

    def __init__(
        self,
        api: Api,
        caches: Caches,
        *,
        recorder: Recorder | None,
        metrics: ControllerMetrics,
        coalescer: Coalescer,
    ) -> None:
        self.api = api
        self.caches = caches
        self.recorder = recorder
        self.metrics = metrics
        self.coalescer = coalescer

    async def apply(self, actions: Sequence[Action], domain: JsonObject | None) -> None:
        """Run ``actions`` in order. Not idempotent as a whole, but every action is.

        Raises TemporaryError (Wait, or Replan after a conflict), PermanentError (Fail, or an
        object the server rejects as invalid) or the kube layer's ApiError (retried with backoff).
        """
        verdict: Wait | Fail | None = None
        for batch in batches(actions):
            if len(batch) > 1:
                await _together(self._write(action) for action in batch)
                continue
            match action := batch[0]:
                case Wait() | Fail():
                    verdict = action
                case Emit(type=kind, reason=reason, message=message):
                    if self.recorder is not None and domain is not None:
                        self.recorder.event(dict(domain), kind, reason, message)
                case ForgetDomain(domain_uid=uid):
                    self.metrics.forget_domain(uid)
                    self.coalescer.forget(uid)
                case ReadLivePods() | ConfirmGone():
                    pass  # answered by the reconciler before apply
                case _:
                    await self._write(action)
        if isinstance(verdict, Wait):
            raise TemporaryError(verdict.message, delay=verdict.recheck)
        if isinstance(verdict, Fail):
            raise Reported(verdict.message)

    async def _write(self, action: Action) -> None:
        ref = getattr(action, "ref", None)
        try:
            match action:
                case AddFinalizer():
                    await self._add_finalizer(action.ref)
                case RemoveFinalizer():
                    await self._remove_finalizer(action.ref)
                case Create():
                    await self._create(action)
                case Delete():
                    await self._delete(action.ref)
                case WriteStatus():
                    await self._write_status(action)
                case PruneClique():
                    await self._prune(action)
                case RemoveNodeLabels():
                    await self._remove_node_labels(action.domain_uid)
        except errors.Invalid as exc:
            msg = f"{ref}: rejected by the API server: {exc.message}"
            raise PermanentError(msg) from exc
        except errors.AlreadyExists:
            raise
        except errors.Conflict as exc:
            if isinstance(ref, Ref):
                await self._refresh(ref)
            raise Replan(f"{ref} changed meanwhile; planning again") from exc

    async def _refresh(self, ref: Ref) -> None:
        """Re-read ``ref`` live into the caches (after a conflict)."""
        try:
            fresh = await self.api.get(RESOURCES[ref.kind], ref.name, ref.namespace)
        except errors.NotFound:
            self.caches.forget(ref)
        else:
            self.caches.record(ref.kind, fresh)

    async def _update(self, ref: Ref, body: dict[str, Any], *, status: bool = False) -> None:
        resource = RESOURCES[ref.kind]
        written = await (
            self.api.update_status(resource, body) if status else self.api.update(resource, body)
        )
        self.caches.record(ref.kind, written)

    async def _add_finalizer(self, ref: Ref) -> None:
        latest = self.caches.latest(ref)
        if latest is None or objects.has_finalizer(latest) or objects.terminating(latest):
            return
        body = copy.deepcopy(dict(latest))
        body["metadata"]["finalizers"] = [*objects.finalizers(latest), names.FINALIZER]
        try:
            await self._update(ref, body)
        except errors.NotFound:
            self.caches.forget(ref)

    async def _remove_finalizer(self, ref: Ref) -> None:
        latest = self.caches.latest(ref)
        if latest is None or not objects.has_finalizer(latest):
            return
        if not objects.terminating(latest):
            return  # only once it is being deleted (upstream's rule); the next pass sees it
        body = copy.deepcopy(dict(latest))
        body["metadata"]["finalizers"] = [
            f for f in objects.finalizers(latest) if f != names.FINALIZER
        ]
        try:
            await self._update(ref, body)
        except errors.NotFound:
            self.caches.forget(ref)

    async def _create(self, action: Create) -> None:
        ref = action.ref
        try:
            created = await self.api.create(RESOURCES[ref.kind], dict(action.body))
        except errors.AlreadyExists as exc:
            # Cache lag, or someone else's object with that name: read it and plan again.
            await self._refresh(ref)
            raise Replan(f"{ref} already exists; planning again") from exc
        self.caches.record(ref.kind, created)
        _log.info("created", object=str(ref))

    async def _delete(self, ref: Ref) -> None:
        try:
            answer = await self.api.delete(
                RESOURCES[ref.kind], ref.name, ref.namespace, uid=ref.uid or None
            )
        except errors.NotFound:
            self.caches.forget(ref)
            return
        except errors.Conflict:
            return  # the uid precondition failed: that name now holds another object
        if answer.get("kind") == "Status" or "metadata" not in answer:
            self.caches.forget(ref)
        else:
            self.caches.record(ref.kind, answer)
        _log.info("deleted", object=str(ref))

    async def _write_status(self, action: WriteStatus) -> None:
        ref = action.ref
        latest = self.caches.latest(ref)
        if latest is None or objects.uid(latest) != ref.uid or objects.terminating(latest):
            return
        if latest.get("status") != action.based_on:
            raise Replan(f"{ref}: status changed since it was planned; planning again")
        body = copy.deepcopy(dict(latest))
        body["status"] = copy.deepcopy(dict(action.status))
        try:
            await self._update(ref, body, status=True)
        except errors.NotFound:
            self.caches.forget(ref)
            return
        self.coalescer.wrote(ref.uid)
        self.metrics.observe_status(ref.uid, action.global_status)

    async def _prune(self, action: PruneClique) -> None:
        ref = action.ref
        latest = self.caches.latest(ref)
        if latest is None:
            return
        if objects.resource_version(latest) != action.resource_version:
            raise Replan(f"{ref} changed since it was planned; planning again")
        body = copy.deepcopy(dict(latest))
        body["daemons"] = [
            d for d in latest.get("daemons") or [] if d.get("nodeName") not in action.nodes
        ]
        if not body["daemons"]:
            del body["daemons"]
        try:
            await self._update(ref, body)
        except errors.NotFound:
            self.caches.forget(ref)
            return
        _log.info("pruned clique entries", clique=str(ref), nodes=",".join(sorted(action.nodes)))

    async def _remove_node_labels(self, uid: str) -> None:
        """Remove ``computeDomain=<uid>`` from every node that carries it (live LIST)."""
        selector = f"{names.COMPUTE_DOMAIN_LABEL} in ({uid})"
        found = await self.api.list(resources.NODES, label_selector=selector)
        for node in found.get("items") or []:
            await self._unlabel(node, uid)

    async def _unlabel(self, node: JsonObject, uid: str) -> None:
        name = objects.name(node)
        for _ in range(NODE_LABEL_ATTEMPTS):
            if objects.domain_uid(node) != uid:
                return
            body = copy.deepcopy(dict(node))
            del body["metadata"]["labels"][names.COMPUTE_DOMAIN_LABEL]
            try:
                await self.api.update(resources.NODES, body)
            except errors.NotFound:
                return
            except errors.Conflict:
                node = await self.api.get(resources.NODES, name)
                continue
            _log.info("removed node label", node=name, domain=uid)
            return
        msg = f"node {name} kept changing while removing its label of domain {uid}"
        raise TemporaryError(msg)
