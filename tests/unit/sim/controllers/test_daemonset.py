"""The DaemonSet controller's plan: one pod per fitting node, replaced, removed, and counted."""

from __future__ import annotations

from typing import Any, cast

import pytest

from computedomain.kube.events import EventRecorder
from computedomain.kube.informerfactory import InformerFactory
from computedomain.kube.rest import Api
from computedomain_sim.controllers import daemonset
from computedomain_sim.controllers.daemonset_controller import DaemonSetController
from computedomain_sim.scheduler import placement

LABEL = "resource.nvidia.com/computeDomain"


def ds(
    *, node_selector: dict[str, str] | None = None, deleting: bool = False, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "d", "namespace": "ns", "uid": "ds-uid", "generation": 3}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "nodeSelector": node_selector or {},
                    "containers": [{"name": "c"}],
                    **spec,
                },
            }
        },
    }


def node(
    name: str, labels: dict[str, str] | None = None, taints: list[Any] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or []},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(
    name: str,
    node_name: str,
    *,
    phase: str = "Running",
    ready: bool = True,
    deleting: bool = False,
    created: str = "1",
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "creationTimestamp": created,
    }
    if deleting:
        meta["deletionTimestamp"] = "x"
    return {
        "metadata": meta,
        "spec": {"nodeName": node_name},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]},
    }


NAMES = {f"n{i}": f"d-{i}" for i in range(5)}


def created_on(plan: daemonset.DaemonSetPlan) -> list[str]:
    return [c.node for c in plan.creates]


def deleted(plan: daemonset.DaemonSetPlan) -> list[str]:
    return [d.name for d in plan.deletes]


def test_one_pod_per_matching_node() -> None:
    nodes = [node("n0", {LABEL: "cd"}), node("n1"), node("n2", {LABEL: "cd"})]
    plan = daemonset.plan(ds(node_selector={LABEL: "cd"}), nodes, [], NAMES)
    assert created_on(plan) == ["n0", "n2"]
    assert plan.status["desiredNumberScheduled"] == 2
    assert plan.status["currentNumberScheduled"] == 0


def test_pods_are_bound_owned_and_tolerant_like_the_real_controller() -> None:
    plan = daemonset.plan(ds(), [node("n0")], [], NAMES)
    (create,) = plan.creates
    meta, spec = create.pod["metadata"], create.pod["spec"]
    assert meta["name"] == "d-0"
    assert meta["namespace"] == "ns"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": "d",
            "uid": "ds-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert meta["labels"] == {
        "app": "d",
        "pod-template-generation": "3",
        daemonset.REVISION_LABEL: daemonset.template_hash(ds()["spec"]["template"]),
    }
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]}
        ]
    }
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"} in (
        spec["tolerations"]
    )
    # The scheduler accepts it on n0 only.
    assert placement.fit_reason(create.pod, node("n0")) is None
    assert placement.fit_reason(create.pod, node("n1")) == placement.REASON_AFFINITY


def test_existing_pod_is_kept_and_counted() -> None:
    plan = daemonset.plan(ds(), [node("n0")], [pod("d-a", "n0")], NAMES)
    assert plan.creates == ()
    assert plan.deletes == ()
    assert plan.status["numberReady"] == 1
    assert plan.status["numberUnavailable"] == 0


def test_deleted_pod_is_recreated() -> None:
    plan = daemonset.plan(ds(), [node("n0"), node("n1")], [pod("d-a", "n0")], NAMES)
    assert created_on(plan) == ["n1"]


def test_terminating_pod_blocks_a_new_one_until_gone() -> None:
    plan = daemonset.plan(ds(), [node("n0")], [pod("d-a", "n0", deleting=True)], NAMES)
    assert plan.creates == ()
    assert plan.deletes == ()


def test_node_that_stops_matching_loses_its_pod() -> None:
    nodes = [node("n0")]  # the label was removed
    plan = daemonset.plan(ds(node_selector={LABEL: "cd"}), nodes, [pod("d-a", "n0")], NAMES)
    assert deleted(plan) == ["d-a"]
    assert plan.status["numberMisscheduled"] == 1
    assert plan.status["desiredNumberScheduled"] == 0


def test_failed_pod_is_replaced() -> None:
    plan = daemonset.plan(ds(), [node("n0")], [pod("d-a", "n0", phase="Failed")], NAMES)
    assert deleted(plan) == ["d-a"]
    assert plan.creates == ()  # created on the next pass, once the failed pod is gone


def test_surplus_pods_on_a_node_keep_the_oldest() -> None:
    pods = [pod("d-new", "n0", created="2"), pod("d-old", "n0", created="1")]
    plan = daemonset.plan(ds(), [node("n0")], pods, NAMES)
    assert deleted(plan) == ["d-new"]


def test_no_new_pods_while_the_daemonset_is_deleted() -> None:
    plan = daemonset.plan(ds(deleting=True), [node("n0")], [], NAMES)
    assert plan.creates == ()


@pytest.mark.parametrize(
    ("taint", "schedule", "keep"),
    [
        ({"key": "k", "effect": "NoSchedule"}, False, True),
        ({"key": "k", "effect": "NoExecute"}, False, False),
        ({"key": "k", "effect": "PreferNoSchedule"}, True, True),
    ],
    ids=["NoSchedule stops new pods only", "NoExecute evicts", "PreferNoSchedule ignored"],
)
def test_taints(taint: dict[str, str], schedule: bool, keep: bool) -> None:
    assert daemonset.should_run(ds(), node("n0", taints=[taint])) == (schedule, keep)


def test_catch_all_toleration_runs_everywhere() -> None:
    tolerant = ds(tolerations=[{"operator": "Exists"}])
    assert daemonset.should_run(
        tolerant, node("n0", taints=[{"key": "k", "effect": "NoExecute"}])
    ) == (
        True,
        True,
    )


def test_unscheduled_pod_counts_for_its_affinity_node() -> None:
    plan0 = daemonset.plan(ds(), [node("n0")], [], NAMES)
    pending = plan0.creates[0].pod
    pending["metadata"].update(uid="u", creationTimestamp="1")
    plan1 = daemonset.plan(ds(), [node("n0")], [pending], NAMES)
    assert plan1.creates == ()


def test_the_probe_pod_is_made_once_per_generation() -> None:
    """A status write is a new version of the DaemonSet but not a new template: the fit checks
    keep their probe pod until the generation changes."""
    api = cast(Api, None)  # never used: nothing runs
    controller = DaemonSetController(
        api, events=cast(EventRecorder, None), informers=InformerFactory(api)
    )
    first = ds()
    probe = controller._probe(first)
    status_written = {**first, "metadata": {**first["metadata"], "resourceVersion": "9"}}
    assert controller._probe(status_written) is probe
    edited = ds(tolerations=[{"key": "k", "operator": "Exists"}])
    edited["metadata"]["generation"] = 4
    changed = controller._probe(edited)
    assert changed is not probe
    assert {"key": "k", "operator": "Exists"} in changed["spec"]["tolerations"]
    controller._forget(edited)
    assert controller._probe(edited) is not changed


def made_by(
    the_ds: dict[str, Any], name: str, node_name: str, *, ready: bool = True
) -> dict[str, Any]:
    """A running pod of ``node_name`` made from ``the_ds``'s template (its revision label)."""
    made = pod(name, node_name, ready=ready)
    made["metadata"]["labels"] = daemonset.pod_for_node(the_ds, node_name, name)["metadata"][
        "labels"
    ]
    return made


def edited(**spec: Any) -> dict[str, Any]:
    """``ds()`` with another template, one generation later."""
    new = ds(tolerations=[{"key": "k", "operator": "Exists"}], **spec)
    new["metadata"]["generation"] = 4
    return new


def test_equal_templates_hash_equal_and_a_changed_one_differently() -> None:
    assert daemonset.template_hash(ds()["spec"]["template"]) == daemonset.template_hash(
        ds()["spec"]["template"]
    )
    assert daemonset.template_hash(ds()["spec"]["template"]) != daemonset.template_hash(
        edited()["spec"]["template"]
    )


def test_pods_of_the_current_template_are_kept_and_counted_updated() -> None:
    nodes = [node("n0"), node("n1")]
    pods = [made_by(ds(), "d-a", "n0"), made_by(ds(), "d-b", "n1")]
    plan = daemonset.plan(ds(), nodes, pods, NAMES)
    assert (plan.creates, plan.deletes) == ((), ())
    assert plan.status["updatedNumberScheduled"] == 2


def test_a_changed_template_replaces_one_ready_pod_at_a_time_by_default() -> None:
    nodes = [node("n0"), node("n1"), node("n2")]
    pods = [made_by(ds(), f"d-{i}", f"n{i}") for i in range(3)]
    plan = daemonset.plan(edited(), nodes, pods, NAMES)
    assert deleted(plan) == ["d-0"]
    assert plan.creates == ()
    assert plan.status["updatedNumberScheduled"] == 0


def test_max_unavailable_100_percent_replaces_every_pod_at_once() -> None:
    nodes = [node("n0"), node("n1"), node("n2")]
    pods = [made_by(ds(), f"d-{i}", f"n{i}") for i in range(3)]
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}}
    the_ds = edited()
    the_ds["spec"]["updateStrategy"] = strategy
    assert sorted(deleted(daemonset.plan(the_ds, nodes, pods, NAMES))) == ["d-0", "d-1", "d-2"]


def test_an_unavailable_node_uses_up_the_budget_but_its_outdated_pod_goes_at_once() -> None:
    nodes = [node("n0"), node("n1"), node("n2")]
    pods = [made_by(ds(), "d-0", "n0", ready=False)]
    pods += [made_by(ds(), f"d-{i}", f"n{i}") for i in (1, 2)]
    plan = daemonset.plan(edited(), nodes, pods, NAMES)
    assert deleted(plan) == ["d-0"]


def test_a_replaced_pod_comes_back_with_the_new_template_once_the_old_one_is_gone() -> None:
    the_ds = edited()
    terminating = made_by(ds(), "d-0", "n0")
    terminating["metadata"]["deletionTimestamp"] = "x"
    assert created_on(daemonset.plan(the_ds, [node("n0")], [terminating], NAMES)) == []
    (create,) = daemonset.plan(the_ds, [node("n0")], [], NAMES).creates
    labels = create.pod["metadata"]["labels"]
    assert labels[daemonset.REVISION_LABEL] == daemonset.template_hash(the_ds["spec"]["template"])


def test_on_delete_leaves_outdated_pods_running() -> None:
    the_ds = edited()
    the_ds["spec"]["updateStrategy"] = {"type": "OnDelete"}
    plan = daemonset.plan(the_ds, [node("n0")], [made_by(ds(), "d-0", "n0")], NAMES)
    assert plan.deletes == ()
    assert plan.status["updatedNumberScheduled"] == 0


def test_a_pod_without_a_revision_label_is_left_alone() -> None:
    plan = daemonset.plan(edited(), [node("n0")], [pod("d-0", "n0")], NAMES)
    assert (plan.creates, plan.deletes) == ((), ())
