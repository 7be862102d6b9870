"""Orphan cleanup of each kind and clique pruning by domain
(docs/compatibility.md#deletion-and-orphan-cleanup)."""

from __future__ import annotations

import copy

from computedomain.api import convert, names
from computedomain.controller import rendering
from computedomain.kube import resources
from computedomain_sim.apiserver import testing
from tests.integration.controller.harness import CLIQUE, bench, entry
from tests.support.polling import eventually
from tests.unit.controller import builders

GONE_UID = "0badc0de-0000-4000-8000-00000000dead"


async def test_orphans_of_each_kind_are_removed_at_start(apiserver: testing.RunningServer) -> None:
    async with bench(apiserver) as b:
        settings = b.config().daemon
        model = convert.compute_domain(
            builders.domain(name="old", namespace=b.user, uid=GONE_UID, template="old-chan")
        )
        bodies = [
            (resources.DAEMON_SETS, rendering.daemon_set(model, settings)),
            (resources.RESOURCE_CLAIM_TEMPLATES, rendering.daemon_claim_template(model, settings)),
            (resources.RESOURCE_CLAIM_TEMPLATES, rendering.workload_claim_template(model)),
        ]
        for resource, body in bodies:
            await b.api.create(resource, copy.deepcopy(body))
        await b.add_node("orphan-node", GONE_UID)
        # An unrelated template without our labels must survive.
        foreign = copy.deepcopy(bodies[2][1])
        foreign["metadata"] = {"name": "not-ours", "namespace": b.user}
        await b.api.create(resources.RESOURCE_CLAIM_TEMPLATES, foreign)

        await b.start()
        for resource, body in bodies:
            meta = body["metadata"]

            async def gone(r: resources.Resource = resource, m: dict = meta) -> bool:
                return await b.gone(r, m["name"], m["namespace"])

            await eventually(gone, what=f"orphan {resource.kind} {meta['name']} to be removed")

        async def unlabelled() -> bool:
            node = await b.api.get(resources.NODES, "orphan-node")
            return names.COMPUTE_DOMAIN_LABEL not in (node["metadata"].get("labels") or {})

        await eventually(unlabelled, what="the orphan node label to be removed")
        assert not await b.gone(resources.RESOURCE_CLAIM_TEMPLATES, "not-ours", b.user)


async def test_label_added_after_deletion_is_removed(apiserver: testing.RunningServer) -> None:
    """A kubelet plugin racing the teardown labels a node after the domain is gone."""
    async with bench(apiserver) as b:
        await b.start()
        created = await b.create_domain("cd")
        uid = created["metadata"]["uid"]
        await b.wait_status("cd", lambda s: True, "a first status")
        await b.delete_domain_and_wait("cd")
        await b.add_node("late-node", uid)

        async def unlabelled() -> bool:
            node = await b.api.get(resources.NODES, "late-node")
            return names.COMPUTE_DOMAIN_LABEL not in (node["metadata"].get("labels") or {})

        await eventually(unlabelled, what="the late label to be removed")


async def test_clique_entry_survives_only_with_a_pod_of_its_own_domain(
    apiserver: testing.RunningServer,
) -> None:
    """Another domain's daemon on the same node does not keep a stale entry (hazard H4)."""
    async with bench(apiserver) as b:
        await b.start()
        one = await b.create_domain("one")
        two = await b.create_domain("two")
        uid_one, uid_two = one["metadata"]["uid"], two["metadata"]["uid"]
        kept = await b.daemon_pod(uid_one, "shared", name="one-shared")
        await b.daemon_pod(uid_two, "lonely", name="two-lonely")
        await b.set_clique(
            uid_one,
            [entry("shared", kept["status"]["podIP"]), entry("lonely", "10.9.9.9", index=1)],
        )
        clique = names.clique_object_name(uid_one, CLIQUE)

        async def pruned() -> list[str] | None:
            obj = await b.api.get(resources.COMPUTE_DOMAIN_CLIQUES, clique, b.driver)
            nodes = [d["nodeName"] for d in obj.get("daemons") or []]
            return nodes if nodes == ["shared"] else None

        await eventually(pruned, what="the entry of node lonely to be pruned")
        await b.wait_status(
            "one", lambda s: [n["name"] for n in s.get("nodes", [])] == ["shared"], "one node"
        )
        # The controller never creates or deletes cliques.
        cliques = await b.api.list(resources.COMPUTE_DOMAIN_CLIQUES, b.driver)
        assert [c["metadata"]["name"] for c in cliques["items"]] == [clique]
        assert uid_two != uid_one
