"""Builders shared by the kubelet plugin's unit tests: claims, domains, a state machine on
in-memory ports (the plugin's own interfaces; integration tests use the real API server)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import attrs

from computedomain.kubeletplugin import strategies
from computedomain.kubeletplugin.cdistore import CdiStore
from computedomain.kubeletplugin.checkpoint import FILE_NAME
from computedomain.kubeletplugin.checkpointstore import CheckpointStore
from computedomain.kubeletplugin.hostchannels import HostChannels
from computedomain.kubeletplugin.ports import Waiting
from computedomain.kubeletplugin.state import DeviceState, NodeFacts
from computedomain.nvml import fake
from computedomain.policies import registry

DRIVER = "compute-domain.nvidia.com"
NODE = "n1"
CLIQUE = fake.DEFAULT_CLIQUE
_counter = itertools.count()


def new_uid() -> str:
    return str(uuid.uuid4())


def domain(name: str = "job", namespace: str = "team-a", uid: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": name, "namespace": namespace, "uid": uid or new_uid()},
        "spec": {"channel": {"resourceClaimTemplate": {"name": f"{name}-channel"}}},
        "status": {"status": "NotReady"},
    }


def claim(
    kind: str,
    domain_id: str,
    *,
    namespace: str = "team-a",
    name: str | None = None,
    uid: str | None = None,
    mode: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    device, request = ("daemon-0", "daemon") if kind == "daemon" else ("channel-0", "channel")
    config_kind = "ComputeDomainDaemonConfig" if kind == "daemon" else "ComputeDomainChannelConfig"
    parameters: dict[str, Any] = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": config_kind,
        "domainID": domain_id,
    }
    if mode is not None:
        parameters["allocationMode"] = mode
    if params is not None:
        parameters = dict(params)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name or f"claim-{next(_counter)}",
            "namespace": namespace,
            "uid": uid or new_uid(),
        },
        "spec": {"devices": {"requests": [{"name": request}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": request, "driver": DRIVER, "pool": NODE, "device": device}
                    ],
                    "config": [
                        {
                            "source": "FromClaim",
                            "requests": [request],
                            "opaque": {"driver": DRIVER, "parameters": parameters},
                        }
                    ],
                }
            },
            "reservedFor": [{"resource": "pods", "name": "p", "uid": new_uid()}],
        },
    }


def set_ready(cd: dict[str, Any], node: str = NODE, status: str = "Ready") -> None:
    cd["status"] = {"status": "Ready", "nodes": [{"name": node, "status": status}]}


@attrs.define
class InMemoryCluster:
    """ClusterView over plain dicts (keyed as the informers key them)."""

    domains: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    cliques: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    pods: dict[str, dict[str, Any]] = attrs.field(factory=dict)

    def add(self, cd: dict[str, Any]) -> dict[str, Any]:
        self.domains[cd["metadata"]["uid"]] = cd
        return cd

    def domain(self, uid: str) -> Mapping[str, Any] | None:
        return self.domains.get(uid)

    def clique(self, name: str) -> Mapping[str, Any] | None:
        return self.cliques.get(name)

    def daemon_pod(self, domain_uid: str) -> Mapping[str, Any] | None:
        return self.pods.get(domain_uid)


@attrs.define
class InMemoryLabeler:
    """NodeLabeler over one label value, recording calls."""

    value: str | None = None
    calls: list[tuple[str, str]] = attrs.field(factory=list)

    async def ensure(self, domain_uid: str) -> None:
        self.calls.append(("ensure", domain_uid))
        if self.value not in (None, domain_uid):
            raise Waiting(
                "label already exists for a different ComputeDomain",
                reason=f"Node {NODE} belongs to ComputeDomain {self.value}",
            )
        self.value = domain_uid

    async def release(self, domain_uid: str) -> None:
        self.calls.append(("release", domain_uid))
        if self.value == domain_uid:
            self.value = None

    async def release_unheld(self, held: Collection[str]) -> None:
        self.calls.append(("release_unheld", ",".join(sorted(held))))
        if self.value not in held:
            self.value = None


@attrs.define
class Harness:
    state: DeviceState
    cluster: InMemoryCluster
    labeler: InMemoryLabeler
    root: Path
    checkpoints: CheckpointStore
    cdi: CdiStore
    now: list[float]

    def tick(self, seconds: float = 1.0) -> float:
        self.now[0] += seconds
        return self.now[0]


def node_files(root: Path) -> tuple[Path, Path]:
    """Write the fake driver files; returns (/proc/devices, fabric-imex-mgmt)."""
    proc = root / "proc-devices"
    proc.write_text(fake.proc_devices_text())
    cap = root / "driver-root/proc/driver/nvidia/capabilities/fabric-imex-mgmt"
    cap.parent.mkdir(parents=True, exist_ok=True)
    cap.write_text(fake.fabric_imex_mgmt_text())
    return proc, cap


def harness(
    root: Path,
    *,
    clique_id: str = CLIQUE,
    cliques_enabled: bool = True,
    strategy_map: Mapping[str, str] | None = None,
    extra_plugins: tuple[object, ...] = (),
    host: HostChannels | None = None,
) -> Harness:
    proc, cap = node_files(root)
    plugin_dir = root / "plugins" / DRIVER
    plugin_dir.mkdir(parents=True, exist_ok=True)
    checkpoints = CheckpointStore(plugin_dir / FILE_NAME)
    checkpoints.load_at_startup("boot-1")
    cdi_store = CdiStore(root / "cdi")
    cdi_store.ensure_root()
    cluster = InMemoryCluster()
    labeler = InMemoryLabeler()
    policies = registry.load(entry_points=False, extra=extra_plugins)
    now = [1_800_000_000.0]
    facts = NodeFacts(
        node_name=NODE,
        clique_id=clique_id,
        channel_major=234,
        cliques_enabled=cliques_enabled,
        host_paths=True,
        domains_root=plugin_dir / "domains",
        proc_devices=proc,
        fabric_capability=cap,
    )
    state = DeviceState(
        facts,
        checkpoints=checkpoints,
        cdi_store=cdi_store,
        cluster=cluster,
        labeler=labeler,
        strategy_for=strategies.resolve(policies.channels, strategy_map or {}),
        wall_clock=lambda: now[0],
        host=host,
    )
    return Harness(state, cluster, labeler, root, checkpoints, cdi_store, now)
