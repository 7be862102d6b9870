"""The DaemonSet controller with the scheduler and kubelets: pods follow node labels, are
replaced when deleted, and the status counts them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from computedomain.kube.resources import DAEMON_SETS, NODES, PODS
from computedomain.kube.rest import PatchType

from .helpers import eventually, namespace, running_cluster

LABEL = "resource.nvidia.com/computeDomain"


def daemonset(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "imex", "namespace": ns},
        "spec": {
            "selector": {"matchLabels": {"app": "imex"}},
            "template": {
                "metadata": {"labels": {"app": "imex"}},
                "spec": {
                    "nodeSelector": {LABEL: "cd-1"},
                    "tolerations": [{"operator": "Exists"}],
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "main",
                            "image": "python",
                            "command": ["python3", "-c", "import time; time.sleep(600)"],
                            "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1},
                        }
                    ],
                },
            },
        },
    }


async def test_daemon_pods_follow_the_node_label(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "drv")
        await api.create(DAEMON_SETS, daemonset(ns))

        async def pods_on() -> dict[str, dict[str, Any]]:
            items, _ = await api.list_all(PODS, ns, label_selector="app=imex")
            return {
                p["spec"].get("nodeName", ""): p
                for p in items
                if not p["metadata"].get("deletionTimestamp")
            }

        async def label(node: str, value: str | None) -> None:
            patch = {"metadata": {"labels": {LABEL: value}}}
            await api.patch(NODES, node, patch, patch_type=PatchType.MERGE)

        async def bound_pods() -> dict[str, dict[str, Any]] | None:
            now = await pods_on()
            return now if now and "" not in now else None  # "": created, not yet bound

        await label("r0n1", "cd-1")
        placed = await eventually(bound_pods, what="a daemon pod on r0n1")
        assert set(placed) == {"r0n1"}
        daemon = placed["r0n1"]
        owner = daemon["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["controller"]) == ("DaemonSet", True)
        assert daemon["metadata"]["name"].startswith("imex-")

        async def ready_count() -> int | None:
            status = (await api.get(DAEMON_SETS, "imex", ns)).get("status") or {}
            return (
                status.get("numberReady")
                if status.get("numberReady") == status.get("desiredNumberScheduled") == 1
                else None
            )

        await eventually(ready_count, what="numberReady 1 of 1")

        # Deleted: replaced by a new pod on the same node.
        await api.delete(PODS, daemon["metadata"]["name"], ns, grace_period_seconds=0)

        async def replaced() -> bool:
            now = await pods_on()
            return "r0n1" in now and now["r0n1"]["metadata"]["uid"] != daemon["metadata"]["uid"]

        await eventually(replaced, what="the daemon pod replaced")

        # The label moves: the pod moves with it.
        await label("r0n1", None)
        await label("r0n0", "cd-1")

        async def moved() -> bool:
            return set(await pods_on()) == {"r0n0"}

        await eventually(moved, what="the daemon pod on r0n0 only")
