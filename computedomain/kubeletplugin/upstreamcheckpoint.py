"""One-way import of upstream's ``checkpoint.json``, so a node can switch from the Go plugin.

Upstream's file (docs/compatibility.md#checkpoint) holds a V1 and a V2 section, each with a
checksum: FNV-1a (32 bit) of the text ``([]uint8)[b0 b1 ...]`` (go-spew's rendering of the bytes of
the compact Go JSON), the top-level one over ``{"checksum":0,"v1":...}``, the V2 one over the V2
object with its checksum set to 0. A file written by Go already has Go's field order and
escaping, so re-encoding the parsed JSON compactly, in file order, with Go's escapes reproduces
the bytes Go hashed. We verify both checksums, read V2 (or V1 when V2 is absent), and convert
each claim into our :class:`~computedomain.kubeletplugin.checkpoint.ClaimEntry`. Files from
before and after upstream's ``PrepareAborted`` state (v0.5) are both read: an aborted entry
keeps its ``abortedAt`` (it then expires here as it would have there), one without it is
dropped, as upstream's cleanup drops it
(docs/compatibility.md#aborted-prepares-in-the-checkpoint). Pure; the
caller (:meth:`~computedomain.kubeletplugin.checkpointstore.CheckpointStore.import_upstream`)
writes our checkpoint and renames upstream's file (a later rollback to the Go plugin then
starts clean instead of from stale state). The legacy 25.03-RC2 layout is not imported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from computedomain.api.errors import ConfigError
from computedomain.kubeletplugin import claimplan
from computedomain.kubeletplugin.checkpoint import (
    Checkpoint,
    ClaimEntry,
    ClaimState,
    CorruptCheckpoint,
    DeviceType,
    PreparedDevice,
    parse_rfc3339,
)

FILE_NAME: Final = "checkpoint.json"
_FNV_OFFSET: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193
_GO_ESCAPES: Final = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def go_json(value: Any) -> bytes:
    """Compact JSON as Go's encoding/json writes it, keeping the given key order. Pure."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escape in _GO_ESCAPES.items():
        text = text.replace(char, escape)
    return text.encode()


def checksum(data: bytes) -> int:
    """FNV-1a 32 over go-spew's ``([]uint8)[...]`` rendering of ``data``. Pure."""
    rendered = ("([]uint8)[" + " ".join(str(b) for b in data) + "]").encode()
    value = _FNV_OFFSET
    for byte in rendered:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def verify(doc: Mapping[str, Any]) -> None:
    """Check both checksums; raises CorruptCheckpoint saying which one failed."""
    top = {"checksum": 0, "v1": doc.get("v1", {})}
    if checksum(go_json(top)) != doc.get("checksum"):
        msg = "upstream checkpoint: top-level checksum does not match"
        raise CorruptCheckpoint(msg)
    v2 = doc.get("v2")
    if v2 is not None and checksum(go_json({**v2, "checksum": 0})) != v2.get("checksum"):
        msg = "upstream checkpoint: v2 checksum does not match"
        raise CorruptCheckpoint(msg)


def _admin(status: Mapping[str, Any], device: str) -> bool:
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
    return any(r.get("device") == device and r.get("adminAccess") for r in results)


def _channels(status: Mapping[str, Any]) -> tuple[int, ...]:
    try:
        plan = claimplan.plan({"status": status})
    except ConfigError:
        return (0,)
    for device in plan.of_type(DeviceType.CHANNEL):
        if getattr(device.config, "wants_all_channels", False):
            return tuple(range(2048))
    return (0,)


def _devices(claim: Mapping[str, Any]) -> tuple[PreparedDevice, ...]:
    status = claim.get("status") or {}
    out: list[PreparedDevice] = []
    for group in claim.get("preparedDevices") or []:
        config = group.get("configState") or {}
        domain = str(config.get("ComputeDomain", ""))
        for entry in group.get("devices") or []:
            for kind in DeviceType:
                held = entry.get(kind.value)
                if not held:
                    continue
                device = held.get("device") or {}
                name = str(device.get("DeviceName", ""))
                out.append(
                    PreparedDevice(
                        device=name,
                        pool=str(device.get("PoolName", "")),
                        requests=tuple(device.get("Requests") or ()),
                        type=kind,
                        domain_id=domain,
                        admin_access=_admin(status, name),
                        cdi_device_ids=tuple(device.get("CDIDeviceIDs") or ()),
                        channels=_channels(status) if kind is DeviceType.CHANNEL else (),
                    )
                )
    return tuple(out)


def _planned(claim: Mapping[str, Any]) -> tuple[PreparedDevice, ...]:
    """Devices of a PrepareStarted claim, from its allocation (nothing prepared yet)."""
    try:
        plan = claimplan.plan({"status": claim.get("status") or {}})
    except ConfigError:
        return ()
    return tuple(
        PreparedDevice(
            device=d.device,
            pool=d.pool,
            requests=(d.request,),
            type=d.type,
            domain_id=d.config.domain_id,
            admin_access=d.admin_access,
        )
        for d in plan.devices
    )


def parse(data: bytes, *, now: float) -> Checkpoint:
    """Our checkpoint from upstream's file. Pure; raises CorruptCheckpoint."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        msg = f"upstream checkpoint: not valid JSON: {exc}"
        raise CorruptCheckpoint(msg) from exc
    if not isinstance(doc, dict):
        msg = "upstream checkpoint: not a JSON object"
        raise CorruptCheckpoint(msg)
    verify(doc)
    v2 = doc.get("v2")
    if v2 is not None:
        raw_claims = v2.get("preparedClaims") or {}
        boot_id = str(v2.get("nodeBootID") or "")
    else:
        raw_claims = {
            uid: {**c, "checkpointState": ClaimState.PREPARE_COMPLETED.value}
            for uid, c in ((doc.get("v1") or {}).get("preparedClaims") or {}).items()
        }
        boot_id = ""
    claims: dict[str, ClaimEntry] = {}
    for uid, claim in raw_claims.items():
        devices_field = claim.get("preparedDevices") if isinstance(claim, Mapping) else None
        if not isinstance(claim, Mapping) or not isinstance(devices_field, list | None):
            msg = f"upstream checkpoint: claim {uid} is not in a known layout"
            raise CorruptCheckpoint(msg)
        try:
            state = ClaimState(str(claim.get("checkpointState", "")))
        except ValueError:
            continue  # unset states are not prepared claims
        at = now
        if state is ClaimState.PREPARE_ABORTED:
            aborted_at = claim.get("abortedAt")
            if not aborted_at:
                continue  # upstream's cleanup drops these at once
            at = parse_rfc3339(f"v2.preparedClaims.{uid}.abortedAt", str(aborted_at))
            devices: tuple[PreparedDevice, ...] = ()
        elif state is ClaimState.PREPARE_COMPLETED:
            devices = _devices(claim)
        else:
            devices = _planned(claim)
        claims[str(uid)] = ClaimEntry(
            state=state,
            namespace=str(claim.get("namespace", "")),
            name=str(claim.get("name", "")),
            at=at,
            devices=devices,
        )
    return Checkpoint(boot_id=boot_id, claims=claims)
