"""Pod replacement on one node while the old daemon still runs (hazard H7): the new pod takes
the entry over, keeps its index, and the old daemon stops writing instead of fighting back."""

from __future__ import annotations

import random
from pathlib import Path

from computedomain.daemon import modes
from computedomain.daemon.identity import Identity
from computedomain.kube.client import ClientConfig, connect
from computedomain.policies import registry
from computedomain_sim.apiserver import testing
from computedomain_sim.imex.hollow import HollowDaemon
from tests.integration.daemon.cluster import Cluster, clique_id, random_cd_uid
from tests.support.polling import eventually

POLICIES = registry.load()


async def test_the_replacement_pod_wins_without_ping_pong(
    server: testing.RunningServer, tmp_path: Path
) -> None:
    api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
    cluster = Cluster(api, testing.unique_name("repl"))
    await cluster.create_namespace()
    cd_uid = random_cd_uid()
    daemons: list[HollowDaemon] = []

    async def start(pod: str, node: str, ip: str) -> HollowDaemon:
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
            rng=random.Random(len(daemons)),
        )
        daemons.append(daemon)
        await daemon.start()
        return daemon

    def entry_of(daemon: HollowDaemon, node: str) -> tuple[str, str | None, int] | None:
        obj = daemon.parts.loop.cache.get()
        for e in daemon.parts.shape.entries(obj) if obj else ():
            if e.node_name == node:
                return e.ip_address, e.pod_uid, e.index
        return None

    try:
        peer = await start("peer", "n0", "10.2.0.1")
        old = await start("old", "n1", "10.2.0.2")
        await eventually(lambda: entry_of(peer, "n1") is not None)
        index = entry_of(peer, "n1")[2]  # type: ignore[index]
        new = await start("new", "n1", "10.2.0.3")  # the old daemon is still running
        wanted = ("10.2.0.3", new.identity.pod_uid, index)
        await eventually(lambda: entry_of(peer, "n1") == wanted)
        await eventually(lambda: old.parts.loop.next_op(old.parts.loop.cache.get()) is None)
        writes = old.parts.registrar.stats.writes
        assert await old.parts.loop.step() is None  # one more pass: nothing to write
        assert old.parts.loop.next_op(new.parts.loop.cache.get()) is None
        assert old.parts.registrar.stats.writes == writes
        assert entry_of(peer, "n1") == wanted
        # The old daemon leaves gracefully: its removal (by node and pod UID) spares the new entry.
        assert await old.leave()
        daemons.remove(old)
        await eventually(lambda: entry_of(peer, "n1") == wanted)
        assert entry_of(new, "n1") == wanted
    finally:
        for daemon in daemons:
            await daemon.crash()
        await api.close()
