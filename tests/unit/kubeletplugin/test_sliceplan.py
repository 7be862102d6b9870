"""The ResourceSlice plan: create, repair drift, delete extras, leave a good slice alone."""

from __future__ import annotations

import copy
from typing import Any

from computedomain.kubeletplugin import sliceplan

DESIRED = sliceplan.Desired(node="n1", node_uid="node-uid", clique_id="c-1.2")


def existing(name: str = "00000-compute-domain.nvidia.com-n1-abcde", **meta: Any) -> dict[str, Any]:
    body = DESIRED.new_slice()
    body["metadata"].update(name=name, uid=f"uid-{name}", resourceVersion="7", **meta)
    return body


def test_new_slice() -> None:
    (action,) = sliceplan.plan([], DESIRED)
    assert isinstance(action, sliceplan.Create)
    body = action.body
    assert body["metadata"]["generateName"] == "00000-compute-domain.nvidia.com-n1-"
    assert body["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "node-uid", "controller": True}
    ]
    spec = body["spec"]
    assert spec["pool"] == {"name": "n1", "generation": 1, "resourceSliceCount": 1}
    assert (spec["driver"], spec["nodeName"]) == ("compute-domain.nvidia.com", "n1")
    assert spec["devices"] == [
        {
            "name": "channel-0",
            "attributes": {
                "type": {"string": "channel"},
                "id": {"int": 0},
                "cliqueID": {"string": "c-1.2"},
            },
        },
        {
            "name": "daemon-0",
            "attributes": {
                "type": {"string": "daemon"},
                "id": {"int": 0},
                "cliqueID": {"string": "c-1.2"},
            },
        },
    ]


def test_no_clique_attribute_without_clique() -> None:
    devices = sliceplan.devices("")
    assert all("cliqueID" not in d["attributes"] for d in devices)


def test_good_slice_is_left_alone() -> None:
    current = existing()
    current["spec"]["devices"][0]["allowMultipleAllocations"] = False  # server defaults
    assert sliceplan.plan([current], DESIRED) == []


def test_drift_is_repaired_with_a_new_generation() -> None:
    current = existing()
    current["spec"]["devices"] = current["spec"]["devices"][:1]
    current["spec"]["pool"]["generation"] = 4
    (action,) = sliceplan.plan([current], DESIRED)
    assert isinstance(action, sliceplan.Update)
    assert action.body["metadata"]["resourceVersion"] == "7"
    assert action.body["spec"]["pool"]["generation"] == 5
    assert len(action.body["spec"]["devices"]) == 2


def test_lost_owner_is_restored() -> None:
    current = existing()
    current["metadata"]["ownerReferences"] = []
    (action,) = sliceplan.plan([current], DESIRED)
    assert isinstance(action, sliceplan.Update)
    assert action.body["metadata"]["ownerReferences"][0]["uid"] == "node-uid"


def test_extra_slices_are_deleted() -> None:
    older = existing("a", creationTimestamp="2026-01-01T00:00:00Z")
    newer = existing("b", creationTimestamp="2026-01-02T00:00:00Z")
    foreign_pool = copy.deepcopy(older)
    foreign_pool["metadata"].update(name="c", uid="uid-c", creationTimestamp="2025-01-01T00:00:00Z")
    foreign_pool["spec"]["pool"]["name"] = "old-pool"
    actions = sliceplan.plan([foreign_pool, newer, older], DESIRED)
    assert actions == [sliceplan.Delete("c", "uid-c"), sliceplan.Delete("b", "uid-b")]


def test_only_a_foreign_pool_means_create_and_delete() -> None:
    foreign_pool = existing("c")
    foreign_pool["spec"]["pool"]["name"] = "old-pool"
    create, delete = sliceplan.plan([foreign_pool], DESIRED)
    assert isinstance(create, sliceplan.Create)
    assert delete == sliceplan.Delete("c", "uid-c")
