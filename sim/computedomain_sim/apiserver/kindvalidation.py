"""Validation of the built-in kinds our components write, with kube-apiserver's rules and
wording for the mistakes that matter: pods without containers or images, pod spec changes
beyond what a running pod allows, DaemonSet/Deployment/ReplicaSet/StatefulSet selectors that do
not match their template (or change), negative replica counts, Deployment strategies,
immutable ResourceClaim and ResourceClaimTemplate specs, immutable ConfigMaps and Secrets, a
binding's roleRef changing.

A lax server would let a controller bug pass every test; these checks make it fail the way it
would on a real cluster. Called by :mod:`.admission` for built-in kinds; pure; returns field
causes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .status import FieldCause, forbidden_field, invalid_value, not_supported, required
from .validation import label_errors

Obj = dict[str, Any]
Check = Callable[[Obj, Obj | None], list[FieldCause]]

_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_POD_UPDATE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def _go_map(value: Any) -> str:
    if not isinstance(value, dict):
        return json.dumps(value)
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(value.items()))
    return "map[string]string{" + inner + "}"


def _containers(spec: Obj, field: str, path: str, need: bool) -> list[FieldCause]:
    items = spec.get(field)
    if items is None or items == []:
        return [required(f"{path}.{field}")] if need else []
    if not isinstance(items, list):
        return [invalid_value(f"{path}.{field}", items, "must be a list")]
    causes: list[FieldCause] = []
    seen: set[str] = set()
    for i, c in enumerate(items):
        cpath = f"{path}.{field}[{i}]"
        if not isinstance(c, dict):
            causes.append(invalid_value(cpath, c, "must be an object"))
            continue
        name = c.get("name")
        if not isinstance(name, str) or not name:
            causes.append(required(f"{cpath}.name"))
        else:
            causes += [invalid_value(f"{cpath}.name", name, e) for e in label_errors(name)]
            if name in seen:
                causes.append(FieldCause("FieldValueDuplicate", f"{cpath}.name",
                                         f'Duplicate value: "{name}"'))  # fmt: skip
            seen.add(name)
        if not c.get("image"):
            causes.append(required(f"{cpath}.image"))
    return causes


def _pod_spec(spec: Any, path: str) -> list[FieldCause]:
    if not isinstance(spec, dict):
        return [required(path)]
    return _containers(spec, "containers", path, True) + _containers(
        spec, "initContainers", path, False
    )


def _mutable_pod_spec(spec: Obj) -> Obj:
    """The spec with everything a pod update may change blanked out."""
    out: Obj = json.loads(json.dumps(spec))
    for field in ("containers", "initContainers"):
        for c in out.get(field) or ():
            if isinstance(c, dict):
                c.pop("image", None)
    for field in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds",
                  "schedulingGates"):  # fmt: skip
        out.pop(field, None)
    return out


def pod(new: Obj, old: Obj | None) -> list[FieldCause]:
    causes = _pod_spec(new.get("spec"), "spec")
    if (
        old is not None
        and not causes
        and _mutable_pod_spec(new.get("spec") or {}) != _mutable_pod_spec(old.get("spec") or {})
    ):
        causes.append(forbidden_field("spec", _POD_UPDATE))
    return causes


def _selector_workload(new: Obj, old: Obj | None) -> list[FieldCause]:
    spec = new.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    causes: list[FieldCause] = []
    selector = spec.get("selector")
    template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
    assert isinstance(template, dict)
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not isinstance(selector, dict) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        causes.append(required("spec.selector"))
    else:
        match = selector.get("matchLabels") or {}
        if isinstance(match, dict) and any(labels.get(k) != v for k, v in match.items()):
            causes.append(
                invalid_value(
                    "spec.template.metadata.labels",
                    _go_map(labels),
                    "`selector` does not match template `labels`",
                )
            )
    causes += _pod_spec(template.get("spec"), "spec.template.spec")
    if old is not None and (old.get("spec") or {}).get("selector") != spec.get("selector"):
        causes.append(invalid_value("spec.selector", spec.get("selector"), "field is immutable"))
    return causes


def _replicated(new: Obj, old: Obj | None) -> list[FieldCause]:
    """A workload with ``spec.replicas`` (Deployment, ReplicaSet, StatefulSet)."""
    causes = _selector_workload(new, old)
    spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    for field in ("replicas", "minReadySeconds", "revisionHistoryLimit"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or value < 0):
            causes.append(
                invalid_value(f"spec.{field}", value, "must be greater than or equal to 0")
            )
    return causes


def _int_or_percent(value: Any, field: str) -> list[FieldCause]:
    if isinstance(value, int) and not isinstance(value, bool):
        return [] if value >= 0 else [
            invalid_value(field, value, "must be greater than or equal to 0")
        ]  # fmt: skip
    if isinstance(value, str) and re.fullmatch(r"[0-9]+%", value):
        if int(value[:-1]) > 100:
            return [invalid_value(field, value, "must not be greater than 100%")]
        return []
    return [invalid_value(field, value, "a valid percent string must be a numeric string "
                                        "followed by an ending '%' (e.g. '1%',  or '93%', regex "
                                        "used for validation is '[0-9]+%')")]  # fmt: skip


def deployment(new: Obj, old: Obj | None) -> list[FieldCause]:
    """A Deployment: a replicated workload whose strategy is ``RollingUpdate`` (with
    ``maxSurge``/``maxUnavailable`` not both zero) or ``Recreate`` (with no ``rollingUpdate``),
    as kube-apiserver's apps validation says."""
    causes = _replicated(new, old)
    spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    strategy = spec.get("strategy") if isinstance(spec.get("strategy"), dict) else {}
    assert isinstance(strategy, dict)
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind not in ("RollingUpdate", "Recreate"):
        causes.append(not_supported("spec.strategy.type", kind, ["Recreate", "RollingUpdate"]))
    elif kind == "Recreate" and rolling is not None:
        causes.append(
            forbidden_field(
                "spec.strategy.rollingUpdate",
                "may not be specified when strategy `type` is 'Recreate'",
            )
        )
    elif kind == "RollingUpdate" and isinstance(rolling, dict):
        surge, unavailable = rolling.get("maxSurge", "25%"), rolling.get("maxUnavailable", "25%")
        path = "spec.strategy.rollingUpdate"
        causes += _int_or_percent(surge, f"{path}.maxSurge")
        causes += _int_or_percent(unavailable, f"{path}.maxUnavailable")
        if str(surge).rstrip("%") == "0" and str(unavailable).rstrip("%") == "0":
            causes.append(
                invalid_value(
                    f"{path}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"
                )
            )
    return causes


def job(new: Obj, old: Obj | None) -> list[FieldCause]:
    """A Job: a workload whose pods run to completion (restartPolicy OnFailure or Never), with a
    pod template that cannot change once created."""
    causes = _selector_workload(new, old)
    spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        causes.append(
            not_supported("spec.template.spec.restartPolicy", policy, ["OnFailure", "Never"])
        )
    for field in ("parallelism", "completions", "backoffLimit"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or value < 0):
            causes.append(
                invalid_value(f"spec.{field}", value, "must be greater than or equal to 0")
            )
    if old is not None:
        old_spec = old.get("spec") or {}
        if spec.get("template") != old_spec.get("template"):
            causes.append(invalid_value("spec.template", "...", "field is immutable"))
        if spec.get("completions") != old_spec.get("completions"):
            value = spec.get("completions")
            causes.append(invalid_value("spec.completions", value, "field is immutable"))
    return causes


def _immutable_spec(new: Obj, old: Obj | None) -> list[FieldCause]:
    if old is not None and new.get("spec") != old.get("spec"):
        return [invalid_value("spec", new.get("spec"), "field is immutable")]
    return []


def _config_data(new: Obj, old: Obj | None, fields: tuple[str, ...]) -> list[FieldCause]:
    causes: list[FieldCause] = []
    for field in fields:
        data = new.get(field) or {}
        if not isinstance(data, dict):
            causes.append(invalid_value(field, data, "must be a map"))
            continue
        for key in data:
            if not _CONFIG_KEY.match(key) or len(key) > 253:
                causes.append(
                    invalid_value(
                        field,
                        key,
                        "a valid config key must consist of alphanumeric characters, '-', '_' "
                        "or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used "
                        "for validation is '[-._a-zA-Z0-9]+')",
                    )
                )
    if old is not None and old.get("immutable") is True:
        for field in (*fields, "immutable"):
            if new.get(field) != old.get(field):
                causes.append(forbidden_field(field, "field is immutable when `immutable` is set"))
    return causes


def configmap(new: Obj, old: Obj | None) -> list[FieldCause]:
    return _config_data(new, old, ("data", "binaryData"))


def secret(new: Obj, old: Obj | None) -> list[FieldCause]:
    causes = _config_data(new, old, ("data", "stringData"))
    if old is not None and new.get("type") != old.get("type"):
        causes.append(invalid_value("type", new.get("type"), "field is immutable"))
    return causes


def binding(new: Obj, old: Obj | None) -> list[FieldCause]:
    ref = new.get("roleRef")
    if not isinstance(ref, dict) or not ref.get("name") or not ref.get("kind"):
        return [required("roleRef")]
    if old is not None and ref != old.get("roleRef"):
        return [invalid_value("roleRef", _go_map(ref), "cannot change roleRef")]
    return []


CHECKS: dict[tuple[str, str], Check] = {
    ("", "Pod"): pod,
    ("apps", "DaemonSet"): _selector_workload,
    ("apps", "Deployment"): deployment,
    ("apps", "ReplicaSet"): _replicated,
    ("apps", "StatefulSet"): _replicated,
    ("batch", "Job"): job,
    ("resource.k8s.io", "ResourceClaim"): _immutable_spec,
    ("resource.k8s.io", "ResourceClaimTemplate"): _immutable_spec,
    ("", "ConfigMap"): configmap,
    ("", "Secret"): secret,
    ("rbac.authorization.k8s.io", "RoleBinding"): binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): binding,
}


def validate(group: str, kind: str, new: Obj, old: Obj | None) -> list[FieldCause]:
    """Causes for a built-in object (empty for kinds without rules here)."""
    check = CHECKS.get((group, kind))
    return [] if check is None else check(new, old)
