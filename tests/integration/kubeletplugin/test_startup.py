"""Startup errors of the real command: ``Error: ...`` on stderr and exit status 1."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from computedomain_sim.apiserver import testing
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


async def test_a_failed_node_check_is_an_error_not_a_traceback(
    world: World, short_dir: Path, apiserver: testing.RunningServer
) -> None:
    env = node_environment(short_dir, world, apiserver, FAKE_NVML_PROFILE="fabric-in-progress")
    status, stderr = await run_plugin(env)
    assert status == 1
    assert "Error: NVLink fabric not attached for GPU 0" in stderr
    assert "Traceback" not in stderr
