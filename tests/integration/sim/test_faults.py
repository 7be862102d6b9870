"""Fault primitives of the simulated nodes: a node reboot restarts its pods with a new boot id and
an empty CDI directory; a deleted node's pods are collected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from computedomain.kube.resources import NODES, PODS
from tests.support.clusters import running_cluster
from tests.support.polling import eventually

from .helpers import gone, namespace, pod, ready_pod


async def test_reboot_restarts_pods_with_a_new_boot_and_empty_cdi_dir(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim", nodes_per_rack=1) as cluster:
        api = cluster.api
        assert api is not None
        kubelet = cluster.kubelets["r0n0"]
        paths = kubelet.ctx.paths
        ns = await namespace(api, "work")
        await api.create(PODS, pod("survivor", ns, "import time; time.sleep(600)"))
        before = await ready_pod(api, "survivor", ns)
        boot = paths.boot_id_file.read_text()
        (paths.cdi_dir / "stale.json").write_text("{}")

        await kubelet.reboot()

        assert paths.boot_id_file.read_text() != boot
        assert list(paths.cdi_dir.iterdir()) == []
        node = await api.get(NODES, "r0n0")
        assert node["status"]["nodeInfo"]["bootID"] == paths.boot_id_file.read_text().strip()

        async def restarted() -> dict[str, Any] | None:
            current = await api.get(PODS, "survivor", ns)
            (status,) = current["status"]["containerStatuses"]
            fresh = status["restartCount"] == 1 and status.get("ready")
            return (
                current
                if fresh
                and status["containerID"] != before["status"]["containerStatuses"][0]["containerID"]
                else None
            )

        after = await eventually(restarted, what="the pod's container restarted after the reboot")
        assert after["metadata"]["uid"] == before["metadata"]["uid"]


async def test_pods_of_a_deleted_node_are_collected(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        await api.create(
            PODS,
            pod(
                "orphan",
                ns,
                "import time; time.sleep(600)",
                nodeSelector={"kubernetes.io/hostname": "r0n1"},
            ),
        )
        await ready_pod(api, "orphan", ns)
        await api.delete(NODES, "r0n1")
        await gone(api, PODS, "orphan", ns)
