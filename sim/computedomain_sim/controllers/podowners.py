"""What the controllers of workloads that own their pods directly share (ReplicaSet, Job,
StatefulSet): informers on the workload and its pods, a queue keyed by the workload, creation
expectations, and one sync that asks the workload's pure plan what to create, delete and
report, then does it.

A subclass names its resource and kind and implements :meth:`PodOwnerController.decide`; the
DaemonSet controller, which places pods by node, has its own loop (:mod:`.daemonset_controller`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from computedomain.kube import errors
from computedomain.kube.informer import EnqueueHandler, FuncHandler
from computedomain.kube.resources import PODS, Resource
from computedomain.kube.store import index_by_owner_uid
from computedomain.kube.workqueue import RateLimitingQueue

from . import slowstart
from .daemonset import CreatePod, DeletePod
from .daemonset_controller import owner_key
from .expectations import Expectations
from .running import ControlPlaneController, run_controller

__all__ = ["Decision", "PodOwnerController"]

Obj = Mapping[str, Any]


@attrs.frozen
class Decision:
    """A workload plan's answer: the pods to create and delete, the status to write, and
    after how many seconds to sync again even if nothing changes (None: only on changes)."""

    creates: Sequence[CreatePod]
    deletes: Sequence[DeletePod]
    status: dict[str, Any]
    recheck: float | None = None


class PodOwnerController(ControlPlaneController):
    """Keeps the pods of every object of :attr:`resource` as :meth:`decide` says."""

    resource: Resource

    def _wire(self) -> None:
        self.owners = self.factory.informer(self.resource)
        self.pods = self.factory.informer(PODS, indexers={"owner": index_by_owner_uid})
        name = self.resource.kind.lower()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name=name, clock=self.clock)
        self.expectations = Expectations(clock=self.clock)
        self.owners.add_handler(EnqueueHandler(self.queue))
        self.pods.add_handler(
            FuncHandler(
                add=self.expectations.observed,
                update=lambda _o, n: self.expectations.observed(n),
                delete=lambda o: self.expectations.observed(o, gone=True),
            )
        )
        self.pods.add_handler(EnqueueHandler(self.queue, key=owner_key(self.resource.kind)))

    def decide(self, owner: Obj, pods: Sequence[Obj]) -> Decision:
        """What to do for ``owner`` given the pods it controls (expected ones included)."""
        raise NotImplementedError

    async def run(self) -> None:
        """Run until cancelled."""
        await run_controller(self.factory, (self.owners, self.pods), self.queue, self.sync)

    async def _create_pod(self, pod: dict[str, Any], namespace: str) -> None:
        try:
            created = await self.api.create(PODS, pod, namespace)
        except errors.AlreadyExists:
            return  # a name collision: the next sync decides again
        self.expectations.created(created)

    async def sync(self, key: str) -> None:
        """Reconcile one object. Raises API errors (the queue retries)."""
        owner = self.owners.store.get(key)
        if owner is None:
            return
        uid = str(owner["metadata"]["uid"])
        owned = [
            p
            for p in self.pods.store.by_index("owner", uid)
            if any(
                r.get("uid") == uid and r.get("controller")
                for r in p["metadata"].get("ownerReferences") or []
            )
        ]
        decision = self.decide(owner, self.expectations.adjust(owned, uid))
        if decision.recheck is not None:
            self.queue.add_after(key, decision.recheck)
        namespace = str(owner["metadata"]["namespace"])
        await slowstart.create_all(
            [c.pod for c in decision.creates], lambda pod: self._create_pod(pod, namespace)
        )
        for delete in decision.deletes:
            self.expectations.deleted(f"{delete.namespace or namespace}/{delete.name}")
            try:
                await self.api.delete(
                    PODS, delete.name, delete.namespace or namespace, uid=delete.uid
                )
            except (errors.NotFound, errors.Conflict):
                continue
        current = owner.get("status") or {}
        if any(current.get(k) != v for k, v in decision.status.items()):
            try:
                await self.api.patch(
                    self.resource,
                    owner["metadata"]["name"],
                    {"status": decision.status},
                    namespace=namespace,
                    subresource="status",
                )
            except errors.NotFound:
                return
