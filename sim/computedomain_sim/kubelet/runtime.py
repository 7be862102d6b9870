"""Start, signal and reap container processes: the simulation's container runtime.

Called by :mod:`.containers`. Each container is one process in its own session and process
group (so a signal reaches everything it started), with stdout and stderr appended to its log
file, started through :func:`.isolation.container_argv`. Its process group is recorded as a file
under ``pid_dir`` while it runs, so that ``computedomain sim down`` can kill whatever a crashed
cluster left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from . import isolation
from .launch import Isolation, LaunchSpec

__all__ = ["ContainerProcess", "exit_code", "start"]


def exit_code(returncode: int) -> int:
    """The container exit code Kubernetes reports: ``128 + signal`` for a signalled process."""
    return 128 - returncode if returncode < 0 else returncode


class ContainerProcess:
    """One running container process (its group leader)."""

    def __init__(self, process: asyncio.subprocess.Process, pid_file: Path | None) -> None:
        self._process = process
        self._pid_file = pid_file
        self.pid = process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    async def wait(self) -> int:
        """Wait for the process to exit; return its Kubernetes exit code. Idempotent."""
        code = await self._process.wait()
        # The rest of the container goes with its main process, as the kernel ends a pid
        # namespace with its init: a SIGKILLed daemon must not leave its nvidia-imex behind.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if self._pid_file is not None:
            self._pid_file.unlink(missing_ok=True)
        return exit_code(code)

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the container's process group (no-op once it has exited)."""
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)

    async def stop(self, grace: float) -> int:
        """SIGTERM, then SIGKILL after ``grace`` seconds (at once if ``grace`` <= 0).

        Returns the exit code. Idempotent.
        """
        if self._process.returncode is None:
            if grace > 0:
                self.signal(signal.SIGTERM)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(grace):
                        await asyncio.shield(self._process.wait())
            self.signal(signal.SIGKILL)
        return await self.wait()


async def start(
    spec: LaunchSpec,
    *,
    scratch: Path,
    log_file: Path,
    pid_dir: Path | None,
) -> ContainerProcess:
    """Start the container described by ``spec``. Not idempotent.

    ``scratch`` is an empty directory for the namespace init's root (mountns). Raises OSError if
    the process cannot be spawned (a missing program in pathmap mode is such an error; in mountns
    mode the init exits 127 instead).
    """
    argv, cwd = _prepare(spec, scratch, log_file)
    with log_file.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(spec.env),
            cwd=cwd,
            start_new_session=True,
        )
    return ContainerProcess(process, _record(pid_dir, process.pid))


def _prepare(spec: LaunchSpec, scratch: Path, log_file: Path) -> tuple[list[str], str]:
    """The argv and working directory to spawn; writes the init's spec file (mountns)."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    if spec.isolation is Isolation.MOUNTNS:
        scratch.mkdir(parents=True, exist_ok=True)
        spec_file = scratch.with_suffix(".json")
        spec_file.write_text(spec.to_json(scratch))
        return isolation.container_argv(spec.isolation, spec_file, spec.argv), "/"
    return list(spec.argv), spec.cwd if os.path.isdir(spec.cwd) else "/"


def _record(pid_dir: Path | None, pid: int) -> Path | None:
    if pid_dir is None:
        return None
    pid_dir.mkdir(parents=True, exist_ok=True)
    pid_file = pid_dir / str(pid)
    pid_file.write_text(f"{pid}\n")
    return pid_file
