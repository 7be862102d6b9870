"""Config resolution: which opaque config applies to each device allocated to a claim (pure).

Called by the prepare state machine before anything is written, so a claim whose configs are
wrong fails at once with a permanent per-claim error that names the field, and leaves no trace
(checkpoint, files, labels). The rules are upstream's (docs/compatibility.md#opaque-configs):

1. Of ``status.allocation.devices.config``, take this driver's entries, class-sourced first and
   claim-sourced after, each in order; a later entry takes precedence over an earlier one.
   Entries without ``opaque`` or with an unknown ``source`` are errors; other drivers' entries
   are skipped. Each is decoded strictly (:func:`computedomain.api.configs.decode`).
2. Every result of ``status.allocation.devices.results`` that belongs to this driver must name
   a device this node publishes (``channel-<n>``, ``daemon-0``).
3. A result gets the highest-precedence config that names its request (a config of the wrong
   kind for that device is an error), or else the highest-precedence config with no requests
   whose kind matches the device's type. A device with no config is an error (upstream: the
   empty default config fails validation).
4. A channel config and a daemon config each apply to exactly one device.

Upstream retries some of these errors although the allocation of a claim never changes; here
they are permanent (retrying cannot help).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from computedomain.api import configs, names
from computedomain.api.errors import ConfigError
from computedomain.kubeletplugin.checkpoint import DeviceType

SOURCES: Final = ("FromClass", "FromClaim")
_CONFIG_PATH: Final = "status.allocation.devices.config"
_RESULTS_PATH: Final = "status.allocation.devices.results"


@attrs.frozen
class PlannedDevice:
    """One allocated device of this driver with the config that applies to it."""

    request: str
    device: str
    pool: str
    type: DeviceType
    admin_access: bool
    config: configs.OpaqueConfig
    config_field: str  # where the config came from, for messages


@attrs.frozen
class ClaimPlan:
    devices: tuple[PlannedDevice, ...]

    def of_type(self, device_type: DeviceType) -> tuple[PlannedDevice, ...]:
        return tuple(d for d in self.devices if d.type is device_type)


@attrs.frozen
class _Config:
    index: int
    requests: tuple[str, ...]
    value: configs.OpaqueConfig

    @property
    def field(self) -> str:
        return f"{_CONFIG_PATH}[{self.index}]"


def device_type(device: str, channel_count: int = names.IMEX_CHANNEL_COUNT) -> DeviceType | None:
    """The type of a device this plugin publishes or could publish; None for anything else."""
    kind, _, number = device.rpartition("-")
    if not number.isdigit() or number != str(int(number)):
        return None
    if kind == names.DEVICE_TYPE_CHANNEL and int(number) < channel_count:
        return DeviceType.CHANNEL
    if kind == names.DEVICE_TYPE_DAEMON and int(number) == 0:
        return DeviceType.DAEMON
    return None


def _kind_of(value: configs.OpaqueConfig) -> DeviceType:
    return DeviceType.CHANNEL if isinstance(value, configs.ChannelConfig) else DeviceType.DAEMON


def _kind_name(value: configs.OpaqueConfig) -> str:
    return (
        names.CHANNEL_CONFIG_KIND
        if isinstance(value, configs.ChannelConfig)
        else names.DAEMON_CONFIG_KIND
    )


def _decode_configs(entries: Sequence[Mapping[str, Any]], driver: str) -> list[_Config]:
    by_source: dict[str, list[_Config]] = {s: [] for s in SOURCES}
    for index, entry in enumerate(entries):
        field = f"{_CONFIG_PATH}[{index}]"
        opaque = entry.get("opaque")
        if not isinstance(opaque, Mapping):
            raise ConfigError(f"{field}.opaque", "only opaque parameters are supported")
        if opaque.get("driver") != driver:
            continue
        source = entry.get("source")
        if source not in by_source:
            raise ConfigError(f"{field}.source", f"{source!r} is not one of {', '.join(SOURCES)}")
        try:
            value = configs.decode(opaque.get("parameters") or {}, strict=True)
        except ConfigError as exc:
            raise ConfigError(f"{field}.opaque.parameters.{exc.field}", exc.reason) from exc
        requests = entry.get("requests") or ()
        if not all(isinstance(r, str) for r in requests):
            raise ConfigError(f"{field}.requests", "must be a list of request names")
        by_source[str(source)].append(_Config(index, tuple(requests), value))
    # Precedence: class configs, then claim configs; later in the list wins.
    return by_source["FromClass"] + by_source["FromClaim"]


def _matches(config: _Config, request: str) -> bool:
    base = request.split("/", 1)[0]
    return request in config.requests or base in config.requests


def _pick(ordered: Sequence[_Config], request: str, kind: DeviceType, result_field: str) -> _Config:
    for config in reversed(ordered):
        if _matches(config, request):
            if _kind_of(config.value) is not kind:
                raise ConfigError(
                    config.field,
                    f"cannot apply {_kind_name(config.value)} to request {request!r} "
                    f"(a {kind.value} device)",
                )
            return config
    for config in reversed(ordered):
        if not config.requests and _kind_of(config.value) is kind:
            return config
    want = names.CHANNEL_CONFIG_KIND if kind is DeviceType.CHANNEL else names.DAEMON_CONFIG_KIND
    raise ConfigError(
        _CONFIG_PATH, f"no {want} applies to request {request!r} ({result_field}); domainID unset"
    )


def plan(claim: Mapping[str, Any], *, driver: str = names.DRIVER_NAME) -> ClaimPlan:
    """Resolve the configs of an allocated claim. Pure; raises ConfigError naming the field."""
    allocation = (claim.get("status") or {}).get("allocation")
    if not isinstance(allocation, Mapping):
        raise ConfigError("status.allocation", "no allocation set in ResourceClaim")
    devices = allocation.get("devices") or {}
    ordered = _decode_configs(devices.get("config") or (), driver)
    planned: list[PlannedDevice] = []
    uses: dict[int, list[str]] = {}
    for index, result in enumerate(devices.get("results") or ()):
        if result.get("driver") != driver:
            continue
        field = f"{_RESULTS_PATH}[{index}]"
        device = str(result.get("device", ""))
        kind = device_type(device)
        if kind is None:
            raise ConfigError(f"{field}.device", f"{device!r} is not a device this node publishes")
        request = str(result.get("request", ""))
        config = _pick(ordered, request, kind, field)
        uses.setdefault(config.index, []).append(device)
        planned.append(
            PlannedDevice(
                request=request,
                device=device,
                pool=str(result.get("pool", "")),
                type=kind,
                admin_access=bool(result.get("adminAccess") or False),
                config=config.value,
                config_field=config.field,
            )
        )
    for config in ordered:
        devices_of = uses.get(config.index, [])
        if len(devices_of) > 1:
            raise ConfigError(
                config.field,
                f"{_kind_name(config.value)} applies to exactly one device, "
                f"got {len(devices_of)} ({', '.join(devices_of)})",
            )
    if not planned:
        raise ConfigError(_RESULTS_PATH, f"no device of driver {driver} is allocated")
    return ClaimPlan(devices=tuple(planned))
