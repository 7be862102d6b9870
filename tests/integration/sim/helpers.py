"""Helpers for the simulation's integration tests: a cluster per test, and waiting for a
condition with a deadline (never a bare sleep)."""

from __future__ import annotations

from typing import Any, TypeVar

from computedomain.kube import errors
from computedomain.kube.resources import EVENTS, NAMESPACES, PODS
from computedomain.kube.rest import Api
from computedomain_sim.cluster.cluster import SimCluster
from tests.support.polling import eventually

T = TypeVar("T")


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
