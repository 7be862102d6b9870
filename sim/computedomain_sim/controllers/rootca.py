"""The root CA publisher: a ConfigMap ``kube-root-ca.crt`` in every namespace holding the API
server's CA bundle under ``ca.crt``, as kube-controller-manager's publisher keeps it. In-cluster
clients read the CA from it (projected service account volumes name it), and a namespace's
ConfigMaps list the same on both control planes (docs/conformance.md).

Started by :mod:`computedomain_sim.cluster` for the embedded control plane when it serves TLS.
A namespace that appears enqueues itself; the ConfigMap is created when missing and its data
and description restored when someone changed them. Terminating namespaces are left alone.
"""

from __future__ import annotations

from typing import Any

from computedomain.kube import errors
from computedomain.kube.events import EventRecorder
from computedomain.kube.informer import FuncHandler
from computedomain.kube.informerfactory import InformerFactory
from computedomain.kube.resources import CONFIG_MAPS, NAMESPACES
from computedomain.kube.rest import Api
from computedomain.kube.workqueue import RateLimitingQueue
from computedomain.runtime.clock import Clock

from .running import ControlPlaneController, run_controller

__all__ = ["NAME", "RootCaPublisher"]

NAME = "kube-root-ca.crt"
MANAGER = "kube-controller-manager"  # whose the ConfigMap's fields are, as on a real cluster
DESCRIPTION_KEY = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


class RootCaPublisher(ControlPlaneController):
    """Keeps ``kube-root-ca.crt`` (``ca.crt``: ``ca_pem``) in every namespace."""

    def __init__(
        self,
        api: Api,
        *,
        ca_pem: str,
        events: EventRecorder,
        clock: Clock | None = None,
        informers: InformerFactory | None = None,
    ) -> None:
        self.ca_pem = ca_pem
        super().__init__(api, events=events, clock=clock, informers=informers)

    def _wire(self) -> None:
        self.namespaces = self.factory.informer(NAMESPACES)
        self.configmaps = self.factory.informer(CONFIG_MAPS, field_selector=f"metadata.name={NAME}")
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="root-ca", clock=self.clock)
        self.namespaces.add_handler(
            FuncHandler(
                add=lambda n: self.queue.add(n["metadata"]["name"]),
                update=lambda _o, n: self.queue.add(n["metadata"]["name"]),
            )
        )
        self.configmaps.add_handler(
            FuncHandler(
                update=lambda _o, c: self.queue.add(c["metadata"]["namespace"]),
                delete=lambda c: self.queue.add(c["metadata"]["namespace"]),
            )
        )

    async def run(self) -> None:
        """Run until cancelled."""
        await run_controller(
            self.factory, (self.namespaces, self.configmaps), self.queue, self.sync
        )

    def wanted(self, namespace: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": NAME,
                "namespace": namespace,
                "annotations": {DESCRIPTION_KEY: DESCRIPTION},
            },
            "data": {"ca.crt": self.ca_pem},
        }

    async def sync(self, namespace: str) -> None:
        """Create or restore the namespace's ConfigMap. Raises API errors other than those of
        a namespace that is gone or going."""
        ns = self.namespaces.store.get(namespace)
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return
        current = self.configmaps.store.get(f"{namespace}/{NAME}")
        try:
            if current is None:
                await self.api.create(CONFIG_MAPS, self.wanted(namespace), field_manager=MANAGER)
                return
            annotations = current["metadata"].get("annotations") or {}
            if current.get("data") == {"ca.crt": self.ca_pem} and (
                annotations.get(DESCRIPTION_KEY) == DESCRIPTION
            ):
                return
            body = {**current, "data": {"ca.crt": self.ca_pem}}
            body["metadata"] = {
                **current["metadata"],
                "annotations": {**annotations, DESCRIPTION_KEY: DESCRIPTION},
            }
            await self.api.update(CONFIG_MAPS, body, field_manager=MANAGER)
        except (errors.AlreadyExists, errors.NotFound, errors.Forbidden):
            return  # made meanwhile (its event comes), or the namespace is gone or terminating
