"""A control-plane program's life as a real process: ready when its health endpoint answers,
a clear failure with its log when it exits first, and a stop that leaves nothing running and
nothing recorded under ``pids/``."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import pytest

from computedomain_sim.controlplane.process import Program, ProgramFailed


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _program(tmp_path: Path, argv: list[str], health_url: str = "http://127.0.0.1:1/") -> Program:
    return Program(
        "test-program",
        argv,
        log=tmp_path / "logs" / "test-program.log",
        health_url=health_url,
        ca_file=None,
        pid_dir=tmp_path / "pids",
        env={"PATH": os.environ["PATH"], "CD_SIM_ISOLATION": "pathmap"},
    )


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_ready_when_healthy_and_gone_after_stop(tmp_path: Path) -> None:
    port = _free_port()
    argv = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    program = _program(tmp_path, argv, f"http://127.0.0.1:{port}/")
    program.start()
    assert program.process is not None
    pid = program.process.pid
    try:
        assert (tmp_path / "pids" / str(pid)).is_file()
        await program.wait_ready(60)
        assert program.running()
    finally:
        await program.stop()
    assert not _alive(pid)
    assert not (tmp_path / "pids" / str(pid)).exists()
    await program.stop()  # idempotent


async def test_exit_before_ready_fails_with_the_log(tmp_path: Path) -> None:
    program = _program(tmp_path, ["sh", "-c", "echo cannot bind; exit 3"])
    program.start()
    try:
        with pytest.raises(ProgramFailed, match="exited with code 3") as failed:
            await program.wait_ready(60)
        assert "cannot bind" in str(failed.value)
    finally:
        await program.stop()


async def test_a_program_ignoring_sigterm_is_killed_with_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script = f'trap "" TERM; sleep 600 & echo $! > {marker}; wait'
    program = _program(tmp_path, ["sh", "-c", script])
    program.start()
    assert program.process is not None
    pid = program.process.pid
    for _ in range(600):
        if marker.exists() and marker.read_text().strip():
            break
        await asyncio.sleep(0.05)
    child = int(marker.read_text())
    await program.stop(grace=0.5)
    assert not _alive(pid)
    for _ in range(100):  # SIGKILL is delivered, the reaper may take a moment
        if not _alive(child):
            break
        await asyncio.sleep(0.05)
    assert not _alive(child)
