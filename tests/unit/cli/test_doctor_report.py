"""The doctor's output and its pure helpers: text and JSON reports, scope selection, plugin
DaemonSet recognition, kubeconfig lookup, the dispatcher's registration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from computedomain.cli import main
from computedomain.cli.doctor import command, diagnosis, gathering, report
from computedomain.cli.doctor.findings import Cause
from tests.unit.cli import doctor_objects as o
from tests.unit.cli.doctor_breaks import host_conflict


def _reports(world: o.World) -> list[report.DomainReport]:
    return report.build(diagnosis.examine(world.snapshot()))


def test_a_ready_domain_gets_one_ok_line() -> None:
    text = report.render_text(_reports(o.healthy()))
    assert text.splitlines() == [
        "ComputeDomain team/job: OK (Ready, 2 nodes: node-a, node-b)",
        "1/1 ComputeDomains OK",
    ]


def test_a_broken_domain_lists_status_nodes_and_one_line_per_problem() -> None:
    world = o.healthy()
    host_conflict(world)
    lines = report.render_text(_reports(world)).splitlines()
    assert lines[0] == "ComputeDomain team/job: Ready, 1 problem"
    assert lines[1].startswith("  condition Ready=True: 2/2 nodes ready")
    assert lines[2] == (
        f"  nodes: node-a (clique {o.CLIQUE}, index 0, Ready; daemon Running, Ready); "
        f"node-b (clique {o.CLIQUE}, index 1, NotReady; daemon Running, not Ready)"
    )
    problem = lines[3]
    assert problem.startswith(
        "  [HostIMEXConflict] Pod computedomain-system/computedomain-daemon-11111111-node-b "
        "on node node-b: "
    )
    assert "NV_ERR_IN_USE" in problem
    assert "Fix: on node node-b: systemctl disable --now nvidia-imex.service" in problem
    assert lines[-1] == "0/1 ComputeDomains OK"


def test_no_domain_is_said_plainly() -> None:
    assert report.render_text([]) == "No ComputeDomains found.\n"


def test_json_carries_the_same_content() -> None:
    world = o.healthy()
    host_conflict(world)
    doc = json.loads(report.render_json(_reports(world)))
    assert doc["ok"] is False
    (domain,) = doc["domains"]
    assert (domain["namespace"], domain["name"], domain["uid"]) == (o.NS, "job", o.UID)
    assert domain["status"] == "Ready"
    assert domain["ok"] is False
    assert [n["name"] for n in domain["nodes"]] == ["node-a", "node-b"]
    assert domain["nodes"][1] == {
        "name": "node-b",
        "cliqueID": o.CLIQUE,
        "index": 1,
        "status": "NotReady",
        "daemon": "Running, not Ready",
    }
    (finding,) = domain["findings"]
    assert finding["cause"] == str(Cause.HOST_IMEX_CONFLICT)
    assert finding["kind"] == "Pod"
    assert finding["node"] == "node-b"
    assert "NV_ERR_IN_USE" in finding["message"]


def test_json_of_a_healthy_cluster_is_ok() -> None:
    doc = report.to_json(_reports(o.healthy()))
    assert doc["ok"] is True
    assert doc["domains"][0]["findings"] == []


DOMAINS = [o.domain("a", ns="x"), o.domain("b", ns="x"), o.domain("a", ns="default")]


@pytest.mark.parametrize(
    ("scope", "chosen"),
    [
        (gathering.Scope(), ["x/a", "x/b", "default/a"]),
        (gathering.Scope(namespace="x"), ["x/a", "x/b"]),
        (gathering.Scope(namespace="x", name="b"), ["x/b"]),
        (gathering.Scope(name="a"), ["default/a"]),
        (gathering.Scope(namespace="empty"), []),
    ],
    ids=["all", "namespace", "named", "named-in-default", "empty-namespace"],
)
def test_scope_selects_domains(scope: gathering.Scope, chosen: list[str]) -> None:
    found = gathering.select(DOMAINS, scope)
    assert [f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in found] == chosen


def test_a_named_domain_that_does_not_exist_is_an_error() -> None:
    with pytest.raises(gathering.DomainNotFound, match="'nope' not found in namespace 'x'"):
        gathering.select(DOMAINS, gathering.Scope(namespace="x", name="nope"))


@pytest.mark.parametrize(
    ("command_line", "is_plugin"),
    [
        (["cd-kubelet-plugin", "-v", "4"], True),
        (["/opt/computedomain/bin/compute-domain-kubelet-plugin"], True),
        (["cd-imex-daemon", "run"], False),
        ([], False),
    ],
    ids=["ours", "upstream-name", "daemon", "no-command"],
)
def test_plugin_daemon_sets_are_recognised_by_their_program(
    command_line: list[str], is_plugin: bool
) -> None:
    ds = o.plugin_daemon_set()
    ds["spec"]["template"]["spec"]["containers"][0]["command"] = command_line
    assert gathering.is_plugin_daemon_set(ds) is is_plugin


def test_plugin_program_in_args_counts() -> None:
    ds = o.plugin_daemon_set()
    container = ds["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["/bin/sh", "-c"]
    container["args"] = ["compute-domain-kubelet-plugin"]
    assert gathering.is_plugin_daemon_set(ds)


def test_kubeconfig_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert command.kubeconfig_path("flag.yaml", {"KUBECONFIG": "env.yaml"}) == "flag.yaml"
    assert command.kubeconfig_path(None, {"KUBECONFIG": ":first.yaml:second.yaml"}) == (
        "first.yaml"
    )
    assert command.kubeconfig_path(None, {}) is None
    default = tmp_path / ".kube" / "config"
    default.parent.mkdir()
    default.write_text("{}")
    assert command.kubeconfig_path(None, {}) == str(default)


def test_doctor_is_a_registered_sub_command() -> None:
    args = main.build_parser().parse_args(["doctor", "-n", "team", "-o", "json", "job"])
    assert (args.namespace, args.domain, args.output) == ("team", "job", "json")
    assert args.run is command.run


def test_a_bad_output_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main.main(["doctor", "-o", "yaml"])
    assert exc.value.code == 2
    assert "invalid choice: 'yaml'" in capsys.readouterr().err


def test_no_cluster_configured_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main.main(["doctor"]) == 2
    assert "error: no API server configured" in capsys.readouterr().err


def test_a_missing_kubeconfig_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main(["doctor", "--kubeconfig", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
