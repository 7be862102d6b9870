"""Invariants of the DaemonSet plan over random nodes and pods (Hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from computedomain_sim.controllers import daemonset, daemonset_controller

LABEL = "cd"
node_names = st.sampled_from([f"n{i}" for i in range(6)])


@st.composite
def nodes(draw: st.DrawFn) -> list[dict[str, Any]]:
    names = draw(st.lists(node_names, unique=True, max_size=6))
    out = []
    for name in names:
        labels = {LABEL: "x"} if draw(st.booleans()) else {}
        effect = draw(st.sampled_from([None, "NoSchedule", "NoExecute", "PreferNoSchedule"]))
        taints = [{"key": "t", "effect": effect}] if effect else []
        ready = draw(st.booleans())
        out.append(
            {
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": taints},
                "status": {
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]
                },
            }
        )
    return out


@st.composite
def pods(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 8))):
        meta: dict[str, Any] = {
            "name": f"p{i}",
            "namespace": "ns",
            "uid": f"u{i}",
            "creationTimestamp": str(i),
        }
        if draw(st.booleans()):
            meta["deletionTimestamp"] = "t"
        phase = draw(st.sampled_from(["Running", "Pending", "Failed"]))
        out.append(
            {"metadata": meta, "spec": {"nodeName": draw(node_names)}, "status": {"phase": phase}}
        )
    return out


def ds(tolerate: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": {LABEL: "x"}, "containers": [{"name": "c"}]}
    if tolerate:
        spec["tolerations"] = [{"operator": "Exists"}]
    return {
        "metadata": {"name": "d", "namespace": "ns", "uid": "ds"},
        "spec": {"template": {"spec": spec}},
    }


@given(nodes(), pods(), st.booleans())
def test_plan_invariants(
    all_nodes: list[dict[str, Any]], all_pods: list[dict[str, Any]], tolerate: bool
) -> None:
    the_ds = ds(tolerate)
    names = {n["metadata"]["name"]: f"d-{n['metadata']['name']}" for n in all_nodes}
    plan = daemonset.plan(the_ds, all_nodes, all_pods, names)
    created = [c.node for c in plan.creates]
    assert len(created) == len(set(created))  # at most one new pod per node
    occupied = {p["spec"]["nodeName"] for p in all_pods}
    by_name = {n["metadata"]["name"]: n for n in all_nodes}
    for node in created:
        assert node not in occupied  # never beside an existing or terminating pod
        assert daemonset.should_run(the_ds, by_name[node])[0]
    existing = {
        p["metadata"]["name"] for p in all_pods if not p["metadata"].get("deletionTimestamp")
    }
    assert {d.name for d in plan.deletes} <= existing  # only live pods are deleted
    assert plan.status["desiredNumberScheduled"] == sum(
        daemonset.should_run(the_ds, n)[0] for n in all_nodes
    )


@given(nodes(), pods(), st.booleans())
def test_looking_only_at_candidate_nodes_changes_no_decision(
    all_nodes: list[dict[str, Any]], all_pods: list[dict[str, Any]], tolerate: bool
) -> None:
    the_ds = ds(tolerate)
    names = {n["metadata"]["name"]: f"d-{n['metadata']['name']}" for n in all_nodes}
    candidates = daemonset_controller.candidate_nodes(the_ds, all_nodes, all_pods)
    assert daemonset.plan(the_ds, candidates, all_pods, names) == daemonset.plan(
        the_ds, all_nodes, all_pods, names
    )
    assert all(
        n["metadata"]["labels"]
        or n["metadata"]["name"] in {p["spec"]["nodeName"] for p in all_pods}
        for n in candidates
    )


def test_pod_names_are_made_only_for_the_nodes_asked() -> None:
    made = daemonset_controller.PodNames("d-")
    first = made["n1"]
    assert first.startswith("d-")
    assert len(first) == len("d-") + 5
    assert made["n1"] == first  # stable within one sync
    assert list(made) == ["n1"]
