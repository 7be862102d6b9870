"""The ReplicaSet plan: keep ``replicas`` active pods of the template, remove the surplus in
kube's order, report the status counters."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from computedomain_sim.controllers import replicaset

NOW = 1_800_000_000.0
STAMP = "2027-01-15T08:00:00Z"  # NOW as RFC 3339


def rs(replicas: int = 2, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web-abc", "namespace": "ns", "uid": "rs-uid", "generation": 3},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "abc"}},
            "template": {
                "metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            **spec,
        },
    }


def pod(
    name: str,
    *,
    created: str = "1",
    node: str = "n1",
    phase: str = "Running",
    ready_since: str | None = STAMP,
    labels: dict[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    conditions = (
        [{"type": "Ready", "status": "True", "lastTransitionTime": ready_since}]
        if ready_since is not None
        else []
    )
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": name,
        "creationTimestamp": created,
        "labels": labels if labels is not None else {"app": "web", "pod-template-hash": "abc"},
    }
    if deleting:
        meta["deletionTimestamp"] = STAMP
    return {
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {"phase": phase, "conditions": conditions},
    }


def test_creates_the_missing_pods_owned_by_the_replica_set() -> None:
    plan = replicaset.plan(rs(2), [], ["aaaaa", "bbbbb"], NOW)
    names = [c.pod["metadata"]["name"] for c in plan.creates]
    assert names == ["web-abc-aaaaa", "web-abc-bbbbb"]
    made = plan.creates[0].pod["metadata"]
    assert made["labels"] == {"app": "web", "pod-template-hash": "abc"}
    assert made["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web-abc",
            "uid": "rs-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert plan.status["replicas"] == 0
    assert plan.status["observedGeneration"] == 3


def test_scale_down_removes_unscheduled_then_not_ready_then_newest_pods() -> None:
    pods = [
        pod("old-ready", created="1"),
        pod("new-ready", created="3"),
        pod("not-ready", created="0", ready_since=None),
        pod("unscheduled", created="0", node="", phase="Pending", ready_since=None),
    ]
    plan = replicaset.plan(rs(1), pods, [], NOW)
    assert [d.name for d in plan.deletes] == ["unscheduled", "not-ready", "new-ready"]
    assert plan.creates == ()


def test_status_counts_labels_readiness_availability_and_terminating_pods() -> None:
    pods = [
        pod("a"),
        pod("b", labels={"app": "web"}),  # not fully labelled
        pod("c", ready_since=None),
        pod("d", deleting=True),
    ]
    plan = replicaset.plan(rs(3), pods, [], NOW)
    assert plan.status == {
        "replicas": 3,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "terminatingReplicas": 1,
        "observedGeneration": 3,
    }
    assert plan.recheck is None


def test_min_ready_seconds_delays_availability_and_asks_for_a_recheck() -> None:
    plan = replicaset.plan(rs(1, minReadySeconds=30), [pod("a")], [], NOW + 10)
    assert plan.status["readyReplicas"] == 1
    assert plan.status["availableReplicas"] == 0
    assert plan.recheck == 20.0
    later = replicaset.plan(rs(1, minReadySeconds=30), [pod("a")], [], NOW + 31)
    assert later.status["availableReplicas"] == 1


def test_an_exited_pod_is_deleted_and_replaced() -> None:
    plan = replicaset.plan(rs(1), [pod("a", phase="Failed", ready_since=None)], ["xxxxx"], NOW)
    assert [d.name for d in plan.deletes] == ["a"]
    assert [c.pod["metadata"]["name"] for c in plan.creates] == ["web-abc-xxxxx"]


def test_a_replica_set_being_deleted_creates_nothing() -> None:
    deleting = rs(2)
    deleting["metadata"]["deletionTimestamp"] = STAMP
    assert replicaset.plan(deleting, [], ["a", "b"], NOW).creates == ()


@given(
    wanted=st.integers(0, 6),
    phases=st.lists(st.sampled_from(["Pending", "Running", "Failed"]), max_size=8),
)
def test_the_plan_always_aims_at_exactly_the_wanted_number_of_active_pods(
    wanted: int, phases: list[str]
) -> None:
    pods = [pod(f"p{i}", created=str(i), phase=p) for i, p in enumerate(phases)]
    plan = replicaset.plan(rs(wanted), pods, [f"s{i}" for i in range(wanted)], NOW)
    deleted = {d.name for d in plan.deletes}
    active_after = [
        p for p in pods if p["metadata"]["name"] not in deleted and p["status"]["phase"] != "Failed"
    ]
    assert len(active_after) + len(plan.creates) == wanted
    assert not (deleted and plan.creates) or all(
        p["status"]["phase"] == "Failed" for p in pods if p["metadata"]["name"] in deleted
    )
