"""Pod garbage collection: pods bound to nodes that no longer exist are force-deleted.

Started by :mod:`computedomain_sim.cluster`. (Pods whose owner is gone are removed by the API
server's owner garbage collector, not here.) Event-driven: a deleted node enqueues the pods on
it; a pod bound to an unknown node is checked when it changes. A pod is only collected once the
node informer has synced, so a node that merely has not been seen yet is not taken for gone.
"""

from __future__ import annotations

from typing import Any

from computedomain.kube import errors
from computedomain.kube.informer import FuncHandler
from computedomain.kube.resources import NODES, PODS
from computedomain.kube.store import index_by_node_name, object_key
from computedomain.kube.workqueue import RateLimitingQueue

from .running import ControlPlaneController, run_controller

__all__ = ["PodGarbageCollector"]


class PodGarbageCollector(ControlPlaneController):
    """Force-deletes pods of deleted nodes."""

    def _wire(self) -> None:
        self.nodes = self.factory.informer(NODES)
        self.pods = self.factory.informer(PODS, indexers={"node": index_by_node_name})
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="podgc", clock=self.clock)
        self.pods.add_handler(
            FuncHandler(
                add=lambda p: self.queue.add(object_key(p)),
                update=lambda _o, n: self.queue.add(object_key(n)),
            )
        )
        self.nodes.add_handler(FuncHandler(delete=self._node_gone))

    def _node_gone(self, node: dict[str, Any]) -> None:
        name = str((node.get("metadata") or {}).get("name", ""))
        for pod in self.pods.store.by_index("node", name):
            self.queue.add(object_key(pod))

    async def run(self) -> None:
        """Run until cancelled."""
        await run_controller(self.factory, (self.nodes, self.pods), self.queue, self.sync)

    async def sync(self, key: str) -> None:
        """Delete the pod ``key`` with grace 0 if its node is gone. Raises API errors."""
        pod = self.pods.store.get(key)
        if pod is None:
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or self.nodes.store.get(str(node)) is not None:
            return
        try:
            await self.api.delete(
                PODS,
                pod["metadata"]["name"],
                pod["metadata"]["namespace"],
                uid=pod["metadata"]["uid"],
                grace_period_seconds=0,
            )
        except (errors.NotFound, errors.Conflict):
            return
        self.events.event(pod, "Normal", "PodGCDeleted", f"node {node} no longer exists")
