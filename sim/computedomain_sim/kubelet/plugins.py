"""The kubelet's plugin manager: finds DRA plugins in the node's registry directory and
registers them through the real handshake.

Called by :mod:`.kubelet`, which asks :meth:`PluginManager.client` for a driver's client when it
prepares claims. Scans the registry directory (every ``scan_interval`` seconds; the real kubelet
uses inotify) for sockets whose name does not start with ``.``; a new socket, or a socket file
that was replaced (a restarted plugin), gets ``GetInfo`` → checks → ``NotifyRegistrationStatus``
(:func:`computedomain.proto.kubelet_client.register`); a failed handshake is retried on later
scans. The endpoint the plugin reports is a path on the node, mapped through
:class:`.paths.NodePaths`. A socket that disappears deregisters its driver and, after
``wiping_delay`` without a new registration, ``on_gone(driver)`` is called (the kubelet then
deletes the driver's ResourceSlices of this node).

Each registration has one gRPC connection, made on the first call and used for every call
after it, as the kubelet keeps one connection per plugin; it is closed when the plugin
deregisters or is registered again, and by :meth:`PluginManager.close`. (A connection per call
paid a connect and an HTTP/2 handshake each time.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Awaitable, Callable

import attrs

from computedomain.proto import kubelet_client
from computedomain.runtime import logs
from computedomain.runtime.clock import REAL_CLOCK, Clock

from .paths import NodePaths

__all__ = ["PluginManager", "RegisteredPlugin"]

_log = logs.get_logger(__name__)


@attrs.frozen
class RegisteredPlugin:
    """A plugin the kubelet registered: its driver name, sockets (real paths) and version."""

    driver: str
    socket: str
    inode: tuple[int, int]  # (inode, ctime in ns): an inode number alone is reused at once
    registration: kubelet_client.Registration


class PluginManager:
    """Registered plugins of one node, by driver name."""

    def __init__(
        self,
        paths: NodePaths,
        *,
        on_change: Callable[[], None],
        on_gone: Callable[[str], Awaitable[None]],
        scan_interval: float = 0.2,
        wiping_delay: float = 30.0,
        clock: Clock | None = None,
    ) -> None:
        self.paths = paths
        self.on_change = on_change
        self.on_gone = on_gone
        self.scan_interval = scan_interval
        self.wiping_delay = wiping_delay
        self.clock = clock or REAL_CLOCK
        self.plugins: dict[str, RegisteredPlugin] = {}
        self._failed: dict[
            tuple[str, tuple[int, int]], float
        ] = {}  # socket -> retry-after (monotonic)
        self._wipes: dict[str, asyncio.Task[None]] = {}
        # driver -> (the registration it was made for, its connection)
        self._clients: dict[str, tuple[RegisteredPlugin, kubelet_client.DraClient]] = {}
        self._closings: set[asyncio.Task[None]] = set()  # held: the loop keeps weak references

    def client(self, driver: str) -> kubelet_client.DraClient | None:
        """The connection to ``driver``'s DRA service, or None when it is not registered.
        Shared by every call (module docstring): do not close it."""
        plugin = self.plugins.get(driver)
        if plugin is None:
            return None
        made = self._clients.get(driver)
        if made is None or made[0] != plugin:
            if made is not None:
                self._closing(made[1])
            made = (plugin, kubelet_client.DraClient.for_registration(plugin.registration))
            self._clients[driver] = made
        return made[1]

    def _closing(self, client: kubelet_client.DraClient) -> None:
        """Close ``client`` in the background (calls on it still in flight fail, as they
        would with the plugin gone)."""
        task = asyncio.ensure_future(client.close())
        self._closings.add(task)
        task.add_done_callback(self._closed)

    def _closed(self, task: asyncio.Task[None]) -> None:
        self._closings.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a failed close of a dropped connection is not news

    def _forget(self, driver: str) -> None:
        made = self._clients.pop(driver, None)
        if made is not None:
            self._closing(made[1])

    def forget_all(self) -> None:
        """Drop every registration and its connection (a reboot: the plugins start again)."""
        self.plugins.clear()
        for driver in list(self._clients):
            self._forget(driver)

    async def close(self) -> None:
        """Close every connection, and wait for those being closed in the background.
        Idempotent."""
        clients = [client for _, client in self._clients.values()]
        self._clients.clear()
        await asyncio.gather(
            *(client.close() for client in clients), *self._closings, return_exceptions=True
        )

    async def run(self) -> None:
        """Scan until cancelled."""
        try:
            while True:
                await self.scan()
                await self.clock.sleep(self.scan_interval)
        finally:
            for task in self._wipes.values():
                task.cancel()
            await self.close()

    async def scan(self) -> None:
        """One pass over the registry directory. Idempotent."""
        present = dict(_sockets(str(self.paths.registry_dir)))
        for driver, plugin in list(self.plugins.items()):
            if present.get(plugin.socket) != plugin.inode:
                del self.plugins[driver]
                self._forget(driver)
                _log.info("plugin deregistered", driver=driver, socket=plugin.socket)
                self._schedule_wipe(driver)
                self.on_change()
        known = {(p.socket, p.inode) for p in self.plugins.values()}
        now = self.clock.monotonic()
        for socket, inode in present.items():
            if (socket, inode) in known or self._failed.get((socket, inode), 0.0) > now:
                continue
            try:
                registration = await kubelet_client.register(socket)
            except (kubelet_client.RegistrationError, kubelet_client.KubeletRpcError) as exc:
                _log.info("plugin registration failed", socket=socket, error=str(exc))
                self._failed[(socket, inode)] = now + 1.0
                continue
            endpoint = str(self.paths.host(registration.endpoint))
            registration = attrs.evolve(registration, endpoint=endpoint)
            self.plugins[registration.name] = RegisteredPlugin(
                registration.name, socket, inode, registration
            )
            wipe = self._wipes.pop(registration.name, None)
            if wipe is not None:
                wipe.cancel()
            _log.info("plugin registered", driver=registration.name, endpoint=endpoint)
            self.on_change()

    def _schedule_wipe(self, driver: str) -> None:
        async def wipe_later() -> None:
            await self.clock.sleep(self.wiping_delay)
            if driver not in self.plugins:
                await self.on_gone(driver)

        old = self._wipes.pop(driver, None)
        if old is not None:
            old.cancel()
        self._wipes[driver] = asyncio.ensure_future(wipe_later())


def _sockets(directory: str) -> list[tuple[str, tuple[int, int]]]:
    """(path, (inode, ctime ns)) of every socket directly in ``directory`` not starting with
    '.'. A plugin killed with SIGKILL leaves its socket file; its successor unlinks it and binds
    a new one, often with the inode number just freed: the change time tells them apart."""
    out: list[tuple[str, tuple[int, int]]] = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(directory):
            if entry.name.startswith("."):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISSOCK(info.st_mode):
                    out.append((entry.path, (info.st_ino, info.st_ctime_ns)))
    return out
