"""Startup errors of the real command: ``Error: ...`` on stderr and exit status 1."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from computedomain.sim.apiserver import testing
from tests.integration.kubeletplugin.conftest import World, node_environment

pytestmark = pytest.mark.slow


async def run_plugin(env: dict[str, str]) -> tuple[int, str]:
    binary = Path(sys.executable).with_name("cd-kubelet-plugin")
    process = await asyncio.create_subprocess_exec(
        str(binary),
        env={**os.environ, **env},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, stderr.decode()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            {"FAKE_NVML_PROFILE": "a100"},
            "Error: --fake-nvml-profile/FAKE_NVML_PROFILE: unknown profile 'a100' "
            "(valid: gb200, h100, fabric-in-progress, mixed-cliques)",
        ),
        (
            {"FAKE_NVML_PROFILE": "fabric-in-progress"},
            "Error: NVLink fabric not attached for GPU 0",
        ),
    ],
    ids=["bad-setting", "fabric-not-ready"],
)
async def test_startup_errors(
    world: World,
    short_dir: Path,
    apiserver: testing.RunningServer,
    setting: dict[str, str],
    message: str,
) -> None:
    status, stderr = await run_plugin(node_environment(short_dir, world, apiserver, **setting))
    assert status == 1
    assert message in stderr
    assert "Traceback" not in stderr
