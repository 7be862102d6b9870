"""Stand-in for ``nvidia-imex-ctl``: ``python -I -S <this file> -c <cfg> -q``.

``-q`` asks the local stand-in daemon, at ``IMEX_CMD_BIND_INTERFACE_IP:IMEX_CMD_PORT`` from the
config, whether it is ready. ``-q --u=<socket>`` asks the host daemon stand-in
(:mod:`computedomain_sim.imex.host`) over its unix control socket instead, as the kubelet plugin
does with host-managed IMEX: it prints the daemon's answer and exits 0 whatever it says (the
caller looks for ``READY``), 1 when it cannot ask. Under the simulation's ``chroot`` stand-in
(``SIM_CHROOT``), the socket path is resolved inside that root, as it would be in a chroot.
With ``-c``, it prints ``READY`` and exits 0 once the daemon serves its command
port; otherwise it prints why not and exits 1 (what ``cd-imex-daemon check`` relies on,
docs/compatibility.md#subcommands-and-exit-codes).

It runs as a fresh process for every readiness probe of every simulated daemon (once a second
while a domain forms), so its start-up is its cost. It is therefore a self-contained script that
imports nothing but ``sys`` and, to ask the daemon, ``_socket``: the wrapper (:mod:`.wrappers`)
runs this file with ``-I -S`` (no ``site``, no virtual environment, no package), far cheaper than
importing the package, and ``_socket`` is the C module under ``socket``, without the Python
layer (``enum``, ``selectors``, ``os``) that would cost as much again. Like the real
tool it reads the config file itself (``KEY=VALUE`` lines, ``#`` comments), independently of the
daemon's reader (:func:`computedomain.daemon.imexconfig.parse`); a test keeps the two in
agreement.
"""

from __future__ import annotations

import _socket
import sys

TIMEOUT_S = 5.0
USAGE = "usage: nvidia-imex-ctl -c CONFIG -q | -q --u=SOCKET"
CHROOT_ENV = "SIM_CHROOT"


def parse_config(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (blank lines, ``#`` comments and lines without ``=`` skipped). Pure."""
    result: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        result[key.strip()] = value.strip()
    return result


def parse_args(argv: list[str]) -> tuple[str | None, bool]:
    """``(config path, query)`` from ``-c PATH``/``--config PATH``/``--config=PATH`` and
    ``-q``/``--query``. Pure; raises ValueError for anything else (``--u`` included: see
    :func:`socket_arg`)."""
    config: str | None = None
    query = False
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("-q", "--query"):
            query = True
        elif arg in ("-c", "--config"):
            if not args:
                msg = f"{arg} needs a value"
                raise ValueError(msg)
            config = args.pop(0)
        elif arg.startswith("--config="):
            config = arg.partition("=")[2]
        elif arg.startswith("-c") and len(arg) > 2:
            config = arg[2:]
        else:
            msg = f"unknown argument {arg!r}"
            raise ValueError(msg)
    return config, query


def addresses(host: str, port: int) -> list[tuple[int, int, int, tuple[object, ...]]]:
    """``(family, type, proto, address)`` of each way to reach ``host:port``, as
    ``socket.getaddrinfo`` gives them. Raises OSError when ``host`` does not resolve.

    An IP literal (the pod IP the config names) is answered without ``getaddrinfo``: that
    call encodes the host with the ``idna`` codec, whose import (``re``, ``unicodedata``,
    ``stringprep``) costs about as much as the rest of this process.
    """
    if 0 <= port <= 0xFFFF:
        for family in (_socket.AF_INET, _socket.AF_INET6):
            try:
                _socket.inet_pton(family, host)
            except (OSError, ValueError):
                continue
            return [(family, _socket.SOCK_STREAM, _socket.IPPROTO_TCP, (host, port))]
    found = _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM)
    return [(family, kind, proto, address) for family, kind, proto, _, address in found]


def connect(host: str, port: int) -> _socket.socket:
    """A connection to ``host:port``, as ``socket.create_connection`` makes it: each of
    :func:`addresses` in turn, raising the last failure (OSError) when none accepts."""
    failure = OSError("getaddrinfo returns an empty list")
    for family, kind, proto, address in addresses(host, port):
        conn = _socket.socket(family, kind, proto)
        try:
            conn.settimeout(TIMEOUT_S)
            conn.connect(address)
        except OSError as exc:
            conn.close()
            failure = exc
        else:
            return conn
    raise failure


def query(host: str, port: int) -> str:
    """The daemon's answer to a readiness query. Raises OSError when it cannot be asked."""
    return _ask(connect(host, port))


def _ask(conn: _socket.socket) -> str:
    """Send the readiness query on ``conn``, read the answer to its end, close it."""
    try:
        conn.sendall(b"QUERY\n")
        conn.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(4096):
            chunks.append(chunk)
    finally:
        conn.close()
    return b"".join(chunks).decode(errors="replace")


def socket_arg(argv: list[str]) -> tuple[str | None, list[str]]:
    """The ``--u=SOCKET`` (or ``-u SOCKET``) of ``argv``, and the other arguments. Pure."""
    rest: list[str] = []
    found: str | None = None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg.startswith("--u="):
            found = arg.partition("=")[2]
        elif arg in ("-u", "--u") and args:
            found = args.pop(0)
        else:
            rest.append(arg)
    return found, rest


def query_socket(path: str) -> str:
    """The host daemon's answer over its unix socket. Raises OSError."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(TIMEOUT_S)
        conn.connect(path)
    except OSError:
        conn.close()
        raise
    return _ask(conn)


def main_host(path: str, rest: list[str], root: str) -> int:
    """``-q --u=SOCKET``: ask the host daemon stand-in (module doc)."""
    if rest not in (["-q"], ["--query"]):
        print(f"nvidia-imex-ctl: --u needs -q and nothing else\n{USAGE}", file=sys.stderr)
        return 2
    real = root.rstrip("/") + path if root and path.startswith("/") else path
    try:
        answer = query_socket(real)
    except OSError as exc:
        print(f"cannot connect to the IMEX daemon at {path}: {exc}")
        return 1
    sys.stdout.write(answer)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the tool; returns the exit code (2: bad usage)."""
    args = sys.argv[1:] if argv is None else argv
    host_socket, rest = socket_arg(args)
    if host_socket is not None:
        import os  # noqa: PLC0415 - only this path needs it (start-up cost, module doc)

        return main_host(host_socket, rest, os.environ.get(CHROOT_ENV, ""))
    try:
        config_path, wanted = parse_args(args)
    except ValueError as exc:
        print(f"nvidia-imex-ctl: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    if config_path is None:
        print(f"nvidia-imex-ctl: -c CONFIG is required\n{USAGE}", file=sys.stderr)
        return 2
    if not wanted:
        print("only -q is supported by the simulation's nvidia-imex-ctl", file=sys.stderr)
        return 2
    try:
        with open(config_path, encoding="utf-8") as file:
            config = parse_config(file.read())
    except (OSError, UnicodeDecodeError) as exc:
        print(f"cannot read {config_path}: {exc}")
        return 1
    if config.get("IMEX_CMD_ENABLED", "0") != "1":
        print("IMEX command service is disabled (IMEX_CMD_ENABLED != 1)")
        return 1
    host = config.get("IMEX_CMD_BIND_INTERFACE_IP") or "127.0.0.1"
    text = config.get("IMEX_CMD_PORT") or "50005"
    if not (text.isascii() and text.isdigit()):  # decimal digits only, as ctl.bash reads it
        print(f"IMEX_CMD_PORT={text!r} in {config_path} is not a port")
        return 1
    port = int(text)
    if port > 0xFFFF:
        print(f"IMEX daemon at {host}:{port} is not ready: port out of range")
        return 1
    try:
        answer = query(host, port)
    except OSError as exc:
        print(f"IMEX daemon at {host}:{port} is not ready: {exc}")
        return 1
    sys.stdout.write(answer)
    return 0 if answer == "READY\n" else 1


if __name__ == "__main__":
    sys.exit(main())
