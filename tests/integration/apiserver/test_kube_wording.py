"""Answers worded as kube-apiserver words them (the conformance corpus compares them,
docs/conformance.md): an unknown field selector, and an access review of a
``system:masters`` member, which carries no reason."""

from __future__ import annotations

import json
from pathlib import Path

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
