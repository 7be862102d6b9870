"""Readiness flips as JSON patches, against the embedded API server with the real client: a flip
planned from an object a peer has written since lands without a conflict; a removal that
shifts the list, or a role without ``patch``, falls back to the compare-and-swap; nothing is
lost either way."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import pytest

from computedomain.api.models import Status
from computedomain.daemon import membership
from computedomain.daemon.identity import Identity
from computedomain.daemon.membership import Planned
from computedomain.daemon.registration import MAX_STALE_PATCHES, Registrar
from computedomain.daemon.shapes import CliqueShape
from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain.policies import builtins
from computedomain_sim.apiserver import testing
from tests.integration.controller.test_rbac import RBAC
from tests.integration.daemon.cluster import Cluster, clique_id, random_cd_uid
from tests.support.clusters import admin_api, crd_server

POLICY = builtins.LowestFreeIndex()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    with crd_server(tmp_path_factory.mktemp("apiserver"), rbac=True) as running:
        yield running


@pytest.fixture
async def api(server: testing.RunningServer) -> AsyncIterator[Api]:
    """A client with the server's admin token."""
    async with admin_api(server) as client:
        yield client


class Node:
    """One daemon's registrar, planning from whatever object the test hands it. Its pod exists
    (the clique is owned by the daemon pods: without them it would be garbage-collected)."""

    def __init__(self, api: Api, identity: Identity) -> None:
        self.identity = identity
        self.shape = CliqueShape(self.identity, 18)
        self.seen: dict[str, Any] | None = None
        self.registrar = Registrar(
            api, self.shape, POLICY, cached=lambda: self.seen, rng=random.Random(0)
        )

    @classmethod
    async def start(cls, api: Api, cluster: Cluster, cd_uid: str, n: int) -> Node:
        node, pod, ip = f"n{n}", f"daemon-{n}", f"10.3.0.{n}"
        uid = await cluster.create_pod(pod, node, ip, cd_uid)
        return cls(api, Identity(node, ip, uid, pod, cluster.namespace, clique_id(), cd_uid))

    async def join(self) -> dict[str, Any]:
        """Join, planning from ``seen`` if set (else a fresh read)."""
        op = membership.Register(
            self.identity.node_name, self.identity.pod_ip, clique_id(), self.identity.pod_uid
        )
        outcome = await self.registrar.apply(op)
        assert outcome.obj is not None
        return outcome.obj

    async def flip(self, status: Status, seen: dict[str, Any]) -> dict[str, Any]:
        self.seen = seen
        op = membership.SetStatus(self.identity.node_name, status, self.identity.pod_uid)
        outcome = await self.registrar.apply(op)
        assert outcome.obj is not None
        return outcome.obj


def statuses(shape: CliqueShape, obj: dict[str, Any]) -> dict[str, tuple[int, Status | None]]:
    return {e.node_name: (e.index, e.status) for e in shape.entries(obj)}


async def _cluster(api: Api) -> Cluster:
    cluster = Cluster(api, testing.unique_name("patch"))
    await cluster.create_namespace()
    return cluster


async def test_a_flip_from_an_object_a_peer_wrote_since_needs_no_conflict(api: Api) -> None:
    cluster, cd_uid = await _cluster(api), random_cd_uid()
    a = await Node.start(api, cluster, cd_uid, 1)
    b = await Node.start(api, cluster, cd_uid, 2)
    await a.join()
    both = await b.join()
    await b.flip(Status.READY, both)  # ``both`` is now stale
    result = await a.flip(Status.READY, both)
    assert statuses(a.shape, result) == {
        "n1": (0, Status.READY),
        "n2": (1, Status.READY),
    }
    assert (a.registrar.stats.writes, a.registrar.stats.conflicts) == (2, 0)  # join, flip
    # Readiness goes back the same way, and a flip to the status it has writes nothing.
    result = await a.flip(Status.NOT_READY, result)
    assert statuses(a.shape, result)["n1"] == (0, Status.NOT_READY)
    await a.flip(Status.NOT_READY, result)
    assert a.registrar.stats.writes == 3
    live = await api.get(resources.COMPUTE_DOMAIN_CLIQUES, a.shape.name, cluster.namespace)
    assert statuses(a.shape, live) == statuses(a.shape, result)


async def test_a_removal_that_shifts_the_list_is_planned_again_on_a_fresh_read(api: Api) -> None:
    cluster, cd_uid = await _cluster(api), random_cd_uid()
    nodes = [await Node.start(api, cluster, cd_uid, n) for n in (1, 2, 3)]
    for node in nodes:
        seen = await node.join()
    # The controller's cleanup removes the first entry: the third moves up one place.
    cleaned = dict(seen, daemons=seen["daemons"][1:])
    await api.update(resources.COMPUTE_DOMAIN_CLIQUES, cleaned)
    last = nodes[2]
    result = await last.flip(Status.READY, seen)
    assert statuses(last.shape, result) == {
        "n2": (1, Status.NOT_READY),
        "n3": (2, Status.READY),
    }
    stats = last.registrar.stats
    assert stats.stale_patches == 1  # the test saw another node at the old position
    assert (stats.conflicts, stats.writes) == (0, 3)  # join, the failed patch, the patch again


async def test_a_join_from_an_object_a_peer_flipped_since_needs_no_conflict(api: Api) -> None:
    cluster, cd_uid = await _cluster(api), random_cd_uid()
    a = await Node.start(api, cluster, cd_uid, 1)
    b = await Node.start(api, cluster, cd_uid, 2)
    seen = await a.join()
    await a.flip(Status.READY, seen)  # ``seen`` is now stale
    b.seen = seen
    result = await b.join()
    assert statuses(b.shape, result) == {"n1": (0, Status.READY), "n2": (1, Status.NOT_READY)}
    assert (b.registrar.stats.writes, b.registrar.stats.conflicts) == (1, 0)
    owners = [r["uid"] for r in result["metadata"]["ownerReferences"]]
    assert owners == [a.identity.pod_uid, b.identity.pod_uid]


async def test_a_join_from_an_object_a_peer_joined_since_takes_the_next_index(api: Api) -> None:
    cluster, cd_uid = await _cluster(api), random_cd_uid()
    a, b, c = [await Node.start(api, cluster, cd_uid, n) for n in (1, 2, 3)]
    seen = await a.join()
    await b.join()  # takes index 1, which ``seen`` shows free
    c.seen = seen
    result = await c.join()
    assert statuses(c.shape, result) == {
        "n1": (0, Status.NOT_READY),
        "n2": (1, Status.NOT_READY),
        "n3": (2, Status.NOT_READY),
    }
    assert c.registrar.stats.stale_patches == 1


async def test_without_patch_permission_the_flip_is_written_whole(
    server: testing.RunningServer, api: Api
) -> None:
    admin = api
    cluster, cd_uid = await _cluster(admin), random_cd_uid()
    namespace = cluster.namespace
    rules = [
        {
            "apiGroups": ["resource.nvidia.com"],
            "resources": ["computedomaincliques"],
            "verbs": ["get", "list", "watch", "create", "update"],
        }
    ]
    account = await admin.create(
        resources.SERVICE_ACCOUNTS, {"metadata": {"name": "older", "namespace": namespace}}
    )
    await admin.create(
        resources.ROLES, {"metadata": {"name": "older", "namespace": namespace}, "rules": rules}
    )
    await admin.create(
        resources.ROLE_BINDINGS,
        {
            "metadata": {"name": "older", "namespace": namespace},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "older"},
            "subjects": [{"kind": "ServiceAccount", "name": "older", "namespace": namespace}],
        },
    )
    state = server.server.state
    assert state is not None
    assert state.authenticator is not None
    token, _ = state.authenticator.issue_service_account_token(
        namespace, "older", account["metadata"]["uid"]
    )
    older = await connect(ClientConfig(url=server.url, token=str(token), qps=0))
    try:
        node = await Node.start(older, Cluster(admin, namespace), cd_uid, 1)
        joined = await node.join()
        result = await node.flip(Status.READY, joined)
        assert statuses(node.shape, result) == {"n1": (0, Status.READY)}
        result = await node.flip(Status.NOT_READY, result)  # no second patch is tried
        assert statuses(node.shape, result) == {"n1": (0, Status.NOT_READY)}
        assert node.registrar.stats.writes == 4  # refused patch, then updates: join, two flips
    finally:
        await older.close()


class _RefusedPatches(CliqueShape):
    """A shape whose patches always fail a test: a server that keeps answering 422."""

    def patch_for(self, obj: Mapping[str, Any], planned: Planned) -> list[dict[str, Any]] | None:
        ops = super().patch_for(obj, planned)
        never = {"op": "test", "path": "/metadata/name", "value": "never this name"}
        return None if ops is None else [never, *ops]


async def test_a_patch_refused_again_and_again_is_written_whole(api: Api) -> None:
    cluster, cd_uid = await _cluster(api), random_cd_uid()
    node = await Node.start(api, cluster, cd_uid, 1)
    await node.join()  # creates the clique (a create, no patch)
    peer = await Node.start(api, cluster, cd_uid, 2)
    peer.shape = _RefusedPatches(peer.identity, 18)
    peer.registrar.shape = peer.shape
    result = await peer.join()
    assert statuses(peer.shape, result) == {
        "n1": (0, Status.NOT_READY),
        "n2": (1, Status.NOT_READY),
    }
    stats = peer.registrar.stats
    assert (stats.stale_patches, stats.conflicts, stats.writes) == (MAX_STALE_PATCHES, 0, 4)
