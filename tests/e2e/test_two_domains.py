"""Two ComputeDomains side by side on the simulated cluster, on disjoint nodes of one rack: both
Ready, and nothing of one shows in the other — its own clique object (though the clique ID is
the same), its own indices 0..1, node labels naming its own UID, daemon hosts files naming only
its own daemons' IPs.

The shared cluster (one rack of four nodes). The domains are both called ``job``, in namespaces
``alpha`` (r0n0, r0n1) and ``beta`` (r0n2, r0n3), so that their templates share a name too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("default-cluster"),
    pytest.mark.timeout(300),
]

PLACEMENT = {"alpha": ["r0n0", "r0n1"], "beta": ["r0n2", "r0n3"]}


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[kit.Cluster]:
    with kit_extra.lent(request.getfixturevalue("default_cluster"), *PLACEMENT) as up:
        yield up


@pytest.fixture
async def api(cluster: kit.Cluster) -> AsyncIterator[Api]:
    async with kit.api_of(cluster) as client:
        yield client


async def _start(api: Api, cluster: kit.Cluster, ns: str) -> dict[str, Any]:
    nodes = PLACEMENT[ns]
    await kit.create_namespace(api, ns)
    await kit.create_domain(api, ns, "job", num_nodes=len(nodes))
    await kit.create_worker_deployment(
        api, ns, "job", name="workers", replicas=len(nodes), nodes=nodes
    )
    pods = await kit.pods_running(
        api, cluster, ns, selector="app=workers", count=len(nodes), domain="job"
    )
    assert [p["spec"]["nodeName"] for p in pods] == nodes
    return await kit.formed(api, cluster, ns, "job", set(nodes))


async def test_two_domains_on_disjoint_nodes_do_not_cross(api: Api, cluster: kit.Cluster) -> None:
    alpha, beta = await asyncio.gather(*(_start(api, cluster, ns) for ns in PLACEMENT))
    domains = {"alpha": alpha, "beta": beta}
    assert alpha["metadata"]["uid"] != beta["metadata"]["uid"]
    clique_ids = set()
    for ns, domain in domains.items():
        uid = domain["metadata"]["uid"]
        members = kit.membership(domain)
        assert sorted(members) == PLACEMENT[ns]
        assert sorted(index for _, index, _ in members.values()) == [0, 1]
        [clique] = await kit.cliques(api, uid)
        assert sorted(d["nodeName"] for d in clique["daemons"]) == PLACEMENT[ns]
        clique_ids |= {d["cliqueID"] for d in clique["daemons"]}
        daemons = await kit.daemon_pods(api, uid)
        assert sorted(p["spec"]["nodeName"] for p in daemons) == PLACEMENT[ns]
        for node in PLACEMENT[ns]:
            labels = (await api.get(resources.NODES, node))["metadata"]["labels"]
            assert labels[names.COMPUTE_DOMAIN_LABEL] == uid
        await kit.hosts_consistent(api, cluster, domain)
    assert len(clique_ids) == 1  # one rack: the same clique ID, yet two clique objects
    ips = {ns: {ip for _, _, ip in kit.membership(d).values()} for ns, d in domains.items()}
    assert not ips["alpha"] & ips["beta"]
