"""The server's semantics in process (no HTTP): store windows and snapshots, generation,
status subresource, deletion with finalizers and propagation, and the garbage collector
driven step by step."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from computedomain_sim.apiserver import deletion, writes
from computedomain_sim.apiserver.registry import ResourceType
from computedomain_sim.apiserver.server import EmbeddedApiServer
from computedomain_sim.apiserver.state import ApiState
from computedomain_sim.apiserver.status import ApiStatusError
from computedomain_sim.apiserver.store import Store, TooOldError

NS = "default"


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    srv = EmbeddedApiServer(event_window=50)
    srv.build()
    return srv


@pytest.fixture
def state(server: EmbeddedApiServer) -> ApiState:
    assert server.state is not None
    return server.state


def rt(state: ApiState, group: str, plural: str, version: str = "v1") -> ResourceType:
    found = state.registry.get(group, version, plural)
    assert found is not None
    return found


def cm(name: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **meta}, "data": {"k": "v"}}


def get(state: ApiState, r: ResourceType, name: str, ns: str = NS) -> dict[str, Any] | None:
    entry = state.store.get(r.storage_key, f"{ns}/{name}" if r.namespaced else name)
    return None if entry is None else entry.decode()


def test_store_snapshot_and_window() -> None:
    store = Store(event_window=3)
    key = ("", "configmaps")
    store.commit(key, "ns/a", {"metadata": {"name": "a", "uid": "1"}})
    rv_a = store.rv
    store.commit(key, "ns/b", {"metadata": {"name": "b", "uid": "2"}})
    store.commit(key, "ns/a", {"metadata": {"name": "a", "uid": "1"}, "x": 1})
    assert set(store.snapshot(key, rv_a)) == {"ns/a"}
    assert store.snapshot(key, rv_a)["ns/a"].decode() == {
        "metadata": {"name": "a", "uid": "1", "resourceVersion": str(rv_a)}
    }
    assert [e.type for e in store.events_since(key, rv_a)] == ["ADDED", "MODIFIED"]
    store.commit(key, "ns/b", None)
    store.commit(key, "ns/c", {"metadata": {"name": "c", "uid": "3"}})
    with pytest.raises(TooOldError):
        store.events_since(key, rv_a)
    with pytest.raises(TooOldError):
        store.snapshot(key, rv_a)
    deleted = store.events_since(key, store.rv - 2)[0]
    assert deleted.type == "DELETED"
    assert deleted.new.decode()["metadata"]["resourceVersion"] == str(deleted.rv)
    assert store.keys(key, "ns") == ["ns/a", "ns/c"]
    assert store.by_uid("2") is None


def test_update_without_changes_writes_nothing(state: ApiState) -> None:
    cms = rt(state, "", "configmaps")
    created = writes.create(state, cms, NS, cm("same")).entry
    again = writes.update(state, cms, NS, "same", created.decode())
    assert again.entry.rv == created.rv


def test_generation_and_status_subresource(state: ApiState) -> None:
    ds_rt = rt(state, "apps", "daemonsets")
    body = {
        "metadata": {"name": "ds"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
        "status": {"numberReady": 9},
    }
    ds = writes.create(state, ds_rt, NS, body).entry.decode()
    assert ds["metadata"]["generation"] == 1
    assert ds["status"]["numberReady"] == 0, "create resets status"
    ds["metadata"]["labels"] = {"a": "b"}
    ds["status"]["numberReady"] = 5
    ds = writes.update(state, ds_rt, NS, "ds", ds).entry.decode()
    assert ds["metadata"]["generation"] == 1, "metadata-only change"
    assert ds["status"]["numberReady"] == 0, "main endpoint ignores status"
    ds["spec"]["minReadySeconds"] = 3
    ds["status"]["numberReady"] = 7
    ds = writes.update(state, ds_rt, NS, "ds", ds, subresource="status").entry.decode()
    assert ds["status"]["numberReady"] == 7
    assert "minReadySeconds" not in ds["spec"], "/status ignores spec"
    ds["spec"]["minReadySeconds"] = 3
    ds = writes.update(state, ds_rt, NS, "ds", ds).entry.decode()
    assert ds["metadata"]["generation"] == 2


def test_update_precondition_conflict(state: ApiState) -> None:
    cms = rt(state, "", "configmaps")
    entry = writes.create(state, cms, NS, cm("c")).entry
    # writes take ownership of the dict they are given: pass a fresh one each time
    writes.update(state, cms, NS, "c", {**entry.decode(), "data": {"k": "2"}})
    with pytest.raises(ApiStatusError) as exc:
        writes.update(state, cms, NS, "c", {**entry.decode(), "data": {"k": "3"}})
    assert exc.value.code == 409
    assert exc.value.message == (
        'Operation cannot be fulfilled on configmaps "c": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    unconditional = {**entry.decode(), "metadata": {"name": "c"}, "data": {"k": "4"}}
    assert writes.update(state, cms, NS, "c", unconditional).entry.decode()["data"] == {"k": "4"}


def test_finalizers_and_propagation_finalizers(state: ApiState) -> None:
    cms = rt(state, "", "configmaps")
    writes.create(state, cms, NS, cm("f", finalizers=["a.io/x"]))
    res = deletion.delete(state, cms, NS, "f", deletion.DeleteOptions(propagation="Orphan"))
    assert not res.deleted
    meta = res.entry.decode()["metadata"]
    assert meta["finalizers"] == ["a.io/x", "orphan"]
    assert meta["deletionGracePeriodSeconds"] == 0
    again = deletion.delete(state, cms, NS, "f", deletion.DeleteOptions())
    assert again.entry.rv == res.entry.rv, "a second delete changes nothing"
    obj = res.entry.decode()
    obj["metadata"]["finalizers"] = ["orphan"]
    writes.replace(state, cms, res.entry, obj)
    assert get(state, cms, "f") is not None
    entry = writes.get_current(state, cms, NS, "f")
    obj = entry.decode()
    obj["metadata"]["finalizers"] = []
    assert writes.replace(state, cms, entry, obj).deleted
    assert get(state, cms, "f") is None


def _owned(name: str, owner: dict[str, Any], **ref: Any) -> dict[str, Any]:
    meta = owner["metadata"]
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta["uid"]}
    return cm(name, ownerReferences=[{**reference, **ref}])


def test_gc_background_orphan_and_foreground(server: EmbeddedApiServer, state: ApiState) -> None:
    collector = server.collector
    assert collector is not None
    cms = rt(state, "", "configmaps")
    owner = writes.create(state, cms, NS, cm("o1")).entry.decode()
    writes.create(state, cms, NS, _owned("d1", owner))
    deletion.delete(state, cms, NS, "o1", deletion.DeleteOptions())
    collector.step()
    assert get(state, cms, "d1") is None

    owner = writes.create(state, cms, NS, cm("o2")).entry.decode()
    writes.create(state, cms, NS, _owned("d2", owner))
    deletion.delete(state, cms, NS, "o2", deletion.DeleteOptions(propagation="Orphan"))
    collector.step()
    assert get(state, cms, "o2") is None
    d2 = get(state, cms, "d2")
    assert d2 is not None
    assert "ownerReferences" not in d2["metadata"]

    owner = writes.create(state, cms, NS, cm("o3")).entry.decode()
    writes.create(state, cms, NS, _owned("d3", owner, blockOwnerDeletion=True))
    writes.create(state, cms, NS, {**_owned("d4", owner), "metadata": {
        **_owned("d4", owner)["metadata"], "finalizers": ["x.io/y"]}})  # fmt: skip
    deletion.delete(state, cms, NS, "o3", deletion.DeleteOptions(propagation="Foreground"))
    collector.step()
    assert get(state, cms, "d3") is None
    d4 = get(state, cms, "d4")
    assert d4 is not None
    assert d4["metadata"]["deletionTimestamp"]
    collector.step()
    assert get(state, cms, "o3") is None, "d4 does not block its owner's deletion"


def test_gc_waits_for_unknown_owner_kinds(server: EmbeddedApiServer, state: ApiState) -> None:
    collector = server.collector
    assert collector is not None
    cms = rt(state, "", "configmaps")
    ref = {"apiVersion": "nothing.io/v1", "kind": "Nope", "name": "n", "uid": "u"}
    writes.create(state, cms, NS, cm("kept", ownerReferences=[ref]))
    collector.step()
    assert get(state, cms, "kept") is not None


def test_namespace_lifecycle(server: EmbeddedApiServer, state: ApiState) -> None:
    collector = server.collector
    assert collector is not None
    ns_rt = rt(state, "", "namespaces")
    cms = rt(state, "", "configmaps")
    writes.create(state, ns_rt, "", {"metadata": {"name": "gone"}})
    collector.step()
    assert get(state, rt(state, "", "serviceaccounts"), "default", "gone") is not None
    writes.create(state, cms, "gone", cm("x", finalizers=["a.io/b"]))
    deletion.delete(state, ns_rt, "", "gone", deletion.DeleteOptions())
    collector.step()
    x = get(state, cms, "x", "gone")
    assert x is not None
    assert x["metadata"]["deletionTimestamp"]
    assert get(state, ns_rt, "gone") is not None
    entry = writes.get_current(state, cms, "gone", "x")
    writes.replace(state, cms, entry, {**entry.decode(), "metadata": {
        **entry.decode()["metadata"], "finalizers": []}})  # fmt: skip
    collector.step()
    assert get(state, ns_rt, "gone") is None


def test_a_custom_resource_history_starts_when_served() -> None:
    store = Store()
    store.commit(("", "namespaces"), "ns", {"metadata": {"name": "ns", "uid": "1"}})
    before = store.rv
    store.commit(("", "configmaps"), "ns/a", {"metadata": {"name": "a", "uid": "2"}})
    store.start_history(("example.com", "things"))
    with pytest.raises(TooOldError):
        store.events_since(("example.com", "things"), before)
    assert store.events_since(("example.com", "things"), store.rv) == []
    store.start_history(("", "configmaps"))  # already stored: keeps its window
    assert [e.type for e in store.events_since(("", "configmaps"), before)] == ["ADDED"]


def test_daemonset_template_generation(state: ApiState) -> None:
    ds_rt = rt(state, "apps", "daemonsets")
    body = {
        "metadata": {"name": "ds"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    ds = writes.create(state, ds_rt, NS, body).entry.decode()
    generation = "deprecated.daemonset.template.generation"
    assert ds["metadata"]["annotations"] == {generation: "1"}
    ds["metadata"]["labels"] = {"a": "b"}
    ds = writes.update(state, ds_rt, NS, "ds", ds).entry.decode()
    assert ds["metadata"]["annotations"] == {generation: "1"}, "the template did not change"
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = "j"
    ds = writes.update(state, ds_rt, NS, "ds", ds).entry.decode()
    assert ds["metadata"]["annotations"] == {generation: "2"}


def test_resource_claim_template_request_defaults(state: ApiState) -> None:
    rct_rt = rt(state, "resource.k8s.io", "resourceclaimtemplates")
    request = {"name": "r", "exactly": {"deviceClassName": "c"}}
    body = {"metadata": {"name": "t"}, "spec": {"spec": {"devices": {"requests": [request]}}}}
    rct = writes.create(state, rct_rt, NS, body).entry.decode()
    exactly = rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly == {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}


def test_service_creator_owns_no_allocated_fields(state: ApiState) -> None:
    svc_rt = rt(state, "", "services")
    body = {
        "metadata": {"name": "s"},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80, "targetPort": 0}]},
    }
    svc = writes.create(state, svc_rt, NS, body, manager="me").entry.decode()
    assert svc["spec"]["clusterIP"]
    assert svc["spec"]["ipFamilies"] == ["IPv4"]
    assert svc["spec"]["ports"][0]["targetPort"] == 80
    (entry,) = svc["metadata"]["managedFields"]
    owned = entry["fieldsV1"]["f:spec"]
    assert not {"f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy"} & set(owned)
    assert owned["f:selector"] == {}, "a Service's selector is owned whole"
    assert 'k:{"port":80,"protocol":"TCP"}' in owned["f:ports"]
