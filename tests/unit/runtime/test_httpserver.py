"""Health, readiness and metrics endpoints over real HTTP."""

from __future__ import annotations

import aiohttp
import prometheus_client
import pytest

from computedomain.runtime.httpserver import HttpServer, parse_endpoint


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [(":8080", ("0.0.0.0", 8080)), ("127.0.0.1:0", ("127.0.0.1", 0)), ("[::1]:9", ("::1", 9))],
)
def test_parse_endpoint(endpoint: str, expected: tuple[str, int]) -> None:
    assert parse_endpoint(endpoint) == expected


@pytest.mark.parametrize("endpoint", ["8080", "host:", "host:99999", ""])
def test_bad_endpoints(endpoint: str) -> None:
    with pytest.raises(ValueError, match="HTTP endpoint"):
        parse_endpoint(endpoint)


async def test_endpoints_report_health_readiness_and_metrics() -> None:
    registry = prometheus_client.CollectorRegistry()
    prometheus_client.Counter("cd_test_things", "things", registry=registry).inc(3)
    server = HttpServer("127.0.0.1:0", metrics_path="/metrics", registry=registry)
    state = {"synced": False}
    server.add_readiness_check("informers", lambda: state["synced"] or "caches not synced")

    async def registered() -> bool:
        return True

    server.add_readiness_check("kubelet", registered)
    await server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/healthz") as resp:
                assert resp.status == 200
            async with session.get(f"{base}/readyz") as resp:
                assert resp.status == 503
                assert "informers: caches not synced" in await resp.text()
            state["synced"] = True
            async with session.get(f"{base}/readyz") as resp:
                assert resp.status == 200
            async with session.get(f"{base}/metrics") as resp:
                assert resp.status == 200
                assert "cd_test_things_total 3.0" in await resp.text()
    finally:
        await server.stop()
        await server.stop()  # idempotent


async def test_failing_check_and_disabled_metrics() -> None:
    server = HttpServer("127.0.0.1:0", metrics_path="")

    def broken() -> bool:
        raise RuntimeError("boom")

    server.add_liveness_check("loop", broken)
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{server.port}/healthz") as resp:
                assert resp.status == 503
                assert "loop: RuntimeError: boom" in await resp.text()
            async with session.get(f"http://127.0.0.1:{server.port}/metrics") as resp:
                assert resp.status == 404
    finally:
        await server.stop()
