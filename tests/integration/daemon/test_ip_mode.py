"""Legacy IP mode (invariant P2): nodes.cfg of IPs once numNodes daemons are listed,
and one restart of nvidia-imex per change of that file."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from computedomain.daemon import modes
from computedomain.daemon.identity import Identity
from computedomain.daemon.keeper import Event, KeeperTiming
from computedomain.daemon.process import ImexProcess
from computedomain.kube.client import ClientConfig, connect
from computedomain.policies import registry
from computedomain_sim.apiserver import testing
from computedomain_sim.imex.hollow import HollowDaemon
from tests.integration.daemon.cluster import Cluster, clique_id
from tests.support.polling import eventually

CHILD = ["sh", "-c", 'trap "" USR1; exec sleep 100000']
POLICIES = registry.load()


async def spawn(on_line: Callable[[str], None]) -> ImexProcess:
    return await ImexProcess.spawn(CHILD, on_line=on_line)


async def test_ip_mode_waits_for_num_nodes_and_restarts_on_each_change(
    server: testing.RunningServer, tmp_path: Path
) -> None:
    api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
    cluster = Cluster(api, testing.unique_name("ip"))
    await cluster.create_namespace()
    cd_uid = await cluster.create_compute_domain("cd", num_nodes=3)
    daemons: list[HollowDaemon] = []

    async def start(node: int, ip: str) -> HollowDaemon:
        pod = f"daemon-{node}-{ip.rsplit('.', 1)[1]}"
        uid = await cluster.create_pod(pod, f"node-{node}", ip, cd_uid)
        identity = Identity(
            f"node-{node}", ip, uid, pod, cluster.namespace, clique_id(), cd_uid, "cd",
            cluster.namespace,
        )  # fmt: skip
        daemon = await HollowDaemon.connect(
            server.url,
            server.token,
            identity,
            tmp_path / pod,
            mode=modes.STATUS_IPS,
            limit=18,
            index_policy=POLICIES.index.get("lowest-free"),
            dns_policy=POLICIES.dns_names.get("upstream"),
            spawn=spawn,
            timing=KeeperTiming(stop_timeout=2.0),
            rng=random.Random(node),
        )
        await daemon.start()
        daemons.append(daemon)
        return daemon

    def nodes_cfg(daemon: HollowDaemon) -> list[str]:
        path = daemon.paths.nodes_config
        return path.read_text().splitlines() if path.exists() else []

    try:
        first = await start(0, "10.1.0.1")
        second = await start(1, "10.1.0.2")
        await eventually(first.parts.loop.registered.is_set)
        await eventually(second.parts.loop.registered.is_set)
        assert first.keeper is not None
        assert first.keeper.stats.starts == 0  # 2 of 3 listed: nvidia-imex not started yet
        assert nodes_cfg(first) == []
        third = await start(2, "10.1.0.3")
        trio = [first, second, third]
        ips = {"10.1.0.1", "10.1.0.2", "10.1.0.3"}
        await eventually(lambda: all(set(nodes_cfg(d)) == ips for d in trio))
        await eventually(lambda: all(d.keeper is not None and d.keeper.pid for d in trio))
        assert len({tuple(nodes_cfg(d)) for d in trio}) == 1  # the same list order everywhere

        # Node 2's pod is replaced with a new IP: the others restart once with the new file.
        await third.crash()
        await cluster.delete_pod(third.identity.pod_name)
        fourth = await start(2, "10.1.0.4")
        new_ips = {"10.1.0.1", "10.1.0.2", "10.1.0.4"}
        await eventually(lambda: all(set(nodes_cfg(d)) == new_ips for d in (first, second)))
        expected = [Event.STARTED, Event.RESTARTED_FOR_IDENTITY, Event.STARTED]
        for daemon in (first, second):
            keeper = daemon.keeper
            assert keeper is not None
            await eventually(lambda k=keeper: k.stats.history == expected)  # type: ignore[misc]
        await eventually(lambda: fourth.keeper is not None and fourth.keeper.pid is not None)
    finally:
        for daemon in daemons:
            await daemon.crash()
        await api.close()
