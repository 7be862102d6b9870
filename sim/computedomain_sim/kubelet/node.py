"""A simulated node's identity in the API and on disk: the Node object, its heartbeat, and the
files the kubelet plugin reads from the node (boot id, ``/proc/devices``, the driver's
capability files under ``/proc/driver/nvidia``).

Called by :mod:`.kubelet`. :class:`NodeConfig` is what the cluster decides about a node
(labels, taints, address, simulated hardware); :class:`NodeAgent` registers the Node (create, or
update a leftover one), can mark it NotReady (fault tests), and on :meth:`NodeAgent.new_boot`
writes a new boot id (a reboot). The node files are written at registration and again at every
boot, as the kernel and the driver recreate them.

Heartbeats are a real kubelet's: every ``heartbeat`` seconds (10) it renews the node's Lease in
``kube-node-lease`` (owned by the Node, so it goes with it), and it posts the Node's status only
when it changes (:meth:`NodeAgent.beat`) or every ``status_report`` seconds (5 minutes,
``nodeStatusReportFrequency``). A full status every 10 s was a read and a write, and an event to
every node watcher, per node every 10 s.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from computedomain.api import jsoncodec, names
from computedomain.kube import errors
from computedomain.kube.events import timestamp
from computedomain.kube.leaderelection import micro_time
from computedomain.kube.resources import LEASES, NODES
from computedomain.kube.rest import Api
from computedomain.runtime import files
from computedomain.runtime.clock import REAL_CLOCK, Clock
from computedomain_sim import nvmlmock

from .paths import NodePaths

__all__ = ["LEASE_NAMESPACE", "NodeAgent", "NodeConfig", "lease_object", "node_object"]

LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_S = 40  # the kubelet's nodeLeaseDurationSeconds
STATUS_REPORT_S = 300.0  # the kubelet's nodeStatusReportFrequency

DEFAULT_PROC_DEVICES = (
    "Character devices:\n  1 mem\n  4 /dev/vc/0\n 195 nvidia-frontend\n"
    f" 234 {names.IMEX_CHANNELS_PROC_NAME}\n 235 nvidia-caps\n 507 nvidia-uvm\n"
    "\nBlock devices:\n  7 loop\n  8 sd\n"
)


@attrs.frozen
class NodeConfig:
    """What the cluster decides about one node."""

    name: str
    address: str
    labels: Mapping[str, str] = attrs.field(factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)  # simulated hardware, for every container
    proc_devices: str = DEFAULT_PROC_DEVICES
    # Driver files by absolute node path (e.g. the fabric-imex-mgmt capability), with contents.
    driver_files: Mapping[str, str] = attrs.field(factory=dict)
    # Driver libraries by absolute node path, each a link to a real file (the mock NVML library).
    driver_links: Mapping[str, Path] = attrs.field(factory=dict)


def node_object(
    config: NodeConfig, boot_id: str, now: str, *, ready: bool = True
) -> dict[str, Any]:
    """The Node as the kubelet registers it. Pure."""
    labels = {
        "kubernetes.io/hostname": config.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        **config.labels,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": config.name, "labels": labels},
        "spec": {"taints": [dict(t) for t in config.taints]} if config.taints else {},
        "status": node_status(config, boot_id, now, ready=ready),
    }


def lease_object(node: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The node's Lease as the kubelet creates it: held by the node, owned by the Node. Pure."""
    name = str(node["metadata"]["name"])
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": name,
                    "uid": node["metadata"]["uid"],
                }
            ],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_S,
            "renewTime": micro_time(now),
        },
    }


def node_status(config: NodeConfig, boot_id: str, now: str, *, ready: bool) -> dict[str, Any]:
    """The Node's status: Ready condition, address, capacity, boot id. Pure."""
    capacity = {"cpu": "72", "memory": "503Gi", "pods": "110", "nvidia.com/gpu": "4"}
    return {
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "reason": "KubeletReady" if ready else "KubeletNotReady",
                "message": "kubelet is posting ready status" if ready else "node is not ready",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ],
        "addresses": [
            {"type": "InternalIP", "address": config.address},
            {"type": "Hostname", "address": config.name},
        ],
        "capacity": capacity,
        "allocatable": dict(capacity),
        "nodeInfo": {
            "bootID": boot_id,
            "kubeletVersion": "v1.34.0-sim",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "containerRuntimeVersion": "sim://1",
            "kernelVersion": "",
            "osImage": "computedomain simulated node",
            "machineID": "",
            "systemUUID": "",
            "kubeProxyVersion": "",
        },
    }


class NodeAgent:
    """Registers and heartbeats one Node."""

    def __init__(
        self,
        api: Api,
        config: NodeConfig,
        paths: NodePaths,
        *,
        heartbeat: float = 10.0,
        status_report: float = STATUS_REPORT_S,
        clock: Clock | None = None,
    ) -> None:
        self.api = api
        self.config = config
        self.paths = paths
        self.heartbeat = heartbeat
        self.status_report = status_report
        self.clock = clock or REAL_CLOCK
        self.ready = True
        self._lease: dict[str, Any] | None = None  # as last written
        self._status_posted = float("-inf")  # monotonic time of the last status post

    def boot_id(self) -> str:
        """The node's current boot id (created on first use)."""
        path = self.paths.boot_id_file
        if not path.exists():
            self.new_boot()
        return path.read_text().strip()

    def new_boot(self) -> str:
        """Write a new boot id and the node's files; returns the id (a reboot)."""
        self.paths.create()
        boot = str(uuid.uuid4())
        files.atomic_write(self.paths.boot_id_file, f"{boot}\n".encode())
        self.write_node_files()
        return boot

    def write_node_files(self) -> None:
        """Write ``/proc/devices``, the driver files and links at their node paths. Idempotent."""
        files.atomic_write(self.paths.proc_devices_file, self.config.proc_devices.encode())
        for node_path, text in self.config.driver_files.items():
            target = self.paths.host(node_path)
            target.parent.mkdir(parents=True, exist_ok=True)
            files.atomic_write(target, text.encode())
        for node_path, source in self.config.driver_links.items():
            nvmlmock.link(self.paths.host(node_path), source)

    async def register(self) -> None:
        """Write the node files, then create the Node, or bring a leftover one up to date.
        Raises API errors."""
        self.paths.create()
        self.write_node_files()
        body = node_object(
            self.config, self.boot_id(), timestamp(self.clock.time()), ready=self.ready
        )
        try:
            node = await self.api.create(NODES, body)
        except errors.AlreadyExists:
            current = await self.api.get(NODES, self.config.name)
            merged = jsoncodec.copy(current)
            merged["metadata"]["labels"] = {
                **(current["metadata"].get("labels") or {}),
                **body["metadata"]["labels"],
            }
            merged["spec"] = {**(current.get("spec") or {}), **body["spec"]}
            updated = await self.api.update(NODES, merged)
            updated["status"] = body["status"]
            node = await self.api.update_status(NODES, updated)
        self._status_posted = self.clock.monotonic()
        await self.renew_lease(node)

    async def beat(self) -> None:
        """Post the Ready condition now. Raises API errors."""
        status = node_status(
            self.config, self.boot_id(), timestamp(self.clock.time()), ready=self.ready
        )
        current = await self.api.get(NODES, self.config.name)
        old = next(
            (
                c
                for c in (current.get("status") or {}).get("conditions") or []
                if c.get("type") == "Ready"
            ),
            None,
        )
        if old is not None and old.get("status") == status["conditions"][0]["status"]:
            status["conditions"][0]["lastTransitionTime"] = old.get("lastTransitionTime")
        await self.api.patch(NODES, self.config.name, {"status": status}, subresource="status")
        self._status_posted = self.clock.monotonic()

    async def renew_lease(self, node: Mapping[str, Any] | None = None) -> None:
        """Create or renew the node's Lease (compare-and-swap on the last one written; after a
        conflict or without one, from a fresh read). Raises API errors."""
        now = self.clock.time()
        lease = self._lease
        if lease is None:
            try:
                lease = await self.api.get(LEASES, self.config.name, LEASE_NAMESPACE)
            except errors.NotFound:
                owner = node if node is not None else await self.api.get(NODES, self.config.name)
                self._lease = await self.api.create(
                    LEASES, lease_object(owner, now), LEASE_NAMESPACE
                )
                return
        body = jsoncodec.copy(lease)
        body.setdefault("spec", {})["renewTime"] = micro_time(now)
        body["spec"]["holderIdentity"] = self.config.name
        body["spec"]["leaseDurationSeconds"] = LEASE_DURATION_S
        try:
            self._lease = await self.api.update(LEASES, body)
        except (errors.Conflict, errors.NotFound):
            self._lease = None
            raise

    async def run(self) -> None:
        """Heartbeat until cancelled: renew the Lease every ``heartbeat`` seconds, post the
        status every ``status_report`` seconds. API errors are retried at the next beat."""
        while True:
            await self.clock.sleep(self.heartbeat)
            try:
                await self.renew_lease()
                if self.clock.monotonic() - self._status_posted >= self.status_report:
                    await self.beat()
            except errors.ApiError:
                continue
