"""Server-side apply and field ownership over HTTP, as kubectl and helm use them: an apply creates
a missing object, records its manager in ``metadata.managedFields``, conflicts with another
manager's different value (409, each field named) unless forced, merges keyed lists item by
item, and removes what its manager stops applying; updates move ownership without conflicts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from computedomain_sim.apiserver import testing

APPLY = "application/apply-patch+yaml"


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    directory: Path = tmp_path_factory.mktemp("ssa")
    with testing.running(directory) as running:
        yield running


class Client:
    def __init__(self, server: testing.RunningServer) -> None:
        self.server = server
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {server.token}"
        cert = server.server.serving_cert
        self.session.verify = str(cert.cert_path) if cert is not None else True

    def apply(self, path: str, body: dict[str, Any], manager: str, **query: str) -> Any:
        return self.session.patch(
            self.server.url + path,
            data=json.dumps(body),
            headers={"Content-Type": APPLY},
            params={"fieldManager": manager, **query} if manager else query,
            timeout=10,
        )

    def put(self, path: str, body: dict[str, Any], manager: str) -> Any:
        return self.session.put(
            self.server.url + path, json=body, params={"fieldManager": manager}, timeout=10
        )

    def get(self, path: str) -> dict[str, Any]:
        resp = self.session.get(self.server.url + path, timeout=10)
        resp.raise_for_status()
        body: dict[str, Any] = resp.json()
        return body


@pytest.fixture
def api(apiserver: testing.RunningServer) -> Client:
    return Client(apiserver)


def _cm(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def _owners(obj: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {e["manager"]: (e["operation"], e["fieldsV1"]) for e in obj["metadata"]["managedFields"]}


def test_an_apply_creates_and_owns_what_it_applied(api: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cfg"
    resp = api.apply(path, _cm("cfg", {"a": "1"}), "alice")
    assert resp.status_code == 201, resp.text
    obj = api.get(path)
    assert obj["data"] == {"a": "1"}
    # an Apply owns the leaves it applied, not the map holding them (as kube-apiserver records)
    assert _owners(obj) == {"alice": ("Apply", {"f:data": {"f:a": {}}})}
    entry = obj["metadata"]["managedFields"][0]
    assert entry["apiVersion"] == "v1"
    assert entry["fieldsType"] == "FieldsV1"


def test_another_manager_conflicts_until_it_forces(api: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cfg"
    assert api.apply(path, _cm("cfg", {"a": "1", "b": "2"}), "alice").status_code == 201
    resp = api.apply(path, _cm("cfg", {"a": "9"}), "bob")
    assert resp.status_code == 409
    status = resp.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.a'
    assert status["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.a"}
    ]
    assert api.get(path)["data"] == {"a": "1", "b": "2"}

    same = api.apply(path, _cm("cfg", {"b": "2"}), "bob")
    assert same.status_code == 200, "the same value is shared, not a conflict"
    forced = api.apply(path, _cm("cfg", {"a": "9", "b": "2"}), "bob", force="true")
    assert forced.status_code == 200, forced.text
    obj = api.get(path)
    assert obj["data"] == {"a": "9", "b": "2"}
    owners = _owners(obj)
    assert owners["alice"] == ("Apply", {"f:data": {"f:b": {}}}), "shared b stays"
    assert owners["bob"] == ("Apply", {"f:data": {"f:a": {}, "f:b": {}}})


def test_a_field_no_longer_applied_is_removed_unless_another_owns_it(
    api: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cfg"
    api.apply(path, _cm("cfg", {"a": "1", "b": "2", "c": "3"}), "alice")
    api.apply(path, _cm("cfg", {"c": "3"}), "bob")
    assert api.apply(path, _cm("cfg", {"a": "1"}), "alice").status_code == 200
    assert api.get(path)["data"] == {"a": "1", "c": "3"}


def test_updates_take_ownership_and_then_conflict_with_an_apply(
    api: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cfg"
    api.apply(path, _cm("cfg", {"a": "1"}), "alice")
    current = api.get(path)
    current["data"]["a"] = "2"
    assert api.put(path, current, "carol").status_code == 200
    obj = api.get(path)
    owners = _owners(obj)
    assert owners["carol"] == ("Update", {"f:data": {"f:a": {}}})
    assert "alice" not in owners, "alice owned only a: a manager left with nothing goes"
    resp = api.apply(path, _cm("cfg", {"a": "3"}), "alice")
    assert resp.status_code == 409
    carol = next(e for e in obj["metadata"]["managedFields"] if e["manager"] == "carol")
    assert resp.json()["message"] == (
        f'Apply failed with 1 conflict: conflict with "carol" using v1 at {carol["time"]}: .data.a'
    )


def test_keyed_lists_merge_item_by_item(api: Client, namespace: str) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"

    def deployment(*containers: tuple[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": n, "image": i} for n, i in containers]},
                },
            },
        }

    assert api.apply(path, deployment(("a", "img:1")), "alice").status_code == 201
    resp = api.apply(path, deployment(("b", "img:2")), "bob")
    assert resp.status_code == 200, resp.text
    names = [c["name"] for c in api.get(path)["spec"]["template"]["spec"]["containers"]]
    assert names == ["a", "b"]
    resp = api.apply(path, deployment(("a", "img:3")), "bob")
    assert resp.status_code == 409
    assert resp.json()["message"].endswith('.spec.template.spec.containers[name="a"].image')
    assert api.apply(path, deployment(("c", "img:4")), "alice").status_code == 200
    containers = api.get(path)["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["b", "c"], "a, applied by alice only, is gone"


def test_an_apply_without_a_manager_is_refused(api: Client, namespace: str) -> None:
    resp = api.apply(f"/api/v1/namespaces/{namespace}/configmaps/x", _cm("x", {}), "")
    assert resp.status_code == 422
    assert resp.json()["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for '
        "apply patch"
    )
    assert resp.json()["details"]["causes"][0]["reason"] == "FieldValueRequired"
    assert "name" not in resp.json()["details"]


def test_a_write_that_changes_nothing_keeps_the_version(api: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cfg"
    api.apply(path, _cm("cfg", {"a": "1"}), "alice")
    before = api.get(path)["metadata"]["resourceVersion"]
    assert api.apply(path, _cm("cfg", {"a": "1"}), "alice").status_code == 200
    assert api.get(path)["metadata"]["resourceVersion"] == before


def test_a_label_selector_is_owned_whole(api: Client, namespace: str) -> None:
    """A Deployment's selector is an atomic struct in Kubernetes' types: one leaf, as
    kube-apiserver records it; list items are members themselves, their lists not."""
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "a", "image": "img"}]},
            },
        },
    }
    assert api.apply(path, body, "alice").status_code == 201
    _, fields = _owners(api.get(path))["alice"]
    assert fields["f:spec"]["f:selector"] == {}
    assert fields["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"a"}': {".": {}, "f:image": {}, "f:name": {}}
    }
