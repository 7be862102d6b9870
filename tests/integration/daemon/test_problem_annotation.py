"""The daemon's host problem on its own pod: :class:`~computedomain.daemon.problems.
ProblemPublisher` writes each change of the problem as the pod's problem annotation, removes it
when the problem ends, and the startup patch (``label_with_clique``) clears one a previous run
left; against the embedded API server with the real client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from computedomain.api import names
from computedomain.daemon import pod, problems
from computedomain.daemon.identity import Identity
from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.sim.apiserver import testing
from tests.integration.daemon.cluster import CRDS, Cluster, clique_id, random_cd_uid

HELD = "IMEXSessionHeldByHost: nvidia-imex cannot start (NV_ERR_IN_USE)"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    with testing.running(tmp_path_factory.mktemp("apiserver")) as running:
        running.install_crds(CRDS)
        yield running


async def test_the_problem_follows_the_keeper_and_startup_clears_it(
    server: testing.RunningServer,
) -> None:
    api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
    cluster = Cluster(api, testing.unique_name("problem"))
    await cluster.create_namespace()
    cd_uid = random_cd_uid()
    uid = await cluster.create_pod("d", "n0", "10.3.0.1", cd_uid)
    identity = Identity("n0", "10.3.0.1", uid, "d", cluster.namespace, clique_id(), cd_uid)
    current: list[str | None] = [None]
    publisher = problems.ProblemPublisher(api, identity, lambda: current[0])
    task = asyncio.create_task(publisher.run())

    async def annotation() -> Any:
        got = await api.get(resources.PODS, "d", cluster.namespace)
        return (got["metadata"].get("annotations") or {}).get(names.DAEMON_PROBLEM_ANNOTATION)

    async def becomes(value: str | None) -> None:
        async with asyncio.timeout(30):
            while await annotation() != value:  # noqa: ASYNC110 (polls another party's write)
                await asyncio.sleep(0.05)

    try:
        current[0] = HELD
        publisher.poke()
        await becomes(HELD)
        current[0] = None
        publisher.poke()
        await becomes(None)
        # A previous run of the container left one: the startup patch removes it.
        await pod.annotate_problem(api, identity, HELD)
        await pod.label_with_clique(api, identity)
        assert await annotation() is None
        got = await api.get(resources.PODS, "d", cluster.namespace)
        assert got["metadata"]["labels"][names.CLIQUE_LABEL] == identity.clique_id
    finally:
        task.cancel()
        await api.close()
