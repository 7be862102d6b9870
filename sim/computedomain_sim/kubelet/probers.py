"""Run one probe of a container: exec, HTTP GET, TCP connect or gRPC health check.

Called by :mod:`.containers` on each probe period. Effectful; each call is bounded by the
probe's timeout and returns ``(success, message)`` instead of raising, as the kubelet records
probe failures rather than failing. Startup exec probes run below the containers' CPU
priority (:mod:`.priority` says why).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

import aiohttp
import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from . import isolation, priority
from .expansion import expand, static_variables
from .launch import Isolation
from .probes import ProbeKind, ProbeSpec

__all__ = ["ProbeTarget", "run_probe"]


class ProbeTarget:
    """Where a container's probes go: its process (exec), pod IP and named ports."""

    def __init__(
        self,
        *,
        container: Mapping[str, Any],
        pod_ip: str,
        pid: int,
        env: Mapping[str, str],
        isolation_mode: Isolation,
        commands: Mapping[str, str],
    ) -> None:
        self.container = container
        self.pod_ip = pod_ip
        self.pid = pid
        self.env = dict(env)
        self.isolation = isolation_mode
        self.commands = commands

    def port(self, value: Any) -> int:
        """A probe port: a number, or the name of one of the container's ports."""
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            return int(value)
        for port in self.container.get("ports") or []:
            if port.get("name") == value:
                return int(port["containerPort"])
        msg = f"port {value!r} is not a named port of container {self.container.get('name')}"
        raise ValueError(msg)


async def run_probe(spec: ProbeSpec, target: ProbeTarget) -> tuple[bool, str]:
    """Run ``spec`` once against ``target``. Never raises (except cancellation)."""
    ((kind, handler),) = spec.handler.items()
    try:
        if kind == "exec":
            nice = priority.STARTUP_PROBE_NICE if spec.kind is ProbeKind.STARTUP else 0
            return await _exec(handler, spec.timeout, target, nice)
        if kind == "httpGet":
            return await _http(handler, spec.timeout, target)
        if kind == "tcpSocket":
            return await _tcp(handler, spec.timeout, target)
        return await _grpc(handler, spec.timeout, target)
    except (OSError, ValueError) as exc:
        return False, str(exc)


async def _exec(
    handler: Mapping[str, Any], limit: float, target: ProbeTarget, nice: int
) -> tuple[bool, str]:
    variables = static_variables(target.container)
    argv = [expand(str(a), variables) for a in handler.get("command") or []]
    if not argv:
        return False, "exec probe without a command"
    argv[0] = target.commands.get(argv[0], argv[0])
    process = await asyncio.create_subprocess_exec(
        *priority.niced(isolation.exec_argv(target.isolation, target.pid, argv), nice),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=target.env,
        start_new_session=True,
    )
    priority.lower_session(process.pid, nice)
    try:
        async with asyncio.timeout(limit):
            output, _ = await process.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        return False, f"command timed out after {limit:g}s"
    text = output.decode(errors="replace").strip()
    return process.returncode == 0, text


async def _http(handler: Mapping[str, Any], limit: float, target: ProbeTarget) -> tuple[bool, str]:
    scheme = str(handler.get("scheme") or "HTTP").lower()
    host = handler.get("host") or target.pod_ip
    url = f"{scheme}://{host}:{target.port(handler.get('port'))}{handler.get('path') or '/'}"
    headers = {h["name"]: h["value"] for h in handler.get("httpHeaders") or []}
    client_timeout = aiohttp.ClientTimeout(total=limit)
    try:
        async with (
            aiohttp.ClientSession(timeout=client_timeout) as session,
            session.get(url, headers=headers, ssl=False) as response,
        ):
            return 200 <= response.status < 400, f"HTTP probe {url}: {response.status}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        return False, f"HTTP probe {url} failed: {exc or type(exc).__name__}"


async def _tcp(handler: Mapping[str, Any], limit: float, target: ProbeTarget) -> tuple[bool, str]:
    host = handler.get("host") or target.pod_ip
    port = target.port(handler.get("port"))
    try:
        async with asyncio.timeout(limit):
            _, writer = await asyncio.open_connection(host, port)
    except (OSError, TimeoutError) as exc:
        return False, f"dial tcp {host}:{port}: {exc or 'timeout'}"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True, ""


async def _grpc(handler: Mapping[str, Any], limit: float, target: ProbeTarget) -> tuple[bool, str]:
    address = f"{target.pod_ip}:{target.port(handler.get('port'))}"
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = await stub.Check(
                health_pb2.HealthCheckRequest(service=str(handler.get("service") or "")),
                timeout=limit,
            )
        except grpc.aio.AioRpcError as exc:
            return False, f"gRPC health {address}: {exc.code().name}: {exc.details()}"
    serving = reply.status == health_pb2.HealthCheckResponse.SERVING
    return (
        serving,
        f"gRPC health {address}: {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}",
    )
