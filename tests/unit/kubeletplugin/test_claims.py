"""Daemon-claim files and the channel readiness gate (pure decisions and wait reasons)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from computedomain.api.errors import ConfigError, PermanentError
from computedomain.kubeletplugin import channelclaims, daemonclaims
from computedomain.nvml import fake, procdevices


def test_template_has_upstream_keys_and_placeholders() -> None:
    text = daemonclaims.template_bytes().decode()
    settings = dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )
    assert settings["IMEX_NODE_CONFIG_FILE"] == "{{ .IMEXDaemonNodesConfigPath }}"
    assert settings["IMEX_CMD_BIND_INTERFACE_IP"] == "{{ .IMEXCmdBindInterfaceIP }}"
    assert settings["SERVER_PORT"] == "50000"
    assert settings["IMEX_CMD_PORT"] == "50005"
    assert settings["IMEX_WAIT_FOR_QUORUM"] == "RECOVERY"
    assert settings["IMEX_NODE_DISCONNECTED_GRACE_TIME"] == "-1"
    assert settings["DAEMONIZE"] == "0"
    assert settings["IMEX_ENABLE_AUTH_ENCRYPTION"] == "0"
    assert settings["LOG_LEVEL"] == "4"
    assert settings["IMEX_CMD_ENABLED"] == "1"
    assert len(settings) == 33


def test_ensure_domain_dir(tmp_path: Path) -> None:
    root = tmp_path / "domains"
    directory = daemonclaims.ensure_domain_dir(root, "cd-1")
    assert directory == root / "cd-1"
    template = directory / "imexd.cfg.tmpl"
    assert template.read_bytes() == daemonclaims.template_bytes()
    assert template.stat().st_mode & 0o777 == 0o644
    template.write_text("tampered")
    (directory / "nodes.cfg").write_text("kept")
    daemonclaims.ensure_domain_dir(root, "cd-1")
    assert template.read_bytes() == daemonclaims.template_bytes()
    assert (directory / "nodes.cfg").read_text() == "kept"
    with pytest.raises(ConfigError, match="domainID"):
        daemonclaims.ensure_domain_dir(root, "../x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["domains"]


def test_fabric_node(tmp_path: Path) -> None:
    devices = tmp_path / "devices"
    devices.write_text(fake.proc_devices_text())
    cap = tmp_path / "fabric-imex-mgmt"
    with pytest.raises(procdevices.ProcError):
        daemonclaims.fabric_node(devices, cap)
    cap.write_text(fake.fabric_imex_mgmt_text())
    node = daemonclaims.fabric_node(devices, cap)
    assert (node.path, node.major, node.minor, node.file_mode) == (
        "/dev/nvidia-caps/nvidia-cap1",
        235,
        1,
        256,
    )


def cd(namespace: str = "team-a", nodes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "job", "namespace": namespace, "uid": "u1"}}
    if nodes is not None:
        obj["status"] = {"status": "NotReady", "nodes": nodes}
    return obj


def clique(*daemons: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "u1.c"}, "daemons": list(daemons)}


READINESS = {
    "clique-ready": (cd(), clique({"nodeName": "n1", "status": "Ready"}), True, (True, "clique")),
    "clique-notready-status-ready": (
        cd(nodes=[{"name": "n1", "status": "Ready"}]),
        clique({"nodeName": "n1", "status": "NotReady"}),
        True,
        (True, "status"),
    ),
    "gate-off-ignores-clique": (
        cd(nodes=[{"name": "n1", "status": "NotReady"}]),
        clique({"nodeName": "n1", "status": "Ready"}),
        False,
        (False, "status"),
    ),
    "other-node-ready": (
        cd(nodes=[{"name": "n2", "status": "Ready"}]),
        clique({"nodeName": "n2", "status": "Ready"}),
        True,
        (False, ""),
    ),
    "no-clique-object": (cd(), None, True, (False, "")),
    "clique-entry-notready": (
        cd(),
        clique({"nodeName": "n1", "status": "NotReady"}),
        True,
        (False, "clique"),
    ),
    "garbage-status": ({"metadata": {}, "status": "weird"}, {"daemons": "x"}, True, (False, "")),
}


@pytest.mark.parametrize("case", sorted(READINESS))
def test_assess(case: str) -> None:
    domain, clique_obj, gate, (ready, source) = READINESS[case]
    result = channelclaims.assess("n1", domain, clique_obj, cliques_enabled=gate)
    assert (result.ready, result.source) == (ready, source)


def test_namespace_check() -> None:
    channelclaims.check_namespace(cd(), "team-a", "f")
    with pytest.raises(PermanentError, match=r"f: the ResourceClaim's namespace \(other\)"):
        channelclaims.check_namespace(cd(), "other", "f")


@pytest.mark.parametrize(
    ("pod", "state"),
    [
        (None, "no daemon pod on this node yet"),
        ({"metadata": {"name": "d"}, "status": {"phase": "Pending"}}, "daemon pod Pending"),
        ({"metadata": {"name": "d"}}, "daemon pod Pending"),
        (
            {"metadata": {"name": "d"}, "status": {"phase": "Running"}},
            "daemon pod d Running, not Ready",
        ),
        (
            {
                "metadata": {"name": "d", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                "status": {"phase": "Running"},
            },
            "daemon pod d terminating",
        ),
    ],
)
def test_wait_reason(pod: dict[str, Any] | None, state: str) -> None:
    readiness = channelclaims.Readiness(False, "")
    message = channelclaims.wait_reason(cd(), "n3", "c.1", readiness, pod)
    assert message == (
        f"Waiting for the IMEX daemon of ComputeDomain team-a/job on node n3 (clique c.1): {state}"
    )


def test_wait_reason_mentions_entry_state_and_no_clique() -> None:
    readiness = channelclaims.Readiness(False, "clique", "NotReady")
    pod = {"metadata": {"name": "d"}, "status": {"phase": "Running", "conditions": []}}
    message = channelclaims.wait_reason(cd(), "n3", "", readiness, pod)
    assert message.endswith("(no NVLink clique): daemon pod d Running, not Ready, entry NotReady")


@pytest.mark.parametrize(
    ("entry", "ready"),
    [
        ({"name": "n1", "status": "Ready", "cliqueID": "c.2"}, True),
        ({"name": "n1", "status": "Ready", "cliqueID": "c.1"}, False),
        ({"name": "n1", "status": "Ready"}, True),
    ],
    ids=["current-clique", "old-clique", "no-clique-field"],
)
def test_a_status_entry_of_another_clique_is_stale(entry: dict[str, Any], ready: bool) -> None:
    result = channelclaims.assess(
        "n1", cd(nodes=[entry]), None, cliques_enabled=True, clique_id="c.2"
    )
    assert result.ready is ready
    if not ready:
        assert result.entry_status == "registered in clique 'c.1'"
