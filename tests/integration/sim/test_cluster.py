"""The simulated cluster installs deployments/ (the sim overlay) and its controllers act on it:
every rendered object is in the API server, the plugin DaemonSet has a pod on every GPU node
and the controller Deployment has its replica."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from computedomain.kube.resources import DAEMON_SETS, PODS, Resource
from computedomain_sim.cluster import install, kustomize
from computedomain_sim.cluster.cluster import DEFAULT_MANIFESTS, DRIVER_NAMESPACE
from tests.support.clusters import running_cluster
from tests.support.polling import eventually


async def test_manifests_are_installed_and_their_workloads_placed(tmp_path: Path) -> None:
    async with running_cluster(
        tmp_path / "sim", racks=2, nodes_per_rack=1, manifests=DEFAULT_MANIFESTS
    ) as cluster:
        api = cluster.api
        assert api is not None
        for obj in kustomize.render(DEFAULT_MANIFESTS, use_kubectl=False):
            resource: Resource = install.resource_of(obj)
            meta = obj["metadata"]
            stored = await api.get(resource, meta["name"], meta.get("namespace"))
            assert stored["metadata"]["name"] == meta["name"]

        async def placed() -> dict[str, Any] | None:
            pods, _ = await api.list_all(PODS, DRIVER_NAMESPACE)
            nodes = sorted(
                p["spec"].get("nodeName", "")
                for p in pods
                if "kubelet-plugin" in p["metadata"]["name"]
            )
            controllers = [
                p for p in pods if p["metadata"]["name"].startswith("computedomain-controller-")
            ]
            return (
                {"plugins": nodes, "controllers": controllers}
                if nodes == ["r0n0", "r1n0"] and controllers
                else None
            )

        found = await eventually(placed, what="plugin pods on both nodes and a controller pod")
        assert len(found["controllers"]) == 1
        status = (await api.get(DAEMON_SETS, "computedomain-kubelet-plugin", DRIVER_NAMESPACE))[
            "status"
        ]
        assert status["desiredNumberScheduled"] == 2
