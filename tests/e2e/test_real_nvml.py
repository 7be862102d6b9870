"""A domain forms on the real NVML backend: ``sim up --nvml-backend real`` starts every node's
plugin with its production backend (pynvml) against the mock NVML library under the node's
driver root (docs/nvml-mock.md), so each node learns its rack's clique through the C ABI.

Two racks of one node: the domain's members must carry their own rack's clique ID, and every
plugin process must have the mock library mapped (it loaded it, rather than the fake backend).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from computedomain_sim import nvmlmock
from computedomain_sim.cluster.topology import Topology

from . import kit
from .conftest import processes_mentioning

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("real-nvml"),
    pytest.mark.timeout(300),
]

NS = "real-nvml"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kit.Cluster]:
    with kit.module_cluster(
        tmp_path_factory, "real-nvml", racks=2, nodes_per_rack=1, extra_args=["--nvml-backend=real"]
    ) as up:
        yield up


def _plugin_pids(cluster: kit.Cluster) -> list[int]:
    return [
        pid
        for pid in processes_mentioning(str(cluster.state_dir))
        if b"cd-kubelet-plugin" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]


def test_a_domain_forms_with_each_rack_clique_read_through_the_c_abi(
    cluster: kit.Cluster,
) -> None:
    async def scenario() -> kit.Obj:
        async with kit.api_of(cluster) as api:
            await kit.create_namespace(api, NS)
            await kit.create_domain(api, NS, "job", num_nodes=len(cluster.nodes))
            for node in cluster.nodes:
                await kit.create_worker(api, NS, "job", node, name=f"worker-{node}")
            domain = await kit.formed(api, cluster, NS, "job", set(cluster.nodes))
            await kit.pods_running(
                api, cluster, NS, selector="app in (worker-r0n0,worker-r1n0)", count=2
            )
            return domain

    domain = asyncio.run(scenario())
    racks = Topology(seed=str(cluster.state_dir.resolve()))
    assert {node: clique for node, (clique, _, _) in kit.membership(domain).items()} == {
        "r0n0": racks.clique(0),
        "r1n0": racks.clique(1),
    }
    plugins = _plugin_pids(cluster)
    assert len(plugins) == len(cluster.nodes)
    for pid in plugins:
        assert str(nvmlmock.LIBRARY) in Path(f"/proc/{pid}/maps").read_text()
        assert b"NVML_BACKEND=fake" not in Path(f"/proc/{pid}/environ").read_bytes()
