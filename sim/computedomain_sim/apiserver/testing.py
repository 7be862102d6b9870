"""Helpers for tests and tools that need a running embedded API server from sync code.

:func:`running` starts an :class:`.server.EmbeddedApiServer` on its own loop thread, writes a
kubeconfig and yields a :class:`RunningServer`; ``tests/conftest.py`` builds its fixtures on it.
:func:`spawned` runs the server in a child process (``computedomain sim apiserver``) for code
that must not share the caller's interpreter (benchmarks, multi-process simulations).
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

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
        if self.server.serving_cert is not None:
            cfg.ssl_ca_cert = str(self.server.serving_cert.cert_path)
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


@attrs.frozen
class SpawnedServer:
    """A server running in a child process."""

    process: subprocess.Popen[str]
    url: str
    kubeconfig: Path
    token: str


@contextlib.contextmanager
def spawned(
    directory: Path, *args: str, timeout: float = 60.0, wrapper: Sequence[str] = ()
) -> Iterator[SpawnedServer]:
    """Run ``computedomain sim apiserver --port 0`` (plus ``args``, e.g. ``--rbac``,
    ``--crds DIR``, ``--data-dir DIR``) in a child process, under ``wrapper`` if given (a
    profiler's command line); SIGTERM and wait on exit. Raises ``RuntimeError`` with the
    child's stderr if it does not come up."""
    kubeconfig = directory / "kubeconfig"
    cmd = [
        *wrapper, sys.executable, "-m", "computedomain.cli.main", "sim", "apiserver", "--port", "0"
    ]  # fmt: skip
    proc = subprocess.Popen(
        [*cmd, "--kubeconfig", str(kubeconfig), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url:
            _out, err = proc.communicate(timeout=timeout)
            msg = f"the API server did not start: {err.strip()}"
            raise RuntimeError(msg)
        token = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
        yield SpawnedServer(proc, url, kubeconfig, str(token))
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
