"""The informer's store: keys, replace/upsert/delete, and named indexes kept in step."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain.kube import store as s


def pod(
    name: str, ns: str = "default", *, node: str = "", cd: str = "", uid: str = ""
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": uid or f"uid-{name}"}
    if cd:
        meta["labels"] = {"resource.nvidia.com/computeDomain": cd}
    return {"kind": "Pod", "metadata": meta, "spec": {"nodeName": node} if node else {}}


def make_store() -> s.Store:
    return s.Store(
        {
            "cd": s.index_by_label("resource.nvidia.com/computeDomain"),
            "node": s.index_by_node_name,
            "uid": s.index_by_uid,
        }
    )


def test_object_key_and_split() -> None:
    assert s.object_key(pod("p", "ns")) == "ns/p"
    assert s.object_key({"metadata": {"name": "node-1"}}) == "node-1"
    assert s.split_key("ns/p") == ("ns", "p")
    assert s.split_key("node-1") == (None, "node-1")
    with pytest.raises(ValueError, match=r"no metadata\.name"):
        s.object_key({"kind": "Pod", "metadata": {}})


def test_indexes_follow_updates_and_deletes() -> None:
    store = make_store()
    store.upsert(pod("a", node="n1", cd="cd1"))
    store.upsert(pod("b", node="n1", cd="cd2"))
    assert [o["metadata"]["name"] for o in store.by_index("node", "n1")] == ["a", "b"]
    old = store.upsert(pod("a", node="n2", cd="cd2"))  # moved: old values must be gone
    assert old is not None
    assert old["spec"]["nodeName"] == "n1"
    assert [o["metadata"]["name"] for o in store.by_index("node", "n1")] == ["b"]
    assert [o["metadata"]["name"] for o in store.by_index("cd", "cd2")] == ["a", "b"]
    assert store.by_index("cd", "cd1") == []
    store.delete("default/b")
    assert store.by_index("node", "n1") == []
    assert sorted(store.index_values("node")) == ["n2"]
    assert store.delete("default/missing") is None


def test_replace_resets_contents_and_indexes() -> None:
    store = make_store()
    store.upsert(pod("a", node="n1"))
    store.replace([pod("b", node="n2"), pod("c", ns="other", node="n2")])
    assert sorted(store.keys()) == ["default/b", "other/c"]
    assert store.by_index("node", "n1") == []
    assert len(store.by_index("node", "n2")) == 2
    assert store.get("default/a") is None
    assert "other/c" in store
    assert len(store) == 2


def test_indexers_added_later_index_existing_objects() -> None:
    store = s.Store()
    store.upsert(pod("a", uid="u1"))
    store.add_indexers({"uid": s.index_by_uid})
    assert store.by_index("uid", "u1")[0]["metadata"]["name"] == "a"
    with pytest.raises(ValueError, match="already registered"):
        store.add_indexers({"uid": s.index_by_uid})


def test_unknown_index_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known: cd, node, uid"):
        make_store().by_index("nope", "x")


def test_a_failing_index_function_does_not_break_the_store() -> None:
    def broken(obj: dict[str, Any]) -> list[str]:
        raise RuntimeError("bad data")

    store = s.Store({"broken": broken})
    store.upsert(pod("a"))
    assert store.get("default/a") is not None
    assert store.by_index("broken", "x") == []


def test_field_and_owner_indexes() -> None:
    obj = {
        "metadata": {"name": "x", "namespace": "n", "ownerReferences": [{"uid": "o1"}, {"uid": 3}]},
        "spec": {"driver": "compute-domain.nvidia.com", "nested": "no"},
    }
    assert s.index_by_owner_uid(obj) == ["o1"]
    assert s.index_by_field("spec", "driver")(obj) == ["compute-domain.nvidia.com"]
    assert s.index_by_field("spec", "driver", "deeper")(obj) == []
    assert s.index_by_namespace(obj) == ["n"]
    assert s.index_by_node_name(obj) == []
    assert s.resource_version({"metadata": {"resourceVersion": "12"}}) == "12"
    assert s.resource_version(None) == ""
