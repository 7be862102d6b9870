"""The gRPC health service (``grpc.health.v1.Health``) on ``HEALTHCHECK_PORT``.

``Check`` for service ``""`` or ``"liveness"`` exercises the plugin as the kubelet would: it
calls ``GetInfo`` on the registration socket and an empty v1beta1 ``NodePrepareResources`` on
the DRA socket, and answers SERVING only when both work and the kubelet has accepted the
registration (docs/operations.md#health-and-probes); any other service name
is NOT_FOUND. ``Watch`` is not implemented, like upstream. It listens on the address it is
given (``<pod IP>:<port>`` or ``[::]:<port>``, see ``Config.health_address``); port 0 picks a
free port (see ``port`` after start); a negative port disables the service.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Final

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from computedomain.proto import dra, kubelet_client
from computedomain.runtime import logs

log = logs.get_logger(__name__)

SERVICES: Final = frozenset({"", "liveness"})
PROBE_TIMEOUT: Final = 5.0


class HealthService:
    def __init__(
        self, *, registration_socket: Path, dra_socket: Path, registered: asyncio.Event
    ) -> None:
        self.registration_socket = registration_socket
        self.dra_socket = dra_socket
        self.registered = registered

    async def healthy(self) -> bool:
        """Whether both sockets answer and the kubelet accepted the registration."""
        if not self.registered.is_set():
            return False
        try:
            await kubelet_client.get_info(str(self.registration_socket), deadline=PROBE_TIMEOUT)
            async with kubelet_client.DraClient(
                str(self.dra_socket), dra.Version.V1BETA1, deadline=PROBE_TIMEOUT
            ) as client:
                await client.prepare([])
        except kubelet_client.KubeletRpcError as exc:
            log.warning("health check failed", error=str(exc))
            return False
        return True

    async def Check(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        if request.service not in SERVICES:
            await context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
        serving = await self.healthy()
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        return health_pb2.HealthCheckResponse(status=status)

    async def Watch(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Watch is not implemented")

    async def List(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "List is not implemented")


class HealthServer:
    def __init__(self, service: HealthService, address: str) -> None:
        """``address`` is ``host:port`` (``[::]:51515``, ``10.0.0.5:51515``)."""
        self.service = service
        self.address = address
        self.port: int | None = None
        self._server: grpc.aio.Server | None = None

    async def start(self) -> None:
        server = grpc.aio.server()
        health_pb2_grpc.add_HealthServicer_to_server(self.service, server)
        host, _, port = self.address.rpartition(":")
        self.port = server.add_insecure_port(self.address)
        if self.port == 0 and host == "[::]":  # no IPv6 on this machine
            self.port = server.add_insecure_port(f"0.0.0.0:{port}")
        if self.port == 0:
            msg = f"cannot listen on health address {self.address}"
            raise OSError(msg)
        await server.start()
        self._server = server
        log.info("serving gRPC health", address=self.address, port=self.port)

    async def stop(self, grace: float = 1.0) -> None:
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
