"""The node lock: one attempt at a time, and closing it never pulls the descriptor from under
an attempt that holds it (the plugin's shutdown closes it while cleanup may be inside)."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

import pytest

from computedomain.kubeletplugin.nodelock import LockTimeout, NodeLock


def taken_by_someone(path: Path) -> bool:
    """Whether a flock on ``path`` is held (by any open file description)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


async def test_close_while_held_waits_for_the_release(tmp_path: Path) -> None:
    lock = NodeLock(tmp_path / "pu.lock")
    async with lock.held():
        fd = lock._fd
        assert fd is not None
        lock.close()
        os.fstat(fd)  # still open: the holder's release needs it
        assert taken_by_someone(tmp_path / "pu.lock")
    assert lock._fd is None
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(fd)
    assert not taken_by_someone(tmp_path / "pu.lock")


async def test_a_cancelled_holder_stays_cancelled_when_the_lock_closes(tmp_path: Path) -> None:
    lock = NodeLock(tmp_path / "pu.lock")
    inside = asyncio.Event()

    async def attempt() -> None:
        async with lock.held():
            inside.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(attempt())
    await inside.wait()
    lock.close()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):  # not an OSError from the release
        await asyncio.wait_for(task, 5)
    assert lock._fd is None


async def test_the_lock_opens_again_after_close(tmp_path: Path) -> None:
    lock = NodeLock(tmp_path / "pu.lock")
    async with lock.held():
        pass
    lock.close()
    async with lock.held():
        assert taken_by_someone(tmp_path / "pu.lock")
    lock.close()
    assert lock._fd is None


async def test_another_process_holding_it_times_out(tmp_path: Path) -> None:
    path = tmp_path / "pu.lock"
    other = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(other, fcntl.LOCK_EX)
    try:
        lock = NodeLock(path, timeout=0.2)
        with pytest.raises(LockTimeout, match=r"pu\.lock"):
            async with lock.held():
                pass
    finally:
        os.close(other)
