"""The per-process HTTP endpoint: ``/healthz``, ``/readyz`` and Prometheus metrics.

Each program passes its ``HTTP_ENDPOINT`` (``:8080``, ``127.0.0.1:0``, ``[::1]:9090``; empty =
disabled) and ``METRICS_PATH`` (empty = no metrics) to :class:`HttpServer`, registers readiness
checks (e.g. "informers synced"), and runs :meth:`HttpServer.serve` under the
:class:`~computedomain.runtime.supervisor.Supervisor`.

- ``/healthz``: 200 while the event loop answers (liveness), plus any liveness checks;
- ``/readyz``: 200 when every readiness check passes, else 503 listing ``name: reason`` lines;
- ``METRICS_PATH``: the text exposition of a ``prometheus_client`` registry.

A check is a callable returning True/None (ok), False or a string (not ok, the string says why),
optionally awaitable; an exception counts as not ok with its message.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

import prometheus_client
from aiohttp import web

from computedomain.runtime import logs

_log = logs.get_logger(__name__)

CheckResult = bool | str | None
Check = Callable[[], CheckResult | Awaitable[CheckResult]]


def parse_endpoint(endpoint: str) -> tuple[str, int]:
    """``host:port`` → (host, port); an empty host means all interfaces. Pure; ValueError."""
    host, sep, port_text = endpoint.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        msg = f"HTTP endpoint {endpoint!r} must look like ':8080' or 'host:port'"
        raise ValueError(msg)
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port_text)


async def _evaluate(name: str, check: Check) -> str | None:
    """None when the check passes, otherwise the reason."""
    try:
        result = check()
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        return f"{name}: {type(exc).__name__}: {exc}"
    if result is None or result is True:
        return None
    return f"{name}: {result if isinstance(result, str) and result else 'not ready'}"


class HttpServer:
    """Health, readiness and metrics over aiohttp; start/stop or serve under a supervisor."""

    def __init__(
        self,
        endpoint: str,
        *,
        metrics_path: str = "/metrics",
        registry: prometheus_client.CollectorRegistry | None = None,
    ) -> None:
        self.host, self.requested_port = parse_endpoint(endpoint)
        self.metrics_path = metrics_path
        self.registry = registry or prometheus_client.REGISTRY
        self._readiness: dict[str, Check] = {}
        self._liveness: dict[str, Check] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    def add_readiness_check(self, name: str, check: Check) -> None:
        self._readiness[name] = check

    def add_liveness_check(self, name: str, check: Check) -> None:
        self._liveness[name] = check

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        if self.metrics_path:
            app.router.add_get(self.metrics_path, self._metrics)
        return app

    async def start(self) -> None:
        """Bind and start serving; :attr:`port` is the bound port afterwards."""
        runner = web.AppRunner(self._app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.requested_port)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.requested_port
        _log.info("serving health and metrics", host=self.host, port=self.port)

    async def stop(self) -> None:
        """Stop serving. Idempotent."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def serve(self) -> None:
        """Start, then serve until cancelled; stops on the way out."""
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def _report(self, checks: dict[str, Check]) -> web.Response:
        reasons = await asyncio.gather(*(_evaluate(n, c) for n, c in checks.items()))
        failures = [r for r in reasons if r is not None]
        if failures:
            return web.Response(status=503, text="\n".join(failures) + "\n")
        return web.Response(text="ok\n")

    async def _healthz(self, request: web.Request) -> web.Response:
        return await self._report(self._liveness)

    async def _readyz(self, request: web.Request) -> web.Response:
        return await self._report(self._readiness)

    async def _metrics(self, request: web.Request) -> web.Response:
        body = prometheus_client.generate_latest(self.registry)
        response = web.Response(body=body)
        response.headers["Content-Type"] = prometheus_client.CONTENT_TYPE_LATEST
        return response
