"""Teardown planning (docs/compatibility.md#deletion-and-orphan-cleanup): order, idempotence,
nothing ever stuck."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import attrs
import pytest

from computedomain.api import names
from computedomain.controller import deletion, planning
from computedomain.controller.actions import (
    ConfirmGone,
    Delete,
    Emit,
    ForgetDomain,
    Kind,
    Ref,
    RemoveFinalizer,
    RemoveNodeLabels,
    Wait,
)
from tests.unit.controller import builders as b

FIN = [names.FINALIZER]
NAME = names.daemon_object_name("uid-1")
WORKLOAD = Ref(Kind.RESOURCE_CLAIM_TEMPLATE, "user", "channel-tmpl")
DAEMON_RCT = Ref(Kind.RESOURCE_CLAIM_TEMPLATE, "driver", NAME)
DS = Ref(Kind.DAEMON_SET, "driver", NAME)
CD = Ref(Kind.COMPUTE_DOMAIN, "user", "cd1", "uid-1")


def _deleting() -> dict[str, Any]:
    return b.domain(finalizers=(names.FINALIZER,), deleting=True)


DELETED = datetime.fromisoformat(_deleting()["metadata"]["deletionTimestamp"])


def _objects(*, terminating: bool, finalizers: list[str] | None = FIN) -> dict[str, Any]:
    objs = b.owned_objects(_deleting())
    return {k: b.stored(v, deleting=terminating, finalizers=finalizers) for k, v in objs.items()}


def _snap(objs: dict[str, Any], **kwargs: Any) -> Any:
    kwargs.setdefault("now", DELETED + timedelta(seconds=1))  # a teardown that just began
    return b.snapshot(
        _deleting(),
        workload_templates=tuple(v for k, v in objs.items() if k == "workload_template"),
        daemon_templates=tuple(v for k, v in objs.items() if k == "daemon_template"),
        daemon_sets=tuple(v for k, v in objs.items() if k == "daemon_set"),
        **kwargs,
    )


def _refs(actions: tuple[Any, ...], kind: type) -> list[Ref]:
    return [(a.ref.kind, a.ref.namespace, a.ref.name) for a in actions if isinstance(a, kind)]


def _plain(*refs: Ref) -> list[tuple[Any, ...]]:
    return [(r.kind, r.namespace, r.name) for r in refs]


def test_first_pass_deletes_unlabels_and_unfinalizes_in_order_then_waits() -> None:
    actions = planning.plan(_snap(_objects(terminating=False), labelled_nodes=("n1",)))
    assert [type(a).__name__ for a in actions] == [
        "Delete",
        "Delete",
        "Delete",
        "RemoveNodeLabels",
        "RemoveFinalizer",
        "RemoveFinalizer",
        "RemoveFinalizer",
        "Emit",
        "Wait",
    ]
    assert _refs(actions, Delete) == _plain(WORKLOAD, DAEMON_RCT, DS)
    assert _refs(actions, RemoveFinalizer) == _plain(WORKLOAD, DAEMON_RCT, DS)
    assert actions[3] == RemoveNodeLabels("uid-1")
    event = actions[-2]
    assert isinstance(event, Emit)
    assert event.reason == "Deleting"
    assert not [
        a for a in actions if isinstance(a, RemoveFinalizer) and a.ref.kind is Kind.COMPUTE_DOMAIN
    ]


def test_first_pass_lists_nodes_only_when_the_cache_shows_a_label() -> None:
    actions = planning.plan(_snap(_objects(terminating=False)))
    assert not [a for a in actions if isinstance(a, RemoveNodeLabels)]
    assert len(_refs(actions, Delete)) == 3


def test_waiting_pass_makes_no_api_calls() -> None:
    actions = planning.plan(_snap(_objects(terminating=True, finalizers=[])))
    assert [type(a).__name__ for a in actions] == ["Wait"]


def test_labelled_node_in_cache_is_unlabelled_while_waiting() -> None:
    snap = _snap(_objects(terminating=True, finalizers=[]), labelled_nodes=("n1",))
    assert RemoveNodeLabels("uid-1") in planning.plan(snap)


def test_last_pass_unlabels_then_removes_the_domain_finalizer() -> None:
    actions = planning.plan(_snap({}))
    assert actions == (RemoveNodeLabels("uid-1"), RemoveFinalizer(CD), ForgetDomain("uid-1"))


def test_other_finalizers_of_the_domain_are_left_alone() -> None:
    cd = b.domain(finalizers=("example.com/keep",), deleting=True)
    actions = planning.plan(b.snapshot(cd))
    assert actions == (RemoveNodeLabels("uid-1"), ForgetDomain("uid-1"))


@pytest.mark.parametrize(
    "missing",
    ["workload_template", "daemon_template", "daemon_set"],
    ids=["no-workload-template", "no-daemon-template", "no-daemon-set"],
)
def test_each_missing_piece_is_skipped(missing: str) -> None:
    objs = _objects(terminating=False)
    del objs[missing]
    actions = planning.plan(_snap(objs))
    deleted = _refs(actions, Delete)
    assert len(deleted) == 2
    assert isinstance(actions[-1], Wait)
    assert planning.plan(_snap({}))[-1] == ForgetDomain("uid-1")


def test_daemon_template_is_deleted_when_the_daemon_set_is_gone() -> None:
    """Upstream never deleted it when the DaemonSet was gone, and the domain stayed Terminating."""
    objs = _objects(terminating=False)
    only = {"daemon_template": objs["daemon_template"]}
    actions = planning.plan(_snap(only))
    assert _refs(actions, Delete) == _plain(DAEMON_RCT)
    assert _refs(actions, RemoveFinalizer) == _plain(DAEMON_RCT)


def test_hand_deleted_template_is_finished_not_deleted_again() -> None:
    """A template a user deleted is terminating with our finalizer: it is let go."""
    objs = _objects(terminating=False)
    objs["workload_template"] = b.stored(objs["workload_template"], deleting=True, finalizers=FIN)
    actions = planning.plan(_snap(objs))
    assert _plain(WORKLOAD) not in [[r] for r in _refs(actions, Delete)]
    assert _refs(actions, Delete) == _plain(DAEMON_RCT, DS)
    assert _refs(actions, RemoveFinalizer)[0] == _plain(WORKLOAD)[0]


def test_long_wait_names_the_foreign_finalizer() -> None:
    objs = {
        "daemon_set": b.stored(
            _objects(terminating=True)["daemon_set"], deleting=True, finalizers=["example.com/hold"]
        )
    }
    early = planning.plan(_snap(objs))
    assert [type(a).__name__ for a in early] == ["Wait"]
    late = planning.plan(_snap(objs, now=DELETED + timedelta(seconds=deletion.REPORT_WAIT_AFTER)))
    event = late[0]
    assert isinstance(event, Emit)
    assert event.reason == "DeletionWaiting"
    assert f"DaemonSet driver/{NAME} (finalizers: example.com/hold)" in event.message


def test_teardown_is_idempotent_as_pieces_disappear() -> None:
    objs = _objects(terminating=False)
    seen = []
    for gone in ([], ["workload_template"], ["workload_template", "daemon_template"]):
        left = {
            k: b.stored(v, deleting=True, finalizers=[]) for k, v in objs.items() if k not in gone
        }
        seen.append([type(a).__name__ for a in planning.plan(_snap(left))])
    assert seen == [["Wait"]] * 3


def test_orphans_are_torn_down_once_confirmed_gone() -> None:
    objs = _objects(terminating=False)
    snap = attrs.evolve(_snap(objs), domain=None)
    assert planning.plan(snap) == (ConfirmGone("uid-1"),)
    actions = planning.plan(attrs.evolve(snap, confirmed_gone=True))
    assert _refs(actions, Delete) == _plain(WORKLOAD, DAEMON_RCT, DS)
    assert RemoveNodeLabels("uid-1") in actions
    assert actions[-1] == ForgetDomain("uid-1")
    assert not [a for a in actions if isinstance(a, Wait | Emit)]


def test_gone_uid_costs_nothing() -> None:
    assert planning.plan(b.snapshot(None)) == (ForgetDomain("uid-1"),)


def test_orphan_node_label_only() -> None:
    actions = planning.plan(b.snapshot(None, labelled_nodes=("n1",), confirmed_gone=True))
    assert actions == (RemoveNodeLabels("uid-1"), ForgetDomain("uid-1"))
