"""The simulated Deployment controller: rolls every Deployment out through its ReplicaSets as
:func:`.deployment.plan` says (create the new one, scale new and old ones, delete history
beyond ``revisionHistoryLimit``) and writes the Deployment's status; the ReplicaSet
controller (:mod:`.replicaset_controller`) makes the pods.

Started by :mod:`computedomain_sim.cluster` (it runs the controller Deployment of
``deployments/``). A Deployment is synced when it changes, when one of its ReplicaSets changes,
when a pod of one of them goes away (Recreate waits for the old pods), and at its progress
deadline. ReplicaSets are written with their resourceVersion (a stale cache is a conflict,
retried); a name taken by another object bumps ``status.collisionCount``, as in kube.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from computedomain.kube import errors
from computedomain.kube.informer import EnqueueHandler, FuncHandler
from computedomain.kube.resources import DEPLOYMENTS, PODS
from computedomain.kube.rest import PatchType
from computedomain.kube.store import index_by_owner_uid
from computedomain.kube.workqueue import RateLimitingQueue

from . import deployment
from .daemonset_controller import owner_key
from .replicaset_controller import REPLICA_SETS
from .running import ControlPlaneController, run_controller

__all__ = ["DeploymentController"]

Obj = Mapping[str, Any]


class DeploymentController(ControlPlaneController):
    """Rollouts of every Deployment through its ReplicaSets."""

    def _wire(self) -> None:
        self.deployments = self.factory.informer(DEPLOYMENTS)
        self.replica_sets = self.factory.informer(
            REPLICA_SETS, indexers={"owner": index_by_owner_uid}
        )
        self.pods = self.factory.informer(PODS, indexers={"owner": index_by_owner_uid})
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="deployment", clock=self.clock)
        self.deployments.add_handler(EnqueueHandler(self.queue))
        self.replica_sets.add_handler(EnqueueHandler(self.queue, key=owner_key("Deployment")))
        self.pods.add_handler(FuncHandler(delete=self._pod_gone))

    def _pod_gone(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        for ref in meta.get("ownerReferences") or ():
            if ref.get("controller") and ref.get("kind") == "ReplicaSet":
                rs = self.replica_sets.store.get(f"{meta.get('namespace', '')}/{ref.get('name')}")
                key = owner_key("Deployment")(rs) if rs is not None else None
                if key is not None:
                    self.queue.add(key)

    async def run(self) -> None:
        """Run until cancelled."""
        await run_controller(
            self.factory, (self.deployments, self.replica_sets, self.pods), self.queue, self.sync
        )

    def _old_pods_running(self, owned: list[dict[str, Any]], template: Any) -> bool:
        for rs in owned:
            if deployment.equal_ignore_hash((rs.get("spec") or {}).get("template"), template):
                continue
            for pod in self.pods.store.by_index("owner", str(rs["metadata"]["uid"])):
                if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    return True
        return False

    async def sync(self, key: str) -> None:
        """Reconcile one Deployment. Raises API errors (the queue retries)."""
        obj = self.deployments.store.get(key)
        if obj is None:
            return
        meta = obj["metadata"]
        namespace, name = str(meta["namespace"]), str(meta["name"])
        owned = list(self.replica_sets.store.by_index("owner", str(meta["uid"])))
        template = (obj.get("spec") or {}).get("template")
        plan = deployment.plan(
            obj,
            owned,
            now=self.clock.time(),
            old_pods_running=self._old_pods_running(owned, template),
        )
        if plan.recheck is not None:
            self.queue.add_after(key, plan.recheck)
        for body in plan.creates:
            if not await self._create(obj, body):
                return
        for body in plan.updates:
            await self.api.update(REPLICA_SETS, body)
        for rs_name, uid in plan.deletes:
            try:
                await self.api.delete(REPLICA_SETS, rs_name, namespace, uid=uid)
            except (errors.NotFound, errors.Conflict):
                continue
        for reason, message in plan.events:
            self.events.event(obj, "Normal", reason, message)
        try:
            if plan.revision is not None:
                await self.api.patch(
                    DEPLOYMENTS,
                    name,
                    {"metadata": {"annotations": {deployment.REVISION: plan.revision}}},
                    namespace=namespace,
                )
            current = obj.get("status") or {}
            if any(current.get(k) != v for k, v in plan.status.items()):
                await self.api.patch(
                    DEPLOYMENTS,
                    name,
                    {"status": plan.status},
                    namespace=namespace,
                    subresource="status",
                    patch_type=PatchType.MERGE,
                )
        except errors.NotFound:
            return

    async def _create(self, owner: Obj, body: dict[str, Any]) -> bool:
        """Create a ReplicaSet; False when its name is taken by one that is not this
        Deployment's for this template (``status.collisionCount`` is bumped: the next sync
        hashes again)."""
        meta = body["metadata"]
        try:
            await self.api.create(REPLICA_SETS, body, str(meta["namespace"]))
        except errors.AlreadyExists:
            existing = await self.api.get(REPLICA_SETS, str(meta["name"]), str(meta["namespace"]))
            ours = deployment.controlled_by(existing, str(owner["metadata"]["uid"]))
            template = (owner.get("spec") or {}).get("template")
            if ours and deployment.equal_ignore_hash(existing["spec"].get("template"), template):
                return True
            count = int((owner.get("status") or {}).get("collisionCount") or 0) + 1
            await self.api.patch(
                DEPLOYMENTS,
                str(owner["metadata"]["name"]),
                {"status": {"collisionCount": count}},
                namespace=str(owner["metadata"]["namespace"]),
                subresource="status",
            )
            return False
        return True
