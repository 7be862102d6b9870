"""The simulated Deployment controller: keeps :func:`.deployment.plan`'s replicas running.

Started by :mod:`computedomain_sim.cluster` (it runs the controller Deployment of
``deployments/``). Event-driven on Deployments and their pods; expectations and slow-start
creates (:mod:`.slowstart`) as in :mod:`.daemonset_controller`.
"""

from __future__ import annotations

from typing import Any

from computedomain.kube import errors
from computedomain.kube.informer import EnqueueHandler, FuncHandler
from computedomain.kube.resources import DEPLOYMENTS, PODS
from computedomain.kube.store import index_by_owner_uid
from computedomain.kube.workqueue import RateLimitingQueue

from . import deployment, names, slowstart
from .daemonset_controller import owner_key
from .expectations import Expectations
from .running import ControlPlaneController, run_controller

__all__ = ["DeploymentController"]


class DeploymentController(ControlPlaneController):
    """``spec.replicas`` pods of the template for every Deployment."""

    def _wire(self) -> None:
        self.deployments = self.factory.informer(DEPLOYMENTS)
        self.pods = self.factory.informer(PODS, indexers={"owner": index_by_owner_uid})
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="deployment", clock=self.clock)
        self.expectations = Expectations(clock=self.clock)
        self.deployments.add_handler(EnqueueHandler(self.queue))
        self.pods.add_handler(
            FuncHandler(
                add=self.expectations.observed,
                update=lambda _o, n: self.expectations.observed(n),
                delete=lambda o: self.expectations.observed(o, gone=True),
            )
        )
        self.pods.add_handler(EnqueueHandler(self.queue, key=owner_key("Deployment")))

    async def run(self) -> None:
        """Run until cancelled."""
        await run_controller(self.factory, (self.deployments, self.pods), self.queue, self.sync)

    async def _create_pod(self, pod: dict[str, Any], namespace: str) -> None:
        try:
            created = await self.api.create(PODS, pod, namespace)
        except errors.AlreadyExists:
            return  # a name collision: the next sync picks another suffix
        self.expectations.created(created)

    async def sync(self, key: str) -> None:
        """Reconcile one Deployment. Raises API errors (the queue retries)."""
        dep = self.deployments.store.get(key)
        if dep is None:
            return
        uid = str(dep["metadata"]["uid"])
        owned = [
            p
            for p in self.pods.store.by_index("owner", uid)
            if any(
                r.get("uid") == uid and r.get("controller")
                for r in p["metadata"].get("ownerReferences") or []
            )
        ]
        pods = self.expectations.adjust(owned, uid)
        wanted = int((dep.get("spec") or {}).get("replicas", 1))
        plan = deployment.plan(dep, pods, [names.random_suffix() for _ in range(wanted)])
        namespace = str(dep["metadata"]["namespace"])
        await slowstart.create_all(
            [c.pod for c in plan.creates], lambda pod: self._create_pod(pod, namespace)
        )
        for delete in plan.deletes:
            self.expectations.deleted(f"{delete.namespace or namespace}/{delete.name}")
            try:
                await self.api.delete(
                    PODS, delete.name, delete.namespace or namespace, uid=delete.uid
                )
            except (errors.NotFound, errors.Conflict):
                continue
        current = {k: v for k, v in (dep.get("status") or {}).items() if k in plan.status}
        if current != plan.status:
            try:
                await self.api.patch(
                    DEPLOYMENTS,
                    dep["metadata"]["name"],
                    {"status": plan.status},
                    namespace=namespace,
                    subresource="status",
                )
            except errors.NotFound:
                return
