"""``/openapi/v2`` over HTTP: the Swagger 2.0 document in JSON and, for client-go's Accept, as
gnostic's protobuf Document; both carry every resource's paths with ``fieldValidation`` and
``x-kubernetes-group-version-kind``, and the CRD kinds' schemas in v2 form; another Accept
is 406; an unchanged document revalidates with 304."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from computedomain_sim.apiserver import openapi_proto, openapi_v2, testing
from tests.conftest import CRD_FIXTURES

CD = "com.nvidia.resource.v1beta1.ComputeDomain"
PATCH_DEPLOYMENT = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    directory: Path = tmp_path_factory.mktemp("openapi")
    with testing.running(directory) as running:
        running.install_crds([CRD_FIXTURES])
        yield running


def get(srv: testing.RunningServer, accept: str, **headers: str) -> requests.Response:
    hdrs = {"Authorization": f"Bearer {srv.token}", "Accept": accept, **headers}
    return requests.get(srv.url + "/openapi/v2", headers=hdrs, timeout=10)


def test_the_json_document_has_paths_and_crd_definitions(
    apiserver: testing.RunningServer,
) -> None:
    answer = get(apiserver, "application/json")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "application/json"
    doc: dict[str, Any] = answer.json()
    assert doc["swagger"] == "2.0"
    patch = doc["paths"][PATCH_DEPLOYMENT]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert "/apis/apps/v1/namespaces/{namespace}/replicasets" in doc["paths"]
    schema = doc["definitions"][CD]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "resource.nvidia.com", "version": "v1beta1", "kind": "ComputeDomain"}
    ]
    assert "channel" in schema["properties"]["spec"]["properties"]
    cd_patch = doc["paths"][
        "/apis/resource.nvidia.com/v1beta1/namespaces/{namespace}/computedomains/{name}"
    ]["patch"]
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert "application/strategic-merge-patch+json" not in cd_patch["consumes"]
    assert "application/merge-patch+json" in cd_patch["consumes"]
    # metadata is ObjectMeta, a struct kubectl's client-side apply can patch by strategy
    assert schema["properties"]["metadata"] == {"$ref": openapi_v2.OBJECT_META_REF}
    meta = doc["definitions"][openapi_v2.OBJECT_META_REF.rsplit("/", 1)[1]]
    owners = meta["properties"]["ownerReferences"]
    assert owners["x-kubernetes-patch-merge-key"] == "uid"
    assert meta["properties"]["labels"]["additionalProperties"] == {"type": "string"}


def test_v2_schemas_drop_what_kube_apiserver_leaves_out() -> None:
    v3 = {
        "type": "object",
        "nullable": True,
        "properties": {
            "n": {"type": "integer", "minimum": 1, "x-kubernetes-validations": [{"rule": "x"}]},
            "s": {"anyOf": [{"type": "string"}], "enum": ["a"]},
        },
        "items": {"type": "string", "pattern": "x"},
    }
    assert openapi_v2.v2_schema(v3) == {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "s": {"enum": ["a"]}},
        "items": {"type": "string"},
    }


def test_the_protobuf_document_is_gnostics_and_says_the_same(
    apiserver: testing.RunningServer,
) -> None:
    answer = get(apiserver, f"{openapi_v2.PROTOBUF}, application/json")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == openapi_v2.PROTOBUF_ANSWER
    doc = openapi_proto.decode(answer.content)
    assert doc.swagger == "2.0"
    items = {p.name: p.value for p in doc.paths.path}
    patch = items[PATCH_DEPLOYMENT].patch
    gvk = {e.name: yaml.safe_load(e.value.yaml) for e in patch.vendor_extension}
    assert gvk["x-kubernetes-group-version-kind"]["kind"] == "Deployment"
    names = [
        p.parameter.non_body_parameter.query_parameter_sub_schema.name for p in patch.parameters
    ]
    assert "fieldValidation" in names
    definitions = {d.name: d.value for d in doc.definitions.additional_properties}
    cd = definitions[CD]
    assert list(cd.type.value) == ["object"]
    spec = {p.name: p.value for p in cd.properties.additional_properties}["spec"]
    assert "channel" in {p.name for p in spec.properties.additional_properties}
    assert "channel" in list(spec.required)


def test_another_media_type_is_not_acceptable(apiserver: testing.RunningServer) -> None:
    answer = get(apiserver, "application/yaml")
    assert answer.status_code == 406
    assert answer.json()["reason"] == "NotAcceptable"


def test_an_unchanged_document_revalidates(apiserver: testing.RunningServer) -> None:
    first = get(apiserver, openapi_v2.PROTOBUF)
    again = get(apiserver, openapi_v2.PROTOBUF, **{"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    json_tag = get(apiserver, "application/json").headers["ETag"]
    assert json_tag != first.headers["ETag"]
