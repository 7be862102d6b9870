"""Components restarted mid-flight, on the simulated cluster (one rack of two nodes):

- the controller's process is SIGKILLed, and later its pod deleted, while a domain forms: the
  kubelet (or the Deployment) brings it back, the domain still gets Ready, and no object is
  duplicated (one daemon DaemonSet, one daemon claim template, one workload template, one
  clique per rack);
- the kubelet plugin is SIGKILLed while it prepares a worker's channel claim (the checkpoint
  says ``PrepareStarted``): the kubelet restarts it and retries, the worker runs with its IMEX
  channel, and the checkpoint ends consistent (the claim ``PrepareCompleted`` once, its CDI spec
  present).
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import checkpoint as plugin_checkpoint

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("default-cluster"),
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> kit.Cluster:
    shared: kit_extra.Shared = request.getfixturevalue("default_cluster")
    return shared.cluster


async def _controller(api: Api) -> dict[str, Any]:
    pods = await kit_extra.component_pods(api, kit_extra.CONTROLLER_SELECTOR)
    running = [p for p in pods if kit_extra.ready(p)]
    assert len(running) == 1, [p["metadata"]["name"] for p in pods]
    return running[0]


async def _assert_no_duplicates(api: Api, ns: str, uid: str) -> None:
    selector = f"{names.COMPUTE_DOMAIN_LABEL}={uid}"
    daemonsets, _ = await api.list_all(
        resources.DAEMON_SETS, kit.DRIVER_NAMESPACE, label_selector=selector
    )
    assert [d["metadata"]["name"] for d in daemonsets] == [f"{names.DAEMON_OBJECT_PREFIX}{uid}"]
    templates, _ = await api.list_all(resources.RESOURCE_CLAIM_TEMPLATES, kit.DRIVER_NAMESPACE)
    ours = [t for t in templates if uid in t["metadata"]["name"]]
    assert len(ours) == 1, [t["metadata"]["name"] for t in ours]
    workload, _ = await api.list_all(resources.RESOURCE_CLAIM_TEMPLATES, ns)
    assert [t["metadata"]["name"] for t in workload] == ["job-channel"]
    cliques = await kit.cliques(api, uid)
    assert len(cliques) == 1, [c["metadata"]["name"] for c in cliques]
    nodes = [d["nodeName"] for d in cliques[0].get("daemons") or ()]
    assert sorted(nodes) == ["r0n0", "r0n1"]


async def _has_daemonset(api: Api, uid: str) -> bool:
    selector = f"{names.COMPUTE_DOMAIN_LABEL}={uid}"
    items, _ = await api.list_all(
        resources.DAEMON_SETS, kit.DRIVER_NAMESPACE, label_selector=selector
    )
    return bool(items)


async def test_a_controller_killed_while_a_domain_forms(cluster: kit.Cluster) -> None:
    async with kit.api_of(cluster) as api:
        ns = await kit.create_namespace(api, "ctl-restart")
        before = await _controller(api)
        restarts: int = before["status"]["containerStatuses"][0].get("restartCount", 0)
        domain = await kit.create_domain(api, ns, "job", num_nodes=2)
        uid = domain["metadata"]["uid"]
        await kit.create_worker_deployment(
            api, ns, "job", name="workers", replicas=2, nodes=("r0n0", "r0n1")
        )
        # Mid-flight: the controller has started on the domain (its DaemonSet exists) when
        # its process dies.
        await kit.eventually(
            lambda: _has_daemonset(api, uid),
            what="the domain's DaemonSet",
        )
        os.kill(kit_extra.container_pid(before), signal.SIGKILL)

        async def restarted() -> bool:
            pods = await kit_extra.component_pods(api, kit_extra.CONTROLLER_SELECTOR)
            if len(pods) != 1 or not kit_extra.ready(pods[0]):
                return False
            count: int = pods[0]["status"]["containerStatuses"][0].get("restartCount", 0)
            return count > restarts

        await kit.eventually(
            restarted,
            what="the controller restarted by its kubelet",
        )
        await kit.pods_running(api, cluster, ns, selector="app=workers", count=2, domain="job")
        await kit.domain_ready(api, cluster, ns, "job")
        await _assert_no_duplicates(api, ns, uid)

        # Its pod deleted: the Deployment's replacement takes over the domain, which stays
        # Ready, and a node that leaves and comes back is seen by the new controller.
        await kit.delete_now(api, resources.PODS, before["metadata"]["name"], kit.DRIVER_NAMESPACE)

        async def replaced() -> bool:
            pods = await kit_extra.component_pods(api, kit_extra.CONTROLLER_SELECTOR)
            names_ = [p["metadata"]["name"] for p in pods if kit_extra.ready(p)]
            return len(pods) == 1 and names_ not in ([], [before["metadata"]["name"]])

        await kit.eventually(replaced, what="a replacement controller pod Ready")
        pods = await kit.pods_running(api, cluster, ns, selector="app=workers", count=2)
        await kit.delete_now(api, resources.PODS, pods[0]["metadata"]["name"], ns)
        await kit.pods_running(api, cluster, ns, selector="app=workers", count=2, domain="job")
        await kit.domain_ready(api, cluster, ns, "job")
        await _assert_no_duplicates(api, ns, uid)
        await kit_extra.release(api, cluster, ns)


def _checkpoint(cluster: kit.Cluster, node: str) -> dict[str, Any]:
    path = cluster.plugin_dir(node) / plugin_checkpoint.FILE_NAME
    try:
        data: dict[str, Any] = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data.get("claims") or {}


async def test_a_plugin_killed_mid_prepare(cluster: kit.Cluster) -> None:
    node = "r0n1"
    async with kit.api_of(cluster) as api:
        ns = await kit.create_namespace(api, "plugin-restart")
        await kit.create_domain(api, ns, "job", num_nodes=1)
        plugins = await kit_extra.component_pods(api, kit_extra.PLUGIN_SELECTOR)
        (plugin,) = [p for p in plugins if p["spec"].get("nodeName") == node]
        restarts: int = plugin["status"]["containerStatuses"][0].get("restartCount", 0)
        await kit.create_worker(api, ns, "job", node, name="w")

        async def preparing() -> str | None:
            for uid, entry in _checkpoint(cluster, node).items():
                if entry.get("namespace") == ns and entry.get("state") == "PrepareStarted":
                    return str(uid)
            return None

        claim_uid = await kit.eventually(
            preparing,
            what="the worker's claim PrepareStarted in the checkpoint",
            every=0.05,
        )
        os.kill(kit_extra.container_pid(plugin), signal.SIGKILL)

        async def plugin_restarted() -> bool:
            pods = await kit_extra.component_pods(api, kit_extra.PLUGIN_SELECTOR)
            (pod,) = [p for p in pods if p["spec"].get("nodeName") == node]
            count = pod["status"]["containerStatuses"][0].get("restartCount", 0)
            return bool(count > restarts)

        await kit.eventually(
            plugin_restarted,
            what="the plugin restarted by its kubelet",
        )
        (worker,) = await kit.pods_running(api, cluster, ns, selector="app=w", count=1)
        report = await kit.eventually(
            lambda: _report(cluster, worker),
            what="the worker's report",
        )
        assert report["channels"] == ["channel0"]

        claims = _checkpoint(cluster, node)
        ours = {uid: e for uid, e in claims.items() if e.get("namespace") == ns}
        assert list(ours) == [claim_uid]
        assert ours[claim_uid]["state"] == "PrepareCompleted"
        cdi = cluster.leftovers(node).cdi_files
        assert [f for f in cdi if claim_uid in f], cdi
        await kit_extra.release(api, cluster, ns)


async def _report(cluster: kit.Cluster, pod: dict[str, Any]) -> dict[str, Any] | None:
    return kit.worker_report(cluster, pod)
