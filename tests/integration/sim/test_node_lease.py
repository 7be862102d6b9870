"""A simulated node heartbeats as a real kubelet does: its Lease in ``kube-node-lease`` is
renewed every beat (owned by the Node), and the Node's status is posted only when it changes or
when the status report period has passed, not on every beat."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.resources import LEASES, NODES
from computedomain.kube.rest import Api
from computedomain.runtime.clock import ManualClock
from computedomain_sim.apiserver import testing
from computedomain_sim.kubelet.node import LEASE_NAMESPACE, NodeAgent, NodeConfig
from computedomain_sim.kubelet.paths import NodePaths
from tests.support.polling import eventually


@pytest.fixture
async def api(apiserver: testing.RunningServer) -> AsyncIterator[Api]:
    client = await connect(ClientConfig(url=apiserver.url, token=apiserver.token, qps=0))
    try:
        yield client
    finally:
        await client.close()


async def settle(clock: ManualClock, seconds: float) -> None:
    """Advance virtual time by ``seconds`` and let the woken agent finish its API calls (it is
    done once it sleeps again)."""
    clock.advance(seconds)
    await asyncio.sleep(0)
    await eventually(lambda: clock.sleepers == 1, what="the agent asleep again")


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def test_the_lease_is_renewed_each_beat_and_the_status_only_every_report(
    api: Api, tmp_path: Path
) -> None:
    name = testing.unique_name("node")
    clock = ManualClock()
    agent = NodeAgent(
        api,
        NodeConfig(name=name, address="127.0.0.9"),
        NodePaths(tmp_path / name),
        heartbeat=10.0,
        status_report=60.0,
        clock=clock,
    )
    await agent.register()
    node = await api.get(NODES, name)
    lease = await api.get(LEASES, name, LEASE_NAMESPACE)
    assert lease["spec"]["holderIdentity"] == name
    assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    task = asyncio.create_task(agent.run())
    try:
        await settle(clock, 0)
        renewals = [lease["spec"]["renewTime"]]
        for _ in range(5):  # 50 s: five renewals, the Node untouched
            await settle(clock, 10.0)
            renewals.append((await api.get(LEASES, name, LEASE_NAMESPACE))["spec"]["renewTime"])
        assert len(set(renewals)) == 6
        assert rv(await api.get(NODES, name)) == rv(node)
        await settle(clock, 10.0)  # 60 s: the status report is due
        assert rv(await api.get(NODES, name)) > rv(node)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await api.delete(NODES, name)


async def test_a_readiness_change_is_posted_at_once(api: Api, tmp_path: Path) -> None:
    name = testing.unique_name("node")
    agent = NodeAgent(api, NodeConfig(name=name, address="127.0.0.9"), NodePaths(tmp_path / name))
    await agent.register()
    agent.ready = False
    await agent.beat()
    node = await api.get(NODES, name)
    (ready,) = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert ready["status"] == "False"
    await api.delete(NODES, name)
