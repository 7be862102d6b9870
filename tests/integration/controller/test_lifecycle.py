"""A domain's whole life against the embedded API server, with the real client.

Create a domain; the controller adds its finalizer, creates the daemon template, the DaemonSet
and the workload template (each matching the contract field for field, no ownerReferences) and
writes a status; the tester plays the daemons (pods, clique entries) and the status follows;
deleting the domain removes every object, every finalizer and the node labels.
"""

from __future__ import annotations

from typing import Any

from computedomain.api import convert, names
from computedomain.controller import rendering
from computedomain.kube import resources
from computedomain_sim.apiserver import testing
from tests.integration.controller.harness import Bench, bench, entry
from tests.support.polling import eventually


def contains(stored: Any, rendered: Any, path: str = "") -> list[str]:
    """Where ``stored`` lacks or differs from a field of ``rendered`` (server defaults aside)."""
    if isinstance(rendered, dict):
        if not isinstance(stored, dict):
            return [f"{path}: {stored!r} is not an object"]
        problems = []
        for key, value in rendered.items():
            if key not in stored:
                problems.append(f"{path}.{key}: missing")
            else:
                problems.extend(contains(stored[key], value, f"{path}.{key}"))
        return problems
    if isinstance(rendered, list):
        if not isinstance(stored, list) or len(stored) != len(rendered):
            return [f"{path}: {stored!r} != {rendered!r}"]
        return [
            p
            for i, (s, r) in enumerate(zip(stored, rendered, strict=True))
            for p in contains(s, r, f"{path}[{i}]")
        ]
    return [] if stored == rendered else [f"{path}: {stored!r} != {rendered!r}"]


async def _objects(b: Bench, uid: str, template: str) -> tuple[dict[str, Any], ...]:
    name = names.daemon_object_name(uid)
    ds = await b.api.get(resources.DAEMON_SETS, name, b.driver)
    daemon_rct = await b.api.get(resources.RESOURCE_CLAIM_TEMPLATES, name, b.driver)
    workload = await b.api.get(resources.RESOURCE_CLAIM_TEMPLATES, template, b.user)
    return ds, daemon_rct, workload


async def test_full_lifecycle(apiserver: testing.RunningServer) -> None:
    async with bench(apiserver) as b:
        controller = await b.start()
        created = await b.create_domain("cd", num_nodes=2, template="chan")
        uid = created["metadata"]["uid"]
        domain = await b.wait_status("cd", lambda s: True, "a first status")
        assert domain["metadata"]["finalizers"] == [names.FINALIZER]
        status = domain["status"]
        assert status["status"] == "NotReady"
        assert "nodes" not in status
        (ready,) = status["conditions"]
        assert (ready["type"], ready["status"], ready["reason"]) == (
            "Ready",
            "False",
            "WaitingForNodes",
        )

        # The three objects, field for field against the contract.
        model = convert.compute_domain(domain)
        ds, daemon_rct, workload = await _objects(b, uid, "chan")
        settings = controller.config.daemon
        for stored, rendered in (
            (ds, rendering.daemon_set(model, settings)),
            (daemon_rct, rendering.daemon_claim_template(model, settings)),
            (workload, rendering.workload_claim_template(model)),
        ):
            assert contains(stored, rendered) == []
            assert "ownerReferences" not in stored["metadata"]
        assert workload["metadata"]["namespace"] == b.user
        assert ds["metadata"]["namespace"] == daemon_rct["metadata"]["namespace"] == b.driver

        # The tester plays two kubelet plugins and daemons.
        for node in ("node-a", "node-b"):
            await b.add_node(node, uid)
        pod_a = await b.daemon_pod(uid, "node-a", ready=False)
        pod_b = await b.daemon_pod(uid, "node-b", ready=False)
        ip_a, ip_b = pod_a["status"]["podIP"], pod_b["status"]["podIP"]
        await b.set_clique(uid, [entry("node-a", ip_a, status="NotReady")])
        domain = await b.wait_status(
            "cd", lambda s: len(s.get("nodes", [])) == 1, "node-a to be listed"
        )
        message = domain["status"]["conditions"][0]["message"]
        assert "node-a: daemon pod Running" in message
        assert "node-b: not registered yet" in message

        await b.set_clique(uid, [entry("node-a", ip_a), entry("node-b", ip_b, index=1)])
        domain = await b.wait_status("cd", lambda s: s["status"] == "Ready", "Ready")
        assert {n["name"]: n["index"] for n in domain["status"]["nodes"]} == {
            "node-a": 0,
            "node-b": 1,
        }
        assert domain["status"]["conditions"][0]["status"] == "True"
        assert controller.metrics.domains() == {"Ready": 1}

        # A daemon leaves: its entry goes (the daemon removes it), the domain is NotReady.
        await b.set_clique(uid, [entry("node-a", ip_a)])
        await b.delete_pod(pod_b["metadata"]["name"])
        domain = await b.wait_status("cd", lambda s: s["status"] == "NotReady", "NotReady")
        assert [n["name"] for n in domain["status"]["nodes"]] == ["node-a"]

        # Delete: everything goes, finalizers included, and the node labels are removed.
        await b.delete_domain_and_wait("cd")
        name = names.daemon_object_name(uid)
        assert await b.gone(resources.DAEMON_SETS, name, b.driver)
        assert await b.gone(resources.RESOURCE_CLAIM_TEMPLATES, name, b.driver)
        assert await b.gone(resources.RESOURCE_CLAIM_TEMPLATES, "chan", b.user)
        node = await b.api.get(resources.NODES, "node-a")
        assert names.COMPUTE_DOMAIN_LABEL not in (node["metadata"].get("labels") or {})
        assert controller.metrics.domains() == {}
        reasons = {e["reason"] for e in await b.events("cd")}
        assert {"Created", "Deleting"} <= reasons


async def test_happy_path_costs_five_writes(apiserver: testing.RunningServer) -> None:
    async with bench(apiserver) as b:
        await b.start()
        before = b.api.stats.snapshot()
        await b.create_domain("cd")
        await b.wait_status("cd", lambda s: s["status"] == "Ready", "Ready")

        async def settled() -> bool:
            return (
                len(b.controller.queue) == 0 and not b.controller.queue.processing
                if b.controller
                else False
            )

        await eventually(settled, what="the queue to drain")
        after = b.api.stats.snapshot()
        writes: dict[str, int] = {}
        for (verb, plural, code), n in after.items():
            extra = n - before.get((verb, plural, code), 0)
            if (
                extra
                and verb in ("create", "update", "update/status", "patch", "delete")
                and plural != "events"
            ):
                writes[f"{verb} {plural}"] = writes.get(f"{verb} {plural}", 0) + extra
        writes.pop("create computedomains", None)  # the test's own create
        assert writes == {
            "update computedomains": 1,
            "create resourceclaimtemplates": 2,
            "create daemonsets": 1,
            "update/status computedomains": 1,
        }
