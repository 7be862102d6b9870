"""kube-apiserver's audit log read as RBAC usage: one record per request (a watch's two events
are one), the authorizer's verdict, the role its reason names, and the rule of that role that
grants the request, the same rule the embedded server's authorizer reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from computedomain_sim.apiserver.authn import UserInfo
from computedomain_sim.apiserver.rbac import RBACAuthorizer, RequestAttributes
from computedomain_sim.apiserver.rbac_usage import Use
from computedomain_sim.controlplane import audit

SA = "system:serviceaccount:ns:sa"
RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["list", "patch"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
]
ROLE_RULES = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]


def _event(
    audit_id: str,
    verb: str,
    ref: dict[str, str] | None,
    decision: str,
    reason: str,
    *,
    uri: str = "/api/v1/x?watch=true",
    stage: str = "ResponseComplete",
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": audit_id,
        "stage": stage,
        "requestURI": uri,
        "verb": verb,
        "user": {"username": SA, "groups": ["system:serviceaccounts", "system:authenticated"]},
        "annotations": {audit.DECISION: decision, audit.REASON: reason},
    }
    if ref is not None:
        event["objectRef"] = ref
    return event


CLUSTER_REASON = (
    'RBAC: allowed by ClusterRoleBinding "reader" of ClusterRole "reader" to ServiceAccount "sa/ns"'
)
ROLE_REASON = 'RBAC: allowed by RoleBinding "cm/ns" of Role "cm" to ServiceAccount "sa/ns"'


def _write(path: Path, events: list[dict[str, Any]], tail: str = "") -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + tail)


def test_requests_are_read_once_with_the_authorizers_verdict(tmp_path: Path) -> None:
    pods = {"resource": "pods", "namespace": "ns", "apiVersion": "v1"}
    events = [
        _event("a", "watch", pods, "allow", CLUSTER_REASON, stage="ResponseStarted"),
        _event("a", "watch", pods, "allow", CLUSTER_REASON),
        _event("b", "delete", {"resource": "nodes", "name": "n1"}, "forbid", ""),
        _event("c", "get", None, "allow", "", uri="/healthz?verbose"),
    ]
    path = tmp_path / "audit.log"
    assert list(audit.read(path)) == []  # not written yet
    _write(path, events, tail='{"auditID": "d", "verb"')  # a line cut short
    requests = list(audit.read(path))
    assert [(r.verb, r.resource, r.allowed) for r in requests] == [
        ("watch", "pods", True),
        ("delete", "nodes", False),
        ("get", "", True),
    ]
    assert requests[0].namespace == "ns"
    assert requests[0].reason == CLUSTER_REASON
    assert requests[1].name == "n1"
    assert requests[2].path == "/healthz"


def test_the_role_of_a_reason() -> None:
    assert audit.role_of(CLUSTER_REASON) == "ClusterRole/reader"
    assert audit.role_of(ROLE_REASON) == "Role/ns/cm"
    cluster_role_in_ns = 'RBAC: allowed by RoleBinding "rb/team" of ClusterRole "view" to User "u"'
    assert audit.role_of(cluster_role_in_ns) == "ClusterRole/view"
    assert audit.role_of("") is None
    assert audit.role_of('allowed by group "system:masters"') is None


def test_uses_name_the_first_granting_rule_and_denials(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    status = {"resource": "pods", "subresource": "status", "namespace": "ns", "name": "p"}
    lease = {"resource": "leases", "apiGroup": "coordination.k8s.io", "namespace": "ns"}
    events = [
        _event("1", "patch", status, "allow", CLUSTER_REASON),
        _event("2", "update", lease, "allow", CLUSTER_REASON),
        _event("3", "update", lease, "allow", CLUSTER_REASON),  # the same use again
        _event("4", "get", {"resource": "configmaps", "namespace": "ns"}, "allow", ROLE_REASON),
        _event("5", "delete", {"resource": "nodes", "name": "n"}, "forbid", ""),
        _event("6", "get", {"resource": "secrets", "namespace": "ns"}, "allow", CLUSTER_REASON),
    ]
    _write(path, events)
    roles = {"ClusterRole/reader": RULES, "Role/ns/cm": ROLE_RULES}
    assert list(audit.uses(audit.read(path), roles)) == [
        Use(SA, "patch", "", "pods/status", "ns", ("ClusterRole/reader", 1)),
        Use(SA, "update", "coordination.k8s.io", "leases", "ns", ("ClusterRole/reader", 2)),
        Use(SA, "get", "", "configmaps", "ns", ("Role/ns/cm", 0)),
        Use(SA, "delete", "", "nodes", "", None),
        # Allowed by a role whose rules (as given) grant no such request: not attributed.
        Use(SA, "get", "", "secrets", "ns", ("ClusterRole/reader", -1)),
    ]


def test_attribution_agrees_with_the_embedded_authorizer() -> None:
    """The embedded authorizer gives kube-apiserver's reason and the rule it used: reading
    that reason as the audit log's gives the same role and rule."""
    objects: dict[str, list[dict[str, Any]]] = {
        "clusterroles": [{"metadata": {"name": "reader", "resourceVersion": "1"}, "rules": RULES}],
        "clusterrolebindings": [
            {
                "metadata": {"name": "reader", "resourceVersion": "2"},
                "roleRef": {"kind": "ClusterRole", "name": "reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}],
            }
        ],
        "roles": [
            {
                "metadata": {"name": "cm", "namespace": "ns", "resourceVersion": "3"},
                "rules": ROLE_RULES,
            }
        ],
        "rolebindings": [
            {
                "metadata": {"name": "cm", "namespace": "ns", "resourceVersion": "4"},
                "roleRef": {"kind": "Role", "name": "cm"},
                "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}],
            }
        ],
    }
    authorizer = RBACAuthorizer(lambda group, plural: objects.get(plural, []))
    user = UserInfo(SA, groups=("system:serviceaccounts", "system:authenticated"))
    asked = [
        ("get", "", "nodes", "", "n"),
        ("patch", "", "pods", "status", "p"),
        ("list", "", "pods", "", ""),
        ("watch", "coordination.k8s.io", "leases", "", ""),
        ("get", "", "configmaps", "", "c"),
    ]
    roles = {"ClusterRole/reader": RULES, "Role/ns/cm": ROLE_RULES}
    for verb, group, resource, subresource, name in asked:
        attrs = RequestAttributes(
            user, verb, group, resource, subresource, name, "ns" if resource != "nodes" else ""
        )
        decision = authorizer.authorize(attrs)
        assert decision.allowed
        assert decision.rule is not None
        request = audit.AuditedRequest(
            SA, verb, group, resource, subresource, name, attrs.namespace, "", True,
            decision.reason,
        )  # fmt: skip
        [use] = audit.uses([request], roles)
        assert use.rule == decision.rule
