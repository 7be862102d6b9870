"""Deleting a ComputeDomain while its workers run, on the simulated cluster: the domain goes
without waiting for the workload, everything it made goes with it, and once the workload goes
too nothing is left anywhere — no object, node label, CDI spec, checkpoint entry or domain
directory.

The shared cluster (one rack of four nodes, r0n0 and r0n1 used), one domain with a Deployment of
two workers.
"""

from __future__ import annotations

import json
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

NS = "teardown"
DOMAIN = "job"
NODES = {"r0n0", "r0n1"}
KINDS = (
    resources.DAEMON_SETS,
    resources.PODS,
    resources.RESOURCE_CLAIM_TEMPLATES,
    resources.RESOURCE_CLAIMS,
    resources.COMPUTE_DOMAIN_CLIQUES,
)


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[kit.Cluster]:
    with kit_extra.lent(request.getfixturevalue("default_cluster"), NS) as up:
        yield up


@pytest.fixture
async def api(cluster: kit.Cluster) -> AsyncIterator[Api]:
    async with kit.api_of(cluster) as client:
        yield client


async def mentioning(api: Api, uid: str) -> list[str]:
    """``Kind ns/name`` of every object of :data:`KINDS` (any namespace) that mentions ``uid``."""
    found = []
    for resource in KINDS:
        items, _ = await api.list_all(resource)
        found += [
            f"{resource.kind} {o['metadata'].get('namespace')}/{o['metadata']['name']}"
            for o in items
            if uid in json.dumps(o)
        ]
    return found


async def labelled_nodes(api: Api) -> list[str]:
    """Nodes that carry a ComputeDomain label."""
    nodes, _ = await api.list_all(resources.NODES)
    return [
        n["metadata"]["name"]
        for n in nodes
        if names.COMPUTE_DOMAIN_LABEL in (n["metadata"].get("labels") or {})
    ]


async def in_namespace(api: Api) -> list[str]:
    """Pods, claims and claim templates still in the workload's namespace."""
    left = []
    for resource in (resources.PODS, resources.RESOURCE_CLAIMS, resources.RESOURCE_CLAIM_TEMPLATES):
        items, _ = await api.list_all(resource, NS)
        left += [f"{resource.kind} {o['metadata']['name']}" for o in items]
    return left


async def test_deleting_a_domain_with_running_workers_leaves_nothing(
    api: Api, cluster: kit.Cluster
) -> None:
    await kit.create_namespace(api, NS)
    domain = await kit.create_domain(api, NS, DOMAIN, num_nodes=2)
    uid = domain["metadata"]["uid"]
    await kit.create_worker_deployment(
        api, NS, DOMAIN, name="workers", replicas=2, nodes=sorted(NODES)
    )
    workers = await kit.pods_running(
        api, cluster, NS, selector="app=workers", count=2, domain=DOMAIN
    )
    await kit.formed(api, cluster, NS, DOMAIN, NODES)
    for node in NODES:
        assert not cluster.leftovers(node).empty  # what the checks below must see go

    # The domain goes while its workers run: its teardown does not wait for the workload.
    await api.delete(resources.COMPUTE_DOMAINS, DOMAIN, NS)
    await kit.gone(api, resources.COMPUTE_DOMAINS, DOMAIN, NS)
    assert await labelled_nodes(api) == []
    still = await kit.pods_running(api, cluster, NS, selector="app=workers", count=2)
    assert {p["metadata"]["uid"] for p in still} == {p["metadata"]["uid"] for p in workers}

    async def only_workload_left() -> bool:
        # The workers' own claims (generated from the template before it went) remain.
        return all(
            thing.startswith("ResourceClaim teardown/") for thing in await mentioning(api, uid)
        )

    await kit.eventually(
        only_workload_left,
        what="the domain's DaemonSet, daemon pods, templates, daemon claims and cliques gone",
        explain=lambda: _show(mentioning(api, uid)),
    )

    # Then the workload goes, and with it the last trace of the domain.
    await api.delete(resources.DEPLOYMENTS, "workers", NS)

    async def nothing_left() -> bool:
        return not (
            await mentioning(api, uid)
            or await in_namespace(api)
            or any(not cluster.leftovers(n).empty for n in NODES)
        )

    async def explain() -> str:
        leftovers = {n: cluster.leftovers(n) for n in sorted(NODES)}
        objects = await mentioning(api, uid) + await in_namespace(api)
        return f"objects: {objects}\nper node: {leftovers}"

    await kit.eventually(
        nothing_left,
        what="nothing of the domain left",
        explain=explain,
    )
    assert await labelled_nodes(api) == []


async def _show(pending: Any) -> str:
    return f"still there: {await pending}"
