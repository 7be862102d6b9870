"""The clique refresh in-process: the fake NVML backend reads a profile document that the test
replaces, as a Fabric Manager partition change moves the node to another clique. The plugin's
own timer (a short ``CLIQUE_ID_REFRESH_INTERVAL``) notices; the ResourceSlice, the
``nvidia.com/gpu.clique`` label, the Node event and the next prepares follow."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import cliquelabel, cliquerefresh
from computedomain_sim import nvmlmock
from computedomain_sim.apiserver import testing
from tests.integration.kubeletplugin.conftest import (
    CLIQUE,
    DRIVER_NAMESPACE,
    World,
    node_environment,
    read_text,
    ref,
    reserved_pod,
    running_plugin,
)
from tests.support.polling import eventually

NEW = "0d3c9a1e-5b7f-4e2a-9c8d-1f2e3d4c5b6a.4"


async def published_clique(api: Api, node: str) -> str | None:
    listing = await api.list(
        resources.RESOURCE_SLICES,
        field_selector=f"spec.driver={names.DRIVER_NAME},spec.nodeName={node}",
    )
    for item in listing["items"]:
        attributes = item["spec"]["devices"][0]["attributes"]
        return str(attributes.get(names.ATTRIBUTE_CLIQUE_ID, {}).get("string", ""))
    return None


async def gpu_clique_label(api: Api, node: str) -> str | None:
    labels = (await api.get(resources.NODES, node))["metadata"].get("labels") or {}
    return labels.get(cliquelabel.LABEL)


async def node_events(api: Api, node: str, reason: str) -> list[dict[str, Any]]:
    listing = await api.list(resources.EVENTS, "default")
    return [
        e
        for e in listing["items"]
        if e["involvedObject"].get("kind") == "Node"
        and e["involvedObject"].get("name") == node
        and e["reason"] == reason
    ]


async def test_a_partition_change_moves_slice_label_and_later_prepares(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    profile = nvmlmock.write_profile(short_dir / "nvml-profile.json", "gb200", CLIQUE)
    env = node_environment(
        short_dir,
        world,
        apiserver,
        FAKE_NVML_PROFILE_FILE=str(profile),
        CLIQUE_ID_REFRESH_INTERVAL="100ms",
        GPU_CLIQUE_LABEL_ENABLED="true",
    )
    cd = await world.domain("job")
    cd_uid = cd["metadata"]["uid"]
    await world.daemon_ready(cd)  # the daemon is registered in the old clique
    async with running_plugin(env, api) as plugin:
        refresh = plugin.plugin.refresh
        assert refresh is not None
        assert await gpu_clique_label(api, world.node) == CLIQUE  # set before serving
        await eventually(
            lambda: _equals(published_clique(api, world.node), CLIQUE), what="the first slice"
        )

        nvmlmock.write_profile(profile, "gb200", NEW)
        await eventually(
            lambda: _equals(published_clique(api, world.node), NEW),
            what="the slice republished with the new clique",
        )
        assert refresh.current == NEW
        await eventually(
            lambda: _equals(gpu_clique_label(api, world.node), NEW), what="the label moved"
        )
        (event,) = await eventually(
            lambda: node_events(api, world.node, cliquerefresh.REASON_CHANGED),
            what="the CliqueIDChanged event on the Node",
        )
        assert event["type"] == "Normal"
        assert f"from {CLIQUE} to {NEW}" in event["message"]

        async with await plugin.kubelet() as kubelet:
            # A daemon claim prepared now carries the new clique.
            daemon = await world.claim("daemon", cd_uid, namespace=DRIVER_NAMESPACE)
            result = await asyncio.wait_for(kubelet.prepare([ref(daemon)]), 10)
            assert result[daemon["metadata"]["uid"]].error == ""
            spec = (
                short_dir
                / "cdi"
                / (f"k8s.compute-domain.nvidia.com-claim_{daemon['metadata']['uid']}.yaml")
            )
            assert f"CLIQUE_ID={NEW}" in read_text(spec)
            # A channel claim waits: this node's daemon is Ready only in the old clique.
            channel = await world.claim("channel", cd_uid)
            workload = asyncio.create_task(kubelet.prepare([ref(channel)], deadline=30))
            pod = reserved_pod(channel)

            async def waiting_on_new_clique() -> bool:
                return any(f"(clique {NEW})" in e["message"] for e in await world.events_for(pod))

            await eventually(waiting_on_new_clique, what="a Warning naming the new clique")
            assert not workload.done()
            await world.daemon_ready(cd, clique=NEW)  # the daemon re-registered
            results = await asyncio.wait_for(workload, 10)
            assert results[channel["metadata"]["uid"]].error == ""
            assert "/dev/nvidia-caps-imex-channels/channel0" in read_text(
                short_dir
                / "cdi"
                / (f"k8s.compute-domain.nvidia.com-claim_{channel['metadata']['uid']}.yaml")
            )

        # Losing the clique is not adopted; neither is an unreadable profile.
        for replace in (
            lambda: nvmlmock.write_profile(profile, "h100", CLIQUE),
            lambda: profile.write_text("{"),
        ):
            replace()
            seen = refresh.ticks
            await eventually(lambda: refresh.ticks >= seen + 2, what="two more refreshes")  # noqa: B023
            assert refresh.current == NEW
            assert await published_clique(api, world.node) == NEW
        assert refresh.changes == 1
    assert await gpu_clique_label(api, world.node) is None  # removed at stop


async def _equals(value: Any, expected: str) -> bool:
    return bool(await value == expected)
