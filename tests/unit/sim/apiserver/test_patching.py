"""Merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch."""

from __future__ import annotations

import json

import pytest

from computedomain_sim.apiserver import patching, strategic
from computedomain_sim.apiserver.kinds import BUILTINS
from computedomain_sim.apiserver.registry import ResourceType
from computedomain_sim.apiserver.status import ApiStatusError

PODS = next(r for r in BUILTINS if r.plural == "pods")
CUSTOM = ResourceType("example.com", "v1", "widgets", "Widget", False, custom=True)


def test_merge_patch_rfc7386_examples() -> None:
    assert patching.merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert patching.merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert patching.merge_patch({"a": "b"}, {"a": None}) == {}
    assert patching.merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert patching.merge_patch({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {
        "a": {"b": "d"}
    }
    original = {"a": {"x": 1}}
    patching.merge_patch(original, {"a": {"x": 2}})
    assert original == {"a": {"x": 1}}, "the input is not changed"


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        # kube-apiserver's words for a failed test operation
        (
            [{"op": "test", "path": "/c", "value": "nope"}],
            "the server rejected our request due to an error in our request",
        ),
        ([{"op": "remove", "path": "/zz"}], "Unable to remove nonexistent key: zz"),
        ([{"op": "replace", "path": "/zz", "value": 1}], "replace operation does not apply"),
        ([{"op": "add", "path": "/x/y", "value": 1}], "add operation does not apply"),
        ([{"op": "bogus", "path": "/c"}], "Unexpected kind: bogus"),
    ],
    ids=["test", "remove", "replace", "add", "unknown"],
)
def test_json_patch_failures_are_422(ops: list[dict[str, object]], message: str) -> None:
    with pytest.raises(ApiStatusError) as exc:
        patching.apply_patch(PODS, patching.JSON_PATCH, {"c": "x"}, json.dumps(ops).encode())
    assert exc.value.code == 422
    assert message in exc.value.message


def test_bad_patch_body_is_400() -> None:
    with pytest.raises(ApiStatusError) as exc:
        patching.apply_patch(PODS, patching.MERGE, {}, b"{nope")
    assert exc.value.code == 400


def test_strategic_is_415_for_custom_resources_and_apply_is_415() -> None:
    for rt, media in ((CUSTOM, patching.STRATEGIC), (PODS, patching.APPLY)):
        with pytest.raises(ApiStatusError) as exc:
            patching.apply_patch(rt, media, {}, b"{}")
        assert exc.value.code == 415


POD = {
    "metadata": {"name": "p", "finalizers": ["a"], "ownerReferences": [{"uid": "1", "name": "o"}]},
    "spec": {
        "containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"},
        ],
        "tolerations": [{"key": "k1"}],
        "volumes": [{"name": "v1", "emptyDir": {}}],
    },
    "status": {"conditions": [{"type": "Ready", "status": "False"}]},
}


def test_strategic_merges_lists_by_key() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "a", "env": [{"name": "Y", "value": "2"}]},
                {"name": "c", "image": "c:1"},
            ],
            "tolerations": [{"key": "k2"}],
        },
        "metadata": {"finalizers": ["b"]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    out = strategic.apply(POD, patch)
    containers = out["spec"]["containers"]
    assert [c["name"] for c in containers] == ["a", "b", "c"]
    assert containers[0]["image"] == "a:1"
    assert containers[0]["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]
    assert out["spec"]["tolerations"] == [{"key": "k2"}], "no merge key: replaced"
    assert out["metadata"]["finalizers"] == ["a", "b"], "primitive merge list"
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert POD["spec"]["containers"][0]["env"] == [{"name": "X", "value": "1"}]


def test_strategic_directives() -> None:
    out = strategic.apply(
        POD,
        {
            "spec": {
                "containers": [{"name": "b", "$patch": "delete"}],
                "volumes": [{"name": "v1", "$retainKeys": ["name", "hostPath"], "hostPath": {}}],
                "$setElementOrder/containers": [{"name": "a"}],
            },
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "ownerReferences": None},
        },
    )
    assert [c["name"] for c in out["spec"]["containers"]] == ["a"]
    assert out["spec"]["volumes"] == [{"name": "v1", "hostPath": {}}]
    assert out["metadata"]["finalizers"] == []
    assert "ownerReferences" not in out["metadata"]
    replaced = strategic.apply(POD, {"spec": {"$patch": "replace", "containers": []}})
    assert replaced["spec"] == {"containers": []}


def test_strategic_order_directive_reorders() -> None:
    out = strategic.apply(
        POD, {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}
    )
    assert [c["name"] for c in out["spec"]["containers"]] == ["b", "a"]


def test_strategic_missing_merge_key_is_an_error() -> None:
    with pytest.raises(strategic.StrategicError, match="merge key"):
        strategic.apply(POD, {"spec": {"containers": [{"image": "x"}]}})
