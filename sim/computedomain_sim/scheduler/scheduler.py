"""The simulated kube-scheduler: binds pending pods to nodes and allocates their claims.

Started by :mod:`computedomain_sim.cluster`. Informers on nodes, pods, ResourceClaims,
ResourceSlices and DeviceClasses feed one work queue of pending pod keys (event-driven: a pod is
reconsidered when it, a slice or a class changes, when a claim it uses changes or any claim gives
devices back (:mod:`.requeue`), or a node in a way that can change where pods fit: not its
heartbeats). For each pod, :func:`decide`
(pure) runs the filters of :mod:`.placement` and the allocator of :mod:`.allocation` on every
node and picks the node with the fewest pods. The effects follow: claim allocations and
``reservedFor`` are written (status, with the delete-protection finalizer first), then the pod
is bound through ``pods/binding``. When nothing fits the pod gets ``PodScheduled=False``,
reason ``Unschedulable``, and a FailedScheduling event with kube-scheduler's message.

As in kube-scheduler, deciding is serial and binding is not. Several workers take pods off the
queue, but a decision has no ``await`` in it, so decisions never interleave; each one is
*assumed* before its writes start (the node counts the pod, and the allocations it is writing
count as taken: :attr:`Scheduler.in_flight`), and then the three writes of one pod overlap with
other pods' decisions and writes. One worker doing the writes too made a 36-node domain's
daemon pods wait in line about half a second each on a loaded machine. A pod whose claim
another pod's binding is allocating waits for that binding to end (which requeues it); two
bindings that only add to one claim's ``reservedFor`` meet in its compare-and-swap; a binding
that fails un-assumes its pod and is retried with backoff. Our own writes are read back
through a mutation cache, so a device is never allocated twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from computedomain.api import jsoncodec
from computedomain.kube import errors
from computedomain.kube.events import timestamp
from computedomain.kube.informer import FuncHandler, Informer
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.resources import (
    DEVICE_CLASSES,
    NODES,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
)
from computedomain.kube.store import index_by_node_name, object_key
from computedomain.kube.workqueue import RateLimitingQueue
from computedomain.runtime import logs
from computedomain_sim.controllers.resourceclaims import PROTECTION_FINALIZER
from computedomain_sim.controllers.running import ControlPlaneController, run_controller

from . import allocation, placement, requeue
from .allocated import AllocatedDevices

__all__ = ["Decision", "Scheduler", "decide"]

_log = logs.get_logger(__name__)
Obj = Mapping[str, Any]
SCHEDULER_NAME = "default-scheduler"
PENDING = "pending"  # the index of pending pods, and its one value
RESOURCECLAIM_NOT_AVAILABLE = "resourceclaim not available on the node"
# Pods whose writes (claim allocation, reservedFor, binding) may be in flight at once.
BINDING_WORKERS = 16


@attrs.frozen
class Decision:
    """Where a pod goes and what its claims get, or why it waits."""

    node: str | None
    allocations: Mapping[str, dict[str, Any]]  # claim key -> new status.allocation
    message: str


def decide(
    pod: Obj,
    nodes: Sequence[Obj],
    *,
    claims: Mapping[str, Obj],
    other_taken: frozenset[allocation.DeviceId],
    slices: Sequence[Obj],
    classes: Mapping[str, Obj],
    pods_per_node: Mapping[str, int],
) -> Decision:
    """Pick a node for ``pod``. Pure.

    ``claims``: claim key (ns/name) -> ResourceClaim for each claim the pod uses. Already
    allocated claims pin the pod to their nodes; unallocated ones are allocated per node, never
    with a device that a claim in ``claims`` already has, nor one of ``other_taken`` (the
    devices other claims hold: :class:`~.allocated.AllocatedDevices`). The node with the fewest
    pods wins (then the first name), which spreads replicas.
    """
    taken = allocation.allocated_devices(claims.values()) | other_taken
    reasons: list[str] = []
    fits: list[tuple[int, str, dict[str, dict[str, Any]]]] = []
    for node in nodes:
        name = str(node["metadata"]["name"])
        reason = placement.fit_reason(pod, node)
        planned: dict[str, dict[str, Any]] = {}
        if reason is None:
            reason = _claims_fit(
                node, claims=claims, slices=slices, classes=classes, taken=taken, planned=planned
            )
        if reason is None:
            fits.append((pods_per_node.get(name, 0), name, planned))
        else:
            reasons.append(reason)
    if not fits:
        return Decision(None, {}, placement.unschedulable_message(len(nodes), reasons))
    _, node_name, planned = min(fits, key=lambda f: (f[0], f[1]))
    return Decision(node_name, planned, "")


def _claims_fit(
    node: Obj,
    *,
    claims: Mapping[str, Obj],
    slices: Sequence[Obj],
    classes: Mapping[str, Obj],
    taken: frozenset[allocation.DeviceId],
    planned: dict[str, dict[str, Any]],
) -> str | None:
    busy = set(taken)
    for key, claim in sorted(claims.items()):
        current = (claim.get("status") or {}).get("allocation")
        if current:
            selector = current.get("nodeSelector")
            if selector and not placement.node_selector_matches(selector, node):
                return RESOURCECLAIM_NOT_AVAILABLE
            continue
        result = allocation.allocate(claim, node, slices, classes, frozenset(busy))
        if isinstance(result, allocation.Unallocatable):
            return result.reason
        planned[key] = result
        busy |= allocation.allocated_devices([{"status": {"allocation": result}}])
    return None


def pending(pod: Obj) -> bool:
    """Whether ``pod`` waits for this scheduler: not bound, ours, not being deleted. Pure."""
    spec = pod.get("spec") or {}
    return (
        not spec.get("nodeName")
        and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
    )


def pending_index(pod: dict[str, Any]) -> list[str]:
    """Index function: :data:`PENDING` for a pending pod. Pure."""
    return [PENDING] if pending(pod) else []


def slice_node(resource_slice: dict[str, Any]) -> list[str]:
    """Index function: a ResourceSlice's ``spec.nodeName`` ("" for slices of no node). Pure."""
    return [str((resource_slice.get("spec") or {}).get("nodeName") or "")]


class Scheduler(ControlPlaneController):
    """Informers, a queue of pending pods, several binding workers (module doc)."""

    def _wire(self) -> None:
        self.nodes = self.factory.informer(NODES)
        self.pods = self.factory.informer(
            PODS,
            indexers={
                "node": index_by_node_name,
                "claim": requeue.claims_of_pod,
                PENDING: pending_index,
            },
        )
        self.claims = self.factory.informer(RESOURCE_CLAIMS)
        self.slices = self.factory.informer(RESOURCE_SLICES, indexers={"node": slice_node})
        self.classes = self.factory.informer(DEVICE_CLASSES)
        self.claim_cache = MutationCache(self.claims.store, clock=self.clock)
        self.allocated = AllocatedDevices(self.claim_cache, clock=self.clock)
        # pod key -> (node, pod UID): decided, and bound if the binding succeeded, but not yet
        # seen bound through the watch
        self._assumed: dict[str, tuple[str, str]] = {}
        # claim key -> the allocation a binding is writing (taken until the write is cached)
        self.in_flight: dict[str, dict[str, Any]] = {}
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="scheduler", clock=self.clock)
        self.pods.add_handler(
            FuncHandler(add=self._pod_changed, update=lambda _o, n: self._pod_changed(n))
        )
        self.claims.add_handler(self.claim_cache)
        self.claims.add_handler(self.allocated)  # after the cache: it reads claims back from it
        self.claims.add_handler(
            FuncHandler(
                add=lambda c: self._claim_changed(None, c),
                update=self._claim_changed,
                delete=lambda c: self._claim_changed(c, None),
            )
        )
        for informer in (self.slices, self.classes):
            informer.add_handler(
                FuncHandler(
                    add=lambda _o: self._requeue_pending(),
                    update=lambda _o, _n: self._requeue_pending(),
                    delete=lambda _o: self._requeue_pending(),
                )
            )
        self.nodes.add_handler(
            FuncHandler(
                add=lambda _o: self._requeue_pending(),
                update=lambda o, n: (
                    self._requeue_pending() if placement.fit_view_changed(o, n) else None
                ),
                delete=lambda _o: self._requeue_pending(),
            )
        )

    @property
    def informers(self) -> tuple[Informer, ...]:
        return (self.nodes, self.pods, self.claims, self.slices, self.classes)

    async def run(self) -> None:
        """Run until cancelled."""
        await run_controller(
            self.factory, self.informers, self.queue, self.sync, workers=BINDING_WORKERS
        )

    def _pod_changed(self, pod: Obj) -> None:
        if pending(pod):
            self.queue.add(object_key(pod))

    def _requeue_pending(self) -> None:
        # Through the index: a node's label or readiness change requeues the waiting pods, and
        # a scan of every pod per node change was quadratic while a domain's nodes joined.
        for pod in self.pods.store.by_index(PENDING, PENDING):
            self.queue.add(object_key(pod))

    def _claim_changed(self, old: Obj | None, new: Obj | None) -> None:
        """Reconsider the pending pods a claim event can unblock (see :mod:`.requeue`)."""
        if requeue.releases_devices(old, new):
            self._requeue_pending()
            return
        claim = new if new is not None else old
        assert claim is not None
        for pod in self.pods.store.by_index("claim", object_key(claim)):
            self._pod_changed(pod)

    async def sync(self, key: str) -> None:
        """Schedule the pod ``key`` if it is still pending. Raises API errors (retried).

        Everything up to the assumption is free of ``await``, so concurrent calls (one per
        pod: the queue never hands a key to two workers) decide one after another; only the
        writes overlap (module doc).
        """
        pod = self.pods.store.get(key)
        if pod is None or not pending(pod):
            return
        if key in self._assumed and self._assumed[key][1] == pod["metadata"].get("uid"):
            # Bound by us, the watch has not said so yet (a claim's change requeued it): as
            # kube-scheduler skips assumed pods. Binding it again was a 409 per such requeue.
            return
        namespace = str(pod["metadata"].get("namespace", ""))
        claim_keys = _claim_keys(pod)
        if claim_keys is None:
            # kube-scheduler's DRA PreEnqueue: the pod waits for its claims to be created
            # without a scheduling attempt, so without a condition or an event (a write per
            # pod of every job); recording the claim in the pod's status requeues it.
            return
        if any(k in self.in_flight for k in claim_keys):
            return  # a shared claim another pod's binding is allocating: its end requeues this
        claims = {k: c for k in claim_keys if (c := self.claim_cache.get(k)) is not None}
        missing = [k for k in claim_keys if k not in claims]
        if missing and not set(missing) & _named_claim_keys(pod):
            return  # claims made from templates, not in our cache yet: their add requeues
        if missing:
            names = ", ".join(f'"{k.partition("/")[2]}"' for k in missing)
            await self._unschedulable(pod, f"resourceclaim {names} not found")
            return
        in_flight = [{"status": {"allocation": a}} for a in self.in_flight.values()]
        others = self.allocated.taken(exclude=claims) | allocation.allocated_devices(in_flight)
        classes = {str(c["metadata"]["name"]): c for c in self.classes.store.list()}
        decision = None
        pinned = placement.pinned_node(pod)
        node = self.nodes.store.get(pinned) if pinned else None
        if node is not None:
            counts = self._pods_per_node([pinned or ""])
            # kube-scheduler's NodeAffinity pre-filter: a pod bound to one node by name is
            # only evaluated there (with that node's slices and the cluster-wide ones).
            slices = [
                *self.slices.store.by_index("node", pinned or ""),
                *self.slices.store.by_index("node", ""),
            ]
            decision = decide(
                pod, [node], claims=claims, other_taken=others, slices=slices,
                classes=classes, pods_per_node=counts,
            )  # fmt: skip
        if decision is None or decision.node is None:  # the message names every node
            counts = self._pods_per_node()
            decision = decide(
                pod,
                sorted(self.nodes.store.list(), key=lambda n: str(n["metadata"]["name"])),
                claims=claims,
                other_taken=others,
                slices=self.slices.store.list(),
                classes=classes,
                pods_per_node=counts,
            )
        if decision.node is None:
            await self._unschedulable(pod, decision.message)
            return
        # Assume: from here on other decisions see this pod on its node and its devices taken.
        self._assumed[key] = (decision.node, str(pod["metadata"].get("uid", "")))
        self.in_flight.update(decision.allocations)
        bound = False
        try:
            for claim_key, claim in claims.items():
                await self._reserve(claim, pod, decision.allocations.get(claim_key))
            bound = await self._bind(pod, decision.node)
        finally:
            for claim_key in decision.allocations:
                self.in_flight.pop(claim_key, None)
            if not bound:
                self._assumed.pop(key, None)
            for claim_key in claims:  # pods that waited for these claims' writes
                for other in self.pods.store.by_index("claim", claim_key):
                    if object_key(other) != key:
                        self._pod_changed(other)
        if not bound:
            return
        self.events.event(
            dict(pod),
            "Normal",
            "Scheduled",
            f"Successfully assigned {namespace}/{pod['metadata']['name']} to {decision.node}",
        )

    async def _bind(self, pod: Obj, node: str) -> bool:
        """POST the pod's ``binding``; False when the pod was deleted or bound meanwhile (its
        claims are then released by the claim controller). Raises other API errors."""
        meta = pod["metadata"]
        try:
            await self.api.request(
                "POST",
                PODS.path(str(meta.get("namespace", "")), meta["name"], "binding"),
                body={
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": meta["name"], "uid": meta["uid"]},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                },
            )
        except (errors.NotFound, errors.Conflict):
            return False
        return True

    def _pods_per_node(self, only: Sequence[str] | None = None) -> dict[str, int]:
        """Pods on each node (of ``only``, else all), counting pods we bound that the informer
        has not shown bound yet (kube-scheduler's "assumed" pods), so that back-to-back pods
        spread."""
        counts = {}
        names = (
            only if only is not None else [n["metadata"]["name"] for n in self.nodes.store.list()]
        )
        for name in names:
            counts[str(name)] = len(self.pods.store.by_index("node", str(name)))
        for key, (node_name, uid) in list(self._assumed.items()):
            current = self.pods.store.get(key)
            if (
                current is None
                or (current.get("spec") or {}).get("nodeName")
                or current["metadata"].get("uid") != uid  # deleted and made again
            ):
                del self._assumed[key]
            else:
                counts[node_name] = counts.get(node_name, 0) + 1
        return counts

    async def _reserve(self, claim: Obj, pod: Obj, new_allocation: dict[str, Any] | None) -> None:
        """Write the allocation (if new) and add the pod to ``reservedFor``; CAS with re-read."""
        meta = claim["metadata"]
        body = jsoncodec.copy(dict(claim))
        if new_allocation is not None and PROTECTION_FINALIZER not in (
            meta.get("finalizers") or []
        ):
            body["metadata"]["finalizers"] = [*(meta.get("finalizers") or []), PROTECTION_FINALIZER]
            body = await self.api.update(RESOURCE_CLAIMS, body)
            self.allocated.mutation(body)
        status = body.setdefault("status", {})
        if new_allocation is not None:
            status["allocation"] = new_allocation
        reserved = status.setdefault("reservedFor", [])
        entry = {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        if entry not in reserved:
            reserved.append(entry)
        elif new_allocation is None:
            return
        written = await self.api.update_status(RESOURCE_CLAIMS, body)
        self.allocated.mutation(written)

    async def _unschedulable(self, pod: Obj, message: str) -> None:
        """Record why ``pod`` waits (once per distinct message) and emit FailedScheduling."""
        conditions = list((pod.get("status") or {}).get("conditions") or [])
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if (
            current
            and current.get("reason") == "Unschedulable"
            and current.get("message") == message
        ):
            return
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": timestamp(self.clock.time()),
        }
        conditions = [c for c in conditions if c.get("type") != "PodScheduled"] + [condition]
        try:
            await self.api.patch(
                PODS,
                pod["metadata"]["name"],
                {"status": {"conditions": conditions}},
                namespace=pod["metadata"].get("namespace"),
                subresource="status",
            )
        except errors.NotFound:
            return
        self.events.event(dict(pod), "Warning", "FailedScheduling", message)


def _named_claim_keys(pod: Obj) -> set[str]:
    """``ns/name`` of the claims the pod names itself (``resourceClaimName``). Pure."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    return {
        f"{namespace}/{entry['resourceClaimName']}"
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []
        if entry.get("resourceClaimName")
    }


def _claim_keys(pod: Obj) -> list[str] | None:
    """``ns/name`` of every claim the pod uses; None while a template's claim is not recorded."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    recorded = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    keys: list[str] = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        if entry.get("resourceClaimName"):
            keys.append(f"{namespace}/{entry['resourceClaimName']}")
        elif entry.get("resourceClaimTemplateName"):
            if entry.get("name") not in recorded:
                return None
            if recorded[entry.get("name")]:
                keys.append(f"{namespace}/{recorded[entry.get('name')]}")
    return keys
