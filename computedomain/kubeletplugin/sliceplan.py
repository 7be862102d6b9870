"""The node's ResourceSlice: what it must contain, and how to get there from what exists (pure).

One pool named after the node, one slice (docs/compatibility.md#devices-and-resourceslices):
``channel-0`` and ``daemon-0`` with the attributes ``type`` and ``id`` that the DeviceClass
selectors test, plus our additive string attribute ``cliqueID`` (omitted on nodes without a clique)
so a claim can select devices of one rack; with host-managed IMEX only ``channel-0``, as the host
runs the daemon (docs/compatibility.md#host-managed-imex-daemons). Devices are in a fixed order
(upstream's map order is random per start and causes needless updates). The slice is owned by
the Node (controller reference, so it goes with the Node) and named by ``generateName`` as the
kubelet helper names slices.

:func:`plan` compares the slices of this driver on this node with the desired content and
returns the writes: create when the pool has no slice, update the kept one when it drifted
(bumping the pool generation), delete every other slice of this driver on this node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from computedomain.api import names

API_VERSION: Final = "resource.k8s.io/v1"


def generate_name(node: str, driver: str = names.DRIVER_NAME) -> str:
    """``00000-<driver>-<node>-``: the helper's slice index, driver and owner name."""
    return f"00000-{driver}-{node}-"


def devices(clique_id: str, *, host_managed: bool = False) -> list[dict[str, Any]]:
    """The published devices, in a fixed order (no ``daemon-0`` when host-managed). Pure."""
    result = []
    kinds = [(names.DEVICE_TYPE_CHANNEL, names.channel_device_name(0))]
    if not host_managed:
        kinds.append((names.DEVICE_TYPE_DAEMON, names.daemon_device_name(0)))
    for kind, device in kinds:
        attributes: dict[str, Any] = {
            names.ATTRIBUTE_TYPE: {"string": kind},
            names.ATTRIBUTE_ID: {"int": 0},
        }
        if clique_id:
            attributes[names.ATTRIBUTE_CLIQUE_ID] = {"string": clique_id}
        result.append({"name": device, "attributes": attributes})
    return result


def owner_reference(node: str, node_uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}


@attrs.frozen
class Desired:
    node: str
    node_uid: str
    clique_id: str
    driver: str = names.DRIVER_NAME
    host_managed: bool = False

    def spec(self, generation: int) -> dict[str, Any]:
        return {
            "driver": self.driver,
            "nodeName": self.node,
            "pool": {"name": self.node, "generation": generation, "resourceSliceCount": 1},
            "devices": devices(self.clique_id, host_managed=self.host_managed),
        }

    def new_slice(self) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": {
                "generateName": generate_name(self.node, self.driver),
                "ownerReferences": [owner_reference(self.node, self.node_uid)],
            },
            "spec": self.spec(1),
        }


@attrs.frozen
class Create:
    body: dict[str, Any]


@attrs.frozen
class Update:
    body: dict[str, Any]  # carries metadata.resourceVersion: a compare-and-swap


@attrs.frozen
class Delete:
    name: str
    uid: str


Action = Create | Update | Delete


def _device_view(device: Mapping[str, Any]) -> tuple[str, Any]:
    return (str(device.get("name")), device.get("attributes") or {})


def matches(current: Mapping[str, Any], desired: Desired) -> bool:
    """Whether a slice already says what ``desired`` says (fields we own only). Pure."""
    spec = current.get("spec") or {}
    pool = spec.get("pool") or {}
    meta = current.get("metadata") or {}
    owners = meta.get("ownerReferences") or []
    return (
        spec.get("driver") == desired.driver
        and spec.get("nodeName") == desired.node
        and pool.get("name") == desired.node
        and pool.get("resourceSliceCount") == 1
        and [_device_view(d) for d in spec.get("devices") or []]
        == [_device_view(d) for d in devices(desired.clique_id)]
        and owner_reference(desired.node, desired.node_uid) in owners
    )


def _pool(slice_: Mapping[str, Any]) -> str:
    return str(((slice_.get("spec") or {}).get("pool") or {}).get("name", ""))


def plan(existing: Sequence[Mapping[str, Any]], desired: Desired) -> list[Action]:
    """The writes that make the pool exactly one slice with the desired content. Pure.

    The oldest slice of the node's pool is kept (updated if it drifted); every other slice of
    this driver on this node, of this pool or another, is obsolete and deleted.
    """
    ordered = sorted(
        existing,
        key=lambda s: (
            str((s.get("metadata") or {}).get("creationTimestamp") or ""),
            str((s.get("metadata") or {}).get("name") or ""),
        ),
    )
    ours = [s for s in ordered if _pool(s) == desired.node]
    keep = ours[0] if ours else None
    actions: list[Action] = []
    if keep is None:
        actions.append(Create(desired.new_slice()))
    elif not matches(keep, desired):
        meta = dict(keep.get("metadata") or {})
        owners = [o for o in meta.get("ownerReferences") or [] if o.get("kind") != "Node"]
        meta["ownerReferences"] = [*owners, owner_reference(desired.node, desired.node_uid)]
        generation = int(((keep.get("spec") or {}).get("pool") or {}).get("generation") or 0)
        body = {**keep, "metadata": meta, "spec": desired.spec(generation + 1)}
        actions.append(Update(body))
    for other in ordered:
        if other is keep:
            continue
        meta = other.get("metadata") or {}
        actions.append(Delete(name=str(meta.get("name")), uid=str(meta.get("uid") or "")))
    return actions
