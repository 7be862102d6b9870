"""The DaemonSet controller with the scheduler and kubelets: pods follow node labels, are
replaced when deleted, and the status counts them; and alone, against a server that refuses
pod creates: its creates go in slow-start batches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp import web

from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.events import EventRecorder
from computedomain.kube.resources import DAEMON_SETS, NODES, PODS
from computedomain.kube.rest import PatchType
from computedomain_sim.apiserver.server import EmbeddedApiServer
from computedomain_sim.controllers.daemonset_controller import DaemonSetController
from computedomain_sim.faults.apiserver import ApiFaults
from tests.support.clusters import running_cluster
from tests.support.polling import eventually

from .helpers import namespace

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


class CreateConcurrency:
    """A server stage: the most pod creates it has seen in flight at once."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0

    @web.middleware
    async def __call__(self, request: web.Request, handler: Any) -> web.StreamResponse:
        counted = request.method == "POST" and request.path.endswith("/pods")
        if counted:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            return await handler(request)  # type: ignore[no-any-return]
        finally:
            if counted:
                self.now -= 1


async def test_creates_go_in_slow_start_batches() -> None:
    """While every pod create fails, each sync sends one; once creates work, a sync creates
    all the missing pods, several at a time (1, then 2, then 4)."""
    faults = ApiFaults("500=1,verbs=create,resources=pods,seed=3")
    concurrency = CreateConcurrency()  # outside the fault stage: it sees the injected latency
    async with EmbeddedApiServer(stages=[concurrency, faults]) as server:
        api = await connect(ClientConfig(url=server.url, token=server.admin_token, qps=0))
        events = EventRecorder(api, component="ds")
        controller = DaemonSetController(api, events=events)
        tasks = [asyncio.create_task(events.run()), asyncio.create_task(controller.run())]
        try:
            for i in range(7):
                node = {"metadata": {"name": f"n{i}", "labels": {LABEL: "cd-1"}}}
                await api.create(NODES, {"apiVersion": "v1", "kind": "Node", **node})
            await api.create(DAEMON_SETS, daemonset("default"))
            key = "default/imex"

            async def retried_a_few_times() -> bool:
                return controller.queue.num_requeues(key) >= 3

            await eventually(retried_a_few_times, what="three failed syncs")
            # Creates work from now on, each taking a while (so that a batch's overlap).
            faults.configure("latency=30ms,verbs=create,resources=pods")
            failed_syncs = controller.queue.num_requeues(key)
            attempts = faults.counts["500"]
            # One create per failed sync (the sync under way may have sent its one too).
            assert attempts <= failed_syncs + 1, (attempts, failed_syncs)

            async def all_created() -> list[Any] | None:
                items, _ = await api.list_all(PODS, "default", label_selector="app=imex")
                return items if len(items) == 7 else None

            pods = await eventually(all_created, what="a pod per labelled node")
            assert len({p["metadata"]["name"] for p in pods}) == 7
            assert concurrency.most >= 2  # not one after another
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await api.close()


async def test_a_node_change_syncs_only_the_daemonsets_whose_decision_it_changes() -> None:
    """As kube-controller-manager: labelling a node for one domain syncs that domain's
    DaemonSet, not every DaemonSet; a heartbeat syncs none; a new node syncs those that want
    it."""
    async with EmbeddedApiServer() as server:
        api = await connect(ClientConfig(url=server.url, token=server.admin_token, qps=0))
        controller = DaemonSetController(api, events=EventRecorder(api, component="ds"))
        added: list[str] = []
        add = controller.queue.add

        def recording(key: str) -> None:
            added.append(key)
            add(key)

        controller.queue.add = recording  # type: ignore[method-assign]
        task = asyncio.create_task(controller.run())
        try:
            for cd in ("cd-1", "cd-2"):
                ds = daemonset("default")
                ds["metadata"]["name"] = f"imex-{cd}"
                ds["spec"]["template"]["spec"]["nodeSelector"] = {LABEL: cd}
                await api.create(DAEMON_SETS, ds)
            await api.create(
                NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}}
            )

            async def synced_both() -> bool:
                # As the controller's cache has it: the status writes' own events are in.
                items = controller.daemonsets.store.list()
                return len(items) == 2 and all(
                    (d.get("status") or {}).get("observedGeneration") for d in items
                )

            await eventually(synced_both, what="both DaemonSets synced")
            added.clear()
            heartbeat = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
            await api.patch(NODES, "n0", heartbeat, subresource="status")
            patch = {"metadata": {"labels": {LABEL: "cd-1"}}}
            await api.patch(NODES, "n0", patch, patch_type=PatchType.MERGE)

            async def pod_for_cd1() -> bool:
                items, _ = await api.list_all(PODS, "default")
                return any(p["metadata"]["name"].startswith("imex-cd-1-") for p in items)

            await eventually(pod_for_cd1, what="a pod of imex-cd-1 for n0")

            def settled() -> bool:
                # imex-cd-1's status counts its pod in the controller's cache, and no sync is
                # queued or running: the pod's own events have been handled.
                ds = controller.daemonsets.store.get("default/imex-cd-1") or {}
                scheduled = (ds.get("status") or {}).get("currentNumberScheduled")
                queue = controller.queue
                return scheduled == 1 and len(queue) == 0 and not queue.processing

            await eventually(settled, what="imex-cd-1 settled")
            # The readiness change and the label each synced imex-cd-1 (a new pod's events
            # add it again), never imex-cd-2.
            assert set(added) == {"default/imex-cd-1"}
            added.clear()
            new = {"metadata": {"name": "n1", "labels": {LABEL: "cd-2"}}}
            await api.create(NODES, {"apiVersion": "v1", "kind": "Node", **new})

            async def pod_for_cd2() -> bool:
                items, _ = await api.list_all(PODS, "default")
                return any(p["metadata"]["name"].startswith("imex-cd-2-") for p in items)

            await eventually(pod_for_cd2, what="a pod of imex-cd-2 for n1")
            assert set(added) == {"default/imex-cd-2"}
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await api.close()
