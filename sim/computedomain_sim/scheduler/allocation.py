"""Allocate a ResourceClaim's devices on one node, as kube-scheduler's structured allocator does.

Called by :mod:`.scheduler` for every claim of a pod it is trying to place, node by node. Pure:
the caller passes the slices, the DeviceClasses and the devices already allocated to other
claims; the result is the ``status.allocation`` to write, or the reason the claim does not fit.
Device selection goes through :func:`.selectors.device_matches` (the API server's CEL engine).

Supported: requests with ``exactly`` (resource.k8s.io/v1) or the flat v1beta1 shape,
``allocationMode`` ExactCount (``count``, default 1) and All, DeviceClass and request CEL
selectors, class and claim opaque configs. A device is never given to two claims. Only the
newest generation of each pool counts, and a pool whose slices are not all published is skipped.
``firstAvailable`` and ``constraints`` are refused with a clear reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from . import placement, selectors

__all__ = ["DeviceId", "Unallocatable", "allocate", "allocated_devices"]

Obj = Mapping[str, Any]


class DeviceId(NamedTuple):
    """One device, cluster-wide: (driver, pool, device).

    A named tuple, not an attrs class: the scheduler puts every allocated device of the cluster
    in a set for each pod it places, and a tuple hashes in C where an attrs class calls a Python
    ``__hash__``, which shows at thousands of devices.
    """

    driver: str
    pool: str
    device: str


@attrs.frozen
class Unallocatable:
    """Why a claim cannot be allocated on a node; ``reason`` is kube-scheduler's wording."""

    reason: str
    detail: str = ""


CANNOT_ALLOCATE = "cannot allocate all claims"


def allocated_devices(claims: Iterable[Obj]) -> frozenset[DeviceId]:
    """Every device in the ``status.allocation`` of ``claims``. Pure."""
    taken: set[DeviceId] = set()
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            taken.add(DeviceId(result["driver"], result["pool"], result["device"]))
    return frozenset(taken)


def allocate(
    claim: Obj,
    node: Obj,
    slices: Sequence[Obj],
    classes: Mapping[str, Obj],
    taken: frozenset[DeviceId],
) -> dict[str, Any] | Unallocatable:
    """The ``status.allocation`` for ``claim`` on ``node``, or why it cannot be had there.

    Pure and deterministic: devices are tried in slice, then device order. Raises nothing for
    bad input; a missing DeviceClass, a selector that does not compile or an unsupported field
    becomes an :class:`Unallocatable` with the detail.
    """
    devices_spec = (claim.get("spec") or {}).get("devices") or {}
    if devices_spec.get("constraints"):
        return Unallocatable(CANNOT_ALLOCATE, "device constraints are not supported")
    candidates = list(_candidates(slices, node))
    chosen: list[DeviceId] = []
    results: list[dict[str, Any]] = []
    class_configs: list[dict[str, Any]] = []
    node_selector: dict[str, Any] | None = None
    for request in devices_spec.get("requests") or []:
        name = request.get("name", "")
        if request.get("firstAvailable"):
            return Unallocatable(CANNOT_ALLOCATE, f"request {name}: firstAvailable not supported")
        exact = request.get("exactly") or request
        class_name = exact.get("deviceClassName")
        device_class = classes.get(class_name or "")
        if device_class is None:
            return Unallocatable(CANNOT_ALLOCATE, f"request {name}: no DeviceClass {class_name!r}")
        expressions = [
            s["cel"]["expression"]
            for s in [
                *((device_class.get("spec") or {}).get("selectors") or []),
                *(exact.get("selectors") or []),
            ]
            if "cel" in s
        ]
        try:
            matching = [
                (device, slice_)
                for device, slice_ in candidates
                if device not in taken
                and device not in chosen
                and _device_selected(expressions, device, slice_)
            ]
        except selectors.SelectorError as exc:
            return Unallocatable(CANNOT_ALLOCATE, f"request {name}: {exc}")
        mode = exact.get("allocationMode") or "ExactCount"
        count = len(matching) if mode == "All" else int(exact.get("count") or 1)
        if (mode == "All" and count == 0) or len(matching) < count:
            return Unallocatable(
                CANNOT_ALLOCATE,
                f"request {name}: {len(matching)} of {count} device(s) of class {class_name} free",
            )
        for device, slice_ in matching[:count]:
            chosen.append(device)
            results.append(
                {
                    "request": name,
                    "driver": device.driver,
                    "pool": device.pool,
                    "device": device.device,
                }
            )
            node_selector = node_selector or _slice_node_selector(slice_)
        class_configs.extend(
            {"source": "FromClass", "requests": [name], **_configuration(config)}
            for config in (device_class.get("spec") or {}).get("config") or []
        )
    claim_configs = [
        {"source": "FromClaim", **_configuration(config)}
        for config in devices_spec.get("config") or []
    ]
    allocation: dict[str, Any] = {"devices": {"results": results}}
    if class_configs or claim_configs:
        allocation["devices"]["config"] = class_configs + claim_configs
    if node_selector is not None:
        allocation["nodeSelector"] = node_selector
    return allocation


def _configuration(config: Obj) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if config.get("requests"):
        out["requests"] = list(config["requests"])
    if "opaque" in config:
        out["opaque"] = config["opaque"]
    return out


def _candidates(slices: Sequence[Obj], node: Obj) -> Iterable[tuple[DeviceId, Obj]]:
    """Devices of complete, newest-generation pools visible from ``node``, in a stable order."""
    newest: dict[tuple[str, str], int] = {}
    for slice_ in slices:
        spec = slice_.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("driver", ""), pool.get("name", ""))
        newest[key] = max(newest.get(key, 0), int(pool.get("generation") or 0))
    current: dict[tuple[str, str], list[Obj]] = {}
    for slice_ in slices:
        spec = slice_.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("driver", ""), pool.get("name", ""))
        if int(pool.get("generation") or 0) == newest[key]:
            current.setdefault(key, []).append(slice_)
    for key in sorted(current):
        pool_slices = sorted(current[key], key=lambda s: str(s["metadata"]["name"]))
        expected = int((pool_slices[0]["spec"].get("pool") or {}).get("resourceSliceCount") or 1)
        if len(pool_slices) < expected:
            continue
        for slice_ in pool_slices:
            if not _slice_visible(slice_, node):
                continue
            for device in slice_["spec"].get("devices") or []:
                yield DeviceId(key[0], key[1], device["name"]), slice_


def _slice_visible(slice_: Obj, node: Obj) -> bool:
    spec = slice_.get("spec") or {}
    if spec.get("nodeName"):
        return bool(spec["nodeName"] == (node.get("metadata") or {}).get("name"))
    if spec.get("allNodes"):
        return True
    if spec.get("nodeSelector"):
        return placement.node_selector_matches(spec["nodeSelector"], node)
    return False


def _slice_node_selector(slice_: Obj) -> dict[str, Any] | None:
    spec = slice_.get("spec") or {}
    if spec.get("nodeName"):
        return {
            "nodeSelectorTerms": [
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [spec["nodeName"]]}
                    ]
                }
            ]
        }
    if spec.get("nodeSelector"):
        return dict(spec["nodeSelector"])
    return None


def _device_selected(expressions: Sequence[str], device: DeviceId, slice_: Obj) -> bool:
    raw = next(d for d in slice_["spec"]["devices"] if d["name"] == device.device)
    body = raw.get("basic") or raw  # v1beta1 nests attributes under "basic"
    attributes = body.get("attributes") or {}
    capacity = body.get("capacity") or {}
    return all(
        selectors.device_matches(
            expression, driver=device.driver, attributes=attributes, capacity=capacity
        )
        for expression in expressions
    )
