"""ADDITIONAL_NAMESPACES: DaemonSets of an earlier install keep serving, and one status
aggregator sees daemons in every managed namespace (upstream's aggregators, one per namespace,
overwrote each other)."""

from __future__ import annotations

import copy

import attrs

from computedomain.api import convert, names
from computedomain.controller import rendering
from computedomain.kube import resources
from computedomain_sim.apiserver import testing
from tests.integration.controller.harness import bench, entry
from tests.support.polling import eventually


async def test_legacy_namespace_is_managed_and_aggregated(apiserver: testing.RunningServer) -> None:
    async with bench(apiserver) as b:
        old = testing.unique_name("old")
        await b.api.create(resources.NAMESPACES, {"metadata": {"name": old}})
        legacy = await b.create_domain("legacy")
        fresh = await b.create_domain("fresh")
        uid_legacy, uid_fresh = legacy["metadata"]["uid"], fresh["metadata"]["uid"]
        # An earlier install left the legacy domain's DaemonSet and template in `old`.
        config = b.config(additional_namespaces=(old,))
        old_settings = attrs.evolve(config.daemon, namespace=old)
        model = convert.compute_domain(legacy)
        for resource, body in (
            (
                resources.RESOURCE_CLAIM_TEMPLATES,
                rendering.daemon_claim_template(model, old_settings),
            ),
            (resources.DAEMON_SETS, rendering.daemon_set(model, old_settings)),
        ):
            await b.api.create(resource, copy.deepcopy(body))
        controller = await b.start(config)
        assert controller.config.managed_namespaces == (b.driver, old)

        # Daemons of the legacy domain run in `old`, those of the fresh one in the driver ns.
        b_driver = b.driver
        b.driver = old
        pod = await b.daemon_pod(uid_legacy, "legacy-node", name="legacy-daemon")
        await b.set_clique(uid_legacy, [entry("legacy-node", pod["status"]["podIP"])])
        b.driver = b_driver
        pod = await b.daemon_pod(uid_fresh, "fresh-node", name="fresh-daemon")
        await b.set_clique(uid_fresh, [entry("fresh-node", pod["status"]["podIP"])])

        for name, node in (("legacy", "legacy-node"), ("fresh", "fresh-node")):
            await b.wait_status(
                name,
                lambda s, n=node: [x["name"] for x in s.get("nodes", [])] == [n],
                f"{node} listed",
            )
        # No second DaemonSet for the legacy domain in the driver namespace.
        assert await b.gone(resources.DAEMON_SETS, names.daemon_object_name(uid_legacy), b.driver)
        assert not await b.gone(
            resources.DAEMON_SETS, names.daemon_object_name(uid_fresh), b.driver
        )

        # Deleting the legacy domain removes its objects in `old`.
        await b.delete_domain_and_wait("legacy")
        for resource in (resources.DAEMON_SETS, resources.RESOURCE_CLAIM_TEMPLATES):

            async def gone(r: resources.Resource = resource) -> bool:
                return await b.gone(r, names.daemon_object_name(uid_legacy), old)

            await eventually(gone, what=f"the legacy {resource.kind} to be deleted")
        # The fresh domain kept its node throughout.
        domain = await b.domain("fresh")
        assert [x["name"] for x in domain["status"]["nodes"]] == ["fresh-node"]
