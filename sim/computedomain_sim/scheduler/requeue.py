"""Which pending pods a ResourceClaim event can unblock (kube-scheduler's queueing hints).

Called by :mod:`.scheduler` from its claim informer's handlers. Pure. Re-deciding a pending pod
evaluates the CEL selectors of every device on every node, and a domain forming writes each of
its claims several times (created, allocated, reserved, prepared), so reconsidering every
pending pod on every claim event grew with pods x claims x nodes. A claim event can unblock only

- the pods that use that claim (it now exists, or is allocated, or reserved for them), found
  through the pod index :func:`claims_of_pod`; and
- any pending pod when it gives devices back (its allocation went away or lost devices, or an
  allocated claim was deleted): those devices may be the ones a waiting pod needs.

ResourceSlice, DeviceClass and Node changes still reconsider every pending pod (they are rare
and may add capacity anywhere).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .allocation import allocated_devices

__all__ = ["claims_of_pod", "releases_devices"]

Obj = Mapping[str, Any]


def claims_of_pod(pod: Obj) -> list[str]:
    """``namespace/name`` of every ResourceClaim the pod uses that is known by name: those it
    names directly and those created for it from templates (recorded in
    ``status.resourceClaimStatuses``). Pure; an index function."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    keys = [
        f"{namespace}/{entry['resourceClaimName']}"
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []
        if entry.get("resourceClaimName")
    ]
    keys += [
        f"{namespace}/{status['resourceClaimName']}"
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if status.get("resourceClaimName")
    ]
    return sorted(set(keys))


def releases_devices(old: Obj | None, new: Obj | None) -> bool:
    """Whether going from claim ``old`` to ``new`` (None: absent) frees an allocated device.
    Pure."""
    before = allocated_devices([old]) if old is not None else frozenset()
    after = allocated_devices([new]) if new is not None else frozenset()
    return bool(before - after)
