"""CustomResourceDefinitions: validation of the CRD itself, versions, schema changes with
defaulting on read, printer columns, generation and status, teardown."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from kubernetes import client

from computedomain_sim.apiserver import testing

OPEN = {"openAPIV3Schema": {"type": "object"}}


def _crd(
    group: str = "demo.example.com",
    plural: str = "gadgets",
    versions: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            },
        }
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": "Gadget", "singular": "gadget"},
            "versions": versions
            or [{"name": "v1", "served": True, "storage": True, "schema": schema,
                 "subresources": {"status": {}}}],
            **spec,
        },
    }  # fmt: skip


def _obj(name: str, version: str = "v1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"demo.example.com/{version}",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_invalid_crds_are_422(api_client: client.ApiClient) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    bad_name = _crd()
    bad_name["metadata"]["name"] = "wrong.demo.example.com"
    two_storage = _crd(
        plural="twins",
        versions=[
            {"name": "v1", "served": True, "storage": True, "schema": OPEN},
            {"name": "v2", "served": True, "storage": True, "schema": OPEN},
        ],
    )  # fmt: skip
    bad_schema = _crd(
        plural="broken",
        versions=[{"name": "v1", "served": True, "storage": True,
                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {}}}}}],
    )  # fmt: skip
    bad_scope = _crd(plural="scoped")
    bad_scope["spec"]["scope"] = "Galaxy"
    expected = {
        "metadata.name": bad_name,
        "spec.versions": two_storage,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type": bad_schema,
        "spec.scope": bad_scope,
    }
    for field, body in expected.items():
        with pytest.raises(client.ApiException) as exc:
            ext.create_custom_resource_definition(body)
        assert exc.value.status == 422
        causes = json.loads(exc.value.body)["details"]["causes"]
        assert field in [c["field"] for c in causes], causes


def test_crd_status_generation_and_columns(
    apiserver: testing.RunningServer, api_client: client.ApiClient, namespace: str
) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    body = _crd()
    body["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
    ]
    crd = ext.create_custom_resource_definition(body)
    conditions = {c.type: c.status for c in crd.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd.metadata.finalizers == ["customresourcecleanup.apiextensions.k8s.io"]
    co = client.CustomObjectsApi(api_client)
    args = ("demo.example.com", "v1", namespace, "gadgets")
    created = co.create_namespaced_custom_object(
        *args, {**_obj("g1", size=1), "status": {"ok": True}}
    )
    assert "status" not in created, "create drops status when status is a subresource"
    labelled = co.patch_namespaced_custom_object(*args, "g1", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 1
    resized = co.patch_namespaced_custom_object(
        *args, "g1", {"spec": {"size": 2}, "status": {"ok": True}}
    )
    assert resized["metadata"]["generation"] == 2
    assert "status" not in resized
    status = co.patch_namespaced_custom_object_status(
        *args, "g1", {"status": {"ok": True}, "spec": {"size": 9}}
    )
    assert status["status"] == {"ok": True}
    assert status["spec"] == {"size": 2}
    table = requests.get(
        f"{apiserver.url}/apis/demo.example.com/v1/namespaces/{namespace}/gadgets",
        headers={
            "Authorization": f"Bearer {apiserver.token}",
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io",
        },
        timeout=5,
    ).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size"]
    assert table["rows"][0]["cells"] == ["g1", 2]


def test_versions_and_defaulting_after_a_schema_change(
    api_client: client.ApiClient, namespace: str
) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    body = _crd(
        group="multi.example.com",
        plural="things",
        versions=[
            {"name": "v1", "served": True, "storage": True, "schema": schema},
            {"name": "v2beta1", "served": True, "storage": False, "schema": schema},
        ],
    )
    body["spec"]["names"]["kind"] = "Thing"
    ext.create_custom_resource_definition(body)
    co = client.CustomObjectsApi(api_client)
    thing = {"apiVersion": "multi.example.com/v2beta1", "kind": "Thing", "metadata": {"name": "t"}}
    co.create_namespaced_custom_object("multi.example.com", "v2beta1", namespace, "things", thing)
    as_v1 = co.get_namespaced_custom_object("multi.example.com", "v1", namespace, "things", "t")
    assert as_v1["apiVersion"] == "multi.example.com/v1"
    listed = co.list_namespaced_custom_object("multi.example.com", "v2beta1", namespace, "things")
    assert listed["items"][0]["apiVersion"] == "multi.example.com/v2beta1"
    crd = ext.read_custom_resource_definition("things.multi.example.com")
    raw = api_client.sanitize_for_serialization(crd)
    for version in raw["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"] = {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "default": {}, "properties": {
                    "color": {"type": "string", "default": "blue"}}},
            },
        }  # fmt: skip
    ext.replace_custom_resource_definition("things.multi.example.com", raw)
    again = co.get_namespaced_custom_object("multi.example.com", "v1", namespace, "things", "t")
    assert again["spec"] == {"color": "blue"}, "stored objects are defaulted on read"


def test_create_refused_while_crd_terminates(api_client: client.ApiClient, namespace: str) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    body = _crd(group="term.example.com", plural="widgets")
    ext.create_custom_resource_definition(body)
    co = client.CustomObjectsApi(api_client)
    held = {**_obj("held"), "apiVersion": "term.example.com/v1"}
    held["metadata"]["finalizers"] = ["example.com/hold"]
    co.create_namespaced_custom_object("term.example.com", "v1", namespace, "widgets", held)
    ext.delete_custom_resource_definition("widgets.term.example.com")
    late = {**_obj("late"), "apiVersion": "term.example.com/v1"}
    with pytest.raises(client.ApiException) as exc:
        co.create_namespaced_custom_object("term.example.com", "v1", namespace, "widgets", late)
    assert exc.value.status == 405
    assert "custom resource definition is terminating" in exc.value.body
    co.patch_namespaced_custom_object(
        "term.example.com", "v1", namespace, "widgets", "held", {"metadata": {"finalizers": None}}
    )
