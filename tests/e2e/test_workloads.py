"""Multi-node workloads on the simulated cluster (upstream's two-node MNNVL workloads, checked
where upstream cannot look: indices, cliques, hosts files).

One cluster of two racks of two nodes and one domain, grown in two steps:

1. a two-node workload (a Deployment of two workers on rack r0): one clique with indices 0 and 1,
   the domain Ready, each daemon's hosts file mapping both DNS names to the right IPs;
2. a second Deployment of two workers on rack r1 joins the same domain, which then spans two
   racks: one ComputeDomainClique per rack, each with indices 0..1, the domain Ready with four
   nodes, rack r0's indices unchanged, and every daemon's hosts file naming exactly its clique.

Step 2 extends step 1 (:func:`_two_node_domain` makes sure step 1 happened, so either test runs
alone).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from computedomain.kube import errors
from computedomain.kube.rest import Api

from . import kit

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("scenario-workloads"),
    pytest.mark.timeout(300),
]

NS = "work"
DOMAIN = "job"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, control_plane: str) -> Iterator[kit.Cluster]:
    with kit.module_cluster(
        tmp_path_factory, "workloads", racks=2, nodes_per_rack=2, control_plane=control_plane
    ) as up:
        yield up


@pytest.fixture
async def api(cluster: kit.Cluster) -> AsyncIterator[Api]:
    async with kit.api_of(cluster) as client:
        yield client


async def _deploy(api: Api, cluster: kit.Cluster, name: str, nodes: list[str]) -> list[Any]:
    with contextlib.suppress(errors.AlreadyExists):  # created by an earlier test of the module
        await kit.create_worker_deployment(
            api, NS, DOMAIN, name=name, replicas=len(nodes), nodes=nodes
        )
    pods = await kit.pods_running(
        api, cluster, NS, selector=f"app={name}", count=len(nodes), domain=DOMAIN
    )
    assert sorted(p["spec"]["nodeName"] for p in pods) == nodes
    return pods


async def _two_node_domain(api: Api, cluster: kit.Cluster) -> dict[str, Any]:
    """Step 1 (idempotent): the domain and the rack-r0 Deployment, formed."""
    with contextlib.suppress(errors.AlreadyExists):
        await kit.create_namespace(api, NS)
    with contextlib.suppress(errors.AlreadyExists):
        await kit.create_domain(api, NS, DOMAIN)
    pods = await _deploy(api, cluster, "pair", ["r0n0", "r0n1"])
    for pod in pods:
        report = await kit.eventually(
            _report(cluster, pod),
            what=f"worker {pod['metadata']['name']} reports",
        )
        assert report["channels"] == ["channel0"]
    return await kit.formed(api, cluster, NS, DOMAIN, {"r0n0", "r0n1"})


def _report(cluster: kit.Cluster, pod: dict[str, Any]) -> Any:
    async def probe() -> dict[str, Any] | None:
        return kit.worker_report(cluster, pod)

    return probe


async def test_a_two_node_workload_forms_one_clique(api: Api, cluster: kit.Cluster) -> None:
    domain = await _two_node_domain(api, cluster)
    members = kit.membership(domain)
    assert {index for _, index, _ in members.values()} == {0, 1}
    assert len({clique for clique, _, _ in members.values()}) == 1
    [clique] = await kit.cliques(api, domain["metadata"]["uid"])
    assert sorted((d["nodeName"], d["index"]) for d in clique["daemons"]) == sorted(
        (node, index) for node, (_, index, _) in members.items()
    )
    await kit.hosts_consistent(api, cluster, domain)


async def test_a_multi_rack_workload_gets_a_clique_per_rack(api: Api, cluster: kit.Cluster) -> None:
    before = kit.membership(await _two_node_domain(api, cluster))
    await _deploy(api, cluster, "rack1", ["r1n0", "r1n1"])
    domain = await kit.formed(api, cluster, NS, DOMAIN, set(cluster.nodes))
    members = kit.membership(domain)
    # Rack r0's daemons never left: their entries are unchanged.
    assert {n: members[n] for n in before} == before
    by_clique: dict[str, set[str]] = {}
    for node, (clique, _, _) in members.items():
        by_clique.setdefault(clique, set()).add(node)
    assert sorted(by_clique.values(), key=sorted) == [{"r0n0", "r0n1"}, {"r1n0", "r1n1"}]
    objects = await kit.cliques(api, domain["metadata"]["uid"])
    assert len(objects) == 2
    for obj in objects:
        daemons = obj["daemons"]
        assert sorted(d["index"] for d in daemons) == [0, 1], obj
        [clique_id] = {d["cliqueID"] for d in daemons}
        assert {d["nodeName"] for d in daemons} == by_clique[clique_id]
    await kit.hosts_consistent(api, cluster, domain)
