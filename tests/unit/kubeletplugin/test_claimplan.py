"""Config resolution: precedence, matching, strict decoding and field-naming errors."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain.api import configs
from computedomain.api.errors import ConfigError
from computedomain.kubeletplugin import claimplan
from computedomain.kubeletplugin.checkpoint import DeviceType

DRIVER = "compute-domain.nvidia.com"


def _opaque(kind: str, domain: str = "cd-1", source: str = "FromClaim", **extra: Any) -> dict:
    requests = extra.pop("requests", None)
    params = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": kind, "domainID": domain}
    params.update(extra)
    entry: dict[str, Any] = {"source": source, "opaque": {"driver": DRIVER, "parameters": params}}
    if requests is not None:
        entry["requests"] = requests
    return entry


def channel(domain: str = "cd-1", **extra: Any) -> dict:
    return _opaque("ComputeDomainChannelConfig", domain, **extra)


def daemon(domain: str = "cd-1", **extra: Any) -> dict:
    return _opaque("ComputeDomainDaemonConfig", domain, **extra)


def claim(results: list[dict], config: list[dict]) -> dict:
    return {"status": {"allocation": {"devices": {"results": results, "config": config}}}}


def result(device: str = "channel-0", request: str = "channel", **extra: Any) -> dict:
    return {"request": request, "driver": DRIVER, "pool": "n1", "device": device, **extra}


def test_channel_claim() -> None:
    plan = claimplan.plan(claim([result()], [channel(requests=["channel"], allocationMode="All")]))
    (device,) = plan.devices
    assert device.type is DeviceType.CHANNEL
    assert device.config == configs.ChannelConfig("cd-1", "All")
    assert (device.pool, device.request, device.admin_access) == ("n1", "channel", False)


def test_daemon_claim_with_default_style_config() -> None:
    plan = claimplan.plan(claim([result("daemon-0", "daemon")], [daemon()]))
    assert plan.of_type(DeviceType.DAEMON)[0].config == configs.DaemonConfig("cd-1")


def test_claim_configs_override_class_configs_and_later_wins() -> None:
    cfgs = [
        channel("from-claim-early", requests=["channel"]),
        channel("from-class", source="FromClass", requests=["channel"]),
        channel("from-claim-late", requests=["channel"]),
    ]
    plan = claimplan.plan(claim([result()], cfgs))
    assert plan.devices[0].config.domain_id == "from-claim-late"
    assert plan.devices[0].config_field == "status.allocation.devices.config[2]"


def test_request_specific_beats_generic() -> None:
    cfgs = [channel("generic"), channel("specific", source="FromClass", requests=["channel"])]
    assert claimplan.plan(claim([result()], cfgs)).devices[0].config.domain_id == "specific"


def test_generic_config_of_other_type_is_skipped() -> None:
    cfgs = [channel("c"), daemon("d")]
    plan = claimplan.plan(claim([result("daemon-0", "daemon")], cfgs))
    assert plan.devices[0].config == configs.DaemonConfig("d")


def test_subrequest_matches_base_request() -> None:
    plan = claimplan.plan(claim([result(request="channel/sub")], [channel(requests=["channel"])]))
    assert plan.devices[0].request == "channel/sub"


def test_other_drivers_are_ignored() -> None:
    foreign_cfg = {"source": "FromClaim", "opaque": {"driver": "gpu.nvidia.com", "parameters": {}}}
    foreign_res = {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"}
    plan = claimplan.plan(claim([foreign_res, result()], [foreign_cfg, channel()]))
    assert [d.device for d in plan.devices] == ["channel-0"]


def test_admin_access() -> None:
    plan = claimplan.plan(claim([result(adminAccess=True)], [channel()]))
    assert plan.devices[0].admin_access


ERRORS = {
    "unknown-field": (
        [result()],
        [channel(extra="x")],
        "status.allocation.devices.config[0].opaque.parameters.extra: unknown field",
    ),
    "wrong-kind": (
        [result()],
        [_opaque("GpuConfig")],
        "status.allocation.devices.config[0].opaque.parameters.kind: 'GpuConfig' is not",
    ),
    "empty-domain": (
        [result()],
        [channel("")],
        "status.allocation.devices.config[0].opaque.parameters.domainID: cannot be empty",
    ),
    "traversal-domain": (
        [result()],
        [channel("../x")],
        "status.allocation.devices.config[0].opaque.parameters.domainID: '../x' is not a single",
    ),
    "wrong-api-version": (
        [result()],
        [channel(apiVersion="resource.nvidia.com/v1")],
        "opaque.parameters.apiVersion: must be",
    ),
    "not-opaque": (
        [result()],
        [{"source": "FromClaim"}],
        "status.allocation.devices.config[0].opaque: only opaque parameters are supported",
    ),
    "bad-source": (
        [result()],
        [channel(source="FromNowhere")],
        "status.allocation.devices.config[0].source: 'FromNowhere' is not one of",
    ),
    "type-mismatch": (
        [result()],
        [daemon(requests=["channel"])],
        "config[0]: cannot apply ComputeDomainDaemonConfig to request 'channel'",
    ),
    "no-config": (
        [result()],
        [],
        "no ComputeDomainChannelConfig applies to request 'channel'",
    ),
    "unknown-device": (
        [result("channel-2048")],
        [channel()],
        "status.allocation.devices.results[0].device: 'channel-2048' is not a device",
    ),
    "two-devices-one-config": (
        [result("channel-0"), result("channel-1")],
        [channel()],
        "config[0]: ComputeDomainChannelConfig applies to exactly one device, got 2",
    ),
    "no-allocation": (None, None, "status.allocation: no allocation set"),
    "no-devices-of-driver": ([], [channel()], "results: no device of driver"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_name_the_field(case: str) -> None:
    results, cfgs, message = ERRORS[case]
    body = {"status": {}} if results is None else claim(results, cfgs)
    with pytest.raises(ConfigError) as err:
        claimplan.plan(body)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("channel-0", DeviceType.CHANNEL),
        ("channel-2047", DeviceType.CHANNEL),
        ("channel-2048", None),
        ("channel-01", None),
        ("daemon-0", DeviceType.DAEMON),
        ("daemon-1", None),
        ("gpu-0", None),
        ("channel-", None),
    ],
)
def test_device_type(device: str, expected: DeviceType | None) -> None:
    assert claimplan.device_type(device) is expected
