"""Stand-in for ``nvidia-imex-ctl``: ``python -m computedomain.sim.imex.ctl -c <cfg> -q``.

``-q`` asks the local stand-in daemon, at ``IMEX_CMD_BIND_INTERFACE_IP:IMEX_CMD_PORT`` from the
config, whether it is ready. It prints ``READY`` and exits 0 once the daemon serves its command
port; otherwise it prints why not and exits 1 (what ``cd-imex-daemon check`` relies on,
daemon.md §1.1).
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

from computedomain.daemon import imexconfig

TIMEOUT_S = 5.0


def query(host: str, port: int) -> str:
    """The daemon's answer to a readiness query. Raises OSError when it cannot be asked."""
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as conn:
        conn.sendall(b"QUERY\n")
        conn.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nvidia-imex-ctl", description="IMEX ctl stand-in")
    parser.add_argument("-c", "--config", required=True)
    parser.add_argument("-q", "--query", action="store_true", help="is the local daemon ready")
    args = parser.parse_args(argv)
    if not args.query:
        print("only -q is supported by the simulation's nvidia-imex-ctl", file=sys.stderr)
        return 2
    try:
        config = imexconfig.parse(Path(args.config).read_text())
    except OSError as exc:
        print(f"cannot read {args.config}: {exc}")
        return 1
    if config.get("IMEX_CMD_ENABLED", "0") != "1":
        print("IMEX command service is disabled (IMEX_CMD_ENABLED != 1)")
        return 1
    host = config.get("IMEX_CMD_BIND_INTERFACE_IP") or "127.0.0.1"
    port = int(config.get("IMEX_CMD_PORT") or 50005)
    try:
        answer = query(host, port)
    except OSError as exc:
        print(f"IMEX daemon at {host}:{port} is not ready: {exc}")
        return 1
    sys.stdout.write(answer)
    return 0 if answer == "READY\n" else 1


if __name__ == "__main__":
    sys.exit(main())
