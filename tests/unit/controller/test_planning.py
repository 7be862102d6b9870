"""The reconcile planner for living domains: creates, collisions, hand deletions, live reads."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from computedomain.api import names
from computedomain.controller import planning
from computedomain.controller.actions import (
    AddFinalizer,
    Create,
    Emit,
    Fail,
    Kind,
    PruneClique,
    ReadLivePods,
    Ref,
    RemoveFinalizer,
    Wait,
    WriteStatus,
)
from computedomain.controller.snapshot import Mode
from tests.unit.controller import builders as b

FIN = (names.FINALIZER,)
DS_NAME = names.daemon_object_name("uid-1")


def _kinds(actions: tuple[Any, ...]) -> list[str]:
    return [type(a).__name__ for a in actions]


def _with_status(cd: dict[str, Any], actions: tuple[Any, ...]) -> dict[str, Any]:
    """The domain as it reads after the planned status write."""
    (write,) = [a for a in actions if isinstance(a, WriteStatus)]
    return {**cd, "status": dict(write.status)}


@pytest.mark.parametrize(("num_nodes", "status"), [(None, "Ready"), (2, "NotReady")])
def test_new_domain_gets_five_writes_and_one_event(num_nodes: int | None, status: str) -> None:
    cd = b.domain(num_nodes=num_nodes)
    actions = planning.plan(b.snapshot(cd))
    assert _kinds(actions) == [
        "AddFinalizer",
        "Create",
        "Create",
        "Create",
        "WriteStatus",
        "Emit",
    ]
    creates = [a for a in actions if isinstance(a, Create)]
    assert [c.ref for c in creates] == [
        Ref(Kind.RESOURCE_CLAIM_TEMPLATE, "driver", DS_NAME),
        Ref(Kind.DAEMON_SET, "driver", DS_NAME),
        Ref(Kind.RESOURCE_CLAIM_TEMPLATE, "user", "channel-tmpl"),
    ]
    assert actions[0] == AddFinalizer(Ref(Kind.COMPUTE_DOMAIN, "user", "cd1", "uid-1"))
    write = actions[-2]
    assert isinstance(write, WriteStatus)
    assert write.global_status == status
    assert "nodes" not in write.status
    (ready,) = write.status["conditions"]
    assert ready["type"] == "Ready"
    assert ready["status"] == ("True" if status == "Ready" else "False")
    assert ready["lastTransitionTime"] == "2026-01-02T03:04:05Z"
    assert ready["observedGeneration"] == 1


def test_steady_state_plans_nothing() -> None:
    cd = b.domain(finalizers=FIN, num_nodes=1)
    snap = b.full_snapshot(cd, cliques=(b.clique(daemons=[b.daemon("n1")]),), pods=(b.pod("n1"),))
    first = planning.plan(snap)
    assert _kinds(first) == ["WriteStatus"]
    assert planning.plan(attrs.evolve(snap, domain=_with_status(cd, first))) == ()


def test_later_time_alone_does_not_rewrite_status() -> None:
    cd = b.domain(finalizers=FIN)
    snap = b.full_snapshot(cd)
    done = _with_status(cd, planning.plan(snap))
    later = attrs.evolve(snap, domain=done, now=b.NOW.replace(hour=9))
    assert planning.plan(later) == ()


def test_daemon_set_of_an_earlier_install_elsewhere_is_kept() -> None:
    cd = b.domain(finalizers=FIN)
    objs = b.owned_objects(cd)
    old_ds = {
        **objs["daemon_set"],
        "metadata": {**objs["daemon_set"]["metadata"], "namespace": "old"},
    }
    snap = b.snapshot(cd, daemon_sets=(old_ds,), workload_templates=(objs["workload_template"],))
    assert not [a for a in planning.plan(snap) if isinstance(a, Create)]


def test_missing_daemon_template_is_recreated_beside_its_daemon_set() -> None:
    cd = b.domain(finalizers=FIN)
    snap = attrs.evolve(b.full_snapshot(cd), daemon_templates=())
    creates = [a for a in planning.plan(snap) if isinstance(a, Create)]
    assert [c.ref.kind for c in creates] == [Kind.RESOURCE_CLAIM_TEMPLATE]
    assert creates[0].body["metadata"]["labels"][names.TARGET_LABEL] == "Daemon"


def _collision(owner_label: str | None, *, owner_exists: bool, deleting: bool = False) -> Any:
    cd = b.domain(finalizers=FIN)
    objs = b.owned_objects(cd)
    other = b.stored(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {
                "name": "channel-tmpl",
                "namespace": "user",
                "labels": {names.COMPUTE_DOMAIN_LABEL: owner_label} if owner_label else {},
            },
        },
        deleting=deleting,
        finalizers=[names.FINALIZER] if deleting else None,
    )
    snap = b.snapshot(
        cd,
        daemon_sets=(objs["daemon_set"],),
        daemon_templates=(objs["daemon_template"],),
        named_template=other,
        named_template_owner_exists=owner_exists,
    )
    return planning.plan(snap)


@pytest.mark.parametrize(
    ("owner", "whose"),
    [("uid-other", "ComputeDomain with UID uid-other"), (None, "no ComputeDomain")],
    ids=["other-domain", "unowned"],
)
def test_workload_template_name_collision_is_permanent_and_reported(
    owner: str | None, whose: str
) -> None:
    actions = _collision(owner, owner_exists=True)
    assert _kinds(actions) == ["WriteStatus", "Emit", "Fail"]
    write, event, fail = actions
    assert isinstance(write, WriteStatus)
    assert isinstance(event, Emit)
    assert isinstance(fail, Fail)
    (ready,) = write.status["conditions"]
    assert (ready["status"], ready["reason"]) == ("False", "WorkloadTemplateConflict")
    assert (
        f"ResourceClaimTemplate user/channel-tmpl already exists and belongs to {whose}"
        in (ready["message"])
    )
    assert event.type == "Warning"
    assert event.reason == "WorkloadTemplateConflict"
    assert fail.message in ready["message"]


@pytest.mark.parametrize(
    ("owner_exists", "deleting"), [(False, False), (True, True)], ids=["owner-gone", "terminating"]
)
def test_template_of_a_deleted_domain_is_waited_for(owner_exists: bool, deleting: bool) -> None:
    actions = _collision("uid-old", owner_exists=owner_exists, deleting=deleting)
    assert _kinds(actions) == ["WriteStatus", "Wait"]
    assert "of a deleted ComputeDomain is being removed" in actions[-1].message


def test_our_template_without_target_label_is_not_created_twice() -> None:
    actions = _collision("uid-1", owner_exists=True)
    assert not [a for a in actions if isinstance(a, Create | Fail | Wait)]


@pytest.mark.parametrize("name", ["", "Not_Valid"], ids=["empty", "invalid"])
def test_invalid_template_name_fails_with_the_field(name: str) -> None:
    actions = planning.plan(b.snapshot(b.domain(finalizers=FIN, template=name)))
    fail = actions[-1]
    assert isinstance(fail, Fail)
    assert "spec.channel.resourceClaimTemplate.name" in fail.message
    assert not [a for a in actions if isinstance(a, Create) and a.ref.namespace == "user"]


def test_hand_deleted_daemon_set_is_let_go_then_recreated() -> None:
    cd = b.domain(finalizers=FIN)
    objs = b.owned_objects(cd)
    dying = b.stored(objs["daemon_set"], deleting=True, finalizers=[names.FINALIZER])
    snap = b.full_snapshot(cd, daemon_sets=(dying,))
    actions = planning.plan(snap)
    assert _kinds(actions)[:2] == ["RemoveFinalizer", "Emit"]
    assert isinstance(actions[0], RemoveFinalizer)
    assert actions[0].ref.kind is Kind.DAEMON_SET
    assert not [a for a in actions if isinstance(a, Create)]
    gone = attrs.evolve(snap, daemon_sets=())
    creates = [a for a in planning.plan(gone) if isinstance(a, Create)]
    assert [c.ref.kind for c in creates] == [Kind.DAEMON_SET]


def test_unreadable_domain_is_a_permanent_error() -> None:
    cd = b.domain()
    cd["spec"] = {"channel": "nonsense"}
    (fail,) = planning.plan(b.snapshot(cd))
    assert isinstance(fail, Fail)
    assert "user/cd1 cannot be read" in fail.message


def test_status_mode_drop_needs_a_live_read_first() -> None:
    cd = b.domain(finalizers=FIN, status={"status": "Ready", "nodes": [b.node_entry("n1")]})
    snap = b.full_snapshot(cd, mode=Mode.STATUS)
    assert planning.plan(snap) == (ReadLivePods("uid-1"),)
    alive = planning.plan(attrs.evolve(snap, live_pods=(b.pod("n1"),)))
    write = next(a for a in alive if isinstance(a, WriteStatus))
    assert [n["name"] for n in write.status["nodes"]] == ["n1"]
    gone = planning.plan(attrs.evolve(snap, live_pods=()))
    write = next(a for a in gone if isinstance(a, WriteStatus))
    assert "nodes" not in write.status


def test_clique_prune_needs_a_live_read_and_is_scoped_to_the_domain() -> None:
    cd = b.domain(finalizers=FIN)
    entries = [b.daemon("n1"), b.daemon("n2", index=1)]
    other_domain_pod = b.pod("n2", uid="uid-2")  # not in this domain's snapshot in real use
    snap = b.full_snapshot(cd, cliques=(b.clique(daemons=entries),), pods=(b.pod("n1"),))
    assert planning.plan(snap) == (ReadLivePods("uid-1"),)
    actions = planning.plan(attrs.evolve(snap, live_pods=(b.pod("n1"),)))
    prunes = [a for a in actions if isinstance(a, PruneClique)]
    assert [p.nodes for p in prunes] == [frozenset({"n2"})]
    assert other_domain_pod["metadata"]["labels"][names.COMPUTE_DOMAIN_LABEL] == "uid-2"


def test_no_live_read_when_every_entry_has_its_pod() -> None:
    cd = b.domain(finalizers=FIN)
    snap = b.full_snapshot(cd, cliques=(b.clique(daemons=[b.daemon("n1")]),), pods=(b.pod("n1"),))
    assert not [a for a in planning.plan(snap) if isinstance(a, ReadLivePods | PruneClique)]


def test_ready_condition_names_the_nodes_that_wait() -> None:
    cd = b.domain(finalizers=FIN, num_nodes=4)
    pending = b.pod(
        "node-3",
        ip="",
        phase="Pending",
        bound=False,
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes match node selector",
            }
        ],
    )
    daemons = [b.daemon("node-1"), b.daemon("node-2", index=1, status="NotReady")]
    pods = (b.pod("node-1"), b.pod("node-2", ready=False), pending)
    snap = b.full_snapshot(cd, cliques=(b.clique(daemons=daemons),), pods=pods)
    write = next(a for a in planning.plan(snap) if isinstance(a, WriteStatus))
    (ready,) = write.status["conditions"]
    assert ready["reason"] == "WaitingForNodes"
    assert ready["message"] == (
        "1/4 nodes ready (numNodes 4, 2 not joined); node-2: daemon pod Running; "
        "node-3: not registered yet, daemon pod Pending: 0/4 nodes match node selector"
    )
