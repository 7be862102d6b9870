"""ReplicaSets and the scale subresource on the embedded server, through the official typed
client: defaults, kube's validation of selector, template and replicas, the status
subresource, ``autoscaling/v1`` Scale for Deployments, ReplicaSets and StatefulSets, and
discovery."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client


def _rs(name: str, labels: dict[str, str] | None = None, replicas: int = 2) -> Any:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": labels if labels is not None else {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


def test_a_replica_set_is_stored_defaulted_with_an_empty_status(
    api_client: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api_client)
    created = apps.create_namespaced_replica_set(namespace, _rs("web"))
    assert created.metadata.generation == 1
    assert created.spec.replicas == 2
    assert created.spec.template.spec.restart_policy == "Always"
    assert created.status.replicas == 0
    listed = apps.list_namespaced_replica_set(namespace, label_selector="")
    assert [r.metadata.name for r in listed.items] == ["web"]


def test_a_selector_that_misses_the_template_is_refused_naming_the_field(
    api_client: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api_client)
    with pytest.raises(client.ApiException) as refused:
        apps.create_namespaced_replica_set(namespace, _rs("bad", labels={"app": "other"}))
    assert refused.value.status == 422
    assert "spec.template.metadata.labels" in str(refused.value.body)
    assert "`selector` does not match template `labels`" in str(refused.value.body)
    with pytest.raises(client.ApiException) as negative:
        apps.create_namespaced_replica_set(namespace, _rs("neg", replicas=-1))
    assert negative.value.status == 422
    assert "spec.replicas" in str(negative.value.body)


def test_the_selector_is_immutable(api_client: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_replica_set(namespace, _rs("fixed"))
    patch = {
        "spec": {
            "selector": {"matchLabels": {"app": "fixed", "x": "y"}},
            "template": {"metadata": {"labels": {"app": "fixed", "x": "y"}}},
        }
    }
    with pytest.raises(client.ApiException) as refused:
        apps.patch_namespaced_replica_set("fixed", namespace, patch)
    assert refused.value.status == 422
    assert "spec.selector" in str(refused.value.body)
    assert "field is immutable" in str(refused.value.body)


def test_the_status_subresource_changes_only_the_status(
    api_client: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_replica_set(namespace, _rs("st"))
    body = {"spec": {"replicas": 9}, "status": {"replicas": 2, "readyReplicas": 1}}
    apps.patch_namespaced_replica_set_status("st", namespace, body)
    stored = apps.read_namespaced_replica_set("st", namespace)
    assert (stored.spec.replicas, stored.status.replicas, stored.status.ready_replicas) == (2, 2, 1)


def test_scale_reads_and_sets_the_replicas_of_a_replica_set(
    api_client: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_replica_set(namespace, _rs("sc"))
    scale = apps.read_namespaced_replica_set_scale("sc", namespace)
    assert (scale.kind, scale.api_version) == ("Scale", "autoscaling/v1")
    assert (scale.spec.replicas, scale.status.replicas, scale.status.selector) == (2, 0, "app=sc")
    patched = apps.patch_namespaced_replica_set_scale("sc", namespace, {"spec": {"replicas": 5}})
    assert patched.spec.replicas == 5
    stored = apps.read_namespaced_replica_set("sc", namespace)
    assert (stored.spec.replicas, stored.metadata.generation) == (5, 2)
    scale = apps.read_namespaced_replica_set_scale("sc", namespace)
    scale.spec.replicas = 1
    assert apps.replace_namespaced_replica_set_scale("sc", namespace, scale).spec.replicas == 1
    scale.spec.replicas = 3  # the resourceVersion read before the last change: stale
    with pytest.raises(client.ApiException) as stale:
        apps.replace_namespaced_replica_set_scale("sc", namespace, scale)
    assert stale.value.status == 409
    with pytest.raises(client.ApiException) as negative:
        apps.patch_namespaced_replica_set_scale("sc", namespace, {"spec": {"replicas": -2}})
    assert negative.value.status == 422
    assert "spec.replicas" in str(negative.value.body)


def test_deployments_and_stateful_sets_scale_too(
    api_client: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api_client)
    body = _rs("dep")
    body["kind"] = "Deployment"
    apps.create_namespaced_deployment(namespace, body)
    apps.patch_namespaced_deployment_scale("dep", namespace, {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("dep", namespace).spec.replicas == 4
    body = _rs("sts")
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = "sts"
    apps.create_namespaced_stateful_set(namespace, body)
    scale = apps.read_namespaced_stateful_set_scale("sts", namespace)
    assert scale.status.selector == "app=sts"


def test_a_deployment_strategy_is_validated(api_client: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api_client)
    body = _rs("zero")
    body["kind"] = "Deployment"
    body["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"},
    }
    with pytest.raises(client.ApiException) as refused:
        apps.create_namespaced_deployment(namespace, body)
    assert refused.value.status == 422
    assert "spec.strategy.rollingUpdate.maxUnavailable" in str(refused.value.body)
    assert "may not be 0 when `maxSurge` is 0" in str(refused.value.body)
    body["metadata"]["name"] = "recreate"
    body["spec"]["strategy"] = {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}
    with pytest.raises(client.ApiException) as forbidden:
        apps.create_namespaced_deployment(namespace, body)
    assert "spec.strategy.rollingUpdate: Forbidden" in str(forbidden.value.body)


def test_discovery_lists_replica_sets_with_their_subresources(
    api_client: client.ApiClient,
) -> None:
    resources = client.AppsV1Api(api_client).get_api_resources().resources
    names = {r.name: r for r in resources}
    assert names["replicasets"].kind == "ReplicaSet"
    assert names["replicasets"].short_names == ["rs"]
    assert "replicasets/scale" in names
    assert names["replicasets/scale"].kind == "Scale"
    assert "deployments/scale" in names
