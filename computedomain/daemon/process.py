"""One run of the ``nvidia-imex`` child process: spawn, signal, stop, and its output.

Used by :mod:`computedomain.daemon.keeper`, which decides when to start, signal and restart;
this module only does it, through real processes and signals. The child's stdout and stderr
are merged into a pipe that we read line by line: each line is written to our own stderr (so it
stays in the pod log, as upstream's inherited streams did) and handed to ``on_line``, which is
how host conflicts are recognised (:mod:`computedomain.daemon.hostconflict`).

Stopping is SIGTERM, then SIGKILL after a timeout (upstream waits forever and relies on the
kubelet's grace period; we must leave time to deregister within it).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from computedomain.runtime import logs

log = logs.get_logger(__name__)


class ImexStartError(OSError):
    """The binary could not be executed (missing from PATH, not executable)."""


class ImexProcess:
    """A running (or finished) child. Create with :meth:`spawn`."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        reader: asyncio.Task[None],
        started_at: float,
    ) -> None:
        self._proc = proc
        self._reader = reader
        self.started_at = started_at

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        on_line: Callable[[str], None],
        env: Mapping[str, str] | None = None,
        tee: TextIO | None = None,
    ) -> ImexProcess:
        """Start ``argv`` with its output piped to us. Raises ImexStartError."""
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=dict(env) if env is not None else None,
            )
        except OSError as exc:
            msg = f"cannot execute {argv[0]!r}: {exc.strerror or exc}"
            raise ImexStartError(exc.errno or 0, msg) from exc
        assert proc.stdout is not None
        reader = asyncio.create_task(
            _pump(proc.stdout, on_line, tee or sys.stderr), name=f"imex-output-{proc.pid}"
        )
        log.info("Started process", pid=proc.pid, argv=" ".join(argv))
        return cls(proc, reader, asyncio.get_running_loop().time())

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait(self) -> int:
        """Wait for the exit and for the last line of output; the exit code (-N: signal N)."""
        code = await self._proc.wait()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2.0):
                await asyncio.shield(self._reader)
        return code

    def send(self, sig: int) -> bool:
        """Send ``sig`` if the child still runs; whether it was sent. Never raises."""
        if self._proc.returncode is not None:
            return False
        try:
            self._proc.send_signal(sig)
        except ProcessLookupError:
            return False
        return True

    async def stop(self, *, grace: float) -> int:
        """SIGTERM, then SIGKILL after ``grace`` seconds; the exit code. Idempotent."""
        if self.send(signal.SIGTERM):
            log.info("Stop: send SIGTERM", pid=self.pid)
        try:
            async with asyncio.timeout(grace):
                return await asyncio.shield(self.wait())
        except TimeoutError:
            log.warning("no exit after SIGTERM: send SIGKILL", pid=self.pid, grace_s=grace)
            self.send(signal.SIGKILL)
            return await self.wait()


async def _pump(stream: asyncio.StreamReader, on_line: Callable[[str], None], tee: TextIO) -> None:
    while True:
        try:
            raw = await stream.readline()
        except ValueError:  # a line longer than the stream limit: take what is there
            raw = await stream.read(65536)
        if not raw:
            return
        line = raw.decode(errors="replace")
        with contextlib.suppress(OSError, ValueError):
            tee.write(line if line.endswith("\n") else line + "\n")
            tee.flush()
        try:
            on_line(line)
        except Exception:  # a faulty observer must not stop the output from draining
            log.exception("output observer failed")
