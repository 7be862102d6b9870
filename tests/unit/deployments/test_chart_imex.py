"""Host-managed IMEX in the chart (docs/compatibility.md#host-managed-imex-daemons):
``helm template`` refuses what upstream's chart refuses, with upstream's messages (mode first,
then isolation), and a host-managed install leaves out everything of the daemons.
The schema refuses a misspelt mode or isolation before any template runs; the messages for an
unknown value are checked with the schema skipped, where only the templates stand guard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .chart import CHART, env, helm, render, values_file

GATE_ON = {"featureGates": {"HostManagedIMEXDaemon": True}}
NO_GATE = (
    "resources.computeDomains.imex.mode=hostManaged requires "
    "featureGates.HostManagedIMEXDaemon=true"
)
CHANNEL = (
    "resources.computeDomains.imex.isolation=channel is not supported yet: per-workload IMEX "
    'channel allocation is not implemented. Use the default, "domain".'
)


def imex(**settings: Any) -> dict[str, Any]:
    return {"resources": {"computeDomains": {"imex": settings}}}


def template(tmp_path: Path, values: dict[str, Any], *flags: str) -> str:
    """What a failing ``helm template`` says (the test fails if it renders)."""
    path = values_file(tmp_path, values)
    result = helm("template", "x", str(CHART), f"--values={path}", *flags, check=False)
    assert result.returncode != 0, f"rendered with {values}"
    return result.stderr


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (imex(mode="hostManaged"), NO_GATE),
        ({**imex(mode="hostManaged"), "featureGates": {"HostManagedIMEXDaemon": False}}, NO_GATE),
        (imex(isolation="channel"), CHANNEL),
        ({**imex(mode="hostManaged", isolation="channel"), **GATE_ON}, CHANNEL),
    ],
    ids=["gate missing", "gate off", "channel", "channel when host-managed"],
)
def test_upstreams_refusals_fail_the_render(
    values: dict[str, Any], message: str, tmp_path: Path
) -> None:
    assert message in template(tmp_path, values)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (imex(mode="HostManaged"),
         'unknown resources.computeDomains.imex.mode "HostManaged": '
         'must be "driverManaged" or "hostManaged"'),
        (imex(isolation="IMEXDomain"),
         'unknown resources.computeDomains.imex.isolation "IMEXDomain": '
         'must be "domain" or "channel"'),
        (imex(mode="hostManaged", isolation="IMEXDomain"), NO_GATE),
    ],
    ids=["unknown mode", "unknown isolation", "mode before isolation"],
)  # fmt: skip
def test_unknown_values_fail_the_render_without_the_schema(
    values: dict[str, Any], message: str, tmp_path: Path
) -> None:
    assert message in template(tmp_path, values, "--skip-schema-validation")


def test_the_schema_refuses_a_misspelt_mode_before_the_templates(tmp_path: Path) -> None:
    stderr = template(tmp_path, imex(mode="hostmanaged"))
    assert "/resources/computeDomains/imex/mode" in stderr
    assert "unknown resources.computeDomains.imex.mode" not in stderr


def test_a_missing_mode_or_isolation_means_the_defaults(tmp_path: Path) -> None:
    path = values_file(tmp_path, imex(mode=None, isolation=None))
    objects = render(f"--values={path}")
    for key in (("Deployment", "computedomain-controller"),
                ("DaemonSet", "computedomain-kubelet-plugin")):  # fmt: skip
        assert env(objects[key])["IMEX_MODE"] == "driverManaged"
        assert env(objects[key])["IMEX_ISOLATION"] == ""
    assert ("DeviceClass", "compute-domain-daemon.nvidia.com") in objects


def test_host_managed_installs_nothing_of_the_daemons(tmp_path: Path) -> None:
    driver_managed = render()
    host_managed = render(
        f"--values={values_file(tmp_path, {**imex(mode='hostManaged'), **GATE_ON})}"
    )
    gone = sorted(set(driver_managed) - set(host_managed))
    assert gone == [
        ("ClusterRole", "compute-domain-daemon-role"),
        ("ClusterRoleBinding", "compute-domain-daemon-role-binding"),
        ("DeviceClass", "compute-domain-daemon.nvidia.com"),
        ("ServiceAccount", "compute-domain-daemon-service-account"),
    ]
    assert set(host_managed) <= set(driver_managed)
    for key in (("Deployment", "computedomain-controller"),
                ("DaemonSet", "computedomain-kubelet-plugin")):  # fmt: skip
        assert env(host_managed[key])["IMEX_MODE"] == "hostManaged"
        assert env(host_managed[key])["FEATURE_GATES"] == "HostManagedIMEXDaemon=true"
