"""IMEX mode and isolation (docs/compatibility.md#host-managed-imex-daemons): upstream's
validation matrix and messages, mode checked before isolation, and the controller's gates."""

from __future__ import annotations

import pytest

from computedomain.api import featuregates, imex
from computedomain.api.errors import ConfigError

GATE_ON = featuregates.parse("HostManagedIMEXDaemon=true")
GATE_OFF = featuregates.parse("")
PREFIX = "imex configuration validation failed: "
NEEDS_GATE = 'imex.mode="hostManaged" requires the HostManagedIMEXDaemon feature gate to be enabled'
CHANNEL = (
    'imex.isolation="channel" is not supported yet: per-workload IMEX channel allocation is not '
    "implemented"
)


def _unknown(value: str) -> str:
    return f'unknown imex.isolation "{value}": must be "domain" or "channel"'


@pytest.mark.parametrize(
    ("mode", "isolation", "gates", "expected"),
    [
        ("driverManaged", "domain", GATE_OFF, imex.Settings()),
        ("driverManaged", "", GATE_OFF, imex.Settings()),
        ("driverManaged", "domain", GATE_ON, imex.Settings()),
        ("hostManaged", "domain", GATE_ON, imex.Settings(imex.Mode.HOST_MANAGED)),
        ("hostManaged", "", GATE_ON, imex.Settings(imex.Mode.HOST_MANAGED)),
    ],
    ids=["default", "empty-isolation", "gate-alone-changes-nothing", "host", "host-empty-iso"],
)
def test_accepted(
    mode: str, isolation: str, gates: featuregates.Features, expected: imex.Settings
) -> None:
    assert imex.resolve(mode, isolation, gates) == expected


@pytest.mark.parametrize(
    ("mode", "isolation", "gates", "field", "message"),
    [
        ("hostManaged", "domain", GATE_OFF, "IMEX_MODE", NEEDS_GATE),
        ("", "domain", GATE_ON, "IMEX_MODE", 'unknown imex.mode ""'),
        ("HostManaged", "domain", GATE_ON, "IMEX_MODE", 'unknown imex.mode "HostManaged"'),
        ("bogus", "bogus", GATE_ON, "IMEX_MODE", 'unknown imex.mode "bogus"'),
        ("hostManaged", "channel", GATE_OFF, "IMEX_MODE", NEEDS_GATE),
        ("driverManaged", "channel", GATE_OFF, "IMEX_ISOLATION", CHANNEL),
        ("hostManaged", "channel", GATE_ON, "IMEX_ISOLATION", CHANNEL),
        (
            "driverManaged",
            "IMEXDomain",
            GATE_OFF,
            "IMEX_ISOLATION",
            _unknown("IMEXDomain"),
        ),
        ("hostManaged", "Domain", GATE_ON, "IMEX_ISOLATION", _unknown("Domain")),
    ],
    ids=[
        "host-without-gate",
        "empty-mode",
        "mode-is-case-sensitive",
        "mode-first",
        "gate-before-isolation",
        "channel-driver",
        "channel-host",
        "old-doc-spelling",
        "isolation-is-case-sensitive",
    ],
)
def test_refused_with_upstreams_message(
    mode: str, isolation: str, gates: featuregates.Features, field: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        imex.resolve(mode, isolation, gates)
    assert info.value.field == field
    assert info.value.reason == PREFIX + message


def test_host_managed_controller_turns_off_the_daemon_gates() -> None:
    gates = featuregates.parse("HostManagedIMEXDaemon=true")
    assert gates.compute_domain_cliques
    assert gates.imex_daemons_with_dns_names
    forced = imex.controller_features(imex.Settings(imex.Mode.HOST_MANAGED), gates)
    assert not forced.compute_domain_cliques
    assert not forced.imex_daemons_with_dns_names
    assert forced.enabled("HostManagedIMEXDaemon")
    assert imex.controller_features(imex.Settings(), gates) == gates
