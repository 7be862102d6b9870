"""One control-plane program as a child process: started with its output in a log file, waited
on until its health endpoint answers, stopped with SIGTERM (SIGKILL after a grace period).

Called by :mod:`.kube`. Each program runs in its own session (a process group of its own) and
is recorded under the cluster's ``pids/`` with the simulation's environment marker, so that
``computedomain sim down`` kills it even when the process hosting the cluster died without
stopping it. A program that exits before it is ready fails the wait at once, with the end of
its log in the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import ssl
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import aiohttp

from computedomain.runtime import logs

__all__ = ["Program", "ProgramFailed"]

_log = logs.get_logger(__name__)
_POLL = 0.1
_TAIL_LINES = 30


class ProgramFailed(RuntimeError):
    """A control-plane program exited or did not become ready; the message has its log's end."""


class Program:
    """A control-plane program: ``argv``, logging to ``log``, healthy when ``health_url``
    answers 200 (over TLS trusting ``ca_file`` when given)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log: Path,
        health_url: str,
        ca_file: Path | None,
        pid_dir: Path,
        env: Mapping[str, str],
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.health_url = health_url
        self.ca_file = ca_file
        self.pid_dir = pid_dir
        self.env = dict(env)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Spawn the program. Raises OSError when it cannot be spawned."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self.env,
            )
        self.pid_dir.mkdir(parents=True, exist_ok=True)
        (self.pid_dir / str(self.process.pid)).write_text(f"{self.process.pid}\n")
        _log.info("started", program=self.name, pid=self.process.pid)

    async def wait_ready(self, within: float) -> None:
        """Poll the health endpoint until it answers 200. Raises :class:`ProgramFailed` when
        the program exits first or is not healthy within ``within`` seconds."""
        context = ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file else None
        timeout = aiohttp.ClientTimeout(total=5)
        last = "no answer yet"
        async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
            try:
                async with asyncio.timeout(within):
                    while True:
                        self._check_running()
                        last = await _probe(session, self.health_url, context)
                        if not last:
                            return
                        await asyncio.sleep(_POLL)
            except TimeoutError:
                msg = f"{self.name} is not ready after {within:g}s ({last})\n{self.tail()}"
                raise ProgramFailed(msg) from None

    def _check_running(self) -> None:
        assert self.process is not None, "start() first"
        code = self.process.poll()
        if code is not None:
            msg = f"{self.name} exited with code {code}\n{self.tail()}"
            raise ProgramFailed(msg)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    async def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the program's group, SIGKILL it after ``grace`` seconds (idempotent)."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                await asyncio.to_thread(process.wait, grace)
            except subprocess.TimeoutExpired:
                _log.warning("killing", program=self.name, grace=grace)
                _signal_group(process.pid, signal.SIGKILL)
                await asyncio.to_thread(process.wait)
        # The group may hold children the program started; none must outlive it.
        _signal_group(process.pid, signal.SIGKILL)
        (self.pid_dir / str(process.pid)).unlink(missing_ok=True)
        self.process = None

    def tail(self) -> str:
        """The last lines of the program's log ("" when there is none)."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        lines = text.splitlines()[-_TAIL_LINES:]
        return "\n".join(f"  {self.name}| {line}" for line in lines)


async def _probe(session: aiohttp.ClientSession, url: str, context: ssl.SSLContext | None) -> str:
    """ "" when ``url`` answers 200, else what it answered (or why it did not)."""
    try:
        async with session.get(url, ssl=context if context is not None else True) as answer:
            if answer.status == 200:
                return ""
            return f"HTTP {answer.status}"
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
