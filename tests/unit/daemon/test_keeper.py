"""The keeper drives a real child process through real signals."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from computedomain.daemon import hostconflict
from computedomain.daemon.keeper import (
    Event,
    ImexInputs,
    ImexKeeper,
    KeeperTiming,
    restart_backoff,
)
from computedomain.daemon.process import ImexProcess
from tests.support.polling import eventually

CHILD = str(Path(__file__).with_name("fakechild.py"))
FAST = KeeperTiming(
    reload_interval=0.3, restart_initial=0.05, restart_max=0.2, stable_after=60.0, settle=0.3
)
A = (("compute-domain-daemon-0000", "10.0.0.1"),)
B = (("compute-domain-daemon-0000", "10.0.0.1"), ("compute-domain-daemon-0001", "10.0.0.2"))
C = (("compute-domain-daemon-0000", "10.0.0.1"), ("compute-domain-daemon-0001", "10.0.0.3"))


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


class Harness:
    def __init__(self, tmp: Path, timing: KeeperTiming, env: dict[str, str]) -> None:
        self.log = tmp / "child.log"
        self.findings: list[hostconflict.Finding] = []
        env = {**os.environ, **env}

        async def spawn(on_line: Callable[[str], None]) -> ImexProcess:
            return await ImexProcess.spawn(
                [sys.executable, CHILD, str(self.log)], on_line=on_line, env=env
            )

        self.keeper = ImexKeeper(spawn, timing=timing, on_finding=self.findings.append)

    def signals(self, kind: str) -> list[str]:
        return [line for line in lines(self.log) if line.startswith(kind)]


@pytest.fixture
async def make(tmp_path: Path) -> AsyncIterator[Callable[..., Harness]]:
    tasks: list[asyncio.Task[None]] = []

    def build(timing: KeeperTiming = FAST, **env: str) -> Harness:
        harness = Harness(tmp_path, timing, env)
        tasks.append(asyncio.create_task(harness.keeper.run()))
        return harness

    yield build
    for task in tasks:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_starts_only_once_startable(make: Callable[..., Harness]) -> None:
    h = make()
    h.keeper.want(ImexInputs(identity=None, names=A))
    h.keeper.want(ImexInputs(identity=0, names=A))
    await eventually(lambda: len(h.signals("start")) == 1)
    assert h.keeper.stats.history == [Event.STARTED]
    assert h.keeper.loaded == ImexInputs(identity=0, names=A)


async def test_changes_inside_the_reload_window_arrive_once_after_it(
    make: Callable[..., Harness],
) -> None:
    h = make()
    h.keeper.want(ImexInputs(identity=0, names=A))
    await eventually(lambda: len(h.signals("start")) == 1)
    h.keeper.want(ImexInputs(identity=0, names=B))
    h.keeper.want(ImexInputs(identity=0, names=C))
    await eventually(lambda: h.keeper.loaded.names == C)
    await eventually(lambda: len(h.signals("usr1")) == 1)
    assert h.keeper.stats.reloads == 1
    assert h.keeper.stats.history == [Event.STARTED, Event.RELOADED]
    # A later change, after the window, is delivered too.
    h.keeper.want(ImexInputs(identity=0, names=A))
    await eventually(lambda: len(h.signals("usr1")) == 2)
    assert h.keeper.stats.starts == 1


async def test_an_own_index_change_restarts_the_child(make: Callable[..., Harness]) -> None:
    h = make()
    h.keeper.want(ImexInputs(identity=0, names=A))
    # The child logs its start before the keeper's spawn returns and records its pid.
    await eventually(lambda: len(h.signals("start")) == 1 and h.keeper.pid is not None)
    first = h.keeper.pid
    h.keeper.want(ImexInputs(identity=1, names=A))
    await eventually(lambda: h.keeper.pid not in (None, first))
    assert h.signals("term") == [f"term {first}"]
    assert h.keeper.stats.history == [Event.STARTED, Event.RESTARTED_FOR_IDENTITY, Event.STARTED]
    assert h.signals("usr1") == []


async def test_a_killed_child_is_started_again(make: Callable[..., Harness]) -> None:
    h = make()
    h.keeper.want(ImexInputs(identity=0, names=A))
    await eventually(lambda: len(h.signals("start")) == 1 and h.keeper.pid is not None)
    first = h.keeper.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    await eventually(lambda: h.keeper.pid not in (None, first))
    assert h.keeper.stats.unexpected_exits == 1
    assert h.keeper.stats.history == [Event.STARTED, Event.EXITED, Event.STARTED]


def test_restart_backoff_doubles_to_the_cap_and_resets_after_a_stable_run() -> None:
    timing = KeeperTiming(restart_initial=1.0, restart_max=30.0, stable_after=60.0)
    delay, waits = timing.restart_initial, []
    for _ in range(7):
        wait, delay = restart_backoff(delay, ran=0.5, timing=timing)
        waits.append(wait)
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert restart_backoff(delay, ran=61.0, timing=timing) == (1.0, 2.0)


async def test_a_host_session_holder_is_reported_and_blocks_until_gone(
    make: Callable[..., Harness], tmp_path: Path
) -> None:
    marker = tmp_path / "host-holds-session"
    marker.touch()
    h = make(PRINT="Failed to allocate Imex session: NV_ERR_IN_USE", EXIT_IF_FILE=str(marker))
    h.keeper.want(ImexInputs(identity=0, names=A))
    await eventually(lambda: len(h.findings) >= 2)
    assert {f.reason for f in h.findings} == {hostconflict.Reason.SESSION_IN_USE}
    assert h.keeper.blocked_by is not None
    marker.unlink()  # the admin stopped nvidia-imex.service on the host
    await eventually(lambda: h.keeper.blocked_by is None)
    assert h.keeper.pid is not None


async def test_cancelling_stops_the_child_and_kills_one_that_ignores_sigterm(
    tmp_path: Path,
) -> None:
    timing = KeeperTiming(stop_timeout=0.3)
    h = Harness(tmp_path, timing, {"IGNORE_TERM": "1"})
    task = asyncio.create_task(h.keeper.run())
    h.keeper.want(ImexInputs(identity=0, names=A))
    await eventually(lambda: len(h.signals("start")) == 1)
    pid = h.keeper.pid
    assert pid is not None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert h.signals("term") == [f"term {pid}"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
