"""A single-node NVLink system whose GPUs wait for their Fabric Manager partition: with the
``FabricManagerPartitioning`` gate the plugin starts with no clique and publishes its slice; without
the gate, or without a local fabric, it refuses to start as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.kubeletplugin.startup import StartupError
from computedomain.nvml import fake, localfabric
from computedomain_sim.apiserver import testing
from tests.integration.kubeletplugin.conftest import World, node_environment, running_plugin
from tests.support.polling import eventually

GATE = "FabricManagerPartitioning=true"


def lay_out(root: Path, profile: fake.Profile) -> None:
    for node_path, text in fake.local_fabric_files(profile).items():
        target = root / "driver-root" / node_path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


@pytest.mark.parametrize(
    "profile",
    [fake.Profile.HGX_H100_PARTITION_PENDING, fake.Profile.HGX_B200_PARTITION_PENDING],
    ids=str,
)
async def test_with_the_gate_the_node_serves_without_a_clique(
    api: Api,
    world: World,
    short_dir: Path,
    apiserver: testing.RunningServer,
    profile: fake.Profile,
) -> None:
    env = node_environment(
        short_dir, world, apiserver, FAKE_NVML_PROFILE=profile.value, FEATURE_GATES=GATE
    )
    lay_out(short_dir, profile)

    async def published() -> dict[str, object] | None:
        listing = await api.list(
            resources.RESOURCE_SLICES,
            field_selector=f"spec.driver={names.DRIVER_NAME},spec.nodeName={world.node}",
        )
        return listing["items"][0] if listing["items"] else None

    async with running_plugin(env, api):
        slice_ = await eventually(published, what="the node's ResourceSlice")
    devices = slice_["spec"]["devices"]  # type: ignore[index]
    assert [d["name"] for d in devices] == ["channel-0", "daemon-0"]
    assert all(names.ATTRIBUTE_CLIQUE_ID not in d["attributes"] for d in devices)


@pytest.mark.parametrize(
    ("gates", "local_fabric"),
    [("", True), (GATE, False)],
    ids=["gate-off", "no-local-fabric"],
)
async def test_otherwise_an_unfinished_registration_still_refuses_to_start(
    api: Api,
    world: World,
    short_dir: Path,
    apiserver: testing.RunningServer,
    *,
    gates: str,
    local_fabric: bool,
) -> None:
    profile = fake.Profile.HGX_H100_PARTITION_PENDING
    env = node_environment(
        short_dir, world, apiserver, FAKE_NVML_PROFILE=profile.value, FEATURE_GATES=gates
    )
    if local_fabric:
        lay_out(short_dir, profile)
    with pytest.raises(StartupError, match="NVLink fabric not attached for GPU 0"):
        async with running_plugin(env, api):
            pass


async def test_an_unreadable_fabric_file_stops_the_start(
    api: Api, world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    env = node_environment(
        short_dir,
        world,
        apiserver,
        FAKE_NVML_PROFILE=fake.Profile.HGX_B200_PARTITION_PENDING.value,
        FEATURE_GATES=GATE,
    )
    vpd = short_dir / "driver-root" / localfabric.INFINIBAND_DEVICES / "mlx5_0" / localfabric.VPD
    vpd.mkdir(parents=True)  # a directory where the VPD should be: EISDIR, not "absent"
    with pytest.raises(StartupError, match="error checking if node is single-node NVLink system"):
        async with running_plugin(env, api):
            pass
