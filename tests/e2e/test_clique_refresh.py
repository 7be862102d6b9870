"""A Fabric Manager partition change on a simulated node (docs/compatibility.md#clique-id-refresh):
the node's NVML profile document is replaced at runtime with one in another clique, and the
plugin's own refresh timer (``CLIQUE_ID_REFRESH_INTERVAL``, short here) republishes the
ResourceSlice's ``cliqueID``, posts ``CliqueIDChanged`` on the Node and moves the
``nvidia.com/gpu.clique`` label (``components/gpu-clique-label``, which also grants the plugin
``patch`` on Nodes, under the simulation's RBAC). A workload started afterwards forms its domain
in the new clique: its daemon registers in ``<domain uid>.<new clique>``.

One rack of one node, with its own cluster (the refresh interval and the label are settings of
the plugin's DaemonSet).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain_sim import nvmlmock
from computedomain_sim.kubelet.paths import NodePaths

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("clique-refresh"),
    pytest.mark.timeout(300),
]

NS = "refresh"
NODE = "r0n0"
GPU_CLIQUE = "nvidia.com/gpu.clique"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kit.Cluster]:
    root = tmp_path_factory.mktemp("clique-refresh")
    manifests = kit_extra.overlay(
        root / "overlay",
        components=["gpu-clique-label"],
        plugin_env={"CLIQUE_ID_REFRESH_INTERVAL": "1s"},
    )
    with kit.module_cluster(
        tmp_path_factory,
        "clique-refresh-sim",
        racks=1,
        nodes_per_rack=1,
        extra_args=[f"--manifests={manifests}"],
    ) as up:
        yield up


@pytest.fixture
async def api(cluster: kit.Cluster) -> AsyncIterator[Api]:
    async with kit.api_of(cluster) as client:
        yield client


async def slice_clique(api: Api) -> str | None:
    items, _ = await api.list_all(
        resources.RESOURCE_SLICES,
        field_selector=f"spec.driver={names.DRIVER_NAME},spec.nodeName={NODE}",
    )
    if len(items) != 1:
        return None
    attributes = items[0]["spec"]["devices"][0]["attributes"]
    return str(attributes.get(names.ATTRIBUTE_CLIQUE_ID, {}).get("string", ""))


async def node_label(api: Api) -> str | None:
    node = await api.get(resources.NODES, NODE)
    return (node["metadata"].get("labels") or {}).get(GPU_CLIQUE)


async def test_a_partition_change_republishes_the_slice(api: Api, cluster: kit.Cluster) -> None:
    old = await kit.eventually(lambda: slice_clique(api), what="the node's ResourceSlice")
    assert old
    cluster_uuid, _, number = old.rpartition(".")
    new = f"{cluster_uuid}.{int(number) + 40}"

    async def labelled(value: str) -> bool | None:
        return await node_label(api) == value or None

    await kit.eventually(lambda: labelled(old), what=f"{GPU_CLIQUE}={old} from the plugin")

    # The partition change: the node's NVML now reports the new clique.
    document = NodePaths(cluster.node_root(NODE)).host(nvmlmock.PROFILE_NODE_PATH)
    assert document.is_file()
    nvmlmock.write_profile(document, "gb200", new)

    async def republished() -> bool | None:
        return await slice_clique(api) == new or None

    await kit.eventually(republished, what=f"the slice's cliqueID becoming {new}")
    await kit.eventually(lambda: labelled(new), what=f"{GPU_CLIQUE}={new}")
    events = await kit.eventually(
        lambda: _changed_events(api), what="a CliqueIDChanged event on the Node"
    )
    assert events[0]["type"] == "Normal"
    assert f"from {old} to {new}" in events[0]["message"]

    # A domain formed afterwards lives in the new clique.
    await kit.create_namespace(api, NS)
    domain = await kit.create_domain(api, NS, "job", num_nodes=1)
    await kit.create_worker(api, NS, "job", NODE, name="worker")
    await kit.pods_running(api, cluster, NS, selector="app=worker", count=1, domain="job")
    formed = await kit.formed(api, cluster, NS, "job", {NODE})
    assert kit.membership(formed)[NODE][0] == new
    uid = domain["metadata"]["uid"]
    assert [c["metadata"]["name"] for c in await kit.cliques(api, uid)] == [
        names.clique_object_name(uid, new)
    ]
    (daemon,) = await kit.daemon_pods(api, uid)
    assert daemon["metadata"]["labels"][names.CLIQUE_LABEL] == new


async def _changed_events(api: Api) -> list[dict[str, Any]] | None:
    found = [
        e
        for e in await kit.events_about(api, "default", "Node", NODE)
        if e.get("reason") == "CliqueIDChanged"
    ]
    return found or None
