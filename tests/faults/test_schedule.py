"""The fault scheduler: one seed, one sequence of events; lasting faults are undone; and the
faults that need no simulation strike real processes (SIGKILL, a full disk)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Sequence

import attrs
import pytest

from computedomain.runtime.clock import ManualClock
from computedomain_sim.faults.disk import FullDisk
from computedomain_sim.faults.processes import KillProcess
from computedomain_sim.faults.schedule import FaultScheduler, Injected, Rate


@attrs.define
class Recorded:
    """A fault that only records what it was asked to strike (and its undos)."""

    name: str
    names: tuple[str, ...] = ("a", "b", "c")
    lasting: bool = False
    struck: list[str] = attrs.field(factory=list)
    undone: list[str] = attrs.field(factory=list)

    @property
    def kind(self) -> str:
        return self.name

    def targets(self) -> Sequence[str]:
        return self.names

    async def inject(self, target: str) -> Injected | None:
        self.struck.append(target)

        async def undo() -> None:
            self.undone.append(target)

        return Injected(f"hit {target}", undo if self.lasting else None)


async def history(seed: int) -> list[tuple[float, str, str]]:
    clock = ManualClock()
    scheduler = FaultScheduler(
        [Rate(Recorded("kill"), 2.0), Rate(Recorded("full-disk", lasting=True), 1.0)],
        seed=seed,
        clock=clock,
    )
    task = asyncio.create_task(scheduler.run())
    for _ in range(200):
        await asyncio.sleep(0)
        clock.advance(0.05)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return [(e.at, e.kind, e.target) for e in scheduler.history]


async def test_one_seed_one_sequence_of_events() -> None:
    first = await history(7)
    assert len(first) > 10
    assert await history(7) == first
    assert await history(8) != first
    assert {kind for _, kind, _ in first} == {"kill", "full-disk"}


async def test_lasting_faults_are_undone() -> None:
    clock = ManualClock()
    disk = Recorded("full-disk", lasting=True)
    scheduler = FaultScheduler([Rate(disk, 1.0)], seed=3, clock=clock, hold=(1.0, 1.0))
    assert await scheduler.fire(disk) is not None
    assert await scheduler.fire(disk) is not None
    assert disk.undone == []
    assert await scheduler.heal() == 2
    assert sorted(disk.undone) == sorted(disk.struck)
    assert scheduler.counts.by_kind() == {"full-disk": 2}


async def test_no_target_no_event() -> None:
    empty = Recorded("kill", names=())
    scheduler = FaultScheduler([Rate(empty, 1.0)], seed=1)
    assert await scheduler.fire(empty) is None
    assert scheduler.history == []


async def test_kill_and_full_disk_on_real_processes() -> None:
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        # Writes a byte to a file whenever asked; prints the outcome.
        "import sys, tempfile\n"
        "for _ in sys.stdin:\n"
        "    try:\n"
        "        with tempfile.TemporaryFile() as f: f.write(b'x'); f.flush()\n"
        "        print('ok', flush=True)\n"
        "    except OSError as e: print(e.strerror, flush=True)\n",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert writer.stdin is not None
    assert writer.stdout is not None

    async def write() -> str:
        assert writer.stdin is not None
        assert writer.stdout is not None
        writer.stdin.write(b"go\n")
        await writer.stdin.drain()
        return (await writer.stdout.readline()).decode().strip()

    table = {"writer": writer.pid}
    scheduler = FaultScheduler([], seed=1)
    try:
        assert await write() == "ok"
        assert await scheduler.fire(FullDisk(lambda: table)) is not None
        assert await write() == "File too large"  # EFBIG, and the process lives on
        await scheduler.heal()
        assert await write() == "ok"
        assert await scheduler.fire(KillProcess(lambda: table)) is not None
        assert await writer.wait() == -signal.SIGKILL
        assert scheduler.counts.by_kind() == {"full-disk": 1, "kill": 1}
    finally:
        if writer.returncode is None:
            writer.kill()
            await writer.wait()


def test_rates_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        FaultScheduler([Rate(Recorded("kill"), -1.0)], seed=1)
