"""A host's ``nvidia-imex`` service, simulated: one per node when the cluster runs host-managed
IMEX (docs/compatibility.md#host-managed-imex-daemons).

What the kubelet plugin relies on, laid out in the node's root as on a real host:

- ``/dev`` exists, so the plugin's dev root is its driver root and it asks through ``chroot``
  (the simulation's ``chroot`` stand-in, :mod:`.wrappers`, runs the tool under that root);
- ``/usr/bin/nvidia-imex-ctl`` is the ``nvidia-imex-ctl`` stand-in (:mod:`.ctl`, ``--u``);
- ``/etc/nvidia-imex/imex_ctrl.sock`` (``IMEX_HOST_SOCKET_PATH``'s default) is served by
  :class:`HostImex`, which answers each query ``READY``, or ``UNAVAILABLE`` while the node's
  marker file ``/var/lib/cd-sim/host-imex-not-ready`` exists (its text, if any, is added), so a
  test or a user can hold a node's host daemon back and release it.

The servers run in the cluster process (asyncio unix servers), so they stop with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Final

from computedomain.api import imex, names
from computedomain.daemon.files import atomic_write
from computedomain_sim.imex import wrappers

NOT_READY_MARKER: Final = "var/lib/cd-sim/host-imex-not-ready"
CTL_PATH: Final = f"usr/bin/{names.IMEX_CTL_BINARY}"
READY: Final = b"READY\n"


def answer(marker: Path) -> bytes:
    """What the host daemon says now. Reads the marker only."""
    try:
        detail = marker.read_text().strip()
    except FileNotFoundError:
        return READY
    except OSError as exc:
        detail = str(exc)
    return f"UNAVAILABLE{': ' + detail if detail else ''}\n".encode()


def lay_out(root: Path, *, ready: bool, interpreter: str | None = None) -> None:
    """Write the host's files into the node root ``root`` (idempotent); ``ready=False``
    creates the not-ready marker. Raises OSError."""
    (root / "dev").mkdir(parents=True, exist_ok=True)
    script = wrappers.standalone_script(
        wrappers.SCRIPTS[names.IMEX_CTL_BINARY], interpreter or sys.executable
    )
    atomic_write(root / CTL_PATH, script.encode(), mode=0o755)
    socket = root / imex.DEFAULT_HOST_SOCKET_PATH.lstrip("/")
    socket.parent.mkdir(parents=True, exist_ok=True)
    marker = root / NOT_READY_MARKER
    marker.parent.mkdir(parents=True, exist_ok=True)
    if not ready:
        marker.write_text(f"the simulated host daemon is held back (remove {marker})\n")


class HostImex:
    """The control socket of one node's host daemon."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = root / imex.DEFAULT_HOST_SOCKET_PATH.lstrip("/")
        self.marker = root / NOT_READY_MARKER
        self._server: asyncio.Server | None = None
        self.queries = 0

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            with contextlib.suppress(TimeoutError, OSError):
                async with asyncio.timeout(5.0):
                    await reader.readline()
            self.queries += 1
            writer.write(answer(self.marker))
            with contextlib.suppress(OSError):
                await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
