"""The API server's fault stage through the real client: each kind as a client sees it, scopes,
watch drops and window expiry under an informer, runtime control, and replay by seed."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.informer import Informer
from computedomain.kube.rest import Api
from computedomain_sim.apiserver import authn
from computedomain_sim.apiserver.server import EmbeddedApiServer
from computedomain_sim.faults import control, decide
from computedomain_sim.faults.apiserver import ApiFaults, WatchFault
from computedomain_sim.faults.schedule import FaultScheduler
from tests.support.polling import eventually

NS = "default"


@contextlib.asynccontextmanager
async def server_with(faults: ApiFaults) -> AsyncIterator[EmbeddedApiServer]:
    async with EmbeddedApiServer(stages=[faults]) as server:
        yield server


@contextlib.asynccontextmanager
async def client(server: EmbeddedApiServer, **kw: Any) -> AsyncIterator[Api]:
    api = await connect(ClientConfig(url=server.url, token=server.admin_token, qps=0, **kw))
    try:
        yield api
    finally:
        await api.close()


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_each_error_kind_as_the_client_sees_it() -> None:
    faults = ApiFaults(
        "409=1,verbs=update,resources=configmaps;"
        "429=1,retry-after=20ms,resources=secrets,verbs=get;"
        "500=1,resources=pods;"
        "503=1,retry-after=2s,resources=serviceaccounts;"
        "504=1,verbs=create,resources=configmaps;"
        "seed=1",
        enabled=False,
    )
    async with server_with(faults) as server, client(server) as api:
        cm = await api.create(resources.CONFIG_MAPS, configmap("a"), NS)
        await api.create(
            resources.SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}, NS
        )
        faults.enabled = True
        with pytest.raises(errors.Conflict) as conflict:
            await api.update(resources.CONFIG_MAPS, cm)
        assert 'Operation cannot be fulfilled on configmaps "a"' in conflict.value.message
        # 429: every verb retries after Retry-After; ours asks for 20 ms, and every retry is
        # answered with 429 again, so the client gives up after its retries.
        started = time.monotonic()
        with pytest.raises(errors.TooManyRequests) as throttled:
            await api.get(resources.SECRETS, "s", NS)
        assert throttled.value.retry_after == pytest.approx(0.02)
        assert time.monotonic() - started >= 10 * 0.02
        with pytest.raises(errors.ApiServerError) as internal:
            await api.list(resources.PODS, NS)
        assert internal.value.status == 500
        assert internal.value.retry_after is None
        async with aiohttp.ClientSession() as http:
            url = f"{server.url}/api/v1/namespaces/{NS}/serviceaccounts"
            auth = {"Authorization": f"Bearer {server.admin_token}"}
            async with http.get(url, headers=auth) as response:
                assert response.status == 503
                assert response.headers["Retry-After"] == "2"
                body = await response.json()
        assert body["reason"] == "ServiceUnavailable"
        assert body["details"]["retryAfterSeconds"] == 2
        # 504: the write landed although the client was told it timed out.
        with pytest.raises(errors.ApiServerError) as timeout:
            await api.create(resources.CONFIG_MAPS, configmap("b"), NS)
        assert timeout.value.status == 504
        faults.enabled = False
        assert (await api.get(resources.CONFIG_MAPS, "b", NS))["metadata"]["name"] == "b"
        counts = faults.counts.by_kind()
        assert counts["409"] == 1
        assert counts["429"] == 11  # the first try and ten retries
        assert counts["500"] == 1
        assert counts["503"] == 1
        assert counts["504"] == 1
        assert faults.counts.by_target()["409"] == {"update configmaps": 1}


async def test_retry_after_lets_the_client_ride_out_throttling() -> None:
    # Every verb retries a 429; only reads (idempotent) retry a 503.
    faults = ApiFaults("429=0.5,retry-after=5ms;503=0.3,retry-after=5ms,verbs=reads;seed=4")
    async with server_with(faults) as server, client(server) as api:
        for i in range(20):
            await api.create(resources.CONFIG_MAPS, configmap(f"c{i}"), NS)
            await api.get(resources.CONFIG_MAPS, f"c{i}", NS)
        listing = await api.list(resources.CONFIG_MAPS, NS)
    assert len(listing["items"]) == 20
    assert faults.counts["429"] > 5
    assert faults.counts["503"] >= 1


async def test_latency_delays_requests() -> None:
    faults = ApiFaults("latency=30ms,verbs=get,seed=2")
    async with server_with(faults) as server, client(server) as api:
        await api.create(resources.CONFIG_MAPS, configmap("slow"), NS)
        started = time.monotonic()
        await api.get(resources.CONFIG_MAPS, "slow", NS)
        assert time.monotonic() - started >= 0.03
    assert faults.counts["latency"] == 1


async def test_scope_by_user_and_agent() -> None:
    faults = ApiFaults(
        "500=1,users=system:serviceaccount:nvidia-dra:*;500=1,agents=flaky-agent*;seed=3"
    )
    async with server_with(faults) as server:
        assert server.state is not None
        assert server.state.authenticator is not None
        server.state.authenticator.add_static_token(
            "sa-token", authn.UserInfo(name="system:serviceaccount:nvidia-dra:plugin")
        )
        async with client(server) as admin:
            await admin.list(resources.CONFIG_MAPS, NS)  # admin, another agent: no fault
        sa = await connect(ClientConfig(url=server.url, token="sa-token", qps=0))
        try:
            with pytest.raises(errors.ApiServerError):
                await sa.list(resources.CONFIG_MAPS, NS)
        finally:
            await sa.close()
        async with client(server, user_agent="flaky-agent/1.0") as flaky:
            with pytest.raises(errors.ApiServerError):
                await flaky.list(resources.CONFIG_MAPS, NS)
    assert faults.counts["500"] == 2


async def run_informer_through(faults: ApiFaults, api: Api, count: int) -> Informer:
    """Create ``count`` configmaps while an informer watches; returns it once its store has
    exactly the server's objects (the faults never lose or invent an object)."""
    informer = Informer(api, resources.CONFIG_MAPS, namespace=NS, watch_timeout=(5, 10))
    task = asyncio.create_task(informer.run())
    try:
        assert await informer.wait_for_sync(10)
        for i in range(count):
            await api.create(resources.CONFIG_MAPS, configmap(f"w{i}", n=str(i)), NS)
            if i % 5 == 4:
                await asyncio.sleep(0.05)  # let a watch fault strike in between
        with faults.paused():
            expected = {
                o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in (await api.list(resources.CONFIG_MAPS, NS))["items"]
            }

            def converged() -> bool:
                cached = {
                    o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                    for o in informer.store.list()
                }
                return cached == expected

            await eventually(converged, within=30, what="the informer to converge")
        assert not task.done()
        return informer
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_dropped_watches_lose_nothing() -> None:
    faults = ApiFaults(
        "watch-drop=1,watch-after=20ms..150ms,resources=configmaps,seed=8", enabled=False
    )
    async with server_with(faults) as server, client(server) as api:
        faults.enabled = True
        await run_informer_through(faults, api, 30)
    assert faults.counts[decide.DROP] >= 1


async def test_expired_windows_force_a_relist_that_loses_nothing() -> None:
    faults = ApiFaults(
        "watch-expire=1,watch-after=20ms..100ms,resources=configmaps,seed=6", enabled=False
    )
    async with server_with(faults) as server, client(server) as api:
        faults.enabled = True
        informer = await run_informer_through(faults, api, 30)
    assert faults.counts[decide.EXPIRE] >= 1
    assert informer.relists >= 1


async def test_drop_and_expire_on_demand() -> None:
    faults = ApiFaults("seed=1")
    async with server_with(faults) as server, client(server) as api:
        informer = Informer(api, resources.CONFIG_MAPS, namespace=NS, watch_timeout=(30, 60))
        task = asyncio.create_task(informer.run())
        try:
            assert await informer.wait_for_sync(10)
            await eventually(lambda: faults.drop_watches("configmaps") == 1, what="a live watch")
            await eventually(lambda: faults.expire_watches("configmaps") == 1, what="a new watch")
            await eventually(lambda: informer.relists >= 1, what="the relist")
            await api.create(resources.CONFIG_MAPS, configmap("after"), NS)
            await eventually(
                lambda: informer.store.get(f"{NS}/after") is not None, what="the new object"
            )
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert faults.counts.by_kind() == {decide.DROP: 1, decide.EXPIRE: 1}


async def outcomes_of_a_run(seed: int) -> list[str]:
    faults = ApiFaults(f"409=0.3,500=0.2,verbs=update|get,seed={seed}")
    seen = []
    async with server_with(faults) as server, client(server) as api:
        with faults.paused():
            cm = await api.create(resources.CONFIG_MAPS, configmap("r"), NS)
        for _ in range(30):
            try:
                cm = await api.update(resources.CONFIG_MAPS, cm)
                seen.append("ok")
            except errors.ApiError as exc:
                seen.append(str(exc.status))
            try:
                await api.get(resources.CONFIG_MAPS, "r", NS)
                seen.append("ok")
            except errors.ApiError as exc:
                seen.append(str(exc.status))
    return seen


async def test_a_seed_replays_the_same_faults() -> None:
    first = await outcomes_of_a_run(31)
    assert await outcomes_of_a_run(31) == first
    assert await outcomes_of_a_run(32) != first
    assert {"ok", "409", "500"} <= set(first)


async def test_the_control_endpoint() -> None:
    faults = ApiFaults("seed=5")
    async with server_with(faults) as server, client(server) as api:
        assert server.state is not None
        assert server.state.authenticator is not None
        server.state.authenticator.add_static_token("user-token", authn.UserInfo(name="someone"))
        report = await control.put_faults(server.url, server.admin_token, "500=1,resources=pods")
        assert report["spec"] == "500=1,resources=pods,seed=5"  # the run keeps its seed
        with pytest.raises(errors.ApiServerError):
            await api.list(resources.PODS, NS)
        report = await control.set_enabled(server.url, server.admin_token, False)
        assert report["enabled"] is False
        await api.list(resources.PODS, NS)
        report = await control.get_faults(server.url, server.admin_token)
        assert report["injected"] == {"500": 1}
        assert report["by_target"] == {"500": {"list pods": 1}}
        with pytest.raises(RuntimeError, match="400: /debug/faults: rule 1: 500: '3'"):
            await control.put_faults(server.url, server.admin_token, "500=3")
        with pytest.raises(RuntimeError, match="401"):
            await control.get_faults(server.url, "wrong")
        with pytest.raises(RuntimeError, match='403: User "someone" cannot change faults'):
            await control.put_faults(server.url, "user-token", "off")
        async with aiohttp.ClientSession() as http:
            url = f"{server.url}{control.PATH}"
            auth = {"Authorization": f"Bearer {server.admin_token}"}
            async with http.delete(url, headers=auth) as response:
                assert (await response.json())["spec"] == "seed=5"
            async with http.put(url, headers=auth, json={"enabled": "yes"}) as response:
                assert response.status == 400
            async with http.post(url, headers=auth) as response:
                assert response.status == 405


async def test_watch_faults_from_the_scheduler() -> None:
    faults = ApiFaults("seed=1")
    scheduler = FaultScheduler([], seed=1)
    async with server_with(faults) as server, client(server) as api:
        informer = Informer(api, resources.CONFIG_MAPS, namespace=NS, watch_timeout=(30, 60))
        task = asyncio.create_task(informer.run())
        try:
            assert await informer.wait_for_sync(10)
            await eventually(lambda: faults.watched() == ["configmaps"], what="the watch")
            event = await scheduler.fire(WatchFault(faults, decide.EXPIRE))
            assert event is not None
            assert (event.kind, event.target) == (decide.EXPIRE, "configmaps")
            await eventually(lambda: informer.relists >= 1, what="the relist")
            faults.enabled = False
            assert WatchFault(faults, decide.DROP).targets() == []  # paused: no targets
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
