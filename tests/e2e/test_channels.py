"""IMEX channel injection on the simulated cluster, as upstream's ``test_cd_imex_chan_inject``
checks it but from the worker's side: what the worker process sees under
``/dev/nvidia-caps-imex-channels`` and in its environment.

The shared cluster (one rack of four nodes, two of them used); each domain has its own node and
namespace:

- r0n0: ``allocationMode: Single``: channel 0 only;
- r0n1: ``allocationMode: All``: every channel, ``channel0`` .. ``channel2047``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kube.rest import Api

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("default-cluster"),
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[kit.Cluster]:
    with kit_extra.lent(request.getfixturevalue("default_cluster"), "single", "all") as up:
        yield up


CASES = {"single": ("r0n0", "Single"), "all": ("r0n1", "All")}


@pytest.fixture(scope="module")
def started(cluster: kit.Cluster) -> kit.Cluster:
    """Both domains and their workers, created at once so that they form side by side."""

    async def create() -> None:
        async with kit.api_of(cluster) as api:
            for ns, (node, mode) in CASES.items():
                await kit.create_namespace(api, ns)
                await kit.create_domain(api, ns, "job", num_nodes=1, allocation_mode=mode)
                await kit.create_worker(api, ns, "job", node, name="worker")

    asyncio.run(create())
    return cluster


@pytest.fixture
async def api(started: kit.Cluster) -> AsyncIterator[Api]:
    async with kit.api_of(started) as client:
        yield client


async def _worker_sees(api: Api, cluster: kit.Cluster, ns: str) -> dict[str, Any]:
    """The report of the namespace's worker, once it runs and its domain is Ready."""
    [pod] = await kit.pods_running(api, cluster, ns, selector="app=worker", count=1, domain="job")
    assert pod["spec"]["nodeName"] == CASES[ns][0]

    async def report() -> dict[str, Any] | None:
        return kit.worker_report(cluster, pod)

    seen = await kit.eventually(report, what=f"worker of {ns} reports")
    await kit.domain_ready(api, cluster, ns, "job")
    return seen


def _assert_is_channel_node(record: str | None, minor: int) -> None:
    assert record is not None, "channel0 is not readable in the worker"
    device = json.loads(record)
    assert device["type"] == "c"
    assert device["minor"] == minor
    assert device["path"] == f"/dev/nvidia-caps-imex-channels/channel{minor}"


def _assert_no_daemon_env(env: dict[str, str]) -> None:
    # The daemon claim's environment (its domain identity) is not the workload's business.
    assert not {"COMPUTE_DOMAIN_UUID", "CLIQUE_ID"} & env.keys()


async def test_single_injects_channel_0_only(api: Api, cluster: kit.Cluster) -> None:
    report = await _worker_sees(api, cluster, "single")
    assert report["channels"] == ["channel0"]
    _assert_is_channel_node(report["channel0"], 0)
    _assert_no_daemon_env(report["env"])


async def test_all_injects_every_channel(api: Api, cluster: kit.Cluster) -> None:
    report = await _worker_sees(api, cluster, "all")
    expected = {f"channel{i}" for i in range(names.IMEX_CHANNEL_COUNT)}
    assert set(report["channels"]) == expected
    assert {"channel222", "channel2047"} <= set(report["channels"])  # upstream's spot checks
    _assert_is_channel_node(report["channel0"], 0)
    _assert_no_daemon_env(report["env"])
