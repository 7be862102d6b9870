"""Which nodes fit a pod, and the words kube-scheduler uses when none does."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.scheduler import placement


def node(
    name: str = "n1",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    *,
    ready: bool = True,
    unschedulable: bool = False,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": spec}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


AFFINITY = placement.REASON_AFFINITY
CASES = [
    ("no constraints", pod(), node(), None),
    ("nodeSelector match", pod(nodeSelector={"a": "1"}), node(labels={"a": "1"}), None),
    ("nodeSelector mismatch", pod(nodeSelector={"a": "1"}), node(labels={"a": "2"}), AFFINITY),
    ("nodeSelector missing label", pod(nodeSelector={"a": "1"}), node(), AFFINITY),
    (
        "In",
        pod(
            affinity=required(
                {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}
            )
        ),
        node(labels={"a": "2"}),
        None,
    ),
    (
        "In mismatch",
        pod(
            affinity=required(
                {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}
            )
        ),
        node(labels={"a": "2"}),
        AFFINITY,
    ),
    (
        "NotIn absent label",
        pod(
            affinity=required(
                {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}
            )
        ),
        node(),
        None,
    ),
    (
        "NotIn excluded",
        pod(
            affinity=required(
                {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}
            )
        ),
        node(labels={"a": "1"}),
        AFFINITY,
    ),
    (
        "Exists",
        pod(affinity=required({"matchExpressions": [{"key": "a", "operator": "Exists"}]})),
        node(labels={"a": ""}),
        None,
    ),
    (
        "DoesNotExist",
        pod(affinity=required({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]})),
        node(labels={"a": "x"}),
        AFFINITY,
    ),
    (
        "Gt",
        pod(
            affinity=required(
                {"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["3"]}]}
            )
        ),
        node(labels={"n": "4"}),
        None,
    ),
    (
        "terms are ORed",
        pod(
            affinity=required(
                {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
            )
        ),
        node(labels={"b": "1"}),
        None,
    ),
    (
        "expressions in a term are ANDed",
        pod(
            affinity=required(
                {
                    "matchExpressions": [
                        {"key": "a", "operator": "Exists"},
                        {"key": "b", "operator": "Exists"},
                    ]
                }
            )
        ),
        node(labels={"b": "1"}),
        AFFINITY,
    ),
    (
        "matchFields metadata.name (the DaemonSet binding)",
        pod(
            affinity=required(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
            )
        ),
        node("n1"),
        None,
    ),
    (
        "matchFields other node",
        pod(
            affinity=required(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
            )
        ),
        node("n1"),
        AFFINITY,
    ),
    ("empty term matches nothing", pod(affinity=required({})), node(), AFFINITY),
    (
        "untolerated NoSchedule taint",
        pod(),
        node(taints=[{"key": "nvidia.com/gpu", "value": "x", "effect": "NoSchedule"}]),
        "node(s) had untolerated taint {nvidia.com/gpu: x}",
    ),
    (
        "PreferNoSchedule taint is no obstacle",
        pod(),
        node(taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
        None,
    ),
    (
        "Exists toleration with the key",
        pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]),
        node(taints=[{"key": "nvidia.com/gpu", "value": "x", "effect": "NoSchedule"}]),
        None,
    ),
    (
        "Equal toleration with the wrong value",
        pod(tolerations=[{"key": "k", "operator": "Equal", "value": "a"}]),
        node(taints=[{"key": "k", "value": "b", "effect": "NoExecute"}]),
        "node(s) had untolerated taint {k: b}",
    ),
    (
        "toleration for another effect",
        pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute"}]),
        node(taints=[{"key": "k", "effect": "NoSchedule"}]),
        "node(s) had untolerated taint {k: }",
    ),
    (
        "empty key Exists tolerates everything (the daemon DaemonSet)",
        pod(tolerations=[{"operator": "Exists"}]),
        node(taints=[{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}]),
        None,
    ),
    (
        "not-ready node",
        pod(),
        node(ready=False),
        "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
    ),
    ("cordoned node", pod(), node(unschedulable=True), placement.REASON_UNSCHEDULABLE),
    (
        "cordon tolerated",
        pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
        node(unschedulable=True),
        None,
    ),
    (
        "taints are checked before affinity",
        pod(nodeSelector={"a": "1"}),
        node(taints=[{"key": "k", "effect": "NoSchedule"}]),
        "node(s) had untolerated taint {k: }",
    ),
]


@pytest.mark.parametrize(
    ("pod_", "node_", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_fit_reason(pod_: dict[str, Any], node_: dict[str, Any], reason: str | None) -> None:
    assert placement.fit_reason(pod_, node_) == reason


def test_message_counts_and_sorts_reasons_as_kube_scheduler() -> None:
    reasons = [AFFINITY, AFFINITY, "node(s) had untolerated taint {k: }", AFFINITY]
    assert placement.unschedulable_message(4, reasons) == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {k: }, "
        "3 node(s) didn't match Pod's node affinity/selector."
    )


def test_message_for_the_brief_example() -> None:
    assert placement.unschedulable_message(4, [AFFINITY] * 4) == (
        "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."
    )


def test_message_without_nodes() -> None:
    assert placement.unschedulable_message(0, []) == "no nodes available to schedule pods"


def _beat(n: dict[str, Any], at: str) -> dict[str, Any]:
    """``n`` as the node's heartbeat at ``at`` writes it."""
    conditions = [
        {**c, "lastHeartbeatTime": at} for c in (n.get("status") or {}).get("conditions") or []
    ]
    return {
        **n,
        "metadata": {**n["metadata"], "resourceVersion": at},
        "status": {**n["status"], "conditions": conditions},
    }


def test_a_heartbeat_does_not_change_where_pods_fit() -> None:
    before = _beat(node("n0", labels={"a": "1"}), "t1")
    assert not placement.fit_view_changed(before, _beat(before, "t2"))


@pytest.mark.parametrize(
    "after",
    [
        node("n0", labels={"a": "2"}),
        node("n0", labels={"a": "1"}, unschedulable=True),
        node("n0", labels={"a": "1"}, taints=[{"key": "k", "effect": "NoSchedule"}]),
        node("n0", labels={"a": "1"}, ready=False),
        node("n1", labels={"a": "1"}),
    ],
    ids=["labels", "unschedulable", "taints", "readiness", "name"],
)
def test_what_placement_reads_counts_as_a_change(after: dict[str, Any]) -> None:
    before = node("n0", labels={"a": "1"})
    assert placement.fit_view_changed(before, after)
    assert placement.fit_view_changed(_beat(before, "t1"), _beat(after, "t2"))
