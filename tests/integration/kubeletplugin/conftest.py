"""Fixtures for the kubelet plugin's integration tests.

The tests play every other party through the embedded API server with the real client: the
controller and scheduler (ComputeDomains, allocated ResourceClaims reserved for pods), the IMEX
daemon (clique entries turning Ready) and the kubelet (:mod:`computedomain.proto.kubelet_client`
over the plugin's unix sockets). The plugin runs in-process (:class:`KubeletPlugin`) or, for the
restart scenarios, as a real ``cd-kubelet-plugin`` process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import config as cfg
from computedomain.kubeletplugin.plugin import KubeletPlugin
from computedomain.nvml import fake
from computedomain.proto import dra, kubelet_client
from computedomain_sim.apiserver import testing
from tests.support.clusters import CRDS, admin_api
from tests.support.polling import eventually

DRIVER = names.DRIVER_NAME
DRIVER_NAMESPACE = "nvidia-dra"
CLIQUE = "0d3c9a1e-5b7f-4e2a-9c8d-1f2e3d4c5b6a.3"


@pytest.fixture(scope="module")
def crds(apiserver: testing.RunningServer) -> None:
    apiserver.install_crds([CRDS])


@pytest.fixture
async def api(apiserver: testing.RunningServer, crds: None) -> AsyncIterator[Api]:
    async with admin_api(apiserver, field_manager="test") as client:
        yield client


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: unix socket paths must fit in 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="kp-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@attrs.define
class World:
    """The other parties of the cluster, acting through the API."""

    api: Api
    node: str
    namespace: str

    async def setup(self) -> None:
        for name in {self.namespace, DRIVER_NAMESPACE}:
            with contextlib.suppress(errors.AlreadyExists):
                await self.api.create(
                    resources.NAMESPACES,
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                )
        with contextlib.suppress(errors.AlreadyExists):
            await self.api.create(
                resources.NODES,
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node}},
            )

    async def domain(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        body = {
            "apiVersion": names.GROUP_VERSION,
            "kind": names.COMPUTE_DOMAIN_KIND,
            "metadata": {"name": name, "namespace": namespace or self.namespace},
            "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": f"{name}-ch"}}},
        }
        return await self.api.create(resources.COMPUTE_DOMAINS, body, namespace or self.namespace)

    async def pod(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace or self.namespace},
            "spec": {"nodeName": self.node, "containers": [{"name": "c", "image": "busybox"}]},
        }
        return await self.api.create(resources.PODS, body, namespace or self.namespace)

    async def claim(
        self,
        kind: str,
        domain_id: str,
        *,
        namespace: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        mode: str | None = None,
        pod: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """An allocated claim on this node's device, reserved for ``pod`` (the scheduler's job)."""
        ns = namespace or self.namespace
        request, device = ("daemon", "daemon-0") if kind == "daemon" else ("channel", "channel-0")
        params: dict[str, Any] = (
            dict(parameters)
            if parameters is not None
            else {
                "apiVersion": names.GROUP_VERSION,
                "kind": names.DAEMON_CONFIG_KIND if kind == "daemon" else names.CHANNEL_CONFIG_KIND,
                "domainID": domain_id,
            }
        )
        if mode is not None:
            params["allocationMode"] = mode
        name = f"{request}-{uuid.uuid4().hex[:8]}"
        created = await self.api.create(
            resources.RESOURCE_CLAIMS,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": ns},
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": request,
                                "exactly": {
                                    "deviceClassName": (
                                        names.DAEMON_DEVICE_CLASS
                                        if kind == "daemon"
                                        else names.CHANNEL_DEVICE_CLASS
                                    )
                                },
                            }
                        ]
                    }
                },
            },
            ns,
        )
        pod = pod or await self.pod(f"pod-{name}", ns)
        created["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": request, "driver": DRIVER, "pool": self.node, "device": device}
                    ],
                    "config": [
                        {
                            "source": "FromClaim",
                            "requests": [request],
                            "opaque": {"driver": DRIVER, "parameters": params},
                        }
                    ],
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [self.node]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [
                {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
            ],
        }
        return await self.api.update_status(resources.RESOURCE_CLAIMS, created)

    async def daemon_ready(
        self, cd: Mapping[str, Any], clique: str = CLIQUE, status: str = "Ready"
    ) -> None:
        """The IMEX daemon's job: its entry in the domain's clique object."""
        uid = cd["metadata"]["uid"]
        name = names.clique_object_name(uid, clique)
        entry = {
            "nodeName": self.node,
            "ipAddress": "10.0.0.7",
            "cliqueID": clique,
            "index": 0,
            "status": status,
        }
        try:
            current = await self.api.get(resources.COMPUTE_DOMAIN_CLIQUES, name, DRIVER_NAMESPACE)
        except errors.NotFound:
            body = {
                "apiVersion": names.GROUP_VERSION,
                "kind": names.CLIQUE_KIND,
                "metadata": {
                    "name": name,
                    "namespace": DRIVER_NAMESPACE,
                    "labels": {names.COMPUTE_DOMAIN_LABEL: uid, names.CLIQUE_LABEL: clique},
                },
                "daemons": [entry],
            }
            await self.api.create(resources.COMPUTE_DOMAIN_CLIQUES, body, DRIVER_NAMESPACE)
            return
        current["daemons"] = [
            d for d in current.get("daemons") or [] if d["nodeName"] != self.node
        ] + [entry]
        await self.api.update(resources.COMPUTE_DOMAIN_CLIQUES, current)

    async def set_node_label(self, value: str | None) -> None:
        """Set or remove the domain label, as another plugin or the controller would."""
        node = await self.api.get(resources.NODES, self.node)
        labels = node["metadata"].setdefault("labels", {})
        if value is None:
            labels.pop(names.COMPUTE_DOMAIN_LABEL, None)
        else:
            labels[names.COMPUTE_DOMAIN_LABEL] = value
        await self.api.update(resources.NODES, node)

    async def node_label(self) -> str | None:
        node = await self.api.get(resources.NODES, self.node)
        return (node["metadata"].get("labels") or {}).get(names.COMPUTE_DOMAIN_LABEL)

    async def events_for(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        listing = await self.api.list(resources.EVENTS, pod["metadata"]["namespace"])
        return [
            e for e in listing["items"] if e["involvedObject"].get("uid") == pod["metadata"]["uid"]
        ]


def read_text(path: Path) -> str:
    return path.read_text()


def read_bytes(path: Path) -> bytes:
    return path.read_bytes()


def write_text(path: Path, text: str) -> None:
    path.write_text(text)


def ref(claim: Mapping[str, Any]) -> dra.ClaimRef:
    meta = claim["metadata"]
    return dra.ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def reserved_pod(claim: Mapping[str, Any]) -> dict[str, Any]:
    consumer = claim["status"]["reservedFor"][0]
    return {
        "metadata": {
            "name": consumer["name"],
            "uid": consumer["uid"],
            "namespace": claim["metadata"]["namespace"],
        }
    }


@pytest.fixture
async def world(api: Api) -> World:
    w = World(api, node=f"node-{uuid.uuid4().hex[:6]}", namespace=f"team-{uuid.uuid4().hex[:6]}")
    await w.setup()
    return w


def node_environment(
    root: Path, world: World, apiserver: testing.RunningServer, **extra: str
) -> dict[str, str]:
    """The plugin's environment for one simulated node, every path under ``root``."""
    (root / "driver-root/proc/driver/nvidia/capabilities").mkdir(parents=True, exist_ok=True)
    (root / "driver-root/proc/driver/nvidia/capabilities/fabric-imex-mgmt").write_text(
        fake.fabric_imex_mgmt_text()
    )
    (root / "proc-devices").write_text(fake.proc_devices_text())
    boot = root / "boot_id"
    if not boot.exists():
        boot.write_text(str(uuid.uuid4()) + "\n")
    env = {
        "NODE_NAME": world.node,
        "NAMESPACE": DRIVER_NAMESPACE,
        "CDI_ROOT": str(root / "cdi"),
        "KUBELET_REGISTRAR_DIRECTORY_PATH": str(root / "reg"),
        "KUBELET_PLUGINS_DIRECTORY_PATH": str(root / "p"),
        "ALT_PROC_DEVICES_PATH": str(root / "proc-devices"),
        "DRIVER_ROOT_CTR_PATH": str(root / "driver-root"),
        "BOOT_ID_PATH": str(boot),
        "NVML_BACKEND": "fake",
        "FAKE_NVML_CLIQUE": CLIQUE,
        "KUBECONFIG": str(apiserver.kubeconfig),
        "KUBE_API_QPS": "0",
    }
    env.update(extra)
    return env


@attrs.define
class Running:
    plugin: KubeletPlugin
    config: cfg.Config
    task: asyncio.Task[None]

    @property
    def reg_socket(self) -> str:
        return str(self.config.registration_socket)

    async def kubelet(self, version: dra.Version | None = None) -> kubelet_client.DraClient:
        registration = await kubelet_client.register(self.reg_socket, driver_name=DRIVER)
        return kubelet_client.DraClient(registration.endpoint, version or registration.version)


@contextlib.asynccontextmanager
async def running_plugin(env: Mapping[str, str], api: Api) -> AsyncIterator[Running]:
    """The plugin in this process, serving until the block ends."""
    config = cfg.parse([], env)
    plugin = KubeletPlugin(config, api)
    task = asyncio.create_task(plugin.run(handle_signals=False))
    ready = asyncio.create_task(plugin.ready.wait())
    done, _ = await asyncio.wait({task, ready}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        ready.cancel()
        task.result()  # raises the startup error
    if ready not in done:
        task.cancel()
        pytest.fail("plugin did not start within 30 s")
    try:
        yield Running(plugin, config, task)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def start_process(env: Mapping[str, str], log_path: Path) -> asyncio.subprocess.Process:
    """A real ``cd-kubelet-plugin`` process; returns once its registration socket exists."""
    binary = Path(sys.executable).with_name("cd-kubelet-plugin")
    handle = log_path.open("ab")
    process = await asyncio.create_subprocess_exec(
        str(binary), env={**os.environ, **env, "V": "4"}, stdout=handle, stderr=handle
    )
    socket = Path(env["KUBELET_REGISTRAR_DIRECTORY_PATH"]) / f"{DRIVER}-reg.sock"

    async def up() -> bool:
        if process.returncode is not None:
            tail = read_text(log_path)[-3000:]
            pytest.fail(f"cd-kubelet-plugin exited with {process.returncode}: {tail}")
        try:
            await kubelet_client.get_info(str(socket))
        except kubelet_client.KubeletRpcError:
            return False
        return True

    await eventually(up, within=30, what="the plugin's registration socket")
    return process
