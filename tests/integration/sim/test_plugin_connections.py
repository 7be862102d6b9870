"""The simulated kubelet keeps one gRPC connection per registered plugin, as the kubelet does:
every prepare goes over it, and a plugin registered again (restarted: a new socket) gets a new
one while the old one is closed."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from computedomain.proto import dra
from computedomain_sim.kubelet.paths import NodePaths
from computedomain_sim.kubelet.plugins import PluginManager
from tests.integration.sim import fake_dra_plugin as fake
from tests.support.polling import eventually


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> Iterator[NodePaths]:
    # Short: unix socket paths must fit in 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="pc-", dir="/tmp"))
    paths = NodePaths(root)
    paths.create()
    # The endpoint the plugin reports, and where it writes its claim files: the real path.
    monkeypatch.setenv("KUBELET_PLUGINS_DIRECTORY_PATH", str(paths.plugins_dir))
    monkeypatch.setenv("CALLS_FILE", str(root / "calls"))
    monkeypatch.setenv("CDI_ROOT", str(paths.cdi_dir))
    monkeypatch.setenv("NODE_NAME", "n0")
    yield paths
    shutil.rmtree(root, ignore_errors=True)


async def serve(paths: NodePaths) -> list[grpc.aio.Server]:
    """The fixture plugin, in this process: its DRA service and its registration socket."""
    plugin_dir = paths.plugins_dir / fake.DRIVER
    plugin_dir.mkdir(parents=True, exist_ok=True)
    dra_server = grpc.aio.server()
    dra.services(dra.Version.V1).add_DRAPluginServicer_to_server(fake.Plugin(), dra_server)
    dra_server.add_insecure_port(f"unix://{plugin_dir}/dra.sock")
    reg_server = grpc.aio.server()
    dra.registration_services().add_RegistrationServicer_to_server(fake.Registration(), reg_server)
    reg_server.add_insecure_port(f"unix://{paths.registry_dir}/{fake.DRIVER}-reg.sock")
    for server in (dra_server, reg_server):
        await server.start()
    return [dra_server, reg_server]


async def stop(servers: list[grpc.aio.Server], paths: NodePaths) -> None:
    for server in servers:
        await server.stop(0)
    (paths.registry_dir / f"{fake.DRIVER}-reg.sock").unlink(missing_ok=True)
    (paths.plugins_dir / fake.DRIVER / "dra.sock").unlink(missing_ok=True)


async def nothing(_driver: str) -> None:
    return None


async def test_calls_share_a_connection_until_the_plugin_registers_again(
    node: NodePaths,
) -> None:
    servers = await serve(node)
    manager = PluginManager(node, on_change=lambda: None, on_gone=nothing)
    try:
        await manager.scan()
        first = manager.client(fake.DRIVER)
        assert first is not None
        for i in range(3):
            assert manager.client(fake.DRIVER) is first
            ref = dra.ClaimRef(namespace="team", uid=f"uid-{i}", name=f"claim-{i}")
            answer = await first.prepare([ref])
            assert not answer[ref.uid].error

        await stop(servers, node)  # the plugin restarts: a new socket
        servers = await serve(node)
        await manager.scan()
        second = manager.client(fake.DRIVER)
        assert second is not None
        assert second is not first
        await eventually(
            lambda: first._channel.get_state() is grpc.ChannelConnectivity.SHUTDOWN,
            what="the old connection closed",
        )
        ref = dra.ClaimRef(namespace="team", uid="uid-after", name="claim-after")
        assert not (await second.prepare([ref]))[ref.uid].error
    finally:
        await manager.close()
        await stop(servers, node)
    assert second._channel.get_state() is grpc.ChannelConnectivity.SHUTDOWN
