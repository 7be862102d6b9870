"""Two controller replicas with leader election (the ``leader-election`` component over the
simulation's manifests; upstream's lease timings 15 s / 10 s / 2 s), as upstream's
test_cd_leader_election.bats checks them:

- exactly one leader: the lease ``computedomain-controller`` is held by one of the two Running
  controller pods (identity ``<pod name>-<uuid>``);
- the leader's pod force-deleted (grace 0, so it cannot release the lease): another replica
  takes the lease once it expires (the standby, or the Deployment's replacement when it wins
  the race), and a ComputeDomain created after that becomes Ready.
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
    pytest.mark.xdist_group("scen2-leader-election"),
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> kit.Cluster:
    shared: kit_extra.Shared = request.getfixturevalue("leader_election_cluster")
    return shared.cluster


async def _leader(api: Api) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The pod holding the lease and the other Running controller pods, once both replicas
    run and the lease is held by one of them."""
    holder = await kit_extra.lease_holder(api)
    pods = await kit_extra.component_pods(api, kit_extra.CONTROLLER_SELECTOR)
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    if holder is None or len(running) != 2:
        return None
    leaders = [p for p in running if holder.startswith(p["metadata"]["name"] + "-")]
    if len(leaders) != 1:
        return None
    return leaders[0], [p for p in running if p is not leaders[0]]


async def test_one_leader_and_a_takeover_after_it_is_killed(cluster: kit.Cluster) -> None:
    async with kit.api_of(cluster) as api:
        leader, _standby = await kit.eventually(
            lambda: _leader(api),
            what="one of two controllers leads",
        )
        old_holder = await kit_extra.lease_holder(api)
        assert old_holder is not None
        await kit.delete_now(api, resources.PODS, leader["metadata"]["name"], kit.DRIVER_NAMESPACE)

        killed = leader["metadata"]["name"] + "-"

        async def taken_over() -> str | None:
            # Usually the standby; the Deployment's replacement may win the race for the
            # expired lease instead (it tries every retry period too), which is a takeover all
            # the same. The killed pod must never hold it again.
            holder = await kit_extra.lease_holder(api)
            return holder if holder and holder != old_holder else None

        async def explain() -> str:
            pods = await kit_extra.component_pods(api, kit_extra.CONTROLLER_SELECTOR)
            phases = {p["metadata"]["name"]: (p.get("status") or {}).get("phase") for p in pods}
            return f"lease holder {await kit_extra.lease_holder(api)!r}; controller pods {phases}"

        holder = await kit.eventually(
            taken_over,
            what="another replica holds the lease",
            explain=explain,
        )
        assert not holder.startswith(killed)

        ns = await kit.create_namespace(api, "after-failover")
        await kit.create_domain(api, ns, "job", num_nodes=2)
        await kit.create_worker_deployment(api, ns, "job", name="workers", replicas=2)
        await kit.pods_running(api, cluster, ns, selector="app=workers", count=2, domain="job")
        await kit.domain_ready(api, cluster, ns, "job")
        # The Deployment replaced the killed pod; the replacement stands by.
        now_leader, others = await kit.eventually(
            lambda: _leader(api), what="two controllers again"
        )
        assert holder.startswith(now_leader["metadata"]["name"] + "-")
        assert leader["metadata"]["name"] not in [p["metadata"]["name"] for p in others]
        assert now_leader["metadata"]["name"] != leader["metadata"]["name"]
        await kit_extra.release(api, cluster, ns)
