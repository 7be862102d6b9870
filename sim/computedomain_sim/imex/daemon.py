"""Stand-in for ``nvidia-imex``: ``python -m computedomain_sim.imex.daemon -c <imexd.cfg>``.

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
- writes a JSON status file (:mod:`computedomain_sim.imex.status`) for tests, coalescing the
  changes of a burst into one write;
- exits 0 on SIGTERM/SIGINT/SIGQUIT, and when its parent goes away (no orphans in tests).

Every simulated daemon starts one, so its start-up is most of its cost, and it is written
against :mod:`selectors` rather than asyncio: importing asyncio (with ``ssl``,
``concurrent.futures`` and ``subprocess`` behind it) would be most of what it spends before it
serves anything. :class:`Loop` is the little event loop it
needs: sockets with callbacks, timers, and signals through ``signal.set_wakeup_fd``. The
config is read with the ``nvidia-imex-ctl`` stand-in's reader (standard library only; a test
keeps it in agreement with the daemon's).
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import itertools
import json
import os
import selectors
import signal
import socket
import sys
import time

from computedomain_sim.imex import ctl
from computedomain_sim.imex import status as status_file

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

HOST_SESSION_ENV = "SIM_IMEX_HOST_SESSION_FILE"
RELOAD_INTERVAL_ENV = "SIM_IMEX_RELOAD_INTERVAL"
NO_INTERFACE_MESSAGE = (
    "No matching network interface found for any IP addresses in the node configuration file"
)
SESSION_IN_USE_MESSAGE = "Failed to allocate Imex session: NV_ERR_IN_USE (host IMEX daemon?)"
USAGE = "usage: nvidia-imex -c CONFIG [--hosts-file PATH] [--status-file PATH]"
# Status-file writes are coalesced over this window (a domain of N daemons connecting is N*N
# connection changes).
PUBLISH_DELAY_S = 0.05
RECONNECT_FIRST_S = 0.5
RECONNECT_MAX_S = 3.0
PARENT_POLL_S = 0.5
SEND_TIMEOUT_S = 5.0
BACKLOG = 100


def resolve_table(hosts_text: str) -> dict[str, str]:
    """Name → address of a hosts file; the first line naming a host wins. Pure."""
    table: dict[str, str] = {}
    for line in hosts_text.splitlines():
        fields = line.split("#", 1)[0].split()
        for name in fields[1:]:
            table.setdefault(name, fields[0])
    return table


def ip_literal(text: str) -> str | None:
    """``text`` in canonical form (``ipaddress``'s) when it is an IPv4 or IPv6 address, else
    None. Pure. The simulation's addresses are IPv4, read without importing ``ipaddress``."""
    if ":" in text:
        import ipaddress  # noqa: PLC0415 -- IPv6 only (see the docstring)

        try:
            return str(ipaddress.IPv6Address(text))
        except ValueError:
            return None
    try:
        return socket.inet_ntop(socket.AF_INET, socket.inet_pton(socket.AF_INET, text))
    except (OSError, ValueError):
        return None


def resolve(node: str, table: dict[str, str]) -> str | None:
    """The address of a nodes-file entry: an IP literal is itself, a name is looked up."""
    return ip_literal(node) or table.get(node)


def _family(ip: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in ip else socket.AF_INET


def _send_all(sock: socket.socket, data: bytes) -> None:
    """Send ``data`` whole on a non-blocking socket (blocking for at most SEND_TIMEOUT_S: the
    messages are a few bytes, so the kernel takes them at once). Raises OSError."""
    sock.settimeout(SEND_TIMEOUT_S)
    try:
        sock.sendall(data)
    finally:
        sock.setblocking(False)


def _receive(sock: socket.socket) -> bytes | None:
    """What a readable non-blocking socket has: None when nothing after all, ``b""`` when the
    connection ended (closed, reset or otherwise failed), else the bytes."""
    try:
        return sock.recv(4096)
    except BlockingIOError:
        return None
    except OSError:
        return b""


class Timer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Loop:
    """Sockets with a callback each, timers, and signals: all the stand-in waits on."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._signals: list[int] = []
        self._wakeup: tuple[socket.socket, socket.socket] | None = None

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(callback)
        heapq.heappush(self._timers, (time.monotonic() + delay, next(self._order), timer))
        return timer

    def watch(self, sock: socket.socket, events: int, callback: Callable[[int], None]) -> None:
        """Call ``callback(mask)`` whenever ``sock`` is ready for ``events`` (replaces an
        earlier watch of the same socket)."""
        try:
            self.selector.modify(sock, events, callback)
        except KeyError:
            self.selector.register(sock, events, callback)

    def unwatch(self, sock: socket.socket) -> None:
        with contextlib.suppress(KeyError, ValueError):  # ValueError: already closed
            self.selector.unregister(sock)

    def on_signals(self, signals: tuple[int, ...]) -> None:
        """Queue ``signals`` for :meth:`take_signals`; a signal ends the current wait."""
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        self._wakeup = (reader, writer)
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        self.watch(reader, selectors.EVENT_READ, self._drain)
        for sig in signals:
            signal.signal(sig, lambda signum, _frame: self._signals.append(signum))

    def _drain(self, _mask: int) -> None:
        assert self._wakeup is not None
        try:
            while self._wakeup[0].recv(4096):
                pass
        except BlockingIOError:
            pass

    def take_signals(self) -> list[int]:
        taken, self._signals[:] = self._signals[:], []
        return taken

    def run_once(self) -> None:
        """Wait for the first socket or timer that is due, and run what is due."""
        timeout = None
        if self._timers:
            timeout = max(0.0, self._timers[0][0] - time.monotonic())
        for key, mask in self.selector.select(timeout):
            key.data(mask)
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            timer = heapq.heappop(self._timers)[2]
            if not timer.cancelled:
                timer.callback()


class Inbound:
    """A peer's connection to our server port: its hello is answered with ours, then it is
    counted in ``inbound`` until it closes."""

    def __init__(self, standin: StandIn, sock: socket.socket) -> None:
        self.standin = standin
        self.sock = sock
        self.buffer = b""
        self.greeted = False
        self.peer: int | None = None
        sock.setblocking(False)
        standin.loop.watch(sock, selectors.EVENT_READ, self._readable)

    def _readable(self, _mask: int) -> None:
        data = _receive(self.sock)
        if data is None:
            return
        if self.greeted:
            if not data:
                self.close()
            return  # a greeted peer sends nothing more; only its close matters
        self.buffer += data
        if data and b"\n" not in self.buffer:
            return
        line = self.buffer.partition(b"\n")[0]
        try:
            hello = json.loads(line or b"{}")
            _send_all(self.sock, self.standin.hello())
        except (OSError, ValueError):
            self.close()
            return
        self.greeted = True
        peer = hello.get("id") if isinstance(hello, dict) else None
        if isinstance(peer, int):
            self.peer = peer
            self.standin.inbound[peer] = self.standin.inbound.get(peer, 0) + 1
            self.standin.publish()
        if not data:
            self.close()

    def close(self) -> None:
        self.standin.loop.unwatch(self.sock)
        self.sock.close()
        if self.peer is not None:
            self.standin.inbound[self.peer] -= 1
            self.peer = None
            self.standin.publish()


class Connector:
    """Keeps one connection to a peer: connect, exchange hellos, hold it until it closes,
    then reconnect after 0.5 s, doubling up to 3 s (reset by every verified hello)."""

    def __init__(self, standin: StandIn, peer: int, ip: str) -> None:
        self.standin = standin
        self.peer = peer
        self.ip = ip
        self.delay = RECONNECT_FIRST_S
        self.sock: socket.socket | None = None
        self.timer: Timer | None = None
        self.buffer = b""
        self.verified = False

    def start(self) -> None:
        self.timer = None
        self.buffer, self.verified = b"", False
        try:
            sock = self.sock = socket.socket(_family(self.ip), socket.SOCK_STREAM)
            sock.setblocking(False)
            code = sock.connect_ex((self.ip, self.standin.port))
        except OSError:  # no socket to be had (EMFILE), or an address it cannot use
            code = -1
        if code not in (0, errno.EINPROGRESS):
            self._retry()
            return
        self.standin.loop.watch(sock, selectors.EVENT_WRITE, self._connected)

    def _connected(self, _mask: int) -> None:
        assert self.sock is not None
        try:
            code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, os.strerror(code))
            _send_all(self.sock, self.standin.hello())
        except OSError:
            self._retry()
            return
        self.standin.loop.watch(self.sock, selectors.EVENT_READ, self._readable)

    def _readable(self, _mask: int) -> None:
        assert self.sock is not None
        data = _receive(self.sock)
        if data is None:
            return
        if not data:
            self._retry()  # closed by the peer (or never answered)
            return
        if self.verified:
            return
        self.buffer += data
        if b"\n" not in self.buffer:
            return
        try:
            hello = json.loads(self.buffer.partition(b"\n")[0] or b"{}")
        except ValueError:
            hello = None
        if not isinstance(hello, dict) or hello.get("id") != self.peer:
            self._retry()  # someone else answers at that address
            return
        self.verified = True
        self.delay = RECONNECT_FIRST_S
        self.standin.up[self.peer] = self
        self.standin.publish()

    def _close(self) -> None:
        if self.sock is not None:
            self.standin.loop.unwatch(self.sock)
            self.sock.close()
            self.sock = None
        if self.standin.up.get(self.peer) is self:
            del self.standin.up[self.peer]
            self.standin.publish()

    def _retry(self) -> None:
        self._close()
        self.timer = self.standin.loop.call_later(self.delay, self.start)
        self.delay = min(self.delay * 2, RECONNECT_MAX_S)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self._close()


class Command:
    """One ``nvidia-imex-ctl -q``: read its line (or its end), answer ``READY``, close."""

    def __init__(self, loop: Loop, sock: socket.socket) -> None:
        self.loop = loop
        self.sock = sock
        self.buffer = b""
        sock.setblocking(False)
        loop.watch(sock, selectors.EVENT_READ, self._readable)

    def _readable(self, _mask: int) -> None:
        data = _receive(self.sock)
        if data is None:
            return
        self.buffer += data
        if data and b"\n" not in self.buffer:
            return
        with contextlib.suppress(OSError):
            _send_all(self.sock, b"READY\n")
        self.loop.unwatch(self.sock)
        self.sock.close()


def listen(
    loop: Loop, ip: str, port: int, accepted: Callable[[socket.socket], object]
) -> socket.socket:
    """A listening socket on ``ip:port`` (address reuse on, as asyncio's servers have it)
    whose connections go to ``accepted``. Raises OSError."""
    server = socket.create_server((ip, port), family=_family(ip), backlog=BACKLOG)
    server.setblocking(False)

    def ready(_mask: int) -> None:
        try:
            conn, _ = server.accept()
        except OSError:  # nothing after all, aborted, or out of descriptors
            return
        accepted(conn)

    loop.watch(server, selectors.EVENT_READ, ready)
    return server


class StandIn:
    def __init__(
        self, config: dict[str, str], nodes: list[str], hosts_file: str, status_path: str
    ) -> None:
        self.config = config
        self.nodes = nodes
        self.hosts_file = hosts_file
        self.status_path = status_path
        self.port = int(config.get("SERVER_PORT") or 50000)
        self.status = status_file.Status(pid=os.getpid())
        self.reload_interval = float(os.environ.get(RELOAD_INTERVAL_ENV, "5"))
        self.last_reload = float("-inf")
        self.loop = Loop()
        self.connectors: dict[int, Connector] = {}
        self.inbound: dict[int, int] = {}
        # peer id -> the connector that has a live, verified connection to it
        self.up: dict[int, Connector] = {}
        self.stopping = False
        self._publishing: Timer | None = None

    def hello(self) -> bytes:
        return json.dumps({"id": self.status.node_id}).encode() + b"\n"

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
            self._publishing = self.loop.call_later(PUBLISH_DELAY_S, self.flush)

    def flush(self) -> None:
        """Write the status file now (atomically)."""
        if self._publishing is not None:
            self._publishing.cancel()
            self._publishing = None
        self.status.connected = sorted(self.up)
        self.status.inbound = sorted(i for i, n in self.inbound.items() if n > 0)
        status_file.write(self.status_path, self.status)

    def resolve_all(self) -> dict[int, str]:
        try:
            with open(self.hosts_file, encoding="utf-8") as file:
                table = resolve_table(file.read())
        except FileNotFoundError:
            table = {}
        resolved = {i: ip for i, node in enumerate(self.nodes) if (ip := resolve(node, table))}
        self.status.resolved = {self.nodes[i]: ip for i, ip in resolved.items()}
        return resolved

    # --- peers --------------------------------------------------------------------------------

    def connect_peers(self, resolved: dict[int, str]) -> None:
        expected = {i: ip for i, ip in resolved.items() if i != self.status.node_id}
        for peer, connector in list(self.connectors.items()):
            if self.status.expected.get(peer) != expected.get(peer):
                connector.cancel()
                del self.connectors[peer]
        self.status.expected = expected
        for peer, ip in expected.items():
            if peer not in self.connectors:
                self.connectors[peer] = connector = Connector(self, peer, ip)
                connector.start()
        self.publish()

    # --- signals ------------------------------------------------------------------------------

    def on_signal(self, signum: int) -> None:
        if signum != signal.SIGUSR1:
            self.stopping = True
            return
        now = time.monotonic()
        if now - self.last_reload < self.reload_interval:
            self.status.ignored_signals += 1
            print("SIGUSR1 ignored: last reload less than the interval ago", flush=True)
            self.publish()
            return
        self.last_reload = now
        self.status.reloads += 1
        print("SIGUSR1: reconnecting all peers with fresh name resolution", flush=True)
        self.connect_peers(self.resolve_all())

    def _watch_parent(self, parent: int) -> None:
        # Polling is the portable way to notice a dead parent (prctl is Linux-only).
        if os.getppid() != parent:
            self.stopping = True
            return
        self.loop.call_later(PARENT_POLL_S, lambda: self._watch_parent(parent))

    def run(self) -> int:
        loop = self.loop
        loop.on_signals((signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGQUIT))
        resolved = self.resolve_all()
        local = self.local_ips()
        own = next((i for i, ip in sorted(resolved.items()) if ip in local), None)
        if own is None:
            print(f"[ERROR] {NO_INTERFACE_MESSAGE}", flush=True)
            return 1
        self.status.node_id, self.status.own_ip = own, resolved[own]
        print(f"Identified this node as ID {own}, IP {resolved[own]}", flush=True)
        servers = [listen(loop, resolved[own], self.port, lambda s: Inbound(self, s))]
        if self.config.get("IMEX_CMD_ENABLED", "1") == "1":
            cmd_ip = self.config.get("IMEX_CMD_BIND_INTERFACE_IP") or resolved[own]
            cmd_port = int(self.config.get("IMEX_CMD_PORT") or 50005)
            servers.append(listen(loop, cmd_ip, cmd_port, lambda s: Command(loop, s)))
        self.status.serving = True
        self.connect_peers(resolved)
        self._watch_parent(os.getppid())
        while not self.stopping:
            loop.run_once()
            for signum in loop.take_signals():
                self.on_signal(signum)
        print("Shutting down: notifying peers", flush=True)
        for connector in self.connectors.values():
            connector.cancel()
        for server in servers:
            loop.unwatch(server)
            server.close()
        self.status.serving, self.status.stopped = False, True
        self.connectors.clear()
        self.flush()
        return 0


def parse_args(argv: list[str]) -> dict[str, str]:
    """``{"config": ..., "hosts_file": ..., "status_file": ...}`` (only those given) from
    ``-c/--config``, ``--hosts-file``, ``--status-file`` (``--flag value`` or
    ``--flag=value``). Pure; raises ValueError naming the problem."""
    flags = {"-c": "config", "--config": "config", "--hosts-file": "hosts_file"}
    flags["--status-file"] = "status_file"
    found: dict[str, str] = {}
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if eq and name in flags and name.startswith("--"):
            found[flags[name]] = value
        elif arg in flags:
            if not args:
                msg = f"{arg} needs a value"
                raise ValueError(msg)
            found[flags[arg]] = args.pop(0)
        else:
            msg = f"unknown argument {arg!r}"
            raise ValueError(msg)
    if "config" not in found:
        msg = "-c CONFIG is required"
        raise ValueError(msg)
    return found


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except ValueError as exc:
        print(f"nvidia-imex: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    config_path = args["config"]
    hosts_file = args.get("hosts_file") or os.environ.get("HOSTS_FILE", "/etc/hosts")
    try:
        with open(config_path, encoding="utf-8") as file:
            config = ctl.parse_config(file.read())
        with open(config.get("IMEX_NODE_CONFIG_FILE", ""), encoding="utf-8") as file:
            nodes = [line.strip() for line in file.read().splitlines() if line.strip()]
    except OSError as exc:
        print(f"[ERROR] cannot read configuration: {exc}", file=sys.stderr)
        return 1
    status_path = args.get("status_file") or os.environ.get(status_file.STATUS_FILE_ENV)
    if not status_path:
        status_path = os.path.join(os.path.dirname(config_path), status_file.DEFAULT_STATUS_FILE)
    if (marker := os.environ.get(HOST_SESSION_ENV)) and os.path.exists(marker):
        print(f"[ERROR] {SESSION_IN_USE_MESSAGE}", flush=True)
        return 1
    return StandIn(config, nodes, hosts_file, status_path).run()


if __name__ == "__main__":
    sys.exit(main())
