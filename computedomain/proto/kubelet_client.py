"""The kubelet's side of the plugin protocol, for tests, the health check and the sim kubelet.

A kubelet finds a plugin by its registration socket, asks ``GetInfo``, checks the answer, picks
the first DRA service version in the plugin's list that it supports (``v1`` before
``v1beta1``), tells the plugin the verdict with ``NotifyRegistrationStatus`` and from then on
calls ``NodePrepareResources`` / ``NodeUnprepareResources`` on the advertised endpoint with a
45 s deadline (docs/compatibility.md#kubelet-protocol). :func:`register` does the
handshake; :class:`DraClient` makes the calls in the negotiated version and returns
version-neutral values from :mod:`computedomain.proto.dra`. gRPC errors are translated at this
boundary into :class:`KubeletRpcError` (with the status code) or :class:`RegistrationError`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Final, Self

import attrs
import grpc
import grpc.aio

from computedomain.proto import dra

GET_INFO_TIMEOUT: Final = 1.0  # the kubelet's own timeouts for the two registration calls
NOTIFY_TIMEOUT: Final = 5.0
CALL_TIMEOUT: Final = 45.0

reg_pb2 = dra.registration_messages()
reg_grpc = dra.registration_services()


class KubeletRpcError(Exception):
    """A call failed as a whole (not a per-claim error); ``code`` is the gRPC status code."""

    def __init__(self, method: str, code: grpc.StatusCode, details: str) -> None:
        self.method = method
        self.code = code
        self.details = details
        super().__init__(f"{method}: {code.name}: {details}")


class RegistrationError(Exception):
    """The plugin's answer to GetInfo was refused, or the handshake itself failed."""


@attrs.frozen
class Registration:
    """What a successful handshake established."""

    name: str
    endpoint: str  # absolute path of the DRA socket
    version: dra.Version
    supported_versions: tuple[str, ...]


def unix_target(path: str) -> str:
    """The gRPC target of a unix socket path."""
    return f"unix://{path}"


@asynccontextmanager
async def _rpc(method: str) -> AsyncIterator[None]:
    try:
        yield
    except grpc.aio.AioRpcError as exc:
        raise KubeletRpcError(method, exc.code(), exc.details() or "") from exc


def choose_version(
    offered: Iterable[str], supported: Sequence[dra.Version] = dra.KUBELET_VERSIONS
) -> dra.Version | None:
    """The first service in the plugin's list that the kubelet supports (the kubelet's rule)."""
    known = {v.value: v for v in supported}
    return next((known[name] for name in offered if name in known), None)


def validate_info(
    info: Any,
    socket_path: str,
    *,
    driver_name: str | None = None,
    supported: Sequence[dra.Version] = dra.KUBELET_VERSIONS,
) -> Registration:
    """Check a PluginInfo as the kubelet does. Pure; raises RegistrationError with the reason."""
    if info.type != dra.PLUGIN_TYPE:
        msg = f"plugin type {info.type!r} is not {dra.PLUGIN_TYPE!r}"
        raise RegistrationError(msg)
    if not info.name:
        msg = "plugin name is empty"
        raise RegistrationError(msg)
    if driver_name is not None and info.name != driver_name:
        msg = f"plugin name {info.name!r} is not the expected driver {driver_name!r}"
        raise RegistrationError(msg)
    version = choose_version(info.supported_versions, supported)
    if version is None:
        offered = ", ".join(info.supported_versions) or "none"
        msg = f"none of the plugin's services ({offered}) is supported"
        raise RegistrationError(msg)
    # An empty endpoint means the registration socket serves the DRA service too.
    return Registration(
        name=info.name,
        endpoint=info.endpoint or socket_path,
        version=version,
        supported_versions=tuple(info.supported_versions),
    )


async def get_info(socket_path: str, *, deadline: float = GET_INFO_TIMEOUT) -> Any:
    """Call GetInfo once and return the PluginInfo message. Raises KubeletRpcError."""
    async with grpc.aio.insecure_channel(unix_target(socket_path)) as channel:
        stub = reg_grpc.RegistrationStub(channel)
        async with _rpc("GetInfo"):
            return await stub.GetInfo(reg_pb2.InfoRequest(), timeout=deadline)


async def register(
    socket_path: str,
    *,
    driver_name: str | None = None,
    supported: Sequence[dra.Version] = dra.KUBELET_VERSIONS,
) -> Registration:
    """Run the registration handshake against ``socket_path``; not idempotent on the plugin.

    Raises RegistrationError when the plugin's info is refused (after telling the plugin so)
    and KubeletRpcError when a call fails.
    """
    async with grpc.aio.insecure_channel(unix_target(socket_path)) as channel:
        stub = reg_grpc.RegistrationStub(channel)
        async with _rpc("GetInfo"):
            info = await stub.GetInfo(reg_pb2.InfoRequest(), timeout=GET_INFO_TIMEOUT)
        try:
            registration = validate_info(
                info, socket_path, driver_name=driver_name, supported=supported
            )
        except RegistrationError as exc:
            status = reg_pb2.RegistrationStatus(plugin_registered=False, error=str(exc))
            # The plugin answers a refusal with an error of its own; the refusal is what counts.
            with contextlib.suppress(grpc.aio.AioRpcError):
                await stub.NotifyRegistrationStatus(status, timeout=NOTIFY_TIMEOUT)
            raise
        status = reg_pb2.RegistrationStatus(plugin_registered=True)
        async with _rpc("NotifyRegistrationStatus"):
            await stub.NotifyRegistrationStatus(status, timeout=NOTIFY_TIMEOUT)
        return registration


class DraClient:
    """Prepare/unprepare calls on one plugin endpoint in one protocol version.

    Use as an async context manager (or call :meth:`close`). Each call returns one entry per
    claim the plugin answered for; a claim missing from the result is what the kubelet reports
    as "left out".
    """

    def __init__(
        self, endpoint: str, version: dra.Version, *, deadline: float = CALL_TIMEOUT
    ) -> None:
        self.endpoint = endpoint
        self.version = version
        self.deadline = deadline  # seconds per call, sent to the plugin as the gRPC deadline
        self._channel = grpc.aio.insecure_channel(unix_target(endpoint))
        self._stub = dra.services(version).DRAPluginStub(self._channel)

    @classmethod
    def for_registration(
        cls, registration: Registration, *, deadline: float = CALL_TIMEOUT
    ) -> Self:
        return cls(registration.endpoint, registration.version, deadline=deadline)

    async def prepare(
        self, claims: Sequence[dra.ClaimRef], *, deadline: float | None = None
    ) -> dict[str, dra.PrepareResult]:
        """NodePrepareResources. Raises KubeletRpcError when the call fails as a whole."""
        request = dra.prepare_request(self.version, claims)
        async with _rpc("NodePrepareResources"):
            response = await self._stub.NodePrepareResources(
                request, timeout=deadline if deadline is not None else self.deadline
            )
        return dra.prepare_results(response)

    async def unprepare(
        self, claims: Sequence[dra.ClaimRef], *, deadline: float | None = None
    ) -> dict[str, str]:
        """NodeUnprepareResources: claim UID -> error ("" on success)."""
        request = dra.unprepare_request(self.version, claims)
        async with _rpc("NodeUnprepareResources"):
            response = await self._stub.NodeUnprepareResources(
                request, timeout=deadline if deadline is not None else self.deadline
            )
        return dra.unprepare_results(response)

    async def close(self) -> None:
        await self._channel.close(None)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
