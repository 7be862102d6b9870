"""Helpers for the simulation's integration tests: a cluster per test, and waiting for a
condition with a deadline (never a bare sleep)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from computedomain.kube import errors
from computedomain.kube.resources import EVENTS, NAMESPACES, PODS
from computedomain.kube.rest import Api
from computedomain_sim.cluster.cluster import ClusterConfig, SimCluster
from computedomain_sim.cluster.topology import Topology
from computedomain_sim.kubelet.launch import Isolation

T = TypeVar("T")


@contextlib.asynccontextmanager
async def running_cluster(
    state_dir: Path,
    *,
    racks: int = 1,
    nodes_per_rack: int = 2,
    manifests: Path | None = None,
    isolation: Isolation | None = None,
) -> AsyncIterator[SimCluster]:
    """A started cluster (nodes Ready), stopped afterwards."""
    cluster = SimCluster(
        ClusterConfig(
            state_dir=state_dir,
            topology=Topology(racks, nodes_per_rack, seed=str(state_dir)),
            manifests=manifests,
            isolation=isolation,
        )
    )
    await cluster.start()
    try:
        await cluster.wait_ready(components=False, within=30)
        yield cluster
    finally:
        await cluster.stop()


async def eventually(
    check: Callable[[], Awaitable[T | None]], *, within: float = 30.0, what: str = ""
) -> T:
    """Poll ``check`` until it returns something truthy; fail after ``within`` seconds."""
    last: Any = None
    async with asyncio.timeout(within):
        while True:
            try:
                last = await check()
            except errors.NotFound as exc:
                last = exc
            else:
                if last:
                    return last
            await asyncio.sleep(0.05)
    raise AssertionError(
        f"not reached within {within}s: {what} (last: {last!r})"
    )  # pragma: no cover


async def namespace(api: Api, name: str) -> str:
    await api.create(NAMESPACES, {"metadata": {"name": name}})
    return name


def pod(name: str, namespace: str, script: str, **spec: Any) -> dict[str, Any]:
    """A pod running ``python3 -c script``."""
    container = {"name": "main", "image": "python", "command": ["python3", "-c", script]}
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 5, **spec},
    }


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind),
        None,
    )


async def ready_pod(api: Api, name: str, ns: str, within: float = 30.0) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        current = await api.get(PODS, name, ns)
        ready = condition(current, "Ready")
        return current if ready and ready["status"] == "True" else None

    return await eventually(check, within=within, what=f"pod {ns}/{name} Ready")


async def gone(api: Api, resource: Any, name: str, ns: str | None, within: float = 30.0) -> None:
    async def check() -> bool:
        try:
            await api.get(resource, name, ns)
        except errors.NotFound:
            return True
        return False

    await eventually(check, within=within, what=f"{name} deleted")


async def events_for(api: Api, ns: str, name: str) -> list[dict[str, Any]]:
    items, _ = await api.list_all(EVENTS, ns, field_selector=f"involvedObject.name={name}")
    return items


def log_of(cluster: SimCluster, pod_obj: dict[str, Any], container: str = "main") -> str:
    meta = pod_obj["metadata"]
    node = pod_obj["spec"]["nodeName"]
    paths = cluster.kubelets[node].ctx.paths
    path = paths.log_dir(meta["namespace"], meta["name"], meta["uid"]) / container / "0.log"
    return path.read_text() if path.exists() else ""
