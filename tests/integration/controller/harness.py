"""A test bench for the controller: our Api on the embedded server, and the tester's hands.

Tests play the daemons and kubelets themselves: they write daemon pods (and their status),
clique entries, daemon-written ``status.nodes`` and node labels through the API, and watch the
controller's answers. :class:`Bench` runs a :class:`Controller` in-process with an injected
:class:`Api` (and an event recorder), and offers ``wait`` with a deadline instead of sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import attrs

from computedomain.api import featuregates, names
from computedomain.controller.config import ControllerConfig, DaemonSettings
from computedomain.controller.controller import Controller
from computedomain.controller.metrics import ControllerMetrics
from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.events import EventRecorder
from computedomain.kube.rest import Api
from computedomain_sim.apiserver import testing
from tests.support.polling import eventually

IMAGE = "registry.example/computedomain:test"
CLIQUE = "8ef8e7a4-5d8f-4d63-9b8f-1b7e4ac8e6f1.1"
DEADLINE = 60.0  # only reached when a test fails; generous for loaded CI machines
T = TypeVar("T")
_ips = itertools.count(1)


def next_ip() -> str:
    n = next(_ips)
    return f"10.7.{n // 250}.{n % 250 + 1}"


async def admin_api(server: testing.RunningServer, **kwargs: Any) -> Api:
    return await connect(ClientConfig(url=server.url, token=server.token, qps=0, **kwargs))


@attrs.define
class Bench:
    """One test's namespaces, API handle and (optionally) running controller."""

    api: Api
    driver: str
    user: str
    controller: Controller | None = None
    recorder: EventRecorder | None = None
    tasks: list[asyncio.Task[None]] = attrs.Factory(list)

    # -- controller --------------------------------------------------------------------------

    def config(self, *, gates: str = "", **kwargs: Any) -> ControllerConfig:
        features = featuregates.parse(gates)
        daemon = DaemonSettings(
            namespace=self.driver,
            image=IMAGE,
            log_verbosity=4,
            feature_gates=features.render(),
        )
        kwargs.setdefault("workers", 2)
        return ControllerConfig(daemon=daemon, features=features, **kwargs)

    async def start(self, config: ControllerConfig | None = None) -> Controller:
        self.recorder = EventRecorder(self.api, component="compute-domain-controller")
        controller = Controller(
            self.api, config or self.config(), metrics=ControllerMetrics(), recorder=self.recorder
        )
        self.controller = controller
        self.tasks.append(asyncio.create_task(controller.run()))
        self.tasks.append(asyncio.create_task(self.recorder.run()))

        async def synced() -> bool:
            for task in self.tasks:
                if task.done():
                    task.result()  # surface a crash
            return controller.synced

        await eventually(synced, what="the controller to sync")
        return controller

    async def stop(self) -> None:
        """Cancel the controller and recorder; each must end within the deadline."""
        tasks, self.tasks = self.tasks, []
        self.controller = None
        for task in reversed(tasks):
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=DEADLINE)
            if not done:
                msg = f"task {task.get_name()} did not stop within {DEADLINE}s of its cancellation"
                raise AssertionError(msg)

    # -- domains -----------------------------------------------------------------------------

    async def create_domain(
        self, name: str = "cd", *, num_nodes: int | None = None, template: str | None = None
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "channel": {"resourceClaimTemplate": {"name": template or f"{name}-channel"}}
        }
        if num_nodes is not None:
            spec["numNodes"] = num_nodes
        body = {
            "apiVersion": names.GROUP_VERSION,
            "kind": names.COMPUTE_DOMAIN_KIND,
            "metadata": {"name": name, "namespace": self.user},
            "spec": spec,
        }
        return await self.api.create(resources.COMPUTE_DOMAINS, body)

    async def domain(self, name: str = "cd") -> dict[str, Any]:
        return await self.api.get(resources.COMPUTE_DOMAINS, name, self.user)

    async def wait_status(
        self, name: str, check: Callable[[dict[str, Any]], bool], what: str
    ) -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            domain = await self.domain(name)
            status = domain.get("status")
            return domain if status is not None and check(status) else None

        return await eventually(probe, what=f"{name}: {what}")

    async def gone(self, resource: resources.Resource, name: str, namespace: str | None) -> bool:
        try:
            await self.api.get(resource, name, namespace)
        except errors.NotFound:
            return True
        return False

    async def delete_domain_and_wait(self, name: str = "cd") -> None:
        with contextlib.suppress(errors.NotFound):
            await self.api.delete(resources.COMPUTE_DOMAINS, name, self.user)

        async def deleted() -> bool:
            return await self.gone(resources.COMPUTE_DOMAINS, name, self.user)

        await eventually(deleted, what=f"domain {name} to be deleted")

    # -- the tester plays kubelets and daemons -----------------------------------------------

    async def add_node(self, name: str, uid: str | None = None) -> dict[str, Any]:
        labels = {names.COMPUTE_DOMAIN_LABEL: uid} if uid else {}
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
        try:
            return await self.api.create(resources.NODES, body)
        except errors.AlreadyExists:
            node = await self.api.get(resources.NODES, name)
            node["metadata"]["labels"] = {**(node["metadata"].get("labels") or {}), **labels}
            return await self.api.update(resources.NODES, node)

    async def daemon_pod(
        self,
        uid: str,
        node: str,
        *,
        clique: str | None = CLIQUE,
        ip: str | None = None,
        ready: bool = True,
        phase: str = "Running",
        name: str | None = None,
    ) -> dict[str, Any]:
        """A daemon pod on ``node`` with its status written (as the kubelet would)."""
        labels = {names.COMPUTE_DOMAIN_LABEL: uid}
        if clique is not None:
            labels[names.CLIQUE_LABEL] = clique
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name or f"daemon-{node}-{uid[:8]}",
                "namespace": self.driver,
                "labels": labels,
            },
            "spec": {
                "nodeName": node,
                "containers": [{"name": "compute-domain-daemon", "image": IMAGE}],
            },
        }
        pod = await self.api.create(resources.PODS, body)
        return await self.set_pod_status(pod, ip=ip or next_ip(), ready=ready, phase=phase)

    async def delete_pod(self, name: str) -> None:
        """Delete a daemon pod for good: the request, then the kubelet's confirmation."""
        with contextlib.suppress(errors.NotFound):
            await self.api.delete(resources.PODS, name, self.driver)
        with contextlib.suppress(errors.NotFound):
            await self.api.delete(resources.PODS, name, self.driver, grace_period_seconds=0)

    async def set_pod_status(
        self, pod: dict[str, Any], *, ip: str, ready: bool, phase: str = "Running"
    ) -> dict[str, Any]:
        for _ in range(5):
            body = copy.deepcopy(pod)
            body["status"] = {
                "phase": phase,
                "podIP": ip,
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            }
            try:
                return await self.api.update_status(resources.PODS, body)
            except errors.Conflict:
                pod = await self.api.get(resources.PODS, pod["metadata"]["name"], self.driver)
        msg = "pod status kept conflicting"
        raise AssertionError(msg)

    async def set_clique(self, uid: str, daemons: list[dict[str, Any]]) -> dict[str, Any]:
        """Create or replace the clique of ``uid`` with these entries (as daemons would)."""
        name = names.clique_object_name(uid, CLIQUE)
        for _ in range(5):
            try:
                current = await self.api.get(resources.COMPUTE_DOMAIN_CLIQUES, name, self.driver)
            except errors.NotFound:
                body = {
                    "apiVersion": names.GROUP_VERSION,
                    "kind": names.CLIQUE_KIND,
                    "metadata": {
                        "name": name,
                        "namespace": self.driver,
                        "labels": {
                            names.COMPUTE_DOMAIN_LABEL: uid,
                            names.CLIQUE_LABEL: CLIQUE,
                        },
                    },
                    "daemons": daemons,
                }
                with contextlib.suppress(errors.AlreadyExists):
                    return await self.api.create(resources.COMPUTE_DOMAIN_CLIQUES, body)
                continue
            current["daemons"] = daemons
            try:
                return await self.api.update(resources.COMPUTE_DOMAIN_CLIQUES, current)
            except errors.Conflict:
                continue
        msg = "clique kept conflicting"
        raise AssertionError(msg)

    async def events(self, name: str) -> list[dict[str, Any]]:
        if self.recorder is not None:
            await asyncio.wait_for(self.recorder.flush(), DEADLINE)
        found = await self.api.list(resources.EVENTS, self.user)
        return [e for e in found.get("items") or [] if e["involvedObject"].get("name") == name]


def entry(node: str, ip: str, *, index: int = 0, status: str | None = "Ready") -> dict[str, Any]:
    found: dict[str, Any] = {"nodeName": node, "ipAddress": ip, "cliqueID": CLIQUE, "index": index}
    if status is not None:
        found["status"] = status
    return found


@contextlib.asynccontextmanager
async def bench(server: testing.RunningServer) -> AsyncIterator[Bench]:
    """Fresh namespaces and an Api; on exit, stop the controller and remove what is left."""
    api = await admin_api(server)
    driver, user = testing.unique_name("drv"), testing.unique_name("usr")
    for namespace in (driver, user):
        await api.create(resources.NAMESPACES, {"metadata": {"name": namespace}})
    result = Bench(api, driver, user)
    try:
        yield result
    finally:
        await result.stop()
        await _strip(api, user, driver)
        await api.close()


async def _strip(api: Api, user: str, driver: str) -> None:
    """Remove the test's domains and objects, finalizers and all (no controller runs now)."""
    for resource, namespace in (
        (resources.COMPUTE_DOMAINS, user),
        (resources.RESOURCE_CLAIM_TEMPLATES, user),
        (resources.RESOURCE_CLAIM_TEMPLATES, driver),
        (resources.DAEMON_SETS, driver),
    ):
        items, _ = await api.list_all(resource, namespace)
        for obj in items:
            with contextlib.suppress(errors.ApiError):
                if obj["metadata"].get("finalizers"):
                    obj["metadata"]["finalizers"] = []
                    await api.update(resource, obj)
                await api.delete(resource, obj["metadata"]["name"], namespace)
