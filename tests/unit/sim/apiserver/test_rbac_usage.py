"""RBAC usage recording: each decision for a non-admin user is one JSON line naming the rule
that allowed it (or none), written once however often it repeats, and read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from computedomain_sim.apiserver import rbac_usage
from computedomain_sim.apiserver.authn import UserInfo
from computedomain_sim.apiserver.rbac import RBACAuthorizer, RequestAttributes

SA = UserInfo("system:serviceaccount:ns:sa", groups=("system:serviceaccounts",))
ADMIN = UserInfo("admin", groups=("system:masters",))


def _lister(group: str, plural: str) -> list[dict[str, Any]]:
    objects: dict[str, list[dict[str, Any]]] = {
        "clusterroles": [
            {
                "metadata": {"name": "reader", "resourceVersion": "1"},
                "rules": [
                    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
                    {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["list"]},
                ],
            }
        ],
        "clusterrolebindings": [
            {
                "metadata": {"name": "reader", "resourceVersion": "2"},
                "roleRef": {"kind": "ClusterRole", "name": "reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}],
            }
        ],
    }
    return objects.get(plural, [])


def test_decisions_are_recorded_once_with_their_rule(tmp_path: Path) -> None:
    path = tmp_path / "usage" / "rbac.jsonl"
    recorder = rbac_usage.RecordingAuthorizer(RBACAuthorizer(_lister), rbac_usage.UsageLog(path))
    status = RequestAttributes(SA, "list", resource="pods", subresource="status", namespace="x")
    for _ in range(3):
        assert recorder.authorize(status).allowed
    assert recorder.authorize(RequestAttributes(SA, "get", resource="nodes", name="n")).allowed
    denied = RequestAttributes(SA, "delete", resource="nodes", name="n")
    assert not recorder.authorize(denied).allowed
    assert "cannot delete resource" in recorder.forbidden_message(denied)
    assert recorder.authorize(RequestAttributes(ADMIN, "delete", resource="nodes")).allowed

    uses = list(rbac_usage.read(path))
    assert uses == [
        rbac_usage.Use(SA.name, "list", "", "pods/status", "x", ("ClusterRole/reader", 1)),
        rbac_usage.Use(SA.name, "get", "", "nodes", "", ("ClusterRole/reader", 0)),
        rbac_usage.Use(SA.name, "delete", "", "nodes", "", None),
    ]
    assert recorder.used_rules() == {("ClusterRole/reader", 1): 3, ("ClusterRole/reader", 0): 1}


def test_a_torn_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "rbac.jsonl"
    log = rbac_usage.UsageLog(path)
    use = rbac_usage.Use("u", "get", "", "/metrics", "", None)
    log.record(use)
    with path.open("a") as f:
        f.write('{"user": "v", "verb"')
    assert list(rbac_usage.read(path)) == [use]
