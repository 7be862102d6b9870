"""The gRPC servers, driver adapter and health service over real unix sockets, driven by the
kubelet-side client (claims from an in-memory fetcher; the API-backed version is in
tests/integration/kubeletplugin)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from computedomain.api.errors import PermanentError
from computedomain.kubeletplugin.driver import Driver
from computedomain.kubeletplugin.grpcservers import PluginServers
from computedomain.kubeletplugin.health import HealthServer, HealthService
from computedomain.kubeletplugin.metrics import Metrics
from computedomain.kubeletplugin.nodelock import NodeLock
from computedomain.kubeletplugin.wakeups import Wakeups, domain_key
from computedomain.proto import dra, kubelet_client
from tests.unit.kubeletplugin import fixtures as fx


@attrs.define
class Plugin:
    harness: fx.Harness
    servers: PluginServers
    driver: Driver
    claims: dict[str, dict[str, Any]]
    waits: list[tuple[str, str]]
    waiting: asyncio.Event
    wakeups: Wakeups
    metrics: Metrics

    @property
    def reg_socket(self) -> str:
        return str(self.servers.registration_socket)

    def store(self, claim: dict[str, Any]) -> dra.ClaimRef:
        self.claims[claim["metadata"]["uid"]] = claim
        meta = claim["metadata"]
        return dra.ClaimRef(meta["namespace"], meta["uid"], meta["name"])


@pytest.fixture
async def plugin(short_dir: Path) -> AsyncIterator[Plugin]:
    # Unix socket paths are limited to ~107 bytes: keep them short.
    h = fx.harness(short_dir)
    claims: dict[str, dict[str, Any]] = {}
    waits: list[tuple[str, str]] = []
    waiting = asyncio.Event()

    def report(claim: Mapping[str, Any], reason: str, is_wait: bool) -> None:
        waits.append((claim["metadata"]["name"], reason))
        waiting.set()

    async def fetch(ref: dra.ClaimRef) -> Mapping[str, Any]:
        try:
            return claims[ref.uid]
        except KeyError:
            raise PermanentError(f"ResourceClaim {ref.namespace}/{ref.name} not found") from None

    wakeups = Wakeups()
    metrics = Metrics(fx.NODE)
    plugin_dir = short_dir / "plugins" / fx.DRIVER
    driver = Driver(
        h.state,
        NodeLock(plugin_dir / "pu.lock"),
        fetch_claim=fetch,
        metrics=metrics,
        report_wait=report,
        wakeups=wakeups,
    )
    servers = PluginServers(
        driver,
        dra_socket=plugin_dir / "dra.sock",
        registration_socket=short_dir / "registry" / f"{fx.DRIVER}-reg.sock",
    )
    await servers.start_dra()
    await servers.start_registration()
    yield Plugin(h, servers, driver, claims, waits, waiting, wakeups, metrics)
    await servers.stop()


async def test_registration_handshake(plugin: Plugin) -> None:
    registration = await kubelet_client.register(plugin.reg_socket, driver_name=fx.DRIVER)
    assert registration.version is dra.Version.V1
    assert registration.endpoint == str(plugin.servers.dra_socket)
    assert registration.supported_versions == ("v1.DRAPlugin", "v1beta1.DRAPlugin")
    assert plugin.servers.registration.registered.is_set()
    old = await kubelet_client.register(plugin.reg_socket, supported=(dra.Version.V1BETA1,))
    assert old.version is dra.Version.V1BETA1


async def test_refused_registration_is_answered_with_an_error(plugin: Plugin) -> None:
    with pytest.raises(kubelet_client.RegistrationError, match="not the expected driver"):
        await kubelet_client.register(plugin.reg_socket, driver_name="gpu.nvidia.com")
    assert plugin.servers.registration.last_error.startswith("plugin name")
    assert not plugin.servers.registration.registered.is_set()


@pytest.mark.parametrize("version", list(dra.Version))
async def test_prepare_and_unprepare(plugin: Plugin, version: dra.Version) -> None:
    cd = plugin.harness.cluster.add(fx.domain())
    ref = plugin.store(fx.claim("daemon", cd["metadata"]["uid"]))
    async with kubelet_client.DraClient(str(plugin.servers.dra_socket), version) as client:
        assert await client.prepare([]) == {}
        results = await client.prepare([ref])
        (device,) = results[ref.uid].devices
        assert results[ref.uid].error == ""
        assert device.device_name == "daemon-0"
        assert device.cdi_device_ids[0] == "k8s.compute-domain.nvidia.com/device=all"
        assert await client.prepare([ref]) == results  # idempotent
        assert await client.unprepare([ref]) == {ref.uid: ""}
        assert await client.unprepare([ref]) == {ref.uid: ""}
    assert plugin.harness.cdi.claim_uids() == set()
    text = plugin.metrics.registry.get_sample_value(
        "nvidia_dra_requests_total", {"driver": fx.DRIVER, "operation": "prepare"}
    )
    assert text == 2.0


async def test_one_bad_claim_never_fails_the_batch(plugin: Plugin) -> None:
    cd = plugin.harness.cluster.add(fx.domain())
    good = plugin.store(fx.claim("daemon", cd["metadata"]["uid"]))
    bad = plugin.store(fx.claim("daemon", "../x"))
    missing = dra.ClaimRef("team-a", fx.new_uid(), "gone")
    replaced_claim = fx.claim("daemon", cd["metadata"]["uid"])
    replaced = plugin.store(replaced_claim)
    replaced_claim["metadata"]["uid"] = fx.new_uid()
    unallocated_claim = fx.claim("daemon", cd["metadata"]["uid"])
    unallocated = plugin.store(unallocated_claim)
    del unallocated_claim["status"]["allocation"]
    async with kubelet_client.DraClient(str(plugin.servers.dra_socket), dra.Version.V1) as c:
        results = await c.prepare([good, bad, missing, replaced, unallocated])
    assert results[good.uid].error == ""
    assert results[bad.uid].error.startswith(
        f"error preparing devices for claim 'team-a/{bad.name}:{bad.uid}': "
        "status.allocation.devices.config[0].opaque.parameters.domainID: '../x'"
    )
    assert "ResourceClaim team-a/gone not found" in results[missing.uid].error
    assert "got replaced" in results[replaced.uid].error
    assert "no allocation set" in results[unallocated.uid].error


async def test_waiting_claim_reports_and_answers_before_the_deadline(plugin: Plugin) -> None:
    cd = plugin.harness.cluster.add(fx.domain())
    ref = plugin.store(fx.claim("channel", cd["metadata"]["uid"], name="work"))
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with kubelet_client.DraClient(
        str(plugin.servers.dra_socket), dra.Version.V1, deadline=2.5
    ) as client:
        results = await client.prepare([ref])
    assert loop.time() - started < 2.5
    assert "current node not ready in ComputeDomain" in results[ref.uid].error
    assert "the kubelet retries" in results[ref.uid].error
    assert plugin.waits
    assert plugin.waits[0][0] == "work"
    assert plugin.waits[0][1].startswith("Waiting for the IMEX daemon of ComputeDomain team-a/job")


async def test_channel_waits_for_daemon_prepared_concurrently(plugin: Plugin) -> None:
    """The daemon claim gets the lock between the channel claim's attempts: no deadlock."""
    cd = plugin.harness.cluster.add(fx.domain())
    cd_uid = cd["metadata"]["uid"]
    channel = plugin.store(fx.claim("channel", cd_uid))
    daemon = plugin.store(fx.claim("daemon", cd_uid))
    socket = str(plugin.servers.dra_socket)

    async def workload() -> dict[str, dra.PrepareResult]:
        async with kubelet_client.DraClient(socket, dra.Version.V1, deadline=20) as client:
            return await client.prepare([channel])

    async def daemon_pod() -> None:
        await plugin.waiting.wait()  # the channel claim is waiting: the node is labelled
        async with kubelet_client.DraClient(socket, dra.Version.V1BETA1) as client:
            result = await client.prepare([daemon])
        assert result[daemon.uid].error == ""
        # The daemon starts and reports Ready in its clique; the informer wakes the waiter.
        plugin.harness.cluster.cliques[f"{cd_uid}.{fx.CLIQUE}"] = {
            "daemons": [{"nodeName": fx.NODE, "status": "Ready"}]
        }
        plugin.wakeups.notify(domain_key(cd_uid))

    results, _ = await asyncio.wait_for(asyncio.gather(workload(), daemon_pod()), 15)
    assert results[channel.uid].error == ""
    assert results[channel.uid].devices[0].device_name == "channel-0"


async def test_health(plugin: Plugin) -> None:
    service = HealthService(
        registration_socket=plugin.servers.registration_socket,
        dra_socket=plugin.servers.dra_socket,
        registered=plugin.servers.registration.registered,
    )
    server = HealthServer(service, "[::]:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            before = await stub.Check(health_pb2.HealthCheckRequest(service="liveness"))
            assert before.status == health_pb2.HealthCheckResponse.NOT_SERVING
            await kubelet_client.register(plugin.reg_socket)
            after = await stub.Check(health_pb2.HealthCheckRequest(service=""))
            assert after.status == health_pb2.HealthCheckResponse.SERVING
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.Check(health_pb2.HealthCheckRequest(service="other"))
            assert err.value.code() == grpc.StatusCode.NOT_FOUND
            await plugin.servers.stop()
            down = await stub.Check(health_pb2.HealthCheckRequest(service="liveness"))
            assert down.status == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        await server.stop()


async def test_stale_socket_is_replaced_and_stop_removes_sockets(short_dir: Path) -> None:
    tmp_path = short_dir
    import socket as sockets

    path = tmp_path / "dra.sock"
    stale = sockets.socket(sockets.AF_UNIX)
    stale.bind(str(path))
    stale.close()
    h = fx.harness(tmp_path)
    servers = PluginServers(
        Driver(h.state, NodeLock(tmp_path / "pu.lock"), fetch_claim=None, metrics=Metrics("n")),  # type: ignore[arg-type]
        dra_socket=path,
        registration_socket=tmp_path / "reg.sock",
    )
    await servers.start_dra()
    await servers.start_registration()
    async with kubelet_client.DraClient(str(path), dra.Version.V1) as client:
        assert await client.prepare([]) == {}
    await servers.stop()
    assert not path.exists()
    assert not (tmp_path / "reg.sock").exists()
    (tmp_path / "file.sock").write_text("not a socket")
    refusing = PluginServers(
        servers.driver, dra_socket=tmp_path / "file.sock", registration_socket=tmp_path / "r"
    )
    with pytest.raises(FileExistsError, match="is not a socket"):
        await refusing.start_dra()


async def test_health_servers_of_two_pods_share_a_port_on_their_own_addresses(
    plugin: Plugin,
) -> None:
    """Simulated nodes share one network stack: each plugin must answer on its pod IP only."""
    serving = asyncio.Event()
    serving.set()

    def server(ip: str, port: int, registered: asyncio.Event) -> HealthServer:
        service = HealthService(
            registration_socket=plugin.servers.registration_socket,
            dra_socket=plugin.servers.dra_socket,
            registered=registered,
        )
        return HealthServer(service, f"{ip}:{port}")

    first = server("127.0.0.2", 0, asyncio.Event())
    await first.start()
    assert first.port is not None
    second = server("127.0.0.3", first.port, serving)
    await second.start()
    try:
        assert second.port == first.port
        for ip, status in [
            ("127.0.0.2", health_pb2.HealthCheckResponse.NOT_SERVING),
            ("127.0.0.3", health_pb2.HealthCheckResponse.SERVING),
        ] * 3:
            async with grpc.aio.insecure_channel(f"{ip}:{first.port}") as channel:
                reply = await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service="liveness")
                )
            assert reply.status == status, ip
    finally:
        await first.stop()
        await second.stop()
