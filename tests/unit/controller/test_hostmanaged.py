"""The controller's plan with host-managed IMEX (docs/compatibility.md#host-managed-imex-daemons):
only the workload template (always ``Single``), status ``Ready`` without nodes, a Ready
condition that quotes the hosts' problems, and a teardown that touches no node."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from computedomain.api import names
from computedomain.controller import hoststatus, planning
from computedomain.controller.actions import (
    AddFinalizer,
    Create,
    Delete,
    ForgetDomain,
    Kind,
    Ref,
    RemoveFinalizer,
    RemoveNodeLabels,
    Wait,
    WriteStatus,
)
from computedomain.controller.snapshot import Mode
from tests.unit.controller import builders as b

WORKLOAD = Ref(Kind.RESOURCE_CLAIM_TEMPLATE, "user", "channel-tmpl")
CD = Ref(Kind.COMPUTE_DOMAIN, "user", "cd1", "uid-1")


def _snap(cd: dict[str, Any] | None, **kwargs: Any) -> Any:
    kwargs.setdefault("mode", Mode.STATUS)
    return b.snapshot(cd, host_managed=True, **kwargs)


def _write(actions: tuple[Any, ...]) -> WriteStatus:
    (write,) = [a for a in actions if isinstance(a, WriteStatus)]
    return write


def _ready(status: dict[str, Any] | Any) -> dict[str, Any]:
    (cond,) = [c for c in status["conditions"] if c["type"] == "Ready"]
    return dict(cond)


def _annotated(cd: dict[str, Any], **problems: str) -> dict[str, Any]:
    cd["metadata"]["annotations"] = {
        names.host_imex_problem_annotation(node): f"{node}: {why}" for node, why in problems.items()
    }
    return cd


@pytest.mark.parametrize("num_nodes", [None, 4], ids=["no-numNodes", "numNodes-4"])
def test_new_domain_gets_only_the_workload_template_and_is_ready(num_nodes: int | None) -> None:
    actions = planning.plan(_snap(b.domain(num_nodes=num_nodes)))
    assert [type(a).__name__ for a in actions] == ["AddFinalizer", "Create", "WriteStatus", "Emit"]
    assert actions[0] == AddFinalizer(CD)
    (create,) = [a for a in actions if isinstance(a, Create)]
    assert create.ref == WORKLOAD
    status = dict(_write(actions).status)
    assert status["status"] == "Ready"
    assert "nodes" not in status
    assert _ready(status)["status"] == "True"
    assert _ready(status)["reason"] == hoststatus.REASON_HOST_READY


def test_allocation_mode_all_is_rendered_single() -> None:
    actions = planning.plan(_snap(b.domain(allocation_mode="All")))
    (create,) = [a for a in actions if isinstance(a, Create)]
    (config,) = create.body["spec"]["spec"]["devices"]["config"]
    assert config["opaque"]["parameters"]["allocationMode"] == "Single"
    assert config["opaque"]["parameters"]["domainID"] == "uid-1"


def test_driver_managed_keeps_all() -> None:
    actions = planning.plan(b.snapshot(b.domain(allocation_mode="All")))
    workload = [a for a in actions if isinstance(a, Create) and a.ref == WORKLOAD]
    (config,) = workload[0].body["spec"]["spec"]["devices"]["config"]
    assert config["opaque"]["parameters"]["allocationMode"] == "All"


def test_a_host_problem_makes_the_condition_false_but_status_stays_ready() -> None:
    cd = _annotated(
        b.domain(finalizers=(names.FINALIZER,)),
        r0n1="host nvidia-imex daemon not ready: UNAVAILABLE",
        r0n0="nvidia-imex-ctl not found",
    )
    workload = b.owned_objects(cd)["workload_template"]
    status = dict(_write(planning.plan(_snap(cd, workload_templates=(workload,)))).status)
    assert status["status"] == "Ready"
    cond = _ready(status)
    assert (cond["status"], cond["reason"]) == ("False", hoststatus.REASON_HOST_NOT_READY)
    assert cond["message"] == (
        "host nvidia-imex daemon not ready on 2 nodes: r0n0: nvidia-imex-ctl not found; "
        "r0n1: host nvidia-imex daemon not ready: UNAVAILABLE"
    )


def test_condition_turns_true_when_the_annotation_goes_and_then_nothing_is_written() -> None:
    cd = _annotated(b.domain(finalizers=(names.FINALIZER,)), r0n0="not ready")
    workload = (b.owned_objects(cd)["workload_template"],)
    first = _write(planning.plan(_snap(cd, workload_templates=workload)))
    cd = {**cd, "status": dict(first.status)}
    cd["metadata"] = {**cd["metadata"], "annotations": {}}
    second = _write(planning.plan(_snap(cd, workload_templates=workload)))
    assert _ready(second.status)["status"] == "True"
    cd = {**cd, "status": dict(second.status)}
    assert planning.plan(_snap(cd, workload_templates=workload)) == ()


def test_existing_nodes_are_left_as_they_are() -> None:
    entry = b.node_entry("r0n0", status="NotReady")
    cd = b.domain(finalizers=(names.FINALIZER,), status={"status": "NotReady", "nodes": [entry]})
    workload = (b.owned_objects(cd)["workload_template"],)
    status = dict(_write(planning.plan(_snap(cd, workload_templates=workload))).status)
    assert status["status"] == "Ready"
    assert status["nodes"] == [entry]


def test_a_template_conflict_comes_before_the_hosts() -> None:
    cd = _annotated(b.domain(finalizers=(names.FINALIZER,)), r0n0="not ready")
    taken = {
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "channel-tmpl", "namespace": "user", "uid": "other"},
    }
    actions = planning.plan(_snap(cd, named_template=taken))
    cond = _ready(_write(actions).status)
    assert cond["reason"] == "WorkloadTemplateConflict"
    assert "host nvidia-imex daemon not ready on 1 node: r0n0: not ready" in cond["message"]


def test_deletion_deletes_the_template_then_removes_the_finalizers_and_no_node_is_touched() -> None:
    cd = b.domain(finalizers=(names.FINALIZER,), deleting=True)
    workload = b.owned_objects(cd)["workload_template"]
    now = datetime.fromisoformat(cd["metadata"]["deletionTimestamp"]) + timedelta(seconds=1)
    held = b.stored(workload, finalizers=[names.FINALIZER])
    first = planning.plan(_snap(cd, now=now, workload_templates=(held,)))
    assert [type(a).__name__ for a in first] == ["Delete", "RemoveFinalizer", "Emit", "Wait"]
    assert isinstance(first[0], Delete)
    assert first[0].ref.name == "channel-tmpl"
    assert isinstance(first[1], RemoveFinalizer)
    assert first[1].ref.name == "channel-tmpl"
    assert isinstance(first[-1], Wait)
    last = planning.plan(_snap(cd, now=now))
    assert last == (RemoveFinalizer(CD), ForgetDomain("uid-1"))
    assert not any(isinstance(a, RemoveNodeLabels) for a in (*first, *last))


def test_orphan_teardown_touches_no_node() -> None:
    cd = b.domain()
    workload = b.stored(b.owned_objects(cd)["workload_template"], finalizers=[names.FINALIZER])
    actions = planning.plan(_snap(None, workload_templates=(workload,), confirmed_gone=True))
    assert [type(a).__name__ for a in actions] == ["Delete", "RemoveFinalizer", "ForgetDomain"]
