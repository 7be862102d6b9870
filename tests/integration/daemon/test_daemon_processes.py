"""``cd-imex-daemon run`` as real processes with the IMEX stand-ins, against the embedded API.

The test is the kubelet and the controller (see ``processes.py``); the daemons, the stand-ins
and the API server are real.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from computedomain.api import names
from computedomain.api.models import Status
from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain_sim.apiserver import testing
from computedomain_sim.imex import wrappers
from tests.integration.daemon.cluster import Cluster, clique_id, random_cd_uid
from tests.integration.daemon.processes import Domain, Pod
from tests.support.polling import eventually

pytestmark = pytest.mark.slow


@pytest.fixture
async def domain(server: testing.RunningServer, tmp_path: Path) -> AsyncIterator[Domain]:
    api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
    cluster = Cluster(api, testing.unique_name("drv"))
    await cluster.create_namespace()
    bindir = wrappers.ensure(tmp_path / "cache")
    result = Domain(
        cluster,
        tmp_path,
        kubeconfig=server.kubeconfig,
        bindir=bindir,
        cd_uid=random_cd_uid(),
        clique=clique_id(),
    )
    try:
        yield result
    finally:
        await result.close()
        await api.close()


def clique_name(domain: Domain) -> str:
    return names.clique_object_name(domain.cd_uid, domain.clique)


async def entries(domain: Domain) -> dict[str, Any]:
    """The clique's entries by node name ({} while the clique does not exist)."""
    api: Api = domain.cluster.api
    try:
        obj = await api.get(
            resources.COMPUTE_DOMAIN_CLIQUES, clique_name(domain), domain.cluster.namespace
        )
    except errors.NotFound:
        return {}
    return {e["nodeName"]: e for e in obj.get("daemons") or []}


def connected_to_all(pods: list[Pod]) -> bool:
    ids = {}
    for pod in pods:
        state = pod.imex()
        if state is None or state.node_id is None or not state.serving:
            return False
        ids[pod.name] = state.node_id
    for pod in pods:
        state = pod.imex()
        assert state is not None
        peers = {ids[p.name] for p in pods if p is not pod}
        # Unused slots resolve to the sentinel address: expected, never reached.
        live = {i: ip for i, ip in state.expected.items() if ip != names.HOSTS_SENTINEL_IP}
        if set(state.connected) != peers or live != {
            ids[p.name]: p.ip for p in pods if p is not pod
        }:
            return False
    return True


async def all_ready(domain: Domain, pods: list[Pod]) -> bool:
    found = await entries(domain)
    return all(
        found.get(p.node, {}).get("ipAddress") == p.ip
        and found.get(p.node, {}).get("status") == Status.READY
        for p in pods
    )


async def test_a_domain_forms_follows_ip_and_index_changes_and_deregisters(domain: Domain) -> None:
    pods = [await domain.add_pod(f"node-{i}") for i in range(4)]
    for pod in pods:
        await domain.run(pod)

    # Formation: every stand-in reaches all peers, every probe passes, every entry is Ready.
    await eventually(lambda: connected_to_all(pods), within=60)
    await eventually(lambda: all_ready(domain, pods))
    assert all([await pod.check() for pod in pods])
    found = await entries(domain)
    assert sorted(e["index"] for e in found.values()) == [0, 1, 2, 3]
    assert {e["podUID"] for e in found.values()} == {p.uid for p in pods}

    # A peer's pod is replaced (new IP, same node): the others follow by SIGUSR1, no restart.
    others = pods[:3]
    pids = {p.name: p.imex().pid for p in others}  # type: ignore[union-attr]
    old = pods[3]
    await domain.stop(old)
    await domain.cluster.delete_pod(old.name)
    new = await domain.add_pod(old.node)
    await domain.run(new)
    pods = [*others, new]
    await eventually(lambda: connected_to_all(pods), within=60)
    for pod in others:
        state = pod.imex()
        assert state is not None
        assert state.pid == pids[pod.name]
        assert state.reloads >= 1
    assert (await entries(domain))[new.node]["index"] == found[old.node]["index"]

    # The controller takes node-0's entry away and its index is taken meanwhile: the daemon
    # re-registers with another index, and its nvidia-imex restarts with the new node id.
    victim = pods[0]
    before = victim.imex()
    assert before is not None
    await take_index(domain, victim.node, ghost="ghost-node")
    await eventually(lambda: (s := victim.imex()) is not None and s.pid != before.pid)
    await domain.cluster.cleanup(
        resources.COMPUTE_DOMAIN_CLIQUES, clique_name(domain), domain.cd_uid
    )
    await eventually(lambda: connected_to_all(pods), within=60)
    after = victim.imex()
    assert after is not None
    assert after.node_id == (await entries(domain))[victim.node]["index"] != before.node_id

    # nvidia-imex killed: it is started again.
    crashed = pods[1].imex()
    assert crashed is not None
    os.kill(crashed.pid, signal.SIGKILL)
    await eventually(
        lambda: (s := pods[1].imex()) is not None and s.pid != crashed.pid and s.serving
    )

    # SIGTERM: the daemon stops nvidia-imex gracefully and removes its entry.
    leaving = pods[2]
    assert leaving.kubelet is not None
    leaving.kubelet.cancel()
    leaving.signal(signal.SIGTERM)
    assert await leaving.exited() == 0
    assert leaving.node not in await entries(domain)
    state = leaving.imex()
    assert state is not None
    assert state.stopped
    assert "Successfully removed daemon with IP" in leaving.log.read_text()


async def take_index(domain: Domain, node: str, *, ghost: str) -> None:
    """As the controller: remove ``node``'s entry and give its index to a ghost, in one CAS."""
    api = domain.cluster.api
    while True:
        obj = await api.get(
            resources.COMPUTE_DOMAIN_CLIQUES, clique_name(domain), domain.cluster.namespace
        )
        daemons = obj["daemons"]
        mine = next(d for d in daemons if d["nodeName"] == node)
        obj["daemons"] = [d for d in daemons if d["nodeName"] != node] + [
            {**mine, "nodeName": ghost, "ipAddress": f"{domain.block}.250", "podUID": "ghost"}
        ]
        try:
            await api.update(resources.COMPUTE_DOMAIN_CLIQUES, obj)
            return
        except errors.Conflict:
            continue


async def test_a_host_held_imex_session_is_reported_and_keeps_the_entry_not_ready(
    domain: Domain,
) -> None:
    marker = domain.tmp / "host-nvidia-imex-service"
    marker.touch()
    pod = await domain.add_pod("n3", SIM_IMEX_HOST_SESSION_FILE=str(marker))
    await domain.run(pod)

    async def warned() -> list[dict[str, Any]]:
        found, _ = await domain.cluster.api.list_all(
            resources.EVENTS,
            domain.cluster.namespace,
            field_selector=f"involvedObject.name={pod.name}",
        )
        return [e for e in found if e.get("reason") == "IMEXSessionHeldByHost"]

    await eventually(lambda: _nonempty(warned()), within=60)
    event = (await warned())[0]
    assert event["type"] == "Warning"
    assert event["message"] == (
        "nvidia-imex cannot start: the IMEX session is held by a host nvidia-imex.service "
        "(NV_ERR_IN_USE); stop and disable it on node n3: systemctl disable --now nvidia-imex"
    )
    assert (await entries(domain))["n3"]["status"] == Status.NOT_READY
    assert not await pod.check()
    assert "NV_ERR_IN_USE" in pod.log.read_text()  # the child's output stays in the pod log

    marker.unlink()  # the admin disables the host service: the daemon recovers by itself
    await eventually(lambda: all_ready(domain, [pod]), within=60)


async def _nonempty(found: Any) -> bool:
    return bool(await found)
