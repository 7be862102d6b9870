"""cd-kubelet-plugin as a real process: SIGKILL mid-prepare, a reboot, a corrupt checkpoint."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import uuid
from pathlib import Path

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.proto import kubelet_client
from computedomain_sim.apiserver import testing
from tests.integration.kubeletplugin.conftest import (
    DRIVER_NAMESPACE,
    World,
    node_environment,
    read_bytes,
    ref,
    start_process,
    write_text,
)
from tests.support.polling import eventually

pytestmark = pytest.mark.slow


def checkpoint_path(root: Path) -> Path:
    return root / "p" / names.DRIVER_NAME / cp.FILE_NAME


async def stop(process: asyncio.subprocess.Process) -> int:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    return await asyncio.wait_for(process.wait(), 15)


async def kubelet(env: dict[str, str]) -> kubelet_client.DraClient:
    socket = Path(env["KUBELET_REGISTRAR_DIRECTORY_PATH"]) / f"{names.DRIVER_NAME}-reg.sock"
    registration = await kubelet_client.register(str(socket), driver_name=names.DRIVER_NAME)
    return kubelet_client.DraClient.for_registration(registration)


async def test_sigkill_mid_prepare_then_restart_finishes_the_claim(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    cd = await world.domain("job")
    channel = await world.claim("channel", cd["metadata"]["uid"])
    uid = channel["metadata"]["uid"]
    env = node_environment(short_dir, world, apiserver)
    log = short_dir / "plugin.log"
    process = await start_process(env, log)
    try:
        async with await kubelet(env) as client:
            call = asyncio.create_task(client.prepare([ref(channel)], deadline=30))
            await eventually(world.node_label, what="the node label")
            entry = cp.decode(read_bytes(checkpoint_path(short_dir))).claims[uid]
            assert entry.state is cp.ClaimState.PREPARE_STARTED
            process.kill()  # SIGKILL while the prepare waits
            assert await process.wait() == -signal.SIGKILL
            with pytest.raises(kubelet_client.KubeletRpcError):
                await call
        await world.daemon_ready(cd)
        process = await start_process(env, log)
        async with await kubelet(env) as client:  # the kubelet retries the pod
            result = (await client.prepare([ref(channel)], deadline=20))[uid]
        assert result.error == ""
        assert result.devices[0].cdi_device_ids == (
            f"k8s.compute-domain.nvidia.com/claim={uid}-channel-0",
        )
        entry = cp.decode(read_bytes(checkpoint_path(short_dir))).claims[uid]
        assert entry.state is cp.ClaimState.PREPARE_COMPLETED
        assert (short_dir / "cdi" / f"k8s.compute-domain.nvidia.com-claim_{uid}.yaml").exists()
        assert await stop(process) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()


async def test_reboot_and_corrupt_checkpoint(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    cd = await world.domain("job")
    daemon = await world.claim("daemon", cd["metadata"]["uid"], namespace=DRIVER_NAMESPACE)
    uid = daemon["metadata"]["uid"]
    env = node_environment(short_dir, world, apiserver)
    log = short_dir / "plugin.log"
    process = await start_process(env, log)
    try:
        async with await kubelet(env) as client:
            assert (await client.prepare([ref(daemon)]))[uid].error == ""
        assert await stop(process) == 0
        assert uid in cp.decode(read_bytes(checkpoint_path(short_dir))).claims
        # A reboot (new boot ID): the checkpoint starts empty (#951).
        new_boot = str(uuid.uuid4())
        write_text(Path(env["BOOT_ID_PATH"]), f"{new_boot}\n")
        process = await start_process(env, log)
        after_reboot = cp.decode(read_bytes(checkpoint_path(short_dir)))
        assert after_reboot.claims == {}
        assert after_reboot.boot_id == new_boot
        async with await kubelet(env) as client:  # the kubelet prepares again
            assert (await client.prepare([ref(daemon)]))[uid].error == ""
        assert await stop(process) == 0
        # A corrupt checkpoint: moved aside, a Warning on the Node, a clean start (#1100).
        write_text(checkpoint_path(short_dir), '{"format": "computedomain.kubeletplugin/chec')
        process = await start_process(env, log)
        moved = list(checkpoint_path(short_dir).parent.glob(f"{cp.FILE_NAME}.corrupt-*"))
        assert len(moved) == 1
        assert cp.decode(read_bytes(checkpoint_path(short_dir))).claims == {}

        async def node_warning() -> list[dict]:
            listing = await api.list(resources.EVENTS, "default")
            return [
                e
                for e in listing["items"]
                if e["involvedObject"].get("name") == world.node
                and e["reason"] == "CheckpointCorrupt"
            ]

        (event,) = await eventually(node_warning, what="the CheckpointCorrupt event")
        assert event["type"] == "Warning"
        assert str(moved[0]) in event["message"]
        assert await stop(process) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
