"""A simulated node's identity in the API and on disk: the Node object, its heartbeat, and the
boot id and ``/proc/devices`` files the plugin reads.

Called by :mod:`.kubelet`. :class:`NodeConfig` is what the cluster decides about a node
(labels, taints, address, simulated hardware); :class:`NodeAgent` registers the Node (create, or
update a leftover one), keeps its Ready condition fresh every ``heartbeat`` seconds, can mark it
NotReady (fault tests), and on :meth:`NodeAgent.new_boot` writes a new boot id (a reboot).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from computedomain.api import names
from computedomain.kube import errors
from computedomain.kube.events import timestamp
from computedomain.kube.resources import NODES
from computedomain.kube.rest import Api
from computedomain.runtime import files
from computedomain.runtime.clock import REAL_CLOCK, Clock

from .paths import NodePaths

__all__ = ["NodeAgent", "NodeConfig", "node_object"]

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
        clock: Clock | None = None,
    ) -> None:
        self.api = api
        self.config = config
        self.paths = paths
        self.heartbeat = heartbeat
        self.clock = clock or REAL_CLOCK
        self.ready = True

    def boot_id(self) -> str:
        """The node's current boot id (created on first use)."""
        path = self.paths.boot_id_file
        if not path.exists():
            self.new_boot()
        return path.read_text().strip()

    def new_boot(self) -> str:
        """Write a new boot id and the node's /proc/devices; returns the id (a reboot)."""
        self.paths.create()
        boot = str(uuid.uuid4())
        files.atomic_write(self.paths.boot_id_file, f"{boot}\n".encode())
        files.atomic_write(self.paths.proc_devices_file, self.config.proc_devices.encode())
        return boot

    async def register(self) -> None:
        """Create the Node, or bring a leftover one up to date. Raises API errors."""
        body = node_object(
            self.config, self.boot_id(), timestamp(self.clock.time()), ready=self.ready
        )
        try:
            await self.api.create(NODES, body)
        except errors.AlreadyExists:
            current = await self.api.get(NODES, self.config.name)
            merged = copy.deepcopy(current)
            merged["metadata"]["labels"] = {
                **(current["metadata"].get("labels") or {}),
                **body["metadata"]["labels"],
            }
            merged["spec"] = {**(current.get("spec") or {}), **body["spec"]}
            updated = await self.api.update(NODES, merged)
            updated["status"] = body["status"]
            await self.api.update_status(NODES, updated)

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

    async def run(self) -> None:
        """Heartbeat until cancelled (API errors are logged by the caller's retry)."""
        while True:
            await self.clock.sleep(self.heartbeat)
            try:
                await self.beat()
            except errors.ApiError:
                continue
