"""cd-kubelet-plugin on its real NVML backend, against the mock NVML library under its driver
root: it serves as on the fake backend, and a node it must refuse is refused with the same error.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.proto import dra
from computedomain_sim import nvmlmock
from computedomain_sim.apiserver import testing
from tests.integration.kubeletplugin.conftest import (
    CLIQUE,
    DRIVER_NAMESPACE,
    World,
    node_environment,
    ref,
    running_plugin,
)
from tests.integration.kubeletplugin.test_startup import run_plugin
from tests.support.polling import eventually

pytestmark = pytest.mark.slow


def real_environment(
    root: Path, world: World, apiserver: testing.RunningServer, *, profile: str = "gb200"
) -> dict[str, str]:
    """The node's environment with the mock library and ``profile`` instead of the fake."""
    env = node_environment(root, world, apiserver, NVML_BACKEND="real")
    nvmlmock.install(Path(env["DRIVER_ROOT_CTR_PATH"]), nvmlmock.build())
    document = nvmlmock.write_profile(root / "nvml-profile.json", profile, CLIQUE)
    env["NVML_MOCK_PROFILE"] = str(document)
    return env


async def test_the_plugin_publishes_and_prepares_on_the_real_backend(
    api: Api,
    world: World,
    short_dir: Path,
    apiserver: testing.RunningServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cd = await world.domain("job")
    await world.daemon_ready(cd)
    daemon = await world.claim("daemon", cd["metadata"]["uid"], namespace=DRIVER_NAMESPACE)
    env = real_environment(short_dir, world, apiserver)
    # The plugin runs in this process: the library reads the profile from the process's env.
    monkeypatch.setenv("NVML_MOCK_PROFILE", env["NVML_MOCK_PROFILE"])
    async with running_plugin(env, api) as plugin:

        async def published() -> list[dict[str, Any]]:
            listing = await api.list(
                resources.RESOURCE_SLICES,
                field_selector=f"spec.driver={names.DRIVER_NAME},spec.nodeName={world.node}",
            )
            return list(listing["items"])

        (found,) = await eventually(published, what="the slice")
        assert found["spec"]["devices"][0]["attributes"]["cliqueID"] == {"string": CLIQUE}
        async with await plugin.kubelet(dra.Version.V1) as client:
            result = (await client.prepare([ref(daemon)]))[daemon["metadata"]["uid"]]
        assert result.error == ""


@pytest.mark.parametrize("profile", ["fabric-in-progress", "fabric-failure", "mixed-cliques"])
async def test_a_node_is_refused_with_the_error_of_the_fake_backend(
    world: World, short_dir: Path, apiserver: testing.RunningServer, profile: str
) -> None:
    faked = node_environment(short_dir / "fake", world, apiserver, FAKE_NVML_PROFILE=profile)
    real = real_environment(short_dir / "real", world, apiserver, profile=profile)
    fake_status, fake_err = await run_plugin(faked)
    real_status, real_err = await run_plugin(real)
    assert (fake_status, real_status) == (1, 1)
    assert _error_line(real_err) == _error_line(fake_err)
    assert "Traceback" not in real_err


def _error_line(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if line.startswith("Error: "))


async def test_a_bad_profile_stops_the_plugin_with_the_reason(
    world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    env = real_environment(short_dir, world, apiserver)
    await asyncio.to_thread(Path(env["NVML_MOCK_PROFILE"]).write_text, '{"gpus": {}}')
    status, stderr = await run_plugin(env)
    assert status == 1
    assert _error_line(stderr) == "Error: NVML: nvmlInitWithFlags: ERROR_UNKNOWN"
    profile = env["NVML_MOCK_PROFILE"]
    assert f"nvml-mock: profile {profile} (NVML_MOCK_PROFILE): driverVersion: is required" in stderr
    assert "Traceback" not in stderr
