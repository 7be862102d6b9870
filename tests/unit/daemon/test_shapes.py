"""Where the list lives: lenient reading, writes that touch only the own entry."""

from __future__ import annotations

from typing import Any

from computedomain.api import names
from computedomain.api.models import DaemonInfo, Status
from computedomain.daemon import membership
from computedomain.daemon.identity import Identity
from computedomain.daemon.shapes import CliqueShape, StatusShape, lenient_entry
from computedomain.policies import builtins

CLIQUE = "2df84740-d3cb-b5ce-4e7e-98352b5a71b5.1"
ME = Identity(
    node_name="n1",
    pod_ip="10.0.0.1",
    pod_uid="uid-1",
    pod_name="daemon-1",
    pod_namespace="driver",
    clique_id=CLIQUE,
    cd_uid="cd-uid",
    cd_name="cd",
    cd_namespace="user",
)
POLICY = builtins.LowestFreeIndex()


def clique_object(*daemons: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.CLIQUE_KIND,
        "metadata": {
            "name": f"cd-uid.{CLIQUE}",
            "namespace": "driver",
            "resourceVersion": "7",
            "labels": {names.COMPUTE_DOMAIN_LABEL: "cd-uid"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": "other"}],
        },
        "daemons": list(daemons),
    }


PEER = {"nodeName": "n0", "ipAddress": "10.0.0.9", "cliqueID": CLIQUE, "index": 0, "future": 1}


def test_names_and_scopes_follow_upstream() -> None:
    clique, status = CliqueShape(ME, 18), StatusShape(ME, 18)
    assert (clique.namespace, clique.name) == ("driver", f"cd-uid.{CLIQUE}")
    assert (status.namespace, status.name) == ("user", "cd")
    assert clique.scope == membership.Scope(limit=18)
    assert status.scope == membership.Scope(limit=18, clique_id=CLIQUE)


def test_reading_is_lenient_and_never_drops_an_entry() -> None:
    entry = lenient_entry({"nodeName": 5, "index": "3", "status": "Sleeping"}, "nodeName")
    assert entry == DaemonInfo(node_name="", ip_address="", clique_id="", index=-1)
    assert lenient_entry({"name": "n", "index": True}, "name").index == -1
    ready = lenient_entry({"name": "n", "index": 2, "status": "Ready", "podUID": "u"}, "name")
    assert ready == DaemonInfo("n", "", "", index=2, status=Status.READY, pod_uid="u")


def test_an_insert_appends_and_adds_the_own_owner_reference_once() -> None:
    shape = CliqueShape(ME, 18)
    obj = clique_object(PEER)
    planned = membership.plan(
        shape.entries(obj),
        membership.Register("n1", "10.0.0.1", CLIQUE, pod_uid="uid-1"),
        policy=POLICY,
        scope=shape.scope,
    )
    assert planned is not None
    body = shape.body(obj, planned)
    assert body["daemons"][0] is PEER  # others untouched, unknown fields included
    assert body["daemons"][1] == {
        "nodeName": "n1",
        "ipAddress": "10.0.0.1",
        "cliqueID": CLIQUE,
        "index": 1,
        "status": "NotReady",
        "podUID": "uid-1",
    }
    assert body["metadata"]["resourceVersion"] == "7"  # the compare-and-swap precondition
    owners = [r["uid"] for r in body["metadata"]["ownerReferences"]]
    assert owners == ["other", "uid-1"]
    assert obj["daemons"] == [PEER]  # the cached object is not changed
    assert len(obj["metadata"]["ownerReferences"]) == 1
    again = shape.body(body, planned)
    assert [r["uid"] for r in again["metadata"]["ownerReferences"]] == ["other", "uid-1"]


def test_an_update_keeps_unknown_fields_of_the_own_entry() -> None:
    shape = CliqueShape(ME, 18)
    mine = {"nodeName": "n1", "ipAddress": "10.9.9.9", "cliqueID": CLIQUE, "index": 4, "x": "y"}
    obj = clique_object(PEER, mine)
    planned = membership.plan(
        shape.entries(obj),
        membership.Register("n1", "10.0.0.1", CLIQUE, pod_uid="uid-1"),
        policy=POLICY,
        scope=shape.scope,
    )
    assert planned is not None
    written = shape.body(obj, planned)["daemons"][1]
    assert written["x"] == "y"
    assert (written["ipAddress"], written["index"], written["podUID"]) == ("10.0.0.1", 4, "uid-1")


def test_a_new_clique_object_carries_both_labels_and_the_owner() -> None:
    shape = CliqueShape(ME, 18)
    planned = membership.plan(
        (), membership.Register("n1", "10.0.0.1", CLIQUE, pod_uid="uid-1"), policy=POLICY,
        scope=shape.scope,
    )  # fmt: skip
    assert planned is not None
    obj = shape.new_object(planned)
    assert obj["metadata"]["labels"] == {
        names.COMPUTE_DOMAIN_LABEL: "cd-uid",
        names.CLIQUE_LABEL: CLIQUE,
    }
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "daemon-1", "uid": "uid-1"}
    ]
    assert [d["nodeName"] for d in obj["daemons"]] == ["n1"]


def test_objects_of_another_domain_are_rejected() -> None:
    other = clique_object()
    other["metadata"]["labels"][names.COMPUTE_DOMAIN_LABEL] = "someone-else"
    assert CliqueShape(ME, 18).rejects(other) is not None
    assert CliqueShape(ME, 18).rejects(clique_object()) is None
    assert StatusShape(ME, 18).rejects({"metadata": {"uid": "recreated"}}) is not None
    assert StatusShape(ME, 18).rejects({"metadata": {"uid": "cd-uid"}}) is None


def test_status_mode_writes_status_nodes_by_name() -> None:
    shape = StatusShape(ME, 18)
    cd = {
        "metadata": {"name": "cd", "namespace": "user", "uid": "cd-uid", "resourceVersion": "3"},
        "spec": {"numNodes": 2},
        "status": {"status": "NotReady", "nodes": [{"name": "n0", "ipAddress": "1.1.1.1",
                                                   "cliqueID": "", "index": -1}]},
    }  # fmt: skip
    planned = membership.plan(
        shape.entries(cd),
        membership.Register("n1", "10.0.0.1", CLIQUE, pod_uid="uid-1"),
        policy=POLICY,
        scope=shape.scope,
    )
    assert planned is not None
    assert planned.entry is not None
    assert planned.entry.index == 0  # the node without fabric (index -1) is another scope
    body = shape.body(cd, planned)
    assert [n["name"] for n in body["status"]["nodes"]] == ["n0", "n1"]
    assert "nodeName" not in body["status"]["nodes"][1]
    assert shape.num_nodes(cd) == 2


MINE = {"nodeName": "n1", "ipAddress": "10.0.0.1", "cliqueID": CLIQUE, "index": 1,
        "status": "NotReady", "podUID": "uid-1", "future": True}  # fmt: skip


def _planned(
    shape: CliqueShape | StatusShape, obj: dict[str, Any], op: membership.Op
) -> membership.Planned:
    planned = membership.plan(shape.entries(obj), op, policy=POLICY, scope=shape.scope)
    assert planned is not None
    return planned


def _flip(shape: CliqueShape | StatusShape, obj: dict[str, Any]) -> membership.Planned:
    return _planned(shape, obj, membership.SetStatus("n1", Status.READY, pod_uid="uid-1"))


def test_a_readiness_flip_patches_only_the_own_status_after_testing_the_own_entry() -> None:
    shape = CliqueShape(ME, 18)
    obj = clique_object(PEER, MINE)
    obj["metadata"]["ownerReferences"].append({"uid": "uid-1"})
    assert shape.patch_for(obj, _flip(shape, obj)) == [
        {"op": "test", "path": "/daemons/1/nodeName", "value": "n1"},
        {"op": "test", "path": "/daemons/1/index", "value": 1},
        {"op": "test", "path": "/daemons/1/ipAddress", "value": "10.0.0.1"},
        {"op": "test", "path": "/daemons/1/cliqueID", "value": CLIQUE},
        {"op": "test", "path": "/daemons/1/podUID", "value": "uid-1"},
        {"op": "replace", "path": "/daemons/1/status", "value": "Ready"},
    ]
    # An entry without a status (upstream never writes one absent, but a peer may) gets one.
    bare = {k: v for k, v in MINE.items() if k not in ("status", "podUID")}
    obj["daemons"] = [bare]
    ops = shape.patch_for(obj, _flip(shape, obj))
    assert ops is not None
    assert ops[-1] == {
        "op": "add", "path": "/daemons/0/status", "value": "Ready"
    }  # fmt: skip


def _join(shape: CliqueShape, obj: dict[str, Any]) -> membership.Planned:
    return _planned(shape, obj, membership.Register("n1", "10.0.0.1", CLIQUE, pod_uid="uid-1"))


def test_a_join_pins_every_name_and_index_and_appends_the_own_entry() -> None:
    shape = CliqueShape(ME, 18)
    obj = clique_object(PEER)
    ops = shape.patch_for(obj, _join(shape, obj))
    assert ops == [
        {"op": "test", "path": "/daemons/0/nodeName", "value": "n0"},
        {"op": "test", "path": "/daemons/0/index", "value": 0},
        {"op": "add", "path": "/daemons/-", "value": {
            "nodeName": "n1", "ipAddress": "10.0.0.1", "cliqueID": CLIQUE, "index": 1,
            "status": "NotReady", "podUID": "uid-1"}},
        {"op": "test", "path": "/daemons/1/nodeName", "value": "n1"},
        {"op": "add", "path": "/metadata/ownerReferences/-", "value": ME.owner_reference()},
    ]  # fmt: skip
    obj["metadata"]["ownerReferences"].append({"uid": "uid-1"})
    ops = shape.patch_for(obj, _join(shape, obj))
    assert ops is not None
    assert all(op["path"] != "/metadata/ownerReferences/-" for op in ops)  # already an owner


def test_what_a_patch_cannot_say_is_written_whole() -> None:
    shape = CliqueShape(ME, 18)
    obj = clique_object(PEER, MINE)  # the own pod is not among the owners yet
    assert shape.patch_for(obj, _flip(shape, obj)) is None
    for odd in ("not an entry", {"nodeName": "n7"}):  # unreadable, or no index to pin
        peculiar = clique_object(PEER, odd)  # type: ignore[arg-type]
        assert shape.patch_for(peculiar, _join(shape, peculiar)) is None
    no_list = clique_object()
    del no_list["daemons"]
    assert shape.patch_for(no_list, _join(shape, no_list)) is None
    no_owners = clique_object(PEER)
    del no_owners["metadata"]["ownerReferences"]
    assert shape.patch_for(no_owners, _join(shape, no_owners)) is None
    moved = clique_object(PEER, {**MINE, "ipAddress": "10.9.9.9"})
    moved["metadata"]["ownerReferences"].append({"uid": "uid-1"})
    assert _join(shape, moved).change is membership.Change.UPDATED
    assert shape.patch_for(moved, _join(shape, moved)) is None  # a new IP: written whole


def test_status_mode_patches_status_nodes_when_the_global_status_is_set() -> None:
    shape = StatusShape(ME, 18)
    mine = {k: v for k, v in MINE.items() if k != "nodeName"} | {"name": "n1"}
    cd: dict[str, Any] = {"metadata": {"uid": "cd-uid"}, "status": {"nodes": [mine]}}
    assert shape.patch_for(cd, _flip(shape, cd)) is None  # the write also sets it
    cd["status"]["status"] = "NotReady"
    ops = shape.patch_for(cd, _flip(shape, cd))
    assert ops is not None
    assert ops[0] == {"op": "test", "path": "/metadata/uid", "value": "cd-uid"}
    assert ops[1] == {"op": "test", "path": "/status/nodes/0/name", "value": "n1"}
    assert ops[-1] == {"op": "replace", "path": "/status/nodes/0/status", "value": "Ready"}
