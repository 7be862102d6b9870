"""The plugin manager tells a restarted plugin's socket from the one it replaced, even when the
new socket gets the inode number the old one just freed (a plugin killed with SIGKILL leaves
its socket file; its successor unlinks it and binds a new one at once)."""

from __future__ import annotations

import socket
from pathlib import Path

from computedomain_sim.kubelet import plugins


def bind(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    return server


def test_a_rebound_socket_is_a_new_socket(tmp_path: Path) -> None:
    path = tmp_path / "driver-reg.sock"
    first = bind(path)
    ((_, before),) = plugins._sockets(str(tmp_path))
    first.close()
    seen = set()
    for _ in range(20):  # inode numbers are reused often; every rebind must look new
        path.unlink()
        server = bind(path)
        ((_, now),) = plugins._sockets(str(tmp_path))
        server.close()
        assert now != before
        seen.add(now)
        before = now
    assert len(seen) == 20
