"""Answers as kube-apiserver gives them (the conformance corpus compares them,
docs/conformance.md): its wording for an unknown field selector, an access review of a
``system:masters`` member (no reason), rules reviews, lists of built-in kinds, unknown fields
of built-in kinds, a Job's labels and reviews' managedFields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from computedomain_sim.apiserver import testing


def test_an_unknown_field_selector_names_the_known_ones(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    with pytest.raises(client.ApiException) as exc:
        core.list_namespaced_config_map(namespace, field_selector="data.a=1")
    assert exc.value.status == 400
    assert json.loads(exc.value.body)["message"].endswith(
        '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


def test_the_admins_access_review_has_no_reason(tmp_path: Path) -> None:
    with testing.running(tmp_path, rbac=True) as server:
        api = server.api_client()
        try:
            review = client.AuthorizationV1Api(api).create_self_subject_access_review(
                {"spec": {"resourceAttributes": {"verb": "create", "resource": "pods"}}}
            )
        finally:
            api.close()
    assert review.status.allowed is True
    assert review.status.reason is None


def test_listed_built_in_items_carry_no_type_meta(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    raw = core.list_namespaced_config_map(namespace, _preload_content=False).data
    (item,) = [i for i in json.loads(raw)["items"] if i["metadata"]["name"] == "a"]
    assert "kind" not in item
    assert "apiVersion" not in item


def test_a_rules_review_lists_what_a_user_may_do_in_a_namespace(tmp_path: Path) -> None:
    """``kubectl auth can-i --list``: the built-in roles' rules every user has, cluster-wide
    first, then those of the namespace's bindings."""
    with testing.running(tmp_path, rbac=True) as server:
        api = server.api_client()
        try:
            rbac = client.RbacAuthorizationV1Api(api)
            rule = {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}
            rbac.create_namespaced_role("default", {"metadata": {"name": "r"}, "rules": [rule]})
            rbac.create_namespaced_role_binding("default", {
                "metadata": {"name": "r"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                "subjects": [{"kind": "User", "name": "dave"}],
            })  # fmt: skip
            review = client.AuthorizationV1Api(api).create_self_subject_rules_review(
                {"spec": {"namespace": "default"}}, _request_timeout=10,
                _headers={"Impersonate-User": "dave"},
            )  # fmt: skip
        finally:
            api.close()
    resources = [r.resources for r in review.status.resource_rules]
    assert resources == [["selfsubjectreviews"],
                         ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                         ["configmaps"]]  # fmt: skip
    assert review.status.resource_rules[-1].verbs == ["get", "list"]
    assert any("/healthz" in r.non_resource_urls for r in review.status.non_resource_rules)
    assert review.status.incomplete is False


def _post(
    api_client: client.ApiClient, path: str, body: object, query: list[tuple[str, str]]
) -> tuple[int, Any]:
    """A raw POST through the client (its typed models would drop unknown fields first)."""
    method, url, headers, data, _ = api_client.param_serialize(
        "POST", path, query_params=query, body=body, auth_settings=["BearerToken"],
        header_params={"Content-Type": "application/json"},
    )  # fmt: skip
    response = api_client.call_api(method, url, headers, data)
    response.read()
    return response.status, json.loads(response.data)


def test_unknown_fields_of_a_built_in_kind_are_refused_or_dropped(
    api_client: client.ApiClient, namespace: str
) -> None:
    """As kube-apiserver decodes into the Go type: Strict refuses (naming each field),
    otherwise the fields are dropped."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u", "bogus": 1},
            "data": {"a": "b"}, "spec": {"x": 1}}  # fmt: skip
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    code, refused = _post(api_client, path, body, [("fieldValidation", "Strict")])
    assert code == 400
    assert refused["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "metadata.bogus", unknown field "spec"'
    )
    code, stored = _post(api_client, path, body, [])
    assert code == 201
    assert "spec" not in stored
    assert "bogus" not in stored["metadata"]


def test_a_job_without_labels_gets_its_templates(
    api_client: client.ApiClient, namespace: str
) -> None:
    container = {"name": "c", "image": "busybox"}
    pod = {"restartPolicy": "Never", "containers": [container]}
    body = {"metadata": {"name": "j"}, "spec": {"template": {"spec": pod}}}
    job = client.BatchV1Api(api_client).create_namespaced_job(namespace, body)
    assert job.metadata.labels == job.spec.template.metadata.labels
    assert job.metadata.labels["batch.kubernetes.io/job-name"] == "j"
    labelled = {**body, "metadata": {"name": "k", "labels": {"mine": "yes"}}}
    kept = client.BatchV1Api(api_client).create_namespaced_job(namespace, labelled)
    assert kept.metadata.labels == {"mine": "yes"}


def test_an_access_review_says_who_sent_its_spec(api_client: client.ApiClient) -> None:
    """kube-apiserver records the review's managedFields as for any create."""
    attributes = {"verb": "get", "resource": "pods", "namespace": "default"}
    review = client.AuthorizationV1Api(api_client).create_subject_access_review(
        {"spec": {"user": "alice", "resourceAttributes": attributes}}
    )
    (entry,) = review.metadata.managed_fields
    assert entry.operation == "Update"
    assert entry.fields_v1 == {"f:spec": {"f:user": {}, "f:resourceAttributes": {
        ".": {}, "f:verb": {}, "f:resource": {}, "f:namespace": {}}}}  # fmt: skip
