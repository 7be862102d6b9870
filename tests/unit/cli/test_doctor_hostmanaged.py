"""The doctor on host-managed IMEX domains (docs/compatibility.md#host-managed-imex-daemons):
no daemon DaemonSet is expected, and a node whose host nvidia-imex keeps a claim waiting is
named with what its nvidia-imex-ctl answered."""

from __future__ import annotations

from computedomain.api import names
from computedomain.cli.doctor import diagnosis, report
from computedomain.cli.doctor.findings import Cause, Subject
from computedomain.controller import hoststatus
from tests.unit.cli import doctor_objects as o


def _host_world(*problems: tuple[str, str]) -> o.World:
    world = o.healthy()
    reason = hoststatus.REASON_HOST_NOT_READY if problems else hoststatus.REASON_HOST_READY
    cd = o.domain(condition={"type": "Ready", "status": "False" if problems else "True",
                             "reason": reason, "message": "..."})  # fmt: skip
    cd["metadata"]["annotations"] = {
        names.host_imex_problem_annotation(node): f"{node}: {why}" for node, why in problems
    }
    world.domains = world.all_domains = [cd]
    world.daemon_sets = [d for d in world.daemon_sets if d["kind"] == "DaemonSet"][1:]
    world.daemon_pods = []
    world.cliques = []
    world.nodes = [o.node(n) for n in o.NODES]
    return world


def test_a_ready_host_managed_domain_has_no_finding() -> None:
    assert diagnosis.diagnose(_host_world().snapshot()) == []


def test_a_host_daemon_that_is_not_ready_is_named() -> None:
    why = "host nvidia-imex daemon readiness check failed: host nvidia-imex daemon not ready: X"
    findings = diagnosis.diagnose(_host_world(("node-b", why)).snapshot())
    assert [(f.cause, f.subject, f.node) for f in findings] == [
        (Cause.HOST_IMEX_NOT_READY, Subject("Node", "node-b"), "node-b")
    ]
    assert findings[0].message == why
    assert "nvidia-imex-ctl -q --u=/etc/nvidia-imex/imex_ctrl.sock" in findings[0].remedy


def test_the_report_says_each_node_has_its_daemon_on_the_host() -> None:
    why = "host nvidia-imex daemon not ready: UNAVAILABLE"
    reports = report.build(diagnosis.examine(_host_world(("node-b", why)).snapshot()))
    lines = report.render_text(reports).splitlines()
    assert lines[2] == "  nodes: node-a (IMEX daemon on the host); node-b (IMEX daemon on the host)"
    document = report.to_json(reports)["domains"][0]
    assert [n["daemon"] for n in document["nodes"]] == ["host", "host"]
