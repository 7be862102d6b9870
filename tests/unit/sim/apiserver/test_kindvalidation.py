"""Validation of built-in kinds: the mistakes a controller can make that a real server
rejects."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.apiserver.kindvalidation import validate

POD_SPEC = {"containers": [{"name": "c", "image": "i:1"}]}
DS = {
    "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": POD_SPEC},
    }
}


def _fields(
    group: str, kind: str, new: dict[str, Any], old: dict[str, Any] | None = None
) -> list[str]:
    return [c.field for c in validate(group, kind, new, old)]


@pytest.mark.parametrize(
    ("spec", "fields"),
    [
        (POD_SPEC, []),
        ({}, ["spec.containers"]),
        ({"containers": [{"name": "c"}]}, ["spec.containers[0].image"]),
        ({"containers": [{"name": "Bad_", "image": "i"}]}, ["spec.containers[0].name"]),
        ({"containers": [{"name": "c", "image": "i"}, {"name": "c", "image": "j"}]},
         ["spec.containers[1].name"]),
    ],
    ids=["ok", "no-containers", "no-image", "bad-name", "duplicate"],
)  # fmt: skip
def test_pod_spec(spec: dict[str, Any], fields: list[str]) -> None:
    assert _fields("", "Pod", {"spec": spec}) == fields


def test_pod_update_rules() -> None:
    old = {"spec": {**POD_SPEC, "nodeName": "n1"}}
    image = {"spec": {"containers": [{"name": "c", "image": "i:2"}], "nodeName": "n1"}}
    assert _fields("", "Pod", image, old) == []
    moved = {"spec": {**POD_SPEC, "nodeName": "n2"}}
    causes = validate("", "Pod", moved, old)
    assert [c.field for c in causes] == ["spec"]
    assert causes[0].message.startswith("Forbidden: pod updates may not change fields other than")


def test_workload_selectors() -> None:
    assert _fields("apps", "DaemonSet", DS) == []
    mismatch = {"spec": {**DS["spec"], "selector": {"matchLabels": {"app": "other"}}}}
    causes = validate("apps", "DaemonSet", mismatch, None)
    assert [c.field for c in causes] == ["spec.template.metadata.labels"]
    assert causes[0].message == (
        'Invalid value: "map[string]string{\\"app\\":\\"d\\"}": `selector` does not match template '
        "`labels`"
    )
    assert _fields("apps", "DaemonSet", {"spec": {"template": DS["spec"]["template"]}}) == [
        "spec.selector"
    ]
    changed = {"spec": {**DS["spec"], "selector": {"matchLabels": {"app": "d", "x": "y"}}}}
    changed["spec"]["template"] = {"metadata": {"labels": {"app": "d", "x": "y"}}, "spec": POD_SPEC}
    assert _fields("apps", "DaemonSet", changed, DS) == ["spec.selector"]


def test_immutable_specs_and_data() -> None:
    claim = {"spec": {"devices": {"requests": [{"name": "r"}]}}}
    assert _fields("resource.k8s.io", "ResourceClaim", claim, claim) == []
    assert _fields("resource.k8s.io", "ResourceClaim", {"spec": {}}, claim) == ["spec"]
    frozen = {"data": {"a": "1"}, "immutable": True}
    assert _fields("", "ConfigMap", {"data": {"a": "2"}, "immutable": True}, frozen) == ["data"]
    assert _fields("", "ConfigMap", {"data": {"bad key": "1"}}) == ["data"]
    ref = {"roleRef": {"kind": "Role", "name": "a"}}
    assert _fields("rbac.authorization.k8s.io", "RoleBinding", ref, ref) == []
    other = {"roleRef": {"kind": "Role", "name": "b"}}
    assert _fields("rbac.authorization.k8s.io", "RoleBinding", other, ref) == ["roleRef"]
