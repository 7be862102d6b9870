"""Playing the kubelet and the controller for daemon tests, through the real API.

The daemon tests create the daemon pods themselves (as the DaemonSet controller would), set
their IP and Ready condition (as the kubelet would) and remove entries of nodes that have no
daemon pod any more (the controller's clique cleanup). Every write goes over
HTTP to the embedded API server with the real client; the cleanup is a compare-and-swap.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api


def clique_id(n: int = 1) -> str:
    """A clique ID in NVML's format (``<cluster UUID>.<clique>``)."""
    return f"2df84740-d3cb-b5ce-4e7e-98352b5a71b5.{n}"


def random_cd_uid() -> str:
    return str(uuid.uuid4())


class Cluster:
    """The kubelet's and controller's side of a daemon test."""

    def __init__(self, api: Api, namespace: str) -> None:
        self.api = api
        self.namespace = namespace

    async def create_namespace(self) -> None:
        with contextlib.suppress(errors.AlreadyExists):
            await self.api.create(resources.NAMESPACES, {"metadata": {"name": self.namespace}})

    async def create_compute_domain(self, name: str, num_nodes: int = 0) -> str:
        """A ComputeDomain in the test namespace (status mode); returns its UID."""
        spec = {"numNodes": num_nodes, "channel": {"resourceClaimTemplate": {"name": name}}}
        body = {
            "apiVersion": names.GROUP_VERSION,
            "kind": names.COMPUTE_DOMAIN_KIND,
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": spec,
        }
        created = await self.api.create(resources.COMPUTE_DOMAINS, body, self.namespace)
        return str(created["metadata"]["uid"])

    async def create_pod(self, name: str, node: str, ip: str, cd_uid: str) -> str:
        """A running daemon pod on ``node`` with ``ip``, not yet Ready; returns its UID."""
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {names.COMPUTE_DOMAIN_LABEL: cd_uid},
            },
            "spec": {
                "nodeName": node,
                "containers": [{"name": names.DAEMON_CONTAINER, "image": "computedomain"}],
            },
        }
        created = await self.api.create(resources.PODS, body, self.namespace)
        await self.set_status(name, ip=ip, ready=False)
        return str(created["metadata"]["uid"])

    async def set_status(self, name: str, *, ip: str | None = None, ready: bool) -> None:
        status: dict[str, Any] = {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True" if ready else "False"},
            ],
        }
        if ip is not None:
            status |= {"podIP": ip, "podIPs": [{"ip": ip}]}
        await self.api.patch(
            resources.PODS, name, {"status": status}, namespace=self.namespace, subresource="status"
        )

    async def delete_pod(self, name: str) -> None:
        with contextlib.suppress(errors.NotFound):
            await self.api.delete(resources.PODS, name, self.namespace, grace_period_seconds=0)

    async def pod_nodes(self, cd_uid: str) -> set[str]:
        """Nodes that have a daemon pod of the domain (what the controller's cleanup checks)."""
        pods, _ = await self.api.list_all(
            resources.PODS,
            self.namespace,
            label_selector=f"{names.COMPUTE_DOMAIN_LABEL}={cd_uid}",
        )
        return {p["spec"]["nodeName"] for p in pods if not p["metadata"].get("deletionTimestamp")}

    async def cleanup(self, resource: resources.Resource, name: str, cd_uid: str) -> set[str]:
        """Remove entries of nodes without a daemon pod (the controller's cleanup), by CAS.

        Works on a clique's ``daemons`` or a domain's ``status.nodes``. Returns the node names
        removed.
        """
        while True:
            live = await self.pod_nodes(cd_uid)
            try:
                obj = await self.api.get(resource, name, self.namespace)
            except errors.NotFound:
                return set()
            holder, key = _list_of(obj)
            items = holder.get("nodes" if key == "name" else "daemons") or []
            stale = {i[key] for i in items if i.get(key) not in live}
            if not stale:
                return set()
            kept = [i for i in items if i.get(key) in live]
            holder["nodes" if key == "name" else "daemons"] = kept
            try:
                if key == "name":
                    await self.api.update_status(resource, obj)
                else:
                    await self.api.update(resource, obj)
            except errors.Conflict:
                continue
            return stale


def _list_of(obj: dict[str, Any]) -> tuple[dict[str, Any], str]:
    if obj.get("kind") == names.COMPUTE_DOMAIN_KIND:
        return obj.setdefault("status", {"status": "NotReady"}), "name"
    return obj, "nodeName"
