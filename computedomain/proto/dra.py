"""Version-neutral values of the DRA kubelet protocol and their v1 / v1beta1 messages.

The plugin's servicers (:mod:`computedomain.kubeletplugin.grpcservers`) and the kubelet-side
client (:mod:`computedomain.proto.kubelet_client`) both speak in these frozen values, so the
choice of wire version (``v1.DRAPlugin`` or ``v1beta1.DRAPlugin``, negotiated at registration)
stays at the edge. The two versions differ only in ``Device.share_id`` (v1 only): converting to
v1beta1 drops it, as the Go helper does. Pure functions only.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Final

import attrs

from computedomain.proto.gen.dra.v1 import api_pb2 as v1_pb2
from computedomain.proto.gen.dra.v1 import api_pb2_grpc as v1_grpc
from computedomain.proto.gen.dra.v1beta1 import api_pb2 as v1beta1_pb2
from computedomain.proto.gen.dra.v1beta1 import api_pb2_grpc as v1beta1_grpc
from computedomain.proto.gen.pluginregistration import api_pb2 as registration_pb2
from computedomain.proto.gen.pluginregistration import api_pb2_grpc as registration_grpc

REGISTRATION_SERVICE: Final = "pluginregistration.Registration"
PLUGIN_TYPE: Final = "DRAPlugin"


class Version(enum.StrEnum):
    """A DRA service as the registration handshake names it (newest first)."""

    V1 = "v1.DRAPlugin"
    V1BETA1 = "v1beta1.DRAPlugin"

    @property
    def service_name(self) -> str:
        """The fully-qualified gRPC service name (``k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin``)."""
        return f"k8s.io.kubelet.pkg.apis.dra.{self.value}"


# What the kubelet supports, in its order of preference
# (docs/compatibility.md#registration-service).
KUBELET_VERSIONS: Final = (Version.V1, Version.V1BETA1)


def messages(version: Version) -> ModuleType:
    """The generated ``*_pb2`` module of ``version``."""
    return v1_pb2 if version is Version.V1 else v1beta1_pb2


def services(version: Version) -> ModuleType:
    """The generated ``*_pb2_grpc`` module of ``version``."""
    return v1_grpc if version is Version.V1 else v1beta1_grpc


def registration_messages() -> ModuleType:
    """The generated ``pluginregistration`` messages module."""
    return registration_pb2


def registration_services() -> ModuleType:
    """The generated ``pluginregistration`` services module (stubs are untyped: use as Any)."""
    return registration_grpc


@attrs.frozen
class ClaimRef:
    """One claim of a prepare/unprepare request: what the kubelet tells the plugin."""

    namespace: str
    uid: str
    name: str


@attrs.frozen
class Device:
    """One prepared device in a prepare response."""

    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...]
    share_id: str | None = None


@attrs.frozen
class PrepareResult:
    """The outcome for one claim: devices, or a non-empty ``error``."""

    devices: tuple[Device, ...] = ()
    error: str = ""


def claims_to_wire(version: Version, claims: Sequence[ClaimRef]) -> list[Any]:
    pb = messages(version)
    return [pb.Claim(namespace=c.namespace, uid=c.uid, name=c.name) for c in claims]


def claims_from_wire(claims: Sequence[Any]) -> tuple[ClaimRef, ...]:
    return tuple(ClaimRef(namespace=c.namespace, uid=c.uid, name=c.name) for c in claims)


def prepare_request(version: Version, claims: Sequence[ClaimRef]) -> Any:
    return messages(version).NodePrepareResourcesRequest(claims=claims_to_wire(version, claims))


def unprepare_request(version: Version, claims: Sequence[ClaimRef]) -> Any:
    return messages(version).NodeUnprepareResourcesRequest(claims=claims_to_wire(version, claims))


def _device_to_wire(version: Version, device: Device) -> Any:
    fields: dict[str, Any] = {
        "request_names": list(device.request_names),
        "pool_name": device.pool_name,
        "device_name": device.device_name,
        "cdi_device_ids": list(device.cdi_device_ids),
    }
    if version is Version.V1 and device.share_id is not None:
        fields["share_id"] = device.share_id
    return messages(version).Device(**fields)


def _device_from_wire(message: Any) -> Device:
    share_id: str | None = None
    if "share_id" in type(message).DESCRIPTOR.fields_by_name and message.HasField("share_id"):
        share_id = message.share_id
    return Device(
        request_names=tuple(message.request_names),
        pool_name=message.pool_name,
        device_name=message.device_name,
        cdi_device_ids=tuple(message.cdi_device_ids),
        share_id=share_id,
    )


def prepare_response(version: Version, results: Mapping[str, PrepareResult]) -> Any:
    """The response message: one map entry per claim UID in ``results``."""
    pb = messages(version)
    response = pb.NodePrepareResourcesResponse()
    for uid, result in results.items():
        entry = response.claims[uid]
        entry.error = result.error
        entry.devices.extend(_device_to_wire(version, d) for d in result.devices)
    return response


def prepare_results(response: Any) -> dict[str, PrepareResult]:
    """Decode a prepare response (either version) into values, keyed by claim UID."""
    return {
        uid: PrepareResult(
            devices=tuple(_device_from_wire(d) for d in entry.devices), error=entry.error
        )
        for uid, entry in response.claims.items()
    }


def unprepare_response(version: Version, errors: Mapping[str, str]) -> Any:
    """The response message: one entry per claim UID, ``error`` empty on success."""
    response = messages(version).NodeUnprepareResourcesResponse()
    for uid, error in errors.items():
        response.claims[uid].error = error
    return response


def unprepare_results(response: Any) -> dict[str, str]:
    """Decode an unprepare response (either version): claim UID -> error ("" on success)."""
    return {uid: entry.error for uid, entry in response.claims.items()}
