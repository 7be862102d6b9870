"""The plugin's checkpoint: which claims this node has prepared, in what state (pure part).

Upstream keeps the same facts in ``checkpoint.json`` (docs/compatibility.md#checkpoint) in a format
whose checksum depends on Go's JSON encoder. Ours is our own, documented here, in its own file
(``computedomain-checkpoint.json`` beside upstream's), so a node switching implementations never
makes either side read the other's format by accident (see
:mod:`computedomain.kubeletplugin.upstreamcheckpoint` for the one-way import)::

    {"format": "computedomain.kubeletplugin/checkpoint",
     "version": 1,
     "nodeBootID": "<boot id when written>",
     "claims": {"<claim uid>": {
         "state": "PrepareStarted" | "PrepareCompleted" | "PrepareAborted",
         "namespace": "...", "name": "...", "at": <wall seconds of the last transition>,
         "devices": [{"device": "channel-0", "pool": "<node>", "requests": ["channel"],
                      "type": "channel" | "daemon", "domainID": "<cd uid>",
                      "adminAccess": false, "cdiDeviceIDs": [...], "channels": [0]}],
         "abortedAt": "<RFC 3339, UTC, seconds>"}},
     "checksum": "sha256:<hex>"}

The checksum is SHA-256 over the canonical JSON (sorted keys, no spaces) of the document
without ``checksum``. Entries keep ``namespace``/``name`` in every state, so cleanup can check
completed claims too. A ``PrepareAborted`` entry (upstream's state and its ``abortedAt`` field,
docs/compatibility.md#aborted-prepares-in-the-checkpoint) records that a claim was unprepared
while a prepare of it may still be running: that prepare must not resurrect it (#1162). It
holds no devices; ``at`` keeps the exact time, ``abortedAt`` upstream's rendering of it. Files
of the earlier layout, with a top-level ``"tombstones": [[uid, at], ...]`` list, are read
with each tombstone as an aborted entry. :func:`decode` raises :class:`CorruptCheckpoint` for
anything that is not a valid document of a known version. Pure functions over frozen values.
"""

from __future__ import annotations

import enum
import hashlib
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import attrs

from computedomain.api import jsoncodec

FORMAT: Final = "computedomain.kubeletplugin/checkpoint"
VERSION: Final = 1
FILE_NAME: Final = "computedomain-checkpoint.json"


class CorruptCheckpoint(ValueError):
    """The file is not a valid checkpoint (bad JSON, wrong checksum, unknown version...)."""


class ClaimState(enum.StrEnum):
    PREPARE_STARTED = "PrepareStarted"
    PREPARE_COMPLETED = "PrepareCompleted"
    PREPARE_ABORTED = "PrepareAborted"


class DeviceType(enum.StrEnum):
    CHANNEL = "channel"
    DAEMON = "daemon"


@attrs.frozen
class PreparedDevice:
    """One allocated device of a claim and, once prepared, what the kubelet got for it."""

    device: str
    pool: str
    requests: tuple[str, ...]
    type: DeviceType
    domain_id: str
    admin_access: bool = False
    cdi_device_ids: tuple[str, ...] = ()
    channels: tuple[int, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "pool": self.pool,
            "requests": list(self.requests),
            "type": self.type.value,
            "domainID": self.domain_id,
            "adminAccess": self.admin_access,
            "cdiDeviceIDs": list(self.cdi_device_ids),
            "channels": list(self.channels),
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> PreparedDevice:
        return cls(
            device=_str(data, "device"),
            pool=_str(data, "pool"),
            requests=tuple(_strs(data, "requests")),
            type=DeviceType(_str(data, "type")),
            domain_id=_str(data, "domainID"),
            admin_access=bool(data.get("adminAccess", False)),
            cdi_device_ids=tuple(_strs(data, "cdiDeviceIDs")),
            channels=tuple(int(c) for c in data.get("channels", ())),
        )


def rfc3339(at: float) -> str:
    """``at`` (wall seconds) as RFC 3339 in UTC with whole seconds, as Kubernetes writes
    ``metav1.Time`` (the fraction is cut, not rounded). Pure."""
    return datetime.fromtimestamp(math.floor(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(field: str, text: str) -> float:
    """Wall seconds of an RFC 3339 time; raises CorruptCheckpoint naming ``field``. Pure."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        msg = f"{field}: {text!r} is not an RFC 3339 time"
        raise CorruptCheckpoint(msg) from exc
    if moment.tzinfo is None:
        msg = f"{field}: {text!r} has no time zone"
        raise CorruptCheckpoint(msg)
    return moment.timestamp()


@attrs.frozen
class ClaimEntry:
    state: ClaimState
    namespace: str
    name: str
    at: float
    devices: tuple[PreparedDevice, ...] = ()

    @property
    def completed(self) -> bool:
        return self.state is ClaimState.PREPARE_COMPLETED

    @property
    def aborted(self) -> bool:
        return self.state is ClaimState.PREPARE_ABORTED

    def held_devices(self) -> frozenset[str]:
        """Device names this claim holds exclusively (admin access shares)."""
        return frozenset(d.device for d in self.devices if not d.admin_access)

    def refuses(self, requested_at: float) -> bool:
        """Whether this entry refuses a prepare request that began at ``requested_at``: it
        is aborted, and the request began before the abort (or in the same instant)."""
        return self.aborted and requested_at <= self.at

    def to_wire(self) -> dict[str, Any]:
        wire = {
            "state": self.state.value,
            "namespace": self.namespace,
            "name": self.name,
            "at": self.at,
            "devices": [d.to_wire() for d in self.devices],
        }
        if self.aborted:
            wire["abortedAt"] = rfc3339(self.at)
        return wire

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ClaimEntry:
        state = ClaimState(_str(data, "state"))
        if "at" in data or state is not ClaimState.PREPARE_ABORTED:
            at = float(data.get("at", 0.0))
        else:
            at = parse_rfc3339("abortedAt", _str(data, "abortedAt"))
        if state is ClaimState.PREPARE_ABORTED:
            try:
                rfc3339(at)
            except (OverflowError, ValueError, OSError) as exc:
                msg = f"at: {at!r} is not a time an aborted entry can have"
                raise CorruptCheckpoint(msg) from exc
        return cls(
            state=state,
            namespace=_str(data, "namespace"),
            name=_str(data, "name"),
            at=at,
            devices=tuple(PreparedDevice.from_wire(d) for d in data.get("devices", ())),
        )


@attrs.frozen
class Checkpoint:
    """The whole checkpoint. Change it with the ``with_*``/``without`` methods (new values)."""

    boot_id: str = ""
    claims: Mapping[str, ClaimEntry] = attrs.field(factory=dict)

    def with_claim(self, uid: str, entry: ClaimEntry) -> Checkpoint:
        """Record ``entry`` for ``uid`` (replacing any entry, an aborted one included)."""
        return attrs.evolve(self, claims={**self.claims, uid: entry})

    def aborted(self, uid: str, namespace: str, name: str, at: float) -> Checkpoint:
        """Mark ``uid`` ``PrepareAborted`` at ``at``: it holds nothing any more."""
        entry = ClaimEntry(ClaimState.PREPARE_ABORTED, namespace, name, at)
        return self.with_claim(uid, entry)

    def without_claim(self, uid: str) -> Checkpoint:
        """Drop ``uid``'s entry (an unprepared completed claim, or cleanup)."""
        return attrs.evolve(self, claims={k: v for k, v in self.claims.items() if k != uid})

    def expire_aborted(self, now: float, ttl: float) -> Checkpoint:
        """Drop aborted entries ``ttl`` seconds old or older (no prepare request lives that
        long); the same value when none is due."""
        keep = {k: e for k, e in self.claims.items() if not (e.aborted and now - e.at >= ttl)}
        if len(keep) == len(self.claims):
            return self
        return attrs.evolve(self, claims=keep)

    def completed(self) -> Iterable[tuple[str, ClaimEntry]]:
        return ((uid, e) for uid, e in self.claims.items() if e.completed)

    def live(self) -> Iterable[tuple[str, ClaimEntry]]:
        """Entries that are not aborted: claims this node has (begun to) prepare."""
        return ((uid, e) for uid, e in self.claims.items() if not e.aborted)


def _str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        msg = f"{key}: expected a string, got {type(value).__name__}"
        raise CorruptCheckpoint(msg)
    return value


def _strs(data: Mapping[str, Any], key: str) -> list[str]:
    values = data.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        msg = f"{key}: expected a list of strings"
        raise CorruptCheckpoint(msg)
    return values


def checksum(body: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``body`` (without its checksum). Pure."""
    return "sha256:" + hashlib.sha256(jsoncodec.canonical(body)).hexdigest()


def to_wire(checkpoint: Checkpoint) -> dict[str, Any]:
    """The document without its checksum. Pure."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "nodeBootID": checkpoint.boot_id,
        "claims": {uid: entry.to_wire() for uid, entry in checkpoint.claims.items()},
    }


def encode(checkpoint: Checkpoint) -> bytes:
    """The file's bytes: the canonical JSON of the document with its checksum. Pure."""
    body = to_wire(checkpoint)
    return jsoncodec.canonical({**body, "checksum": checksum(body)})


def decode(data: bytes) -> Checkpoint:
    """Parse and verify a checkpoint file. Pure; raises CorruptCheckpoint saying what is wrong."""
    try:
        doc = jsoncodec.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        msg = f"not valid JSON: {exc}"
        raise CorruptCheckpoint(msg) from exc
    if not isinstance(doc, dict):
        msg = "not a JSON object"
        raise CorruptCheckpoint(msg)
    if doc.get("format") != FORMAT:
        msg = f"format: expected {FORMAT!r}, got {doc.get('format')!r}"
        raise CorruptCheckpoint(msg)
    if doc.get("version") != VERSION:
        msg = f"version: {doc.get('version')!r} is not supported (this plugin reads {VERSION})"
        raise CorruptCheckpoint(msg)
    stored = doc.pop("checksum", None)
    if stored != checksum(doc):
        msg = f"checksum: stored {stored!r} does not match the content"
        raise CorruptCheckpoint(msg)
    try:
        claims = {str(uid): ClaimEntry.from_wire(e) for uid, e in doc.get("claims", {}).items()}
        for uid, at in doc.get("tombstones", []):  # the earlier layout's aborted claims
            if str(uid) not in claims:
                claims[str(uid)] = ClaimEntry(ClaimState.PREPARE_ABORTED, "", "", float(at))
        boot_id = _str(doc, "nodeBootID")
    except CorruptCheckpoint:
        raise
    except (ValueError, TypeError, AttributeError) as exc:
        msg = f"invalid content: {exc}"
        raise CorruptCheckpoint(msg) from exc
    return Checkpoint(boot_id=boot_id, claims=claims)
