"""A node that still carries another ComputeDomain's label, on the simulated cluster: the new
domain's worker waits, the reason is on the pod as a Warning event naming the other domain,
and the worker starts once the other domain is deleted (its teardown removes the label).

The shared cluster (one rack of four nodes, r0n0 used). The other domain has no workload; its
label is put on the node by hand, as a node left labelled looks.
"""

from __future__ import annotations

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

NS = "taken"
NODE = "r0n0"


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[kit.Cluster]:
    with kit_extra.lent(request.getfixturevalue("default_cluster"), NS) as up:
        yield up


@pytest.fixture
async def api(cluster: kit.Cluster) -> AsyncIterator[Api]:
    async with kit.api_of(cluster) as client:
        yield client


async def test_a_worker_waits_for_another_domains_node_then_starts(
    api: Api, cluster: kit.Cluster
) -> None:
    await kit.create_namespace(api, NS)
    other = await kit.create_domain(api, NS, "other")
    other_uid = other["metadata"]["uid"]
    patch = {"metadata": {"labels": {names.COMPUTE_DOMAIN_LABEL: other_uid}}}
    await api.patch(resources.NODES, NODE, patch)
    await kit.create_domain(api, NS, "job", num_nodes=1)
    await kit.create_worker(api, NS, "job", NODE, name="worker")

    expected = f"Node {NODE} belongs to ComputeDomain {NS}/other ({other_uid})"

    async def waiting_event() -> dict[str, Any] | None:
        for event in await kit.events_about(api, NS, "Pod", "worker"):
            if event.get("type") == "Warning" and expected in event.get("message", ""):
                return event
        return None

    event = await kit.eventually(
        waiting_event,
        what=f"a Warning on the worker saying {expected!r}",
        explain=lambda: kit.doctor_text(cluster, NS, "job"),
    )
    assert event["reason"] == "ComputeDomainNotReady"
    pod = await api.get(resources.PODS, "worker", NS)
    assert pod["status"].get("phase") == "Pending"
    assert pod["spec"].get("nodeName") == NODE  # scheduled: it waits in prepare, on the node

    await api.delete(resources.COMPUTE_DOMAINS, "other", NS)
    await kit.gone(api, resources.COMPUTE_DOMAINS, "other", NS)
    [running] = await kit.pods_running(api, cluster, NS, selector="app=worker", count=1)
    assert running["metadata"]["uid"] == pod["metadata"]["uid"]
    domain = await kit.formed(api, cluster, NS, "job", {NODE})
    labels = (await api.get(resources.NODES, NODE))["metadata"]["labels"]
    assert labels[names.COMPUTE_DOMAIN_LABEL] == domain["metadata"]["uid"]
