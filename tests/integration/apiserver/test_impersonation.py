"""``Impersonate-*`` headers (``kubectl --as``): honoured under the ``impersonate`` verb, refused
with kube-apiserver's 403 otherwise, and the request then runs, and is authorized, as the
impersonated user."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from computedomain_sim.apiserver import testing


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    directory: Path = tmp_path_factory.mktemp("impersonation")
    with testing.running(directory, rbac=True) as running:
        yield running


def _as(
    apiserver: testing.RunningServer,
    user: str,
    *,
    token: str | None = None,
    groups: tuple[str, ...] = (),
) -> client.ApiClient:
    api = apiserver.api_client(token)
    if user:
        api.set_default_header("Impersonate-User", user)
    for group in groups:  # the client keeps one value per header: one group is enough here
        api.set_default_header("Impersonate-Group", group)
    return api


def _whoami(api: client.ApiClient) -> dict[str, Any]:
    review = client.AuthenticationV1Api(api).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    )
    info = review.status.user_info
    return {"username": info.username, "groups": info.groups or [], "extra": info.extra or {}}


def _can_i(api: client.ApiClient, verb: str, resource: str, namespace: str) -> bool:
    review = client.AuthorizationV1Api(api).create_self_subject_access_review(
        {
            "spec": {
                "resourceAttributes": {"verb": verb, "resource": resource, "namespace": namespace}
            }
        }
    )
    return bool(review.status.allowed)


def _grant(api: client.ApiClient, namespace: str, account: str, rules: list[Any]) -> None:
    name = testing.unique_name("role")
    rbac = client.RbacAuthorizationV1Api(api)
    rbac.create_cluster_role({"metadata": {"name": name}, "rules": rules})
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }
    )


def _sa_token(api: client.ApiClient, namespace: str, name: str) -> str:
    core = client.CoreV1Api(api)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    token = core.create_namespaced_service_account_token(name, namespace, {"spec": {}})
    return str(token.status.token)


def test_an_admin_acting_as_a_service_account_has_only_its_rights(
    apiserver: testing.RunningServer, namespace: str
) -> None:
    account = f"system:serviceaccount:{namespace}:default"
    api = _as(apiserver, account)
    assert _whoami(api) == {
        "username": account,
        "groups": [
            "system:serviceaccounts",
            f"system:serviceaccounts:{namespace}",
            "system:authenticated",
        ],
        "extra": {},
    }
    assert not _can_i(api, "create", "configmaps", namespace)
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(api).list_namespaced_pod(namespace)
    assert exc.value.status == 403
    assert json.loads(exc.value.body)["message"] == (
        f'pods is forbidden: User "{account}" cannot list resource "pods" in API group "" '
        f'in the namespace "{namespace}"'
    )


def test_an_unknown_user_gets_the_authenticated_group_and_nothing_more(
    apiserver: testing.RunningServer, namespace: str
) -> None:
    api = _as(apiserver, "nobody")
    assert _whoami(api)["groups"] == ["system:authenticated"]
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(api).list_namespaced_pod(namespace)
    assert exc.value.status == 403


def test_groups_asked_for_replace_the_defaults(apiserver: testing.RunningServer) -> None:
    api = _as(apiserver, "nobody", groups=("system:masters",))
    assert _whoami(api)["groups"] == ["system:masters", "system:authenticated"]
    assert client.CoreV1Api(api).list_namespace().items is not None


def test_impersonating_without_the_verb_is_forbidden(
    apiserver: testing.RunningServer, api_client: client.ApiClient, namespace: str
) -> None:
    token = _sa_token(api_client, namespace, "plain")
    api = _as(apiserver, "admin", token=token)
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(api).list_namespace()
    assert exc.value.status == 403
    assert json.loads(exc.value.body)["message"] == (
        f'users "admin" is forbidden: User "system:serviceaccount:{namespace}:plain" cannot '
        'impersonate resource "users" in API group "" at the cluster scope'
    )


def test_the_impersonate_verb_allows_exactly_what_it_names(
    apiserver: testing.RunningServer, api_client: client.ApiClient, namespace: str
) -> None:
    token = _sa_token(api_client, namespace, "actor")
    _grant(
        api_client,
        namespace,
        "actor",
        [
            {
                "apiGroups": [""],
                "resources": ["users"],
                "verbs": ["impersonate"],
                "resourceNames": ["alice"],
            }
        ],
    )
    assert _whoami(_as(apiserver, "alice", token=token))["username"] == "alice"
    with pytest.raises(client.ApiException) as exc:
        _whoami(_as(apiserver, "bob", token=token))
    assert exc.value.status == 403
    with pytest.raises(client.ApiException) as exc:
        _whoami(_as(apiserver, "alice", token=token, groups=("system:masters",)))
    assert exc.value.status == 403
    assert 'cannot impersonate resource "groups"' in json.loads(exc.value.body)["message"]


def test_a_group_without_a_user_is_refused(apiserver: testing.RunningServer) -> None:
    api = _as(apiserver, "", groups=("system:masters",))
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(api).list_namespace()
    assert exc.value.status == 500
    assert "without impersonating a user" in json.loads(exc.value.body)["message"]
