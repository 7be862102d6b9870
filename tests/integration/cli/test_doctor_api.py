"""The doctor against the embedded API server: every cause of the unit table, created as real
objects through the real client, is found by gathering over HTTP; a healthy domain is OK;
scope, exit codes and output of the real command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from computedomain.cli.doctor import command, gathering
from computedomain.cli.doctor.findings import Cause
from computedomain.kube import resources
from computedomain_sim.apiserver import testing
from tests.integration.cli.conftest import Cluster, materialise
from tests.unit.cli import doctor_objects as o
from tests.unit.cli.doctor_breaks import host_conflict
from tests.unit.cli.test_doctor_diagnosis import CASES, Case

REPO = Path(__file__).resolve().parents[3]


async def _reports(cluster: Cluster, scope: gathering.Scope | None = None) -> list:
    return await command.diagnose_cluster(cluster.config(), scope or gathering.Scope(o.NS, "job"))


async def test_a_healthy_domain_is_ok(cluster: Cluster) -> None:
    await materialise(cluster, o.healthy())
    (report,) = await _reports(cluster)
    assert report.ok, report.findings
    assert [n.name for n in report.nodes] == ["node-a", "node-b"]
    assert report.uid == cluster.uids[o.UID]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_each_cause_is_found_through_the_api(cluster: Cluster, case: Case) -> None:
    world = o.healthy()
    case.breaks(world)
    await materialise(cluster, world)
    (report,) = await _reports(cluster)
    assert [f.cause for f in report.findings] == [case.cause], report.findings
    (finding,) = report.findings
    assert finding.subject == case.subject
    assert finding.domain_uid == cluster.uids[o.UID]
    for word in case.words:
        expected = word
        for placeholder, real in cluster.uids.items():
            expected = expected.replace(placeholder, real)
        assert expected in finding.message


async def test_the_label_owner_is_named_across_namespaces(cluster: Cluster) -> None:
    world = o.healthy()
    pod = world.find("workload_pods", "worker-1")
    pod["status"] = {"phase": "Pending"}
    other = o.domain("elsewhere", ns=o.DRIVER_NS, uid=o.OTHER_UID)
    world.all_domains.append(other)
    world.find("nodes", "node-b")["metadata"]["labels"]["resource.nvidia.com/computeDomain"] = (
        o.OTHER_UID
    )
    await materialise(cluster, world)
    (report,) = await _reports(cluster, gathering.Scope(o.NS, "job"))
    (finding,) = report.findings
    assert finding.cause is Cause.NODE_OF_OTHER_DOMAIN
    assert f"ComputeDomain {o.DRIVER_NS}/elsewhere" in finding.message


def _doctor(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "computedomain.cli.main", "doctor", "--kubeconfig",
         str(kubeconfig), *args],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip


async def test_the_command_exits_0_1_2_and_prints_text_and_json(cluster: Cluster) -> None:
    kubeconfig = cluster.server.kubeconfig
    world = o.healthy()
    await materialise(cluster, world)
    ok = _doctor(kubeconfig, "-n", o.NS)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("ComputeDomain team/job: OK (Ready, 2 nodes")

    broken = o.healthy()
    host_conflict(broken)
    pod = broken.find("daemon_pods", "node-b")
    cluster.uids.setdefault(pod["metadata"]["uid"], "")
    live = await cluster.api.get(resources.PODS, pod["metadata"]["name"], o.DRIVER_NS)
    live["status"] = pod["status"]
    await cluster.api.update_status(resources.PODS, live)
    for event in broken.events:
        event["involvedObject"]["uid"] = live["metadata"]["uid"]
        await cluster.api.create(resources.EVENTS, event, o.DRIVER_NS)
    bad = _doctor(kubeconfig, "-n", o.NS, "-o", "json", "job")
    assert bad.returncode == 1, bad.stderr
    doc = json.loads(bad.stdout)
    assert doc["ok"] is False
    assert [f["cause"] for f in doc["domains"][0]["findings"]] == ["HostIMEXConflict"]

    missing = _doctor(kubeconfig, "-n", o.NS, "nope")
    assert missing.returncode == 2
    assert "ComputeDomain 'nope' not found in namespace 'team'" in missing.stderr


def test_a_cluster_without_the_crds_exits_2(tmp_path: Path) -> None:
    with testing.running(tmp_path) as bare:
        result = _doctor(bare.kubeconfig)
    assert result.returncode == 2
    assert "the computedomains.resource.nvidia.com CRD is not installed" in result.stderr


def test_an_unreachable_server_exits_2(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    result = _doctor(kubeconfig)
    assert result.returncode == 2
    assert result.stderr.startswith("error: cannot list computedomains")
