"""The container runner never leaves a process behind that nobody watches: not when the stop
comes while the process is being spawned, not when the runner is cancelled while it runs (the
simulated cluster's teardown once waited forever for such a process)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from computedomain.runtime.clock import REAL_CLOCK
from computedomain_sim.kubelet import restarts
from computedomain_sim.kubelet.containers import ContainerRunner
from computedomain_sim.kubelet.launch import Image, Isolation, LaunchSpec
from computedomain_sim.kubelet.status import State

SLEEPER = LaunchSpec(
    argv=(sys.executable, "-c", "import time; time.sleep(600)"),
    env={},
    cwd="/",
    mounts=(),
    devices=(),
    isolation=Isolation.PATHMAP,
)


def runner(tmp_path: Path) -> ContainerRunner:
    return ContainerRunner(
        container={"name": "main"},
        restart_policy="Always",
        make_spec=lambda: SLEEPER,
        pod_ip="127.0.0.1",
        image=Image(commands={}, env={}),
        clock=REAL_CLOCK,
        backoff=restarts.Backoff(),
        scratch=tmp_path / "root",
        log_file=tmp_path / "main.log",
        pid_dir=tmp_path / "pids",
        on_change=lambda: None,
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_stop_during_the_spawn_kills_the_new_process(tmp_path: Path) -> None:
    r = runner(tmp_path)
    stopping: list[asyncio.Task[None]] = []

    def spec_then_stop() -> LaunchSpec:
        # Runs while the spawn is under way, so the stop finds no process to signal yet.
        stopping.append(asyncio.get_running_loop().create_task(r.stop(30)))
        return SLEEPER

    r.make_spec = spec_then_stop
    await asyncio.wait_for(r.run(), 10)
    await stopping[0]
    assert r.record.state is not State.RUNNING
    assert not list((tmp_path / "pids").iterdir()), "the process is still recorded as running"


async def test_a_cancelled_runner_kills_its_process(tmp_path: Path) -> None:
    r = runner(tmp_path)
    task = asyncio.create_task(r.run())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while r.record.state is not State.RUNNING:
        assert loop.time() < deadline, "the container never ran"
        await asyncio.sleep(0.01)
    pid = r.record.pid
    assert pid is not None
    assert alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert not alive(pid)
