"""The node-wide prepare/unprepare lock: ``<plugin dir>/pu.lock`` plus an in-process mutex.

Every prepare or unprepare *attempt* holds it, and only the attempt: a channel claim's prepare
waits for a daemon whose own claim is prepared in another, concurrent request, so a lock held
across the wait would deadlock (docs/compatibility.md#timeouts-and-retries). The file lock
(``flock(LOCK_EX)``, released when the descriptor closes, also by a crash) excludes a second plugin
process on the node, e.g. during an upgrade; the asyncio mutex queues this process's attempts
without polling. Acquiring polls the file lock every 100 ms for at most 10 s, like upstream.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from computedomain.api.errors import TemporaryError

POLL_INTERVAL: Final = 0.1
TIMEOUT: Final = 10.0


class LockTimeout(TemporaryError):
    """The file lock stayed taken (by another process) for the whole timeout."""


class NodeLock:
    """Use ``async with lock.held():`` around one attempt."""

    def __init__(self, path: Path, *, timeout: float = TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout
        self._mutex = asyncio.Lock()
        self._fd: int | None = None
        self._closing = False

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return self._fd

    def _try_lock(self, fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold the lock for the body; raises LockTimeout (retryable) or OSError."""
        async with self._mutex:
            fd = self._open()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.timeout
            while not self._try_lock(fd):
                if loop.time() >= deadline:
                    msg = f"timed out after {self.timeout:g}s waiting for the lock {self.path}"
                    raise LockTimeout(msg)
                await asyncio.sleep(POLL_INTERVAL)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                if self._closing:
                    self._close_now()

    def close(self) -> None:
        """Close the descriptor. While an attempt holds the lock it closes when that attempt
        releases it: closing it under the holder would make the release fail (EBADF), or
        unlock whatever file took the descriptor's number meanwhile."""
        self._closing = True
        if not self._mutex.locked():
            self._close_now()

    def _close_now(self) -> None:
        self._closing = False
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
