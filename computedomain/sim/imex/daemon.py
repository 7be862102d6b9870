"""Stand-in for ``nvidia-imex``: ``python -m computedomain.sim.imex.daemon -c <imexd.cfg>``.

Behaves like the real daemon where cd-imex-daemon depends on it:

- reads ``SERVER_PORT``, ``IMEX_NODE_CONFIG_FILE``, ``IMEX_CMD_*`` from the config, and the
  node list (names or IPs) from the nodes file, only at start;
- resolves names through a hosts file (``--hosts-file``, else ``HOSTS_FILE``, else
  ``/etc/hosts``) at start and on SIGUSR1; SIGUSR1 is handled at most once per
  ``SIM_IMEX_RELOAD_INTERVAL`` seconds (5 s like the real one); repeats inside the window are
  ignored. The signal handler is in place before the first resolution, and the wrapper script
  ignores SIGUSR1 until then, so an early signal can neither kill it nor be lost;
- identifies itself by matching local addresses against the resolved nodes. In the simulation
  every pod IP is a loopback alias, so "local" means the IPs given to it: the config's
  ``IMEX_CMD_BIND_INTERFACE_IP`` and ``BIND_INTERFACE_IP``, and ``POD_IP`` from the
  environment. No match: it prints the real message and exits 1;
- with ``SIM_IMEX_HOST_SESSION_FILE`` naming an existing file (the host's ``nvidia-imex.service``
  holds the session) it prints the real ``NV_ERR_IN_USE`` failure and exits 1;
- listens on ``<own IP>:SERVER_PORT``, connects to every resolved peer with a hello exchange
  (reconnecting 0.5 s → 3 s), serves the command port for ``nvidia-imex-ctl -q``;
- writes a JSON status file (:mod:`computedomain.sim.imex.status`) for tests, coalescing the
  changes of a burst into one write;
- exits 0 on SIGTERM/SIGINT/SIGQUIT, and when its parent goes away (no orphans in tests).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import json
import os
import signal
import sys
from pathlib import Path

from computedomain.daemon import imexconfig
from computedomain.sim.imex import status as status_file

HOST_SESSION_ENV = "SIM_IMEX_HOST_SESSION_FILE"
RELOAD_INTERVAL_ENV = "SIM_IMEX_RELOAD_INTERVAL"
NO_INTERFACE_MESSAGE = (
    "No matching network interface found for any IP addresses in the node configuration file"
)
SESSION_IN_USE_MESSAGE = "Failed to allocate Imex session: NV_ERR_IN_USE (host IMEX daemon?)"
# Status-file writes are coalesced over this window (each is an fsync; a domain of N daemons
# connecting is N*N connection changes).
PUBLISH_DELAY_S = 0.05


def resolve_table(hosts_text: str) -> dict[str, str]:
    """Name → address of a hosts file; the first line naming a host wins. Pure."""
    table: dict[str, str] = {}
    for line in hosts_text.splitlines():
        fields = line.split("#", 1)[0].split()
        for name in fields[1:]:
            table.setdefault(name, fields[0])
    return table


def resolve(node: str, table: dict[str, str]) -> str | None:
    """The address of a nodes-file entry: an IP literal is itself, a name is looked up."""
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(node))
    return table.get(node)


class StandIn:
    def __init__(
        self, config: dict[str, str], nodes: list[str], hosts_file: Path, status_path: Path
    ) -> None:
        self.config = config
        self.nodes = nodes
        self.hosts_file = hosts_file
        self.status_path = status_path
        self.port = int(config.get("SERVER_PORT") or 50000)
        self.status = status_file.Status(pid=os.getpid())
        self.reload_interval = float(os.environ.get(RELOAD_INTERVAL_ENV, "5"))
        self.last_reload = float("-inf")
        self.connectors: dict[int, asyncio.Task[None]] = {}
        self.inbound: dict[int, int] = {}
        # peer id -> the connector that has a live, verified connection to it
        self.up: dict[int, object] = {}
        self.stop = asyncio.Event()
        self._publishing: asyncio.TimerHandle | None = None

    def local_ips(self) -> set[str]:
        candidates = (
            self.config.get("IMEX_CMD_BIND_INTERFACE_IP", ""),
            self.config.get("BIND_INTERFACE_IP", ""),
            os.environ.get("POD_IP", ""),
        )
        return {ip for ip in candidates if ip}

    def publish(self) -> None:
        """Write the status file soon: the changes of a burst (a domain's peers connecting
        within a few milliseconds) are written once, after :data:`PUBLISH_DELAY_S`."""
        if self._publishing is None:
            loop = asyncio.get_running_loop()
            self._publishing = loop.call_later(PUBLISH_DELAY_S, self.flush)

    def flush(self) -> None:
        """Write the status file now (atomically)."""
        if self._publishing is not None:
            self._publishing.cancel()
            self._publishing = None
        self.status.connected = sorted(self.up)
        self.status.inbound = sorted(i for i, n in self.inbound.items() if n > 0)
        status_file.write(self.status_path, self.status)

    def resolve_all(self) -> dict[int, str]:
        table = resolve_table(self.hosts_file.read_text() if self.hosts_file.exists() else "")
        resolved = {i: ip for i, node in enumerate(self.nodes) if (ip := resolve(node, table))}
        self.status.resolved = {self.nodes[i]: ip for i, ip in resolved.items()}
        return resolved

    # --- peers --------------------------------------------------------------------------------

    def connect_peers(self, resolved: dict[int, str]) -> None:
        expected = {i: ip for i, ip in resolved.items() if i != self.status.node_id}
        for peer, task in list(self.connectors.items()):
            if self.status.expected.get(peer) != expected.get(peer):
                task.cancel()
                del self.connectors[peer]
        self.status.expected = expected
        for peer, ip in expected.items():
            if peer not in self.connectors:
                self.connectors[peer] = asyncio.create_task(self.keep_connected(peer, ip))
        self.publish()

    async def keep_connected(self, peer: int, ip: str) -> None:
        token = object()
        delay = 0.5
        while True:
            try:
                reader, writer = await asyncio.open_connection(ip, self.port)
                try:
                    writer.write(json.dumps({"id": self.status.node_id}).encode() + b"\n")
                    await writer.drain()
                    hello = json.loads(await reader.readline() or b"{}")
                    if hello.get("id") == peer:
                        self.up[peer] = token
                        self.publish()
                        delay = 0.5
                        await reader.read()  # until the peer closes
                finally:
                    if self.up.get(peer) is token:
                        del self.up[peer]
                        self.publish()
                    writer.close()
            except (OSError, ValueError):
                pass
            await asyncio.sleep(delay)
            delay = min(delay * 2, 3.0)

    async def serve_peer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer: int | None = None
        try:
            hello = json.loads(await reader.readline() or b"{}")
            peer = hello.get("id")
            writer.write(json.dumps({"id": self.status.node_id}).encode() + b"\n")
            await writer.drain()
            if isinstance(peer, int):
                self.inbound[peer] = self.inbound.get(peer, 0) + 1
                self.publish()
            await reader.read()
        except (OSError, ValueError, asyncio.CancelledError):
            # Cancelled at shutdown: end quietly (the server's callback would log it).
            pass
        finally:
            if isinstance(peer, int):
                self.inbound[peer] -= 1
                self.publish()
            writer.close()

    async def serve_command(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        with contextlib.suppress(OSError):
            await reader.readline()
            writer.write(b"READY\n")
            await writer.drain()
        writer.close()

    # --- signals ------------------------------------------------------------------------------

    def on_sigusr1(self) -> None:
        now = asyncio.get_running_loop().time()
        if now - self.last_reload < self.reload_interval:
            self.status.ignored_signals += 1
            print("SIGUSR1 ignored: last reload less than the interval ago", flush=True)
            self.publish()
            return
        self.last_reload = now
        self.status.reloads += 1
        print("SIGUSR1: reconnecting all peers with fresh name resolution", flush=True)
        self.connect_peers(self.resolve_all())

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, self.on_sigusr1)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
            loop.add_signal_handler(sig, self.stop.set)
        resolved = self.resolve_all()
        local = self.local_ips()
        own = next((i for i, ip in sorted(resolved.items()) if ip in local), None)
        if own is None:
            print(f"[ERROR] {NO_INTERFACE_MESSAGE}", flush=True)
            return 1
        self.status.node_id, self.status.own_ip = own, resolved[own]
        print(f"Identified this node as ID {own}, IP {resolved[own]}", flush=True)
        servers = [await asyncio.start_server(self.serve_peer, resolved[own], self.port)]
        if self.config.get("IMEX_CMD_ENABLED", "1") == "1":
            cmd_ip = self.config.get("IMEX_CMD_BIND_INTERFACE_IP") or resolved[own]
            cmd_port = int(self.config.get("IMEX_CMD_PORT") or 50005)
            servers.append(await asyncio.start_server(self.serve_command, cmd_ip, cmd_port))
        self.status.serving = True
        self.connect_peers(resolved)
        watch = asyncio.create_task(_watch_parent(os.getppid(), self.stop))
        await self.stop.wait()
        print("Shutting down: notifying peers", flush=True)
        watch.cancel()
        for task in self.connectors.values():
            task.cancel()
        for server in servers:
            server.close()
        self.status.serving, self.status.stopped = False, True
        self.connectors.clear()
        self.flush()
        return 0


async def _watch_parent(parent: int, stop: asyncio.Event) -> None:
    # Polling is the portable way to notice a dead parent (prctl is Linux-only).
    while os.getppid() == parent:  # noqa: ASYNC110
        await asyncio.sleep(0.5)
    stop.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nvidia-imex", description="IMEX stand-in (simulation)")
    parser.add_argument("-c", "--config", required=True, help="IMEX config file")
    parser.add_argument("--hosts-file", default=os.environ.get("HOSTS_FILE", "/etc/hosts"))
    parser.add_argument("--status-file", default=os.environ.get(status_file.STATUS_FILE_ENV))
    args = parser.parse_args(argv)
    config_path = Path(args.config)
    try:
        config = imexconfig.parse(config_path.read_text())
        nodes_path = Path(config.get("IMEX_NODE_CONFIG_FILE", ""))
        nodes = [line.strip() for line in nodes_path.read_text().splitlines() if line.strip()]
    except OSError as exc:
        print(f"[ERROR] cannot read configuration: {exc}", file=sys.stderr)
        return 1
    status_path = Path(args.status_file or config_path.with_name(status_file.DEFAULT_STATUS_FILE))
    if (marker := os.environ.get(HOST_SESSION_ENV)) and Path(marker).exists():
        print(f"[ERROR] {SESSION_IN_USE_MESSAGE}", flush=True)
        return 1

    async def run() -> int:
        return await StandIn(config, nodes, Path(args.hosts_file), status_path).run()

    return asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
