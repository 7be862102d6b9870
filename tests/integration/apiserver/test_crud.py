"""Create/get/list/update/delete through the official typed clients against the embedded
server: the wire shapes must satisfy the kubernetes package's strict models."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.conftest import CRD_FIXTURES

GROUP, VERSION, PLURAL = "resource.nvidia.com", "v1beta1", "computedomains"


def _cd(name: str, mode: str | None = None) -> dict[str, object]:
    channel: dict[str, object] = {"resourceClaimTemplate": {"name": f"{name}-rct"}}
    if mode is not None:
        channel["allocationMode"] = mode
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ComputeDomain",
        "metadata": {"name": name},
        "spec": {"channel": channel},
    }


@pytest.fixture(scope="module", autouse=True)
def _crds(apiserver):  # type: ignore[no-untyped-def]
    apiserver.install_crds([CRD_FIXTURES])


def test_configmap_lifecycle(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    created = core.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="cm", labels={"app": "x"}), data={"a": "1"}
        ),
    )
    assert created.metadata.uid
    assert created.metadata.creation_timestamp is not None
    rv1 = int(created.metadata.resource_version)

    created.data["a"] = "2"
    updated = core.replace_namespaced_config_map("cm", namespace, created)
    assert updated.data == {"a": "2"}
    assert int(updated.metadata.resource_version) > rv1

    stale = created
    stale.data["a"] = "3"
    with pytest.raises(client.ApiException) as conflict:
        core.replace_namespaced_config_map("cm", namespace, stale)
    assert conflict.value.status == 409

    listed = core.list_namespaced_config_map(namespace, label_selector="app=x")
    assert [c.metadata.name for c in listed.items] == ["cm"]
    assert core.list_namespaced_config_map(namespace, label_selector="app!=x").items == []

    core.delete_namespaced_config_map("cm", namespace)
    with pytest.raises(client.ApiException) as gone:
        core.read_namespaced_config_map("cm", namespace)
    assert gone.value.status == 404
    assert json.loads(gone.value.body)["message"] == 'configmaps "cm" not found'


def test_create_twice_is_already_exists(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    body = {"metadata": {"name": "dup"}}
    core.create_namespaced_secret(namespace, body)
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_secret(namespace, body)
    assert exc.value.status == 409
    assert json.loads(exc.value.body)["message"] == 'secrets "dup" already exists'


def test_generate_name(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    a = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    b = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    assert a.metadata.name.startswith("gen-")
    assert a.metadata.name != b.metadata.name


def test_namespace_must_exist(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map("nope", {"metadata": {"name": "x"}})
    assert exc.value.status == 404
    assert json.loads(exc.value.body)["message"] == 'namespaces "nope" not found'


def test_daemonset_typed_roundtrip(api_client: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api_client)
    ds = apps.create_namespaced_daemon_set(
        namespace,
        {
            "metadata": {"name": "ds"},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "img:1"}]},
                },
            },
        },
    )
    assert ds.metadata.generation == 1
    assert ds.status.desired_number_scheduled == 0
    ds.spec.template.spec.containers[0].image = "img:2"
    ds2 = apps.replace_namespaced_daemon_set("ds", namespace, ds)
    assert ds2.metadata.generation == 2
    ds2.status.number_ready = 3
    ds3 = apps.replace_namespaced_daemon_set_status("ds", namespace, ds2)
    assert ds3.status.number_ready == 3
    assert ds3.metadata.generation == 2


def test_lease_roundtrip(api_client: client.ApiClient, namespace: str) -> None:
    coord = client.CoordinationV1Api(api_client)
    lease = coord.create_namespaced_lease(
        namespace,
        client.V1Lease(
            metadata=client.V1ObjectMeta(name="leader"),
            spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
        ),
    )
    lease.spec.holder_identity = "b"
    assert coord.replace_namespaced_lease("leader", namespace, lease).spec.holder_identity == "b"


def test_custom_resource_lifecycle(api_client: client.ApiClient, namespace: str) -> None:
    co = client.CustomObjectsApi(api_client)
    cd = co.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _cd("cd1"))
    assert cd["metadata"]["generation"] == 1
    got = co.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "cd1")
    assert got["metadata"]["uid"] == cd["metadata"]["uid"]
    status = co.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, "cd1", {"status": {"status": "Ready"}}
    )
    assert status["status"]["status"] == "Ready"
    assert status["metadata"]["generation"] == 1
    listed = co.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["cd1"]
    co.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "cd1")
    assert co.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"] == []


def test_cluster_scoped_custom_resource(api_client: client.ApiClient) -> None:
    co = client.CustomObjectsApi(api_client)
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}}
    co.create_cluster_custom_object("example.com", "v1", "widgets", body)
    got = co.get_cluster_custom_object("example.com", "v1", "widgets", "w1")
    assert "namespace" not in got["metadata"]
    co.delete_cluster_custom_object("example.com", "v1", "widgets", "w1")
