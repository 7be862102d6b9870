"""Services: kube-apiserver's defaults, ClusterIP and NodePort allocation, and validation.

Nothing proxies traffic in the simulation; what is simulated is what clients see: a created
Service gets a free cluster IP from :data:`SERVICE_CIDR` (or keeps the free one it asked for, or
``None`` when headless), NodePort and LoadBalancer Services get free node ports, and an update
cannot move them. Called by :mod:`.admission` with the store, so that allocation and the write
happen in one synchronous step.
"""

from __future__ import annotations

import ipaddress
import random
from typing import Any, Final

from .state import ApiState
from .status import FieldCause, invalid_value, not_supported, required

SERVICE_CIDR: Final = ipaddress.ip_network("10.96.0.0/12")
NODE_PORTS: Final = range(30000, 32768)
TYPES: Final = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
_SERVICES: Final = ("", "services")
_RESERVED: Final = 16  # the first addresses of the range stay for well-known Services


def defaults(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    if spec["type"] == "ExternalName":
        return
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port and port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port["port"]  # unset (protobuf bodies carry it as 0)
    obj.setdefault("status", {"loadBalancer": {}})


def _used(state: ApiState) -> tuple[set[str], set[int]]:
    ips: set[str] = set()
    ports: set[int] = set()
    for key in state.store.keys(_SERVICES):
        entry = state.store.get(_SERVICES, key)
        if entry is None:
            continue
        spec = entry.decode().get("spec") or {}
        ips.update(str(ip) for ip in spec.get("clusterIPs") or () if ip != "None")
        ports.update(int(p["nodePort"]) for p in spec.get("ports") or () if p.get("nodePort"))
    return ips, ports


def allocate(state: ApiState, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Give a Service its IP families, cluster IP and node ports: kept from ``old`` on update,
    chosen free on create. A requested address or port that is taken or out of range is left
    for :func:`validate` to refuse. Like kube-apiserver's Service registry, this runs after the
    field manager has recorded the request: the client does not own what is allocated."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
        return
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    if old is not None:
        old_spec = old.get("spec") or {}
        for field in ("clusterIP", "clusterIPs"):
            if not spec.get(field) and old_spec.get(field):
                spec[field] = old_spec[field]
        old_ports = {(p.get("port"), p.get("protocol")): p.get("nodePort")
                     for p in old_spec.get("ports") or ()}  # fmt: skip
        for port in spec.get("ports") or ():
            kept = old_ports.get((port.get("port"), port.get("protocol")))
            if kept and not port.get("nodePort") and spec.get("type") != "ClusterIP":
                port["nodePort"] = kept
    used_ips, used_ports = _used(state)
    if not spec.get("clusterIP"):
        first = int(SERVICE_CIDR.network_address) + _RESERVED
        last = int(SERVICE_CIDR.broadcast_address) - 1
        while True:
            candidate = str(ipaddress.ip_address(random.randint(first, last)))
            if candidate not in used_ips:
                spec["clusterIP"] = candidate
                break
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        free = [p for p in NODE_PORTS if p not in used_ports]
        for port in spec.get("ports") or ():
            if isinstance(port, dict) and not port.get("nodePort") and free:
                port["nodePort"] = free.pop(random.randrange(len(free)))


def validate(state: ApiState, new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldCause]:
    spec = new.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    causes: list[FieldCause] = []
    kind = spec.get("type")
    if kind not in TYPES:
        causes.append(not_supported("spec.type", kind, TYPES))
        return causes
    if kind == "ExternalName":
        if not spec.get("externalName"):
            causes.append(required("spec.externalName"))
        return causes
    ports = spec.get("ports") or []
    cluster_ip = spec.get("clusterIP")
    if not ports and cluster_ip != "None":
        causes.append(required("spec.ports"))
    names = [p.get("name", "") for p in ports]
    for i, port in enumerate(ports):
        number = port.get("port")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            causes.append(
                invalid_value(
                    f"spec.ports[{i}].port", number, "must be between 1 and 65535, inclusive"
                )
            )
        if len(ports) > 1 and not port.get("name"):
            causes.append(required(f"spec.ports[{i}].name"))
        elif port.get("name") and names.count(port["name"]) > 1:
            causes.append(invalid_value(f"spec.ports[{i}].name", port["name"], "duplicate name"))
    if old is not None:
        old_ip = (old.get("spec") or {}).get("clusterIP")
        if old_ip and cluster_ip != old_ip:
            causes.append(invalid_value("spec.clusterIPs[0]", cluster_ip, "field is immutable"))
        return causes
    if cluster_ip and cluster_ip != "None":
        try:
            address = ipaddress.ip_address(cluster_ip)
        except ValueError:
            detail = "must be a valid IP address"
            causes.append(invalid_value("spec.clusterIPs[0]", cluster_ip, detail))
            return causes
        if address not in SERVICE_CIDR:
            causes.append(
                invalid_value(
                    "spec.clusterIPs[0]", cluster_ip,
                    f"failed to allocate IP {cluster_ip}: the provided IP ({cluster_ip}) is not "
                    f"in the valid range. The range of valid IPs is {SERVICE_CIDR}",
                )
            )  # fmt: skip
        elif cluster_ip in _used(state)[0]:
            causes.append(
                invalid_value(
                    "spec.clusterIPs[0]", cluster_ip,
                    f"failed to allocate IP {cluster_ip}: provided IP is already allocated",
                )
            )  # fmt: skip
    return causes
