"""Which ResourceClaims a pod uses, whether they are ready to prepare, and which CDI devices each
container gets from the prepared results.

Called by :mod:`.podworker` before NodePrepareResources and when building a container's launch
spec. Pure.

A pod names its claims in ``spec.resourceClaims``: directly (``resourceClaimName``) or through a
template, whose generated claim's name the resourceclaim controller records in
``status.resourceClaimStatuses``. The kubelet prepares a claim only once it is allocated and
reserved for the pod. A container gets the CDI devices of the claims it lists in
``resources.claims`` (all of a claim's requests, or the one named by ``request``), matched to the
plugin's prepared devices by pool and device name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

__all__ = ["ClaimNotReady", "PodClaim", "cdi_ids_for_container", "check_ready", "pod_claims"]

Obj = Mapping[str, Any]


class ClaimNotReady(ValueError):
    """A claim cannot be prepared yet; the message says which and why (shown in an Event)."""


@attrs.frozen
class PodClaim:
    """One entry of ``spec.resourceClaims`` and the ResourceClaim behind it (None: no claim is
    needed, as when a template produced none)."""

    pod_claim_name: str
    claim_name: str | None


@attrs.frozen
class PreparedDevice:
    """One device of a NodePrepareResources answer (a view of ``proto.dra.Device``)."""

    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...]


def pod_claims(pod: Obj) -> tuple[PodClaim, ...]:
    """The claims of ``pod``. Pure. Raises :class:`ClaimNotReady` while a template's claim is
    not yet recorded in the pod's status."""
    recorded = {
        s.get("name"): s for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    out: list[PodClaim] = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = str(entry.get("name", ""))
        if entry.get("resourceClaimName"):
            out.append(PodClaim(name, str(entry["resourceClaimName"])))
        elif entry.get("resourceClaimTemplateName"):
            if name not in recorded:
                msg = f"waiting for the ResourceClaim of pod claim {name!r} to be created"
                raise ClaimNotReady(msg)
            claim = recorded[name].get("resourceClaimName")
            out.append(PodClaim(name, str(claim) if claim else None))
    return tuple(out)


def check_ready(claim: Obj | None, claim_name: str, pod: Obj) -> None:
    """Raise :class:`ClaimNotReady` unless ``claim`` exists, is allocated and reserved for
    ``pod``. Pure."""
    meta = pod.get("metadata") or {}
    if claim is None:
        msg = f"ResourceClaim {meta.get('namespace')}/{claim_name} does not exist"
        raise ClaimNotReady(msg)
    status = claim.get("status") or {}
    if not status.get("allocation"):
        msg = f"ResourceClaim {claim_name} is not allocated yet"
        raise ClaimNotReady(msg)
    reserved = {r.get("uid") for r in status.get("reservedFor") or []}
    if meta.get("uid") not in reserved:
        msg = f"ResourceClaim {claim_name} is not reserved for pod {meta.get('name')}"
        raise ClaimNotReady(msg)


def cdi_ids_for_container(
    container: Obj,
    claims: Mapping[str, Obj],
    prepared: Mapping[str, Sequence[PreparedDevice]],
) -> list[str]:
    """CDI device ids for ``container``, in its ``resources.claims`` order, duplicates dropped.

    ``claims``: pod claim name -> ResourceClaim; ``prepared``: claim UID -> prepared devices.
    Pure. Raises :class:`ClaimNotReady` when a listed claim is unknown or was not prepared.
    """
    ids: dict[str, None] = {}
    for wanted in (container.get("resources") or {}).get("claims") or []:
        pod_claim = str(wanted.get("name", ""))
        claim = claims.get(pod_claim)
        if claim is None:
            msg = f"container {container.get('name')} uses unknown pod claim {pod_claim!r}"
            raise ClaimNotReady(msg)
        uid = str((claim.get("metadata") or {}).get("uid", ""))
        if uid not in prepared:
            msg = f"ResourceClaim {claim['metadata'].get('name')} is not prepared"
            raise ClaimNotReady(msg)
        request = wanted.get("request")
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}
        for result in results.get("results") or []:
            if request and _base(result.get("request", "")) != request:
                continue
            for device in prepared[uid]:
                if (device.pool_name, device.device_name) != (
                    result.get("pool"),
                    result.get("device"),
                ):
                    continue
                if (
                    device.request_names
                    and _base(result.get("request", "")) not in device.request_names
                ):
                    continue
                for cdi_id in device.cdi_device_ids:
                    ids.setdefault(cdi_id, None)
    return list(ids)


def _base(request: str) -> str:
    """``req/sub`` -> ``req``: prepared devices name the parent request."""
    return request.split("/", 1)[0]
