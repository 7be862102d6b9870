"""Opaque device configs carried in ResourceClaims: ComputeDomainChannelConfig and -DaemonConfig.

The controller renders them into claim templates; the kubelet plugin decodes them when it
prepares a claim. Decoding for prepare is strict (docs/compatibility.md#opaque-configs): an unknown
or duplicated field, a wrong apiVersion or kind, or a missing field is a
:class:`~computedomain.api.errors.ConfigError` naming the field, which the plugin reports as a
permanent per-claim error. ``domainID`` becomes a directory name on the node, so it must be a
single safe path component (upstream PR #1346). Unprepare reads configs back leniently, because a
claim prepared by an older version must always be releasable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from computedomain.api import names, validation
from computedomain.api.errors import ConfigError


@attrs.frozen
class ChannelConfig:
    """``ComputeDomainChannelConfig``: which domain a workload channel claim joins."""

    domain_id: str
    # Not validated upstream: "All" means every channel, anything else one channel.
    allocation_mode: str | None = None

    @property
    def wants_all_channels(self) -> bool:
        return self.allocation_mode == "All"

    def to_wire(self) -> dict[str, Any]:
        # The controller always renders the allocationMode key (an empty mode renders as null).
        return {
            "apiVersion": names.GROUP_VERSION,
            "kind": names.CHANNEL_CONFIG_KIND,
            "domainID": self.domain_id,
            "allocationMode": self.allocation_mode,
        }


@attrs.frozen
class DaemonConfig:
    """``ComputeDomainDaemonConfig``: which domain a daemon claim serves."""

    domain_id: str

    def to_wire(self) -> dict[str, Any]:
        return {
            "apiVersion": names.GROUP_VERSION,
            "kind": names.DAEMON_CONFIG_KIND,
            "domainID": self.domain_id,
        }


OpaqueConfig = ChannelConfig | DaemonConfig

_FIELDS: dict[str, frozenset[str]] = {
    names.CHANNEL_CONFIG_KIND: frozenset({"apiVersion", "kind", "domainID", "allocationMode"}),
    names.DAEMON_CONFIG_KIND: frozenset({"apiVersion", "kind", "domainID"}),
}


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ConfigError(key, "duplicate field")
        seen[key] = value
    return seen


def _parse(parameters: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(parameters, Mapping):
        return dict(parameters)
    try:
        value = json.loads(parameters, object_pairs_hook=_reject_duplicates)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError("parameters", f"not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ConfigError("parameters", "must be a JSON object")
    return value


def decode(parameters: str | bytes | Mapping[str, Any], *, strict: bool = True) -> OpaqueConfig:
    """Decode and validate opaque parameters. Pure; raises ConfigError naming the field.

    ``strict`` (prepare) rejects unknown and duplicate fields and validates ``domainID``;
    lenient decoding (unprepare) only needs the kind and whatever ``domainID`` is there.
    """
    data = _parse(parameters)
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    if api_version != names.GROUP_VERSION:
        raise ConfigError("apiVersion", f"must be {names.GROUP_VERSION!r}, got {api_version!r}")
    if not isinstance(kind, str) or kind not in _FIELDS:
        known = ", ".join(sorted(_FIELDS))
        raise ConfigError("kind", f"{kind!r} is not a recognized configuration (want {known})")
    if strict:
        unknown = sorted(set(data) - _FIELDS[kind])
        if unknown:
            raise ConfigError(unknown[0], f"unknown field in {kind}")
    domain_id = data.get("domainID")
    if domain_id is None or domain_id == "":
        raise ConfigError("domainID", "cannot be empty")
    if not isinstance(domain_id, str):
        raise ConfigError("domainID", f"must be a string, got {type(domain_id).__name__}")
    if strict:
        validation.safe_path_component("domainID", domain_id)
    if kind == names.DAEMON_CONFIG_KIND:
        return DaemonConfig(domain_id=domain_id)
    mode = data.get("allocationMode")
    if mode is not None and not isinstance(mode, str):
        raise ConfigError("allocationMode", f"must be a string, got {type(mode).__name__}")
    return ChannelConfig(domain_id=domain_id, allocation_mode=mode)
