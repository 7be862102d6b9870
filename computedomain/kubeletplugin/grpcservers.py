"""The kubelet-facing gRPC servers: registration and DRA ``v1``/``v1beta1`` (grpc.aio).

- Registration (``pluginregistration.Registration``) on
  ``<registry dir>/compute-domain.nvidia.com-reg.sock``: ``GetInfo`` answers type
  ``DRAPlugin``, the driver name, the DRA socket path and ``["v1.DRAPlugin",
  "v1beta1.DRAPlugin"]``; ``NotifyRegistrationStatus`` records the kubelet's verdict and
  answers an error when it refused the plugin (docs/compatibility.md#registration-service).
- DRA on ``<plugins dir>/compute-domain.nvidia.com/dra.sock``: both versions on one socket,
  each converting to and from the version-neutral values of :mod:`computedomain.proto.dra`
  and calling the :class:`~computedomain.kubeletplugin.driver.Driver` with the caller's
  remaining deadline. An empty request is a valid no-op (the health check uses it).

Wiring starts the DRA server, then the registration server — only after the informers have
synced, so the kubelet cannot call before the plugin can answer
(docs/compatibility.md#no-kubelet-registration-before-the-caches-are-synced). Stale socket files are
removed before binding; stopping removes the sockets.
"""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any, Final

import grpc
import grpc.aio

from computedomain.api import names
from computedomain.kubeletplugin.driver import Driver
from computedomain.proto import dra
from computedomain.runtime import logs

log = logs.get_logger(__name__)

SUPPORTED_VERSIONS: Final = (dra.Version.V1.value, dra.Version.V1BETA1.value)
STOP_GRACE: Final = 1.0


class RegistrationService:
    """``pluginregistration.Registration``; ``registered`` is set once the kubelet accepts."""

    def __init__(self, endpoint: Path, driver_name: str = names.DRIVER_NAME) -> None:
        self.endpoint = endpoint
        self.driver_name = driver_name
        self.registered = asyncio.Event()
        self.last_error = ""
        self._pb = dra.registration_messages()

    async def GetInfo(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        return self._pb.PluginInfo(
            type=dra.PLUGIN_TYPE,
            name=self.driver_name,
            endpoint=str(self.endpoint),
            supported_versions=list(SUPPORTED_VERSIONS),
        )

    async def NotifyRegistrationStatus(
        self, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Any:
        if not request.plugin_registered:
            self.registered.clear()
            self.last_error = request.error
            log.error("the kubelet refused the registration", error=request.error)
            await context.abort(
                grpc.StatusCode.UNKNOWN, f"failed registration process: {request.error}"
            )
        self.last_error = ""
        self.registered.set()
        log.info("registered with the kubelet")
        return self._pb.RegistrationStatusResponse()


class DraService:
    """``k8s.io.kubelet.pkg.apis.dra.<version>.DRAPlugin`` over the driver."""

    def __init__(self, version: dra.Version, driver: Driver) -> None:
        self.version = version
        self.driver = driver

    async def NodePrepareResources(
        self, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Any:
        claims = dra.claims_from_wire(request.claims)
        results = await self.driver.prepare(claims, time_remaining=context.time_remaining())
        return dra.prepare_response(self.version, results)

    async def NodeUnprepareResources(
        self, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Any:
        claims = dra.claims_from_wire(request.claims)
        errors = await self.driver.unprepare(claims, time_remaining=context.time_remaining())
        return dra.unprepare_response(self.version, errors)


MAX_SOCKET_PATH: Final = 107  # sun_path is 108 bytes with the terminating NUL


def _clear_socket(path: Path) -> None:
    """Create the parent directory and remove a stale socket; refuse to replace other files."""
    if len(str(path).encode()) > MAX_SOCKET_PATH:
        msg = f"socket path {path} is longer than {MAX_SOCKET_PATH} bytes"
        raise OSError(msg)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        msg = f"{path} exists and is not a socket"
        raise FileExistsError(msg)
    path.unlink()


async def _serve(path: Path, add: list[tuple[Any, Any]]) -> grpc.aio.Server:
    _clear_socket(path)
    server = grpc.aio.server()
    for adder, servicer in add:
        adder(servicer, server)
    try:
        server.add_insecure_port(f"unix://{path}")
        await server.start()
    except RuntimeError as exc:
        await server.stop(None)
        msg = f"cannot listen on {path}: {exc}"
        raise OSError(msg) from exc
    return server


class PluginServers:
    """Both servers of one plugin; ``start_dra`` then ``start_registration``, ``stop`` at exit."""

    def __init__(self, driver: Driver, *, dra_socket: Path, registration_socket: Path) -> None:
        self.driver = driver
        self.dra_socket = dra_socket
        self.registration_socket = registration_socket
        self.registration = RegistrationService(dra_socket)
        self._servers: list[grpc.aio.Server] = []

    async def start_dra(self) -> None:
        handlers = [
            (dra.services(v).add_DRAPluginServicer_to_server, DraService(v, self.driver))
            for v in dra.Version
        ]
        self._servers.append(await _serve(self.dra_socket, handlers))
        log.info("serving DRA v1 and v1beta1", socket=str(self.dra_socket))

    async def start_registration(self) -> None:
        adder = dra.registration_services().add_RegistrationServicer_to_server
        self._servers.append(await _serve(self.registration_socket, [(adder, self.registration)]))
        log.info("serving plugin registration", socket=str(self.registration_socket))

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop in reverse order (registration first: the kubelet sees the plugin go)."""
        while self._servers:
            await self._servers.pop().stop(grace)
