"""Deletion (docs/compatibility.md#deletion-and-orphan-cleanup): in order, idempotent, never stuck
when a piece is missing.

Pieces are removed with the controller stopped, so each case starts its deletion with exactly
that piece missing; the controller then starts (a restart, too) and must finish the job.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain_sim.apiserver import testing
from tests.integration.controller.harness import Bench, bench
from tests.support.polling import eventually


async def _drop(api: Api, resource: resources.Resource, name: str, namespace: str) -> None:
    """Remove an object for good, finalizers first (a user with a heavy hand)."""
    obj = await api.get(resource, name, namespace)
    obj["metadata"]["finalizers"] = []
    await api.update(resource, obj)
    await api.delete(resource, name, namespace)


async def _ready_domain(b: Bench) -> str:
    created = await b.create_domain("cd", template="chan")
    await b.wait_status("cd", lambda s: True, "a first status")
    return str(created["metadata"]["uid"])


async def _everything_gone(b: Bench, uid: str) -> None:
    name = names.daemon_object_name(uid)
    for resource, obj_name, namespace in (
        (resources.COMPUTE_DOMAINS, "cd", b.user),
        (resources.RESOURCE_CLAIM_TEMPLATES, "chan", b.user),
        (resources.RESOURCE_CLAIM_TEMPLATES, name, b.driver),
        (resources.DAEMON_SETS, name, b.driver),
    ):

        async def gone(r: Any = resource, o: str = obj_name, n: str = namespace) -> bool:
            return await b.gone(r, o, n)

        await eventually(gone, what=f"{resource.kind} {namespace}/{obj_name} to be gone")


@pytest.mark.parametrize(
    "missing",
    ["daemon-set", "daemon-template", "workload-template", "all", "workload-template-terminating"],
)
async def test_deletion_with_a_piece_missing(
    apiserver: testing.RunningServer, missing: str
) -> None:
    async with bench(apiserver) as b:
        await b.start()
        uid = await _ready_domain(b)
        await b.add_node("del-node", uid)
        await b.stop()
        name = names.daemon_object_name(uid)
        if missing in ("daemon-set", "all"):
            await _drop(b.api, resources.DAEMON_SETS, name, b.driver)
        if missing in ("daemon-template", "all"):
            await _drop(b.api, resources.RESOURCE_CLAIM_TEMPLATES, name, b.driver)
        if missing in ("workload-template", "all"):
            await _drop(b.api, resources.RESOURCE_CLAIM_TEMPLATES, "chan", b.user)
        if missing == "workload-template-terminating":  # a user's delete, stuck on our finalizer
            await b.api.delete(resources.RESOURCE_CLAIM_TEMPLATES, "chan", b.user)
        await b.api.delete(resources.COMPUTE_DOMAINS, "cd", b.user)
        await b.start()
        await _everything_gone(b, uid)
        node = await b.api.get(resources.NODES, "del-node")
        assert names.COMPUTE_DOMAIN_LABEL not in (node["metadata"].get("labels") or {})


async def test_teardown_moves_on_the_deletion_events_not_on_retries(
    apiserver: testing.RunningServer,
) -> None:
    """The pass that deletes waits; the objects' deletion events (not the work queue's
    backoff) bring the pass that removes the domain's finalizer."""
    async with bench(apiserver) as b:
        controller = await b.start()
        uid = await _ready_domain(b)
        registry = controller.metrics.registry

        def retries() -> float:
            labels = {"name": "computedomain"}
            return registry.get_sample_value("workqueue_retries_total", labels) or 0.0

        before = retries()
        await b.api.delete(resources.COMPUTE_DOMAINS, "cd", b.user)
        await _everything_gone(b, uid)
        assert retries() == before


async def test_deletion_waits_for_a_foreign_finalizer_and_says_so(
    apiserver: testing.RunningServer,
) -> None:
    async with bench(apiserver) as b:
        await b.start()
        uid = await _ready_domain(b)
        name = names.daemon_object_name(uid)
        ds = await b.api.get(resources.DAEMON_SETS, name, b.driver)
        held = copy.deepcopy(ds)
        held["metadata"]["finalizers"] = [*ds["metadata"]["finalizers"], "example.com/hold"]
        await b.api.update(resources.DAEMON_SETS, held)
        await b.api.delete(resources.COMPUTE_DOMAINS, "cd", b.user)

        async def waiting_event() -> list[dict[str, Any]]:
            return [e for e in await b.events("cd") if e["reason"] == "DeletionWaiting"]

        (event,) = await eventually(waiting_event, what="a DeletionWaiting event")
        assert f"DaemonSet {b.driver}/{name} (finalizers: example.com/hold)" in event["message"]
        assert not await b.gone(resources.COMPUTE_DOMAINS, "cd", b.user)
        # Everything else is done already: templates gone, our finalizer off the DaemonSet.
        assert await b.gone(resources.RESOURCE_CLAIM_TEMPLATES, "chan", b.user)
        ds = await b.api.get(resources.DAEMON_SETS, name, b.driver)
        assert ds["metadata"]["finalizers"] == ["example.com/hold"]
        # The holder lets go; the deletion completes.
        ds["metadata"]["finalizers"] = []
        await b.api.update(resources.DAEMON_SETS, ds)
        await _everything_gone(b, uid)


async def test_template_deleted_by_hand_is_recreated(apiserver: testing.RunningServer) -> None:
    """A user deletes the workload template while the domain lives: it is re-created."""
    async with bench(apiserver) as b:
        await b.start()
        await _ready_domain(b)
        old = await b.api.get(resources.RESOURCE_CLAIM_TEMPLATES, "chan", b.user)
        await b.api.delete(resources.RESOURCE_CLAIM_TEMPLATES, "chan", b.user)

        async def recreated() -> bool:
            try:
                new = await b.api.get(resources.RESOURCE_CLAIM_TEMPLATES, "chan", b.user)
            except Exception:
                return False
            return new["metadata"]["uid"] != old["metadata"]["uid"] and not new["metadata"].get(
                "deletionTimestamp"
            )

        await eventually(recreated, what="the workload template to be re-created")
        reasons = [e["reason"] for e in await b.events("cd")]
        assert "ObjectDeleted" in reasons
