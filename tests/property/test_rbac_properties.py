"""RBAC: a rule granting exactly one (verb, group, resource) in one scope grants nothing more."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from computedomain_sim.apiserver.authn import UserInfo
from computedomain_sim.apiserver.rbac import RBACAuthorizer, RequestAttributes

VERBS = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
GROUPS = ["", "apps", "resource.nvidia.com", "resource.k8s.io"]
RESOURCES = ["pods", "nodes", "computedomains", "daemonsets", "resourceclaims"]
SUBRESOURCES = ["", "status", "log"]
NAMESPACES = ["", "a", "b"]
USER = UserInfo("u", groups=("g", "system:authenticated"))

requests = st.builds(
    lambda verb, group, resource, sub, ns, name: RequestAttributes(
        user=USER,
        verb=verb,
        api_group=group,
        resource=resource,
        subresource=sub,
        namespace=ns,
        name=name,
    ),
    st.sampled_from(VERBS),
    st.sampled_from(GROUPS),
    st.sampled_from(RESOURCES),
    st.sampled_from(SUBRESOURCES),
    st.sampled_from(NAMESPACES),
    st.sampled_from(["", "x", "y"]),
)


def _policy(granted: RequestAttributes, via_group: bool) -> dict[str, list[dict[str, Any]]]:
    resource = (
        f"{granted.resource}/{granted.subresource}" if granted.subresource else granted.resource
    )
    rule = {"verbs": [granted.verb], "apiGroups": [granted.api_group], "resources": [resource]}
    subject = {"kind": "Group", "name": "g"} if via_group else {"kind": "User", "name": "u"}
    meta = {"name": "r", "namespace": granted.namespace, "resourceVersion": "1"}
    if granted.namespace:
        return {
            "roles": [{"metadata": meta, "rules": [rule]}],
            "rolebindings": [
                {"metadata": meta, "roleRef": {"kind": "Role", "name": "r"}, "subjects": [subject]}
            ],
            "clusterroles": [],
            "clusterrolebindings": [],
        }
    return {
        "clusterroles": [{"metadata": meta, "rules": [rule]}],
        "clusterrolebindings": [
            {
                "metadata": meta,
                "roleRef": {"kind": "ClusterRole", "name": "r"},
                "subjects": [subject],
            }
        ],
        "roles": [],
        "rolebindings": [],
    }


@settings(max_examples=300, deadline=None)
@given(granted=requests, asked=requests, via_group=st.booleans())
def test_exact_grant_allows_that_and_nothing_broader(
    granted: RequestAttributes, asked: RequestAttributes, via_group: bool
) -> None:
    objects = _policy(granted, via_group)
    authorizer = RBACAuthorizer(lambda group, plural: objects[plural])
    assert authorizer.authorize(granted).allowed
    same = (asked.verb, asked.api_group, asked.resource, asked.subresource) == (
        granted.verb,
        granted.api_group,
        granted.resource,
        granted.subresource,
    )
    # A cluster-wide grant covers every namespace; a namespaced one only its own.
    in_scope = not granted.namespace or asked.namespace == granted.namespace
    assert authorizer.authorize(asked).allowed == (same and in_scope)


@settings(max_examples=100, deadline=None)
@given(granted=requests, other_user=st.text(min_size=1, max_size=5))
def test_grant_does_not_leak_to_other_users(granted: RequestAttributes, other_user: str) -> None:
    assume(other_user != "u")
    objects = _policy(granted, via_group=False)
    authorizer = RBACAuthorizer(lambda group, plural: objects[plural])
    stranger = RequestAttributes(
        user=UserInfo(other_user, groups=("system:authenticated",)),
        verb=granted.verb,
        api_group=granted.api_group,
        resource=granted.resource,
        subresource=granted.subresource,
        namespace=granted.namespace,
        name=granted.name,
    )
    assert not authorizer.authorize(stranger).allowed
