"""What :class:`Api` puts on the wire and how it reacts to answers, seen by a scripted HTTP peer.

The semantics of Kubernetes objects are tested against the embedded API server (integration
tests); here a minimal aiohttp server records each request and plays back scripted answers, to
check the exact headers, Content-Types, retries and rate limiting the real client produces.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from computedomain.kube import errors, resources, rest
from computedomain.kube.client import ClientConfig, ClientConfigError, connect
from computedomain.kube.rest import Api, PatchType
from computedomain.runtime.clock import ManualClock
from tests.support.polling import eventually


@attrs.define
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@attrs.define
class Peer:
    seen: list[Seen] = attrs.Factory(list)
    script: list[tuple[int, Any, dict[str, str]]] = attrs.Factory(list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        self.seen.append(
            Seen(request.method, request.path, dict(request.query), dict(request.headers), body)
        )
        if request.query.get("watch") == "true":
            return await self._watch(request)
        status, payload, headers = self.script.pop(0) if self.script else (200, {}, {})
        if payload == {}:
            payload = {"kind": "Thing", "metadata": {"name": "x"}, "echo": body}
        return web.json_response(payload, status=status, headers=headers)

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        status, lines, _ = self.script.pop(0)
        if status != 200:
            return web.json_response(lines, status=status)
        response = web.StreamResponse()
        await response.prepare(request)
        for line in lines:  # split events across chunk boundaries on purpose
            data = (json.dumps(line) + "\n").encode()
            await response.write(data[:7])
            await response.write(data[7:])
        await response.write_eof()
        return response


@pytest.fixture
async def peer() -> AsyncIterator[tuple[Peer, str]]:
    state = Peer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", state.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield state, str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


async def make_api(url: str, **kwargs: Any) -> Api:
    return await connect(ClientConfig(url=url, token="t0k3n", user_agent="cd-test/1", **kwargs))


async def test_every_request_carries_user_agent_token_and_json_accept(
    peer: tuple[Peer, str],
) -> None:
    state, url = peer
    api = await make_api(url)
    try:
        await api.get(resources.PODS, "p", "ns")
    finally:
        await api.close()
    (seen,) = state.seen
    assert seen.method == "GET"
    assert seen.path == "/api/v1/namespaces/ns/pods/p"
    assert seen.headers["User-Agent"] == "cd-test/1"
    assert seen.headers["Authorization"] == "Bearer t0k3n"
    assert seen.headers["Accept"] == "application/json"


@pytest.mark.parametrize(
    ("patch_type", "body"),
    [
        (PatchType.MERGE, {"metadata": {"labels": {"a": "b"}}}),
        (PatchType.STRATEGIC, {"metadata": {"labels": {"a": "b"}}}),
        (PatchType.JSON, [{"op": "add", "path": "/metadata/labels/a", "value": "b"}]),
        (PatchType.APPLY, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
    ],
    ids=lambda v: v.name if isinstance(v, PatchType) else None,
)
async def test_each_patch_type_goes_out_with_its_own_content_type(
    peer: tuple[Peer, str], patch_type: PatchType, body: Any
) -> None:
    state, url = peer
    api = await make_api(url, field_manager="cd-tests")
    try:
        await api.patch(resources.CONFIG_MAPS, "x", body, namespace="ns", patch_type=patch_type)
    finally:
        await api.close()
    (seen,) = state.seen
    assert seen.method == "PATCH"
    assert seen.headers["Content-Type"] == patch_type.value
    assert seen.body == body
    assert seen.query["fieldManager"] == "cd-tests"


async def test_patch_body_shape_is_checked_before_sending(peer: tuple[Peer, str]) -> None:
    state, url = peer
    api = await make_api(url)
    try:
        with pytest.raises(TypeError, match="list of operations"):
            await api.patch(resources.PODS, "p", {"a": 1}, namespace="n", patch_type=PatchType.JSON)
        with pytest.raises(TypeError, match="JSON object"):
            await api.patch(resources.PODS, "p", [], namespace="n")
        with pytest.raises(ValueError, match="field manager"):
            await api.patch(resources.PODS, "p", {}, namespace="n", patch_type=PatchType.APPLY)
    finally:
        await api.close()
    assert state.seen == []


async def test_delete_sends_preconditions_and_propagation(peer: tuple[Peer, str]) -> None:
    state, url = peer
    api = await make_api(url)
    try:
        await api.delete(
            resources.DAEMON_SETS, "ds", "ns", uid="u1", resource_version="7",
            propagation="Foreground", grace_period_seconds=0,
        )  # fmt: skip
    finally:
        await api.close()
    (seen,) = state.seen
    assert seen.method == "DELETE"
    assert seen.path == "/apis/apps/v1/namespaces/ns/daemonsets/ds"
    assert seen.body == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "preconditions": {"uid": "u1", "resourceVersion": "7"},
        "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0,
    }


def _status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "code": code, "reason": reason, "message": "m"}


async def test_429_with_retry_after_is_retried_even_for_create(peer: tuple[Peer, str]) -> None:
    state, url = peer
    state.script = [(429, _status(429, "TooManyRequests"), {"Retry-After": "0"})] * 2
    api = await make_api(url)
    try:
        created = await api.create(resources.CONFIG_MAPS, {"metadata": {"name": "c"}}, "ns")
    finally:
        await api.close()
    assert created["kind"] == "Thing"
    assert [s.method for s in state.seen] == ["POST"] * 3
    assert api.stats.total(verb="create", code=429) == 2
    assert api.stats.total(verb="create", code=200) == 1


async def test_5xx_is_retried_only_for_idempotent_verbs(peer: tuple[Peer, str]) -> None:
    state, url = peer
    unavailable = (503, _status(503, "ServiceUnavailable"), {"Retry-After": "0"})
    state.script = [unavailable, (200, {}, {})]
    api = await make_api(url)
    try:
        await api.get(resources.PODS, "p", "ns")  # retried once, then succeeds
        state.script = [unavailable]
        with pytest.raises(errors.ApiServerError) as info:
            await api.patch(resources.PODS, "p", {"a": 1}, namespace="ns")
        assert info.value.retry_after == 0
    finally:
        await api.close()
    assert [s.method for s in state.seen] == ["GET", "GET", "PATCH"]


async def test_retries_are_bounded(peer: tuple[Peer, str]) -> None:
    state, url = peer
    state.script = [(429, _status(429, "TooManyRequests"), {"Retry-After": "0"})] * 20
    api = await make_api(url)
    try:
        with pytest.raises(errors.TooManyRequests):
            await api.get(resources.PODS, "p", "ns")
    finally:
        await api.close()
    assert len(state.seen) == 11  # the first try and client-go's 10 retries


async def test_no_retry_without_retry_after(peer: tuple[Peer, str]) -> None:
    state, url = peer
    state.script = [(500, _status(500, "InternalError"), {})]
    api = await make_api(url)
    try:
        with pytest.raises(errors.ApiServerError):
            await api.get(resources.PODS, "p", "ns")
    finally:
        await api.close()
    assert len(state.seen) == 1


async def test_watch_decodes_events_across_chunks_and_raises_gone(peer: tuple[Peer, str]) -> None:
    state, url = peer
    added = {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "5"}}}
    bookmark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}
    expired = {"type": "ERROR", "object": _status(410, "Expired")}
    state.script = [(200, [added, bookmark, expired], {}), (410, _status(410, "Expired"), {})]
    api = await make_api(url)
    got = []

    async def consume(namespace: str | None, rv: str) -> None:
        async for event in api.watch(resources.PODS, namespace, resource_version=rv):
            got.append((event.type, event.object["metadata"]["resourceVersion"]))

    try:
        with pytest.raises(errors.Gone):
            await consume("ns", "4")
        with pytest.raises(errors.Gone):
            await consume(None, "1")
    finally:
        await api.close()
    assert got == [("ADDED", "5"), ("BOOKMARK", "9")]
    first = state.seen[0]
    assert first.query == {"watch": "true", "resourceVersion": "4", "allowWatchBookmarks": "true"}
    assert api.stats.total(verb="watch") == 2


async def test_client_side_rate_limit_spaces_requests_on_the_clock(
    peer: tuple[Peer, str],
) -> None:
    state, url = peer
    clock = ManualClock()
    api = await connect(ClientConfig(url=url, qps=2.0, burst=2), clock=clock)
    try:
        tasks = [asyncio.create_task(api.get(resources.NODES, f"n{i}")) for i in range(5)]

        await eventually(lambda: len(state.seen) == 2, what="the burst")
        await eventually(lambda: clock.sleepers == 3, what="three requests parked on the clock")
        assert len(state.seen) == 2  # burst spent; the other three wait for virtual time
        clock.advance(0.5)
        await eventually(lambda: len(state.seen) == 3, what="one more after 0.5 s")
        clock.advance(1.0)
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
    finally:
        await api.close()
    assert len(state.seen) == 5


async def test_watches_take_no_token(peer: tuple[Peer, str]) -> None:
    """As client-go's Request.Watch: a spent bucket does not hold back a watch."""
    state, url = peer
    ended = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}
    clock = ManualClock()
    api = await connect(ClientConfig(url=url, qps=1.0, burst=1), clock=clock)
    try:
        await api.get(resources.NODES, "n")  # the only token
        state.script = [(200, [ended], {})] * 3
        for _ in range(3):
            async for _event in api.watch(resources.PODS, resource_version="1"):
                pass
        assert clock.sleepers == 0
    finally:
        await api.close()
    assert [s.query.get("watch") for s in state.seen] == [None, "true", "true", "true"]


async def test_each_client_set_has_its_own_bucket(peer: tuple[Peer, str]) -> None:
    """ComputeDomain requests spend their own client set's tokens, as upstream's CRD clientset."""
    state, url = peer
    clock = ManualClock()
    api = await connect(ClientConfig(url=url, qps=1.0, burst=2), clock=clock)
    try:
        for i in range(2):
            await api.get(resources.NODES, f"n{i}")
            await api.get(resources.COMPUTE_DOMAINS, f"cd{i}", "ns")
        core = asyncio.create_task(api.get(resources.DAEMON_SETS, "ds", "ns"))
        crd = asyncio.create_task(api.get(resources.COMPUTE_DOMAIN_CLIQUES, "c", "ns"))
        await eventually(lambda: clock.sleepers == 2, what="both buckets spent")
        assert len(state.seen) == 4
        clock.advance(1.0)
        await asyncio.wait_for(asyncio.gather(core, crd), 10)
    finally:
        await api.close()
    assert len(state.seen) == 6


@pytest.mark.parametrize(
    ("path", "client_set"),
    [
        ("/api/v1/nodes", "core"),
        ("/apis/apps/v1/namespaces/a/daemonsets", "core"),
        ("/apis/resource.k8s.io/v1/resourceclaimtemplates", "core"),
        ("/apis/resource.nvidia.com/v1beta1/computedomains", "resource.nvidia.com"),
        ("/apis/resource.nvidia.com", "resource.nvidia.com"),
        ("/apis", "core"),
        ("/api/v1/namespaces/a/events", "events"),
        ("/apis/events.k8s.io/v1/namespaces/a/events/e", "events"),
        ("/version", "core"),
    ],
)
def test_requests_map_to_the_client_set_of_their_group(path: str, client_set: str) -> None:
    assert rest.client_set(path) == client_set


async def test_unlimited_when_qps_is_zero(peer: tuple[Peer, str]) -> None:
    state, url = peer
    api = await connect(ClientConfig(url=url, qps=0, burst=1), clock=ManualClock())
    try:
        await asyncio.wait_for(
            asyncio.gather(*(api.get(resources.NODES, f"n{i}") for i in range(20))), 10
        )
    finally:
        await api.close()
    assert len(state.seen) == 20


async def test_connection_refused_is_an_api_connection_error() -> None:
    api = await connect(ClientConfig(url="http://127.0.0.1:9", timeout_seconds=5))
    try:
        with pytest.raises(errors.ApiConnectionError):
            await api.get(resources.NODES, "n")
    finally:
        await api.close()
    assert api.stats.total(code=0) == 1


async def test_kubeconfig_file_is_loaded_by_the_official_loader(
    peer: tuple[Peer, str], tmp_path: Any
) -> None:
    state, url = peer
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "from-file"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    api = await connect(ClientConfig(kubeconfig=str(kubeconfig)))
    try:
        await api.get(resources.NODES, "n")
    finally:
        await api.close()
    assert state.seen[0].headers["Authorization"] == "Bearer from-file"


async def test_missing_configuration_is_explained(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ClientConfigError, match=r"KUBECONFIG.*KUBERNETES_SERVICE_HOST"):
        await connect(ClientConfig())
    with pytest.raises(ClientConfigError, match="does not exist"):
        await connect(ClientConfig(kubeconfig=str(tmp_path / "nope")))
    bad = tmp_path / "bad"
    bad.write_text("clusters: [")
    with pytest.raises(ClientConfigError, match="cannot use kubeconfig"):
        await connect(ClientConfig(kubeconfig=str(bad)))


def test_env_proxy_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    from computedomain.kube.client import uses_env_proxy

    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    assert not uses_env_proxy("https://10.0.0.1:6443")
    monkeypatch.setenv("https_proxy", "http://proxy:3128")
    monkeypatch.setenv("no_proxy", "localhost,.svc")
    assert uses_env_proxy("https://10.0.0.1:6443")
    assert not uses_env_proxy("https://kubernetes.default.svc:443")
    assert not uses_env_proxy("http://127.0.0.1:8080")  # no http proxy set
