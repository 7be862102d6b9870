"""Fixtures for the doctor's integration tests: worlds of objects created on the embedded API
server through the real client.

:func:`materialise` creates every object of a :class:`~tests.unit.cli.doctor_objects.World`
(the same builders the unit tables use) on the server, status included, in dependency order:
the domains first, so their server-assigned UIDs can replace the placeholders in every other
object (labels, names, opaque configs); the pods before the events about them, for the same
reason. An object the world shows as terminating (``deletionTimestamp``) is created with a
finalizer and then deleted, as a real one gets there. The fixture deletes what a test created,
so the cluster-scoped objects (nodes, slices) of one test never reach the next.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest

from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.resources import Resource
from computedomain.kube.rest import Api
from computedomain_sim.apiserver import testing
from tests.support.clusters import CRDS
from tests.unit.cli import doctor_objects as o

# World field -> resource, in creation order (domains first, events last).
ORDER: tuple[tuple[str, Resource], ...] = (
    ("nodes", resources.NODES),
    ("daemon_sets", resources.DAEMON_SETS),
    ("cliques", resources.COMPUTE_DOMAIN_CLIQUES),
    ("claims", resources.RESOURCE_CLAIMS),
    ("slices", resources.RESOURCE_SLICES),
    ("daemon_pods", resources.PODS),
    ("plugin_pods", resources.PODS),
    ("workload_pods", resources.PODS),
)
HOLD: str = "doctor.test/hold"  # the finalizer that keeps a deleted object terminating


@pytest.fixture(scope="module")
def crds(apiserver: testing.RunningServer) -> None:
    apiserver.install_crds([CRDS])


@attrs.define
class Cluster:
    """The server, an Api on it, and what a test created there (for cleanup)."""

    server: testing.RunningServer
    api: Api
    created: list[tuple[Resource, str, str | None]] = attrs.field(factory=list)
    uids: dict[str, str] = attrs.field(factory=dict)  # placeholder UID -> server UID

    def config(self) -> ClientConfig:
        return ClientConfig(url=self.server.url, token=self.server.token, qps=0)


@pytest.fixture
async def cluster(apiserver: testing.RunningServer, crds: None) -> AsyncIterator[Cluster]:
    api = await connect(ClientConfig(url=apiserver.url, token=apiserver.token, qps=0))
    found = Cluster(apiserver, api)
    try:
        for ns in (o.NS, o.DRIVER_NS):
            with contextlib.suppress(errors.AlreadyExists):
                await api.create(resources.NAMESPACES, {"metadata": {"name": ns}})
        yield found
    finally:
        for resource, name, namespace in reversed(found.created):
            with contextlib.suppress(errors.NotFound):
                patch = {"metadata": {"finalizers": None}}
                await api.patch(resource, name, patch, namespace=namespace)
                await api.delete(resource, name, namespace, grace_period_seconds=0)
        await api.close()


def _replace(objects: list[dict[str, Any]], uids: dict[str, str]) -> list[dict[str, Any]]:
    text = json.dumps(objects)
    for old, new in uids.items():
        text = text.replace(old, new)
    loaded: list[dict[str, Any]] = json.loads(text)
    return loaded


async def _create(cluster: Cluster, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in obj.items() if k != "status"}
    terminating = "deletionTimestamp" in obj["metadata"]
    body["metadata"] = {
        k: v for k, v in obj["metadata"].items() if k not in ("uid", "deletionTimestamp")
    }
    if terminating:
        body["metadata"]["finalizers"] = [HOLD]
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    created = await cluster.api.create(resource, body, namespace)
    cluster.created.append((resource, created["metadata"]["name"], namespace))
    old_uid = obj["metadata"].get("uid")
    if old_uid:
        cluster.uids[old_uid] = created["metadata"]["uid"]
    if "status" in obj:
        created["status"] = obj["status"]
        created = await cluster.api.update_status(resource, created)
    if terminating:
        await cluster.api.delete(resource, created["metadata"]["name"], namespace)
    return created


async def materialise(cluster: Cluster, world: o.World) -> None:
    """Create ``world`` on the cluster (see the module docstring)."""
    names_seen = set()
    for cd in world.all_domains + world.domains:
        key = (cd["metadata"]["namespace"], cd["metadata"]["name"])
        if key not in names_seen:
            names_seen.add(key)
            await _create(cluster, resources.COMPUTE_DOMAINS, cd)
    for field, resource in ORDER:
        for obj in _replace(getattr(world, field), cluster.uids):
            await _create(cluster, resource, obj)
    for event in _replace(world.events, cluster.uids):
        await _create(cluster, resources.EVENTS, event)
