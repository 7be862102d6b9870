"""What ``numNodes`` means for a ComputeDomain's readiness
(docs/compatibility.md#status-aggregation), on the simulated cluster (one rack of four nodes), with
the DNS-names default:

- ``numNodes: 0`` (the default) with no node at all: Ready (the empty list is not short);
- ``numNodes: 2`` with one node joined: NotReady, and the ``Ready`` condition says it waits for
  nodes (``WaitingForNodes``, ``numNodes 2, 1 not joined``); with the second node: Ready;
- ``numNodes: 1`` with two nodes: Ready (more nodes than numNodes is fine), both listed.

``numNodes`` never gates the DaemonSet or scheduling: the daemon pod of the first node runs
while the domain waits for the second.
"""

from __future__ import annotations

from typing import Any

import pytest

from computedomain.kube import resources
from computedomain.kube.rest import Api

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


def _condition(domain: dict[str, Any]) -> dict[str, Any]:
    for condition in (domain.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return dict(condition)
    return {}


async def _domain(api: Api, ns: str, name: str) -> dict[str, Any]:
    return await api.get(resources.COMPUTE_DOMAINS, name, ns)


async def test_numnodes_zero_without_nodes_is_ready(cluster: kit.Cluster) -> None:
    async with kit.api_of(cluster) as api:
        ns = await kit.create_namespace(api, "zero")
        created = await kit.create_domain(api, ns, "empty")
        assert created["spec"].get("numNodes", 0) == 0
        domain = await kit.domain_ready(api, cluster, ns, "empty")
        assert not domain["status"].get("nodes")
        assert _condition(domain).get("status") == "True"
        await kit_extra.release(api, cluster, ns)


async def test_fewer_nodes_than_numnodes_wait_more_are_fine(cluster: kit.Cluster) -> None:
    async with kit.api_of(cluster) as api:
        ns = await kit.create_namespace(api, "counts")
        short = await kit.create_domain(api, ns, "short", num_nodes=2)
        await kit.create_domain(api, ns, "over", num_nodes=1)
        await kit.create_worker(api, ns, "short", "r0n0", name="short-0")
        await kit.create_worker(api, ns, "over", "r0n2", name="over-0")
        await kit.create_worker(api, ns, "over", "r0n3", name="over-1")

        async def waiting() -> dict[str, Any] | None:
            domain = await _domain(api, ns, "short")
            nodes = domain.get("status", {}).get("nodes") or []
            condition = _condition(domain)
            joined = [n for n in nodes if n.get("status") == "Ready"]
            if len(joined) == 1 and condition.get("reason") == "WaitingForNodes":
                return domain
            return None

        domain = await kit.eventually(
            waiting,
            what="short: one node Ready, the condition WaitingForNodes",
            explain=lambda: kit.doctor_text(cluster, ns, "short"),
        )
        assert domain["status"]["status"] == "NotReady"
        condition = _condition(domain)
        assert condition["status"] == "False"
        assert "numNodes 2, 1 not joined" in condition["message"]
        # numNodes does not gate the daemon: the first node's daemon runs meanwhile.
        daemons = await kit.daemon_pods(api, short["metadata"]["uid"])
        assert [p["spec"].get("nodeName") for p in daemons] == ["r0n0"]

        async def both_joined() -> dict[str, Any] | None:
            domain = await _domain(api, ns, "over")
            nodes = domain.get("status", {}).get("nodes") or []
            return (
                domain
                if len(nodes) == 2 and all(n.get("status") == "Ready" for n in nodes)
                else None
            )

        over = await kit.eventually(both_joined, what="over: both nodes joined and Ready")
        assert over["status"]["status"] == "Ready"
        assert sorted(n["name"] for n in over["status"]["nodes"]) == ["r0n2", "r0n3"]
        assert _condition(over)["status"] == "True"

        await kit.create_worker(api, ns, "short", "r0n1", name="short-1")
        domain = await kit.domain_ready(api, cluster, ns, "short")
        assert sorted(n["name"] for n in domain["status"]["nodes"]) == ["r0n0", "r0n1"]
        assert _condition(domain)["status"] == "True"
        await kit_extra.release(api, cluster, ns)
