"""Helpers for tests and tools that need a running embedded API server from sync code.

:func:`running` starts an :class:`.server.EmbeddedApiServer` on its own loop thread, writes a
kubeconfig and yields a :class:`RunningServer`; ``tests/conftest.py`` builds its fixtures on it.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from .server import EmbeddedApiServer, ServerThread


@attrs.define
class RunningServer:
    """A started server: its URL, admin token and a kubeconfig pointing at it."""

    server: EmbeddedApiServer
    thread: ServerThread
    kubeconfig: Path

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def token(self) -> str:
        return self.server.admin_token

    def api_client(self, token: str | None = None) -> Any:
        """A ``kubernetes.client.ApiClient`` for this server (admin unless ``token``)."""
        from kubernetes import client  # noqa: PLC0415 - only tests need the client

        cfg = client.Configuration()
        cfg.host = self.url
        cfg.api_key = {"authorization": f"Bearer {token or self.token}"}
        return client.ApiClient(cfg)

    def install_crds(self, paths: Iterable[Path]) -> list[str]:
        return self.thread.install_crds(paths)

    def call(self, coro: Any, timeout: float = 30.0) -> Any:
        """Run a coroutine on the server's loop (e.g. to inspect ``server.state``)."""
        return self.thread.call(coro, timeout)


@contextlib.contextmanager
def running(directory: Path, **kwargs: Any) -> Iterator[RunningServer]:
    """Start a server (``kwargs`` as for :class:`EmbeddedApiServer`), stop it on exit."""
    server = EmbeddedApiServer(**kwargs)
    thread = server.start_in_thread()
    try:
        kubeconfig = server.write_kubeconfig(directory / "kubeconfig")
        yield RunningServer(server, thread, kubeconfig)
    finally:
        thread.stop()


def unique_name(prefix: str = "t") -> str:
    """A DNS-1123 label unlikely to collide (for per-test namespaces)."""
    return f"{prefix}-{secrets.token_hex(4)}"
