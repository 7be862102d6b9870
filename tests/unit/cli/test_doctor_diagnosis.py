"""``diagnose``: one table row per cause, each breaking one thing in a healthy domain.

Each case names the cause the doctor must report, the object it concerns and words its
message must contain; the healthy domain must give no finding at all.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from computedomain.api import names
from computedomain.cli.doctor import diagnosis
from computedomain.cli.doctor.findings import Cause, Finding, Subject
from tests.unit.cli import doctor_objects as o
from tests.unit.cli.doctor_breaks import (
    claim_not_allocated,
    claim_not_created,
    daemon_crash_looping,
    daemon_missing,
    daemon_not_ready,
    daemon_not_started,
    daemon_not_started_quietly,
    daemon_unregistered,
    daemon_unschedulable,
    domain_not_ready,
    gone_domain,
    host_conflict,
    index_space_full,
    index_space_full_event,
    kubelet_says_unregistered,
    no_interface,
    no_plugin_anywhere,
    not_processed,
    not_processed_failing,
    other_domain,
    plugin_absent,
    plugin_crashing,
    plugin_gone,
    plugin_not_ready,
    plugin_terminating,
    prepare_retrying,
    spec_problem,
    unready_daemon,
    waiting_pod,
)

Break = Callable[[o.World], None]


@attrs.frozen
class Case:
    id: str
    breaks: Break
    cause: Cause
    subject: Subject
    words: tuple[str, ...] = ()
    remedy_words: tuple[str, ...] = ()
    node: str = ""


DAEMON_B = Subject("Pod", "computedomain-daemon-11111111-node-b", o.DRIVER_NS)
DAEMON_C = Subject("Pod", "computedomain-daemon-11111111-node-c", o.DRIVER_NS)
NODE_B = Subject("Node", "node-b")

CASES = [
    Case(
        "claim-not-allocated",
        claim_not_allocated,
        Cause.CLAIM_NOT_ALLOCATED,
        Subject("ResourceClaim", "worker-2-imex", o.NS),
        ("not allocated", "2 cannot allocate all claims"),
        ("one claim per node",),
    ),
    Case(
        "claim-not-created",
        claim_not_created,
        Cause.CLAIM_NOT_ALLOCATED,
        Subject("Pod", "worker-2", o.NS),
        ("does not exist yet", o.TEMPLATE),
    ),
    Case(
        "claim-not-allocated-no-plugin-anywhere",
        no_plugin_anywhere,
        Cause.CLAIM_NOT_ALLOCATED,
        Subject("ResourceClaim", "worker-2-imex", o.NS),
        ("not allocated",),
        ("not running on any node",),
    ),
    Case(
        "plugin-not-registered-crashing",
        plugin_crashing,
        Cause.PLUGIN_NOT_REGISTERED,
        NODE_B,
        ("no ResourceSlice", "CrashLoopBackOff", "Error: no NVML"),
        ("kubectl describe pod",),
        "node-b",
    ),
    Case(
        "plugin-not-registered-no-pod",
        plugin_absent,
        Cause.PLUGIN_NOT_REGISTERED,
        NODE_B,
        ("no kubelet plugin pod runs there",),
        ("node affinity",),
        "node-b",
    ),
    Case(
        "plugin-not-ready",
        plugin_not_ready,
        Cause.PLUGIN_NOT_REGISTERED,
        NODE_B,
        ("does not serve the node", "not Ready"),
        (),
        "node-b",
    ),
    Case(
        "plugin-terminating",
        plugin_terminating,
        Cause.PLUGIN_NOT_REGISTERED,
        NODE_B,
        ("does not serve the node", "terminating"),
        (),
        "node-b",
    ),
    Case(
        "plugin-gone-slice-left-over",
        plugin_gone,
        Cause.PLUGIN_NOT_REGISTERED,
        NODE_B,
        ("no kubelet plugin pod runs there (a ResourceSlice is left over)",),
        ("node affinity",),
        "node-b",
    ),
    Case(
        "plugin-unregistered-says-the-kubelet",
        kubelet_says_unregistered,
        Cause.PLUGIN_NOT_REGISTERED,
        NODE_B,
        ("the kubelet says: DRA driver compute-domain.nvidia.com is not registered",),
        (),
        "node-b",
    ),
    Case(
        "node-of-other-domain",
        other_domain,
        Cause.NODE_OF_OTHER_DOMAIN,
        NODE_B,
        ("belongs to ComputeDomain team/other", o.OTHER_UID),
        ("wait for the pods of team/other",),
        "node-b",
    ),
    Case(
        "node-of-deleted-domain",
        gone_domain,
        Cause.NODE_OF_OTHER_DOMAIN,
        NODE_B,
        ("no longer exists",),
        (f"kubectl label node node-b {names.COMPUTE_DOMAIN_LABEL}-",),
        "node-b",
    ),
    Case(
        "daemon-unschedulable",
        daemon_unschedulable,
        Cause.DAEMON_PENDING,
        DAEMON_B,
        ("cannot be scheduled", "1 Insufficient cpu"),
        ("priority",),
        "node-b",
    ),
    Case(
        "daemon-not-started",
        daemon_not_started,
        Cause.DAEMON_PENDING,
        DAEMON_B,
        ("has not started", "fabric-imex-mgmt device: cannot read"),
        ("kubectl logs -n computedomain-system computedomain-kubelet-plugin-node-b",),
        "node-b",
    ),
    Case(
        "daemon-not-started-other-warning",
        daemon_not_started_quietly,
        Cause.DAEMON_PENDING,
        DAEMON_B,
        ("has not started", "MountVolume.SetUp failed"),
        (),
        "node-b",
    ),
    Case(
        "index-space-full",
        index_space_full,
        Cause.INDEX_SPACE_FULL,
        DAEMON_C,
        ("is full", "2 entries", "MAX_NODES_PER_IMEX_DOMAIN=2", "node-c"),
        ("at least 3",),
        "node-c",
    ),
    Case(
        "index-space-full-by-event",
        index_space_full_event,
        Cause.INDEX_SPACE_FULL,
        DAEMON_C,
        ("no available indices",),
        (),
        "node-c",
    ),
    Case(
        "daemon-not-ready",
        daemon_not_ready,
        Cause.DAEMON_NOT_READY,
        DAEMON_B,
        ("runs but is not Ready", "IMEX daemon not ready: CONNECTING"),
        ("nvidia-imex-ctl -q",),
        "node-b",
    ),
    Case(
        "daemon-crash-looping",
        daemon_crash_looping,
        Cause.DAEMON_NOT_READY,
        DAEMON_B,
        ("CrashLoopBackOff",),
        (),
        "node-b",
    ),
    Case(
        "host-imex-conflict",
        host_conflict,
        Cause.HOST_IMEX_CONFLICT,
        DAEMON_B,
        ("NV_ERR_IN_USE",),
        ("systemctl disable --now nvidia-imex.service", "node-b"),
        "node-b",
    ),
    Case(
        "imex-no-interface",
        no_interface,
        Cause.IMEX_NO_INTERFACE,
        DAEMON_B,
        ("no local interface",),
        ("hosts file",),
        "node-b",
    ),
    Case(
        "not-processed",
        not_processed,
        Cause.NOT_PROCESSED,
        Subject("ComputeDomain", "job", o.NS),
        ("no IMEX daemon DaemonSet", names.daemon_object_name(o.UID)),
        ("cd-controller",),
    ),
    Case(
        "not-processed-reconcile-failed",
        not_processed_failing,
        Cause.NOT_PROCESSED,
        Subject("ComputeDomain", "job", o.NS),
        ("it reports: creating DaemonSet: forbidden",),
    ),
    Case(
        "spec-problem",
        spec_problem,
        Cause.SPEC_PROBLEM,
        Subject("ComputeDomain", "job", o.NS),
        ("already exists and belongs to no ComputeDomain",),
        ("re-create the ComputeDomain",),
    ),
    Case(
        "daemon-missing",
        daemon_missing,
        Cause.DAEMON_MISSING,
        Subject("Node", "node-c"),
        ("labelled for the domain but has no IMEX daemon pod", "desired 2"),
        ("kubectl describe daemonset",),
        "node-c",
    ),
    Case(
        "prepare-retrying",
        prepare_retrying,
        Cause.PREPARE_RETRYING,
        Subject("Pod", "worker-1", o.NS),
        ("held by claim team/old",),
        (),
        "node-b",
    ),
    Case(
        "domain-not-ready",
        domain_not_ready,
        Cause.NOT_READY,
        Subject("ComputeDomain", "job", o.NS),
        ("2/4 nodes ready",),
        ("numNodes",),
    ),
    Case(
        "daemon-not-registered",
        daemon_unregistered,
        Cause.DAEMON_NOT_REGISTERED,
        DAEMON_B,
        ("is Ready but has entry NotReady",),
        (),
        "node-b",
    ),
    Case(
        "workload-waiting",
        waiting_pod,
        Cause.NOT_READY,
        Subject("Pod", "worker-1", o.NS),
        ("Waiting for the IMEX daemon",),
        (),
        "node-b",
    ),
]


def _diagnose(breaks: Break | None = None) -> list[Finding]:
    world = o.healthy()
    if breaks is not None:
        breaks(world)
    return diagnosis.diagnose(world.snapshot())


def test_a_healthy_domain_has_no_finding() -> None:
    assert _diagnose() == []


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_cause_is_named(case: Case) -> None:
    findings = _diagnose(case.breaks)
    assert [f.cause for f in findings] == [case.cause], findings
    (finding,) = findings
    assert finding.subject == case.subject
    assert finding.domain_uid == o.UID
    assert finding.node == case.node
    for word in case.words:
        assert word in finding.message, (word, finding.message)
    for word in case.remedy_words:
        assert word in finding.remedy, (word, finding.remedy)


def test_a_stale_host_conflict_event_is_ignored_once_the_daemon_is_ready() -> None:
    def stale(w: o.World) -> None:
        pod = w.find("daemon_pods", "node-b")
        w.events.append(o.event(pod, "IMEXSessionHeldByHost", "... NV_ERR_IN_USE ..."))

    assert _diagnose(stale) == []


def test_events_of_an_earlier_pod_of_the_same_name_do_not_count() -> None:
    def earlier(w: o.World) -> None:
        pod = unready_daemon(w)
        old = o.event(pod, "IMEXSessionHeldByHost", "NV_ERR_IN_USE")
        old["involvedObject"]["uid"] = "an-earlier-pod"
        w.events.append(old)

    assert [f.cause for f in _diagnose(earlier)] == [Cause.DAEMON_NOT_READY]


def test_only_the_newest_probe_failure_is_quoted() -> None:
    def two(w: o.World) -> None:
        pod = unready_daemon(w)
        w.events.append(o.event(pod, "Unhealthy", "old words", at="2026-01-01T00:00:01Z"))
        new = o.event(pod, "Unhealthy", "new words", at="2026-01-01T00:05:00Z")
        new["metadata"]["name"] += "2"
        w.events.append(new)

    (finding,) = _diagnose(two)
    assert "new words" in finding.message
    assert "old words" not in finding.message


def test_problems_of_another_domain_are_not_reported_for_this_one() -> None:
    def other(w: o.World) -> None:
        other_cd = o.domain("other", uid=o.OTHER_UID)
        w.all_domains.append(other_cd)
        w.daemon_sets.append(o.daemon_set(o.OTHER_UID))
        bad = o.daemon_pod("node-c", uid=o.OTHER_UID, ready=False)
        w.daemon_pods.append(bad)
        w.events.append(o.event(bad, "IMEXSessionHeldByHost", "NV_ERR_IN_USE"))
        w.workload_pods.append(
            o.workload_pod("theirs", node=None, phase="Pending", template="other-channel")
        )

    assert _diagnose(other) == []


def test_one_node_found_through_two_pods_is_reported_once() -> None:
    def two_pods(w: o.World) -> None:
        other_domain(w)
        extra = o.workload_pod("worker-9", node="node-b", phase="Pending", claim_name="w9")
        w.workload_pods.append(extra)
        w.claims.append(o.claim("w9", node="node-b"))

    assert [f.cause for f in _diagnose(two_pods)] == [Cause.NODE_OF_OTHER_DOMAIN]


def test_several_problems_of_one_domain_are_all_reported() -> None:
    def both(w: o.World) -> None:
        host_conflict(w)
        claim_not_allocated(w)

    causes = {f.cause for f in _diagnose(both)}
    assert causes == {Cause.HOST_IMEX_CONFLICT, Cause.CLAIM_NOT_ALLOCATED}


def test_a_domain_without_status_says_the_controller_has_not_reported() -> None:
    def bare(w: o.World) -> None:
        w.domains[0] = o.domain(with_status=False)

    (finding,) = _diagnose(bare)
    assert finding.cause is Cause.NOT_READY
    assert "no status yet" in finding.message


def test_a_non_fabric_daemon_never_counts_against_an_index_space() -> None:
    def non_fabric(w: o.World) -> None:
        w.daemon_sets[0] = o.daemon_set(max_nodes=1)
        w.cliques.clear()
        w.domains[0]["status"]["nodes"] = [
            {"name": n, "ipAddress": "10.0.0.9", "cliqueID": "", "index": -1, "status": "Ready"}
            for n in o.NODES
        ]
        for pod in w.daemon_pods:
            pod["metadata"]["labels"][names.CLIQUE_LABEL] = ""
        w.daemon_pods.append(o.daemon_pod("node-c", clique="", ready=False))
        w.nodes.append(o.node("node-c", domain_uid=o.UID))

    assert [f.cause for f in _diagnose(non_fabric)] == [Cause.DAEMON_NOT_READY]
