"""The simulated Job controller: runs :func:`.job.plan`'s pods to completion and writes the Job's
status, so that ``kubectl create job`` and ``kubectl wait --for=condition=complete`` behave on
the embedded cluster as on a real one.

Started by :mod:`computedomain_sim.cluster` beside the Deployment controller. Event-driven on
Jobs and their pods; expectations and slow-start creates as in :mod:`.daemonset_controller`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from computedomain.kube import errors
from computedomain.kube.informer import EnqueueHandler, FuncHandler
from computedomain.kube.resources import PODS, Resource
from computedomain.kube.store import index_by_owner_uid
from computedomain.kube.workqueue import RateLimitingQueue

from . import job, names, slowstart
from .daemonset_controller import owner_key
from .expectations import Expectations
from .running import ControlPlaneController, run_controller

__all__ = ["JOBS", "JobController"]

JOBS: Final = Resource("batch", "v1", "jobs", "Job", namespaced=True)


class JobController(ControlPlaneController):
    """Pods for every Job until it completes or fails."""

    def _wire(self) -> None:
        self.jobs = self.factory.informer(JOBS)
        self.pods = self.factory.informer(PODS, indexers={"owner": index_by_owner_uid})
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="job", clock=self.clock)
        self.expectations = Expectations(clock=self.clock)
        self.jobs.add_handler(EnqueueHandler(self.queue))
        self.pods.add_handler(
            FuncHandler(
                add=self.expectations.observed,
                update=lambda _o, n: self.expectations.observed(n),
                delete=lambda o: self.expectations.observed(o, gone=True),
            )
        )
        self.pods.add_handler(EnqueueHandler(self.queue, key=owner_key("Job")))

    async def run(self) -> None:
        """Run until cancelled."""
        await run_controller(self.factory, (self.jobs, self.pods), self.queue, self.sync)

    async def _create_pod(self, pod: dict[str, Any], namespace: str) -> None:
        try:
            created = await self.api.create(PODS, pod, namespace)
        except errors.AlreadyExists:
            return  # a name collision: the next sync picks another suffix
        self.expectations.created(created)

    def _now(self) -> str:
        moment = dt.datetime.fromtimestamp(self.clock.time(), dt.UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    async def sync(self, key: str) -> None:
        """Reconcile one Job. Raises API errors (the queue retries)."""
        obj = self.jobs.store.get(key)
        if obj is None:
            return
        uid = str(obj["metadata"]["uid"])
        owned = [
            p
            for p in self.pods.store.by_index("owner", uid)
            if any(
                r.get("uid") == uid and r.get("controller")
                for r in p["metadata"].get("ownerReferences") or []
            )
        ]
        pods = self.expectations.adjust(owned, uid)
        parallelism = int((obj.get("spec") or {}).get("parallelism", 1))
        plan = job.plan(obj, pods, [names.random_suffix() for _ in range(parallelism)], self._now())
        namespace = str(obj["metadata"]["namespace"])
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
        if plan.status != (obj.get("status") or {}):
            try:
                await self.api.patch(
                    JOBS,
                    obj["metadata"]["name"],
                    {"status": plan.status},
                    namespace=namespace,
                    subresource="status",
                )
            except errors.NotFound:
                return
