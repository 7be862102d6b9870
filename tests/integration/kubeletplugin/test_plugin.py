"""cd-kubelet-plugin in-process against the embedded API server, driven over its unix sockets
by the kubelet-side client; the tests play controller, scheduler and daemon through the API."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.kubeletplugin import upstreamcheckpoint
from computedomain.proto import dra, kubelet_client
from computedomain_sim.apiserver import testing
from tests.integration.kubeletplugin.conftest import (
    CLIQUE,
    DRIVER_NAMESPACE,
    World,
    node_environment,
    read_bytes,
    read_text,
    ref,
    reserved_pod,
    running_plugin,
)
from tests.support.polling import eventually


def checkpoint_of(root: Path) -> cp.Checkpoint:
    return cp.decode(read_bytes(root / "p" / names.DRIVER_NAME / cp.FILE_NAME))


async def slices(api: Api, node: str) -> list[dict[str, Any]]:
    listing = await api.list(
        resources.RESOURCE_SLICES,
        field_selector=f"spec.driver={names.DRIVER_NAME},spec.nodeName={node}",
    )
    return list(listing["items"])


async def test_register_publish_prepare_unprepare_both_versions(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    cd = await world.domain("job")
    cd_uid = cd["metadata"]["uid"]
    await world.daemon_ready(cd)
    daemon = await world.claim("daemon", cd_uid, namespace=DRIVER_NAMESPACE)
    channel = await world.claim("channel", cd_uid)
    obsolete = await api.create(
        resources.RESOURCE_SLICES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"old-{world.node}"},
            "spec": {
                "driver": names.DRIVER_NAME,
                "nodeName": world.node,
                "pool": {"name": "old-pool", "generation": 3, "resourceSliceCount": 1},
                "devices": [{"name": "channel-0"}],
            },
        },
    )
    env = node_environment(
        short_dir, world, apiserver, HTTP_ENDPOINT="127.0.0.1:0", HEALTHCHECK_PORT="0"
    )
    async with running_plugin(env, api) as plugin:
        registration = await kubelet_client.register(
            plugin.reg_socket, driver_name=names.DRIVER_NAME
        )
        assert registration.version is dra.Version.V1
        assert registration.endpoint == str(plugin.config.dra_socket)

        # The ResourceSlice: one pool named after the node, owned by the Node; the old gone.
        async def only_ours() -> list[dict[str, Any]]:
            found = await slices(api, world.node)
            return (
                found
                if [s["metadata"]["uid"] for s in found] != [obsolete["metadata"]["uid"]]
                and len(found) == 1
                else []
            )

        (published,) = await eventually(only_ours, what="the slice")
        node = await api.get(resources.NODES, world.node)
        assert published["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
        assert published["spec"]["pool"]["name"] == world.node
        assert [d["name"] for d in published["spec"]["devices"]] == ["channel-0", "daemon-0"]
        assert published["spec"]["devices"][0]["attributes"]["cliqueID"] == {"string": CLIQUE}
        async with kubelet_client.DraClient(registration.endpoint, dra.Version.V1) as v1:
            result = (await v1.prepare([ref(daemon)]))[daemon["metadata"]["uid"]]
        assert result.error == ""
        assert result.devices[0].cdi_device_ids[0] == "k8s.compute-domain.nvidia.com/device=all"
        async with kubelet_client.DraClient(registration.endpoint, dra.Version.V1BETA1) as old:
            result = (await old.prepare([ref(channel)]))[channel["metadata"]["uid"]]
            assert result.error == ""
            assert await world.node_label() == cd_uid
            cdi_file = (
                short_dir
                / "cdi"
                / (f"k8s.compute-domain.nvidia.com-claim_{channel['metadata']['uid']}.yaml")
            )
            assert "/dev/nvidia-caps-imex-channels/channel0" in read_text(cdi_file)
            assert await old.unprepare([ref(channel)]) == {channel["metadata"]["uid"]: ""}
        assert await world.node_label() is None
        assert not cdi_file.exists()
        async with kubelet_client.DraClient(registration.endpoint, dra.Version.V1) as v1:
            assert await v1.unprepare([ref(daemon)]) == {daemon["metadata"]["uid"]: ""}
        assert checkpoint_of(short_dir).claims == {}
        # Metrics with upstream's names, readiness, and the gRPC health service.
        assert plugin.plugin.http is not None
        assert plugin.plugin.health is not None
        base = f"http://127.0.0.1:{plugin.plugin.http.port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/metrics") as response:
                text = await response.text()
            async with http.get(f"{base}/readyz") as response:
                assert response.status == 200
        line = f'nvidia_dra_requests_total{{driver="{names.DRIVER_NAME}",operation="prepare"}} 2.0'
        assert line in text
        assert "nvidia_dra_prepared_devices" in text
        async with grpc.aio.insecure_channel(f"127.0.0.1:{plugin.plugin.health.port}") as ch:
            check = await health_pb2_grpc.HealthStub(ch).Check(
                health_pb2.HealthCheckRequest(service="liveness")
            )
        assert check.status == health_pb2.HealthCheckResponse.SERVING
        # Drift: a deleted slice comes back.
        await api.delete(resources.RESOURCE_SLICES, published["metadata"]["name"])
        (again,) = await eventually(lambda: slices(api, world.node), what="a new slice")
        assert again["metadata"]["name"] != published["metadata"]["name"]


async def test_channel_prepare_waits_for_daemon_prepared_concurrently(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    """The workload's prepare labels the node and waits; the daemon claim, prepared in another
    request meanwhile, gets through; the daemon turns Ready; the workload's request completes."""
    cd = await world.domain("job")
    cd_uid = cd["metadata"]["uid"]
    channel = await world.claim("channel", cd_uid)
    async with running_plugin(node_environment(short_dir, world, apiserver), api) as plugin:
        workload_client = await plugin.kubelet()
        daemon_client = await plugin.kubelet()
        async with workload_client, daemon_client:
            workload = asyncio.create_task(workload_client.prepare([ref(channel)], deadline=30))
            await eventually(world.node_label, what="the node label")  # the DaemonSet reacts
            daemon = await world.claim("daemon", cd_uid, namespace=DRIVER_NAMESPACE)
            result = await asyncio.wait_for(daemon_client.prepare([ref(daemon)]), 10)
            assert result[daemon["metadata"]["uid"]].error == ""
            assert not workload.done()
            pod = reserved_pod(channel)
            events = await eventually(lambda: world.events_for(pod), what="a Warning event")
            assert events[0]["type"] == "Warning"
            assert events[0]["message"].startswith(
                f"Waiting for the IMEX daemon of ComputeDomain {world.namespace}/job on node "
                f"{world.node} (clique {CLIQUE}): "
            )
            await world.daemon_ready(cd)
            results = await asyncio.wait_for(workload, 10)
    assert results[channel["metadata"]["uid"]].error == ""
    assert results[channel["metadata"]["uid"]].devices[0].device_name == "channel-0"


async def test_node_of_another_domain_waits_with_a_clear_event(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    first = await world.domain("first")
    second = await world.domain("second")
    waiter = await world.claim("channel", second["metadata"]["uid"])
    # The node still belongs to the first domain (e.g. its workload's claim is being prepared,
    # or a label left behind by a deleted domain that the controller has not cleaned yet).
    await world.set_node_label(first["metadata"]["uid"])
    env = node_environment(short_dir, world, apiserver)
    async with running_plugin(env, api) as plugin, await plugin.kubelet() as client:
        result = (await client.prepare([ref(waiter)], deadline=3))[waiter["metadata"]["uid"]]
        assert "label already exists for a different ComputeDomain" in result.error
        name = waiter["metadata"]["name"]
        assert result.error.startswith(
            f"error preparing devices for claim '{world.namespace}/{name}:"
        )
        events = await eventually(lambda: world.events_for(reserved_pod(waiter)), what="event")
        assert events[0]["type"] == "Warning"
        assert events[0]["message"] == (
            f"Node {world.node} belongs to ComputeDomain {world.namespace}/first "
            f"({first['metadata']['uid']}); waiting for it to be released"
        )
        # Releasing the node lets the second domain in (woken by the Node's watch event).
        second_try = asyncio.create_task(client.prepare([ref(waiter)], deadline=20))
        await world.set_node_label(None)
        second_uid = second["metadata"]["uid"]
        await eventually(lambda: _label_is(world, second_uid), what="the second domain's label")
        await world.daemon_ready(second)
        outcome = (await asyncio.wait_for(second_try, 10))[waiter["metadata"]["uid"]]
        assert outcome.error == ""


async def _label_is(world: World, value: str) -> bool:
    return await world.node_label() == value


BAD_CONFIGS = {
    "unknown-field": ({"extra": 1}, "opaque.parameters.extra: unknown field"),
    "wrong-kind": (
        {"kind": "GpuConfig"},
        "opaque.parameters.kind: 'GpuConfig' is not a recognized",
    ),
    "empty-domain": ({"domainID": ""}, "opaque.parameters.domainID: cannot be empty"),
    "traversal": ({"domainID": "../x"}, "opaque.parameters.domainID: '../x' is not a single safe"),
}


@pytest.mark.parametrize("case", [*sorted(BAD_CONFIGS), "wrong-namespace"])
async def test_bad_opaque_configs_fail_the_claim_and_write_nothing(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer, case: str
) -> None:
    cd = await world.domain("job")
    cd_uid = cd["metadata"]["uid"]
    await world.daemon_ready(cd)
    params: dict[str, Any] = {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.CHANNEL_CONFIG_KIND,
        "domainID": cd_uid,
    }
    namespace = world.namespace
    if case == "wrong-namespace":
        namespace = DRIVER_NAMESPACE
        message = "opaque.parameters.domainID: the ResourceClaim's namespace"
    else:
        change, message = BAD_CONFIGS[case]
        params.update(change)
    bad = await world.claim("channel", cd_uid, parameters=params, namespace=namespace)
    good = await world.claim("daemon", cd_uid, namespace=DRIVER_NAMESPACE)
    async with running_plugin(node_environment(short_dir, world, apiserver), api) as plugin:
        before = checkpoint_of(short_dir)
        async with await plugin.kubelet() as client:
            results = await client.prepare([ref(bad), ref(good)])
    error = results[bad["metadata"]["uid"]].error
    assert error.startswith(
        f"error preparing devices for claim '{namespace}/{bad['metadata']['name']}:"
    )
    assert f"status.allocation.devices.config[0].{message}" in error
    assert results[good["metadata"]["uid"]].error == ""
    after = checkpoint_of(short_dir)
    assert bad["metadata"]["uid"] not in after.claims
    assert set(after.claims) == set(before.claims) | {good["metadata"]["uid"]}
    assert await world.node_label() is None
    assert not list((short_dir / "cdi").glob(f"*{bad['metadata']['uid']}*"))


async def test_stale_prepare_after_unprepare_does_not_resurrect(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    cd = await world.domain("job")
    channel = await world.claim("channel", cd["metadata"]["uid"])
    uid = channel["metadata"]["uid"]
    env = node_environment(short_dir, world, apiserver)
    async with (
        running_plugin(env, api) as plugin,
        await plugin.kubelet() as client,
        await plugin.kubelet() as other,
    ):
        stale = asyncio.create_task(client.prepare([ref(channel)], deadline=30))
        await eventually(world.node_label, what="the node label")
        assert (await other.unprepare([ref(channel)]))[uid] == ""
        assert await world.node_label() is None
        await world.daemon_ready(cd)  # what let upstream's stale retry succeed (#1162)
        result = (await asyncio.wait_for(stale, 10))[uid]
    assert "claim prepare was already aborted" in result.error
    assert await world.node_label() is None
    entry = checkpoint_of(short_dir).claims[uid]  # upstream's tombstone state, until it expires
    assert (entry.state, entry.namespace, entry.name) == (
        cp.ClaimState.PREPARE_ABORTED,
        channel["metadata"]["namespace"],
        channel["metadata"]["name"],
    )
    assert not list((short_dir / "cdi").glob(f"*{uid}*"))


def upstream_checkpoint(boot_id: str, claims: dict[str, dict[str, Any]]) -> bytes:
    """Upstream's checkpoint.json holding ``claims`` (V2 entries in Go's field order); V1 gets
    the completed ones, as upstream writes it."""
    v1_claims = {
        uid: {"status": c["status"], "preparedDevices": c["preparedDevices"]}
        for uid, c in claims.items()
        if c["checkpointState"] == "PrepareCompleted"
    }
    v1: dict[str, Any] = {"preparedClaims": v1_claims} if v1_claims else {}
    v2: dict[str, Any] = {"checksum": 0, "preparedClaims": claims, "nodeBootID": boot_id}
    v2["checksum"] = upstreamcheckpoint.checksum(upstreamcheckpoint.go_json(v2))
    top = upstreamcheckpoint.checksum(upstreamcheckpoint.go_json({"checksum": 0, "v1": v1}))
    return upstreamcheckpoint.go_json({"checksum": top, "v1": v1, "v2": v2})


def completed_entry(claim: dict[str, Any], cd_uid: str, *, new_format: bool) -> dict[str, Any]:
    uid = claim["metadata"]["uid"]
    entry: dict[str, Any] = {
        "checkpointState": "PrepareCompleted",
        "status": claim["status"],
        "preparedDevices": [
            {
                "devices": [
                    {
                        "channel": {
                            "info": {"id": 0},
                            "device": {
                                "Requests": ["channel"],
                                "PoolName": claim["status"]["allocation"]["devices"]["results"][0][
                                    "pool"
                                ],
                                "DeviceName": "channel-0",
                                "CDIDeviceIDs": [
                                    f"k8s.compute-domain.nvidia.com/claim={uid}-channel-0"
                                ],
                            },
                        },
                        "daemon": None,
                    }
                ],
                "configState": {"Type": "channel", "ComputeDomain": cd_uid},
            }
        ],
    }
    if new_format:  # since v0.5 completed entries keep their name and namespace
        entry.update(name=claim["metadata"]["name"], namespace=claim["metadata"]["namespace"])
    return entry


@pytest.mark.parametrize("new_format", [False, True], ids=["before-v0.5", "v0.5"])
async def test_upstreams_checkpoint_is_taken_over_at_start(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer, new_format: bool
) -> None:
    cd = await world.domain("job")
    cd_uid = cd["metadata"]["uid"]
    await world.daemon_ready(cd)
    running = await world.claim("channel", cd_uid)
    claims = {running["metadata"]["uid"]: completed_entry(running, cd_uid, new_format=new_format)}
    aborted = await world.claim("daemon", cd_uid, namespace=DRIVER_NAMESPACE)
    if new_format:
        claims[aborted["metadata"]["uid"]] = {
            "checkpointState": "PrepareAborted",
            "status": aborted["status"],
            "name": aborted["metadata"]["name"],
            "namespace": aborted["metadata"]["namespace"],
            "abortedAt": cp.rfc3339(time.time() - 5),
        }
    env = node_environment(short_dir, world, apiserver)
    boot_id = read_text(Path(env["BOOT_ID_PATH"])).strip()
    plugin_dir = short_dir / "p" / names.DRIVER_NAME
    plugin_dir.mkdir(parents=True, exist_ok=True)
    (plugin_dir / upstreamcheckpoint.FILE_NAME).write_bytes(upstream_checkpoint(boot_id, claims))
    async with running_plugin(env, api) as plugin, await plugin.kubelet() as client:
        ours = checkpoint_of(short_dir)
        assert not (plugin_dir / upstreamcheckpoint.FILE_NAME).exists()
        taken = ours.claims[running["metadata"]["uid"]]
        assert taken.completed
        if new_format:
            assert ours.claims[aborted["metadata"]["uid"]].aborted
        # The completed claim is answered from the checkpoint, with upstream's CDI IDs.
        result = (await client.prepare([ref(running)]))[running["metadata"]["uid"]]
        assert result.error == ""
        assert result.devices[0].cdi_device_ids == (
            f"k8s.compute-domain.nvidia.com/claim={running['metadata']['uid']}-channel-0",
        )
        # A request that begins after the abort (none of the Go plugin's survived it) prepares.
        result = (await client.prepare([ref(aborted)]))[aborted["metadata"]["uid"]]
        assert result.error == ""
        assert checkpoint_of(short_dir).claims[aborted["metadata"]["uid"]].completed


async def test_a_device_still_held_by_an_old_claim_is_retried_and_said(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    """The scheduler gave channel-0 to a new claim before the old one was unprepared (#641)."""
    cd = await world.domain("job")
    await world.daemon_ready(cd)
    old = await world.claim("channel", cd["metadata"]["uid"])
    new = await world.claim("channel", cd["metadata"]["uid"])
    env = node_environment(short_dir, world, apiserver)
    async with running_plugin(env, api) as plugin, await plugin.kubelet() as client:
        assert (await client.prepare([ref(old)]))[old["metadata"]["uid"]].error == ""
        early = (await client.prepare([ref(new)], deadline=2))[new["metadata"]["uid"]]
        held = "requested device channel-0 is already allocated to different claim"
        assert held in early.error
        events = await eventually(lambda: world.events_for(reserved_pod(new)), what="event")
        assert events[0]["reason"] == "PrepareRetrying"
        assert held in events[0]["message"]
        assert (await client.unprepare([ref(old)]))[old["metadata"]["uid"]] == ""
        late = (await client.prepare([ref(new)]))[new["metadata"]["uid"]]
        assert late.error == ""
