"""The daemon's host problem on its own pod: :class:`~computedomain.daemon.problems.
ProblemPublisher` writes each change of the problem as the pod's problem annotation, removes it
when the problem ends, and the startup patch (``label_with_clique``) clears one a previous run
left; against the embedded API server with the real client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

from computedomain.api import names
from computedomain.daemon import pod, problems
from computedomain.daemon.identity import Identity
from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain_sim.apiserver import testing
from tests.integration.daemon.cluster import Cluster, clique_id, random_cd_uid
from tests.support.clusters import crd_server

HELD = "IMEXSessionHeldByHost: nvidia-imex cannot start (NV_ERR_IN_USE)"


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


async def test_the_startup_label_rides_out_transient_server_errors_and_conflicts(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A 500, a 409 and a 500 on the startup pod patch, then the patch goes through: the daemon
    does not exit (a daemon that exits on a blip looks crash-looping; the cluster fault run
    found one that exited on an injected 409); a 404 is not retried."""
    failures = {"left": 0}  # armed once the pod exists
    codes = [500, 409, 500]

    async def flaky(request: web.BaseRequest, handler: Any) -> web.StreamResponse:
        if request.method == "PATCH" and "/pods/" in request.path and failures["left"] > 0:
            failures["left"] -= 1
            code = codes[failures["left"] % len(codes)]
            body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
            return web.json_response(body, status=code)
        response: web.StreamResponse = await handler(request)
        return response

    with crd_server(tmp_path_factory.mktemp("flaky"), stages=[flaky]) as running:
        api = await connect(ClientConfig(url=running.url, token=running.token, qps=0))
        cluster = Cluster(api, testing.unique_name("flaky"))
        await cluster.create_namespace()
        cd_uid = random_cd_uid()
        uid = await cluster.create_pod("d", "n0", "10.3.0.2", cd_uid)
        identity = Identity("n0", "10.3.0.2", uid, "d", cluster.namespace, clique_id(), cd_uid)
        failures["left"] = 3
        await pod.label_patiently(api, identity, sleep=lambda _s: asyncio.sleep(0))
        got = await api.get(resources.PODS, "d", cluster.namespace)
        assert got["metadata"]["labels"][names.CLIQUE_LABEL] == identity.clique_id
        assert failures["left"] == 0
        gone = Identity("n0", "10.3.0.2", uid, "absent", cluster.namespace, clique_id(), cd_uid)
        with pytest.raises(errors.NotFound):
            await pod.label_patiently(api, gone, sleep=lambda _s: asyncio.sleep(0))
        await api.close()
