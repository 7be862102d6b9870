"""What joining costs in requests: the first registration pass waits for the membership
watch's list instead of GETting the same object, both when the clique object does not exist
yet and when it does."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from computedomain.daemon import modes
from computedomain.daemon.identity import Identity
from computedomain.kube.client import ClientConfig, connect
from computedomain.policies import registry
from computedomain.sim.apiserver import testing
from computedomain.sim.imex.hollow import HollowDaemon
from tests.integration.daemon.cluster import CRDS, Cluster, clique_id, random_cd_uid
from tests.unit.daemon.waiting import eventually

POLICIES = registry.load()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    with testing.running(tmp_path_factory.mktemp("apiserver")) as running:
        running.install_crds(CRDS)
        yield running


async def test_joining_daemons_read_the_clique_from_the_watch_not_by_get(
    server: testing.RunningServer, tmp_path: Path
) -> None:
    api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
    cluster = Cluster(api, testing.unique_name("join"))
    await cluster.create_namespace()
    cd_uid = random_cd_uid()
    daemons: list[HollowDaemon] = []

    async def start(i: int) -> HollowDaemon:
        pod, node, ip = f"d{i}", f"n{i}", f"10.3.0.{i + 1}"
        uid = await cluster.create_pod(pod, node, ip, cd_uid)
        identity = Identity(node, ip, uid, pod, cluster.namespace, clique_id(), cd_uid)
        daemon = await HollowDaemon.connect(
            server.url,
            server.token,
            identity,
            tmp_path / pod,
            mode=modes.CLIQUES,
            limit=18,
            index_policy=POLICIES.index.get("lowest-free"),
            dns_policy=POLICIES.dns_names.get("upstream"),
            rng=random.Random(i),
        )
        daemons.append(daemon)
        await daemon.start()
        return daemon

    try:
        first = await start(0)  # finds no clique object: creates it
        await eventually(first.parts.loop.registered.is_set)
        rest = [await start(i) for i in range(1, 4)]  # find it: update it
        for daemon in rest:
            await eventually(daemon.parts.loop.registered.is_set)
        await eventually(lambda: all(d.parts.sync.last is not None for d in daemons))
        await eventually(lambda: all(len(d.parts.sync.last.names) == 4 for d in daemons))  # type: ignore[union-attr]
        for daemon in daemons:
            assert daemon.parts.registrar.stats.reads == 0
            gets = {k: n for k, n in daemon.api.stats.snapshot().items() if k[0] == "get"}
            assert gets == {}
        assert first.parts.registrar.stats.writes == 1  # the create, with its own entry
    finally:
        for daemon in daemons:
            await daemon.leave()
        await api.close()
