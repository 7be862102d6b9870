"""Failover on the simulated cluster: upstream's ``test_cd_failover`` faults, with the outcome
checked directly (the domain re-forms, workers run, indices of nodes that never left are kept)
rather than through an MPI job.

The shared cluster (one rack of four nodes, r0n0 and r0n1 used), one domain with a Deployment of
two workers. The faults, in order (each test first makes sure the domain is formed, so any of
them runs alone):

1. force-delete (grace 0) the worker on r0n0: it is recreated and runs, the domain re-forms,
   r0n1's entry is unchanged and its worker untouched;
2. force-delete every daemon pod of the domain: the DaemonSet recreates them, the new daemons
   re-register with the indices they had (the daemons remember them in the domain directory),
   hosts files follow, and both workers keep running;
3. gracefully delete the worker on r0n1: it is recreated and runs, the domain re-forms, r0n0's
   entry is unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from computedomain.kube import errors, resources
from computedomain.kube.rest import Api

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("default-cluster"),
    pytest.mark.timeout(300),
]

NS = "failover"
DOMAIN = "job"
NODES = {"r0n0", "r0n1"}


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[kit.Cluster]:
    with kit_extra.lent(request.getfixturevalue("default_cluster"), NS) as up:
        yield up


@pytest.fixture
async def api(cluster: kit.Cluster) -> AsyncIterator[Api]:
    async with kit.api_of(cluster) as client:
        yield client


async def _workers(api: Api, cluster: kit.Cluster) -> dict[str, dict[str, Any]]:
    """node -> its Running worker pod (two of them, none terminating)."""
    pods = await kit.pods_running(api, cluster, NS, selector="app=workers", count=2, domain=DOMAIN)
    return {p["spec"]["nodeName"]: p for p in pods}


async def _formed(api: Api, cluster: kit.Cluster) -> tuple[dict[str, Any], dict[str, Any]]:
    """The domain and its workers, created if absent; wait until formed. (domain, workers)."""
    for create in (
        lambda: kit.create_namespace(api, NS),
        lambda: kit.create_domain(api, NS, DOMAIN, num_nodes=2),
        lambda: kit.create_worker_deployment(
            api, NS, DOMAIN, name="workers", replicas=2, nodes=sorted(NODES)
        ),
    ):
        with contextlib.suppress(errors.AlreadyExists):
            await create()
    workers = await _workers(api, cluster)
    assert workers.keys() == NODES
    return await kit.formed(api, cluster, NS, DOMAIN, NODES), workers


async def _replaced(
    api: Api, cluster: kit.Cluster, node: str, old_uid: str
) -> dict[str, dict[str, Any]]:
    """Wait until ``node`` runs a worker other than ``old_uid``; the workers then."""

    async def probe() -> dict[str, dict[str, Any]] | None:
        workers = await _workers(api, cluster)
        return workers if workers[node]["metadata"]["uid"] != old_uid else None

    return await kit.eventually(probe, what=f"a new worker on {node}")


def _uid(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["uid"])


async def test_force_deleted_worker_is_recreated_and_domain_reforms(
    api: Api, cluster: kit.Cluster
) -> None:
    domain, workers = await _formed(api, cluster)
    before = kit.membership(domain)
    await kit.delete_now(api, resources.PODS, workers["r0n0"]["metadata"]["name"], NS)
    after = await _replaced(api, cluster, "r0n0", _uid(workers["r0n0"]))
    assert _uid(after["r0n1"]) == _uid(workers["r0n1"])
    domain = await kit.formed(api, cluster, NS, DOMAIN, NODES)
    assert kit.membership(domain)["r0n1"] == before["r0n1"]
    await kit.hosts_consistent(api, cluster, domain)


async def test_force_deleted_daemons_come_back_and_the_domain_reforms(
    api: Api, cluster: kit.Cluster
) -> None:
    domain, workers = await _formed(api, cluster)
    before = kit.membership(domain)
    uid = domain["metadata"]["uid"]
    old = {_uid(p) for p in await kit.daemon_pods(api, uid)}
    for pod in await kit.daemon_pods(api, uid):
        await kit.delete_now(api, resources.PODS, pod["metadata"]["name"], kit.DRIVER_NAMESPACE)
    domain = await kit.formed(api, cluster, NS, DOMAIN, NODES)
    new = {e["podUID"] for e in domain["status"]["nodes"]}
    assert not new & old, "the domain still names a deleted daemon pod"
    after = kit.membership(domain)
    # Nodes that never left keep their (clique, index): the daemons remember it.
    assert {n: after[n][:2] for n in NODES} == {n: before[n][:2] for n in NODES}
    assert {n: _uid(p) for n, p in (await _workers(api, cluster)).items()} == {
        n: _uid(p) for n, p in workers.items()
    }
    await kit.hosts_consistent(api, cluster, domain)


async def test_gracefully_deleted_worker_is_recreated_and_domain_reforms(
    api: Api, cluster: kit.Cluster
) -> None:
    domain, workers = await _formed(api, cluster)
    before = kit.membership(domain)
    await api.delete(resources.PODS, workers["r0n1"]["metadata"]["name"], NS)
    after = await _replaced(api, cluster, "r0n1", _uid(workers["r0n1"]))
    assert _uid(after["r0n0"]) == _uid(workers["r0n0"])
    domain = await kit.formed(api, cluster, NS, DOMAIN, NODES)
    assert kit.membership(domain)["r0n0"] == before["r0n0"]
    await kit.hosts_consistent(api, cluster, domain)
