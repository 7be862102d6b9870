"""Asking the host's ``nvidia-imex`` whether it is ready (host-managed IMEX only).

The contract: docs/compatibility.md#host-managed-imex-daemons. Before a channel claim completes
on a node with a clique, the plugin runs the host's own ``nvidia-imex-ctl -q`` against the host
daemon's control socket. At each check (not at startup, so installing IMEX later needs no
restart): find ``nvidia-imex-ctl`` under the dev root (:func:`~.basespec.dev_root`) in
:data:`SEARCH_DIRS`, symlinks followed, regular files only; run
``chroot <dev root> nvidia-imex-ctl -q --u=<socket>`` (the socket path resolved inside the
chroot; with the dev root ``/`` the tool runs directly, which is the same thing) with stdout and
stderr together and a timeout; the daemon is ready when the command exits 0 and its output
has ``READY`` as a word of its own (upstream looks for the substring, which ``NOT_READY``
also holds). Every failure is retryable (:class:`HostImexNotReady`) and carries
upstream's words. :func:`locate` and :func:`command` are pure apart from reading the file
system; :meth:`HostImex.check` runs the process.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from computedomain.api import names
from computedomain.api.errors import TemporaryError
from computedomain.kubeletplugin import basespec

SEARCH_DIRS: Final = ("/", "/opt/bin", "/usr/bin", "/usr/sbin", "/bin", "/sbin")
READY: Final = "READY"
_READY_WORD: Final = re.compile(rf"\b{READY}\b")
TIMEOUT: Final = 10.0  # seconds; the tool answers at once or the daemon is not there
MAX_OUTPUT: Final = 4096
CHROOT: Final = "chroot"


class HostImexNotReady(TemporaryError):
    """The host daemon did not answer READY (or could not be asked); the message says why."""


def locate(root: Path, dirs: Sequence[str] = SEARCH_DIRS) -> str:
    """The path, inside ``root``, of ``nvidia-imex-ctl``. Raises HostImexNotReady.

    Symlinks are followed (outside ``root`` too, as the file system resolves them here) and
    only a regular file counts.
    """
    problems = []
    for directory in dirs:
        inside = os.path.join(directory, names.IMEX_CTL_BINARY)
        candidate = Path(str(root).rstrip("/") + inside)
        try:
            if candidate.is_file():
                return inside
        except OSError as exc:
            problems.append(f"{candidate}: {exc}")
            continue
        problems.append(f"{candidate}: not a file")
    searched = ", ".join(dirs)
    raise HostImexNotReady(
        f'{names.IMEX_CTL_BINARY} not found under driver root "{root}": not found in {searched}'
        " (is nvidia-imex installed on this node?)"
    )


def command(root: Path, tool: str, socket_path: str, chroot: str = CHROOT) -> list[str]:
    """The argv that asks the host daemon: through ``chroot`` unless ``root`` is ``/``. Pure."""
    query = ["-q", f"--u={socket_path}"]
    if os.path.normpath(str(root)) == "/":
        return [tool, *query]
    return [chroot, str(root), tool, *query]


def verdict(returncode: int, output: str, socket_path: str) -> None:
    """Raise HostImexNotReady unless the tool succeeded and said READY (as a word: not
    ``NOT_READY``). Pure."""
    text = output.strip()
    if returncode != 0:
        why = f"exit status {returncode}" if returncode > 0 else f"signal {-returncode}"
        raise HostImexNotReady(
            f'error running {names.IMEX_CTL_BINARY} (socket "{socket_path}"): {why}, output: {text}'
        )
    if _READY_WORD.search(output) is None:
        raise HostImexNotReady(f"host nvidia-imex daemon not ready: {text}")


class HostImex:
    """One node's host-daemon check; see the module doc."""

    def __init__(
        self,
        container_driver_root: Path,
        socket_path: str,
        *,
        timeout: float = TIMEOUT,
        chroot: str = CHROOT,
    ) -> None:
        self.container_driver_root = container_driver_root
        self.socket_path = socket_path
        self.timeout = timeout
        self.chroot = chroot  # looked up on PATH

    async def check(self) -> None:
        """Ask the host daemon once. Returns when READY; raises HostImexNotReady otherwise."""
        root = basespec.dev_root(self.container_driver_root)
        tool = locate(root)
        argv = command(root, tool, self.socket_path, self.chroot)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
        except OSError as exc:
            raise HostImexNotReady(
                f'error running {names.IMEX_CTL_BINARY} (socket "{self.socket_path}"): {exc}'
            ) from exc
        try:
            async with asyncio.timeout(self.timeout):
                out, _ = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise HostImexNotReady(
                f'error running {names.IMEX_CTL_BINARY} (socket "{self.socket_path}"): '
                f"no answer within {self.timeout:g}s"
            ) from None
        except BaseException:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
        output = out[:MAX_OUTPUT].decode(errors="replace")
        verdict(proc.returncode if proc.returncode is not None else -1, output, self.socket_path)
