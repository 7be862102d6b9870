"""Authentication and RBAC enforced on every request (``rbac=True``): 401 without a valid
token, 403 worded as kube-apiserver, grants through Roles and bindings, TokenRequest tokens."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from kubernetes import client

from computedomain_sim.apiserver import testing


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    directory: Path = tmp_path_factory.mktemp("rbac")
    with testing.running(directory, rbac=True) as running:
        yield running


def _sa_token(admin: client.ApiClient, namespace: str, name: str) -> str:
    core = client.CoreV1Api(admin)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    req = core.create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": 3600}}
    )
    return str(req.status.token)


def test_no_or_bad_token_is_401(apiserver: testing.RunningServer) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}):
        resp = requests.get(f"{apiserver.url}/api/v1/namespaces", headers=headers, timeout=5)
        assert resp.status_code == 401
        assert resp.json()["reason"] == "Unauthorized"


def test_service_account_is_forbidden_until_granted(
    apiserver: testing.RunningServer, api_client: client.ApiClient, namespace: str
) -> None:
    token = _sa_token(api_client, namespace, "reader")
    sa = client.CoreV1Api(apiserver.api_client(token))
    with pytest.raises(client.ApiException) as exc:
        sa.list_namespaced_config_map(namespace)
    assert exc.value.status == 403
    assert json.loads(exc.value.body)["message"] == (
        f'configmaps is forbidden: User "system:serviceaccount:{namespace}:reader" cannot list '
        f'resource "configmaps" in API group "" in the namespace "{namespace}"'
    )
    rbac = client.RbacAuthorizationV1Api(api_client)
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "cm-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "cm-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "cm-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
        },
    )
    assert sa.list_namespaced_config_map(namespace).items == []
    with pytest.raises(client.ApiException) as exc:
        sa.create_namespaced_config_map(namespace, {"metadata": {"name": "x"}})
    assert exc.value.status == 403
    with pytest.raises(client.ApiException) as exc:
        sa.list_namespaced_config_map("default")
    assert exc.value.status == 403


def test_authenticated_users_may_discover(
    apiserver: testing.RunningServer, api_client: client.ApiClient, namespace: str
) -> None:
    token = _sa_token(api_client, namespace, "discoverer")
    headers = {"Authorization": f"Bearer {token}"}
    for path in ("/api", "/apis", "/version", "/api/v1", "/healthz"):
        resp = requests.get(apiserver.url + path, headers=headers, timeout=5)
        assert resp.status_code == 200, path


def test_token_stops_working_when_its_account_is_deleted(
    apiserver: testing.RunningServer, api_client: client.ApiClient, namespace: str
) -> None:
    token = _sa_token(api_client, namespace, "short-lived")
    headers = {"Authorization": f"Bearer {token}"}
    assert requests.get(apiserver.url + "/api", headers=headers, timeout=5).status_code == 200
    client.CoreV1Api(api_client).delete_namespaced_service_account("short-lived", namespace)
    deadline = time.monotonic() + 5
    while requests.get(apiserver.url + "/api", headers=headers, timeout=5).status_code != 401:
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_access_reviews(
    apiserver: testing.RunningServer, api_client: client.ApiClient, namespace: str
) -> None:
    review = {"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes", "group": ""}}}
    admin = client.AuthorizationV1Api(api_client).create_self_subject_access_review(review)
    assert admin.status.allowed is True
    token = _sa_token(api_client, namespace, "asker")
    sa = client.AuthorizationV1Api(apiserver.api_client(token))
    assert sa.create_self_subject_access_review(review).status.allowed is False
    subject = {
        "spec": {
            "user": f"system:serviceaccount:{namespace}:asker",
            "groups": ["system:serviceaccounts", "system:authenticated"],
            "nonResourceAttributes": {"verb": "get", "path": "/version"},
        }
    }
    answer = client.AuthorizationV1Api(api_client).create_subject_access_review(subject)
    assert answer.status.allowed is True
    me = client.AuthenticationV1Api(apiserver.api_client(token)).create_self_subject_review({})
    assert me.status.user_info.username == f"system:serviceaccount:{namespace}:asker"
