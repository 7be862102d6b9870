"""RBAC: Kubernetes semantics over stored objects, built-in roles, wording, rule usage."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from computedomain_sim.apiserver.authn import UserInfo
from computedomain_sim.apiserver.rbac import RBACAuthorizer, RequestAttributes

SA = UserInfo(
    "system:serviceaccount:nvidia:cd-controller",
    groups=("system:serviceaccounts", "system:serviceaccounts:nvidia", "system:authenticated"),
)
ALICE = UserInfo("alice", groups=("dev", "system:authenticated"))
ANON = UserInfo("system:anonymous", groups=("system:unauthenticated",))


class Store:
    """The API server's RBAC objects, as the lister callback sees them."""

    def __init__(self) -> None:
        self.objects: dict[str, list[dict[str, Any]]] = {
            "clusterroles": [],
            "roles": [],
            "clusterrolebindings": [],
            "rolebindings": [],
        }
        self.rv = 0
        self.calls = 0

    def add(self, plural: str, name: str, namespace: str = "", **body: Any) -> None:
        self.rv += 1
        meta = {"name": name, "resourceVersion": str(self.rv), "namespace": namespace}
        items = [
            o
            for o in self.objects[plural]
            if (o["metadata"]["namespace"], o["metadata"]["name"]) != (namespace, name)
        ]
        self.objects[plural] = [*items, {"metadata": meta, **body}]

    def lister(self, group: str, plural: str) -> Iterable[dict[str, Any]]:
        assert group == "rbac.authorization.k8s.io"
        self.calls += 1
        return list(self.objects[plural])


def _sa(name: str, namespace: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


@pytest.fixture
def store() -> Store:
    s = Store()
    s.add(
        "clusterroles",
        "controller",
        rules=[
            {
                "apiGroups": ["resource.nvidia.com"],
                "resources": ["computedomains"],
                "verbs": ["get", "list", "watch", "update"],
            },
            {
                "apiGroups": ["resource.nvidia.com"],
                "resources": ["computedomains/status"],
                "verbs": ["update"],
            },
            {
                "apiGroups": [""],
                "resources": ["nodes"],
                "verbs": ["get", "update"],
                "resourceNames": ["n1"],
            },
            {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]},
            {"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]},
        ],
    )
    s.add(
        "clusterrolebindings",
        "controller",
        roleRef={"kind": "ClusterRole", "name": "controller"},
        subjects=[_sa("cd-controller", "nvidia")],
    )
    s.add(
        "roles",
        "daemonsets",
        namespace="nvidia",
        rules=[{"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["*"]}],
    )
    s.add(
        "rolebindings",
        "controller-ds",
        namespace="nvidia",
        roleRef={"kind": "Role", "name": "daemonsets"},
        subjects=[{"kind": "ServiceAccount", "name": "cd-controller"}],
    )
    s.add(
        "clusterroles",
        "pod-reader",
        rules=[{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}],
    )
    s.add(
        "rolebindings",
        "devs-read",
        namespace="team",
        roleRef={"kind": "ClusterRole", "name": "pod-reader"},
        subjects=[{"kind": "Group", "name": "dev"}],
    )
    s.add(
        "clusterroles",
        "scaler",
        rules=[{"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["update"]}],
    )
    s.add(
        "clusterrolebindings",
        "alice-scales",
        roleRef={"kind": "ClusterRole", "name": "scaler"},
        subjects=[{"kind": "User", "name": "alice"}],
    )
    return s


def _req(
    user: UserInfo,
    verb: str,
    resource: str = "",
    *,
    group: str = "",
    sub: str = "",
    name: str = "",
    ns: str = "",
    path: str = "",
) -> RequestAttributes:
    return RequestAttributes(
        user=user,
        verb=verb,
        api_group=group,
        resource=resource,
        subresource=sub,
        name=name,
        namespace=ns,
        resource_request=bool(resource),
        path=path,
    )


CASES = [
    (
        "cluster role, any namespace",
        _req(SA, "list", "computedomains", group="resource.nvidia.com", ns="default"),
        True,
    ),
    (
        "cluster role, cluster scope",
        _req(SA, "watch", "computedomains", group="resource.nvidia.com"),
        True,
    ),
    (
        "verb not granted",
        _req(SA, "delete", "computedomains", group="resource.nvidia.com", ns="x"),
        False,
    ),
    ("other group", _req(SA, "list", "computedomains", group="other.io", ns="x"), False),
    (
        "subresource granted",
        _req(
            SA,
            "update",
            "computedomains",
            group="resource.nvidia.com",
            sub="status",
            name="cd",
            ns="x",
        ),
        True,
    ),
    (
        "subresource not implied by resource",
        _req(SA, "get", "computedomains", group="resource.nvidia.com", sub="status", ns="x"),
        False,
    ),
    ("resourceNames allow the name", _req(SA, "update", "nodes", name="n1"), True),
    ("resourceNames deny other names", _req(SA, "update", "nodes", name="n2"), False),
    ("resourceNames deny list", _req(SA, "get", "nodes"), False),
    (
        "token subresource",
        _req(SA, "create", "serviceaccounts", sub="token", name="x", ns="nvidia"),
        True,
    ),
    (
        "role binding in its namespace",
        _req(SA, "delete", "daemonsets", group="apps", ns="nvidia"),
        True,
    ),
    (
        "role binding not elsewhere",
        _req(SA, "delete", "daemonsets", group="apps", ns="default"),
        False,
    ),
    ("role binding not cluster-wide", _req(SA, "list", "daemonsets", group="apps"), False),
    (
        "group subject via rolebinding to clusterrole",
        _req(ALICE, "get", "pods", sub="log", name="p", ns="team"),
        True,
    ),
    (
        "clusterrole via rolebinding only in that namespace",
        _req(ALICE, "get", "pods", ns="default"),
        False,
    ),
    (
        "*/scale",
        _req(ALICE, "update", "deployments", group="apps", sub="scale", name="d", ns="x"),
        True,
    ),
    (
        "*/scale is not the resource",
        _req(ALICE, "update", "deployments", group="apps", name="d", ns="x"),
        False,
    ),
    ("non-resource URL", _req(SA, "get", path="/metrics"), True),
    ("non-resource URL prefix", _req(SA, "get", path="/debug/pprof/heap"), True),
    ("non-resource URL not granted", _req(SA, "get", path="/logs"), False),
    (
        "discovery for authenticated users",
        _req(ALICE, "get", path="/apis/resource.k8s.io/v1"),
        True,
    ),
    ("openapi for authenticated users", _req(ALICE, "get", path="/openapi/v3"), True),
    ("no discovery for anonymous", _req(ANON, "get", path="/apis"), False),
    ("version for anonymous", _req(ANON, "get", path="/version"), True),
    ("healthz for anonymous", _req(ANON, "get", path="/healthz"), True),
    (
        "selfsubjectaccessreviews",
        _req(ALICE, "create", "selfsubjectaccessreviews", group="authorization.k8s.io"),
        True,
    ),
    (
        "selfsubjectreviews",
        _req(ALICE, "create", "selfsubjectreviews", group="authentication.k8s.io"),
        True,
    ),
    (
        "system:masters may do anything",
        _req(UserInfo("root", groups=("system:masters",)), "delete", "nodes", name="n9"),
        True,
    ),
    (
        "unknown user",
        _req(UserInfo("mallory", groups=("system:authenticated",)), "list", "pods", ns="team"),
        False,
    ),
]


@pytest.mark.parametrize(("attrs", "allowed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_authorize(store: Store, attrs: RequestAttributes, allowed: bool) -> None:
    assert RBACAuthorizer(store.lister).authorize(attrs).allowed is allowed


def test_allow_reason_names_binding_role_and_subject(store: Store) -> None:
    decision = RBACAuthorizer(store.lister).authorize(
        _req(SA, "delete", "daemonsets", group="apps", ns="nvidia")
    )
    assert decision.reason == (
        'RBAC: allowed by RoleBinding "controller-ds/nvidia" of Role "daemonsets" to '
        'ServiceAccount "cd-controller/nvidia"'
    )


MESSAGES = [
    (
        "namespaced list",
        _req(UserInfo("system:serviceaccount:ns:sa"), "list", "pods", ns="default"),
        'pods is forbidden: User "system:serviceaccount:ns:sa" cannot list '
        'resource "pods" in API group "" in the namespace "default"',
    ),
    (
        "named cluster-scoped update",
        _req(UserInfo("u"), "update", "nodes", name="n1"),
        'nodes "n1" is forbidden: User "u" cannot update resource '
        '"nodes" in API group "" at the cluster scope',
    ),
    (
        "subresource",
        _req(UserInfo("u"), "create", "serviceaccounts", sub="token", name="sa", ns="ns"),
        'serviceaccounts "sa" is forbidden: User "u" cannot create resource '
        '"serviceaccounts/token" in API group "" in the namespace "ns"',
    ),
    (
        "group-qualified resource",
        _req(
            UserInfo("u"), "get", "computedomains", group="resource.nvidia.com", name="cd", ns="x"
        ),
        'computedomains.resource.nvidia.com "cd" is forbidden: User "u" cannot get resource '
        '"computedomains" in API group "resource.nvidia.com" in the namespace "x"',
    ),
    (
        "non-resource path",
        _req(UserInfo("u"), "get", path="/metrics"),
        'forbidden: User "u" cannot get path "/metrics"',
    ),
]


@pytest.mark.parametrize(
    ("attrs", "expected"), [c[1:] for c in MESSAGES], ids=[c[0] for c in MESSAGES]
)
def test_forbidden_message_wording(store: Store, attrs: RequestAttributes, expected: str) -> None:
    authorizer = RBACAuthorizer(store.lister)
    assert not authorizer.authorize(attrs).allowed
    assert authorizer.forbidden_message(attrs) == expected


def test_missing_role_is_the_denial_reason(store: Store) -> None:
    store.add(
        "rolebindings",
        "dangling",
        namespace="x",
        roleRef={"kind": "Role", "name": "gone"},
        subjects=[{"kind": "User", "name": "bob"}],
    )
    authorizer = RBACAuthorizer(store.lister)
    attrs = _req(UserInfo("bob"), "get", "pods", ns="x")
    assert (
        authorizer.authorize(attrs).reason
        == 'RBAC: role.rbac.authorization.k8s.io "gone" not found'
    )
    assert authorizer.forbidden_message(attrs).endswith(
        'in the namespace "x": RBAC: role.rbac.authorization.k8s.io "gone" not found'
    )
    assert authorizer.authorize(_req(UserInfo("bob"), "get", "pods", ns="y")).reason == ""


def test_policy_follows_writes(store: Store) -> None:
    authorizer = RBACAuthorizer(store.lister)
    attrs = _req(UserInfo("carol"), "get", "configmaps", ns="a")
    assert not authorizer.authorize(attrs).allowed
    store.add(
        "roles",
        "cm",
        namespace="a",
        rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    )
    store.add(
        "rolebindings",
        "carol-cm",
        namespace="a",
        roleRef={"kind": "Role", "name": "cm"},
        subjects=[{"kind": "User", "name": "carol"}],
    )
    assert authorizer.authorize(attrs).allowed
    store.objects["rolebindings"] = [
        b for b in store.objects["rolebindings"] if b["metadata"]["name"] != "carol-cm"
    ]
    assert not authorizer.authorize(attrs).allowed


def test_without_change_tracking_invalidate_is_needed(store: Store) -> None:
    authorizer = RBACAuthorizer(store.lister, track_changes=False)
    attrs = _req(UserInfo("carol"), "list", "pods", ns="team")
    assert not authorizer.authorize(attrs).allowed
    store.add(
        "clusterrolebindings",
        "carol",
        roleRef={"kind": "ClusterRole", "name": "pod-reader"},
        subjects=[{"kind": "User", "name": "carol"}],
    )
    calls = store.calls
    assert not authorizer.authorize(attrs).allowed, "cached policy until invalidate()"
    assert store.calls == calls, "no listing at all without change tracking"
    authorizer.invalidate()
    assert authorizer.authorize(attrs).allowed


def test_aggregated_cluster_roles(store: Store) -> None:
    store.add(
        "clusterroles",
        "view",
        aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"agg/view": "true"}}]},
        rules=[],
    )
    store.objects["clusterroles"][-1]["metadata"]["labels"] = {}
    store.add(
        "clusterroles",
        "cd-view",
        rules=[
            {
                "apiGroups": ["resource.nvidia.com"],
                "resources": ["computedomains"],
                "verbs": ["get"],
            }
        ],
    )
    store.objects["clusterroles"][-1]["metadata"]["labels"] = {"agg/view": "true"}
    store.add(
        "clusterrolebindings",
        "alice-view",
        roleRef={"kind": "ClusterRole", "name": "view"},
        subjects=[{"kind": "User", "name": "alice"}],
    )
    authorizer = RBACAuthorizer(store.lister)
    assert authorizer.authorize(
        _req(ALICE, "get", "computedomains", group="resource.nvidia.com", ns="q")
    ).allowed
    assert not authorizer.authorize(
        _req(ALICE, "list", "computedomains", group="resource.nvidia.com", ns="q")
    ).allowed


def test_used_and_unused_rules(store: Store) -> None:
    authorizer = RBACAuthorizer(store.lister)
    authorizer.authorize(_req(SA, "list", "computedomains", group="resource.nvidia.com", ns="a"))
    authorizer.authorize(_req(SA, "list", "computedomains", group="resource.nvidia.com", ns="b"))
    authorizer.authorize(_req(SA, "delete", "daemonsets", group="apps", ns="nvidia"))
    authorizer.authorize(_req(SA, "get", path="/apis"))
    authorizer.authorize(_req(SA, "delete", "secrets", ns="nvidia"))  # denied: records nothing
    used = authorizer.used_rules()
    assert used == {
        ("ClusterRole/controller", 0): 2,
        ("Role/nvidia/daemonsets", 0): 1,
        ("ClusterRole/system:discovery", 0): 1,
    }
    unused = authorizer.unused_rules()
    assert ("ClusterRole/controller", 1) in unused
    assert ("ClusterRole/controller", 0) not in unused
    assert all(not key.startswith("ClusterRole/system:") for key, _ in unused)
    authorizer.reset_usage()
    assert authorizer.used_rules() == {}
